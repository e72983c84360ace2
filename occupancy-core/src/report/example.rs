//! A small, realistic report for documentation, the renderers' snapshot tests and the CLI's
//! fixtures: three crates' worth of kernels (a streaming kernel at full occupancy, a
//! register-tiled GEMM in the Volkov regime, a kernel whose `__launch_bounds__` forces spills, a
//! kernel one register from a cliff, and a device function), with findings as the engine words
//! them. The computed columns are filled by [`KernelRow::compute`], never written by hand.

use super::model::{Finding, KernelRow, Location, LocationKind, Report};
use crate::arch;
use crate::lint::{Level, LintId};

/// The inputs of one example row; everything else is computed.
struct Example {
    crate_name: &'static str,
    name: &'static str,
    demangled: &'static str,
    entry: bool,
    registers: u32,
    static_smem_bytes: u64,
    stack_frame_bytes: u64,
    spill_bytes: (u64, u64),
    max_threads_per_block: Option<u32>,
    min_blocks_per_sm: Option<u32>,
    block: u32,
    source: (&'static str, u32),
    declaration: Option<(&'static str, u32)>,
}

fn location(kind: LocationKind, (path, line): (&str, u32)) -> Location {
    Location {
        kind,
        path: path.to_string(),
        line,
        column: 1,
    }
}

fn row(example: &Example, arch_name: &str) -> KernelRow {
    let mut row = KernelRow {
        crate_name: Some(example.crate_name.to_string()),
        demangled: example.demangled.to_string(),
        entry: example.entry,
        registers: example.registers,
        barriers: u32::from(example.entry),
        static_smem_bytes: example.static_smem_bytes,
        stack_frame_bytes: example.stack_frame_bytes,
        spill_store_bytes: example.spill_bytes.0,
        spill_load_bytes: example.spill_bytes.1,
        max_threads_per_block: example.max_threads_per_block,
        min_blocks_per_sm: example.min_blocks_per_sm,
        source: Some(location(LocationKind::CudaKernel, example.source)),
        declaration: example
            .declaration
            .map(|place| location(LocationKind::RustAttribute, place)),
        ..KernelRow::new(example.name, arch_name, example.block)
    };
    if let Ok(facts) = arch::lookup(arch_name) {
        row.compute(facts);
    }
    row
}

/// The example kernels.
const EXAMPLES: [Example; 5] = [
    Example {
        crate_name: "saxpy-kernels",
        name: "saxpy",
        demangled: "saxpy",
        entry: true,
        registers: 10,
        static_smem_bytes: 0,
        stack_frame_bytes: 0,
        spill_bytes: (0, 0),
        max_threads_per_block: None,
        min_blocks_per_sm: None,
        block: 256,
        source: ("saxpy-kernels/kernels/saxpy.cu", 3),
        declaration: Some(("saxpy-kernels/src/lib.rs", 8)),
    },
    Example {
        crate_name: "gemm-kernels",
        name: "_Z11sgemm_tiledILi128ELi8EEviiiPKfS1_Pf",
        demangled: "void sgemm_tiled<128, 8>(int, int, int, float const*, float const*, float*)",
        entry: true,
        registers: 128,
        static_smem_bytes: 16384,
        stack_frame_bytes: 0,
        spill_bytes: (0, 0),
        max_threads_per_block: Some(256),
        min_blocks_per_sm: None,
        block: 256,
        source: ("gemm-kernels/kernels/sgemm.cu", 41),
        declaration: Some(("gemm-kernels/src/lib.rs", 15)),
    },
    Example {
        crate_name: "gemm-kernels",
        name: "_Z13reduce_spillsPKfPfi",
        demangled: "reduce_spills(float const*, float*, int)",
        entry: true,
        registers: 32,
        static_smem_bytes: 1024,
        stack_frame_bytes: 128,
        spill_bytes: (120, 120),
        max_threads_per_block: Some(256),
        min_blocks_per_sm: Some(8),
        block: 256,
        source: ("gemm-kernels/kernels/reduce.cu", 12),
        declaration: Some(("gemm-kernels/src/lib.rs", 27)),
    },
    Example {
        crate_name: "gemm-kernels",
        name: "_Z9warp_sumf",
        demangled: "warp_sum(float)",
        entry: false,
        registers: 8,
        static_smem_bytes: 0,
        stack_frame_bytes: 0,
        spill_bytes: (0, 0),
        max_threads_per_block: None,
        min_blocks_per_sm: None,
        block: 0,
        source: ("gemm-kernels/kernels/reduce.cu", 4),
        declaration: None,
    },
    Example {
        crate_name: "histo",
        name: "histogram",
        demangled: "histogram",
        entry: true,
        registers: 40,
        static_smem_bytes: 4096,
        stack_frame_bytes: 0,
        spill_bytes: (0, 0),
        max_threads_per_block: None,
        min_blocks_per_sm: None,
        block: 256,
        source: ("histo/kernels/histogram.cu", 9),
        declaration: Some(("histo/src/lib.rs", 5)),
    },
];

/// The example report (sm_80 and sm_90).
pub fn example_report() -> Report {
    let mut report = Report::default();
    for example in &EXAMPLES {
        for arch_name in ["sm_80", "sm_90"] {
            report.kernels.push(row(example, arch_name));
        }
    }
    report.findings = example_findings();
    report
}

/// The findings of the example kernels, as the engine words them.
fn example_findings() -> Vec<Finding> {
    let mut findings = Vec::new();
    let attribute =
        |path: &str, line: u32| Some(location(LocationKind::RustAttribute, (path, line)));
    for arch_name in ["sm_80", "sm_90"] {
        findings.push(Finding {
            lint: LintId::Spills,
            level: Level::Deny,
            crate_name: Some("gemm-kernels".to_string()),
            kernel: Some("_Z13reduce_spillsPKfPfi".to_string()),
            arch: Some(arch_name.to_string()),
            message: format!(
                "kernel `reduce_spills` spills 120 bytes per thread on {arch_name} (max_spill_bytes = 0)"
            ),
            notes: vec![
                "ptxas: 32 registers, 120 bytes spill stores, 120 bytes spill loads, 128 bytes stack frame".to_string(),
                "`min_blocks_per_sm = 8` with block = 256 leaves ptxas 32 registers per thread".to_string(),
            ],
            help: Some("lower `min_blocks_per_sm`, or allow the spills with `max_spill_bytes = 120`".to_string()),
            location: attribute("gemm-kernels/src/lib.rs", 27),
            reason: None,
        });
    }
    findings.push(Finding {
        lint: LintId::StackFrame,
        level: Level::Warn,
        crate_name: Some("gemm-kernels".to_string()),
        kernel: Some("_Z13reduce_spillsPKfPfi".to_string()),
        arch: Some("sm_90".to_string()),
        message: "kernel `reduce_spills` uses a 128-byte stack frame on sm_90".to_string(),
        notes: Vec::new(),
        help: Some("set `max_stack_bytes = 128` to accept it".to_string()),
        location: attribute("gemm-kernels/src/lib.rs", 27),
        reason: None,
    });
    findings.push(Finding {
        lint: LintId::OccupancyCliff,
        level: Level::Warn,
        crate_name: Some("histo".to_string()),
        kernel: Some("histogram".to_string()),
        arch: Some("sm_90".to_string()),
        message: "kernel `histogram` is 1 register from losing a block on sm_90 (41 registers: 5 blocks instead of 6)".to_string(),
        notes: vec!["40 registers × 256 threads: registers bind at 6 blocks/SM (75.0%)".to_string()],
        help: Some("cap registers with `max_registers = 40` to keep 6 blocks".to_string()),
        location: attribute("histo/src/lib.rs", 5),
        reason: None,
    });
    findings.push(Finding {
        lint: LintId::LowOccupancy,
        level: Level::Allow,
        crate_name: Some("gemm-kernels".to_string()),
        kernel: Some("_Z11sgemm_tiledILi128ELi8EEviiiPKfS1_Pf".to_string()),
        arch: Some("sm_90".to_string()),
        message: "kernel `sgemm_tiled<128, 8>` reaches 25.0% occupancy on sm_90, below min_occupancy = 0.5".to_string(),
        notes: vec!["allowed by `allow(low_occupancy)` on the declaration: register tiling".to_string()],
        help: None,
        location: attribute("gemm-kernels/src/lib.rs", 15),
        reason: None,
    });
    findings
}
