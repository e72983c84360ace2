//! Reading ptxas logs the same way in every command (`parse` and `check` through one streaming
//! reader): compiler errors end the run naming kernel and arch, kernels missing on a requested
//! arch are findings, device functions are no kernel rows, invalid UTF-8 and over-long lines get
//! one policy. No nvcc needed: every input is a log.

mod common;

use common::{binary, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

fn core_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../occupancy-core/tests/fixtures/ptxas")
        .join(name)
}

/// Writes `bytes` to a log file of this test binary's scratch directory.
fn log_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn run(command: &str, args: &[&str], log: &Path) -> Output {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli-logs-cache");
    let mut process = binary();
    process.args(["occupancy", command]);
    if command == "check" {
        process.arg("--cache-dir").arg(cache);
    }
    process.args(args).arg(log).output().unwrap()
}

fn record(name: &str, arch: &str) -> String {
    format!("ptxas info    : Compiling entry function '{name}' for '{arch}'\nptxas info    : Function properties for {name}\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 16 registers, used 0 barriers, 360 bytes cmem[0]\n")
}

/// Issue 11.4: a compile error in the log is an error of the run, in both commands; the kernel
/// it names gets no row.
#[test]
fn compiler_errors_fail_parse_and_check_naming_kernel_and_arch() {
    let log = core_fixture("nvcc13_fails_to_compile.log");
    for command in ["parse", "check"] {
        let output = run(command, &[], &log);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: {}",
            stderr(&output)
        );
        let error = stderr(&output);
        assert!(error.contains("the compile failed"), "{command}: {error}");
        assert!(
            error.contains("uses too much shared data")
                && error.contains("kernel `too_big` on sm_80"),
            "{command}: {error}"
        );
        assert!(
            !stdout(&output).contains("too_big"),
            "{command}: {}",
            stdout(&output)
        );
    }
    let parsed = run("parse", &["--json"], &log);
    let json: serde_json::Value = serde_json::from_str(&stdout(&parsed)).unwrap();
    let names: Vec<&str> = json["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"accepted") && !names.contains(&"too_big"),
        "{names:?}"
    );
    assert_eq!(json["errors"][0]["function"], "too_big");
    assert_eq!(json["errors"][0]["arch"], "sm_80");
    assert!(json["error"]
        .as_str()
        .unwrap()
        .contains("the compile failed"));
}

/// Issue 11.4: `--arch sm_80 --arch sm_90` on a log whose kernel `only80` has no sm_90 record.
#[test]
fn a_kernel_missing_on_a_requested_arch_is_a_finding_naming_both() {
    let text = format!(
        "{}{}{}",
        record("both", "sm_80"),
        record("only80", "sm_80"),
        record("both", "sm_90")
    );
    let log = log_file("missing.log", text.as_bytes());
    let output = run(
        "check",
        &["--arch", "sm_80", "--arch", "sm_90", "--json"],
        &log,
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let missing: Vec<(String, String)> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|finding| finding["lint"] == "missing_kernel")
        .map(|finding| (finding["kernel"].to_string(), finding["arch"].to_string()))
        .collect();
    assert_eq!(
        missing,
        [("\"only80\"".to_string(), "\"sm_90\"".to_string())]
    );
    let one_arch = run("check", &["--arch", "sm_80"], &log);
    assert_eq!(one_arch.status.code(), Some(0), "{}", stderr(&one_arch));
}

/// Issue 10.4: a callee's `Function properties` is no kernel row in parse or check.
#[test]
fn device_functions_get_no_rows() {
    let callee = "ptxas info    : Function properties for __internal_trig_reduction_slowpathd\n    40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    let text = format!(
        "ptxas info    : 0 bytes gmem\n{callee}{}ptxas info    : 0 bytes gmem\n{callee}{}",
        record("k", "sm_80"),
        record("k", "sm_90")
    );
    let log = log_file("callee.log", text.as_bytes());
    let parsed = run("parse", &[], &log);
    assert!(parsed.status.success(), "{}", stderr(&parsed));
    assert!(
        !stdout(&parsed).contains("slowpathd"),
        "{}",
        stdout(&parsed)
    );
    assert_eq!(stdout(&parsed).lines().count(), 3, "{}", stdout(&parsed));
    let json = run("parse", &["--json"], &log);
    let json: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(json["kernels"].as_array().unwrap().len(), 2);
    assert_eq!(json["callees"][0]["stack_frame_bytes"], 40);
    let checked = run("check", &["--json"], &log);
    assert!(checked.status.success(), "{}", stderr(&checked));
    let report: serde_json::Value = serde_json::from_str(&stdout(&checked)).unwrap();
    assert!(
        report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .all(|row| row["name"] == "k"),
        "{report}"
    );
}

/// Issue 11.10: one policy for invalid UTF-8 in every command: read lossily, noted the same way.
#[test]
fn invalid_utf8_is_read_and_noted_the_same_way_by_parse_and_check() {
    let mut bytes = record("k", "sm_90").into_bytes();
    bytes.extend_from_slice(b"make[1]: \xff\xfe leaving directory\n");
    let log = log_file("latin1.log", &bytes);
    let note = "1 line(s) were not valid UTF-8 and were read with U+FFFD in place of the bad bytes";
    for command in ["parse", "check"] {
        let output = run(command, &[], &log);
        assert!(output.status.success(), "{command}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(note),
            "{command}: {}",
            stderr(&output)
        );
        assert!(stdout(&output).contains('k'), "{command}");
    }
}

/// Issue 11.7: a 3 MB line is skipped in chunks, not held, and said; the records are read.
#[test]
fn an_over_long_line_is_skipped_and_noted() {
    let mut bytes = vec![b'#'; 3 << 20];
    bytes.push(b'\n');
    bytes.extend_from_slice(record("k", "sm_90").as_bytes());
    let log = log_file("long-line.log", &bytes);
    for command in ["parse", "check"] {
        let output = run(command, &[], &log);
        assert!(output.status.success(), "{command}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("longer than 1048576 bytes were skipped unread"),
            "{command}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("1 MiB, the longest line read")
                && stderr(&output).contains("the first is line 1)"),
            "{command}: {}",
            stderr(&output)
        );
    }
}

/// Runs `parse`, `check` and `explain KERNEL --log` on `log` with `extra` arguments.
fn every_command(log: &Path, kernel: &str, extra: &[&str]) -> Vec<(&'static str, Output)> {
    let mut explain = binary();
    explain
        .args(["occupancy", "explain", kernel, "--log"])
        .arg(log)
        .args(extra);
    vec![
        ("parse", run("parse", extra, log)),
        ("check", run("check", extra, log)),
        ("explain", explain.output().unwrap()),
    ]
}

/// Issue 23 (round 2): a log of a build that failed exits 2 in every command, naming the line
/// and the marker and what to do; `--allow-failed-build` makes each line a warning.
#[test]
fn a_log_that_shows_a_failed_build_fails_every_command_naming_the_line() {
    for (marker, named) in [
        ("FAILED: CMakeFiles/k.dir/crashed.cu.o", "ninja's `FAILED:`"),
        (
            "ninja: build stopped: subcommand failed.",
            "ninja's `build stopped`",
        ),
        (
            "make[2]: *** [CMakeFiles/k.dir/build.make:76: k.o] Error 1",
            "make's `***",
        ),
        (
            "/bin/sh: line 1: 4242 Segmentation fault      ptxas -v k.ptx",
            "`Segmentation fault`",
        ),
        (
            "bash: line 1: 4242 Killed                  nvcc -c k.cu",
            "`Killed`",
        ),
        (
            "error MSB3721: The command \"nvcc.exe\" exited with code 1.",
            "`error MSB...`",
        ),
        ("FAILED: Build did NOT complete successfully", "bazel's"),
        (
            "error: failed to run custom build command for `k v0.1.0`",
            "cargo's",
        ),
    ] {
        let text = format!("{}{marker}\n", record("k", "sm_90"));
        let log = log_file("failed-build.log", text.as_bytes());
        for (command, output) in every_command(&log, "k", &[]) {
            let error = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{command} {marker}: {error}");
            assert!(
                error.contains("failed-build.log:line 5: "),
                "{command}: {error}"
            );
            assert!(error.contains(named), "{command}: {error}");
            assert!(error.contains("--allow-failed-build"), "{command}: {error}");
            assert!(error.contains("fix the build"), "{command}: {error}");
        }
        for (command, output) in every_command(&log, "k", &["--allow-failed-build"]) {
            let error = stderr(&output);
            assert_eq!(output.status.code(), Some(0), "{command} {marker}: {error}");
            assert!(
                error.contains("warning: ") && error.contains(named),
                "{command}: {error}"
            );
        }
    }
    // Without any record, the error names the failure instead of asking for `-Xptxas -v`.
    let log = log_file(
        "failed-early.log",
        b"[1/3] Building CUDA object k.cu.o\nFAILED: k.cu.o\n",
    );
    let output = run("check", &[], &log);
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{error}");
    assert!(
        error.contains("shows a failed build (line 2: ninja's `FAILED:`"),
        "{error}"
    );
    assert!(!error.contains("-Xptxas"), "{error}");
}

/// Issue 23 (round 2): a resource line that belongs to no kernel record fails every command,
/// naming its line; the records before it do not make the log pass.
#[test]
fn a_resource_line_of_no_record_fails_every_command() {
    let merged = format!(
        "{}[ 50%] Building CUDA object ptxas info    : Function properties for lost\n    0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\nptxas info    : Used 255 registers, used 0 barriers\n",
        record("k", "sm_90")
    );
    let orphan = format!(
        "{}    0 bytes stack frame, 16 bytes spill stores, 16 bytes spill loads\n",
        record("k", "sm_90")
    );
    for (text, line) in [
        (merged, "line 5: a ptxas record line behind other text"),
        (orphan, "line 5: a stack frame line that follows no"),
    ] {
        let log = log_file("orphan.log", text.as_bytes());
        for (command, output) in every_command(&log, "k", &["--allow-failed-build"]) {
            let error = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{command}: {error}");
            assert!(error.contains(line), "{command}: {error}");
            assert!(error.contains("never read"), "{command}: {error}");
        }
    }
}

/// Issue 23 (round 2): a CI log (timestamps on every line) reads like the plain log, in every
/// command; a figure ptxas does not print says which part was not understood.
#[test]
fn ci_prefixes_are_read_and_unreadable_figures_are_named() {
    let plain = record("k", "sm_90");
    for prefix in ["2024-05-01T12:00:00.1234567Z ", "[12:00:00] ", "#12 0.345 "] {
        let text: String = plain
            .lines()
            .map(|line| format!("{prefix}{line}\n"))
            .collect();
        let log = log_file("ci.log", text.as_bytes());
        for (command, output) in every_command(&log, "k", &[]) {
            assert_eq!(
                output.status.code(),
                Some(0),
                "{command} {prefix}: {}",
                stderr(&output)
            );
        }
    }
    let text = plain.replace("Used 16 registers", "Used 16 registers (8 uniform)");
    let log = log_file("uniform.log", text.as_bytes());
    for (command, output) in every_command(&log, "k", &[]) {
        let error = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{command}: {error}");
        assert!(
            error.contains("line 4: `(8 uniform)` after `16 registers` is not a form ptxas prints, in the ptxas record of `k` for sm_90"),
            "{command}: {error}"
        );
        assert!(
            !error.contains("truncated") && !error.contains("-Xptxas"),
            "{command}: {error}"
        );
    }
}
