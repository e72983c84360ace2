//! `cargo occupancy parse` run as a binary on real compiler logs (the fixtures of
//! `occupancy-core`), on stdin, and on garbage.

mod common;

use common::{run_with_stdin, stderr, stdout};
use std::process::Output;

fn cargo_occupancy(args: &[&str], stdin: Option<&str>) -> Output {
    run_with_stdin(args, stdin.unwrap_or(""))
}

fn fixture(name: &str) -> String {
    format!(
        "{}/../occupancy-core/tests/fixtures/ptxas/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn json_has_the_contract_fields_as_integers() {
    let output = cargo_occupancy(
        &[
            "occupancy",
            "parse",
            "--json",
            &fixture("nvcc13_multiarch.log"),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let kernels = json["kernels"].as_array().unwrap();
    assert!(kernels.len() > 20);
    for kernel in kernels.iter().filter(|kernel| kernel["entry"] == true) {
        assert!(kernel["name"].is_string() && kernel["arch"].as_str().unwrap().starts_with("sm_"));
        assert!(kernel.get("demangled").is_some());
        for key in [
            "registers",
            "barriers",
            "static_smem_bytes",
            "stack_frame_bytes",
            "spill_store_bytes",
            "spill_load_bytes",
        ] {
            assert!(kernel[key].is_u64(), "{key} of {kernel}");
        }
    }
    let spill = kernels
        .iter()
        .find(|kernel| {
            kernel["name"] == "_ZN6corpus6spills10window_sumILi3EEEvPfPKf"
                && kernel["arch"] == "sm_90"
        })
        .unwrap();
    assert_eq!(
        spill["demangled"],
        "void corpus::spills::window_sum<3>(float*, float const*)"
    );
    assert!(spill["spill_store_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn table_is_the_default_and_stdin_is_read_with_a_dash() {
    let log = std::fs::read_to_string(fixture("cuda10_kmcuda_sm61.log")).unwrap();
    let output = cargo_occupancy(&["parse", "-"], Some(&log));
    assert!(output.status.success(), "{}", stderr(&output));
    insta::assert_snapshot!("table_kmcuda", stdout(&output));
}

#[test]
fn block_adds_occupancy_from_the_calculator() {
    let output = cargo_occupancy(
        &[
            "parse",
            "--block",
            "256",
            &fixture("cuda10_kmcuda_sm61.log"),
        ],
        None,
    );
    assert!(output.status.success(), "{}", stderr(&output));
    insta::assert_snapshot!("table_kmcuda_block_256", stdout(&output));
    let output = cargo_occupancy(
        &[
            "parse",
            "--json",
            "--arch",
            "sm_86",
            "--block",
            "128",
            &fixture("cuda10_kmcuda_sm61.log"),
        ],
        None,
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let occupancy = &json["kernels"][0]["occupancy"];
    assert_eq!(occupancy["arch"], "sm_86");
    assert!(occupancy["occupancy"].as_f64().unwrap() > 0.0);
}

#[test]
fn garbage_is_a_clear_error_with_exit_2() {
    let output = cargo_occupancy(&["parse", "-"], Some("\u{0}\u{1}garbage\nmore garbage\n"));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("no kernel record in the log (2 lines read)"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("-Xptxas -v"),
        "{}",
        stderr(&output)
    );
    assert!(stdout(&output).is_empty());
}

#[test]
fn a_cut_off_log_names_the_kernel_and_exits_2() {
    let log = std::fs::read_to_string(fixture("cuda10_smfft_sm70.log")).unwrap();
    let cut: String = log
        .lines()
        .take(6)
        .map(|line| format!("{line}\n"))
        .collect();
    let output = cargo_occupancy(&["parse", "-"], Some(&cut));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains(
            "`_Z18SMFFT_DIT_multipleI25FFT_256_inverse_noreorderEvP6float2S2_` for sm_70"
        ),
        "{}",
        stderr(&output)
    );
}

#[test]
fn usage_errors_exit_2() {
    let missing = cargo_occupancy(&["parse", "/nonexistent/build.log"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("cannot read `/nonexistent/build.log`"),
        "{}",
        stderr(&missing)
    );
    let arch_without_block = cargo_occupancy(
        &["parse", "--arch", "sm_90", &fixture("nvcc13_rdc.log")],
        None,
    );
    assert_eq!(arch_without_block.status.code(), Some(2));
    let unknown_arch = cargo_occupancy(
        &[
            "parse",
            "--arch",
            "sm_13",
            "--block",
            "64",
            &fixture("nvcc13_rdc.log"),
        ],
        None,
    );
    assert_eq!(unknown_arch.status.code(), Some(2));
    assert!(
        stderr(&unknown_arch).contains("--arch"),
        "{}",
        stderr(&unknown_arch)
    );
}

#[test]
fn unknown_ptxas_lines_are_reported_and_records_still_printed() {
    let mut log = std::fs::read_to_string(fixture("cuda10_kmcuda_sm61.log")).unwrap();
    log.push_str("ptxas info    : Something CUDA 14 prints\n");
    let output = cargo_occupancy(&["parse", "--json", "-"], Some(&log));
    assert!(output.status.success());
    assert!(
        stderr(&output).contains("ptxas info line not understood"),
        "{}",
        stderr(&output)
    );
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(json["diagnostics"].as_array().unwrap().len(), 1);
    assert_eq!(json["kernels"].as_array().unwrap().len(), 2);
}
