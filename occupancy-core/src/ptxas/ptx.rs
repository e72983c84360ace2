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
//! Only the directives between an entry's parameter list and its body are read; the body is
//! skipped without being interpreted.

use super::demangle;
use serde::Serialize;

/// The performance-tuning directives of one `.entry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
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
}

/// Reads every `.entry` of a PTX module with its launch directives.
pub fn parse_ptx_directives(ptx_text: &str) -> Vec<PtxEntry> {
    let text = strip_comments(ptx_text);
    let mut entries = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = find_entry_keyword(rest) {
        rest = &rest[at + ".entry".len()..];
        let header_end = rest.find('{').unwrap_or(rest.len());
        let body_start = (header_end + 1).min(rest.len());
        let header = rest[..header_end].trim_start();
        let name_end = header
            .find(|c: char| c == '(' || c.is_whitespace() || c == ';')
            .unwrap_or(header.len());
        let name = &header[..name_end];
        let after_params = match header.find('(') {
            Some(open) => header[open..]
                .find(')')
                .map_or("", |close| &header[open + close + 1..]),
            None => &header[name_end..],
        };
        // A declaration (`.entry k(...);`) has no body: go on after its `;`.
        if name.is_empty() || after_params.trim_start().starts_with(';') {
            rest = &rest[1..];
            continue;
        }
        let mut entry = PtxEntry {
            name: name.to_string(),
            demangled: demangle(name),
            ..PtxEntry::default()
        };
        for directive in after_params
            .lines()
            .flat_map(|line| line.split(';'))
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
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
            if known.is_none() {
                entry.other_directives.push(directive.to_string());
            }
        }
        entries.push(entry);
        rest = skip_body(&rest[body_start..]);
    }
    entries
}

/// Finds `.entry` as a whole word.
fn find_entry_keyword(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(offset) = text[from..].find(".entry") {
        let at = from + offset;
        let after = text[at + ".entry".len()..].chars().next();
        let before = text[..at].chars().next_back();
        if after.is_some_and(char::is_whitespace) && before.map_or(true, char::is_whitespace) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Skips a `{ ... }` body whose opening brace was consumed.
fn skip_body(text: &str) -> &str {
    let mut depth = 1usize;
    for (index, byte) in text.bytes().enumerate() {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[index + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let line_comment = rest.find("//");
        let block_comment = rest.find("/*");
        match (line_comment, block_comment) {
            (Some(line), block) if block.map_or(true, |block| line < block) => {
                out.push_str(&rest[..line]);
                rest = rest[line..]
                    .find('\n')
                    .map_or("", |end| &rest[line + end..]);
            }
            (_, Some(block)) => {
                out.push_str(&rest[..block]);
                out.push(' ');
                rest = rest[block + 2..]
                    .find("*/")
                    .map_or("", |end| &rest[block + 2 + end + 2..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
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
    fn garbage_gives_no_entries_and_no_panic() {
        assert!(parse_ptx_directives(".entry").is_empty());
        assert!(parse_ptx_directives("/* .entry x { */").is_empty());
        let _ = parse_ptx_directives(".entry x( .maxntid {{{");
    }
}

// ---------------------------------------------------------------------------------------------
// Where each entry was written: the first `.loc` of an entry compiled with `-lineinfo`, and the
// `.file` it names. Separate from the directive parser above: one linear pass over the lines.
// ---------------------------------------------------------------------------------------------

/// The source line an entry function was defined on, from the PTX's `-lineinfo` data: for a
/// kernel generated by a C macro, the line of the macro's invocation; for a kernel in a header,
/// the header's line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EntrySourceLine {
    /// The `.file` path as nvcc wrote it (absolute when nvcc was given an absolute path).
    pub file: String,
    /// 1-based line.
    pub line: u32,
}

/// For each `.entry` in `ptx_text` that has line information (`nvcc -lineinfo`), the file and
/// line of its first `.loc`: where the kernel's definition starts. Entries without `.loc` are
/// left out. One pass over the lines, linear in the text.
pub fn entry_source_lines(ptx_text: &str) -> std::collections::BTreeMap<String, EntrySourceLine> {
    let mut files: std::collections::BTreeMap<u32, String> = std::collections::BTreeMap::new();
    let mut first_locs: Vec<(String, u32, u32)> = Vec::new();
    let mut open_entry: Option<String> = None;
    for line in ptx_text.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix(".file") {
            if let Some((index, path)) = file_directive(rest) {
                files.insert(index, path);
            }
        } else if let Some(rest) = line.strip_prefix(".loc") {
            if let Some(name) = open_entry.take() {
                let mut fields = rest.split_whitespace();
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
    first_locs
        .into_iter()
        .filter_map(|(name, file_index, line)| {
            let file = files.get(&file_index)?.clone();
            Some((name, EntrySourceLine { file, line }))
        })
        .collect()
}

/// `1 "/path/k.cu"` or `1 "/path/k.cu", 1700000000, 1234` (after `.file`).
fn file_directive(rest: &str) -> Option<(u32, String)> {
    let rest = rest.trim_start();
    let (index, rest) = rest.split_once(char::is_whitespace)?;
    let index = index.parse().ok()?;
    let quoted = rest.trim_start().strip_prefix('"')?;
    let end = quoted.find('"')?;
    Some((index, quoted[..end].to_string()))
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

    #[test]
    fn without_line_info_nothing_is_found() {
        assert!(entry_source_lines(".visible .entry k(\n)\n{\nret;\n}\n").is_empty());
    }
}
