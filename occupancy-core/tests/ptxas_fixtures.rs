//! Real compiler output (nvcc 13.0, ptxas 12.9 and 11.8, cuobjdump 13.2: `fixtures/ptxas/generate.sh`
//! says exactly how each was made) and CUDA 9/10/11-era excerpts quoted from public build logs
//! (each file's header cites its source), parsed and snapshotted.

use occupancy_core::ptxas::{
    cuobjdump_reserved_shared_bytes, parse_cuobjdump_resource_usage, parse_log, KernelRecord,
    LogParser, ParseError, RecordSource,
};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/ptxas/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Compile times differ from machine to machine; snapshots keep only whether one was printed.
fn snapshot_records(records: &[KernelRecord]) -> serde_json::Value {
    let mut value = serde_json::to_value(records).unwrap();
    for record in value.as_array_mut().unwrap() {
        if !record["compile_time_ms"].is_null() {
            record["compile_time_ms"] = "[measured]".into();
        }
    }
    value
}

#[test]
fn every_fixture_parses_without_diagnostics_and_matches_its_snapshot() {
    for name in [
        "nvcc13_multiarch.log",
        "nvcc13_resource_usage.log",
        "nvcc13_rdc.log",
        "nvcc13_debug.log",
        "nvcc13_fails_to_compile.log",
        "ptxas129_legacy.log",
        "ptxas118.log",
        "cuda11_cudaminer_textures.log",
        "cuda10_smfft_sm70.log",
        "cuda10_kmcuda_sm61.log",
        "cuda9_msbuild_sm50.log",
    ] {
        let output = parse_log(&fixture(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(
            output.diagnostics.is_empty(),
            "{name}: {:#?}",
            output.diagnostics
        );
        assert!(output.kernels.iter().all(|record| record.entry), "{name}");
        assert!(output.callees.iter().all(|record| !record.entry), "{name}");
        // Kernels and callees merged back in log order: the snapshots of the log as a whole.
        let mut records = [output.kernels, output.callees].concat();
        records.sort_by_key(|record| record.line_number);
        insta::assert_json_snapshot!(name, snapshot_records(&records));
    }
}

#[test]
fn old_formats_have_no_barrier_count_and_new_ones_do() {
    for name in [
        "ptxas118.log",
        "cuda10_smfft_sm70.log",
        "cuda10_kmcuda_sm61.log",
        "cuda9_msbuild_sm50.log",
    ] {
        let output = parse_log(&fixture(name)).unwrap();
        assert!(
            output
                .kernels
                .iter()
                .all(|record| record.barriers.is_none()),
            "{name}"
        );
    }
    let modern = parse_log(&fixture("nvcc13_multiarch.log")).unwrap();
    assert!(modern
        .kernels
        .iter()
        .filter(|record| record.entry)
        .all(|record| record.barriers.is_some()));
}

#[test]
fn multiarch_log_has_every_arch_and_named_barriers() {
    let output = parse_log(&fixture("nvcc13_multiarch.log")).unwrap();
    for arch in ["sm_75", "sm_80", "sm_90", "sm_120"] {
        assert!(
            output.kernels.iter().any(|record| record.arch == arch),
            "{arch}"
        );
    }
    let named = output
        .kernels
        .iter()
        .find(|record| record.name == "named_barriers" && record.arch == "sm_90")
        .unwrap();
    assert_eq!(named.barriers, Some(6), "bar.sync 5 means barriers 0..=5");
    let spill = output
        .kernels
        .iter()
        .find(|record| record.name.contains("window_sumILi3") && record.arch == "sm_90")
        .unwrap();
    assert!(spill.spill_store_bytes > Some(0));
    assert_eq!(
        spill.warnings.len(),
        2,
        "spill and local-memory warnings: {:?}",
        spill.warnings
    );
    assert_eq!(
        spill.demangled.as_deref(),
        Some("void corpus::spills::window_sum<3>(float*, float const*)")
    );
}

#[test]
fn msbuild_prefixed_log_keeps_device_functions_between_entries() {
    let output = parse_log(&fixture("cuda9_msbuild_sm50.log")).unwrap();
    let mut records = [output.kernels.clone(), output.callees].concat();
    records.sort_by_key(|record| record.line_number);
    let kinds: Vec<(&str, bool)> = records
        .iter()
        .map(|record| (record.name.as_str(), record.entry))
        .collect();
    assert_eq!(kinds.len(), 4);
    assert_eq!(kinds[2], ("cudaMalloc", false));
    assert!(records.iter().all(|record| record.arch == "sm_50"));
    assert_eq!(
        output.kernels[0].cumulative_stack,
        Some(occupancy_core::ptxas::StackSize::Bytes(312))
    );
}

#[test]
fn failed_compile_attaches_the_error_to_its_kernel() {
    let output = parse_log(&fixture("nvcc13_fails_to_compile.log")).unwrap();
    let too_big = output
        .kernels
        .iter()
        .find(|record| record.name == "too_big")
        .unwrap();
    assert_eq!(too_big.errors.len(), 1);
    assert!(!output.errors.is_empty());
}

#[test]
fn cuobjdump_agrees_with_the_ptxas_log_of_the_same_build() {
    // Both fixtures come from shared_memory.cu with the same four -gencode options.
    let log = parse_log(&fixture("nvcc13_multiarch.log")).unwrap();
    let dump = parse_cuobjdump_resource_usage(&fixture("cuobjdump_shared_memory.txt")).unwrap();
    assert_eq!(dump.len(), 5 * 4);
    for function in &dump {
        let arch = function.arch.as_deref().unwrap();
        let record = log
            .kernels
            .iter()
            .find(|record| record.name == function.name && record.arch == arch)
            .unwrap();
        assert_eq!(
            record.registers,
            Some(function.registers),
            "{} {arch}",
            function.name
        );
        let reserve = cuobjdump_reserved_shared_bytes(arch, record.static_smem_bytes, true, false);
        assert_eq!(
            function.shared_bytes,
            record.static_smem_bytes + reserve,
            "{} {arch}",
            function.name
        );
    }
}

#[test]
fn resource_usage_source_is_recorded() {
    let mut parser = LogParser::with_source(RecordSource::NvccResourceUsage);
    for line in fixture("nvcc13_resource_usage.log").lines() {
        parser.feed_line(line);
    }
    let output = parser.finish().unwrap();
    assert!(output
        .kernels
        .iter()
        .all(|record| record.source == RecordSource::NvccResourceUsage));
}

#[test]
fn every_cut_of_a_real_log_is_records_or_a_truncation_naming_a_kernel() {
    let text = fixture("nvcc13_debug.log");
    let full = parse_log(&text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for cut in 0..lines.len() {
        match parse_log(&lines[..cut].join("\n")) {
            // A cut may fall before a record's optional `Compile time` line; all else must match.
            Ok(output) => assert!(
                output
                    .kernels
                    .iter()
                    .all(|record| full.kernels.iter().any(|known| KernelRecord {
                        compile_time_ms: known.compile_time_ms,
                        ..record.clone()
                    } == *known)),
                "cut at {cut}"
            ),
            Err(ParseError::Truncated { name, .. }) => {
                assert!(full
                    .kernels
                    .iter()
                    .chain(&full.callees)
                    .any(|record| record.name == name))
            }
            Err(ParseError::NoKernels { .. }) => {}
            Err(other) => panic!("cut at {cut}: {other}"),
        }
    }
}
