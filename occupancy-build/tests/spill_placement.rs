//! The trade-off kernels that `scripts/gpu-verify.sh` times on a GPU (`tests/fixtures/gpu/
//! spill_placement.cu`, docs/verification.md section 6) keep the shape the timing is about,
//! as the build engine reads them with the real nvcc and the real SASS (scripts/setup-cuda.sh
//! installs both; this test fails, never skips, without them): the loop kernels get
//! `spill_in_loop`, the cold-path kernels get `spills` but not `spill_in_loop`, the reference
//! gets neither, and ptxas's spill bytes alone cannot tell the two kinds apart.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use occupancy_build::Error;
use occupancy_core::lint::LintId;
use occupancy_core::report::{KernelRow, Report};

const LOOP_KERNELS: [&str; 3] = [
    "placement_loop_spill_m5",
    "placement_loop_spill_m6",
    "placement_loop_spill_m8",
];
const COLD_KERNELS: [&str; 3] = [
    "placement_cold_spill_k48",
    "placement_cold_spill_k64",
    "placement_cold_spill_k96",
];
const REFERENCE: &str = "placement_reference";
/// The cold path's check with a diagnostic that fits in registers: no spill.
const COLD_CHECK: &str = "placement_cold_check_k16";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("tests/fixtures/gpu/spill_placement.cu")
}

/// The fixture built once for sm_90 as a kernel crate's build.rs would, every kernel declared at
/// the block it is launched with: the build's report.
fn build_report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(build_fixture)
}

fn build_fixture() -> Report {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("spill-placement");
    let declarations: String = LOOP_KERNELS
        .iter()
        .chain(&COLD_KERNELS)
        .chain(&[REFERENCE, COLD_CHECK])
        .map(|name| format!("#[occupancy::kernel(block = 256)]\nfn {name}();\n"))
        .collect();
    // A workspace of its own: the package lies under this repository's target/, inside its
    // workspace, and cargo (whose `cargo metadata` the build reads settings with) refuses that.
    let (pkg, out) = common::scratch_package(&dir, "\n[workspace]\n", &declarations);
    std::fs::copy(fixture(), pkg.join("kernels/spill_placement.cu")).unwrap();
    // The reference has no local memory, so no lint needs its SASS: ask for every kernel's.
    let mut env = occupancy_build::TrackedEnv::new();
    env.set("OCCUPANCY_SASS", Some("all"));
    let mut build = common::package_build(&pkg, &out);
    build
        .env(env)
        .file("kernels/spill_placement.cu")
        .arch("sm_90");
    match build.try_compile_ptx() {
        Err(Error::Denied { .. }) => {}
        Ok(_) => panic!("the spilling kernels must fail the build (spills is deny by default)"),
        Err(error) => panic!("{error}"),
    }
    Report::from_json(&std::fs::read_to_string(out.join("occupancy.json")).unwrap()).unwrap()
}

fn lints_by_kernel(report: &Report) -> BTreeMap<String, BTreeSet<LintId>> {
    let mut lints: BTreeMap<String, BTreeSet<LintId>> = BTreeMap::new();
    for finding in &report.findings {
        if let Some(kernel) = &finding.kernel {
            lints
                .entry(kernel.clone())
                .or_default()
                .insert(finding.lint);
        }
    }
    lints
}

fn row<'a>(report: &'a Report, kernel: &str) -> &'a KernelRow {
    report
        .kernels
        .iter()
        .find(|row| row.name == kernel && row.arch == "sm_90")
        .unwrap_or_else(|| panic!("no sm_90 row for {kernel}"))
}

/// Instructions of each loop of the kernel's SASS.
fn loop_sizes(row: &KernelRow) -> Vec<u32> {
    let sass = row.sass.as_ref().expect("the SASS was read");
    sass.loops.iter().map(|found| found.instructions).collect()
}

fn spill_bytes(row: &KernelRow) -> u64 {
    row.spill_store_bytes + row.spill_load_bytes
}

#[test]
fn loop_spills_get_spill_in_loop_and_cold_spills_do_not() {
    let report = build_report();
    let lints = lints_by_kernel(report);
    let lints_of = |kernel: &str| lints.get(kernel).cloned().unwrap_or_default();
    for kernel in LOOP_KERNELS {
        let found = lints_of(kernel);
        assert!(
            found.contains(&LintId::Spills) && found.contains(&LintId::SpillInLoop),
            "{kernel}: {found:?}"
        );
    }
    for kernel in COLD_KERNELS {
        let found = lints_of(kernel);
        assert!(found.contains(&LintId::Spills), "{kernel}: {found:?}");
        assert!(!found.contains(&LintId::SpillInLoop), "{kernel}: {found:?}");
    }
    for kernel in [REFERENCE, COLD_CHECK] {
        let found = lints_of(kernel);
        assert!(
            !found.contains(&LintId::Spills) && !found.contains(&LintId::SpillInLoop),
            "{kernel}: {found:?}"
        );
    }
}

#[test]
fn the_sass_puts_every_spill_where_the_kernel_says() {
    let report = build_report();
    let reference_loops = loop_sizes(row(report, REFERENCE));
    for kernel in LOOP_KERNELS
        .iter()
        .chain(&COLD_KERNELS)
        .chain(&[REFERENCE, COLD_CHECK])
    {
        let row = row(report, kernel);
        let sass = row
            .sass
            .as_ref()
            .unwrap_or_else(|| panic!("{kernel}: the SASS was not read"));
        let in_loops = sass.spill_loads_in_loops + sass.spill_stores_in_loops;
        let all = sass.spill_loads + sass.spill_stores;
        match *kernel {
            REFERENCE | COLD_CHECK => assert_eq!((spill_bytes(row), all), (0, 0), "{kernel}"),
            kernel if kernel.contains("loop") => {
                assert!(in_loops > 0, "{kernel}: {in_loops} of {all} in loops")
            }
            kernel => {
                assert!(all > 0 && in_loops == 0, "{kernel}: {in_loops} of {all}");
                // The cold path leaves the hot loop as it is: the reference's machine code.
                assert_eq!(loop_sizes(row), reference_loops, "{kernel}");
            }
        }
    }
}

#[test]
fn ptxas_bytes_alone_do_not_tell_loop_spills_from_cold_ones() {
    // What the GPU timing is about: the largest cold-path spill is larger than the smallest loop
    // spill, and the cold kernels keep the reference's occupancy (4 blocks of 256 threads per SM),
    // so neither spill bytes nor occupancy explain the loop kernels' slowdown.
    let report = build_report();
    let smallest_loop = LOOP_KERNELS
        .iter()
        .map(|kernel| spill_bytes(row(report, kernel)))
        .min()
        .unwrap();
    let largest_cold = COLD_KERNELS
        .iter()
        .map(|kernel| spill_bytes(row(report, kernel)))
        .max()
        .unwrap();
    assert!(
        largest_cold > smallest_loop,
        "cold {largest_cold} B vs loop {smallest_loop} B"
    );
    let blocks = |kernel: &str| row(report, kernel).blocks_per_sm;
    for kernel in COLD_KERNELS.iter().chain(&[COLD_CHECK]) {
        assert_eq!(blocks(kernel), blocks(REFERENCE), "{kernel}");
    }
    for kernel in LOOP_KERNELS {
        assert!(blocks(kernel) > blocks(REFERENCE), "{kernel}");
    }
}
