//! Headroom: how many registers per thread or bytes of shared memory per block a kernel can
//! add before it loses a resident block, and must remove to gain one ([`Headroom`]). Each edge is
//! solved in closed form over the allocation rules of [`super::registers_limit`] and
//! [`super::smem_limit`] (no search over every register count or allocation unit); the unit
//! tests hold both against a linear walk.

use super::{
    preferred_smem_per_sm, round_up, saturate, smem_config_at_least, smem_limit_per_block,
    warps_per_block, Headroom, KernelFacts, Launch, Limiter, Resources,
};
use crate::arch::ArchFacts;

/// Register and shared memory headroom of a launch; see [`Headroom`].
pub fn headroom(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    resources: &Resources,
) -> Headroom {
    let current = resources.limits.blocks_per_sm();
    let (registers_addable, registers_to_gain_block) =
        register_headroom(arch, kernel, launch, resources, current);
    let (smem_addable_bytes, smem_to_gain_block_bytes) =
        smem_headroom(arch, kernel, launch, resources, current);
    Headroom {
        registers_addable,
        registers_to_gain_block,
        smem_addable_bytes,
        smem_to_gain_block_bytes,
    }
}

/// Registers per thread that can be added, and that must be removed to gain a block. Blocks
/// never grow with registers, and within the accepted maximum they depend on the registers only
/// through the per-warp allocation, so both edges come from [`max_registers_keeping`].
fn register_headroom(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    resources: &Resources,
    current: u32,
) -> (u32, Option<u32>) {
    let without_registers = resources.limits.limit_without(Limiter::Registers);
    let warps = u64::from(warps_per_block(arch, launch.block_threads));
    let registers = kernel.registers_per_thread;
    let max_registers = arch.max_regs_per_thread_accepted;
    // At `registers` the register file allows at least `current` blocks, so the edge is at or
    // above it.
    let addable = if current == 0 || registers >= max_registers {
        0
    } else {
        max_registers_keeping(arch, warps, u64::from(current)).saturating_sub(registers)
    };
    // With fewer registers the blocks the other resources allow are the most there can be.
    let to_gain = if registers == 0 || without_registers <= current {
        None
    } else {
        let highest_below = registers.min(max_registers + 1) - 1;
        let gaining = max_registers_keeping(arch, warps, u64::from(current) + 1);
        Some(registers - gaining.min(highest_below))
    };
    (addable, to_gain)
}

/// The most registers per thread (up to the accepted maximum) with which the register file still
/// holds `blocks` (at least 1) blocks of `warps` warps. [`super::registers_limit`] with a per-warp
/// allocation `p` (0 registers allocate nothing and never limit) allows at least `blocks` when
/// - the block's warps, rounded up to the sub-partitions (and, on 6.0, to the 4 sub-partitions
///   the driver checks with), fit the per-block register file: `p * round_up(warps, s) <= regs_per_block`;
/// - each sub-partition holds enough whole warps: `(regs_per_sm / s / p) * s / warps >= blocks`,
///   that is `p <= (regs_per_sm / s) / ceil(blocks * warps / s)`, and on 6.0 the check with 4 holds
///   at least one block.
///
/// Every condition bounds `p` from above, so the largest `p` is their minimum, and the largest
/// register count is the largest whose allocation (rounded up to the unit) stays within it.
fn max_registers_keeping(arch: &ArchFacts, warps: u64, blocks: u64) -> u32 {
    let max_registers = arch.max_regs_per_thread_accepted;
    if warps == 0 {
        return max_registers;
    }
    let regs_per_sm = u64::from(arch.regs_per_sm);
    let regs_per_block = u64::from(arch.regs_per_block);
    let sub_partitions = u64::from(arch.sub_partitions);
    let check_sub_partitions = u64::from(arch.register_check_sub_partitions);
    let max_per_warp = [
        regs_per_block / round_up(warps, sub_partitions),
        regs_per_block / round_up(warps, check_sub_partitions),
        regs_per_sm / sub_partitions / (blocks * warps).div_ceil(sub_partitions),
        regs_per_sm / check_sub_partitions / warps.div_ceil(check_sub_partitions),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    let unit = u64::from(arch.reg_alloc_unit_per_warp);
    let max_per_thread = max_per_warp / unit * unit / u64::from(arch.warp_size);
    saturate(max_per_thread.min(u64::from(max_registers)))
}

/// Shared memory per block that can be added, and that must be removed to gain a block,
/// assuming the kernel opts in to what it needs. Allocations are multiples of the unit; the SM's
/// configuration is constant over ranges of them (the preference, then each larger step), and
/// within such a range blocks = configuration / allocation, so each range is solved in closed
/// form instead of visiting every unit.
fn smem_headroom(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    resources: &Resources,
    current: u32,
) -> (u32, Option<u64>) {
    let without_smem = resources.limits.limit_without(Limiter::SharedMemory);
    let unit = u64::from(arch.smem_alloc_unit);
    let reserved = u64::from(arch.reserved_smem_per_block);
    let largest_per_block = smem_limit_per_block(arch, u64::MAX) / unit * unit;
    let used =
        reserved + u64::from(kernel.static_smem_bytes) + u64::from(launch.dynamic_smem_bytes);
    let allocated = round_up(used, unit);
    let Ok(preferred) = preferred_smem_per_sm(arch, launch.carveout) else {
        return (0, None);
    };
    let preferred = u64::from(preferred);
    // The configuration for an allocation, and the largest allocation with the same one.
    let config_range = |allocation: u64| -> Option<(u64, u64)> {
        if allocation <= preferred {
            return Some((preferred, preferred));
        }
        smem_config_at_least(arch, allocation).map(|config| (u64::from(config), u64::from(config)))
    };
    let addable = if current == 0 {
        0
    } else {
        let mut last_kept = allocated;
        let mut candidate = allocated + unit;
        while candidate <= largest_per_block {
            let Some((config, range_end)) = config_range(candidate) else {
                break;
            };
            let range_end = range_end.min(largest_per_block) / unit * unit;
            let keeping = (config / u64::from(current)) / unit * unit;
            let good_end = range_end.min(keeping);
            if good_end < candidate {
                break;
            }
            last_kept = good_end;
            if good_end < range_end {
                break;
            }
            candidate = range_end + unit;
        }
        saturate(last_kept.saturating_sub(used))
    };
    let to_gain = if without_smem <= current || current == u32::MAX {
        None
    } else {
        let floor = round_up(reserved, unit);
        let start = allocated.min(largest_per_block + unit);
        let gaining = |config: u64| (config / (u64::from(current) + 1)) / unit * unit;
        let mut found = None;
        let mut top = start.saturating_sub(unit);
        while top >= floor && top > 0 {
            let Some((config, _)) = config_range(top) else {
                break;
            };
            // The range below `top` with the same configuration.
            let range_start = if top <= preferred {
                floor
            } else {
                arch.smem_configs_per_sm
                    .iter()
                    .map(|&step| u64::from(step))
                    .filter(|&step| step < top)
                    .max()
                    .unwrap_or(0)
                    .max(preferred)
                    .saturating_add(1)
                    .max(floor)
            };
            let best = top.min(gaining(config));
            if best >= range_start && best >= floor && best > 0 {
                found = Some(used - best.max(reserved));
                break;
            }
            if range_start <= floor {
                break;
            }
            top = (range_start - 1) / unit * unit;
        }
        found
    };
    (addable, to_gain)
}
