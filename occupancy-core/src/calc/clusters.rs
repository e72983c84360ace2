//! Thread-block clusters (sm_90 and later): how many clusters of a kernel are resident at once on
//! a named GPU, as the driver's `cudaOccupancyMaxActiveClusters` answers, and when a cluster
//! cannot launch at all.
//!
//! `cuda_occupancy.h` has no cluster rule. This one was derived from the driver itself
//! (`scripts/gpu-cluster-occupancy.sh`, docs/verification.md section 7) and equals every one of
//! the 52,233 answers recorded on an H100 SXM and on an H200
//! (`cargo-occupancy/tests/cluster_replay.rs` replays them):
//!
//! - the blocks of one cluster run on distinct SMs of one *cluster group*: a GPC as the cluster
//!   scheduler sees it, recorded per GPU ([`GpuPreset::cluster_groups`]); a group of `n` SMs holds
//!   clusters of `c` blocks only when `c <= n`;
//! - an SM holds at most [`ClusterRules::max_blocks_per_sm`] blocks of a cluster launch (8 on
//!   sm_90), whatever the kernel's own occupancy allows;
//! - so with `b` blocks per SM (the calculator's answer for the launch), a group of `n` SMs
//!   holds `floor(n * min(b, 8) / c)` clusters, and the GPU the sum over its groups.
//!
//! On the recorded chips launching that many clusters ran them all at once, and one more did not
//! (160 launches). Where a GPU's groups are not recorded the answer is an upper bound: the SMs
//! taken as one group, `floor(sm_count * min(b, 8) / c)`; no layout can hold more.

use crate::arch::{ArchFacts, GpuPreset};
use serde::Serialize;
use std::fmt;

/// What an architecture allows of clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ClusterRules {
    /// The largest cluster (blocks) every GPU of the architecture launches.
    pub portable_max: u32,
    /// The largest cluster with `cudaFuncAttributeNonPortableClusterSizeAllowed` set.
    pub non_portable_max: u32,
    /// The most blocks of a cluster launch one SM holds.
    pub max_blocks_per_sm: u32,
    /// Whether the driver was asked on this architecture (else sm_90's figures are assumed).
    pub measured: bool,
    /// Where the figures come from.
    pub source: &'static str,
}

const MEASURED: &str = "CUDA C++ Programming Guide (8 portable, 16 non-portable on H100); the driver on an H100 SXM and an H200: sizes 9-16 refused without the opt-in (cudaErrorInvalidClusterSize) and accepted with it, at most 8 blocks of a cluster launch per SM (tests/fixtures/gpu/clusters)";
const ASSUMED: &str = "CUDA C++ Programming Guide (8 portable); 16 non-portable and 8 blocks per SM assumed from sm_90, not measured on this architecture";

/// The cluster rules of `arch`; `None` before sm_90, where clusters do not exist.
pub fn cluster_rules(arch: &ArchFacts) -> Option<ClusterRules> {
    (arch.major >= 9).then(|| {
        let measured = arch.major == 9;
        ClusterRules {
            portable_max: 8,
            non_portable_max: 16,
            max_blocks_per_sm: 8,
            measured,
            source: if measured { MEASURED } else { ASSUMED },
        }
    })
}

/// Why no cluster of a launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClusterProblem {
    /// The architecture has no clusters (before sm_90).
    Unsupported { arch: &'static str },
    /// A cluster of 0 blocks.
    Empty,
    /// Above the portable size without `cudaFuncAttributeNonPortableClusterSizeAllowed`: the
    /// driver answers `cudaErrorInvalidClusterSize`.
    NeedsNonPortable { size: u32, portable_max: u32 },
    /// Above the largest size the architecture launches at all.
    TooLarge { size: u32, max: u32 },
    /// The kernel itself has 0 blocks per SM at this launch.
    NoBlocks,
    /// More blocks than SMs in the GPU's largest cluster group (recorded layouts only).
    LargerThanEveryGroup { size: u32, largest_group: u32 },
}

impl fmt::Display for ClusterProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterProblem::Unsupported { arch } => {
                write!(formatter, "{arch} has no thread-block clusters (sm_90 and later)")
            }
            ClusterProblem::Empty => formatter.write_str("a cluster needs at least 1 block"),
            ClusterProblem::NeedsNonPortable { size, portable_max } => write!(
                formatter,
                "a cluster of {size} blocks is above the portable {portable_max}: the launch needs cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1), else it fails with cudaErrorInvalidClusterSize"
            ),
            ClusterProblem::TooLarge { size, max } => write!(
                formatter,
                "a cluster of {size} blocks is above the largest this architecture launches ({max}, non-portable)"
            ),
            ClusterProblem::NoBlocks => {
                formatter.write_str("no block of the kernel fits on an SM at this launch")
            }
            ClusterProblem::LargerThanEveryGroup {
                size,
                largest_group,
            } => write!(
                formatter,
                "a cluster of {size} blocks needs {size} SMs of one GPC; the largest GPC has {largest_group}"
            ),
        }
    }
}

/// How many clusters of one launch are resident at once on one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ClusterOccupancy {
    /// The GPU preset's name.
    pub gpu: &'static str,
    /// Blocks per cluster (x * y * z; only the product matters to the driver).
    pub cluster_size: u32,
    /// The kernel's resident blocks per SM at this launch (the calculator's answer).
    pub blocks_per_sm: u32,
    /// Blocks per SM a cluster launch gets: `blocks_per_sm`, at most the architecture's
    /// [`ClusterRules::max_blocks_per_sm`].
    pub cluster_blocks_per_sm: u32,
    /// Clusters resident at once on the whole GPU (`cudaOccupancyMaxActiveClusters`); an upper
    /// bound when `exact` is false.
    pub max_active_clusters: u32,
    /// Whether the GPU's cluster groups were recorded: the answer is the driver's. Else it is an
    /// upper bound (the SMs taken as one group).
    pub exact: bool,
    /// SMs in groups large enough for one cluster (all of them when not `exact`).
    pub usable_sms: u32,
    /// Why no cluster runs, when `max_active_clusters` is 0 for a reason the tool can name.
    pub problem: Option<ClusterProblem>,
}

impl ClusterOccupancy {
    /// Blocks resident at once in full clusters.
    pub fn resident_blocks(&self) -> u64 {
        u64::from(self.max_active_clusters) * u64::from(self.cluster_size)
    }
}

/// The problem that stops every cluster of `size` blocks on `arch`, before any layout: no
/// clusters on the architecture, an empty cluster, a size above the maximum or above the
/// portable size without the opt-in.
pub fn cluster_size_problem(
    arch: &ArchFacts,
    size: u32,
    non_portable: bool,
) -> Option<ClusterProblem> {
    let Some(rules) = cluster_rules(arch) else {
        return Some(ClusterProblem::Unsupported { arch: arch.name });
    };
    if size == 0 {
        Some(ClusterProblem::Empty)
    } else if size > rules.non_portable_max {
        Some(ClusterProblem::TooLarge {
            size,
            max: rules.non_portable_max,
        })
    } else if size > rules.portable_max && !non_portable {
        Some(ClusterProblem::NeedsNonPortable {
            size,
            portable_max: rules.portable_max,
        })
    } else {
        None
    }
}

/// `cudaOccupancyMaxActiveClusters` for a kernel with `blocks_per_sm` resident blocks per SM
/// (from [`crate::calc::blocks_per_sm`] on the GPU's architecture), clusters of `size` blocks,
/// with or without the non-portable opt-in.
pub fn max_active_clusters(
    gpu: &GpuPreset,
    blocks_per_sm: u32,
    size: u32,
    non_portable: bool,
) -> ClusterOccupancy {
    let arch = gpu.arch_facts();
    let per_sm_cap = cluster_rules(arch).map_or(0, |rules| rules.max_blocks_per_sm);
    let cluster_blocks_per_sm = blocks_per_sm.min(per_sm_cap);
    let mut answer = ClusterOccupancy {
        gpu: gpu.name,
        cluster_size: size,
        blocks_per_sm,
        cluster_blocks_per_sm,
        max_active_clusters: 0,
        exact: gpu.cluster_groups.is_some(),
        usable_sms: 0,
        problem: cluster_size_problem(arch, size, non_portable),
    };
    if answer.problem.is_some() {
        return answer;
    }
    if blocks_per_sm == 0 {
        answer.problem = Some(ClusterProblem::NoBlocks);
        return answer;
    }
    let whole_gpu = [gpu.sm_count];
    let groups = gpu.cluster_groups.unwrap_or(&whole_gpu);
    let usable = groups.iter().copied().filter(|&sms| sms >= size);
    answer.usable_sms = usable.clone().sum();
    let clusters: u64 = usable
        .map(|sms| u64::from(sms) * u64::from(cluster_blocks_per_sm) / u64::from(size))
        .sum();
    answer.max_active_clusters = u32::try_from(clusters).unwrap_or(u32::MAX);
    if answer.max_active_clusters == 0 {
        let largest_group = groups.iter().copied().max().unwrap_or(0);
        answer.problem = Some(ClusterProblem::LargerThanEveryGroup {
            size,
            largest_group,
        });
    }
    answer
}

/// `cudaOccupancyMaxPotentialClusterSize`: the largest cluster with at least one resident
/// cluster (up to the portable size, or the non-portable one with the opt-in); 0 when none.
/// An upper bound where the GPU's groups are not recorded.
pub fn max_potential_cluster_size(gpu: &GpuPreset, blocks_per_sm: u32, non_portable: bool) -> u32 {
    let Some(rules) = cluster_rules(gpu.arch_facts()) else {
        return 0;
    };
    let max = if non_portable {
        rules.non_portable_max
    } else {
        rules.portable_max
    };
    (1..=max)
        .rev()
        .find(|&size| {
            max_active_clusters(gpu, blocks_per_sm, size, non_portable).max_active_clusters > 0
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::preset;

    #[test]
    fn the_h100_layout_gives_the_recorded_answers() {
        let h100 = preset("h100").unwrap();
        // A few of the driver's answers (tests/fixtures/gpu/clusters/h100-sxm).
        let cases = [
            (1, 1, 132),
            (1, 2, 66),
            (1, 3, 39),
            (1, 8, 15),
            (1, 9, 9),
            (1, 16, 7),
            (2, 3, 79),
            (4, 3, 163),
            (8, 1, 1056),
            (32, 1, 1056),
            (32, 16, 58),
        ];
        for (blocks, size, clusters) in cases {
            let answer = max_active_clusters(h100, blocks, size, true);
            assert_eq!(
                answer.max_active_clusters, clusters,
                "{blocks} blocks/SM, size {size}"
            );
            assert!(answer.exact && answer.problem.is_none());
        }
        assert_eq!(max_potential_cluster_size(h100, 1, false), 8);
        assert_eq!(max_potential_cluster_size(h100, 1, true), 16);
    }

    #[test]
    fn launches_that_cannot_run_say_why() {
        let h100 = preset("h100").unwrap();
        let problem = |blocks, size, non_portable| {
            max_active_clusters(h100, blocks, size, non_portable).problem
        };
        assert!(matches!(
            problem(1, 9, false),
            Some(ClusterProblem::NeedsNonPortable { size: 9, .. })
        ));
        assert!(matches!(
            problem(1, 17, true),
            Some(ClusterProblem::TooLarge { size: 17, max: 16 })
        ));
        assert_eq!(problem(0, 2, false), Some(ClusterProblem::NoBlocks));
        assert_eq!(problem(1, 0, false), Some(ClusterProblem::Empty));
        let a100 = preset("a100").unwrap();
        let answer = max_active_clusters(a100, 4, 2, false);
        assert_eq!(
            answer.problem,
            Some(ClusterProblem::Unsupported { arch: "sm_80" })
        );
        assert_eq!(answer.max_active_clusters, 0);
        assert_eq!(max_potential_cluster_size(a100, 4, true), 0);
    }

    #[test]
    fn unrecorded_gpus_get_an_upper_bound() {
        let b200 = preset("b200").unwrap();
        let answer = max_active_clusters(b200, 1, 16, true);
        assert!(!answer.exact);
        assert_eq!(answer.max_active_clusters, 148 / 16);
        // The recorded H100 is below the bound its SM count alone would give.
        let h100 = preset("h100").unwrap();
        assert!(max_active_clusters(h100, 1, 16, true).max_active_clusters < 132 / 16);
    }
}
