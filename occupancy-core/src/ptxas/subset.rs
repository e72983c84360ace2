//! A PTX module cut down to some of its kernels: what ptxas must assemble for the SASS of those
//! kernels and nothing else.
//!
//! The subset keeps the header (`.version`, `.target`, `.address_size`), every top-level
//! statement that is not a function (globals with their initializers, `.const`, `.extern
//! .shared`, `.file`, `.section` blocks, `.alias`), the named `.entry` definitions, and every
//! function they reach: a `.func` or `.entry` is kept when its name appears as an identifier in
//! kept text (code, initializers), to a fixed point, so a callee's callees and functions whose
//! address is taken come along. A prototype (`.func f(...);`) is kept when its function is, or
//! when the module does not define it (`.extern .func vprintf`). Each statement keeps the
//! comments and blank lines before it.
//!
//! One pass splits the module into top-level statements (braces counted outside `//` and
//! `/* */` comments and strings; `= { ... };` initializers end at their `;`), each statement's
//! identifiers are read once, and the fixed point visits each function once: linear in the text.

use std::collections::{BTreeSet, HashMap};

/// Why a module could not be cut down (the caller assembles the whole module instead).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubsetError {
    /// A `}` with no `{` open, at this 1-based line.
    #[error("line {line}: a `}}` closes nothing")]
    Unbalanced { line: usize },
    /// The text ends inside a statement, a block or a comment that started on this line.
    #[error("line {line}: the statement starting here never ends")]
    Unterminated { line: usize },
    /// A statement that names more than one function, or a function without a name.
    #[error("line {line}: not one function definition or declaration")]
    Unrecognized { line: usize },
    /// A kernel asked for is not defined in the module.
    #[error("the module defines no kernel `{name}`")]
    MissingKernel { name: String },
}

/// What a top-level statement is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind<'a> {
    /// `.version`, `.target`, `.address_size`, and everything else that is not a function.
    Other,
    /// A `.entry` or `.func`: its name, whether it has a body (else a prototype), and whether it
    /// is a kernel.
    Function {
        name: &'a str,
        body: bool,
        entry: bool,
    },
}

/// One top-level statement: its text (with the comments and white space before it).
#[derive(Debug)]
struct Statement<'a> {
    text: &'a str,
    kind: Kind<'a>,
}

/// `ptx` with only `kernels` and what they need (module docs). Errors when a kernel is not
/// defined or the module's top level is not understood.
pub fn subset_ptx(ptx: &str, kernels: &BTreeSet<String>) -> Result<String, SubsetError> {
    let statements = split_statements(ptx)?;
    let definitions: HashMap<&str, usize> = statements
        .iter()
        .enumerate()
        .filter_map(|(index, statement)| match statement.kind {
            Kind::Function {
                name, body: true, ..
            } => Some((name, index)),
            _ => None,
        })
        .collect();
    for name in kernels {
        let is_entry = definitions.get(name.as_str()).is_some_and(|&index| {
            matches!(statements[index].kind, Kind::Function { entry: true, .. })
        });
        if !is_entry {
            return Err(SubsetError::MissingKernel { name: name.clone() });
        }
    }
    let kept = reachable(&statements, &definitions, kernels);
    let mut out = String::with_capacity(ptx.len());
    for (index, statement) in statements.iter().enumerate() {
        let keep = match statement.kind {
            Kind::Other => true,
            Kind::Function {
                name, body: false, ..
            } => definitions
                .get(name)
                .is_none_or(|&definition| kept[definition]),
            Kind::Function { body: true, .. } => kept[index],
        };
        if keep {
            out.push_str(statement.text);
        }
    }
    Ok(out)
}

/// Which statements are kept: the non-functions, `kernels`, and every function definition whose
/// name is an identifier of kept text, to a fixed point (each definition visited once).
fn reachable(
    statements: &[Statement<'_>],
    definitions: &HashMap<&str, usize>,
    kernels: &BTreeSet<String>,
) -> Vec<bool> {
    let mut kept = vec![false; statements.len()];
    let mut pending: Vec<usize> = Vec::new();
    for (index, statement) in statements.iter().enumerate() {
        let seed = match statement.kind {
            Kind::Other => true,
            Kind::Function { name, body, .. } => body && kernels.contains(name),
        };
        if seed {
            kept[index] = true;
            pending.push(index);
        }
    }
    while let Some(index) = pending.pop() {
        for_each_identifier(statements[index].text, |identifier| {
            if let Some(&definition) = definitions.get(identifier) {
                if !kept[definition] {
                    kept[definition] = true;
                    pending.push(definition);
                }
            }
        });
    }
    kept
}

/// Calls `found` with each identifier of `text` outside comments and strings, except register
/// names (`%r1`) and the words of directives and instruction modifiers (`.u64`).
fn for_each_identifier<'a>(text: &'a str, mut found: impl FnMut(&'a str)) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if !is_identifier_byte(byte) {
            at = match byte {
                b'/' | b'"' => skip_comment_or_string(bytes, at).unwrap_or(at + 1),
                _ => at + 1,
            };
            continue;
        }
        let start = at;
        while at < bytes.len() && is_identifier_byte(bytes[at]) {
            at += 1;
        }
        let prefixed = start > 0 && matches!(bytes[start - 1], b'%' | b'.');
        if !prefixed {
            found(&text[start..at]);
        }
    }
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$'
}

/// When a comment or string starts at `at`: the index just past it (a `//` comment to its line
/// break, a `/* */` to its end or the end of the text, a string to its closing quote or line
/// break).
fn skip_comment_or_string(bytes: &[u8], at: usize) -> Option<usize> {
    match (bytes[at], bytes.get(at + 1)) {
        (b'/', Some(b'/')) => Some(
            bytes[at + 2..]
                .iter()
                .position(|&byte| byte == b'\n')
                .map_or(bytes.len(), |offset| at + 2 + offset),
        ),
        (b'/', Some(b'*')) => Some(
            bytes[at + 2..]
                .windows(2)
                .position(|pair| pair == b"*/")
                .map_or(bytes.len(), |offset| at + 2 + offset + 2),
        ),
        (b'"', _) => {
            let mut index = at + 1;
            while let Some(&byte) = bytes.get(index) {
                match byte {
                    b'"' => return Some(index + 1),
                    b'\n' => return Some(index),
                    b'\\' if bytes.get(index + 1).is_some_and(|&next| next != b'\n') => {
                        index += 2;
                    }
                    _ => index += 1,
                }
            }
            Some(index)
        }
        _ => None,
    }
}

/// The bytes that can end a statement or start a comment or string.
static STATEMENT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let special = b"{};=/\"";
    let mut index = 0;
    while index < special.len() {
        table[special[index] as usize] = true;
        index += 1;
    }
    table
};

/// Directives that end at their line break rather than a `;`.
const LINE_DIRECTIVES: [&str; 4] = [".version", ".target", ".address_size", ".file"];

/// The module's top-level statements, in order; their texts concatenate to `ptx`.
fn split_statements(ptx: &str) -> Result<Vec<Statement<'_>>, SubsetError> {
    let bytes = ptx.as_bytes();
    let mut statements = Vec::new();
    let mut start = 0;
    let mut at = 0;
    let line_of = |index: usize| 1 + bytes[..index].iter().filter(|&&b| b == b'\n').count();
    while at < bytes.len() {
        // The gap: white space and comments before the statement's first word.
        if bytes[at].is_ascii_whitespace() {
            at += 1;
            continue;
        }
        if let Some(end) = skip_comment_or_string(bytes, at).filter(|_| bytes[at] == b'/') {
            let block = bytes[at + 1] == b'*';
            if block && (end < at + 4 || &bytes[end - 2..end] != b"*/") {
                return Err(SubsetError::Unterminated { line: line_of(at) });
            }
            at = end;
            continue;
        }
        let end = statement_end(ptx, at).map_err(|error| match error {
            EndError::Unbalanced(index) => SubsetError::Unbalanced {
                line: line_of(index),
            },
            EndError::Unterminated => SubsetError::Unterminated { line: line_of(at) },
        })?;
        let kind = classify(&ptx[at..end])
            .ok_or_else(|| SubsetError::Unrecognized { line: line_of(at) })?;
        statements.push(Statement {
            text: &ptx[start..end],
            kind,
        });
        start = end;
        at = end;
    }
    if start < ptx.len() {
        statements.push(Statement {
            text: &ptx[start..],
            kind: Kind::Other,
        });
    }
    Ok(statements)
}

enum EndError {
    /// A `}` at this index closes nothing.
    Unbalanced(usize),
    Unterminated,
}

/// The index just past the statement whose first word is at `from`: the end of its line for
/// a line directive, else its `;` at depth 0, or the `}` that closes its body (a `{` after a
/// `=` at depth 0 opens an initializer, which a `;` ends).
fn statement_end(ptx: &str, from: usize) -> Result<usize, EndError> {
    let bytes = ptx.as_bytes();
    let first_word = ptx[from..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap_or_default();
    if LINE_DIRECTIVES.contains(&first_word) {
        return Ok(bytes[from..]
            .iter()
            .position(|&byte| byte == b'\n')
            .map_or(bytes.len(), |offset| from + offset + 1));
    }
    let mut depth = 0usize;
    let mut initializer = false;
    let mut at = from;
    while at < bytes.len() {
        // Most bytes are code that decides nothing: skipped in a tight loop.
        if !STATEMENT_BYTES[usize::from(bytes[at])] {
            at += 1;
            continue;
        }
        if let Some(end) = skip_comment_or_string(bytes, at) {
            at = end;
            continue;
        }
        match bytes[at] {
            b'=' if depth == 0 => initializer = true,
            b';' if depth == 0 => return Ok(at + 1),
            b'{' => depth += 1,
            b'}' if depth == 0 => return Err(EndError::Unbalanced(at)),
            b'}' => {
                depth -= 1;
                if depth == 0 && !initializer {
                    return Ok(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    Err(EndError::Unterminated)
}

/// What a statement is, from the words before its body: `None` when it names more than one
/// `.entry`/`.func` or a function without a name.
fn classify(statement: &str) -> Option<Kind<'_>> {
    let head_end = statement.find(['{', ';']).unwrap_or(statement.len());
    let head = &statement[..head_end];
    let body = statement.ends_with('}') && head_end < statement.len();
    let mut found: Option<Kind<'_>> = None;
    let mut rest = head;
    while let Some((keyword, after)) = next_function_keyword(rest) {
        if found.is_some() {
            return None;
        }
        let name = function_name(after, keyword == ".func")?;
        found = Some(Kind::Function {
            name,
            body,
            entry: keyword == ".entry",
        });
        rest = after;
    }
    Some(found.unwrap_or(Kind::Other))
}

/// The next `.entry` or `.func` word in `text` (outside comments) and the text after it.
fn next_function_keyword(text: &str) -> Option<(&'static str, &str)> {
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if let Some(end) = skip_comment_or_string(bytes, at) {
            at = end;
            continue;
        }
        let boundary = at == 0 || !is_identifier_byte(bytes[at - 1]);
        if bytes[at] == b'.' && boundary {
            for keyword in [".entry", ".func"] {
                let after = &text[at..];
                let word_ends = !after
                    .as_bytes()
                    .get(keyword.len())
                    .is_some_and(|&byte| is_identifier_byte(byte));
                if after.starts_with(keyword) && word_ends {
                    return Some((keyword, &after[keyword.len()..]));
                }
            }
        }
        at += 1;
    }
    None
}

/// The name after `.entry` or `.func` (a `.func`'s return parameters `(...)` skipped).
fn function_name(after: &str, func: bool) -> Option<&str> {
    let mut rest = after.trim_start();
    if func && rest.starts_with('(') {
        rest = rest[rest.find(')')? + 1..].trim_start();
    }
    let end = rest
        .bytes()
        .position(|byte| !is_identifier_byte(byte))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Two kernels, a chain of callees, a function whose address a global table takes, an
    /// unused function with its prototype, an extern, and comments and strings that look like
    /// code.
    const MODULE: &str = "\
//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 9.0\n.target sm_80\n.address_size 64\n\n\
\t// .globl\tfirst\n.extern .func  (.param .b32 func_retval0) vprintf\n(\n\t.param .b64 vprintf_param_0\n)\n;\n\
.func  (.param .b32 func_retval0) leaf(\n\t.param .b32 leaf_param_0\n)\n;\n\
.func unused()\n;\n\
.global .align 8 .u64 table[1] = {pointed};\n\
.global .align 4 .b8 data[2] = {1, 2};\n\
.extern .shared .align 16 .b8 smem[];\n\n\
.visible .entry first(\n\t.param .u64 first_param_0\n)\n.maxntid 256, 1, 1\n{\n\
\t.reg .b32 \t%r<3>;\n\t/* } call.uni unused, (); */\n\tcall.uni middle, ();\n\t// begin inline asm\n\t{ .reg .pred p; }\n\tret;\n}\n\
\t// .globl\tsecond\n.visible .entry second()\n{\n\tcall.uni unused, ();\n\tret;\n}\n\
.func middle()\n{\n\t.pragma \"nounroll }\";\n\tcall.uni (retval0), leaf, (param0);\n\tret;\n}\n\
.func  (.param .b32 func_retval0) leaf(\n\t.param .b32 leaf_param_0\n)\n{\n\tret;\n}\n\
.func pointed()\n{\n\tret;\n}\n\
.func unused()\n{\n\tret;\n}\n\
\t.file\t1 \"/src/k.cu\"\n\t.section\t.debug_str\n\t{\n$L__info_string0:\n.b8 95,0\n\t}\n";

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn statements_cover_the_module_and_are_classified() {
        let statements = split_statements(MODULE).unwrap();
        let concatenated: String = statements.iter().map(|s| s.text).collect();
        assert_eq!(concatenated, MODULE);
        let functions: Vec<(&str, bool, bool)> = statements
            .iter()
            .filter_map(|statement| match statement.kind {
                Kind::Function { name, body, entry } => Some((name, body, entry)),
                Kind::Other => None,
            })
            .collect();
        assert_eq!(
            functions,
            [
                ("vprintf", false, false),
                ("leaf", false, false),
                ("unused", false, false),
                ("first", true, true),
                ("second", true, true),
                ("middle", true, false),
                ("leaf", true, false),
                ("pointed", true, false),
                ("unused", true, false),
            ]
        );
    }

    #[test]
    fn a_kernel_keeps_its_callees_transitively_and_what_kept_text_names() {
        let subset = subset_ptx(MODULE, &names(&["first"])).unwrap();
        for kept in [
            ".version 9.0\n.target sm_80\n.address_size 64\n",
            "vprintf\n(",
            ".func  (.param .b32 func_retval0) leaf(\n\t.param .b32 leaf_param_0\n)\n;",
            "table[1] = {pointed};",
            "data[2] = {1, 2};",
            ".extern .shared",
            ".visible .entry first(",
            ".func middle()",
            ".func pointed()",
            "\t.file\t1 \"/src/k.cu\"\n",
            "$L__info_string0:",
        ] {
            assert!(subset.contains(kept), "{kept} kept:\n{subset}");
        }
        for dropped in [".entry second", ".func unused", "// .globl\tsecond"] {
            assert!(!subset.contains(dropped), "{dropped} dropped:\n{subset}");
        }
        let both = subset_ptx(MODULE, &names(&["first", "second"])).unwrap();
        assert!(both.contains(".func unused()\n;") && both.contains(".func unused()\n{"));
        let statements = split_statements(MODULE).unwrap().len();
        assert_eq!(
            both, MODULE,
            "every function reachable: the whole module ({statements} statements)"
        );
    }

    #[test]
    fn what_cannot_be_cut_says_why() {
        let missing = subset_ptx(MODULE, &names(&["third"])).unwrap_err();
        assert_eq!(
            missing,
            SubsetError::MissingKernel {
                name: "third".into()
            }
        );
        let not_a_kernel = subset_ptx(MODULE, &names(&["middle"])).unwrap_err();
        assert!(matches!(not_a_kernel, SubsetError::MissingKernel { .. }));
        assert_eq!(
            subset_ptx(".version 9.0\n}\n", &BTreeSet::new()).unwrap_err(),
            SubsetError::Unbalanced { line: 2 }
        );
        assert_eq!(
            subset_ptx(".version 9.0\n.entry k()\n{\n\tret;\n", &BTreeSet::new()).unwrap_err(),
            SubsetError::Unterminated { line: 2 }
        );
        assert_eq!(
            subset_ptx("/* open\n", &BTreeSet::new()).unwrap_err(),
            SubsetError::Unterminated { line: 1 }
        );
        assert_eq!(
            subset_ptx(".entry a() .func b() {}\n", &BTreeSet::new()).unwrap_err(),
            SubsetError::Unrecognized { line: 1 }
        );
        assert_eq!(
            subset_ptx(".func (.param .b32 r) {}\n", &BTreeSet::new()).unwrap_err(),
            SubsetError::Unrecognized { line: 1 }
        );
    }

    #[test]
    fn no_kernel_keeps_only_the_module_level_statements() {
        let subset = subset_ptx(MODULE, &BTreeSet::new()).unwrap();
        assert!(!subset.contains(".entry") && !subset.contains(".func middle"));
        assert!(subset.contains("vprintf") && subset.contains(".func pointed()\n{"));
        assert!(
            !subset.contains("leaf"),
            "a prototype of a dropped function goes"
        );
    }

    /// Linear: a module of 100,000 functions (a statement's line number was once counted from
    /// the start of the text for every statement, which took seconds on a 9.5 MB module).
    #[test]
    fn a_large_module_is_cut_in_linear_time() {
        let mut module = String::from(".version 9.0\n.target sm_80\n.address_size 64\n");
        module.push_str(".visible .entry k()\n{\n\tcall.uni f7, ();\n\tret;\n}\n");
        for index in 0..100_000 {
            module.push_str(&format!(
                ".func f{index}()\n{{\n\t// f{index}\n\tret;\n}}\n"
            ));
        }
        let start = std::time::Instant::now();
        let subset = subset_ptx(&module, &names(&["k"])).unwrap();
        let elapsed = start.elapsed();
        assert!(subset.contains(".func f7()") && !subset.contains(".func f8()"));
        assert!(
            elapsed.as_secs_f64() < 2.0,
            "{elapsed:?} for {} bytes",
            module.len()
        );
    }

    proptest! {
        #[test]
        fn any_text_is_cut_or_refused_without_panicking(
            text in "[ \t\n.a-z{}();=/*\"%_0-9]{0,120}",
            kernel in "[a-z]{1,3}",
        ) {
            let kernels = names(&[kernel.as_str()]);
            if let Ok(subset) = subset_ptx(&text, &kernels) {
                prop_assert!(subset.len() <= text.len());
                // Cutting again keeps the same text: nothing kept depended on what was dropped.
                prop_assert_eq!(subset_ptx(&subset, &kernels).unwrap(), subset);
            }
        }

        #[test]
        fn the_module_cut_to_any_kernels_is_stable(first: bool, second: bool) {
            let mut kernels = BTreeSet::new();
            if first { kernels.insert("first".to_owned()); }
            if second { kernels.insert("second".to_owned()); }
            let subset = subset_ptx(MODULE, &kernels).unwrap();
            prop_assert_eq!(subset_ptx(&subset, &kernels).unwrap(), subset);
        }
    }
}
