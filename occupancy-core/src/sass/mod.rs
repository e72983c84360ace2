//! Evidence from the machine code: the SASS of the cubin a compile produced, read as
//! `nvdisasm -c -g` prints it, turned into per-kernel facts.
//!
//! ptxas says how many bytes a kernel spills; this module says where: which local loads and
//! stores (`LDL`/`STL`) sit inside loops (natural loops of the control-flow graph, with their
//! nesting), at which source line (`-lineinfo` line tables, which do not change the code), and
//! whether they are spills, local arrays indexed at run time, or a callee's frame (naming the
//! callee and what it is). It also counts double-precision instructions, non-inlined calls
//! (naming the callee of a call through a register, `call_target::CallResolver`) and
//! `setmaxnreg` (`USETMAXREG`).
//!
//! Data flows one way: [`parse_nvdisasm`] (text → sections) → `cfg::ControlFlow`
//! (blocks, dominators, loops) → `facts::kernel_facts` (counts). Pure: no I/O.

pub(crate) mod call_target;
pub(crate) mod callee;
pub(crate) mod cfg;
pub mod control;
pub(crate) mod facts;
pub(crate) mod parse;
pub(crate) mod profile;
pub mod raw;
mod symbols;

pub use callee::is_compiler_subroutine;
pub use facts::{
    CallFacts, LineFacts, LocalKind, LoopFacts, SassFacts, SetMaxRegFacts, INDIRECT_CALLEE,
};
pub use parse::{parse_nvdisasm, Instruction, SassSection, SourceLine, Subroutine};
pub use profile::{loop_profile, LoopProfile};
pub use symbols::FunctionSymbols;

pub(crate) use facts::kernel_facts;

/// The disassembly could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SassError {
    /// No `.text.` section: not `nvdisasm -c` output of a cubin.
    #[error("the disassembly has no code sections (`.section .text.NAME`): expected the output of `nvdisasm -c -g FILE.cubin`")]
    NoCode,
    /// A line that looks like an instruction but is not one.
    #[error("disassembly line {text_line}: {message}: `{line}`")]
    Line {
        text_line: usize,
        line: String,
        message: String,
    },
    /// A branch to a label the function does not define.
    #[error("disassembly line {text_line}: `{function}` branches to `{label}`, which it does not define")]
    UnknownLabel {
        function: String,
        label: String,
        text_line: usize,
    },
}

/// Facts for every kernel (`STO_CUDA_ENTRY` section) of one disassembled cubin.
/// `spills_reported(name)`: whether ptxas reported spill bytes for the kernel.
pub fn analyze(
    text: &str,
    spills_reported: impl Fn(&str) -> bool,
) -> Result<Vec<SassFacts>, SassError> {
    analyze_sections(&parse_nvdisasm(text)?, spills_reported)
}

/// Facts for every kernel of sections read another way ([`raw::RawBinary::sections`]).
pub fn analyze_sections(
    sections: &[SassSection],
    spills_reported: impl Fn(&str) -> bool,
) -> Result<Vec<SassFacts>, SassError> {
    sections
        .iter()
        .filter(|section| section.entry)
        .map(|section| kernel_facts(section, spills_reported(&section.name)))
        .collect()
}

/// The `.entry` kernels of a PTX module whose code (not directives or comments) has one of
/// `operations` (`"setmaxnreg"`, `"call"`, `"f64"`): one linear pass. Code in a `.func` belongs
/// to no kernel (a kernel that calls it has its own `call`).
pub fn ptx_entries_with_operations(
    ptx: &str,
    operations: &[&str],
) -> std::collections::BTreeSet<String> {
    ptx_entries_with_each_operation(ptx, operations)
        .into_values()
        .flatten()
        .collect()
}

/// Per operation of `operations`, the `.entry` kernels whose code has it (operations no kernel
/// has are absent): [`ptx_entries_with_operations`] for several questions at once.
///
/// Only the lines that hold a declaration (`.entry`, `.func`) or an operation are read
/// (`ptxas::text::lines_holding`): the declarations mark where each kernel's code starts and
/// ends, and once a kernel is known to have an operation the search for it resumes at the next
/// declaration. Linear in the text; the answer is that of reading every line
/// (`tests::entries_with_each_operation_line_by_line`, compared by proptest).
pub fn ptx_entries_with_each_operation<'a>(
    ptx: &str,
    operations: &[&'a str],
) -> std::collections::BTreeMap<&'a str, std::collections::BTreeSet<String>> {
    use crate::ptxas::text;
    // (line start, the kernel whose code follows; `None` after a `.func`'s declaration).
    let regions: Vec<(usize, Option<&str>)> = text::lines_holding(ptx, &[".entry", ".func"])
        .into_iter()
        .filter_map(|start| {
            let (_, end) = text::line_around(ptx, start);
            declared_on(text::line_text(ptx, start, end)).map(|kernel| (start, kernel))
        })
        .collect();
    let mut found: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for &operation in operations.iter().filter(|operation| !operation.is_empty()) {
        let mut from = 0;
        while let Some(offset) = ptx[from..].find(operation) {
            let (start, end) = text::line_around(ptx, from + offset);
            let code = code_of(text::line_text(ptx, start, end));
            if code.starts_with('.') || !text::contains(code, operation) {
                from = end;
                continue;
            }
            let region = regions.partition_point(|(declared, _)| *declared < start);
            if let Some(&(_, Some(kernel))) = region.checked_sub(1).map(|at| &regions[at]) {
                found
                    .entry(operation)
                    .or_default()
                    .insert(kernel.to_owned());
            }
            // This kernel (or code of no kernel) has nothing more to say about `operation`.
            from = regions.get(region).map_or(ptx.len(), |(next, _)| *next);
        }
    }
    found
}

/// A PTX line without its `//` comment and leading white space.
fn code_of(line: &str) -> &str {
    crate::ptxas::text::before_line_comment(line).trim_ascii_start()
}

/// What a declaration line starts: a kernel's code (`Some(Some(name))`), a function's, which is
/// no kernel's (`Some(None)`); `None` for any other line.
fn declared_on(line: &str) -> Option<Option<&str>> {
    let code = code_of(line);
    if !code.starts_with('.') {
        return None;
    }
    let declaration = code
        .strip_prefix(".visible ")
        .or_else(|| code.strip_prefix(".weak "))
        .unwrap_or(code);
    match crate::ptxas::entry_declared_on(code) {
        Some(kernel) => Some(Some(kernel)),
        None => declaration.starts_with(".func").then_some(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What [`ptx_entries_with_each_operation`] must answer, reading every line.
    fn entries_with_each_operation_line_by_line<'a>(
        ptx: &str,
        operations: &[&'a str],
    ) -> std::collections::BTreeMap<&'a str, std::collections::BTreeSet<String>> {
        let mut found: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
            std::collections::BTreeMap::new();
        let mut current: Option<&str> = None;
        for line in ptx.lines() {
            let code = code_of(line);
            if code.starts_with('.') {
                if let Some(kernel) = declared_on(line) {
                    current = kernel;
                }
            } else if let Some(kernel) = current {
                for operation in operations
                    .iter()
                    .filter(|operation| code.contains(*operation))
                {
                    found
                        .entry(operation)
                        .or_default()
                        .insert(kernel.to_owned());
                }
            }
        }
        found
    }

    /// PTX-like lines: kernels, functions, code with and without the operations, comments,
    /// directives, `\r\n` endings.
    fn ptx_soup() -> impl Strategy<Value = String> {
        let line = prop::sample::select(vec![
            ".visible .entry k1(",
            ".entry k2()",
            ".weak .entry k3(",
            ".func helper(",
            ".visible .func (.param .b32 r) f(",
            "{",
            "}",
            "\tadd.f64 %fd1, %fd2, %fd3;",
            "\tcall.uni helper, ();",
            "\tsetmaxnreg.inc.sync.aligned.u32 240;",
            "\tret; // call f64",
            "// .entry commented(",
            "\t.reg .f64 %fd<4>;",
            "\tmov.u32 %r1, %r2;",
            "\t.loc 1 2 3",
            "\tcall.uni f64helper, (); // setmaxnreg",
            ".entry",
            "",
        ]);
        crate::ptxas::text::tests::lines_of(line)
    }

    proptest! {
        #[test]
        fn each_operation_is_found_as_reading_every_line(ptx in ptx_soup(), cut in 0usize..200) {
            let operations = ["call", "f64", "setmaxnreg"];
            let ptx = &ptx[..ptx.floor_char_boundary(cut.min(ptx.len()))];
            prop_assert_eq!(
                ptx_entries_with_each_operation(ptx, &operations),
                entries_with_each_operation_line_by_line(ptx, &operations)
            );
        }
    }

    #[test]
    fn finds_setmaxnreg_per_entry() {
        let ptx = ".visible .entry a(\n.param .u64 p)\n{\n\tsetmaxnreg.inc.sync.aligned.u32 240;\n}\n.visible .entry b()\n{\n\tret;\n}\n";
        let found = ptx_entries_with_operations(ptx, &["setmaxnreg"]);
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec!["a".to_owned()]);
    }
}
