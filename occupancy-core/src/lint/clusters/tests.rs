//! The cluster lints on sm_90 (the H100 SXM's recorded layout) and sm_80.

use super::*;
use crate::arch::lookup;
use crate::calc::{occupancy, KernelFacts, Launch, Occupancy};
use crate::ptxas::{parse_log, KernelRecord, PtxEntry};
use crate::spec::BlockDim;

fn record(arch: &str, registers: u32) -> KernelRecord {
    let log = format!("ptxas info    : Compiling entry function 'k' for '{arch}'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used {registers} registers, used 1 barriers\n");
    parse_log(&log).unwrap().kernels.remove(0)
}

/// Every finding of both cluster lints for `spec` on `arch`, with `dynamic_smem` bytes per block
/// setting the blocks per SM.
fn findings(arch: &str, spec: &KernelSpec, ptx: Option<&PtxEntry>) -> Vec<Finding> {
    let record = record(arch, 32);
    let facts = KernelFacts {
        registers_per_thread: 32,
        barriers: 1,
        ..KernelFacts::default()
    };
    let launch = Launch {
        dynamic_smem_bytes: spec.dynamic_smem_bytes,
        ..Launch::new(spec.block.threads())
    };
    let arch = lookup(arch).unwrap();
    let result: Occupancy = occupancy(arch, &facts, &launch);
    let on = CompiledOnArch {
        arch,
        record: &record,
        ptx,
        occupancy: &result,
        chosen: None,
    };
    let mut found = Vec::new();
    cluster_unlaunchable(spec, &on, LaunchOrigin::Declaration, &mut found);
    low_cluster_occupancy(spec, &on, LaunchOrigin::Declaration, &mut found);
    found
}

fn spec(cluster: Option<ClusterDim>, change: impl FnOnce(&mut KernelSpec)) -> KernelSpec {
    let mut spec = KernelSpec::with_block(BlockDim::linear(128));
    spec.cluster = cluster;
    change(&mut spec);
    spec
}

#[test]
fn a_cluster_above_8_needs_the_opt_in() {
    let sixteen = Some(ClusterDim::new(4, 4, 1));
    let found = findings("sm_90", &spec(sixteen, |_| {}), None);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].lint, LintId::ClusterUnlaunchable);
    assert!(
        found[0].message.contains("cudaErrorInvalidClusterSize"),
        "{}",
        found[0].message
    );
    assert!(found[0]
        .help
        .as_deref()
        .unwrap()
        .contains("non_portable_cluster = true"));
    let opted_in = spec(sixteen, |spec| spec.non_portable_cluster = true);
    assert_eq!(findings("sm_90", &opted_in, None), []);
}

#[test]
fn clusters_before_sm_90_and_shapes_other_than_the_compiled_one_cannot_launch() {
    let two = Some(ClusterDim::new(2, 1, 1));
    let found = findings("sm_80", &spec(two, |_| {}), None);
    assert_eq!(found.len(), 1);
    assert!(
        found[0]
            .message
            .contains("sm_80 has no thread-block clusters"),
        "{}",
        found[0].message
    );
    let compiled = PtxEntry {
        reqnctapercluster: Some(vec![4, 1, 1]),
        ..PtxEntry::default()
    };
    let found = findings("sm_90", &spec(two, |_| {}), Some(&compiled));
    assert_eq!(found.len(), 1);
    assert!(
        found[0]
            .message
            .contains("compiled with `__cluster_dims__` 4"),
        "{}",
        found[0].message
    );
    assert_eq!(
        findings(
            "sm_90",
            &spec(Some(ClusterDim::new(4, 1, 1)), |_| {}),
            Some(&compiled)
        ),
        []
    );
}

#[test]
fn the_compiled_cluster_is_checked_when_none_is_declared() {
    let compiled = PtxEntry {
        reqnctapercluster: Some(vec![12]),
        ..PtxEntry::default()
    };
    let found = findings("sm_90", &spec(None, |_| {}), Some(&compiled));
    assert_eq!(found.len(), 1);
    assert!(
        found[0]
            .message
            .contains("compiled `__cluster_dims__` cluster of 12 blocks"),
        "{}",
        found[0].message
    );
}

/// Issue #35, class 10: a cubin's cluster of 65536 x 65536 blocks is that many blocks and
/// cannot launch (the count wrapped to "0 blocks").
#[test]
fn a_cluster_past_u32_blocks_is_counted_exactly_and_refused() {
    assert_eq!(ClusterDim::new(65536, 65536, 1).blocks(), u32::MAX);
    let compiled = PtxEntry {
        reqnctapercluster: Some(vec![65536, 65536, 1]),
        ..PtxEntry::default()
    };
    let found = findings("sm_90", &spec(None, |_| {}), Some(&compiled));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .message
            .contains("compiled `__cluster_dims__` cluster of 4294967296 blocks")
            && found[0].message.contains("cannot launch on sm_90"),
        "{}",
        found[0].message
    );
}

#[test]
fn fewer_active_clusters_than_declared_names_each_gpu() {
    // 227 KiB of dynamic shared memory: 1 block per SM. Clusters of 16 on sm_90: 7 on the
    // H100 SXM and the H200 (exact), at most 7 on the H100 PCIe (114 SMs, a bound), at most 4 on
    // the H20 (78 SMs); the GH200 and H800 (132 SMs, layouts not recorded) may hold 8.
    let persistent = spec(Some(ClusterDim::new(16, 1, 1)), |spec| {
        spec.non_portable_cluster = true;
        spec.dynamic_smem_bytes = 227 * 1024;
        spec.min_active_clusters = Some(8);
    });
    let found = findings("sm_90", &persistent, None);
    let messages: Vec<&str> = found
        .iter()
        .map(|finding| finding.message.as_str())
        .collect();
    assert_eq!(found.len(), 4, "{messages:#?}");
    assert!(found
        .iter()
        .all(|finding| finding.lint == LintId::LowClusterOccupancy));
    assert!(
        messages[0].contains("keeps 7 clusters of 16 blocks resident on the H100 SXM5"),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("keeps at most 7 clusters of 16 blocks resident on the H100 PCIe"),
        "{}",
        messages[1]
    );
    assert!(
        messages[3].contains("keeps at most 4 clusters of 16 blocks resident on the H20"),
        "{}",
        messages[3]
    );
    assert!(
        found[0].notes[0].contains("GPC layout recorded"),
        "{:?}",
        found[0].notes
    );
    let enough_but_on_the_h20 = KernelSpec {
        min_active_clusters: Some(7),
        ..persistent.clone()
    };
    let found = findings("sm_90", &enough_but_on_the_h20, None);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].message.contains("on the H20"),
        "{}",
        found[0].message
    );
    let enough = KernelSpec {
        min_active_clusters: Some(4),
        ..persistent.clone()
    };
    assert_eq!(findings("sm_90", &enough, None), []);
    let no_cluster = spec(None, |spec| spec.min_active_clusters = Some(1));
    assert!(findings("sm_90", &no_cluster, None)[0]
        .message
        .contains("launches no cluster"));
}
