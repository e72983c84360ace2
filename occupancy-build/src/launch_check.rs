//! The evaluate stage of a check of sources outside any package (`Build::check_sources`, what
//! `cargo occupancy check` calls; `pipeline::check_sources` orders its stages): the launch of
//! the request stands in for a declaration, every kernel's rows are computed at it
//! ([`rows_at_launch`], one `occupancy_core::kernel::KernelOnArch` each) and evaluated by
//! `occupancy_core::kernel::evaluate_at_launch`, which the CLI also uses for the kernels it
//! reads from ptxas logs and binaries. Nothing is written but the compile cache under `.out_dir(...)`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use occupancy_core::kernel::KernelOnArch;
use occupancy_core::lint::evaluate::{checked_launch, CheckedLaunch, LaunchOrigin, LaunchSettings};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::report::Report;
use occupancy_core::spec::BlockDim;

use crate::declarations::Declarations;
use crate::parse::CompiledKernel;
use crate::rows;
use crate::sass_stage::SassEvidence;
use crate::Error;

/// The launch and levels kernels are checked at when nothing declares them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SourceCheck {
    /// Threads per block; `None`: 256, or the kernel's `__launch_bounds__` maximum when smaller.
    pub block_threads: Option<u32>,
    /// Dynamic shared memory per block.
    pub dynamic_smem_bytes: u64,
    /// Levels over the lints' defaults, for every kernel (`--deny`/`--warn`/`--allow`).
    pub lint_levels: BTreeMap<LintId, Level>,
    /// Say which toolchain and flags made the code ([`SourceCheckOutput::toolchain`]), for a
    /// lock (it asks ptxas its version).
    pub stamp_toolchain: bool,
    /// The sources belong to the package at `.manifest_dir(...)`, which declares kernels
    /// ([`cli::declaring_package`](crate::cli::declaring_package)): they are compiled and checked
    /// as its build does (its declarations, `occupancy_bounds.h`, `"auto"` bounds and
    /// `[package.metadata.occupancy]`); `block_threads` is then the launch of kernels nothing
    /// declares, and `lint_levels` stand above the package's levels.
    pub in_package: bool,
    /// Launches by kernel name or `*` pattern (`cargo occupancy build`'s kernel tables): a
    /// kernel a table names is checked at its block and dynamic shared memory instead.
    pub launch_tables: BTreeMap<String, crate::config::KernelLaunch>,
}

/// What [`Build::check_sources`](crate::Build::check_sources) found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SourceCheckOutput {
    /// A row per kernel and arch (sorted by file, line, kernel, arch) and every finding.
    pub report: Report,
    /// Sources that define no kernel (device functions only): nothing was checked in them.
    pub without_kernels: Vec<PathBuf>,
    /// Why some check did not run (the SASS tools missing), and what to know about how a source
    /// was compiled (an input changed during its compile, a cache entry not trusted), for
    /// warnings.
    pub warnings: Vec<String>,
    /// With [`SourceCheck::stamp_toolchain`]: nvcc's and ptxas's versions and the flags that
    /// change code, as a lock records them.
    pub toolchain: Option<crate::baseline::ToolchainStamp>,
}

/// Every kernel's rows at the request's launch, with the SASS facts read for it and its
/// compile's notes (what the machine-code lints read), sorted by [`sort_rows`].
pub(crate) fn rows_at_launch(
    context: &crate::context::Context,
    kernels: &[CompiledKernel<'_>],
    evidence: &SassEvidence,
    request: &SourceCheck,
) -> Result<Vec<KernelOnArch>, Error> {
    let declarations = Declarations::default();
    let mut checked = Vec::new();
    for kernel in kernels {
        let launch = source_launch(context, kernel, request)?;
        for mut on in rows::kernel_rows(context, kernel, None, &launch, &declarations)? {
            on.row.crate_name = None;
            // The record's arch as ptxas named it (`sm_90a`), as the SASS does; the row's is the
            // table's (`sm_90`).
            let sass = evidence.facts_of(&kernel.name, &on.record.arch, &context.manifest_dir);
            on.row.sass = sass;
            on.compile = evidence.compile_notes(&kernel.source.source, &kernel.name);
            checked.push(on);
        }
    }
    sort_rows(&mut checked);
    Ok(checked)
}

/// The launch `kernel` is checked at by the request: [`checked_launch`] from the command line's
/// block and dynamic shared memory, the kernel table that names the kernel and the kernel's
/// compiled `__launch_bounds__`.
fn source_launch(
    context: &crate::context::Context,
    kernel: &CompiledKernel<'_>,
    request: &SourceCheck,
) -> Result<CheckedLaunch, Error> {
    let names = (kernel.name.as_str(), kernel.demangled.as_deref());
    let table = crate::kernel_tables::table_launch(&request.launch_tables, names.0, names.1)?;
    Ok(checked_launch(&LaunchSettings {
        origin: LaunchOrigin::CommandLine,
        declared: None,
        table,
        given_block: request.block_threads.map(BlockDim::linear),
        given_dynamic_smem_bytes: request.dynamic_smem_bytes,
        crate_block: context.settings.block,
        compiled_max_threads: kernel.compiled_max_threads(),
        at_compiled_max: false,
    }))
}

/// Grouped by file, then line, kernel and architecture.
pub fn sort_rows(rows: &mut [KernelOnArch]) {
    rows.sort_by_cached_key(|KernelOnArch { row, .. }| {
        let (path, line) = row.source.as_ref().map_or((String::new(), 0), |source| {
            (source.path.clone(), source.line)
        });
        let arch = occupancy_core::arch::lookup(&row.arch)
            .map_or((u32::MAX, u32::MAX), |facts| (facts.major, facts.minor));
        (path, line, row.name.clone(), arch)
    });
}
