//! How heavy a kernel's loops are, for comparing two compiles of one kernel (`crate::tune`):
//! the instructions of its outermost loops (nested loops included) and, among them, the
//! instructions that access memory. A cap on registers that ptxas meets by recomputing values or
//! reloading them from memory shows here even without a spill.

use serde::{Deserialize, Serialize};

use super::cfg::ControlFlow;
use super::parse::{Instruction, SassSection};
use super::SassError;

/// The loops of one kernel's own code (not its subroutines'), counted statically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LoopProfile {
    /// Natural loops, nested ones included.
    pub loops: u32,
    /// Instructions inside outermost loops (each counted once, however deep it is nested).
    pub loop_instructions: u32,
    /// Of those, loads, stores and atomics of global, shared, local and generic memory (`LDG`,
    /// `STS`, `LDL`, `ATOM`, ...; not the constant cache).
    pub loop_memory_instructions: u32,
    /// Instructions of the kernel's own code, loops or not.
    pub instructions: u32,
}

/// SASS base opcodes that move data between registers and memory (not the constant cache).
/// (`REDUX`, a reduction across a warp's registers, is not one.)
const MEMORY_OPCODES: [&str; 16] = [
    "LD", "ST", "LDG", "STG", "LDS", "STS", "LDL", "STL", "LDSM", "STSM", "LDGSTS", "ATOM",
    "ATOMG", "ATOMS", "RED", "REDG",
];

/// Whether `instruction` accesses memory (module docs).
fn is_memory_instruction(instruction: &Instruction) -> bool {
    MEMORY_OPCODES.contains(&instruction.base_opcode())
}

/// The [`LoopProfile`] of one function's section.
pub fn loop_profile(section: &SassSection) -> Result<LoopProfile, SassError> {
    let body = section.range_of(None);
    let cfg = ControlFlow::build(section, body.clone())?;
    let mut profile = LoopProfile {
        loops: cfg.loops.len() as u32,
        instructions: body.len() as u32,
        ..LoopProfile::default()
    };
    for index in body {
        if cfg.block_loop[cfg.block_of(index)].is_none() {
            continue;
        }
        profile.loop_instructions += 1;
        if is_memory_instruction(&section.instructions[index]) {
            profile.loop_memory_instructions += 1;
        }
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::parse_nvdisasm;

    #[test]
    fn counts_the_instructions_and_memory_accesses_inside_loops() {
        let text =
            "\t.section\t.text.k,\"ax\",@progbits\n\t.other\tk,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:
        /*0000*/                   MOV R0, RZ ;
        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;
.L_x_0:
        /*0020*/                   LDS R3, [R0] ;
        /*0030*/                   FFMA R2, R3, R2, R2 ;
        /*0040*/                   REDUX.SUM UR5, R2 ;
        /*0050*/                   IADD3 R0, R0, 0x4, RZ ;
        /*0060*/                   ISETP.NE.AND P0, PT, R0, 0x100, PT ;
        /*0070*/               @P0 BRA `(.L_x_0) ;
        /*0080*/                   STG.E desc[UR4][R4.64], R2 ;
        /*0090*/                   EXIT ;
";
        let section = parse_nvdisasm(text).unwrap().remove(0);
        let profile = loop_profile(&section).unwrap();
        assert_eq!(
            profile,
            LoopProfile {
                loops: 1,
                loop_instructions: 6,
                loop_memory_instructions: 1,
                instructions: 10,
            }
        );
    }
}
