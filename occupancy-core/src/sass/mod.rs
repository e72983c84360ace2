//! Evidence from the machine code: the SASS of the cubin a compile produced, read as
//! `nvdisasm -c -g` prints it, turned into per-kernel facts.
//!
//! ptxas says how many bytes a kernel spills; this module says where: which local loads and
//! stores (`LDL`/`STL`) sit inside loops (natural loops of the control-flow graph, with their
//! nesting), at which source line (`-lineinfo` line tables, which do not change the code), and
//! whether they are spills, local arrays indexed at run time, or a callee's frame (naming the
//! callee and what it is). It also counts double-precision instructions, non-inlined calls and
//! `setmaxnreg` (`USETMAXREG`).
//!
//! Data flows one way: [`parse::parse_nvdisasm`] (text → sections) → [`cfg::ControlFlow`]
//! (blocks, dominators, loops) → [`facts::kernel_facts`] (counts). Pure: no I/O.

pub mod callee;
pub mod cfg;
pub mod facts;
pub mod lints;
pub mod parse;
pub mod raw;

pub use callee::{describe_callee, is_compiler_subroutine, KnownCallee};
pub use facts::{
    access_width_bits, kernel_facts, CallFacts, LineFacts, LocalKind, LoopFacts, SassFacts,
    SetMaxRegFacts,
};
pub use lints::{evaluate_sass, hottest_spill_note, SassLintInputs};
pub use parse::{parse_nvdisasm, Instruction, SassSection, SourceLine};

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
/// has are absent): [`ptx_entries_with_operations`] for several questions in one pass.
pub fn ptx_entries_with_each_operation<'a>(
    ptx: &str,
    operations: &[&'a str],
) -> std::collections::BTreeMap<&'a str, std::collections::BTreeSet<String>> {
    let mut found: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    let mut current: Option<&str> = None;
    for line in ptx.lines() {
        let code = crate::ptxas::text::before_line_comment(line).trim_ascii_start();
        if code.starts_with('.') {
            // A declaration: a kernel's start, or a function's (whose code is no kernel's).
            let declaration = code
                .strip_prefix(".visible ")
                .or_else(|| code.strip_prefix(".weak "))
                .unwrap_or(code);
            if let Some(kernel) = crate::ptxas::entry_declared_on(code) {
                current = Some(kernel);
            } else if declaration.starts_with(".func") {
                current = None;
            }
        } else if let Some(kernel) = current {
            for operation in operations
                .iter()
                .filter(|operation| crate::ptxas::text::contains(code, operation))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_setmaxnreg_per_entry() {
        let ptx = ".visible .entry a(\n.param .u64 p)\n{\n\tsetmaxnreg.inc.sync.aligned.u32 240;\n}\n.visible .entry b()\n{\n\tret;\n}\n";
        let found = ptx_entries_with_operations(ptx, &["setmaxnreg"]);
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec!["a".to_owned()]);
    }
}
