//! The errors of a build, each saying what to edit or install.

use std::path::PathBuf;

use crate::toolchain::NVCC_WHEELS;

/// Why a build could not compile or check its kernels.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No nvcc anywhere we looked.
    #[error(
        "occupancy-build: nvcc, the CUDA compiler, was not found (looked at: {looked}).\n\
         Install it with either\n  \
         - the CUDA toolkit (https://developer.nvidia.com/cuda-downloads), then set CUDA_HOME (e.g. /usr/local/cuda), or\n  \
         - the compiler wheels from PyPI: `pip install {NVCC_WHEELS}`, then set CUDA_HOME=<site-packages>/nvidia/cu13\n\
         or point NVCC at the nvcc executable.\n\
         To build without compiling or checking kernels, set OCCUPANCY_SKIP=1 (a warning will say that nothing was checked)."
    )]
    NvccNotFound { looked: String },
    /// nvcc ran and failed; its own diagnostics are in `diagnostics`.
    #[error("nvcc failed to compile {} ({status}):\n{diagnostics}\ncommand: {command}", file.display())]
    NvccFailed {
        file: PathBuf,
        status: String,
        diagnostics: String,
        command: String,
    },
    /// nvcc or ptxas produced something we cannot read: the build fails rather than pass unchecked.
    #[error("occupancy-build: could not read the compiler's output for {}: {message}", file.display())]
    UnreadableOutput { file: PathBuf, message: String },
    /// A tool could not be started or answered strangely.
    #[error("occupancy-build: {message}")]
    Tool { message: String },
    /// An architecture name the table does not know, in the setting that gave it; `explanation`
    /// says whether the installed nvcc knows it (then occupancy needs an update).
    #[error("occupancy-build: {setting}: {explanation}")]
    UnknownArch {
        setting: String,
        explanation: String,
        #[source]
        unknown: occupancy_core::arch::UnknownArch,
    },
    /// A configuration value is wrong.
    #[error("occupancy-build: {message}")]
    Config { message: String },
    /// `[package.metadata.occupancy]` / `[workspace.metadata.occupancy]` could not be read or
    /// holds a wrong value: the message names the file and the key.
    #[error("occupancy-build: {0}")]
    Settings(#[from] crate::config::SettingsError),
    /// A file could not be read or written.
    #[error("occupancy-build: {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    /// One or more deny-level findings; `rendered` holds the rustc-style diagnostics.
    #[error("{rendered}")]
    Denied { rendered: String, count: usize },
}
