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
    parse_nvdisasm(text)?
        .iter()
        .filter(|section| section.entry)
        .map(|section| kernel_facts(section, spills_reported(&section.name)))
        .collect()
}

/// The `.entry` kernels of a PTX module whose bodies contain `setmaxnreg`: one linear pass.
pub fn ptx_entries_with_setmaxnreg(ptx: &str) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    let mut current: Option<String> = None;
    for line in ptx.lines() {
        let trimmed = line.trim_start();
        let after_entry = trimmed
            .strip_prefix(".visible .entry")
            .or_else(|| trimmed.strip_prefix(".entry"))
            .or_else(|| trimmed.strip_prefix(".weak .entry"));
        if let Some(rest) = after_entry {
            current = rest
                .trim()
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .map(str::to_owned);
        } else if trimmed.starts_with(".func") || trimmed.starts_with(".visible .func") {
            current = None;
        } else if trimmed.starts_with("setmaxnreg") {
            if let Some(name) = &current {
                found.insert(name.clone());
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
        let found = ptx_entries_with_setmaxnreg(ptx);
        assert_eq!(found.into_iter().collect::<Vec<_>>(), vec!["a".to_owned()]);
    }
}
