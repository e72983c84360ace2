//! [`CompiledFacts`]: one compiled kernel on one architecture, as the build checked it.

use crate::{Static, Storage};

/// One compiled kernel on one architecture at its declared launch: the numbers the build
/// checked (the same as its report's row). The build writes them to its facts file
/// (`occupancy_facts.json`); the attribute's expansion puts them into the kernel's const,
/// where `KernelDeclaration::compiled` finds them.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(bound(
        serialize = "S::Text: serde::Serialize",
        deserialize = "S::Text: serde::Deserialize<'de>"
    ))
)]
pub struct CompiledFacts<S: Storage> {
    /// The architecture, `sm_90`.
    pub arch: S::Text,
    /// Registers per thread.
    pub registers: u32,
    /// Spill stores + spill loads, bytes.
    pub spill_bytes: u64,
    /// Stack frame per thread, bytes.
    pub stack_frame_bytes: u64,
    /// Static shared memory per block, bytes.
    pub static_smem_bytes: u64,
    /// Threads per block of the declared launch.
    pub block_threads: u32,
    /// Resident blocks per SM at the declared launch: the most a persistent grid keeps resident
    /// on each SM.
    pub blocks_per_sm: u32,
    /// Resident warps per SM at the declared launch.
    pub warps_per_sm: u32,
    /// Theoretical occupancy, 0..=1.
    pub occupancy: f64,
}

impl Copy for CompiledFacts<Static> {}
