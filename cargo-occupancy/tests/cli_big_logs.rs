//! Issue #23 point 2: commands whose memory and time grew with the log. A generated log of
//! 200,000 kernel records goes through `check` and `explain`, one of 20,000 through
//! `check --json` and `--sarif` (a debug build writes 1 KB of JSON a row); what is asserted
//! does not depend on the machine: the text stays a few dozen lines, the JSON and SARIF hold
//! every row and finding, `explain` finds the one kernel. Speed and memory are measured by
//! `scripts/bench-big-logs.sh`, not here.

mod common;

use common::{binary, stderr, stdout};
use serde::de::IgnoredAny;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// Kernels in the big log; each has a record for sm_80 and one for sm_90.
const KERNELS: usize = 100_000;

/// A scratch directory of this test binary.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("big-logs-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `kernels` kernels compiled for sm_80 and sm_90, a section per arch as nvcc prints them.
/// Every tenth kernel spills (a deny finding and a stack_frame warning on both archs).
fn write_log(path: &Path, kernels: usize) {
    let mut out = BufWriter::new(std::fs::File::create(path).unwrap());
    for index in 0..kernels {
        let spill = if index % 10 == 0 { 96 } else { 0 };
        let registers = 16 + (index * 37) % 200;
        for arch in ["sm_80", "sm_90"] {
            write!(
                out,
                "ptxas info    : 0 bytes gmem\n\
                 ptxas info    : Compiling entry function 'k{index}' for '{arch}'\n\
                 ptxas info    : Function properties for k{index}\n    \
                 {spill} bytes stack frame, {spill} bytes spill stores, {spill} bytes spill loads\n\
                 ptxas info    : Used {registers} registers, used 1 barriers\n"
            )
            .unwrap();
        }
    }
    out.flush().unwrap();
}

fn check(log: &Path, args: &[&str], stdout_to: Option<&Path>) -> Output {
    let cache = log.with_extension("cache");
    let mut process = binary();
    process
        .args(["occupancy", "check"])
        .args(args)
        .arg(log)
        .arg("--cache-dir")
        .arg(cache);
    if let Some(path) = stdout_to {
        process.stdout(Stdio::from(std::fs::File::create(path).unwrap()));
    }
    process.output().unwrap()
}

/// The report's arrays, counted without holding them.
#[derive(serde::Deserialize)]
struct Counted {
    kernels: Vec<IgnoredAny>,
    findings: Vec<IgnoredAny>,
}

#[test]
fn a_log_of_200k_records_gives_a_short_text_and_explain_finds_one_kernel() {
    let dir = scratch("check");
    let log = dir.join("build.log");
    write_log(&log, KERNELS);
    let rows = 2 * KERNELS;
    let spilling_rows = rows / 10;
    let text = check(&log, &[], None);
    assert_eq!(text.status.code(), Some(1), "{}", stderr(&text));
    let printed = stdout(&text);
    assert!(printed.lines().count() <= 60, "{printed}");
    assert!(
        printed.contains(&format!(
            "… {} more rows: the table shows the 25 worst of {rows}",
            rows - 25
        )),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "deny[spills]: {} more like this; {} kernels in all on sm_80, sm_90: k0, k10, k20, k30, k40 (+{} more)",
            spilling_rows - 1,
            KERNELS / 10,
            KERNELS / 10 - 5
        )),
        "{printed}"
    );
    assert!(
        printed.contains(&format!(
            "{KERNELS} kernels on 2 archs: {spilling_rows} deny, "
        )),
        "{printed}"
    );
    let explained = binary()
        .args([
            "occupancy",
            "explain",
            &format!("k{}", KERNELS - 1),
            "--log",
        ])
        .arg(&log)
        .output()
        .unwrap();
    assert!(explained.status.success(), "{}", stderr(&explained));
    let explanation = stdout(&explained);
    let kernel = format!("k{}", KERNELS - 1);
    for arch in ["sm_80", "sm_90"] {
        let header = format!("{kernel} on {arch} (");
        assert_eq!(explanation.matches(&header).count(), 1, "{explanation}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn json_and_sarif_of_a_big_log_hold_every_row_and_finding() {
    let dir = scratch("json");
    let log = dir.join("build.log");
    let kernels = KERNELS / 10;
    write_log(&log, kernels);
    let json_path = dir.join("report.json");
    let json = check(&log, &["--json"], Some(&json_path));
    assert_eq!(json.status.code(), Some(1), "{}", stderr(&json));
    let reader = std::io::BufReader::new(std::fs::File::open(&json_path).unwrap());
    let counted: Counted = serde_json::from_reader(reader).unwrap();
    assert_eq!(counted.kernels.len(), 2 * kernels);
    // Spills (deny) and stack_frame (warn) on both archs of every tenth kernel, and more.
    assert!(counted.findings.len() >= 4 * kernels / 10);
    let sarif_path = dir.join("report.sarif");
    let sarif = check(&log, &["--sarif"], Some(&sarif_path));
    assert_eq!(sarif.status.code(), Some(1), "{}", stderr(&sarif));
    let reader = std::io::BufReader::new(std::fs::File::open(&sarif_path).unwrap());
    let sarif: serde_json::Value = serde_json::from_reader(reader).unwrap();
    assert_eq!(
        sarif["runs"][0]["results"].as_array().unwrap().len(),
        counted.findings.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
