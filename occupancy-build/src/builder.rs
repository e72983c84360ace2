//! The [`Build`] value: what the builder's calls collected (`build.rs` has the calls, and the
//! entry points that hand it to the pipeline). Apart from them, so that resolution and the
//! pipeline, which read it, import no module that imports them back.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::context::Cudart;
use crate::env::TrackedEnv;
use crate::targets::SmArch;

/// A CUDA build in the style of `cc::Build`: add sources and flags, then call
/// [`compile_ptx`](Build::compile_ptx) and/or [`compile_lib`](Build::compile_lib).
#[derive(Debug, Clone)]
pub struct Build {
    pub(crate) cuda_files: Vec<PathBuf>,
    pub(crate) source_dirs: Vec<PathBuf>,
    pub(crate) ptx_files: Vec<PathBuf>,
    pub(crate) archs: Vec<SmArch>,
    pub(crate) jit_archs: Vec<String>,
    pub(crate) ptx_per_arch: Option<bool>,
    pub(crate) arch_errors: Vec<occupancy_core::arch::UnknownArch>,
    pub(crate) flags: Vec<OsString>,
    pub(crate) includes: Vec<PathBuf>,
    pub(crate) defines: Vec<(String, Option<String>)>,
    pub(crate) cudart: Cudart,
    pub(crate) check: bool,
    pub(crate) cargo_metadata: bool,
    pub(crate) out_dir: Option<PathBuf>,
    pub(crate) manifest_dir: Option<PathBuf>,
    pub(crate) rust_sources: Vec<PathBuf>,
    pub(crate) env: std::sync::Arc<TrackedEnv>,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

impl Build {
    /// An empty build: no sources, architectures from the environment (`OCCUPANCY_ARCHS`, `CUDA_COMPUTE_CAP`,
    /// `archs` in Cargo.toml metadata, the GPU in this machine, else sm_80 and sm_90).
    pub fn new() -> Build {
        Build {
            cuda_files: Vec::new(),
            source_dirs: Vec::new(),
            ptx_files: Vec::new(),
            archs: Vec::new(),
            jit_archs: Vec::new(),
            ptx_per_arch: None,
            arch_errors: Vec::new(),
            flags: Vec::new(),
            includes: Vec::new(),
            defines: Vec::new(),
            cudart: Cudart::Static,
            check: true,
            cargo_metadata: true,
            out_dir: None,
            manifest_dir: None,
            rust_sources: Vec::new(),
            env: std::sync::Arc::new(TrackedEnv::new()),
        }
    }
}
