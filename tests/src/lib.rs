//! Shared helpers for the end-to-end tests: where the real CUDA compiler lives.
//!
//! Tests that need nvcc never skip silently: if it cannot be found they fail with the command
//! that installs it (`scripts/setup-cuda.sh`).

use std::path::{Path, PathBuf};

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
