//! How heavy a kernel's loops are, for comparing two compiles of one kernel (`crate::tune`):
//! the instructions of its outermost loops (nested loops included) and, among them, the
//! instructions that access memory. A cap on registers that ptxas meets by recomputing values or
//! reloading them from memory shows here even without a spill.
//!
//! Where the disassembly has the control bits (`nvdisasm -hex`, sm_70 and later:
//! [`super::control`]), it also says how long one warp waits in one pass of those
//! instructions: the stall cycles ptxas scheduled, and how often it waits on a scoreboard set by
//! a load from global, local or generic memory (hundreds of cycles) or by another
//! variable-latency instruction (shared memory, transcendental functions, shuffles: tens). A
//! compile that keeps more loads in flight before waiting (more registers) waits less often.

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
    /// The control bits were read, and the wait counts below are known.
    #[serde(default)]
    pub control_known: bool,
    /// Stall cycles scheduled over the weighed instructions (those in loops; every
    /// instruction of a kernel without loops).
    #[serde(default)]
    pub stall_cycles: u32,
    /// Of the weighed instructions, those that wait on a load from global, local or generic
    /// memory (or an atomic, or a texture fetch).
    #[serde(default)]
    pub memory_waits: u32,
    /// Of the weighed instructions, those that wait only on other variable-latency results
    /// (shared memory, transcendental functions, shuffles, stores releasing registers).
    #[serde(default)]
    pub short_waits: u32,
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

/// SASS base opcodes whose results come from global, local or generic memory or the texture
/// path (hundreds of cycles), as opposed to shared memory, the constant cache or the SM.
const LONG_LATENCY_OPCODES: [&str; 11] = [
    "LD", "LDG", "LDL", "ATOM", "ATOMG", "TEX", "TLD", "TLD4", "TXD", "SULD", "SUATOM",
];

/// What one weighed pass waits on: `(stall cycles, memory waits, short waits)`, or `None` when
/// an instruction lacks its control bits. A wait's scoreboard was set by the nearest earlier
/// instruction of the pass that releases it, wrapping around (a loop's next iteration waits
/// on what the end of this one started).
fn waits(section: &SassSection, weighed: &[usize]) -> Option<(u32, u32, u32)> {
    let controls: Vec<super::control::Control> = weighed
        .iter()
        .map(|&index| section.instructions[index].control)
        .collect::<Option<_>>()?;
    // Per scoreboard, whether its latest setter in program order is a long-latency load.
    let mut long = [None::<bool>; 8];
    let set = |position: usize, long: &mut [Option<bool>; 8]| {
        let control = controls[position];
        let opcode = section.instructions[weighed[position]].base_opcode();
        if let Some(scoreboard) = control.write_scoreboard {
            long[usize::from(scoreboard)] = Some(LONG_LATENCY_OPCODES.contains(&opcode));
        }
        if let Some(scoreboard) = control.read_scoreboard {
            long[usize::from(scoreboard)] = Some(false);
        }
    };
    // The first pass only learns the setters, so that the second sees those of the end of
    // the previous iteration.
    for position in 0..controls.len() {
        set(position, &mut long);
    }
    let (mut stalls, mut memory, mut short) = (0, 0, 0);
    for (position, control) in controls.iter().enumerate() {
        stalls += u32::from(control.stall_cycles);
        if control.wait_mask != 0 {
            match control
                .waits()
                .any(|scoreboard| long[usize::from(scoreboard)] == Some(true))
            {
                true => memory += 1,
                false => short += 1,
            }
        }
        set(position, &mut long);
    }
    Some((stalls, memory, short))
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
    let mut in_loops = Vec::new();
    for index in body.clone() {
        if cfg.block_loop[cfg.block_of(index)].is_none() {
            continue;
        }
        in_loops.push(index);
        profile.loop_instructions += 1;
        if is_memory_instruction(&section.instructions[index]) {
            profile.loop_memory_instructions += 1;
        }
    }
    let weighed = match profile.loops {
        0 => body.collect(),
        _ => in_loops,
    };
    if let Some((stalls, memory, short)) = waits(section, &weighed) {
        profile.control_known = !weighed.is_empty();
        profile.stall_cycles = stalls;
        profile.memory_waits = memory;
        profile.short_waits = short;
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sass::parse_nvdisasm;

    /// `nvdisasm -hex`'s two lines of one sm_90 instruction with these control bits.
    fn hex(offset: u32, text: &str, stall: u64, write: u64, read: u64, wait: u64) -> String {
        let high = (stall | write << 5 | read << 8 | wait << 11) << 41;
        format!("        /*{offset:04x}*/ {text} ; /* 0x0000000000000000 */\n        /* 0x{high:016x} */\n")
    }

    #[test]
    fn counts_the_waits_of_a_loop_by_what_set_their_scoreboards() {
        let none = 7;
        let mut text = String::from("\t.target\tsm_90\n\t.section\t.text.k,\"ax\",@progbits\n\t.other\tk,@\"STO_CUDA_ENTRY STV_DEFAULT\"\nk:\n");
        text += &hex(0x00, "MOV R0, RZ", 1, none, none, 0);
        text += ".L_x_0:\n";
        // The first use of the load of the previous iteration (scoreboard 2, set at 0x40):
        // a memory wait, found by wrapping around the loop.
        text += &hex(0x10, "FFMA R2, R6, R2, R2", 4, none, none, 0b100);
        text += &hex(0x20, "LDS R3, [R0]", 1, 0, none, 0);
        text += &hex(0x30, "FADD R2, R3, R2", 4, none, none, 0b001);
        text += &hex(0x40, "LDG.E R6, desc[UR4][R4.64]", 2, 2, none, 0);
        text += &hex(0x50, "STG.E desc[UR4][R8.64], R2", 1, none, 3, 0);
        text += &hex(0x60, "IADD3 R2, R2, 0x1, RZ", 1, none, none, 0b1000);
        text += &hex(0x70, "ISETP.NE.AND P0, PT, R0, 0x100, PT", 5, none, none, 0);
        text += &hex(0x80, "@P0 BRA `(.L_x_0)", 5, none, none, 0);
        text += &hex(0x90, "EXIT", 5, none, none, 0);
        let section = parse_nvdisasm(&text).unwrap().remove(0);
        let profile = loop_profile(&section).unwrap();
        assert_eq!(
            (profile.loop_instructions, profile.control_known),
            (8, true)
        );
        assert_eq!(profile.stall_cycles, 4 + 1 + 4 + 2 + 1 + 1 + 5 + 5);
        // FFMA waits on the load; FADD on shared memory; IADD3 on the store's register read.
        assert_eq!((profile.memory_waits, profile.short_waits), (1, 2));
        // Without -hex, or before Volta, nothing is known of the waits.
        let plain = text.replace("sm_90", "sm_61");
        let profile = loop_profile(&parse_nvdisasm(&plain).unwrap().remove(0)).unwrap();
        assert!(!profile.control_known);
        assert_eq!(profile.memory_waits + profile.short_waits, 0);
    }

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
                ..LoopProfile::default()
            }
        );
    }
}
