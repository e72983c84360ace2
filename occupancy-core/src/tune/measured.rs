//! What one bound's compile of a kernel became on one arch.

use serde::{Deserialize, Serialize};

use super::Bound;
use crate::arch::ArchFacts;
use crate::calc::{self, KernelFacts, Launch};
use crate::ptxas::KernelRecord;
use crate::sass::{LoopProfile, SassFacts};

/// The latency model ([`Measured::predicted_cycles`]): the cycles a warp waits for a load from
/// global memory. An H100 answers in about 260 cycles from L2 and 500 to 600 from DRAM
/// (microbenchmarks); the choices of the repository's GPU corpus are the same for any value from
/// 300 to 800 (docs/verification.md, section 9).
pub const MEMORY_LATENCY_CYCLES: u32 = 500;

/// The latency model: the cycles a warp waits for another variable-latency result (shared
/// memory, transcendental functions, shuffles).
pub const SHORT_LATENCY_CYCLES: u32 = 30;

/// Warp instructions an SM issues per cycle (four schedulers, one each), the model's bound on
/// a pass when warps are plenty.
pub const ISSUE_PER_CYCLE: u32 = 4;

/// ptxas's report and the SASS of one compile, with the calculator's answer for the launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Registers per thread.
    pub registers: u32,
    /// Spill stores per thread, bytes (ptxas).
    pub spill_store_bytes: u64,
    /// Spill loads per thread, bytes (ptxas).
    pub spill_load_bytes: u64,
    /// Stack frame per thread, bytes.
    pub stack_frame_bytes: u64,
    /// Static shared memory per block, bytes.
    pub static_smem_bytes: u64,
    /// Barriers the kernel uses (1 when ptxas did not say).
    pub barriers: u32,
    /// Spill loads and stores in the SASS.
    pub spill_instructions: u32,
    /// Of those, inside loops.
    pub spill_instructions_in_loops: u32,
    /// The loops' weight.
    pub loops: LoopProfile,
    /// Resident blocks per SM at the launch.
    pub blocks_per_sm: u32,
    /// Resident warps per SM at the launch.
    pub warps_per_sm: u32,
    /// Theoretical occupancy at the launch, 0..=1.
    pub occupancy: f64,
}

impl Measured {
    /// The measurements of a compile: ptxas's `record`, the SASS's `sass` facts and `loops`,
    /// and the occupancy of `launch` on `arch` (`max_threads_per_block`: the compiled
    /// `.maxntid`, if any).
    pub fn new(
        arch: &ArchFacts,
        record: &KernelRecord,
        sass: &SassFacts,
        loops: LoopProfile,
        launch: &Launch,
        max_threads_per_block: Option<u32>,
    ) -> Measured {
        let registers = record.registers.unwrap_or(0);
        let barriers = record.barriers.unwrap_or(1);
        let kernel = KernelFacts {
            registers_per_thread: registers,
            static_smem_bytes: u32::try_from(record.static_smem_bytes).unwrap_or(u32::MAX),
            barriers,
            max_threads_per_block,
            max_dynamic_smem_bytes: None,
        };
        let answer = calc::occupancy(arch, &kernel, launch);
        Measured {
            registers,
            spill_store_bytes: record.spill_store_bytes.unwrap_or(0),
            spill_load_bytes: record.spill_load_bytes.unwrap_or(0),
            stack_frame_bytes: record.stack_frame_bytes.unwrap_or(0),
            static_smem_bytes: record.static_smem_bytes,
            barriers,
            spill_instructions: sass.spill_loads + sass.spill_stores,
            spill_instructions_in_loops: sass.spill_loads_in_loops + sass.spill_stores_in_loops,
            loops,
            blocks_per_sm: answer.blocks_per_sm,
            warps_per_sm: answer.warps_per_sm,
            occupancy: answer.occupancy,
        }
    }

    /// The input of [`super::ladder`] for this compile, the kernel without bounds.
    pub fn ladder_input(
        &self,
        knob: super::Knob,
        block_threads: u32,
        dynamic_smem_bytes: u32,
    ) -> super::LadderInput {
        super::LadderInput {
            knob,
            block_threads,
            dynamic_smem_bytes,
            static_smem_bytes: u32::try_from(self.static_smem_bytes).unwrap_or(u32::MAX),
            barriers: self.barriers,
            registers: self.registers,
        }
    }

    /// Spill stores + spill loads, bytes per thread.
    pub fn spill_bytes(&self) -> u64 {
        self.spill_store_bytes + self.spill_load_bytes
    }

    /// The latency model's cycles for one pass of the weighed instructions (the loops), per
    /// resident warp of the SM: a warp's pass takes its scheduled stall cycles plus
    /// [`MEMORY_LATENCY_CYCLES`](MEMORY_LATENCY_CYCLES) for each wait on a
    /// memory load and [`SHORT_LATENCY_CYCLES`](SHORT_LATENCY_CYCLES) for
    /// each other wait, the SM's warps overlap those waits, and the SM issues at most
    /// [`ISSUE_PER_CYCLE`](ISSUE_PER_CYCLE) instructions a cycle: the larger
    /// of a warp's pass divided by the warps and the pass's instructions divided by the issue
    /// rate. `None` without the control bits, without resident warps, or without a loop: a
    /// kernel whose code runs once per thread is priced by the SM's throughput more than by a
    /// warp's waits (the held-out `batched16`, 256 loads and no loop, waits on memory 221 times
    /// without bounds and 8 times at one block per SM, which the model predicted 60% faster
    /// and which ran 1.30x slower on an H200; docs/verification.md, section 9). Memory bandwidth
    /// is not modelled: where it binds, warps beyond it change nothing.
    pub fn predicted_cycles(&self) -> Option<f64> {
        if !self.loops.control_known || self.warps_per_sm == 0 || self.loops.loops == 0 {
            return None;
        }
        let pass = f64::from(self.loops.stall_cycles)
            + f64::from(MEMORY_LATENCY_CYCLES) * f64::from(self.loops.memory_waits)
            + f64::from(SHORT_LATENCY_CYCLES) * f64::from(self.loops.short_waits);
        let issue = f64::from(self.weighed_instructions()) / f64::from(ISSUE_PER_CYCLE);
        Some((pass / f64::from(self.warps_per_sm)).max(issue))
    }

    /// What the loop-growth rule compares: the instructions in loops, or every instruction of a
    /// kernel without loops.
    pub fn weighed_instructions(&self) -> u32 {
        match self.loops.loops {
            0 => self.loops.instructions,
            _ => self.loops.loop_instructions,
        }
    }
}

/// One bound tried on one arch: what its compile measured, or why there is nothing to measure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The bound compiled.
    pub bound: Bound,
    /// The compile's measurements; `None` when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// Why the compile or its reading failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// Set when the bound is not taken although its measurements pass: the spill bytes of the
    /// kernel compiled from its source with this bound (nvcc's front end sees the bound too,
    /// and may make other PTX), which broke the objective (`Verdict::CompiledDifferently`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_spill_bytes: Option<u64>,
}

impl Candidate {
    /// A candidate measured, or failed with `failure`.
    pub fn new(bound: Bound, result: Result<Measured, String>) -> Candidate {
        match result {
            Ok(measured) => Candidate {
                bound,
                measured: Some(measured),
                failure: None,
                refused_spill_bytes: None,
            },
            Err(failure) => Candidate {
                bound,
                measured: None,
                failure: Some(failure),
                refused_spill_bytes: None,
            },
        }
    }
}
