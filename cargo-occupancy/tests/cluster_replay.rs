//! Replays the cluster answers recorded from real drivers through the calculator, without a GPU.
//!
//! `scripts/gpu-cluster-occupancy.sh` asked an H100 SXM's and an H200's driver
//! (`cudaOccupancyMaxActiveClusters`, `cudaOccupancyMaxActiveBlocksPerMultiprocessor`,
//! `cudaOccupancyMaxPotentialClusterSize`) about 17 kernels over block sizes, dynamic shared
//! memory, cluster sizes 1 to 16 (and other shapes of the same sizes), with and without the
//! non-portable opt-in, found which SMs share a GPC, and launched the driver's answer and one
//! cluster more for real (tests/fixtures/gpu/clusters; docs/verification.md, section 7). Here
//! each answer is computed from the kernel's recorded registers, static shared memory and barrier
//! count alone: the blocks per SM by `occupancy_core::calc`, the clusters by
//! `occupancy_core::calc::clusters` with the GPU preset's recorded layout. Every one must equal
//! the driver's.

use flate2::read::GzDecoder;
use occupancy_core::arch::{preset, GpuPreset};
use occupancy_core::calc::clusters::{
    max_active_clusters, max_potential_cluster_size, ClusterProblem,
};
use occupancy_core::calc::{blocks_per_sm, KernelFacts, Launch};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `cudaErrorInvalidClusterSize`.
const INVALID_CLUSTER_SIZE: i64 = 912;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/gpu/clusters")
}

fn read_probe(gpu_dir: &str) -> Vec<Vec<String>> {
    let path = fixtures().join(gpu_dir).join("cluster-probe.csv.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = String::new();
    GzDecoder::new(file).read_to_string(&mut text).unwrap();
    text.lines()
        .map(|line| line.split(',').map(str::to_string).collect())
        .collect()
}

fn number(field: &str) -> i64 {
    field.parse().unwrap_or_else(|e| panic!("`{field}`: {e}"))
}

/// Each probe kernel's facts: registers and static shared memory as the driver reported them
/// (`kernel,` lines), barriers from the ptxas report of the same build, and the dynamic shared
/// memory opt-in the probe set (everything the device allows).
fn kernels(rows: &[Vec<String>], optin: u32) -> HashMap<String, KernelFacts> {
    let log = std::fs::read_to_string(fixtures().join("h100-sxm/cluster-ptxas.log")).unwrap();
    let parsed = occupancy_core::ptxas::parse_log(&log).unwrap();
    let barriers = |name: &str| -> u32 {
        let record = parsed
            .kernels
            .iter()
            .find(|record| {
                let demangled = record.demangled.as_deref().unwrap_or(&record.name);
                demangled.split('(').next() == Some(name)
            })
            .unwrap_or_else(|| panic!("{name} is not in the ptxas log"));
        record.barriers.unwrap()
    };
    rows.iter()
        .filter(|row| row[0] == "kernel")
        .map(|row| {
            let static_smem = u32::try_from(number(&row[3])).unwrap();
            let facts = KernelFacts {
                registers_per_thread: u32::try_from(number(&row[2])).unwrap(),
                static_smem_bytes: static_smem,
                barriers: barriers(&row[1]),
                max_threads_per_block: None,
                max_dynamic_smem_bytes: Some(optin - static_smem),
            };
            (row[1].clone(), facts)
        })
        .collect()
}

fn device_fact(rows: &[Vec<String>], name: &str) -> String {
    rows.iter()
        .find(|row| row[0] == "device" && row[1] == name)
        .unwrap_or_else(|| panic!("no device fact {name}"))[2]
        .clone()
}

#[derive(Default, Debug)]
struct Counts {
    blocks: usize,
    clusters: usize,
    refused: usize,
    potential: usize,
    coresident: usize,
}

/// One GPU's recording and what the calculator needs to answer its questions.
struct Replay<'a> {
    gpu: &'a GpuPreset,
    kernels: HashMap<String, KernelFacts>,
    counts: Counts,
}

impl Replay<'_> {
    /// The calculator's blocks per SM for a probe kernel at a block size and dynamic smem.
    fn blocks(&self, kernel: &str, block: &str, smem: &str) -> u32 {
        let launch = Launch {
            dynamic_smem_bytes: u32::try_from(number(smem)).unwrap(),
            ..Launch::new(u32::try_from(number(block)).unwrap())
        };
        blocks_per_sm(self.gpu.arch_facts(), &self.kernels[kernel], &launch)
    }

    /// `blocks,kernel,block,smem,status,blocks,portable status,portable,non-portable status,
    /// non-portable`: the per-SM answer and both potential cluster sizes.
    fn blocks_row(&mut self, row: &[String]) {
        let blocks = self.blocks(&row[1], &row[2], &row[3]);
        assert_eq!(
            (number(&row[4]), i64::from(blocks)),
            (0, number(&row[5])),
            "{row:?}"
        );
        let potential =
            |non_portable| i64::from(max_potential_cluster_size(self.gpu, blocks, non_portable));
        assert_eq!(potential(false), number(&row[7]), "{row:?}");
        assert_eq!(potential(true), number(&row[9]), "{row:?}");
        self.counts.blocks += 1;
        self.counts.potential += 2;
    }

    /// `clusters,kernel,block,smem,x,y,z,non-portable (0, 1 or compiled),status,clusters`.
    fn clusters_row(&mut self, row: &[String]) {
        let blocks = self.blocks(&row[1], &row[2], &row[3]);
        let size = [4, 5, 6]
            .iter()
            .map(|&i| u32::try_from(number(&row[i])).unwrap())
            .product();
        let answer = max_active_clusters(self.gpu, blocks, size, row[7] == "1");
        match number(&row[8]) {
            0 => {
                assert_eq!(
                    i64::from(answer.max_active_clusters),
                    number(&row[9]),
                    "{row:?}: {answer:?}"
                );
                self.counts.clusters += 1;
            }
            INVALID_CLUSTER_SIZE => {
                assert!(
                    matches!(
                        answer.problem,
                        Some(ClusterProblem::NeedsNonPortable { .. })
                    ),
                    "{row:?}"
                );
                assert_eq!(answer.max_active_clusters, 0);
                self.counts.refused += 1;
            }
            status => panic!("{row:?}: status {status}"),
        }
    }

    /// `coresident,blocks per SM,size,driver's clusters,launched,launch status,smem,gave up`:
    /// the driver's answer is the tool's, and exactly that many clusters ran at once.
    fn coresident_row(&mut self, row: &[String]) {
        let blocks = u32::try_from(number(&row[1])).unwrap();
        let size = u32::try_from(number(&row[2])).unwrap();
        let answer = max_active_clusters(self.gpu, blocks, size, true);
        assert_eq!(
            i64::from(answer.max_active_clusters),
            number(&row[3]),
            "{row:?}"
        );
        assert_eq!(number(&row[5]), 0, "{row:?}: the launch failed");
        let all_at_once = number(&row[7]) == 0;
        assert_eq!(all_at_once, number(&row[4]) <= number(&row[3]), "{row:?}");
        self.counts.coresident += 1;
    }
}

/// Replays one GPU's recording against `gpu`; returns how many answers of each kind were compared.
fn replay(gpu_dir: &str, gpu: &GpuPreset) -> Counts {
    let rows = read_probe(gpu_dir);
    assert_eq!(device_fact(&rows, "arch"), gpu.arch);
    assert_eq!(
        number(&device_fact(&rows, "sm_count")),
        i64::from(gpu.sm_count)
    );
    let optin = u32::try_from(number(&device_fact(&rows, "smem_per_block_optin"))).unwrap();
    let mut recorded_groups: Vec<u32> = rows
        .iter()
        .filter(|row| row[0] == "gpc")
        .map(|row| u32::try_from(number(&row[1])).unwrap())
        .collect();
    recorded_groups.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(
        Some(recorded_groups.as_slice()),
        gpu.cluster_groups,
        "{gpu_dir}: the layout recorded"
    );
    let mut replay = Replay {
        gpu,
        kernels: kernels(&rows, optin),
        counts: Counts::default(),
    };
    for row in &rows {
        match row[0].as_str() {
            "blocks" => replay.blocks_row(row),
            "clusters" => replay.clusters_row(row),
            "coresident" => replay.coresident_row(row),
            _ => {}
        }
    }
    replay.counts
}

#[test]
fn clusters_equal_the_recorded_h100_sxm_driver() {
    let counts = replay("h100-sxm", preset("h100-sxm").unwrap());
    assert!(counts.clusters >= 52_000, "{counts:?}");
    assert_eq!(counts.refused, 512, "{counts:?}");
    assert_eq!(counts.coresident, 160, "{counts:?}");
    assert!(counts.blocks >= 3_000, "{counts:?}");
}

#[test]
fn clusters_equal_the_recorded_h200_driver() {
    let counts = replay("h200", preset("h200").unwrap());
    assert!(counts.clusters >= 52_000, "{counts:?}");
    assert_eq!(counts.coresident, 160, "{counts:?}");
}
