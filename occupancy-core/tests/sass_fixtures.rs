//! The SASS reader on real captured disassembly (`tests/fixtures/sass/`, made by nvcc 13.0 with
//! `-lineinfo` and nvdisasm 13.2.51: see the README there), checked against facts read by hand
//! from the same files and against ptxas's own figures in the captured logs.

use occupancy_core::sass::{analyze, LocalKind, SassFacts};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/sass/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

fn facts(name: &str, spilling: &[&str]) -> Vec<SassFacts> {
    analyze(&fixture(name), |kernel| spilling.contains(&kernel)).unwrap()
}

fn kernel<'a>(all: &'a [SassFacts], name: &str) -> &'a SassFacts {
    all.iter()
        .find(|facts| facts.kernel == name)
        .unwrap_or_else(|| panic!("no kernel {name}"))
}

fn evidence() -> Vec<SassFacts> {
    facts(
        "sass_evidence.sm_90.nvdisasm",
        &["loop_spill", "cold_spill"],
    )
}

#[test]
fn every_kernel_of_the_cubin_is_read() {
    let mut names: Vec<String> = evidence().into_iter().map(|facts| facts.kernel).collect();
    names.sort();
    assert_eq!(
        names,
        ["cold_spill", "fp64_sin", "local_array", "loop_spill"]
    );
}

#[test]
fn loop_spill_spills_inside_its_loop_at_the_loop_body_line() {
    let all = evidence();
    let facts = kernel(&all, "loop_spill");
    // ptxas: 316 bytes spill stores = 79 four-byte STL.
    assert_eq!(facts.spill_store_bytes, 316);
    assert_eq!((facts.spill_stores, facts.spill_loads), (79, 79));
    assert_eq!(
        (facts.spill_stores_in_loops, facts.spill_loads_in_loops),
        (39, 39)
    );
    assert_eq!(facts.loops.len(), 1);
    assert_eq!((facts.loops[0].depth, facts.loops[0].line), (1, Some(8)));
    let hottest = facts.hottest_spill().unwrap();
    assert_eq!((hottest.line, hottest.loop_depth), (12, 1));
    assert!(hottest.file.ends_with("tests/kernels/sass_evidence.cu"));
}

#[test]
fn cold_spill_spills_only_outside_loops() {
    let all = evidence();
    let facts = kernel(&all, "cold_spill");
    assert_eq!(facts.spill_store_bytes, 48, "ptxas: 48 bytes spill stores");
    assert_eq!(facts.spill_stores_in_loops + facts.spill_loads_in_loops, 0);
    assert_eq!(
        facts.loops.len(),
        2,
        "the sum loop, unrolled by 4 plus its remainder"
    );
    assert!(facts
        .loops
        .iter()
        .all(|found| found.spill_loads + found.spill_stores == 0));
    assert_eq!(facts.hottest_spill().unwrap().loop_depth, 0);
}

#[test]
fn a_run_time_index_is_a_local_array_not_a_spill() {
    let all = evidence();
    let facts = kernel(&all, "local_array");
    assert_eq!(facts.spill_stores + facts.spill_loads, 0);
    assert_eq!(
        facts.local_array_accesses, 13,
        "8 STL.128 fill it, 5 LDL index it"
    );
    assert_eq!(facts.local_stores_by_width.get(&128), Some(&8));
    let hottest = facts.hottest_local_array().unwrap();
    assert_eq!(
        (hottest.line, hottest.loop_depth, hottest.loads),
        (39, 1, 5)
    );
}

#[test]
fn double_sin_calls_the_trig_slow_path_and_counts_fp64() {
    let all = evidence();
    let facts = kernel(&all, "fp64_sin");
    assert_eq!(facts.calls.len(), 1);
    let call = &facts.calls[0];
    assert_eq!(call.callee, "__internal_trig_reduction_slowpathd");
    assert!(call
        .what
        .as_deref()
        .unwrap()
        .contains("double-precision sin/cos"));
    assert_eq!(call.callee_local_accesses, 5);
    assert_eq!(facts.fp64_instructions, 17);
}

#[test]
fn device_frames_name_their_callees() {
    let all = facts("device_frames.sm_90.nvdisasm", &[]);
    let member = kernel(&all, "_Z12calls_memberPfPKfi");
    let mut callees: Vec<&str> = member
        .calls
        .iter()
        .map(|call| call.callee.as_str())
        .collect();
    callees.sort_unstable();
    assert_eq!(
        callees,
        [
            "_ZN6corpus6frames6gatherEPKfi",
            "_ZNK6corpus6frames11Accumulator5totalEi"
        ]
    );
    assert!(member.calls.iter().all(|call| call.what.is_none()));
    assert_eq!(member.spill_stores, 0);
}

#[test]
fn setmaxnreg_is_read_and_missing_where_ptxas_ignored_it() {
    let all = facts("setmaxnreg.sm_90a.nvdisasm", &[]);
    let specialized = kernel(&all, "warp_specialized");
    let mut budgets: Vec<(u32, bool)> = specialized
        .setmaxnreg
        .iter()
        .map(|found| (found.registers, found.increase))
        .collect();
    budgets.sort_unstable();
    assert_eq!(budgets, [(40, false), (232, true)]);
    assert!(kernel(&all, "unbounded_setmaxnreg").setmaxnreg.is_empty());
    assert!(fixture("setmaxnreg.sm_90a.ptxas.log").contains("(C7508)"));
}

#[test]
fn loops_of_the_inlined_helper_are_found() {
    let all = facts("setmaxnreg.sm_90a.nvdisasm", &[]);
    let specialized = kernel(&all, "warp_specialized");
    assert!(!specialized.loops.is_empty());
    assert!(specialized.loops.iter().all(|found| found.line.is_some()));
}

#[test]
fn kinds_are_exhaustive_in_line_groups() {
    for facts in evidence() {
        for group in &facts.lines {
            assert!(matches!(
                group.kind,
                LocalKind::Spill | LocalKind::LocalArray | LocalKind::StackData
            ));
            assert!(group.loads + group.stores > 0);
        }
    }
}

/// Code read without a line table (compiled without `-lineinfo`: a binary's) keeps every local
/// access, grouped under one line that names none, so the findings that point at a line still
/// stand and say the line is unknown; the counts are those read with lines.
#[test]
fn code_without_a_line_table_keeps_its_accesses_at_an_unknown_line() {
    let text: String = fixture("sass_evidence.sm_90.nvdisasm")
        .lines()
        .filter(|line| !line.trim_start().starts_with("//## File"))
        .map(|line| format!("{line}\n"))
        .collect();
    let spilling = ["loop_spill", "cold_spill"];
    let without = analyze(&text, |kernel| spilling.contains(&kernel)).unwrap();
    let with = evidence();
    for name in ["loop_spill", "cold_spill", "local_array"] {
        let (lined, unlined) = (kernel(&with, name), kernel(&without, name));
        assert_eq!(
            (unlined.spill_loads_in_loops, unlined.spill_stores_in_loops),
            (lined.spill_loads_in_loops, lined.spill_stores_in_loops),
            "{name}"
        );
        assert_eq!(
            unlined.local_array_accesses, lined.local_array_accesses,
            "{name}"
        );
        assert!(
            unlined
                .lines
                .iter()
                .all(|group| group.file.is_empty() && group.line == 0),
            "{name}: {:?}",
            unlined.lines
        );
        let count = |facts: &SassFacts| -> u32 {
            facts
                .lines
                .iter()
                .map(|group| group.loads + group.stores)
                .sum()
        };
        assert_eq!(count(unlined), count(lined), "{name}: every access kept");
    }
    let hottest = kernel(&without, "loop_spill").hottest_spill().unwrap();
    assert_eq!(hottest.loop_depth, 1, "still inside its loop");
    let array = kernel(&without, "local_array")
        .hottest_local_array()
        .unwrap();
    assert!(array.file.is_empty());
}
