//! What the CLI tests share: running the built `cargo-occupancy` binary and reading what it
//! printed. Each test crate uses a subset, hence `dead_code` is allowed here.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// `cargo-occupancy/tests/fixtures`.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The repository root (the kernel corpus is `tests/kernels` under it).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The built binary, invoked as cargo would (`cargo-occupancy occupancy <sub> ...`) when the
/// arguments start with `occupancy`, or directly.
pub fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cargo-occupancy"))
}

/// `cargo occupancy ARGS` in `current_dir`.
pub fn cargo_occupancy_in(args: &[&str], current_dir: &Path) -> Output {
    binary()
        .arg("occupancy")
        .args(args)
        .current_dir(current_dir)
        .output()
        .expect("run cargo-occupancy")
}

/// The binary with `args` (as given) and `stdin` on its standard input.
pub fn run_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = binary()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cargo-occupancy");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_string();
    // Written from another thread: a large input must not deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || pipe.write_all(input.as_bytes()));
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    output
}

/// Standard output as text (the CLI prints UTF-8 only).
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("stderr is UTF-8")
}

/// A fresh directory of one test's own under `CARGO_TARGET_TMPDIR/<group>/<test>` (the tests
/// of a crate run in parallel).
pub fn work_dir(group: &str, test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(group)
        .join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `NVCC`, else nvcc under `CUDA_HOME`, as scripts/setup-cuda.sh sets them (a test reads the
/// environment it runs in).
#[allow(clippy::disallowed_methods)]
pub fn nvcc() -> PathBuf {
    std::env::var_os("NVCC").map_or_else(
        || {
            let home =
                std::env::var_os("CUDA_HOME").expect("NVCC or CUDA_HOME (scripts/setup-cuda.sh)");
            Path::new(&home).join("bin/nvcc")
        },
        PathBuf::from,
    )
}

/// Runs a tool the test needs (nvcc, ar, a compiler), which must succeed.
pub fn run_tool(command: &mut Command) {
    let output = command.output().expect("run a tool");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}{}",
        stdout(&output),
        stderr(&output)
    );
}

/// A JSON report's entry rows by (symbol, arch).
pub fn entry_rows(
    report: &serde_json::Value,
) -> std::collections::BTreeMap<(String, String), serde_json::Value> {
    report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["entry"] == true)
        .map(|row| {
            let key = (
                row["name"].as_str().unwrap().to_owned(),
                row["arch"].as_str().unwrap().to_owned(),
            );
            (key, row.clone())
        })
        .collect()
}
