//! Per-compute-capability hardware facts: one row per architecture that nvcc (13.5, and 12.9 for
//! sm_50..sm_72) accepts, the one architecture name type [`Arch`] every input parses into, and
//! product presets that add an SM count for grid-level figures (waves, minimum grid).
//!
//! The rows are the device properties the CUDA driver reports (`cudaDeviceProp`) plus the
//! allocation rules the driver applies on top of them (register and shared memory granularity,
//! sub-partitions, shared memory carveout steps, barrier slots). The calculator ([`crate::calc`])
//! reads nothing else. This module must not compute occupancy and performs no I/O.
//!
//! Sources: the "Compute Capabilities / Technical Specifications per Compute Capability" table of
//! NVIDIA's CUDA C++ Programming Guide, NVIDIA CCCL's `cuda::arch_traits` (CCCL 13.3,
//! `cuda/__device/arch_traits.h`) for the per-SM figures, and NVIDIA's `cuda_occupancy.h` (CUDA
//! 13.5) for the allocation rules (block slots, barriers, carveout steps). Where header releases
//! disagree the newest wins; docs/calculator.md lists what changed in which release. The tests
//! compile both headers and run the installed nvcc to catch any drift (`tests/differential.rs`,
//! `tests/arch_oracles.rs`). Each row names its source in [`ArchFacts::source`].

mod name;
mod presets;

pub use name::{known_names, Arch, UnknownArch, Variant};
pub use presets::{preset, presets, GpuPreset, UnknownPreset};

use serde::Serialize;
use std::fmt;

/// Hardware facts of one compute capability, as the driver sees them. All sizes are bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ArchFacts {
    /// Canonical name, e.g. `"sm_90"`.
    pub name: &'static str,
    /// Architecture family, e.g. `"Hopper"`.
    pub family: &'static str,
    pub major: u32,
    pub minor: u32,
    /// Older names that resolve to this row (e.g. `sm_101` for `sm_110`).
    pub aliases: &'static [&'static str],
    /// Whether nvcc has the architecture-specific variant (`sm_90a`).
    pub arch_specific_variant: bool,
    /// Whether nvcc has the family-specific variant (`sm_100f`).
    pub family_variant: bool,
    pub warp_size: u32,
    pub max_threads_per_block: u32,
    pub max_threads_per_sm: u32,
    pub max_warps_per_sm: u32,
    /// Resident block slots per SM.
    pub max_blocks_per_sm: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    /// 32-bit registers one block may allocate.
    pub regs_per_block: u32,
    /// Largest register count per thread the compiler can assign (255 on every architecture).
    pub max_regs_per_thread: u32,
    /// Largest register count per thread the driver's occupancy check accepts
    /// (255 before 7.x, 256 from 7.x; `cuda_occupancy.h` `cudaOccRegAllocationMaxPerThread`).
    pub max_regs_per_thread_accepted: u32,
    /// Registers are allocated per warp in units of this many registers.
    pub reg_alloc_unit_per_warp: u32,
    /// SM sub-partitions (warp schedulers), each holding its own slice of the register file.
    pub sub_partitions: u32,
    /// Sub-partitions the driver rounds a block's warps up to when checking the per-block register
    /// limit. Equal to `sub_partitions` except on 6.0, where the driver checks with 4 as well.
    pub register_check_sub_partitions: u32,
    /// Shared memory per SM at the largest configuration (the device's `sharedMemPerMultiprocessor`).
    pub smem_per_sm: u32,
    /// Shared memory per block without opt-in (`sharedMemPerBlock`).
    pub smem_per_block: u32,
    /// Shared memory per block with `cudaFuncAttributeMaxDynamicSharedMemorySize` opt-in.
    pub smem_per_block_optin: u32,
    /// Shared memory the driver reserves per resident block (1 KB from 8.x).
    pub reserved_smem_per_block: u32,
    /// Shared memory is allocated per block in units of this many bytes.
    pub smem_alloc_unit: u32,
    /// Shared memory sizes per SM the carveout can select, ascending. Empty: fixed (before 7.x).
    pub smem_configs_per_sm: &'static [u32],
    /// Block barriers per SM (`__syncthreads` and named barriers, 16 per block at most).
    pub barriers_per_sm: u32,
    /// Whether the driver limits resident blocks by barriers (from 9.0).
    pub barrier_limit_enforced: bool,
    /// Where these numbers come from.
    pub source: &'static str,
}

impl ArchFacts {
    /// `"9.0"`.
    pub fn compute_capability(&self) -> String {
        format!("{}.{}", self.major, self.minor)
    }
}

const KIB: u32 = 1024;

const GUIDE: &str =
    "CUDA C++ Programming Guide 13.0, Technical Specifications per Compute Capability";

/// Carveout steps (KB) of Volta: 0, 8, 16, 32, 64, 96.
const VOLTA_CONFIGS: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 96 * KIB];
/// Turing: 32 or 64 KB.
const TURING_CONFIGS: &[u32] = &[32 * KIB, 64 * KIB];
/// GA100 and Orin: up to 164 KB.
const GA100_CONFIGS: &[u32] = &[
    0,
    8 * KIB,
    16 * KIB,
    32 * KIB,
    64 * KIB,
    100 * KIB,
    132 * KIB,
    164 * KIB,
];
/// GA10x, AD10x and consumer Blackwell: up to 100 KB.
const GA10X_CONFIGS: &[u32] = &[0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB];
/// 10.7 (cuda_occupancy.h 13.5): Hopper's steps plus 328 KB. With 228 KB per SM (CCCL) the
/// 328 KB step is never selected; it is kept to follow the header.
const SM107_CONFIGS: &[u32] = &[
    0,
    8 * KIB,
    16 * KIB,
    32 * KIB,
    64 * KIB,
    100 * KIB,
    132 * KIB,
    164 * KIB,
    196 * KIB,
    228 * KIB,
    328 * KIB,
];
/// Hopper and data-center Blackwell: up to 228 KB.
const HOPPER_CONFIGS: &[u32] = &[
    0,
    8 * KIB,
    16 * KIB,
    32 * KIB,
    64 * KIB,
    100 * KIB,
    132 * KIB,
    164 * KIB,
    196 * KIB,
    228 * KIB,
];

/// The shape every row shares, filled per architecture by [`row`].
struct Row {
    name: &'static str,
    family: &'static str,
    major: u32,
    minor: u32,
    aliases: &'static [&'static str],
    /// nvcc's variants of this architecture: `""`, `"a"` or `"af"`.
    variants: &'static str,
    max_threads_per_sm: u32,
    max_blocks_per_sm: u32,
    regs_per_block: u32,
    smem_per_sm: u32,
    smem_per_block_optin: u32,
    smem_configs_per_sm: &'static [u32],
    /// Barriers per block slot (2 on 5.x-7.x, 8.0, 9.0, 10.0; 1 on 8.x other than 8.0, 10.x other
    /// than 10.0 (CUDA 13.5), 11.0 and 12.x).
    barriers_per_block_slot: u32,
    source: &'static str,
}

const fn has_variant(variants: &str, letter: u8) -> bool {
    let bytes = variants.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == letter {
            return true;
        }
        index += 1;
    }
    false
}

const fn row(r: Row) -> ArchFacts {
    ArchFacts {
        name: r.name,
        family: r.family,
        major: r.major,
        minor: r.minor,
        aliases: r.aliases,
        arch_specific_variant: has_variant(r.variants, b'a'),
        family_variant: has_variant(r.variants, b'f'),
        warp_size: 32,
        max_threads_per_block: 1024,
        max_threads_per_sm: r.max_threads_per_sm,
        max_warps_per_sm: r.max_threads_per_sm / 32,
        max_blocks_per_sm: r.max_blocks_per_sm,
        regs_per_sm: 64 * KIB,
        regs_per_block: r.regs_per_block,
        max_regs_per_thread: 255,
        max_regs_per_thread_accepted: if r.major >= 7 { 256 } else { 255 },
        reg_alloc_unit_per_warp: 256,
        sub_partitions: if r.major == 6 && r.minor == 0 { 2 } else { 4 },
        register_check_sub_partitions: 4,
        smem_per_sm: r.smem_per_sm,
        smem_per_block: 48 * KIB,
        smem_per_block_optin: r.smem_per_block_optin,
        reserved_smem_per_block: if r.major >= 8 { KIB } else { 0 },
        smem_alloc_unit: if r.major >= 8 { 128 } else { 256 },
        smem_configs_per_sm: r.smem_configs_per_sm,
        barriers_per_sm: r.max_blocks_per_sm * r.barriers_per_block_slot,
        barrier_limit_enforced: r.major >= 9,
        source: r.source,
    }
}

static ARCHS: &[ArchFacts] = &[
    row(Row {
        name: "sm_50",
        family: "Maxwell",
        major: 5,
        minor: 0,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 64 * KIB,
        smem_per_block_optin: 48 * KIB,
        smem_configs_per_sm: &[],
        barriers_per_block_slot: 2,
        source: GUIDE,
    }),
    row(Row {
        name: "sm_52",
        family: "Maxwell",
        major: 5,
        minor: 2,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 96 * KIB,
        smem_per_block_optin: 48 * KIB,
        smem_configs_per_sm: &[],
        barriers_per_block_slot: 2,
        source: GUIDE,
    }),
    row(Row {
        name: "sm_53",
        family: "Maxwell (Tegra X1)",
        major: 5,
        minor: 3,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 32 * KIB,
        smem_per_sm: 64 * KIB,
        smem_per_block_optin: 48 * KIB,
        smem_configs_per_sm: &[],
        barriers_per_block_slot: 2,
        source: GUIDE,
    }),
    row(Row {
        name: "sm_60",
        family: "Pascal (GP100)",
        major: 6,
        minor: 0,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 64 * KIB,
        smem_per_block_optin: 48 * KIB,
        smem_configs_per_sm: &[],
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; 2 sub-partitions per SM: Pascal tuning guide and cuda_occupancy.h",
    }),
    row(Row {
        name: "sm_61",
        family: "Pascal",
        major: 6,
        minor: 1,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 96 * KIB,
        smem_per_block_optin: 48 * KIB,
        smem_configs_per_sm: &[],
        barriers_per_block_slot: 2,
        source: GUIDE,
    }),
    row(Row {
        name: "sm_62",
        family: "Pascal (Tegra X2)",
        major: 6,
        minor: 2,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 32 * KIB,
        smem_per_sm: 64 * KIB,
        smem_per_block_optin: 48 * KIB,
        smem_configs_per_sm: &[],
        barriers_per_block_slot: 2,
        source: GUIDE,
    }),
    row(Row {
        name: "sm_70",
        family: "Volta",
        major: 7,
        minor: 0,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 96 * KIB,
        smem_per_block_optin: 96 * KIB,
        smem_configs_per_sm: VOLTA_CONFIGS,
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; carveout steps 0/8/16/32/64/96 KB: Volta tuning guide",
    }),
    row(Row {
        name: "sm_72",
        family: "Volta (Xavier)",
        major: 7,
        minor: 2,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 96 * KIB,
        smem_per_block_optin: 96 * KIB,
        smem_configs_per_sm: VOLTA_CONFIGS,
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; carveout steps as Volta",
    }),
    row(Row {
        name: "sm_75",
        family: "Turing",
        major: 7,
        minor: 5,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 1024,
        max_blocks_per_sm: 16,
        regs_per_block: 64 * KIB,
        smem_per_sm: 64 * KIB,
        smem_per_block_optin: 64 * KIB,
        smem_configs_per_sm: TURING_CONFIGS,
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; carveout 32 or 64 KB: Turing tuning guide",
    }),
    row(Row {
        name: "sm_80",
        family: "Ampere (GA100)",
        major: 8,
        minor: 0,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 164 * KIB,
        smem_per_block_optin: 163 * KIB,
        smem_configs_per_sm: GA100_CONFIGS,
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; carveout 0..164 KB and 1 KB reserved per block: Ampere tuning guide",
    }),
    row(Row {
        name: "sm_86",
        family: "Ampere (GA10x)",
        major: 8,
        minor: 6,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        regs_per_block: 64 * KIB,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_configs_per_sm: GA10X_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table; carveout 0..100 KB: Ampere tuning guide (GA10x)",
    }),
    row(Row {
        name: "sm_87",
        family: "Ampere (Orin)",
        major: 8,
        minor: 7,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        regs_per_block: 64 * KIB,
        smem_per_sm: 164 * KIB,
        smem_per_block_optin: 163 * KIB,
        smem_configs_per_sm: GA100_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table and CCCL cuda::arch_traits<sm_87> (1536 threads, 16 blocks, 164 KB); carveout steps as GA100 (cuda_occupancy.h)",
    }),
    row(Row {
        name: "sm_88",
        family: "Ampere",
        major: 8,
        minor: 8,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 16,
        regs_per_block: 64 * KIB,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_configs_per_sm: GA10X_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CCCL 13.3 cuda::arch_traits<sm_88> (the facts of sm_86: 1536 threads, 16 blocks, 100 KB); listed by nvcc 13.0 and 13.5; block slots, barriers (1 per slot) and carveout 0..100 KB: cuda_occupancy.h 13.5 (8.x other than 8.0 and 8.7)",
    }),
    row(Row {
        name: "sm_89",
        family: "Ada Lovelace",
        major: 8,
        minor: 9,
        aliases: &[],
        variants: "",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        regs_per_block: 64 * KIB,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_configs_per_sm: GA10X_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table; carveout 0..100 KB: Ada tuning guide",
    }),
    row(Row {
        name: "sm_90",
        family: "Hopper",
        major: 9,
        minor: 0,
        aliases: &[],
        variants: "a",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_configs_per_sm: HOPPER_CONFIGS,
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; H100 driver: 233472 B/SM, 232448 B opt-in, 1024 B reserved; carveout 0..228 KB: Hopper tuning guide",
    }),
    row(Row {
        name: "sm_100",
        family: "Blackwell (B200)",
        major: 10,
        minor: 0,
        aliases: &[],
        variants: "af",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_configs_per_sm: HOPPER_CONFIGS,
        barriers_per_block_slot: 2,
        source: "CUDA C++ Programming Guide 13.0 table; carveout 0..228 KB: Blackwell tuning guide",
    }),
    row(Row {
        name: "sm_103",
        family: "Blackwell (B300)",
        major: 10,
        minor: 3,
        aliases: &[],
        variants: "af",
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        regs_per_block: 64 * KIB,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_configs_per_sm: HOPPER_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table and CCCL 13.3 cuda::arch_traits<sm_103> (10.3 as 10.0); 1 barrier per block slot: cuda_occupancy.h 13.5 (13.0 gave 2); carveout: Blackwell tuning guide",
    }),
    row(Row {
        name: "sm_107",
        family: "Blackwell",
        major: 10,
        minor: 7,
        aliases: &[],
        variants: "af",
        max_threads_per_sm: 1024,
        max_blocks_per_sm: 16,
        regs_per_block: 64 * KIB,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_configs_per_sm: SM107_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CCCL 13.3 cuda::arch_traits<sm_107> (sm_100 with 1024 threads, 32 warps and 16 blocks per SM); new in nvcc 13.5; 16 block slots, 1 barrier per slot and carveout steps 0..328 KB: cuda_occupancy.h 13.5",
    }),
    row(Row {
        name: "sm_110",
        family: "Blackwell (Thor)",
        major: 11,
        minor: 0,
        aliases: &["sm_101"],
        variants: "af",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        regs_per_block: 64 * KIB,
        smem_per_sm: 228 * KIB,
        smem_per_block_optin: 227 * KIB,
        smem_configs_per_sm: HOPPER_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table and CCCL cuda::arch_traits<sm_110> (1536 threads, 24 blocks, 228 KB; named 10.1 before CUDA 13); barriers and carveout: cuda_occupancy.h",
    }),
    row(Row {
        name: "sm_120",
        family: "Blackwell (GeForce RTX 50, RTX PRO)",
        major: 12,
        minor: 0,
        aliases: &[],
        variants: "af",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        regs_per_block: 64 * KIB,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_configs_per_sm: GA10X_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table; carveout 0..100 KB: Blackwell tuning guide",
    }),
    row(Row {
        name: "sm_121",
        family: "Blackwell (GB10, DGX Spark)",
        major: 12,
        minor: 1,
        aliases: &[],
        variants: "af",
        max_threads_per_sm: 1536,
        max_blocks_per_sm: 24,
        regs_per_block: 64 * KIB,
        smem_per_sm: 100 * KIB,
        smem_per_block_optin: 99 * KIB,
        smem_configs_per_sm: GA10X_CONFIGS,
        barriers_per_block_slot: 1,
        source: "CUDA C++ Programming Guide 13.0 table (12.x column) and CCCL cuda::arch_traits<sm_121>",
    }),
];

/// Every known architecture, oldest first.
pub fn all() -> &'static [ArchFacts] {
    ARCHS
}

/// The row of any accepted spelling of an architecture ([`Arch`]'s grammar: `sm_90`, `sm_90a`,
/// `sm_100f`, `compute_90`, `90`, `9.0`); the same row for every variant.
pub fn lookup(name: &str) -> Result<&'static ArchFacts, UnknownArch> {
    Arch::parse(name).map(Arch::facts)
}

impl fmt::Display for ArchFacts {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} ({} {})",
            self.name,
            self.compute_capability(),
            self.family
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sm_90_matches_the_h100_driver() {
        let arch = lookup("sm_90").unwrap();
        assert_eq!(arch.max_threads_per_sm, 2048);
        assert_eq!(arch.max_blocks_per_sm, 32);
        assert_eq!(arch.regs_per_sm, 65536);
        assert_eq!(arch.smem_per_sm, 233_472);
        assert_eq!(arch.smem_per_block, 49_152);
        assert_eq!(arch.smem_per_block_optin, 232_448);
        assert_eq!(arch.reserved_smem_per_block, 1024);
        assert_eq!(arch.max_warps_per_sm, 64);
    }

    #[test]
    fn every_spelling_finds_the_row() {
        for name in [
            "sm_90",
            "sm_90a",
            "compute_90",
            "compute_90a",
            "90",
            "9.0",
            " sm_90 ",
        ] {
            assert_eq!(lookup(name).unwrap().name, "sm_90", "{name}");
        }
        assert_eq!(lookup("sm_100a").unwrap().name, "sm_100");
        assert_eq!(lookup("sm_100f").unwrap().name, "sm_100");
        assert_eq!(lookup("sm_120a").unwrap().name, "sm_120");
        assert_eq!(lookup("10.3").unwrap().name, "sm_103");
        assert_eq!(lookup("sm_101").unwrap().name, "sm_110");
        assert_eq!(lookup("10.1").unwrap().name, "sm_110");
        assert_eq!(lookup("121").unwrap().name, "sm_121");
        assert_eq!(lookup("sm_88").unwrap().name, "sm_88");
        assert_eq!(lookup("sm_107f").unwrap().name, "sm_107");
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        for name in [
            "sm_91", "sm_", "", "9.", ".0", "sm_9000", "gfx90a", "sm_90b", "9.10", "-90", "sm90",
            "SM_90", "sm_090", "09.0", "sm_89a", "sm_90f", "sm_999", "sm_88a",
        ] {
            let error = lookup(name).unwrap_err();
            let message = error.to_string();
            assert!(
                message.contains("sm_50")
                    && message.contains("sm_121")
                    && message.contains("sm_100f"),
                "{message}"
            );
        }
    }

    /// 13.5's rules where they differ from 13.0 (docs/calculator.md, "What changed").
    #[test]
    fn rows_follow_cuda_13_5() {
        let sm_103 = lookup("sm_103").unwrap();
        assert_eq!(sm_103.barriers_per_sm, sm_103.max_blocks_per_sm);
        let sm_100 = lookup("sm_100").unwrap();
        assert_eq!(sm_100.barriers_per_sm, 2 * sm_100.max_blocks_per_sm);
        let sm_107 = lookup("sm_107").unwrap();
        assert_eq!(
            (
                sm_107.max_blocks_per_sm,
                sm_107.max_threads_per_sm,
                sm_107.barriers_per_sm
            ),
            (16, 1024, 16)
        );
        assert_eq!(sm_107.smem_configs_per_sm.last(), Some(&(328 * KIB)));
        let sm_88 = lookup("sm_88").unwrap();
        let sm_86 = lookup("sm_86").unwrap();
        assert_eq!(
            ArchFacts {
                name: "sm_86",
                family: sm_86.family,
                major: 8,
                minor: 6,
                source: sm_86.source,
                ..sm_88.clone()
            },
            sm_86.clone()
        );
    }

    #[test]
    fn rows_are_consistent() {
        for arch in all() {
            assert_eq!(
                arch.max_warps_per_sm * arch.warp_size,
                arch.max_threads_per_sm
            );
            assert!(arch.smem_per_block_optin <= arch.smem_per_sm);
            assert!(arch.smem_per_block <= arch.smem_per_block_optin);
            assert_eq!(lookup(arch.name).unwrap(), arch);
            if !arch.smem_configs_per_sm.is_empty() {
                assert!(
                    arch.smem_configs_per_sm.contains(&arch.smem_per_sm),
                    "{}",
                    arch.name
                );
                assert!(arch
                    .smem_configs_per_sm
                    .windows(2)
                    .all(|pair| pair[0] < pair[1]));
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn lookup_never_panics(name in "\\PC{0,16}") {
            if let Ok(arch) = lookup(&name) {
                proptest::prop_assert!(all().contains(arch));
            }
        }

        #[test]
        fn every_row_answers_to_its_plain_spellings(index in 0usize..all().len()) {
            let arch = &all()[index];
            let digits = format!("{}{}", arch.major, arch.minor);
            for name in [format!("sm_{digits}"), format!("compute_{digits}"), format!("{}.{}", arch.major, arch.minor), digits.clone()] {
                proptest::prop_assert_eq!(lookup(&name).unwrap(), arch, "{}", name);
            }
        }
    }
}
