//! `occupancy-build`: compile a crate's CUDA kernels in `build.rs` and fail the build, like rustc
//! would, when a kernel spills registers or misses its declared occupancy.
//!
//! ```no_run
//! // build.rs: $OUT_DIR/saxpy.ptx + $OUT_DIR/occupancy_ptx.rs, checked against the
//! // `#[occupancy::kernel(...)]` declarations in src/
//! occupancy_build::Build::new().file("kernels/saxpy.cu").compile_ptx();
//! ```
//!
//! The builder drives nvcc through the `cc` crate's view of the toolchain (so `NVCC`, the host
//! compiler and `RUSTC_WRAPPER=sccache` are honoured as `cc` honours them), compiles every source
//! once, in parallel within cargo's jobserver, reads ptxas's `-v` report from that same compile,
//! and hands it to one pipeline (compile -> parse -> calculate -> evaluate -> report) that the
//! `cargo occupancy check` CLI calls too, through [`Build::check_sources`]. See `docs/build.md`,
//! `docs/configuration.md` and `docs/architecture.md`.
//!
//! What this crate must not do: re-implement parsing, arch facts or the calculator (those live in
//! `occupancy-core`), or print anything outside the `cargo:` protocol and the failure diagnostics.

// Unit tests read the environment they run in (the CUDA tools setup-cuda.sh installed); the
// library reads it only through TrackedEnv (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::too_many_lines))]

mod auto_bounds;
mod baseline;
mod bounds_notes;
mod build;
mod builder;
mod cache;
mod cargo_lines;
mod check_lock;
mod compile;
mod compile_reads;
mod config;
#[cfg(test)]
mod config_fuzz;
mod context;
mod crate_view;
mod cubin;
mod declarations;
mod declaring_package;
mod diagnostics;
mod disassemble;
mod env;
mod error;
mod evaluate;
mod expectations;
mod facts_file;
mod facts_header;
mod file_facts;
mod fsutil;
mod header_choices;
mod input_watch;
mod jobs;
mod kernel_tables;
mod launch_check;
mod levels;

mod line_table_cubins;
mod lock_schema;
mod matching;
mod nvcc_archs;
mod own_binary;
mod parse;
mod pipeline;
mod process;
mod products;
mod ptx_bounds;
mod ptx_summary;
mod render;
mod report;
mod resolve;
mod rows;
mod sass_selection;
mod sass_stage;
mod spill_help;
mod targets;
mod toolchain;
mod trust;
mod words;

pub use builder::Build;
pub use config::{SettingsError, TableName};
pub use context::Cudart;
pub use env::TrackedEnv;
pub use error::{Error, FamilyDeclaration};
pub use launch_check::{SourceCheck, SourceCheckOutput};
pub use occupancy_core::report::Report;
pub use pipeline::Output;

/// What `cargo occupancy` and its binary front end (`occupancy-binary`) share with the build
/// beyond the builder and [`Build::check_sources`]: the cubin reader and the SASS stage's batches
/// (which the binary front end reads binaries with), the lock of `check --lock`, evaluating rows read from a log or a binary at a command line's
/// launch, the one child-process runner, the one output writer, the cache's trust check, the
/// installed nvcc's architectures. Internal to the occupancy tools, not a stable API.
#[doc(hidden)]
pub mod cli {
    pub use crate::auto_bounds::{TuneAnswer, TuneQuery, TuneRequest, TunedGroup, TunedKernel};
    pub use crate::baseline::ToolchainStamp;
    pub use crate::check_lock::{recorded_toolchain, CheckLock};
    pub use crate::config::{load as package_settings, KernelLaunch, OccupancySettings};
    pub use crate::cubin::{CodeMarks, Cubin, SpillEvidence};
    pub use crate::declaring_package::{
        declares_kernels, declaring_package, package_of, package_out_dir,
    };
    pub use crate::disassemble::{Batch, Nvdisasm};
    pub use crate::fsutil::{check_writable, node_kind, shown_path, write_atomic, WorkDir};
    pub use crate::kernel_tables::table_launch;
    pub use crate::launch_check::sort_rows;
    pub use crate::nvcc_archs::{explain_unknown, NvccArchs};
    pub use crate::own_binary::CUOBJDUMP_NOT_FOUND;
    pub use crate::process::{run_bounded, ToolKind, ToolTimeouts};
    pub use crate::sass_selection::{spills, MachineCodeLints};
    pub use crate::sass_stage::relative_facts;
    pub use crate::toolchain::Toolchain;
    pub use crate::toolchain::NVCC_WHEELS;
    pub use crate::trust::check_private_dir;
}
