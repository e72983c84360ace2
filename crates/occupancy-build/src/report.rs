//! The build's report: every kernel on every target architecture, and every finding, as
//! versioned JSON in `$OUT_DIR/occupancy.json` and `target/occupancy/<crate>.json`.
//!
//! Schema changes that remove or retype a field bump [`SCHEMA_VERSION`]; adding fields does not.
//! This module defines data only; the engine fills it and writes it.

use serde::{Deserialize, Serialize};

use crate::engine::Context;
use crate::targets::ArchSource;
use crate::toolchain::Toolchain;

/// The version of the JSON layout below.
pub const SCHEMA_VERSION: u32 = 1;

/// The whole report of one build.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub schema_version: u32,
    /// The package name (`CARGO_PKG_NAME`).
    pub crate_name: String,
    /// nvcc's release (`13.0`), absent when nothing was compiled.
    pub cuda_release: Option<String>,
    /// Target architectures (`sm_90`).
    pub archs: Vec<String>,
    /// Where the architectures came from.
    pub arch_source: Option<ArchSource>,
    /// Why nothing was checked (`OCCUPANCY_SKIP`, docs.rs); absent when the checks ran.
    pub skipped: Option<String>,
    /// Every compiled source.
    pub sources: Vec<SourceReport>,
    /// Every kernel (entry function) on every architecture.
    pub kernels: Vec<KernelReport>,
    /// Every finding at warn or deny level (allow-level findings are not reported).
    pub findings: Vec<Finding>,
}

/// One compiled source file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SourceReport {
    pub path: String,
    /// True when the result was replayed from the per-file cache.
    pub from_cache: bool,
}

/// Where a declaration is: the attribute in a Rust file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
}

/// One compiled kernel.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KernelReport {
    /// The symbol (mangled for C++ kernels): the name the driver and cudarc load.
    pub name: String,
    pub demangled: Option<String>,
    /// The .cu or .ptx file it came from.
    pub source: String,
    /// The Rust declaration, when there is one.
    pub declaration: Option<Declaration>,
    /// Per target architecture.
    pub archs: Vec<ArchResult>,
}

/// The Rust declaration a kernel was matched to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Declaration {
    /// The Rust item's name.
    pub rust_name: String,
    pub location: Location,
    /// Threads per block of the declared launch.
    pub block_threads: u32,
    pub dynamic_smem_bytes: u32,
    pub min_blocks_per_sm: Option<u32>,
    pub max_registers: Option<u32>,
}

/// What ptxas reported and what the calculator derived for one kernel on one architecture.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ArchResult {
    pub arch: String,
    pub registers: u32,
    pub barriers: u32,
    pub stack_frame_bytes: u64,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
    pub static_smem_bytes: u64,
    /// Launch bounds compiled into the PTX (`.maxntid`, `.minnctapersm`, `.maxnreg`).
    pub maxntid: Option<Vec<u32>>,
    pub minnctapersm: Option<u32>,
    pub maxnreg: Option<u32>,
    /// With the declared (or, undeclared, the compiled-max or 256-thread) block.
    pub block_threads: u32,
    pub blocks_per_sm: u32,
    /// Resident warps / maximum warps per SM, 0..=1.
    pub occupancy: f64,
    /// The resources that bind (`registers`, `shared_memory`, `warps`, `blocks`, `barriers`).
    pub limiters: Vec<String>,
}

/// One lint finding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    /// The lint id (`spills`).
    pub lint: String,
    /// `warn` or `deny`.
    pub level: String,
    /// The compiled kernel's name (or the declared name for `missing_kernel`).
    pub kernel: String,
    pub arch: Option<String>,
    /// One line, rustc style: what is wrong.
    pub message: String,
    /// What ptxas reported, which resource binds on which arch.
    pub notes: Vec<String>,
    /// What to change.
    pub help: Option<String>,
    /// The attribute in the Rust source, when declared.
    pub location: Option<Location>,
}

impl Report {
    /// A report with the build's context and nothing compiled yet.
    pub fn empty(context: &Context, toolchain: &Toolchain) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            crate_name: context.crate_name.clone(),
            cuda_release: Some(toolchain.release.clone()),
            archs: context.archs.iter().map(ToString::to_string).collect(),
            arch_source: Some(context.arch_source),
            skipped: context.skip_reason.clone(),
            sources: Vec::new(),
            kernels: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// The report of a build that checked nothing, saying why.
    pub fn skipped(context: &Context, reason: String) -> Report {
        Report {
            schema_version: SCHEMA_VERSION,
            crate_name: context.crate_name.clone(),
            cuda_release: None,
            archs: context.archs.iter().map(ToString::to_string).collect(),
            arch_source: Some(context.arch_source),
            skipped: Some(reason),
            sources: Vec::new(),
            kernels: Vec::new(),
            findings: Vec::new(),
        }
    }

    /// Findings at deny level.
    pub fn denied(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|finding| finding.level == "deny")
    }
}
