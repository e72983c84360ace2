//! What a kernel's machine code may hold that a SASS lint reports, as the cubin shows it without
//! a disassembly: for a binary, which has no PTX to say it (the source build's SASS stage reads
//! `call`, `f64` and `setmaxnreg` in the PTX), the SASS stage reads a kernel's code only where
//! one of these marks is, or where it uses local memory.
//!
//! * a call the `call` lint may report (a `CALL` to a function that is not one of ptxas's own
//!   arithmetic subroutines, `occupancy_core::sass::is_compiler_subroutine`): a function symbol
//!   in the kernel's code section besides its own (ptxas places a kernel's non-inlined functions
//!   there, `$kernel$callee`, reached by `CALL.REL`), a callee of the kernel in `.nv.callgraph`
//!   (`vprintf`, `__assertfail`, `malloc`), or a `CALL.ABS` in its code (through a register: a
//!   function pointer, a virtual function, a callee another module defines under `-rdc`);
//! * `setmaxnreg` (`USETMAXREG`): `EIATTR_REG_RECONFIG` in the kernel's `.nv.info.<kernel>`.
//!
//! The marks may say more than the code holds (a kernel is then read for nothing), never less:
//! every `CALL` the SASS reader reports is one of these, which the tests hold to
//! `OCCUPANCY_SASS=all` (every kernel read). FP64 instructions leave no mark: `fp64` (allowed by
//! default) reads every kernel when enabled.

use std::collections::BTreeSet;

use occupancy_core::sass::is_compiler_subroutine;

use super::{u32_at, Cubin, STT_FUNC};

/// What a kernel's code may hold that a SASS lint reports (module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeMarks {
    /// A call the `call` lint may report.
    pub calls: bool,
    /// `setmaxnreg` (`EIATTR_REG_RECONFIG`).
    pub setmaxnreg: bool,
}

/// The code sections (by section index) that hold or reach a function the `call` lint may
/// report, read once per cubin.
pub(super) struct CallingSections(BTreeSet<usize>);

impl CallingSections {
    pub(super) fn of(cubin: &Cubin<'_>) -> CallingSections {
        let mut calling = BTreeSet::new();
        let reportable = |index: usize| {
            cubin.symbols.get(index).is_some_and(|symbol| {
                symbol.kind == STT_FUNC
                    && !symbol.name.is_empty()
                    && !is_compiler_subroutine(&symbol.name)
            })
        };
        // A function that is not the section's own (a kernel's `$kernel$callee`).
        for (index, symbol) in cubin.symbols.iter().enumerate() {
            let own = cubin
                .sections
                .get(symbol.section)
                .is_some_and(|section| section.name.strip_prefix(".text.") == Some(&symbol.name));
            if !own && symbol.section != 0 && reportable(index) {
                calling.insert(symbol.section);
            }
        }
        // A callee in the call graph: `(caller, callee)` symbol pairs, the callee negative for
        // the graph's own entries.
        for pair in cubin.callgraph().chunks_exact(2) {
            let (caller, callee) = (pair[0] as usize, pair[1]);
            let callee = usize::try_from(callee)
                .ok()
                .filter(|_| callee < 0x8000_0000);
            if callee.is_some_and(|callee| callee != caller && reportable(callee)) {
                if let Some(symbol) = cubin.symbols.get(caller) {
                    calling.insert(symbol.section);
                }
            }
        }
        // A call through a register or to an absolute address: a function pointer, a callee
        // the module does not define (`vprintf`, an `-rdc` callee), a virtual function.
        let decodable = cubin
            .arch()
            .and_then(|arch| occupancy_core::arch::lookup(&arch).ok())
            .is_some_and(|facts| facts.major >= 7);
        for (index, section) in cubin.sections.iter().enumerate() {
            let code = section.name.starts_with(".text.");
            let absolute = match decodable {
                true => cubin.contents(section).is_some_and(calls_absolute),
                // Code of another encoding: every kernel may call.
                false => true,
            };
            if code && absolute {
                calling.insert(index);
            }
        }
        CallingSections(calling)
    }

    pub(super) fn contains(&self, section: usize) -> bool {
        self.0.contains(&section)
    }
}

impl Cubin<'_> {
    /// The words of `.nv.callgraph` (none without one, or when it cannot be read).
    fn callgraph(&self) -> Vec<u32> {
        let Some(bytes) = (self.sections.iter())
            .find(|section| section.name == ".nv.callgraph")
            .and_then(|section| self.contents(section))
        else {
            return Vec::new();
        };
        (0..bytes.len() / 4)
            .filter_map(|index| u32_at(bytes, index * 4, 0))
            .collect()
    }
}

/// The opcode of `CALL.ABS` in sm_70+ code (the low 9 bits; the 3 above them select the operand
/// form: `0x343` through a register, `0x943` to an immediate address). `CALL.REL` (`0x144`)
/// reaches code in the same section, which has a symbol there.
const OPCODE_CALL_ABSOLUTE: u16 = 0x143;

/// Whether sm_70+ `code` has a `CALL.ABS` instruction.
fn calls_absolute(code: &[u8]) -> bool {
    code.chunks_exact(16).any(|instruction| {
        u16::from_le_bytes([instruction[0], instruction[1]]) & 0x1ff == OPCODE_CALL_ABSOLUTE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One 16-byte sm_70+ instruction whose low 12 bits are `opcode`.
    fn instruction(opcode: u16) -> Vec<u8> {
        let mut bytes = vec![0u8; 16];
        bytes[..2].copy_from_slice(&(opcode | 0x7000).to_le_bytes());
        bytes
    }

    /// `CALL.ABS` in either operand form is a call to look at; `CALL.REL` (within the section),
    /// `LDL`, `STL`, and a call opcode that is not at an instruction's start, are not.
    #[test]
    fn absolute_calls_are_found_by_their_opcode() {
        for opcode in [0x343, 0x943] {
            let code = [instruction(0x387), instruction(opcode)].concat();
            assert!(calls_absolute(&code), "{opcode:#x}");
        }
        let mut code = [instruction(0x344), instruction(0x944), instruction(0x983)].concat();
        assert!(!calls_absolute(&code));
        code[8..10].copy_from_slice(&0x343u16.to_le_bytes());
        assert!(!calls_absolute(&code), "inside an instruction's operands");
        assert!(!calls_absolute(&code[..15]), "a cut instruction");
    }
}
