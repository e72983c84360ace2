//! PTX without its line information: what `nvcc -lineinfo` adds to cicc's PTX, taken out again.
//!
//! `-lineinfo` PTX differs from plain PTX by its `.loc` lines (one before nearly every
//! instruction), the `.file` table, a `.section .debug_str { ... }` block (the names of inlined
//! functions that `.loc ..., function_name $L__info_stringN` lines refer to) and unused
//! `$L__func_endN:` labels. ptxas assembles the stripped text into the same SASS as the
//! original (without line tables), so the build ships the stripped text and keeps the original
//! for where kernels are defined and for line-table cubins (docs/build.md).

/// `ptx` without its `.loc` and `.file` lines and its `.section .debug_*` blocks; every other
/// line is kept byte for byte (the `$L__func_endN:` labels too: nothing refers to them, ptxas
/// ignores them).
///
/// One pass over the lines, each looked at once. Lines are recognised by their first word, as
/// cicc writes them; the input is cicc's PTX, not arbitrary text, but no input makes it panic,
/// and stripping stripped text changes nothing (a kept line never starts a removal).
pub fn strip_line_info(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut section: Option<DebugSection> = None;
    for line in ptx.split_inclusive('\n') {
        let code = line.trim_start();
        if let Some(open) = section.as_mut() {
            match open.feed(code) {
                SectionLine::Inside => continue,
                SectionLine::Closed => {
                    section = None;
                    continue;
                }
                // A `.section` without a block: it ended on its own line.
                SectionLine::After => section = None,
            }
        }
        if starts_with_word(code, ".loc") || starts_with_word(code, ".file") {
            continue;
        }
        if is_debug_section(code) {
            let mut open = DebugSection::default();
            if open.count_braces(&code[".section".len()..]) {
                continue;
            }
            section = Some(open);
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Whether `code` starts with the directive `word` followed by white space or the end.
fn starts_with_word(code: &str, word: &str) -> bool {
    code.strip_prefix(word)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// `.section .debug_str`, `.section\t.debug_info {`: a DWARF section of line info or `-G`.
fn is_debug_section(code: &str) -> bool {
    code.strip_prefix(".section")
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .is_some_and(|rest| rest.trim_start().starts_with(".debug_"))
}

/// A `.section .debug_*` being skipped: its `{ ... }` block, braces counted outside comments.
#[derive(Default)]
struct DebugSection {
    opened: bool,
    depth: usize,
}

enum SectionLine {
    /// The line belongs to the section.
    Inside,
    /// The line closed the section's block (and belongs to it).
    Closed,
    /// The line is past a section that had no block.
    After,
}

impl DebugSection {
    fn feed(&mut self, code: &str) -> SectionLine {
        if !self.opened && !code.is_empty() && !code.starts_with('{') {
            return SectionLine::After;
        }
        if self.count_braces(code) {
            SectionLine::Closed
        } else {
            SectionLine::Inside
        }
    }

    /// Counts the braces of one line (up to a `//`); true when the block closed on it.
    fn count_braces(&mut self, code: &str) -> bool {
        let code = code.split("//").next().unwrap_or_default();
        for byte in code.bytes() {
            match byte {
                b'{' => {
                    self.opened = true;
                    self.depth += 1;
                }
                b'}' if self.opened => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The shape of nvcc 13's `-lineinfo` PTX: `.loc` lines (one with `inlined_at`), a `.local`
    /// (not a `.loc`), the `.file` table and the `.debug_str` section at the end.
    const LINEINFO: &str = "\
.version 9.0\n.target sm_80\n.address_size 64\n\n\t// .globl\tk\n\
.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.local .align 4 .b8 \t__local_depot0[28];\n\
\t.loc\t1 7 0\n\tld.param.u64 \t%rd1, [k_param_0];\n\
\t.loc\t2 942 5, function_name $L__info_string0, inlined_at 1 60 41\n\tret;\n$L__func_end0:\n\n}\n\
\t.file\t1 \"/src/k.cu\"\n\t.file\t2 \"C://cuda/include/x.h\", 1700000000, 12\n\
\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 95,90,0\n\n\t}\n";

    const STRIPPED: &str = "\
.version 9.0\n.target sm_80\n.address_size 64\n\n\t// .globl\tk\n\
.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\t.local .align 4 .b8 \t__local_depot0[28];\n\
\tld.param.u64 \t%rd1, [k_param_0];\n\tret;\n$L__func_end0:\n\n}\n";

    #[test]
    fn loc_file_and_debug_sections_go_everything_else_stays() {
        assert_eq!(strip_line_info(LINEINFO), STRIPPED);
        assert_eq!(strip_line_info(STRIPPED), STRIPPED);
    }

    #[test]
    fn only_whole_directives_and_debug_sections_are_removed() {
        let text = ".location x\n.files\n\t.loc\n// .loc 1 2 3\n.section .nv.info\n{\n}\n";
        assert_eq!(
            strip_line_info(text),
            ".location x\n.files\n// .loc 1 2 3\n.section .nv.info\n{\n}\n"
        );
        // A block on the `.section` line itself, nested braces, a brace in a comment.
        let text = "a\n.section .debug_info { .b8 1 // }\n{ }\n}\nb\n";
        assert_eq!(strip_line_info(text), "a\nb\n");
        // A debug section without a block ends on its own line; no final line break.
        assert_eq!(strip_line_info(".section .debug_str\nret;"), "ret;");
        assert_eq!(strip_line_info(".section .debug_str\n{\n.b8 1"), "");
    }

    /// Text made of PTX-like lines, with the line-info directives and sections in any order.
    fn ptx_soup() -> impl Strategy<Value = String> {
        let line = prop_oneof![
            Just("\t.loc\t1 2 3\n".to_owned()),
            Just(".file 1 \"a.cu\"\n".to_owned()),
            Just("\t.section\t.debug_str\n".to_owned()),
            Just(".section .debug_abbrev {\n".to_owned()),
            Just("\t{\n".to_owned()),
            Just("\t}\n".to_owned()),
            Just("// }\n".to_owned()),
            Just("\n".to_owned()),
            "[ \t.a-z{}/;0-9]{0,12}\n?",
        ];
        prop::collection::vec(line, 0..40).prop_map(|lines| lines.concat())
    }

    proptest! {
        #[test]
        fn stripping_never_panics_is_idempotent_and_leaves_no_line_info(text in ptx_soup()) {
            let once = strip_line_info(&text);
            prop_assert_eq!(strip_line_info(&once), once.clone());
            for line in once.lines() {
                let code = line.trim_start();
                prop_assert!(!starts_with_word(code, ".loc") && !starts_with_word(code, ".file"));
                prop_assert!(!is_debug_section(code));
            }
            prop_assert!(once.len() <= text.len());
        }

        #[test]
        fn stripping_any_text_never_panics(text in "\\PC{0,200}") {
            let once = strip_line_info(&text);
            prop_assert_eq!(strip_line_info(&once), once);
        }
    }
}
