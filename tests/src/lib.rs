//! Shared helpers for the end-to-end tests: where the real CUDA compiler lives.
//!
//! Tests that need nvcc never skip silently: if it cannot be found they fail with the command
//! that installs it (`scripts/setup-cuda.sh`).

use std::path::{Path, PathBuf};

pub mod fixture;
pub mod sccache;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The CUDA 13 tree installed by `scripts/setup-cuda.sh`, or `CUDA_HOME` when set.
pub fn cuda_home() -> PathBuf {
    if let Some(home) = std::env::var_os("CUDA_HOME") {
        return PathBuf::from(home);
    }
    let venv = repo_root().join(".cache/cuda/venv13/lib");
    if let Ok(entries) = std::fs::read_dir(&venv) {
        for entry in entries.flatten() {
            let candidate = entry.path().join("site-packages/nvidia/cu13");
            if candidate.join("bin/nvcc").exists() {
                return candidate;
            }
        }
    }
    panic!("nvcc not found: set CUDA_HOME or run scripts/setup-cuda.sh (installs the nvidia-cuda-nvcc wheels into .cache/cuda)");
}

/// Path of nvcc: `NVCC` when set, else `cuda_home()/bin/nvcc`.
pub fn nvcc() -> PathBuf {
    std::env::var_os("NVCC")
        .map(PathBuf::from)
        .unwrap_or_else(|| cuda_home().join("bin/nvcc"))
}

/// Where the end-to-end tests copy and build fixture crates; they share `target/e2e/target` so the
/// workspace crates compile once for all of them.
pub fn e2e_root() -> PathBuf {
    repo_root().join("target").join("e2e")
}

/// The directories of `package` in the end-to-end target directory's `kind` (`build`,
/// `.fingerprint`): `<package>-<hash>`.
fn package_dirs(package: &str, kind: &str) -> Vec<PathBuf> {
    let parent = e2e_root().join("target/debug").join(kind);
    std::fs::read_dir(&parent)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{package}-"))
        })
        .map(|entry| entry.path())
        .collect()
}

/// The newest `file` (a path inside a build-script directory: `output`, `out/occupancy_facts.h`)
/// among `package`'s build scripts under the end-to-end target directory.
pub fn newest_build_file(package: &str, file: &str) -> PathBuf {
    package_dirs(package, "build")
        .into_iter()
        .map(|dir| dir.join(file))
        .filter(|path| path.exists())
        .max_by_key(|path| std::fs::metadata(path).unwrap().modified().unwrap())
        .unwrap_or_else(|| panic!("no {file} of {package} under {}", e2e_root().display()))
}

/// Deletes `package`'s build-script outputs (OUT_DIR, with occupancy-build's per-file cache)
/// and fingerprints from the end-to-end target directory: its next build starts from nothing.
pub fn remove_build_outputs(package: &str) {
    for kind in ["build", ".fingerprint"] {
        for dir in package_dirs(package, kind) {
            std::fs::remove_dir_all(dir).unwrap();
        }
    }
}

/// Copies a fixture crate's folder (recursively) to where a test builds it.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Variables a developer's shell may hold that change what occupancy-build does (target archs,
/// opt-outs, blessing, lint levels, compiler wrappers). An end-to-end build starts without them,
/// so it tests only what the test itself sets afterwards.
pub const BUILD_ENVIRONMENT_OVERRIDES: &[&str] = &[
    "OCCUPANCY_ARCHS",
    "CUDA_COMPUTE_CAP",
    "OCCUPANCY_SKIP",
    "OCCUPANCY_BLESS",
    "OCCUPANCY_LINT_SPILLS",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "DOCS_RS",
];

/// Removes [`BUILD_ENVIRONMENT_OVERRIDES`] from a command's environment.
pub fn clear_build_environment(command: &mut std::process::Command) {
    for variable in BUILD_ENVIRONMENT_OVERRIDES {
        command.env_remove(variable);
    }
}

/// A command's stdout then stderr, as one text for assertions and failure messages.
pub fn text(output: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Fails the test with the command's whole output unless it succeeded.
pub fn assert_success(output: &std::process::Output) {
    assert!(
        output.status.success(),
        "cargo build failed:\n{}",
        text(output)
    );
}

/// Runs a tool a test needs; its output. The test fails, naming the command and what it printed,
/// unless the tool ran and succeeded.
pub fn run_tool(command: &mut std::process::Command) -> std::process::Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{command:?}: {error}"));
    assert!(output.status.success(), "{command:?}: {}", text(&output));
    output
}
