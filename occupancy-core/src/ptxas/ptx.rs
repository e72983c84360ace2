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
