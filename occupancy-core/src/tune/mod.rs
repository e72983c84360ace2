//! Choosing a kernel's launch bounds for it (`min_blocks_per_sm = "auto"`,
//! `max_registers = "auto"`, `cargo occupancy tune`).
//!
//! A register cap only matters where it changes how many blocks reside: [`ladder`] asks the
//! calculator, for every count of blocks per SM the launch could reach above the kernel's own,
//! which cap gives it, and keeps one bound per distinct cap. The caller (`occupancy-build`)
//! assembles the kernel's PTX once per bound ([`with_bound`] writes the directive) and reads what
//! each compile became ([`Measured`]: ptxas's registers and spills, the SASS's spills in loops and
//! how many instructions and memory accesses its loops hold). [`choose`] then applies the
//! [`Objective`]: the most resident warps among the bounds whose loops have no more spills than
//! the kernel without bounds and whose loops grow by at most [`LOOP_GROWTH_PERCENT`]; no bound
//! when none beats the kernel without one; then a bound within the same rules (below the
//! kernel's own blocks included) that the latency model ([`Measured::predicted_cycles`]) predicts
//! [`PREDICTED_GAIN_PERCENT`] cheaper per loop pass instead. [`render_ladder`] is the table `cargo occupancy tune`
//! and `explain` print.
//!
//! Pure: no I/O.

mod ladder;
mod measured;
mod objective;
mod ptx;
mod render;
#[cfg(test)]
pub(crate) mod tests;

pub use ladder::{ladder, LadderInput, Rung};
pub use measured::{
    Candidate, Measured, ISSUE_PER_CYCLE, MEMORY_LATENCY_CYCLES, SHORT_LATENCY_CYCLES,
};
#[cfg(test)]
pub(crate) use objective::verdict;
pub use objective::{
    choose, ArchLadder, Choice, Objective, Rule, Verdict, LOOP_GROWTH_PERCENT,
    PREDICTED_GAIN_PERCENT,
};
pub use ptx::{with_bound, with_bound_in_place, BoundPatchError};
pub use render::render_ladder;

use std::fmt;

use serde::{Deserialize, Serialize};

/// Which key of the declaration the build chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// `min_blocks_per_sm = "auto"`: `__launch_bounds__(block, B)`, `.minnctapersm B`.
    MinBlocksPerSm,
    /// `max_registers = "auto"`: `__maxnreg__(R)`, `.maxnreg R`.
    MaxRegisters,
}

impl Knob {
    /// The key as the attribute writes it.
    pub fn key(self) -> &'static str {
        match self {
            Knob::MinBlocksPerSm => "min_blocks_per_sm",
            Knob::MaxRegisters => "max_registers",
        }
    }
}

impl fmt::Display for Knob {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.key())
    }
}

/// The launch bound a kernel is compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// No minimum and no cap: the kernel as it is without bounds (`__launch_bounds__(block)` for
    /// [`Knob::MinBlocksPerSm`], nothing for [`Knob::MaxRegisters`]).
    None,
    /// No `__launch_bounds__` at all, for [`Knob::MinBlocksPerSm`]: the kernel as its source
    /// reads without the declaration's block (ptxas then assumes nothing of the block, and the
    /// declared block still launches if its registers fit). nvcc's front end compiles some
    /// kernels differently without `__launch_bounds__(block)`; a candidate only where the source
    /// is compiled at each bound (a `.ptx` input ships its own directives).
    NoLaunchBounds,
    /// `__launch_bounds__(block, B)`.
    MinBlocksPerSm(u32),
    /// `__maxnreg__(R)`.
    MaxRegisters(u32),
}

impl Bound {
    /// The arguments of `__launch_bounds__` for `threads` per block (`256` or `256, 4`); `None`
    /// for a register cap, which nvcc does not take beside `__launch_bounds__`.
    pub fn launch_bounds(self, knob: Knob, threads: u32) -> Option<String> {
        match (self, knob) {
            (Bound::MinBlocksPerSm(blocks), _) => Some(format!("{threads}, {blocks}")),
            (Bound::None, Knob::MinBlocksPerSm) => Some(threads.to_string()),
            (Bound::None | Bound::NoLaunchBounds | Bound::MaxRegisters(_), _) => None,
        }
    }

    /// The qualifiers that compile the kernel with this bound: `__launch_bounds__(256, 4)`,
    /// `__maxnreg__(64)`, or nothing.
    pub fn qualifiers(self, knob: Knob, threads: u32) -> String {
        match (self, self.launch_bounds(knob, threads)) {
            (Bound::MaxRegisters(registers), _) => format!("__maxnreg__({registers})"),
            (_, Some(arguments)) => format!("__launch_bounds__({arguments})"),
            (_, None) => String::new(),
        }
    }

    /// The minimum blocks per SM, if this bound is one.
    pub fn min_blocks_per_sm(self) -> Option<u32> {
        match self {
            Bound::MinBlocksPerSm(blocks) => Some(blocks),
            Bound::None | Bound::NoLaunchBounds | Bound::MaxRegisters(_) => None,
        }
    }

    /// The register cap, if this bound is one.
    pub fn max_registers(self) -> Option<u32> {
        match self {
            Bound::MaxRegisters(registers) => Some(registers),
            Bound::None | Bound::NoLaunchBounds | Bound::MinBlocksPerSm(_) => None,
        }
    }
}

impl fmt::Display for Bound {
    /// As a declaration would write it: `min_blocks_per_sm = 4`, `max_registers = 64`, `no
    /// bounds`, or `no `__launch_bounds__``.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bound::None => formatter.write_str("no bounds"),
            Bound::NoLaunchBounds => formatter.write_str("no `__launch_bounds__`"),
            Bound::MinBlocksPerSm(blocks) => write!(formatter, "min_blocks_per_sm = {blocks}"),
            Bound::MaxRegisters(registers) => write!(formatter, "max_registers = {registers}"),
        }
    }
}

/// What the build chose for one `"auto"` kernel on one architecture, and why: what a report
/// row, `cargo occupancy explain` and `occupancy.lock` say of the choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// The key left to the build.
    pub knob: Knob,
    /// The bound the kernel was compiled with on this arch.
    pub chosen: Bound,
    /// Why, in one sentence: the choice against the kernel without bounds, and what stopped
    /// the next rung.
    pub reason: String,
    /// The rule that decided ([`Rule`]); absent in what older builds remembered.
    #[serde(default)]
    pub decided_by: Rule,
    /// The objective's loop-growth bound, in percent ([`LOOP_GROWTH_PERCENT`]).
    pub loop_growth_percent: u32,
    /// The other archs whose code comes from the same PTX, which therefore share this choice
    /// (the shipped PTX carries one bound); empty when the arch has its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_with: Vec<String>,
    /// Every bound tried on this arch, the kernel without bounds first, with its verdict.
    pub candidates: Vec<TunedCandidate>,
}

/// One bound tried on one arch, as a report shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedCandidate {
    /// What was compiled and measured (or why it could not be).
    #[serde(flatten)]
    pub candidate: Candidate,
    /// What the objective made of it.
    pub verdict: Verdict,
}
