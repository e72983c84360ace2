//! What a build is, resolved once: the builder's calls, the environment and Cargo.toml read into
//! one typed value ([`Context`], made by `Build::resolve` in `resolve.rs`). Every stage after
//! resolution reads this, never the builder or an environment variable, so a setting has one
//! meaning and one place it is read.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use occupancy_core::lint::{Level, LintId};

use crate::config::OccupancySettings;
use crate::process::ToolTimeouts;
use crate::targets::{ArchSource, SmArch};

/// How the CUDA runtime is linked into a crate that uses `Build::compile_lib`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cudart {
    /// `libcudart_static.a` (plus `dl`, `rt`, `pthread` on Linux): the nvcc default.
    Static,
    /// `libcudart.so`.
    Shared,
    /// Nothing: the launcher code does not call the runtime, or the crate links it itself.
    None,
}

/// What kind of input a source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// CUDA C++ (`.cu`).
    Cuda,
    /// PTX made elsewhere (Rust-CUDA, Triton, NVRTC dumps).
    Ptx,
}

/// Where a build runs and what it does: resolved once from the builder and the environment.
#[derive(Debug, Clone)]
pub struct Context {
    pub out_dir: PathBuf,
    pub manifest_dir: PathBuf,
    pub crate_name: String,
    /// `[package.metadata.occupancy]` over `[workspace.metadata.occupancy]` (`config.rs`).
    pub settings: OccupancySettings,
    /// Every arch checked: the targets, then the JIT-only ones (sorted; the lowest is a target).
    pub archs: Vec<SmArch>,
    /// Archs checked only as what the driver's JIT makes of the shipped PTX (`jit_archs`).
    pub jit_archs: Vec<SmArch>,
    /// One PTX per target arch (`.ptx_per_arch(true)`, else `ptx_per_arch` in the metadata).
    pub ptx_per_arch: bool,
    pub arch_source: ArchSource,
    /// `OCCUPANCY_SKIP=1` or `DOCS_RS`: compile if possible, check nothing, say so.
    pub skip_reason: Option<String>,
    /// The sources in the builder's order: `.file`s and each `.source_dir`'s `.cu` files
    /// (relative paths joined to the package root; existence is checked by the compile stage,
    /// which reports a missing one), then `.ptx_file`s.
    pub sources: Vec<(PathBuf, SourceKind)>,
    /// The `.source_dir`s, absolute: watched so that a new file reruns the build.
    pub source_dirs: Vec<PathBuf>,
    /// nvcc's arguments for every source: `-I OUT_DIR` (for `occupancy_bounds.h`), then the
    /// builder's includes, defines and flags.
    pub nvcc_args: Vec<OsString>,
    /// The builder's defines and flags as written, then `NVCC_PREPEND_FLAGS`/`NVCC_APPEND_FLAGS`:
    /// what the baseline's toolchain stamp records (include paths name the machine, not code).
    pub stamped_flags: Vec<String>,
    /// Rust files and directories scanned for `#[occupancy::kernel]` (default `src/`), absolute.
    pub declaration_roots: Vec<PathBuf>,
    pub cudart: Cudart,
    /// Whether the checks run (`.check(false)`: a plain nvcc driver that still writes the report).
    pub check: bool,
    /// `OCCUPANCY_LINT_<ID>=level`.
    pub env_lint_levels: BTreeMap<LintId, Level>,
    /// `OCCUPANCY_BLESS=1`: write the baseline instead of comparing with it.
    pub bless: bool,
    /// Compiles at once: `NUM_JOBS`, else the machine's parallelism (within cargo's jobserver).
    pub max_jobs: usize,
    /// `TARGET` (a build script's target triple); `None` outside cargo: the host.
    pub target_triple: Option<String>,
    /// `CARGO_CFG_TARGET_OS`, default `linux`: which system libraries the static runtime needs.
    pub target_os: String,
    /// `OCCUPANCY_SASS=all`: disassemble every kernel on every arch, not only where a SASS lint
    /// above `allow` can fire.
    pub read_all_sass: bool,
    /// `OCCUPANCY_NVDISASM` / `OCCUPANCY_CUOBJDUMP`: the SASS stage's tools, when named.
    pub nvdisasm: Option<PathBuf>,
    pub cuobjdump: Option<PathBuf>,
    /// `OCCUPANCY_TOOL_TIMEOUT`: how long every child process may run.
    pub tool_timeouts: ToolTimeouts,
}

#[cfg(test)]
impl Context {
    /// A context for unit tests: everything in `dir`, the given archs, defaults elsewhere.
    pub(crate) fn for_tests(dir: &std::path::Path, archs: &[&str]) -> Context {
        Context {
            out_dir: dir.to_path_buf(),
            manifest_dir: dir.to_path_buf(),
            crate_name: "k".into(),
            settings: OccupancySettings::default(),
            archs: archs
                .iter()
                .map(|arch| SmArch::parse(arch).expect("a known arch"))
                .collect(),
            jit_archs: Vec::new(),
            ptx_per_arch: false,
            arch_source: ArchSource::Builder,
            skip_reason: None,
            sources: Vec::new(),
            source_dirs: Vec::new(),
            nvcc_args: Vec::new(),
            stamped_flags: Vec::new(),
            declaration_roots: vec![dir.join("src")],
            cudart: Cudart::Static,
            check: true,
            env_lint_levels: BTreeMap::new(),
            bless: false,
            max_jobs: 1,
            target_triple: None,
            target_os: "linux".into(),
            read_all_sass: false,
            nvdisasm: None,
            cuobjdump: None,
            tool_timeouts: ToolTimeouts::default(),
        }
    }
}
