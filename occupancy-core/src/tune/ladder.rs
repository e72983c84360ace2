//! The bounds worth trying: one per register cap that changes the resident blocks.

use super::{Bound, Knob};
use crate::arch::ArchFacts;
use crate::calc::{self, Carveout, KernelFacts, Launch};

/// The kernel compiled without bounds, and its launch: what the ladder is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LadderInput {
    /// The key the build chooses.
    pub knob: Knob,
    /// Threads per block of the launch.
    pub block_threads: u32,
    /// Dynamic shared memory per block of the launch.
    pub dynamic_smem_bytes: u32,
    /// Static shared memory per block, as ptxas reported it without bounds.
    pub static_smem_bytes: u32,
    /// Barriers the kernel uses (1 when ptxas did not say).
    pub barriers: u32,
    /// Registers per thread without bounds.
    pub registers: u32,
}

impl LadderInput {
    /// The calculator's view of the kernel at `registers` per thread.
    pub fn kernel_at(&self, registers: u32) -> KernelFacts {
        KernelFacts {
            registers_per_thread: registers,
            static_smem_bytes: self.static_smem_bytes,
            barriers: self.barriers,
            max_threads_per_block: match self.knob {
                Knob::MinBlocksPerSm => Some(self.block_threads),
                Knob::MaxRegisters => None,
            },
            max_dynamic_smem_bytes: None,
        }
    }

    /// The launch, at the driver's default carveout (as the build evaluates it).
    pub fn launch(&self) -> Launch {
        Launch {
            block_threads: self.block_threads,
            dynamic_smem_bytes: self.dynamic_smem_bytes,
            carveout: Carveout::Default,
        }
    }
}

/// One bound to try and what the calculator expects of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rung {
    /// The bound to compile with.
    pub bound: Bound,
    /// The most registers per thread with which `blocks_per_sm` blocks reside.
    pub register_cap: u32,
    /// Blocks per SM when ptxas keeps to the cap.
    pub blocks_per_sm: u32,
}

/// The bounds that change the resident blocks of `input`'s launch on `arch`, fewest blocks
/// first: for every block count above the kernel's own that the SM could hold with registers
/// left out (warps, block slots, shared memory and barriers allow it), the largest register
/// cap that reaches it, one rung per distinct cap. A minimum is written as the blocks that cap
/// actually keeps resident (a minimum of 7 blocks of 256 threads caps at 32 registers, which
/// keeps 8). For [`Knob::MinBlocksPerSm`] the ladder also goes down ([`rungs_below`]): a
/// minimum below the kernel's own blocks lets ptxas use more registers, keeping more loads in
/// flight per warp, for fewer warps ([`super::choose`] takes one only by the latency model). A
/// register cap has no such rung: no cap is the most registers. Empty when the kernel already has as many
/// blocks as anything but registers allows and needs no more registers, or does not fit.
pub fn ladder(arch: &ArchFacts, input: &LadderInput) -> Vec<Rung> {
    let launch = input.launch();
    let kernel = input.kernel_at(input.registers);
    let now = calc::blocks_per_sm(arch, &kernel, &launch);
    let without_registers = calc::blocks_per_sm(arch, &input.kernel_at(0), &launch);
    if now == 0 {
        return Vec::new();
    }
    let mut rungs: Vec<Rung> = Vec::new();
    if input.knob == Knob::MinBlocksPerSm {
        rungs.extend(rungs_below(arch, input, now));
    }
    for blocks in now + 1..=without_registers {
        let Some(cap) = calc::register_cap_for_blocks(arch, &kernel, &launch, blocks) else {
            break;
        };
        if cap >= input.registers || rungs.last().is_some_and(|rung| rung.register_cap == cap) {
            continue;
        }
        let resident = calc::blocks_per_sm(arch, &input.kernel_at(cap), &launch);
        rungs.push(Rung {
            bound: match input.knob {
                Knob::MinBlocksPerSm => Bound::MinBlocksPerSm(resident),
                Knob::MaxRegisters => Bound::MaxRegisters(cap),
            },
            register_cap: cap,
            blocks_per_sm: resident,
        });
    }
    rungs
}

/// The minimums below the kernel's own `now` blocks that allow it more registers: one block
/// (the most registers the arch gives a thread) and one block fewer than now, when their caps
/// are above the kernel's registers; one rung per distinct cap, each written as the blocks its
/// cap keeps resident. Two at most: each is a compile on every arch, and between the two ends
/// ptxas's code changes little.
fn rungs_below(arch: &ArchFacts, input: &LadderInput, now: u32) -> Vec<Rung> {
    let launch = input.launch();
    let kernel = input.kernel_at(input.registers);
    let mut rungs: Vec<Rung> = Vec::new();
    for blocks in [1, now.saturating_sub(1)] {
        let Some(cap) = calc::register_cap_for_blocks(arch, &kernel, &launch, blocks.max(1)) else {
            continue;
        };
        let resident = calc::blocks_per_sm(arch, &input.kernel_at(cap), &launch);
        let seen = rungs.last().is_some_and(|rung| rung.register_cap == cap);
        if cap > input.registers && resident < now && !seen {
            rungs.push(Rung {
                bound: Bound::MinBlocksPerSm(resident),
                register_cap: cap,
                blocks_per_sm: resident,
            });
        }
    }
    rungs
}
