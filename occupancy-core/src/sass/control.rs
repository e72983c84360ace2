//! The scheduling control bits ptxas encodes in every instruction from Volta (sm_70) on, as
//! `nvdisasm -hex` prints them: each instruction line ends with its low 64-bit word, and the
//! next line holds the high word, whose bits 41 to 61 are the control field (bits 105 to 125 of
//! the 128-bit instruction; Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via
//! Microbenchmarking", 2018, section 2.1, and the same layout through Hopper and Blackwell):
//!
//! | bits (high word) | field |
//! |---|---|
//! | 41-44 | stall cycles before the next instruction issues |
//! | 45 | yield |
//! | 46-48 | the scoreboard (0-5) this instruction's result releases when written; 7: none |
//! | 49-51 | the scoreboard its source registers release when read (stores); 7: none |
//! | 52-57 | the scoreboards this instruction waits on, a bit each |
//!
//! Fixed-latency instructions are ordered by the stall counts; variable-latency ones (memory,
//! shared memory, transcendental functions, shuffles) set a scoreboard that a later instruction
//! waits on. `profile::loop_profile` counts the waits of a loop by what set their scoreboards.

use serde::{Deserialize, Serialize};

/// One instruction's control field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// Cycles before the next instruction of the warp issues.
    pub stall_cycles: u8,
    /// The scoreboard released when the result is written, if any.
    pub write_scoreboard: Option<u8>,
    /// The scoreboard released when the source registers are read, if any.
    pub read_scoreboard: Option<u8>,
    /// The scoreboards waited on before issue, bit `n` for scoreboard `n`.
    pub wait_mask: u8,
}

impl Control {
    /// The control field of an instruction whose high 64-bit word is `high`.
    pub fn from_high_word(high: u64) -> Control {
        let field = |shift: u32, width: u32| ((high >> shift) & ((1 << width) - 1)) as u8;
        let scoreboard = |value: u8| (value != 7).then_some(value);
        Control {
            stall_cycles: field(41, 4),
            write_scoreboard: scoreboard(field(46, 3)),
            read_scoreboard: scoreboard(field(49, 3)),
            wait_mask: field(52, 6),
        }
    }

    /// The scoreboards waited on.
    pub fn waits(self) -> impl Iterator<Item = u8> {
        (0..6).filter(move |bit| self.wait_mask & (1 << bit) != 0)
    }
}

/// The 64-bit word of a bare `/* 0x000fe20000000800 */` comment (trimmed), `nvdisasm -hex`'s
/// line after an instruction.
pub(crate) fn encoding_word(line: &str) -> Option<u64> {
    let inner = line.strip_prefix("/*")?.strip_suffix("*/")?.trim();
    u64::from_str_radix(inner.strip_prefix("0x")?, 16).ok()
}

/// Whether nvdisasm encodes `arch` (`sm_90`) in 128-bit words with the control field in the
/// high word: Volta (sm_70) and later.
pub(crate) fn has_control_words(arch: &str) -> bool {
    arch.strip_prefix("sm_")
        .map(|digits| digits.trim_end_matches(|c: char| c.is_ascii_alphabetic()))
        .and_then(|digits| digits.parse::<u32>().ok())
        .is_some_and(|number| number >= 70)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_fields_of_real_hopper_words() {
        // `LDG.E.128 R168, desc[UR6][R246.64+-0xf0]` (sm_90): waits on nothing, stalls 4
        // cycles, releases scoreboard 2 when its result is written.
        let load = Control::from_high_word(0x000ea8000c1e1d00);
        assert_eq!(
            load,
            Control {
                stall_cycles: 4,
                write_scoreboard: Some(2),
                read_scoreboard: None,
                wait_mask: 0
            }
        );
        // `IMAD.WIDE.U32 R2, R5, UR4, R2`: waits on scoreboard 0 (the `LDC` before it).
        let consumer = Control::from_high_word(0x001fe2000f8e0002);
        assert_eq!(consumer.wait_mask, 1);
        assert_eq!(consumer.waits().collect::<Vec<_>>(), [0]);
        assert_eq!(consumer.stall_cycles, 1);
        assert_eq!(consumer.write_scoreboard, None);
    }

    #[test]
    fn blackwell_keeps_the_layout() {
        // nvcc 13.0, `-arch=sm_100` and `-arch=sm_120` (the same words): a loop's
        // `LDG.E.CONSTANT R2` releases scoreboard 2, and the `FFMA R9, R2, 2, R9` that uses it
        // waits on scoreboard 2 and stalls 12 cycles.
        let load = Control::from_high_word(0x000ea2000c1e9900);
        assert_eq!(
            (load.write_scoreboard, load.wait_mask, load.stall_cycles),
            (Some(2), 0, 1)
        );
        let use_of_it = Control::from_high_word(0x004fd80000000009);
        assert_eq!(use_of_it.waits().collect::<Vec<_>>(), [2]);
        assert_eq!(use_of_it.stall_cycles, 12);
    }

    #[test]
    fn reads_words_and_archs() {
        assert_eq!(
            encoding_word("/* 0x000fe20000000800 */"),
            Some(0x000fe20000000800)
        );
        assert_eq!(encoding_word("/*0010*/ S2R R2, SR_TID.X ;"), None);
        assert!(has_control_words("sm_70") && has_control_words("sm_90a"));
        assert!(has_control_words("sm_120f") && !has_control_words("sm_61"));
    }
}
