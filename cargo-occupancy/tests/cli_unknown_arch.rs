//! An architecture the installed nvcc lists and occupancy's table lacks (`sm_999` here, listed by
//! a fake nvcc): every command that takes `--arch` names that nvcc and its release, the
//! architecture, and says occupancy needs an update, never only "unknown architecture".

mod common;

use common::{binary, fixtures, stderr};
use std::path::{Path, PathBuf};

/// A directory holding an `nvcc` script that prints a CUDA "14.0" release and lists
/// `compute_999` in `--list-gpu-arch`, and writes each call's flag to `calls` beside it; removed
/// on drop.
struct FakeNvcc {
    dir: PathBuf,
}

impl FakeNvcc {
    fn new(test: &str) -> FakeNvcc {
        let dir = std::env::temp_dir().join(format!(
            "occupancy-unknown-arch-{test}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("nvcc"),
            "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/calls\"\nif [ \"$1\" = --version ]; then echo 'Build cuda_14.0.r14.0'; else printf 'compute_120\\ncompute_999\\n'; fi\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join("nvcc"), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        FakeNvcc { dir }
    }

    fn nvcc(&self) -> PathBuf {
        self.dir.join("nvcc")
    }
}

impl Drop for FakeNvcc {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `cargo occupancy ARGS` in `dir` with the fake nvcc and asserts the update message.
fn assert_says_update_occupancy(test: &str, args: &[&str], dir: &Path) {
    let fake = FakeNvcc::new(test);
    let output = binary()
        .arg("occupancy")
        .args(args)
        .current_dir(dir)
        .env("NVCC", fake.nvcc())
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .output()
        .unwrap();
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {error}");
    for wanted in [
        fake.nvcc().display().to_string().as_str(),
        "cuda_14.0",
        "`sm_999`",
        "knows compute_999, but occupancy",
        "update occupancy",
    ] {
        assert!(
            error.contains(wanted),
            "{args:?}: {wanted:?} missing in {error}"
        );
    }
}

#[test]
fn check_says_occupancy_needs_an_update() {
    let log = fixtures().join("logs/cmake-build.log");
    let log = log.to_str().unwrap();
    assert_says_update_occupancy("check", &["check", log, "--arch", "sm_999"], &fixtures());
}

#[test]
fn explain_says_occupancy_needs_an_update() {
    assert_says_update_occupancy(
        "explain",
        &["explain", "k", "--registers", "32", "--arch", "sm_999"],
        &fixtures(),
    );
}

#[test]
fn report_says_occupancy_needs_an_update() {
    assert_says_update_occupancy(
        "report",
        &["report", "--dir", "reports", "--arch", "sm_999"],
        &fixtures(),
    );
}

#[test]
fn parse_says_occupancy_needs_an_update() {
    let log = fixtures().join("logs/cmake-build.log");
    let log = log.to_str().unwrap();
    assert_says_update_occupancy(
        "parse",
        &["parse", log, "--arch", "sm_999", "--block", "256"],
        &fixtures(),
    );
}

#[test]
fn sweep_says_occupancy_needs_an_update() {
    assert_says_update_occupancy(
        "sweep",
        &["sweep", "--arch", "sm_999", "--block", "256"],
        &fixtures(),
    );
}

#[test]
fn calc_says_occupancy_needs_an_update() {
    assert_says_update_occupancy(
        "calc",
        &["calc", "--arch", "sm_999", "--block", "64"],
        &fixtures(),
    );
}

/// A batch whose lines name the newer architecture: each line gets the message, and nvcc is
/// asked once per process (`--version` and `--list-gpu-arch`), not once per line.
#[test]
fn a_batch_asks_the_installed_nvcc_once() {
    let fake = FakeNvcc::new("batch");
    let lines = "{\"arch\":\"sm_999\",\"block\":64}\n".repeat(5);
    let mut child = binary()
        .args(["occupancy", "calc", "--batch", "-"])
        .env("NVCC", fake.nvcc())
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let answers = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        answers.matches("knows compute_999, but occupancy").count(),
        5,
        "{answers}"
    );
    let calls = std::fs::read_to_string(fake.dir.join("calls")).unwrap();
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        ["--version", "--list-gpu-arch"]
    );
}
