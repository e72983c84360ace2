//! `grid_exceeds_resident` on compiled kernels of several architectures: a kernel over the
//! assumption and one within it, per SM and per GPU.

use super::*;
use crate::arch::lookup;
use crate::calc::{occupancy, KernelFacts, Launch, Occupancy};
use crate::ptxas::{parse_log, KernelRecord};
use crate::spec::BlockDim;

/// ptxas's report of `persist` on `arch` at `registers` per thread, no spills.
fn record(arch: &str, registers: u32) -> KernelRecord {
    let log = format!(
        "ptxas info    : Compiling entry function 'persist' for '{arch}'\nptxas info    : Function properties for persist\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used {registers} registers, used 1 barriers\n"
    );
    parse_log(&log).unwrap().kernels.remove(0)
}

/// The kernel's records and the calculator's answers at `block` threads on each arch.
fn compiled(archs: &[&str], registers: u32, block: u32) -> Vec<(KernelRecord, Occupancy)> {
    archs
        .iter()
        .map(|arch| {
            let record = record(arch, registers);
            let facts = KernelFacts {
                registers_per_thread: registers,
                static_smem_bytes: 0,
                barriers: 1,
                max_threads_per_block: None,
                max_dynamic_smem_bytes: None,
            };
            let result = occupancy(lookup(arch).unwrap(), &facts, &Launch::new(block));
            (record, result)
        })
        .collect()
}

fn findings(spec: &KernelSpec, kernels: &[(KernelRecord, Occupancy)]) -> Vec<Finding> {
    let on: Vec<CompiledOnArch<'_>> = kernels
        .iter()
        .map(|(record, result)| CompiledOnArch {
            arch: lookup(&record.arch).unwrap(),
            record,
            ptx: None,
            occupancy: result,
            chosen: None,
        })
        .collect();
    let mut found = Vec::new();
    grid_exceeds_resident(spec, &on, LaunchOrigin::Declaration, &mut found);
    found
}

fn spec(change: impl FnOnce(&mut KernelSpec)) -> KernelSpec {
    let mut spec = KernelSpec::with_block(BlockDim::linear(512));
    spec.launch = Some("cooperative".into());
    change(&mut spec);
    spec
}

/// 512 threads at 32 registers: 4 blocks on an SM of 2048 threads (sm_80, sm_90), 3 on one of
/// 1536 (sm_86). A launcher that assumes 4 per SM is right on an A100 and an H100, wrong on an
/// A10; one that assumes 3 is right everywhere.
#[test]
fn an_assumed_blocks_per_sm_is_checked_on_every_arch() {
    let kernels = compiled(&["sm_80", "sm_86", "sm_90"], 32, 512);
    let four = findings(&spec(|spec| spec.grid_blocks_per_sm = Some(4)), &kernels);
    assert_eq!(four.len(), 1, "{four:#?}");
    let finding = &four[0];
    assert_eq!(finding.lint, LintId::GridExceedsResident);
    assert_eq!(finding.arch.as_deref(), Some("sm_86"));
    assert_eq!(
        finding.message,
        "kernel `persist` is launched with 4 blocks per SM (`launch = \"cooperative\"`, `grid_blocks_per_sm = 4`), but only 3 blocks of 512 threads are resident per SM on sm_86"
    );
    assert!(
        finding.notes[2].contains("cudaErrorCooperativeLaunchTooLarge"),
        "{:#?}",
        finding.notes
    );
    let help = finding.help.as_deref().unwrap();
    assert!(help.contains("lower `grid_blocks_per_sm` to 3"), "{help}");
    assert!(help.contains("persistent_grid(arch, sm_count)"), "{help}");
    assert!(findings(&spec(|spec| spec.grid_blocks_per_sm = Some(3)), &kernels).is_empty());
}

/// A grid of 528 blocks (4 per SM on an H100 SXM's 132 SMs) on an H100 and an H20 (78 SMs: at
/// most 312 resident), and on an L4, whose sm_89 was not compiled.
#[test]
fn a_fixed_grid_is_checked_on_every_gpu_at_its_sm_count() {
    let kernels = compiled(&["sm_80", "sm_90"], 32, 512);
    let gpus = |names: &[&str]| Some(names.iter().map(|name| name.to_string()).collect());
    let persistent = |grid: u32, names: &[&str]| {
        spec(|spec| {
            spec.launch = Some("persistent".into());
            spec.grid_blocks = Some(grid);
            spec.gpus = gpus(names);
        })
    };
    let found = findings(&persistent(528, &["h100", "h20"]), &kernels);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].message,
        "kernel `persist` is launched with 528 blocks (`launch = \"persistent\"`, `grid_blocks = 528`), but at most 312 are resident on the H20 (`h20`: 78 SMs x 4 blocks per SM on sm_90)"
    );
    assert!(
        found[0].notes[1].starts_with("the H20 has 78 SMs: "),
        "{:#?}",
        found[0].notes
    );
    assert!(
        found[0].notes[2].contains("deadlocks"),
        "{:#?}",
        found[0].notes
    );
    let help = found[0].help.as_deref().unwrap();
    assert!(help.contains("lower `grid_blocks` to 312"), "{help}");
    // Within every GPU's residency: nothing. The A100: 108 SMs x 4 = 432 on sm_80.
    assert!(findings(&persistent(312, &["h100", "h20", "a100"]), &kernels).is_empty());
    assert!(findings(&persistent(432, &["a100"]), &kernels).is_empty());
    let a100 = findings(&persistent(433, &["a100", "h100"]), &kernels);
    assert_eq!(a100.len(), 1, "{a100:#?}");
    assert_eq!(a100[0].arch.as_deref(), Some("sm_80"));
    // A GPU whose architecture the kernel was not compiled for: not checked, and said so.
    let l4 = findings(&persistent(1, &["l4"]), &kernels);
    assert_eq!(l4.len(), 1, "{l4:#?}");
    assert_eq!(l4[0].arch.as_deref(), Some("sm_89"));
    assert!(
        l4[0]
            .message
            .contains("cannot be checked: the build compiled it for sm_80, sm_90 only"),
        "{}",
        l4[0].message
    );
    assert!(l4[0].help.as_deref().unwrap().contains("add `sm_89`"));
    // Without a fixed grid, nothing is checked per GPU: naming one of another arch is no finding
    // (its facts in occupancy_facts.h say it was not compiled).
    let per_sm = spec(|spec| {
        spec.grid_blocks_per_sm = Some(4);
        spec.gpus = gpus(&["l4", "h20"]);
    });
    assert!(findings(&per_sm, &kernels).is_empty());
}

/// Without `launch`, a grid larger than what fits runs in waves: nothing to check (the grammar
/// refuses the grid keys without it; a spec made otherwise still gets no finding).
#[test]
fn an_ordinary_launch_is_not_checked() {
    let kernels = compiled(&["sm_86"], 32, 512);
    let mut ordinary = spec(|spec| spec.grid_blocks_per_sm = Some(8));
    ordinary.launch = None;
    assert!(findings(&ordinary, &kernels).is_empty());
}
