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
