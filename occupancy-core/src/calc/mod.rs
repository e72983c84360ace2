//! The exact occupancy calculator: how many blocks of a kernel reside on one SM, which resource
//! binds, and how far each cliff is.
//!
//! It reproduces the CUDA driver's `cudaOccupancyMaxActiveBlocksPerMultiprocessor` (as published in
//! NVIDIA's `cuda_occupancy.h`, our differential-test oracle) rule by rule:
//! - registers are allocated per warp in units of [`ArchFacts::reg_alloc_unit_per_warp`]; a block
//!   fits the per-block register file only if its warps, rounded up to the SM's sub-partitions,
//!   fit; each sub-partition holds `regs_per_sm / sub_partitions` registers and whole warps;
//!   more than [`ArchFacts::max_regs_per_thread_accepted`] registers per thread never run;
//! - shared memory is allocated per block in units of [`ArchFacts::smem_alloc_unit`], plus the
//!   driver's reserved bytes per block (from 8.x); the carveout preference maps to the next
//!   shared-memory configuration of the arch, and grows to the next configuration that holds one
//!   block when the preference is too small; a block needs opt-in above the default per-block limit;
//! - warp slots, block slots, and from 9.0 barrier slots.
//!
//! One deliberate difference: a block larger than the kernel's `__launch_bounds__` maximum gives 0
//! blocks with limiter [`Limiter::LaunchBounds`] (the driver's occupancy call ignores it; the
//! launch itself fails).
//!
//! [`clusters`] goes one level up, to thread-block clusters on a named GPU: how many are resident
//! at once (`cudaOccupancyMaxActiveClusters`), from the blocks per SM computed here.
//!
//! This module does no I/O and never panics on any input: launches that can never run give
//! 0 blocks with a reason.

pub mod clusters;
mod headroom;
mod reason;
pub mod sweep;

pub use headroom::headroom;
pub use reason::write_zero_block_reason;
pub(crate) use reason::zero_block_reason;

use crate::arch::ArchFacts;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// What the compiler and the kernel's source tell us about one kernel. `Default` is the driver's
/// assumption for an unknown kernel: 0 registers, no shared memory, 1 barrier, no bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct KernelFacts {
    /// Registers per thread (ptxas "Used N registers").
    pub registers_per_thread: u32,
    /// Static shared memory per block (ptxas "N bytes smem").
    pub static_smem_bytes: u32,
    /// Block barriers the kernel uses (`__syncthreads` counts as one; named barriers add up).
    /// The driver assumes 1.
    pub barriers: u32,
    /// `__launch_bounds__` maximum threads per block; `None`: the arch's maximum.
    pub max_threads_per_block: Option<u32>,
    /// Dynamic shared memory the kernel opted into (`cudaFuncAttributeMaxDynamicSharedMemorySize`);
    /// `None`: as if it opted into exactly what the launch needs (the larger of the launch's
    /// dynamic shared memory and the default per-block limit minus static shared memory).
    pub max_dynamic_smem_bytes: Option<u32>,
}

impl Default for KernelFacts {
    fn default() -> Self {
        KernelFacts {
            registers_per_thread: 0,
            static_smem_bytes: 0,
            barriers: 1,
            max_threads_per_block: None,
            max_dynamic_smem_bytes: None,
        }
    }
}

/// How the kernel is launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Launch {
    pub block_threads: u32,
    pub dynamic_smem_bytes: u32,
    pub carveout: Carveout,
}

impl Launch {
    /// A launch with no dynamic shared memory and the default carveout.
    pub fn new(block_threads: u32) -> Self {
        Launch {
            block_threads,
            dynamic_smem_bytes: 0,
            carveout: Carveout::Default,
        }
    }
}

/// Shared memory carveout preference (`cudaFuncAttributePreferredSharedMemoryCarveout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Carveout {
    /// No preference: the driver uses the largest shared memory configuration.
    #[default]
    Default,
    /// Percent (0..=100) of the maximum shared memory per SM; the driver rounds up to the next
    /// supported configuration. Values above 100 are rejected with 0 blocks and a reason.
    Percent(u8),
}

impl Serialize for Carveout {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Carveout::Default => serializer.serialize_str("default"),
            Carveout::Percent(percent) => serializer.serialize_u8(*percent),
        }
    }
}

impl fmt::Display for Carveout {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Carveout::Default => formatter.write_str("default"),
            Carveout::Percent(percent) => write!(formatter, "{percent}%"),
        }
    }
}

/// Errors of the calculator's inputs and queries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CalcError {
    #[error("invalid carveout `{0}`: expected `default` or a percentage 0..=100")]
    InvalidCarveout(String),
    #[error("blocks per SM must be at least 1")]
    ZeroBlocks,
    #[error("{requested} blocks per SM cannot be resident (at most {resident} fit before any dynamic shared memory)")]
    TooManyBlocks { requested: u32, resident: u32 },
    #[error("carveout {0}% is above 100%")]
    CarveoutAbove100(u8),
    #[error("sweep too large: {block_by_registers} block x register sizes and {static_by_dynamic} static x dynamic shared memory sizes (at most {max} each); use a coarser step")]
    SweepTooLarge {
        block_by_registers: u64,
        static_by_dynamic: u64,
        max: u64,
    },
}

impl FromStr for Carveout {
    type Err = CalcError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("default") {
            return Ok(Carveout::Default);
        }
        let number = trimmed.strip_suffix('%').unwrap_or(trimmed);
        match number.parse::<u8>() {
            Ok(percent) if percent <= 100 => Ok(Carveout::Percent(percent)),
            _ => Err(CalcError::InvalidCarveout(text.to_string())),
        }
    }
}

/// A resource that limits resident blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Limiter {
    /// Warp slots per SM (or a block above the arch's threads per block).
    Warps,
    /// Block slots per SM.
    Blocks,
    Registers,
    SharedMemory,
    /// Block barriers per SM (from 9.0).
    Barriers,
    /// The block exceeds the kernel's `__launch_bounds__` maximum threads.
    LaunchBounds,
}

impl Limiter {
    /// Every limiter, in the calculator's order ([`BlockLimits::by_resource`]): the one list the
    /// report's checks and charts read.
    pub(crate) const ALL: [Limiter; 6] = [
        Limiter::Warps,
        Limiter::Blocks,
        Limiter::Registers,
        Limiter::SharedMemory,
        Limiter::Barriers,
        Limiter::LaunchBounds,
    ];

    /// The snake_case name used in JSON and tables.
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Warps => "warps",
            Limiter::Blocks => "blocks",
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared_memory",
            Limiter::Barriers => "barriers",
            Limiter::LaunchBounds => "launch_bounds",
        }
    }
}

impl fmt::Display for Limiter {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Blocks per SM each resource allows; `None`: the resource does not limit (registers with 0
/// registers per thread, shared memory with none allocated, barriers before 9.0 or with none used,
/// launch bounds when the block is within them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockLimits {
    pub warps: u32,
    pub blocks: u32,
    pub registers: Option<u32>,
    pub shared_memory: Option<u32>,
    pub barriers: Option<u32>,
    pub launch_bounds: Option<u32>,
}

impl BlockLimits {
    /// Resident blocks: the smallest limit.
    pub fn blocks_per_sm(&self) -> u32 {
        self.by_resource()
            .into_iter()
            .filter_map(|(_, limit)| limit)
            .min()
            .unwrap_or(0)
    }

    /// Each resource with its limit (`None`: it does not limit), in a fixed order.
    pub fn by_resource(&self) -> [(Limiter, Option<u32>); 6] {
        [
            (Limiter::Warps, Some(self.warps)),
            (Limiter::Blocks, Some(self.blocks)),
            (Limiter::Registers, self.registers),
            (Limiter::SharedMemory, self.shared_memory),
            (Limiter::Barriers, self.barriers),
            (Limiter::LaunchBounds, self.launch_bounds),
        ]
    }

    /// The smallest limit of every resource but `skip` (`u32::MAX` when none limits).
    pub fn limit_without(&self, skip: Limiter) -> u32 {
        self.by_resource()
            .into_iter()
            .filter(|(limiter, _)| *limiter != skip)
            .filter_map(|(_, limit)| limit)
            .min()
            .unwrap_or(u32::MAX)
    }

    /// The resources whose limit equals `blocks_per_sm`, in a fixed order.
    pub fn limiters(&self) -> Vec<Limiter> {
        self.limiters_iter().collect()
    }

    /// [`BlockLimits::limiters`] without collecting them (for callers that only write them out).
    pub fn limiters_iter(&self) -> impl Iterator<Item = Limiter> {
        let blocks = self.blocks_per_sm();
        self.by_resource()
            .into_iter()
            .filter(move |(_, limit)| *limit == Some(blocks))
            .map(|(limiter, _)| limiter)
    }
}

/// Everything the calculator derives for one kernel and launch, before headroom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Resources {
    pub limits: BlockLimits,
    /// Registers allocated per block (per-warp allocation times warps).
    pub allocated_registers_per_block: u32,
    /// Shared memory allocated per block: static + dynamic + reserved, rounded to the unit
    /// (64 bits: static and dynamic are 32 bits each, so their sum may pass 4 GiB).
    pub allocated_smem_per_block: u64,
    /// Shared memory configuration per SM the driver selects for this launch.
    pub smem_config_per_sm: u32,
    /// Per-block shared memory limit that applies (default or opt-in, plus reserved from 8.x).
    pub smem_limit_per_block: u64,
    /// The dynamic shared memory opt-in used (the kernel's, or the launch's need when unset).
    pub max_dynamic_smem_bytes: u32,
}

impl Resources {
    /// Resident warps per SM: resident blocks times the warps of one block.
    pub fn warps_per_sm(&self, arch: &ArchFacts, launch: &Launch) -> u32 {
        self.limits.blocks_per_sm() * warps_per_block(arch, launch.block_threads)
    }

    /// Resident threads per SM.
    pub fn threads_per_sm(&self, launch: &Launch) -> u32 {
        self.limits
            .blocks_per_sm()
            .saturating_mul(launch.block_threads)
    }

    /// Resident warps over the arch's warp slots, 0..=1.
    pub fn occupancy(&self, arch: &ArchFacts, launch: &Launch) -> f64 {
        f64::from(self.warps_per_sm(arch, launch)) / f64::from(arch.max_warps_per_sm)
    }
}

/// How many registers per thread or bytes of shared memory per block can change before the
/// number of resident blocks changes. Shared memory figures assume the kernel opts in to the
/// dynamic shared memory it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Headroom {
    /// Registers per thread that can be added without losing a block.
    pub registers_addable: u32,
    /// Registers per thread to remove to gain a block; `None`: removing registers never helps.
    pub registers_to_gain_block: Option<u32>,
    /// Bytes of shared memory per block that can be added without losing a block.
    pub smem_addable_bytes: u32,
    /// Bytes of shared memory per block to remove to gain a block; `None`: never helps.
    pub smem_to_gain_block_bytes: Option<u64>,
}

/// The answer for one kernel and launch on one architecture.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Occupancy {
    pub arch: &'static str,
    pub block_threads: u32,
    pub blocks_per_sm: u32,
    pub warps_per_sm: u32,
    pub threads_per_sm: u32,
    /// Resident warps over the arch's warp slots, 0..=1.
    pub occupancy: f64,
    pub limiters: Vec<Limiter>,
    pub block_limits: BlockLimits,
    pub allocated_registers_per_block: u32,
    /// Static + dynamic + reserved shared memory per block, rounded to the unit (64 bits).
    pub allocated_smem_per_block: u64,
    pub smem_config_per_sm: u32,
    pub smem_limit_per_block: u64,
    pub headroom: Headroom,
    /// Why the launch can never run, when `blocks_per_sm` is 0.
    pub reason: Option<String>,
}

fn divide_round_up(value: u64, divisor: u64) -> u64 {
    value.div_ceil(divisor)
}

fn round_up(value: u64, unit: u64) -> u64 {
    divide_round_up(value, unit) * unit
}

fn saturate(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// Warps a block of `block_threads` occupies.
pub fn warps_per_block(arch: &ArchFacts, block_threads: u32) -> u32 {
    block_threads.div_ceil(arch.warp_size)
}

/// Blocks the warp slots allow (0 above the arch's threads per block, or for an empty block).
pub(crate) fn warps_limit(arch: &ArchFacts, block_threads: u32) -> u32 {
    if block_threads == 0 || block_threads > arch.max_threads_per_block {
        return 0;
    }
    arch.max_warps_per_sm / warps_per_block(arch, block_threads)
}

/// Registers allocated per warp for `registers_per_thread`.
pub fn registers_per_warp(arch: &ArchFacts, registers_per_thread: u32) -> u64 {
    round_up(
        u64::from(registers_per_thread) * u64::from(arch.warp_size),
        u64::from(arch.reg_alloc_unit_per_warp),
    )
}

/// Blocks the register file allows, and the registers allocated per block.
pub(crate) fn registers_limit(
    arch: &ArchFacts,
    registers_per_thread: u32,
    block_threads: u32,
) -> (Option<u32>, u32) {
    let warps = u64::from(warps_per_block(arch, block_threads));
    let per_warp = registers_per_warp(arch, registers_per_thread);
    let per_block = per_warp * warps;
    let limit_with = |sub_partitions: u32| -> Option<u32> {
        let sub_partitions = u64::from(sub_partitions);
        let assumed_per_block = per_warp * round_up(warps, sub_partitions);
        let regs_per_block = u64::from(arch.regs_per_block);
        if regs_per_block < assumed_per_block
            || regs_per_block < per_block
            || registers_per_thread > arch.max_regs_per_thread_accepted
        {
            return Some(0);
        }
        if per_warp == 0 || warps == 0 {
            return None;
        }
        let warps_per_sub_partition = u64::from(arch.regs_per_sm) / sub_partitions / per_warp;
        Some(saturate(warps_per_sub_partition * sub_partitions / warps))
    };
    let mut limit = limit_with(arch.sub_partitions);
    if limit != Some(0)
        && arch.register_check_sub_partitions != arch.sub_partitions
        && limit_with(arch.register_check_sub_partitions) == Some(0)
    {
        limit = Some(0);
    }
    (limit, saturate(per_block))
}

/// The smallest shared memory configuration per SM that holds `bytes`, or `None` above the largest.
/// Architectures before 7.x have one fixed configuration.
pub(crate) fn smem_config_at_least(arch: &ArchFacts, bytes: u64) -> Option<u32> {
    if arch.smem_configs_per_sm.is_empty() {
        return (bytes <= u64::from(arch.smem_per_sm)).then_some(arch.smem_per_sm);
    }
    arch.smem_configs_per_sm
        .iter()
        .copied()
        .find(|&config| u64::from(config) >= bytes)
}

/// The shared memory per SM the carveout preference selects (before a launch needs more).
pub(crate) fn preferred_smem_per_sm(
    arch: &ArchFacts,
    carveout: Carveout,
) -> Result<u32, CalcError> {
    if arch.smem_configs_per_sm.is_empty() {
        return Ok(arch.smem_per_sm);
    }
    let wanted = match carveout {
        Carveout::Default => u64::from(arch.smem_per_sm),
        Carveout::Percent(percent) if percent > 100 => {
            return Err(CalcError::CarveoutAbove100(percent))
        }
        Carveout::Percent(percent) => u64::from(percent) * u64::from(arch.smem_per_sm) / 100,
    };
    Ok(smem_config_at_least(arch, wanted).unwrap_or(arch.smem_per_sm))
}

/// The dynamic shared memory opt-in in effect: the kernel's, or what the launch needs.
pub fn resolved_max_dynamic_smem(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    dynamic_smem_bytes: u32,
) -> u32 {
    kernel.max_dynamic_smem_bytes.unwrap_or_else(|| {
        dynamic_smem_bytes.max(arch.smem_per_block.saturating_sub(kernel.static_smem_bytes))
    })
}

/// Per-block shared memory limit for a kernel whose largest use (static + reserved + opted-in
/// dynamic) is `max_usage_bytes`: the opt-in limit when that exceeds the default (from 7.x),
/// plus the reserved bytes from 8.x.
pub fn smem_limit_per_block(arch: &ArchFacts, max_usage_bytes: u64) -> u64 {
    let base = if arch.major >= 7 && max_usage_bytes > u64::from(arch.smem_per_block) {
        arch.smem_per_block_optin
    } else {
        arch.smem_per_block
    };
    let reserved = if arch.major >= 8 {
        arch.reserved_smem_per_block
    } else {
        0
    };
    u64::from(base) + u64::from(reserved)
}

/// Shared memory side of a launch: the limit, the allocation and the configuration chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub(crate) struct SmemLimit {
    pub limit: Option<u32>,
    pub allocated_per_block: u64,
    pub config_per_sm: u32,
    pub limit_per_block: u64,
    pub dynamic_over_opt_in: bool,
}

/// Blocks shared memory allows for `static + dynamic` bytes with the given opt-in and preference.
pub(crate) fn smem_limit(
    arch: &ArchFacts,
    static_smem_bytes: u32,
    dynamic_smem_bytes: u32,
    max_dynamic_smem_bytes: u32,
    preferred_per_sm: u32,
) -> SmemLimit {
    let static_with_reserved =
        u64::from(static_smem_bytes) + u64::from(arch.reserved_smem_per_block);
    let allocated = round_up(
        static_with_reserved + u64::from(dynamic_smem_bytes),
        u64::from(arch.smem_alloc_unit),
    );
    let limit_per_block = smem_limit_per_block(
        arch,
        static_with_reserved + u64::from(max_dynamic_smem_bytes),
    );
    let dynamic_over_opt_in = dynamic_smem_bytes > max_dynamic_smem_bytes;
    if dynamic_over_opt_in || allocated > limit_per_block {
        return SmemLimit {
            limit: Some(0),
            allocated_per_block: allocated,
            config_per_sm: preferred_per_sm,
            limit_per_block,
            dynamic_over_opt_in,
        };
    }
    let config_per_sm = if u64::from(preferred_per_sm) >= allocated {
        preferred_per_sm
    } else {
        smem_config_at_least(arch, allocated).unwrap_or(0)
    };
    let limit = (allocated > 0).then(|| saturate(u64::from(config_per_sm) / allocated));
    SmemLimit {
        limit,
        allocated_per_block: allocated,
        config_per_sm,
        limit_per_block,
        dynamic_over_opt_in,
    }
}

/// Blocks the barrier slots allow (from 9.0; `None` before or without barriers).
pub(crate) fn barriers_limit(arch: &ArchFacts, barriers: u32) -> Option<u32> {
    (arch.barrier_limit_enforced && barriers > 0).then(|| arch.barriers_per_sm / barriers)
}

/// All per-resource limits and allocations of one launch (no headroom search).
pub fn resources(arch: &ArchFacts, kernel: &KernelFacts, launch: &Launch) -> Resources {
    let block_threads = launch.block_threads;
    let (registers, allocated_registers_per_block) =
        registers_limit(arch, kernel.registers_per_thread, block_threads);
    let max_dynamic_smem_bytes = resolved_max_dynamic_smem(arch, kernel, launch.dynamic_smem_bytes);
    let smem = match preferred_smem_per_sm(arch, launch.carveout) {
        Ok(preferred) => smem_limit(
            arch,
            kernel.static_smem_bytes,
            launch.dynamic_smem_bytes,
            max_dynamic_smem_bytes,
            preferred,
        ),
        Err(_) => SmemLimit {
            limit: Some(0),
            allocated_per_block: 0,
            config_per_sm: 0,
            limit_per_block: 0,
            dynamic_over_opt_in: false,
        },
    };
    let launch_bounds = match kernel.max_threads_per_block {
        Some(max_threads) if block_threads > max_threads => Some(0),
        _ => None,
    };
    Resources {
        limits: BlockLimits {
            warps: warps_limit(arch, block_threads),
            blocks: arch.max_blocks_per_sm,
            registers,
            shared_memory: smem.limit,
            barriers: barriers_limit(arch, kernel.barriers),
            launch_bounds,
        },
        allocated_registers_per_block,
        allocated_smem_per_block: smem.allocated_per_block,
        smem_config_per_sm: smem.config_per_sm,
        smem_limit_per_block: smem.limit_per_block,
        max_dynamic_smem_bytes,
    }
}

/// Resident blocks per SM, and nothing else: the fast query.
pub fn blocks_per_sm(arch: &ArchFacts, kernel: &KernelFacts, launch: &Launch) -> u32 {
    resources(arch, kernel, launch).limits.blocks_per_sm()
}

/// The largest registers per thread with which at least `blocks` blocks of `launch` reside, the
/// kernel's other resources as they are; `None` when no register count reaches it. What a
/// register cap (`__maxnreg__`, or the cap ptxas derives from `__launch_bounds__(T, blocks)`)
/// must be for `blocks` blocks: the steps of the register ladder `explain` shows and
/// `occupancy_core::tune` tries.
pub(crate) fn register_cap_for_blocks(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    blocks: u32,
) -> Option<u32> {
    (1..=arch.max_regs_per_thread).rev().find(|&registers| {
        blocks_per_sm(
            arch,
            &KernelFacts {
                registers_per_thread: registers,
                ..*kernel
            },
            launch,
        ) >= blocks
    })
}

/// The full answer: blocks, warps, occupancy, limiters, allocations, headroom, and a reason when
/// the launch can never run.
pub fn occupancy(arch: &ArchFacts, kernel: &KernelFacts, launch: &Launch) -> Occupancy {
    let resources = resources(arch, kernel, launch);
    let blocks = resources.limits.blocks_per_sm();
    let warps_per_sm = resources.warps_per_sm(arch, launch);
    Occupancy {
        arch: arch.name,
        block_threads: launch.block_threads,
        blocks_per_sm: blocks,
        warps_per_sm,
        threads_per_sm: resources.threads_per_sm(launch),
        occupancy: resources.occupancy(arch, launch),
        limiters: resources.limits.limiters(),
        block_limits: resources.limits,
        allocated_registers_per_block: resources.allocated_registers_per_block,
        allocated_smem_per_block: resources.allocated_smem_per_block,
        smem_config_per_sm: resources.smem_config_per_sm,
        smem_limit_per_block: resources.smem_limit_per_block,
        headroom: headroom(arch, kernel, launch, &resources),
        reason: (blocks == 0).then(|| zero_block_reason(arch, kernel, launch, &resources)),
    }
}

/// The block size with the most resident threads per SM (ties: the larger block), as
/// `cudaOccupancyMaxPotentialBlockSize` computes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct BlockSizeSuggestion {
    /// 0 when no block size can run.
    pub block_threads: u32,
    pub blocks_per_sm: u32,
}

impl BlockSizeSuggestion {
    /// Blocks in a grid that fills every SM once (`minGridSize`).
    pub fn min_grid_blocks(&self, sm_count: u32) -> u64 {
        u64::from(self.blocks_per_sm) * u64::from(sm_count)
    }
}

/// `cudaOccupancyMaxPotentialBlockSize` with dynamic shared memory as a function of block size.
/// Block sizes are tried from the largest (the smaller of the arch's and the kernel's maximum)
/// down in warp steps; the first size reaching the arch's thread maximum wins.
pub fn max_potential_block_size(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    dynamic_smem_for_block: impl Fn(u32) -> u32,
    carveout: Carveout,
) -> BlockSizeSuggestion {
    let limit = arch.max_threads_per_block.min(
        kernel
            .max_threads_per_block
            .unwrap_or(arch.max_threads_per_block),
    );
    let mut best = BlockSizeSuggestion {
        block_threads: 0,
        blocks_per_sm: 0,
    };
    let mut best_threads = 0u64;
    let mut aligned = round_up(u64::from(limit), u64::from(arch.warp_size));
    while aligned > 0 {
        let block_threads = saturate(aligned).min(limit);
        let launch = Launch {
            block_threads,
            dynamic_smem_bytes: dynamic_smem_for_block(block_threads),
            carveout,
        };
        let blocks = blocks_per_sm(arch, kernel, &launch);
        let threads = u64::from(block_threads) * u64::from(blocks);
        if threads > best_threads {
            best = BlockSizeSuggestion {
                block_threads,
                blocks_per_sm: blocks,
            };
            best_threads = threads;
        }
        if best_threads == u64::from(arch.max_threads_per_sm) {
            break;
        }
        aligned -= u64::from(arch.warp_size);
    }
    best
}

/// `cudaOccupancyAvailableDynamicSMemPerBlock` (CUDA 13.5): the most dynamic shared memory per
/// block that still lets `blocks_per_sm` blocks of `block_threads` reside, after the static shared
/// memory and (from 8.0) the driver's reserved bytes per block. An unset opt-in
/// ([`KernelFacts::max_dynamic_smem_bytes`]) counts as the arch's opt-in maximum.
pub fn available_dynamic_smem_per_block(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    block_threads: u32,
    blocks_per_sm: u32,
    carveout: Carveout,
) -> Result<u32, CalcError> {
    if blocks_per_sm == 0 {
        return Err(CalcError::ZeroBlocks);
    }
    let opt_in_maximum = if arch.major >= 7 {
        arch.smem_per_block_optin
    } else {
        arch.smem_per_block
    };
    let kernel = KernelFacts {
        max_dynamic_smem_bytes: Some(
            kernel
                .max_dynamic_smem_bytes
                .unwrap_or(opt_in_maximum.saturating_sub(kernel.static_smem_bytes)),
        ),
        ..*kernel
    };
    let preferred = preferred_smem_per_sm(arch, carveout)?;
    let resident = blocks_per_sm_for(arch, &kernel, block_threads, carveout);
    if resident < blocks_per_sm {
        return Err(CalcError::TooManyBlocks {
            requested: blocks_per_sm,
            resident,
        });
    }
    let unit = u64::from(arch.smem_alloc_unit);
    let limit_per_block = smem_limit_per_block(arch, u64::from(arch.smem_per_sm));
    let per_sm = if blocks_per_sm == 1 {
        limit_per_block
    } else if preferred == 0 {
        u64::from(smem_config_at_least(arch, 1).unwrap_or(0))
    } else {
        u64::from(preferred)
    };
    let available = (per_sm / u64::from(blocks_per_sm) / unit * unit).min(limit_per_block);
    // From 8.0 the driver reserves shared memory per block; CUDA 13.5's header subtracts it here
    // (13.0's did not).
    let available = available
        .saturating_sub(u64::from(kernel.static_smem_bytes))
        .saturating_sub(u64::from(arch.reserved_smem_per_block))
        .min(u64::from(kernel.max_dynamic_smem_bytes.unwrap_or(0)));
    Ok(saturate(available))
}

fn blocks_per_sm_for(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    block_threads: u32,
    carveout: Carveout,
) -> u32 {
    let launch = Launch {
        block_threads,
        dynamic_smem_bytes: 0,
        carveout,
    };
    blocks_per_sm(arch, kernel, &launch)
}

#[cfg(test)]
mod tests;
