//! Launch directives of PTX `.entry` functions: the CUDA-side launch bounds
//! (`__launch_bounds__`, `__cluster_dims__`, `__maxnreg__`) as nvcc wrote them, so declared
//! bounds can be checked against what was really compiled.
//!
//! ```text
//! .visible .entry lb(
//!     .param .u64 lb_param_0
//! )
//! .maxntid 256, 1, 1
//! .minnctapersm 4
//! {
//! ```
//!
//! The directives between an entry's parameter list and its body are read; of the body, only
//! what concerns shared memory (`ptx_shared`): the dynamic shared memory it names and, with
//! `.pragma "enable_smem_spilling"`, the static shared memory it declares.

use super::ptx_shared::{read_body, ModuleShared, SmemSpilling};
use super::text::find_char_from;
use super::{demangle, KernelRecord};
use serde::Serialize;

/// The performance-tuning directives of one `.entry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[non_exhaustive]
pub struct PtxEntry {
    /// Mangled name.
    pub name: String,
    /// Itanium-demangled name, when mangled.
    pub demangled: Option<String>,
    /// `.maxntid x[, y[, z]]` (`__launch_bounds__(maxThreadsPerBlock)`).
    pub maxntid: Option<Vec<u32>>,
    /// `.reqntid x[, y[, z]]`.
    pub reqntid: Option<Vec<u32>>,
    /// `.minnctapersm n` (`__launch_bounds__(_, minBlocksPerMultiprocessor)`).
    pub minnctapersm: Option<u32>,
    /// `.maxnreg n` (`__maxnreg__`).
    pub maxnreg: Option<u32>,
    /// `.maxclusterrank n` (`__launch_bounds__(_, _, maxBlocksPerCluster)`).
    pub maxclusterrank: Option<u32>,
    /// `.reqnctapercluster x[, y[, z]]` (`__cluster_dims__`).
    pub reqnctapercluster: Option<Vec<u32>>,
    /// `.explicitcluster`.
    pub explicitcluster: bool,
    /// Directives seen in the header that this parser does not know, verbatim.
    pub other_directives: Vec<String>,
    /// The module's dynamic shared memory (`.extern .shared` variables, `extern __shared__`)
    /// the entry's body names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dynamic_shared: Vec<String>,
    /// `.pragma "enable_smem_spilling"` in the entry's body (CUDA 13): ptxas may spill registers
    /// to shared memory and counts that area in the kernel's static shared memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smem_spilling: Option<SmemSpilling>,
}

/// The bytes of `record`'s static shared memory that are ptxas's register spill area: what the
/// kernel does not declare itself, for a kernel whose PTX `entry` lets ptxas spill there (or a
/// cubin's `EIATTR_SHARED_SCRATCH`). `None` without the pragma, without a spill area, or when
/// the kernel's own shared memory could not be read. ptxas gives every thread the area is
/// sized for at least one 4-byte slot (the compiled block, at least a warp when unbounded): a
/// remainder smaller than that is a layout that differs from ptxas's by padding, not an area.
pub(crate) fn smem_spill_bytes(record: &KernelRecord, entry: Option<&PtxEntry>) -> Option<u64> {
    let entry = entry?;
    let declared = entry.smem_spilling.as_ref()?.declared_shared_bytes?;
    let threads = (entry.reqntid.as_ref().or(entry.maxntid.as_ref())).map_or(32, |dimensions| {
        dimensions.iter().map(|&d| u64::from(d.max(1))).product()
    });
    Some(record.static_smem_bytes.saturating_sub(declared)).filter(|&bytes| bytes >= 4 * threads)
}

/// What ptxas 12.9 and 13.0 say of a `.minnctapersm` without `.maxntid` or `.reqntid`, after
/// `ptxas FILE, line N; warning : ` (the line of the entry's closing brace): it names no kernel.
pub(crate) const WITHOUT_BLOCK_WARNING: &str =
    ".minnctapersm is ignored when neither .maxntid nor .reqntid is specified";

impl PtxEntry {
    /// The compiled maximum threads per block: the product of `.reqntid`, else of `.maxntid`
    /// (PTX allows one of the two), from `__launch_bounds__`; `None` without either.
    pub fn max_threads_per_block(&self) -> Option<u32> {
        let dimensions = self.reqntid.as_ref().or(self.maxntid.as_ref())?;
        Some(dimensions.iter().map(|&value| value.max(1)).product())
    }

    /// The `.minnctapersm` ptxas ignores because no `.maxntid` or `.reqntid` gives it a block.
    pub(crate) fn minimum_without_block(&self) -> Option<u32> {
        let blocks = self.minnctapersm.filter(|&blocks| blocks > 0)?;
        (self.maxntid.is_none() && self.reqntid.is_none()).then_some(blocks)
    }
}

/// Whether `warning` is the one ptxas prints for `entry`: a `.minnctapersm` without `.maxntid`
/// or `.reqntid`, which it ignores. That warning names a PTX line, not the kernel; the build
/// gives it to the kernel whose PTX has this shape.
pub fn ignores_minimum_without_block(entry: &PtxEntry, warning: &str) -> bool {
    entry.minimum_without_block().is_some() && warning.contains(WITHOUT_BLOCK_WARNING)
}

/// The kernel a line declares (`.visible .entry k(`, `.weak .entry k`, `.entry k`), if it
/// declares one: for line-by-line scans that attribute code to its kernel.
pub fn entry_declared_on(line: &str) -> Option<&str> {
    let text = line.trim_ascii_start();
    let text = text
        .strip_prefix(".visible ")
        .or_else(|| text.strip_prefix(".weak "))
        .unwrap_or(text);
    text.strip_prefix(".entry")
        .filter(|rest| rest.starts_with(char::is_whitespace))?
        .trim_start()
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()
        .filter(|name| !name.is_empty())
}

/// Reads every `.entry` of a PTX module with its launch directives.
///
/// One forward pass: each search starts where the previous one stopped (after an entry's body or
/// a declaration's `;`), so the time is linear in the size of the PTX.
pub fn parse_ptx_directives(ptx_text: &str) -> Vec<PtxEntry> {
    let text = strip_comments(ptx_text);
    let mut entries = Vec::new();
    let mut module_shared = ModuleShared::default();
    let mut rest = text.as_str();
    while let Some(at) = find_entry_keyword(rest) {
        module_shared.read(&rest[..at]);
        rest = &rest[at + ".entry".len()..];
        match entry_header(rest) {
            EntryHeader::Declaration { resume_at } => rest = &rest[resume_at..],
            EntryHeader::Definition {
                name,
                directives,
                body_start,
            } => {
                let mut entry = entry_with_directives(name, directives);
                let body = &rest[body_start..];
                let after = skip_body(body);
                let shared = read_body(&body[..body.len() - after.len()], &module_shared);
                (entry.dynamic_shared, entry.smem_spilling) =
                    (shared.dynamic_shared, shared.smem_spilling);
                entries.push(entry);
                rest = after;
            }
            EntryHeader::Unterminated { name, directives } => {
                entries.push(entry_with_directives(name, directives));
                break;
            }
        }
    }
    entries
}

/// What follows an `.entry` keyword.
enum EntryHeader<'a> {
    /// `.entry k(...);` or a nameless `.entry`: nothing to read; go on at `resume_at`.
    Declaration { resume_at: usize },
    /// `.entry k(...) DIRECTIVES {`: the body starts at `body_start`.
    Definition {
        name: &'a str,
        directives: &'a str,
        body_start: usize,
    },
    /// An entry whose `{` never comes (the PTX is cut off): its directives run to the end.
    Unterminated { name: &'a str, directives: &'a str },
}

/// Splits the text after `.entry` into name, parameters and directives. Every search is
/// bounded by the entry's own `{` (parameters hold no `{` or `;`).
fn entry_header(rest: &str) -> EntryHeader<'_> {
    let name_start = rest.len() - rest.trim_start().len();
    let name_end = rest[name_start..]
        .find(|c: char| c == '(' || c == '{' || c == ';' || c.is_whitespace())
        .map_or(rest.len(), |end| name_start + end);
    let name = &rest[name_start..name_end];
    if name.is_empty() {
        return EntryHeader::Declaration { resume_at: 0 };
    }
    let mut params_end = name_end;
    if rest[name_end..].trim_start().starts_with('(') {
        let open = name_end + rest[name_end..].find('(').expect("checked above");
        params_end = match rest[open..].find([')', '{', ';']) {
            Some(end) if rest.as_bytes()[open + end] == b')' => open + end + 1,
            Some(end) => open + end,
            None => rest.len(),
        };
    }
    let tail = &rest[params_end..];
    if tail.trim_start().starts_with(';') {
        let semicolon = params_end + tail.find(';').expect("checked above");
        return EntryHeader::Declaration {
            resume_at: semicolon + 1,
        };
    }
    match tail.find('{') {
        Some(brace) => EntryHeader::Definition {
            name,
            directives: &tail[..brace],
            body_start: params_end + brace + 1,
        },
        None => EntryHeader::Unterminated {
            name,
            directives: tail,
        },
    }
}

/// The entry `name` with the performance-tuning directives written in `directives`.
fn entry_with_directives(name: &str, directives: &str) -> PtxEntry {
    let mut entry = PtxEntry {
        name: name.to_string(),
        demangled: demangle(name),
        ..PtxEntry::default()
    };
    for directive in split_directives(directives) {
        if !read_directive(&mut entry, directive) {
            entry.other_directives.push(directive.to_string());
        }
    }
    entry
}

/// The directives between an entry's parameters and its body, one item each: PTX separates
/// them by white space, not by lines (`.maxntid 256, 1, 1 .minnctapersm 4` on one line is two,
/// as ptxas reads it), so a directive starts at each `.` that begins a word; `;` ends one too.
fn split_directives(directives: &str) -> impl Iterator<Item = &str> {
    let bytes = directives.as_bytes();
    let mut in_string = false;
    let mut starts: Vec<usize> = Vec::new();
    for at in 0..bytes.len() {
        match bytes[at] {
            b'"' => in_string = !in_string,
            b'.' if !in_string
                && (at == 0 || bytes[at - 1].is_ascii_whitespace() || bytes[at - 1] == b';')
                && bytes.get(at + 1).is_some_and(u8::is_ascii_alphabetic) =>
            {
                starts.push(at);
            }
            _ => {}
        }
    }
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts.push(bytes.len());
    let segments: Vec<&str> = starts
        .windows(2)
        .map(|pair| &directives[pair[0]..pair[1]])
        .collect();
    segments
        .into_iter()
        .flat_map(|segment| segment.split(';'))
        .map(str::trim)
        .filter(|directive| !directive.is_empty())
}

/// Reads one known directive into `entry`; `false` when it is not one this parser knows.
fn read_directive(entry: &mut PtxEntry, directive: &str) -> bool {
    let (keyword, arguments) = directive
        .split_once(char::is_whitespace)
        .unwrap_or((directive, ""));
    let numbers = || -> Option<Vec<u32>> {
        arguments
            .split(',')
            .map(|n| n.trim().parse().ok())
            .collect()
    };
    let single = || {
        numbers()
            .filter(|values| values.len() == 1)
            .map(|values| values[0])
    };
    let known = match keyword {
        ".maxntid" => numbers().map(|v| entry.maxntid = Some(v)),
        ".reqntid" => numbers().map(|v| entry.reqntid = Some(v)),
        ".reqnctapercluster" => numbers().map(|v| entry.reqnctapercluster = Some(v)),
        ".minnctapersm" => single().map(|v| entry.minnctapersm = Some(v)),
        ".maxnreg" => single().map(|v| entry.maxnreg = Some(v)),
        ".maxclusterrank" => single().map(|v| entry.maxclusterrank = Some(v)),
        ".explicitcluster" if arguments.is_empty() => {
            entry.explicitcluster = true;
            Some(())
        }
        _ => None,
    };
    known.is_some()
}

/// Finds `.entry` as a whole word.
fn find_entry_keyword(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(offset) = text[from..].find(".entry") {
        let at = from + offset;
        let after = text[at + ".entry".len()..].chars().next();
        let before = text[..at].chars().next_back();
        if after.is_some_and(char::is_whitespace) && before.is_none_or(char::is_whitespace) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Skips a `{ ... }` body whose opening brace was consumed. The braces are found with
/// `str::find(char)` (memchr), each once: a byte loop costs several times more at opt-level 0.
fn skip_body(text: &str) -> &str {
    let mut depth = 1usize;
    let mut next_open = find_char_from(text, 0, '{');
    let mut next_close = find_char_from(text, 0, '}');
    while next_close < text.len() {
        if next_open < next_close {
            depth += 1;
            next_open = find_char_from(text, next_open + 1, '{');
            continue;
        }
        depth -= 1;
        if depth == 0 {
            return &text[next_close + 1..];
        }
        next_close = find_char_from(text, next_close + 1, '}');
    }
    ""
}

/// PTX without its comments, in one pass: `// ...` up to the end of its line is removed, a
/// `/* ... */` becomes one space followed by the line breaks it held (so line numbers stay), an
/// unterminated `/*` turns the rest into one space. A `"string"` (to its closing quote or the end of its line)
/// is kept whole: `.file 1 "C://x.cu"` holds no comment.
///
/// Each byte is looked at once: the scan never searches ahead from a position it will scan again
/// (a search for `/*` from every `//` was quadratic on PTX full of `// begin inline asm` lines).
pub(crate) fn strip_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied_to = 0;
    let mut at = 0;
    // The next `/` and `"` at or after `at`, each found with memchr once.
    let mut next_slash = find_char_from(text, 0, '/');
    let mut next_quote = find_char_from(text, 0, '"');
    loop {
        if next_slash < at {
            next_slash = find_char_from(text, at, '/');
        }
        if next_quote < at {
            next_quote = find_char_from(text, at, '"');
        }
        let special = next_slash.min(next_quote);
        if special >= bytes.len() {
            break;
        }
        match (bytes[special], bytes.get(special + 1)) {
            (b'"', _) => {
                at = string_end(bytes, special + 1);
                continue;
            }
            (b'/', Some(b'/')) => {
                out.push_str(&text[copied_to..special]);
                at = find_char_from(text, special, '\n');
            }
            (b'/', Some(b'*')) => {
                out.push_str(&text[copied_to..special]);
                out.push(' ');
                let body_start = special + 2;
                let close = text[body_start..].find("*/");
                let body_end = close.map_or(bytes.len(), |close| body_start + close);
                if close.is_some() {
                    let line_breaks = bytes[body_start..body_end]
                        .iter()
                        .filter(|&&byte| byte == b'\n')
                        .count();
                    out.extend(std::iter::repeat_n('\n', line_breaks));
                }
                at = close.map_or(bytes.len(), |_| body_end + 2);
            }
            _ => {
                at = special + 1;
                continue;
            }
        }
        copied_to = at;
    }
    out.push_str(&text[copied_to..]);
    out
}

/// The index just past the string whose opening quote is before `from`: after its closing
/// quote, or at its line break or the end of the text (a PTX string does not span lines).
fn string_end(bytes: &[u8], from: usize) -> usize {
    let mut at = from;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'"' => return at + 1,
            b'\n' => return at,
            b'\\' if bytes.get(at + 1).is_some_and(|&next| next != b'\n') => at += 2,
            _ => at += 1,
        }
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_90\n.address_size 64\n\t// .globl\tlb\n.visible .entry lb(\n\t.param .u64 lb_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 4\n{\n\t.reg .b32 \t%r<3>;\n\t{ // inner\n\t}\n\tret;\n}\n.visible .entry cl(\n\t.param .u64 cl_param_0\n)\n.explicitcluster\n.reqnctapercluster 2, 1, 1\n{\n\tret;\n}\n.visible .entry _Z2mrPf(\n\t.param .u64 p\n)\n.maxnreg 40\n.maxclusterrank 4\n.reqntid 32\n.pragma \"nounroll\";\n{\n\tret;\n}\n.entry plain { ret; }\n";

    #[test]
    fn reads_every_directive() {
        let entries = parse_ptx_directives(PTX);
        assert_eq!(entries.len(), 4, "{entries:?}");
        assert_eq!(
            (
                entries[0].name.as_str(),
                entries[0].maxntid.clone(),
                entries[0].minnctapersm
            ),
            ("lb", Some(vec![256, 1, 1]), Some(4))
        );
        assert_eq!(entries[1].reqnctapercluster, Some(vec![2, 1, 1]));
        assert!(entries[1].explicitcluster);
        assert_eq!(
            (
                entries[2].maxnreg,
                entries[2].maxclusterrank,
                entries[2].reqntid.clone()
            ),
            (Some(40), Some(4), Some(vec![32]))
        );
        assert_eq!(entries[2].demangled.as_deref(), Some("mr(float*)"));
        assert_eq!(
            entries[2].other_directives,
            vec![".pragma \"nounroll\"".to_string()]
        );
        assert_eq!(entries[3].name, "plain");
    }

    #[test]
    fn directives_on_one_line_are_read_as_ptxas_reads_them() {
        let one_line = ".visible .entry k(\n\t.param .u64 k_param_0\n) .maxntid 256, 1, 1 .minnctapersm 5 .pragma \"a .b\"; {\n\tret;\n}\n";
        let entry = &parse_ptx_directives(one_line)[0];
        assert_eq!(entry.maxntid, Some(vec![256, 1, 1]));
        assert_eq!(entry.minnctapersm, Some(5));
        assert_eq!(entry.other_directives, vec![".pragma \"a .b\"".to_string()]);
    }

    #[test]
    fn the_spill_area_is_what_the_kernel_does_not_declare_and_at_least_a_slot_per_thread() {
        let mut record = KernelRecord::new(
            "k",
            None,
            "sm_90".into(),
            true,
            super::super::RecordSource::PtxasLog,
        );
        record.static_smem_bytes = 19456;
        let entry = |declared: Option<u64>, spilling: bool| PtxEntry {
            maxntid: Some(vec![256, 1, 1]),
            smem_spilling: spilling.then(|| SmemSpilling::declaring(declared)),
            ..PtxEntry::default()
        };
        assert_eq!(
            smem_spill_bytes(&record, Some(&entry(Some(4096), true))),
            Some(15360)
        );
        assert_eq!(
            smem_spill_bytes(&record, Some(&entry(Some(4096), false))),
            None
        );
        assert_eq!(smem_spill_bytes(&record, Some(&entry(None, true))), None);
        assert_eq!(smem_spill_bytes(&record, None), None);
        // 1020 bytes over what 256 threads declare: padding, not 4 bytes for each thread.
        assert_eq!(
            smem_spill_bytes(&record, Some(&entry(Some(18436), true))),
            None
        );
        assert_eq!(
            smem_spill_bytes(&record, Some(&entry(Some(18432), true))),
            Some(1024)
        );
    }

    #[test]
    fn garbage_gives_no_entries_and_no_panic() {
        assert!(parse_ptx_directives(".entry").is_empty());
        assert_eq!(entry_declared_on("\t.visible .entry k1(\n"), Some("k1"));
        assert_eq!(entry_declared_on(".weak .entry _Z2k2v ()"), Some("_Z2k2v"));
        assert_eq!(entry_declared_on(".entry plain { ret; }"), Some("plain"));
        assert_eq!(entry_declared_on(".entryish x"), None);
        assert_eq!(entry_declared_on(".entry"), None);
        assert!(parse_ptx_directives("/* .entry x { */").is_empty());
        let _ = parse_ptx_directives(".entry x( .maxntid {{{");
    }

    /// The obvious character-at-a-time statement of what `strip_comments` does, for the
    /// property test below.
    fn strip_comments_reference(text: &str) -> String {
        let chars: Vec<char> = text.chars().collect();
        let mut out = String::new();
        let mut index = 0;
        while index < chars.len() {
            let next = chars.get(index + 1).copied();
            match (chars[index], next) {
                ('"', _) => {
                    out.push('"');
                    index += 1;
                    while index < chars.len() && chars[index] != '\n' {
                        out.push(chars[index]);
                        index += 1;
                        match chars[index - 1] {
                            '"' => break,
                            '\\' if index < chars.len() && chars[index] != '\n' => {
                                out.push(chars[index]);
                                index += 1;
                            }
                            _ => {}
                        }
                    }
                }
                ('/', Some('/')) => {
                    while index < chars.len() && chars[index] != '\n' {
                        index += 1;
                    }
                }
                ('/', Some('*')) => {
                    index += 2;
                    let mut breaks = String::from(" ");
                    loop {
                        if index + 1 >= chars.len() {
                            out.push(' '); // unterminated: the rest is one comment
                            return out;
                        }
                        if chars[index] == '*' && chars[index + 1] == '/' {
                            index += 2;
                            break;
                        }
                        if chars[index] == '\n' {
                            breaks.push('\n');
                        }
                        index += 1;
                    }
                    out.push_str(&breaks);
                }
                (other, _) => {
                    out.push(other);
                    index += 1;
                }
            }
        }
        out
    }

    #[test]
    fn comments_go_strings_stay_and_lines_keep_their_numbers() {
        let ptx =
            ".file 1 \"C://x/*y*/.cu\" // note\n/* two\nlines */.entry k\n\"open // quote\n// end";
        assert_eq!(
            strip_comments(ptx),
            ".file 1 \"C://x/*y*/.cu\" \n \n.entry k\n\"open // quote\n"
        );
        assert_eq!(strip_comments("a /* never closed\n.entry k {}"), "a  ");
        assert_eq!(
            strip_comments("\"esc \\\" // still\" x//y"),
            "\"esc \\\" // still\" x"
        );
    }

    #[test]
    fn declarations_and_bodiless_entries_do_not_hide_later_entries() {
        let ptx = ".extern .entry decl(.param .u32 a);\n.entry nobrackets;\n.visible .entry k(\n.param .u32 p\n)\n.maxntid 64\n{\nret;\n}\n.entry cut(\n)\n.maxnreg 32\n";
        let entries = parse_ptx_directives(ptx);
        let names: Vec<&str> = entries.iter().map(|entry| entry.name.as_str()).collect();
        assert_eq!(names, ["k", "cut"]);
        assert_eq!(entries[0].maxntid, Some(vec![64]));
        assert_eq!(entries[1].maxnreg, Some(32));
    }

    /// PTX shaped like the inline-asm-heavy modules of issue 10 (a `// begin inline asm` line
    /// every few lines): each entry is found with its directives.
    #[test]
    fn inline_asm_comment_lines_do_not_hide_entries() {
        let mut ptx = String::new();
        for kernel in 0..200 {
            ptx.push_str(&format!(
                ".visible .entry k{kernel}(\n.param .u64 p\n)\n.maxntid 128, 1, 1\n{{\n"
            ));
            for _ in 0..20 {
                ptx.push_str("\t// begin inline asm\n\tmov.u32 %r1, %r2;\n\t// end inline asm\n");
            }
            ptx.push_str("\tret;\n}\n");
        }
        let entries = parse_ptx_directives(&ptx);
        assert_eq!(entries.len(), 200);
        assert!(entries
            .iter()
            .all(|entry| entry.maxntid == Some(vec![128, 1, 1])));
    }

    use proptest::prelude::*;

    /// Text made of the pieces that matter to the scanner.
    fn comment_soup() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("//"),
            Just("/*"),
            Just("*/"),
            Just("/"),
            Just("*"),
            Just("\""),
            Just("\\"),
            Just("\n"),
            Just(" "),
            Just(".entry k"),
            Just("{"),
            Just("}"),
            Just("x"),
            Just("é"),
        ];
        proptest::collection::vec(piece, 0..80).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn strip_comments_equals_the_reference(text in comment_soup()) {
            prop_assert_eq!(strip_comments(&text), strip_comments_reference(&text));
        }

        #[test]
        fn strip_comments_equals_the_reference_on_any_text(text in "[/*\"\\\\\na-zä ]{0,60}") {
            prop_assert_eq!(strip_comments(&text), strip_comments_reference(&text));
        }

        #[test]
        fn skip_body_ends_where_the_braces_balance(text in "[{}ä a\n]{0,40}") {
            let reference = {
                let mut depth = 1usize;
                let mut end = None;
                for (index, byte) in text.bytes().enumerate() {
                    match byte {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        end = Some(index + 1);
                        break;
                    }
                }
                end.map_or("", |end| &text[end..])
            };
            prop_assert_eq!(skip_body(&text), reference);
        }

        #[test]
        fn directives_of_any_text_never_panic(text in comment_soup()) {
            let _ = parse_ptx_directives(&text);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Where each entry was written: the first `.loc` of an entry compiled with `-lineinfo`, and the
// `.file` it names. Separate from the directive parser above: one linear pass over the lines.
// ---------------------------------------------------------------------------------------------

/// The source line an entry function was defined on, from the PTX's `-lineinfo` data: for a
/// kernel generated by a C macro, the line of the macro's invocation; for a kernel in a header,
/// the header's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EntrySourceLine {
    /// The `.file` path as nvcc wrote it (absolute when nvcc was given an absolute path).
    pub file: String,
    /// 1-based line.
    pub line: u32,
}

/// For each `.entry` in `ptx_text` that has line information (`nvcc -lineinfo`), the file and
/// line of its first `.loc`: where the kernel's definition starts. Entries without `.loc` are
/// left out. (A `.local` depot is no `.loc`: the directive is a word.)
///
/// Only the lines that hold `.entry `, `.func `, `.file` or, after each entry's line, the next
/// `.loc` are read (`text::lines_holding`): linear in the text, and several times faster in an
/// unoptimized build than reading every line, which gives the same answer
/// (`source_line_tests::entry_source_lines_line_by_line`, compared by proptest).
pub fn entry_source_lines(ptx_text: &str) -> std::collections::BTreeMap<String, EntrySourceLine> {
    let mut files: std::collections::BTreeMap<u32, String> = std::collections::BTreeMap::new();
    for start in super::text::lines_holding(ptx_text, &[".file"]) {
        if let Some(rest) = line_from(ptx_text, start).0.strip_prefix(".file") {
            if let Some((index, path)) = file_directive(rest) {
                files.insert(index, path);
            }
        }
    }
    let events: Vec<(usize, usize, Option<String>)> =
        super::text::lines_holding(ptx_text, &[".entry ", ".func "])
            .into_iter()
            .filter_map(|start| {
                let (line, end) = line_from(ptx_text, start);
                source_line_event(line).map(|opened| (start, end, opened))
            })
            .collect();
    let mut first_locs: Vec<(String, u32, u32)> = Vec::new();
    for (index, (_, end, opened)) in events.iter().enumerate() {
        let Some(name) = opened else { continue };
        let until = events.get(index + 1).map_or(ptx_text.len(), |next| next.0);
        if let Some((file_index, line)) = first_loc(ptx_text, *end, until) {
            first_locs.push((name.clone(), file_index, line));
        }
    }
    with_files(first_locs, &files)
}

/// Each (entry, `.file` index, line) with its file's path; one whose index has no `.file` goes.
fn with_files(
    first_locs: Vec<(String, u32, u32)>,
    files: &std::collections::BTreeMap<u32, String>,
) -> std::collections::BTreeMap<String, EntrySourceLine> {
    first_locs
        .into_iter()
        .filter_map(|(name, file_index, line)| {
            let file = files.get(&file_index)?.clone();
            Some((name, EntrySourceLine { file, line }))
        })
        .collect()
}

/// The line starting at `start`, without leading white space, and where it ends.
fn line_from(text: &str, start: usize) -> (&str, usize) {
    let (_, end) = super::text::line_around(text, start);
    (
        super::text::line_text(text, start, end).trim_ascii_start(),
        end,
    )
}

/// What a line does to the entry whose first `.loc` is looked for (`line` without leading white
/// space): opens an entry (`Some(Some(name))`), closes it (`Some(None)`: a `.func`, or an entry
/// without a name), or nothing (`None`: a `.file`/`.loc` line, a comment, any other line).
fn source_line_event(line: &str) -> Option<Option<String>> {
    if line.starts_with(".file") || is_loc(line) || line.starts_with("//") {
        return None;
    }
    if let Some(position) = super::text::find(line, ".entry ") {
        let name: String = line[position + ".entry ".len()..]
            .trim_start()
            .chars()
            .take_while(|character| *character != '(' && !character.is_whitespace())
            .collect();
        return Some((!name.is_empty()).then_some(name));
    }
    super::text::contains(line, ".func ").then_some(None)
}

/// Whether `line` (without leading white space) is a `.loc` directive, not `.local`.
fn is_loc(line: &str) -> bool {
    line.strip_prefix(".loc")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(|c: char| c.is_ascii_whitespace()))
}

/// The (file index, line) of the first `.loc` line in `text[from..until]`; `None` when there is
/// none or its fields do not parse.
fn first_loc(text: &str, from: usize, until: usize) -> Option<(u32, u32)> {
    let region = &text[from..until];
    let mut at = 0;
    while let Some(offset) = region[at..].find(".loc") {
        let (start, end) = super::text::line_around(region, at + offset);
        let (line, _) = line_from(region, start);
        if is_loc(line) {
            let mut fields = line[".loc".len()..].split_whitespace();
            let file_index = fields.next().and_then(|field| field.parse().ok());
            let line_number = fields.next().and_then(|field| field.parse().ok());
            return file_index.zip(line_number);
        }
        at = end;
    }
    None
}

/// `1 "/path/k.cu"` or `1 "/path/k.cu", 1700000000, 1234` (after `.file`).
fn file_directive(rest: &str) -> Option<(u32, String)> {
    let rest = rest.trim_start();
    let (index, rest) = rest.split_once(char::is_whitespace)?;
    let index = index.parse().ok()?;
    let quoted = rest.trim_start().strip_prefix('"')?;
    let end = closing_quote(quoted)?;
    let name = super::text::unescape_quoted(&quoted[..end]);
    Some((index, String::from_utf8_lossy(&name).into_owned()))
}

/// Where the quote that closes a C string starts (`quoted` is what follows the opening one):
/// the first `"` not escaped by a backslash.
pub(crate) fn closing_quote(quoted: &str) -> Option<usize> {
    let mut escaped = false;
    for (at, byte) in quoted.bytes().enumerate() {
        match (escaped, byte) {
            (true, _) => escaped = false,
            (false, b'\\') => escaped = true,
            (false, b'"') => return Some(at),
            (false, _) => {}
        }
    }
    None
}

#[cfg(test)]
mod source_line_tests {
    use super::*;

    /// The shape nvcc 13 writes with `-lineinfo`: a header kernel, two kernels generated by one
    /// macro (both at their invocation lines), a device function, and the `.file` table last.
    const PTX: &str = "\
.visible .entry header_kernel(\n\t.param .u64 header_kernel_param_0\n)\n{\n\t.loc\t1 2 0\n\tret;\n\t.loc\t1 5 1\n}\n\
.func  (.param .b32 func_retval0) helper(\n)\n{\n\t.loc\t2 3 0\n}\n\
.visible .entry uneg_f32(\n)\n{\n\t.loc\t2 8 0\n\t.loc\t2 8 41\n}\n\
.visible .entry uneg_f64(\n)\n{\n\t.loc\t2 9 0\n}\n\
.visible .entry no_line_info(\n)\n{\n\tret;\n}\n\
\t.file\t1 \"/src/fam.cuh\"\n\t.file\t2 \"/src/k.cu\", 1700000000, 512\n";

    /// Issue #35, class 9: nvcc writes a non-ASCII path's bytes in octal and a newline as `\n`
    /// in `.file`; the source line names the file itself.
    #[test]
    fn a_file_name_nvcc_escaped_is_read_as_the_file() {
        let ptx = ".visible .entry k(\n)\n{\n\t.loc\t1 3 0\n}\n\t.file\t1 \"/u/\\303\\251 \\\"q\\\"\\nb.cu\"\n";
        let lines = entry_source_lines(ptx);
        assert_eq!(lines["k"].file, "/u/\u{e9} \"q\"\nb.cu");
        assert_eq!(
            super::super::text::unescape_quoted(r"a\\b\tc\7\q"),
            b"a\\b\tc\x07\\q"
        );
    }

    #[test]
    fn each_entry_gets_its_first_loc() {
        let lines = entry_source_lines(PTX);
        let at = |name: &str| lines.get(name).map(|line| (line.file.as_str(), line.line));
        assert_eq!(at("header_kernel"), Some(("/src/fam.cuh", 2)));
        assert_eq!(at("uneg_f32"), Some(("/src/k.cu", 8)));
        assert_eq!(at("uneg_f64"), Some(("/src/k.cu", 9)));
        assert_eq!(at("no_line_info"), None);
        assert_eq!(at("helper"), None);
        assert_eq!(lines.len(), 3);
    }

    /// What [`entry_source_lines`] must answer, reading every line.
    fn entry_source_lines_line_by_line(
        ptx_text: &str,
    ) -> std::collections::BTreeMap<String, EntrySourceLine> {
        let mut files = std::collections::BTreeMap::new();
        let mut first_locs: Vec<(String, u32, u32)> = Vec::new();
        let mut open_entry: Option<String> = None;
        for line in ptx_text.lines() {
            let line = line.trim_ascii_start();
            if let Some(rest) = line.strip_prefix(".file") {
                if let Some((index, path)) = file_directive(rest) {
                    files.insert(index, path);
                }
            } else if is_loc(line) {
                if let Some(name) = open_entry.take() {
                    let mut fields = line[".loc".len()..].split_whitespace();
                    let file_index = fields.next().and_then(|field| field.parse().ok());
                    let line_number = fields.next().and_then(|field| field.parse().ok());
                    if let (Some(file_index), Some(line_number)) = (file_index, line_number) {
                        first_locs.push((name, file_index, line_number));
                    }
                }
            } else if let Some(position) = line.find(".entry ") {
                if !line.starts_with("//") {
                    let name: String = line[position + ".entry ".len()..]
                        .trim_start()
                        .chars()
                        .take_while(|character| *character != '(' && !character.is_whitespace())
                        .collect();
                    open_entry = (!name.is_empty()).then_some(name);
                }
            } else if line.contains(".func ") && !line.starts_with("//") {
                open_entry = None;
            }
        }
        with_files(first_locs, &files)
    }

    fn lineinfo_soup() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let line = prop::sample::select(vec![
            ".visible .entry k1(",
            "\t.entry k2()",
            ".entry ",
            "// .entry commented(",
            ".func helper(",
            ".visible .func (.param .b32 r) f(",
            "\t.local .align 4 .b8 \t__local_depot0[28];",
            "\t.loc\t1 12 0",
            "\t.loc\t2 7 41",
            "\t.loc 1 x",
            ".loc",
            "\t.file\t1 \"/src/a.cu\"",
            "\t.file\t2 \"/src/b.cuh\", 1700000000, 512",
            "\t.loc .entry k4(",
            "\tret;",
            "{",
            "}",
        ]);
        crate::ptxas::text::tests::lines_of(line)
    }

    proptest::proptest! {
        #[test]
        fn entry_source_lines_equal_reading_every_line(ptx in lineinfo_soup(), cut in 0usize..400) {
            let ptx = &ptx[..ptx.floor_char_boundary(cut.min(ptx.len()))];
            proptest::prop_assert_eq!(entry_source_lines(ptx), entry_source_lines_line_by_line(ptx));
        }
    }

    #[test]
    fn a_local_depot_is_no_loc() {
        let ptx = ".visible .entry k(\n)\n{\n\t.local .align 4 .b8 \t__local_depot0[28];\n\t.loc\t1 142 0\n}\n\t.file\t1 \"/src/k.cu\"\n";
        let lines = entry_source_lines(ptx);
        assert_eq!(
            lines["k"].line, 142,
            "the first .loc, not the .local depot before it"
        );
    }

    #[test]
    fn without_line_info_nothing_is_found() {
        assert!(entry_source_lines(".visible .entry k(\n)\n{\nret;\n}\n").is_empty());
    }
}
