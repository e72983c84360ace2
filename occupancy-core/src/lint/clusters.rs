//! `cluster_unlaunchable` and `low_cluster_occupancy`: the launch's thread-block cluster (the
//! declared `cluster`, else the compiled `__cluster_dims__`) against what the architecture
//! launches and what the GPUs of the architecture hold ([`crate::calc::clusters`]).

use occupancy_model::ClusterDim;

use super::finding::{occupancy_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use crate::arch::{presets, GpuPreset};
use crate::calc::clusters::{
    cluster_size_problem, max_active_clusters, ClusterOccupancy, ClusterProblem,
};
use crate::spec::KernelSpec;

/// The cluster of the launch and where it comes from: the declaration, else the kernel's
/// compiled `.reqnctapercluster` (`__cluster_dims__`, from the PTX or the binary).
struct LaunchCluster {
    dims: ClusterDim,
    from: &'static str,
    compiled: Option<ClusterDim>,
}

fn launch_cluster(spec: &KernelSpec, on: &CompiledOnArch<'_>) -> Option<LaunchCluster> {
    let compiled = on
        .ptx
        .and_then(|ptx| ptx.reqnctapercluster.as_deref())
        .map(|dims| {
            let dim = |index: usize| dims.get(index).copied().unwrap_or(1);
            ClusterDim::new(dim(0), dim(1), dim(2))
        });
    match (spec.cluster, compiled) {
        (Some(dims), _) => Some(LaunchCluster {
            dims,
            from: "declared",
            compiled,
        }),
        (None, Some(dims)) => Some(LaunchCluster {
            dims,
            from: "compiled `__cluster_dims__`",
            compiled,
        }),
        (None, None) => None,
    }
}

/// The GPUs of the architecture `on` checks that launch clusters.
fn gpus_of<'a>(on: &'a CompiledOnArch<'_>) -> impl Iterator<Item = &'static GpuPreset> + 'a {
    presets().iter().filter(move |gpu| gpu.arch == on.arch.name)
}

/// `on H100 SXM5 (132 SMs; GPC layout recorded): 58 clusters of 16 blocks resident at once ...`.
pub(crate) fn cluster_note(gpu: &GpuPreset, answer: &ClusterOccupancy) -> String {
    let (quantity, basis) = if answer.exact {
        ("", "GPC layout recorded: the driver's answer")
    } else {
        ("at most ", "GPC layout not recorded: an upper bound")
    };
    let mut note = format!(
        "on {} ({} SMs; {basis}): {quantity}{} cluster{} of {} blocks resident at once",
        gpu.product,
        gpu.sm_count,
        answer.max_active_clusters,
        if answer.max_active_clusters == 1 {
            ""
        } else {
            "s"
        },
        answer.cluster_size
    );
    if answer.cluster_blocks_per_sm < answer.blocks_per_sm {
        note.push_str(&format!(
            " ({} of the kernel's {} blocks per SM: a cluster launch holds at most {} per SM)",
            answer.cluster_blocks_per_sm, answer.blocks_per_sm, answer.cluster_blocks_per_sm
        ));
    }
    note
}

fn size_help(problem: &ClusterProblem, origin: LaunchOrigin) -> String {
    match (problem, origin) {
        (ClusterProblem::NeedsNonPortable { portable_max, .. }, LaunchOrigin::Declaration) => format!(
            "set `cudaFuncAttributeNonPortableClusterSizeAllowed` on the kernel before launching and declare `non_portable_cluster = true`, or use at most {portable_max} blocks per cluster"
        ),
        (ClusterProblem::Unsupported { .. }, LaunchOrigin::Declaration) => {
            "drop the architecture from `archs`, or launch without a cluster there".to_string()
        }
        (ClusterProblem::NeedsNonPortable { portable_max, .. }, _) => format!(
            "set `cudaFuncAttributeNonPortableClusterSizeAllowed` before launching (then {} here), or compile at most {portable_max} blocks per cluster",
            origin.allow(LintId::ClusterUnlaunchable)
        ),
        _ => "use a smaller cluster".to_string(),
    }
}

/// `cluster_unlaunchable`: the launch's cluster cannot start on the architecture (none before
/// sm_90, above 8 blocks without the opt-in, above 16, a declared shape other than the
/// compiled `__cluster_dims__`), or no cluster fits on a GPU whose GPC layout is recorded.
pub(super) fn cluster_unlaunchable(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(cluster) = launch_cluster(spec, on) else {
        return;
    };
    let (name, arch, size) = (&on.record.name, on.arch.name, cluster.dims.blocks());
    // The count as it is, past `u32` too (a cubin's 65536 x 65536 is 4294967296 blocks).
    let dims = cluster.dims;
    let blocks = u64::from(dims.x) * u64::from(dims.y) * u64::from(dims.z);
    let mut finding = |message: String, notes: Vec<String>, help: String| {
        findings.push(Finding {
            arch: Some(arch.to_string()),
            message,
            notes,
            help: Some(help),
            ..Finding::new(LintId::ClusterUnlaunchable)
        });
    };
    if let Some(compiled) = cluster
        .compiled
        .filter(|compiled| *compiled != cluster.dims)
    {
        return finding(
            format!("kernel `{name}` is declared with `cluster = {}` but was compiled with `__cluster_dims__` {compiled} on {arch}: a launch with another cluster shape fails", cluster.dims),
            vec![format!("the PTX of `{name}` says `.reqnctapercluster` {compiled}")],
            "declare the compiled shape, or remove `__cluster_dims__` and set the cluster at launch".to_string(),
        );
    }
    if let Some(problem) = cluster_size_problem(on.arch, size, spec.non_portable_cluster) {
        return finding(
            format!("the {} cluster of {blocks} blocks of kernel `{name}` cannot launch on {arch}: {problem}", cluster.from),
            Vec::new(),
            size_help(&problem, origin),
        );
    }
    if on.occupancy.blocks_per_sm == 0 {
        return; // `unlaunchable` says why no block fits
    }
    for gpu in gpus_of(on).filter(|gpu| gpu.cluster_groups.is_some()) {
        let answer = max_active_clusters(
            gpu,
            on.occupancy.blocks_per_sm,
            size,
            spec.non_portable_cluster,
        );
        if let Some(problem @ ClusterProblem::LargerThanEveryGroup { largest_group, .. }) =
            answer.problem
        {
            finding(
                format!(
                    "no cluster of {size} blocks of kernel `{name}` fits on the {}: {problem}",
                    gpu.product
                ),
                vec![format!(
                    "{}: GPCs of {:?} SMs, as clusters see them ({})",
                    gpu.product,
                    gpu.cluster_groups.unwrap_or_default(),
                    gpu.source
                )],
                format!(
                    "use at most {largest_group} blocks per cluster on the {}",
                    gpu.product
                ),
            );
        }
    }
}

/// `low_cluster_occupancy`: fewer clusters resident at once than the declared
/// `min_active_clusters`, on a GPU of the architecture (exactly, where its GPC layout is
/// recorded; where not, when even the upper bound is below).
pub(super) fn low_cluster_occupancy(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    _origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(minimum) = spec.min_active_clusters else {
        return;
    };
    let (name, arch) = (&on.record.name, on.arch.name);
    let Some(cluster) = launch_cluster(spec, on) else {
        findings.push(Finding {
            arch: Some(arch.to_string()),
            message: format!("kernel `{name}` declares `min_active_clusters = {minimum}` but launches no cluster"),
            notes: Vec::new(),
            help: Some("declare the launch's `cluster`, or remove `min_active_clusters`".to_string()),
            ..Finding::new(LintId::LowClusterOccupancy)
        });
        return;
    };
    let size = cluster.dims.blocks();
    if cluster_size_problem(on.arch, size, spec.non_portable_cluster).is_some() {
        return; // `cluster_unlaunchable` says why
    }
    for gpu in gpus_of(on) {
        let answer = max_active_clusters(
            gpu,
            on.occupancy.blocks_per_sm,
            size,
            spec.non_portable_cluster,
        );
        if answer.max_active_clusters >= minimum {
            continue;
        }
        findings.push(Finding {
            arch: Some(arch.to_string()),
            message: format!(
                "kernel `{name}` keeps {}{} clusters of {size} blocks resident on the {}, below the declared `min_active_clusters = {minimum}`",
                if answer.exact { "" } else { "at most " },
                answer.max_active_clusters,
                gpu.product
            ),
            notes: vec![cluster_note(gpu, &answer), occupancy_note(on)],
            help: Some("more blocks per SM (fewer registers or less shared memory per block) or a smaller cluster keep more clusters resident; or lower `min_active_clusters`".to_string()),
            ..Finding::new(LintId::LowClusterOccupancy)
        });
    }
}

#[cfg(test)]
mod tests;
