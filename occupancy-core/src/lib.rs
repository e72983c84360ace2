//! `occupancy-core`: the pure engine of the occupancy toolkit.
//!
//! Data flows one way through these modules:
//! compiler output ([`ptxas`]) + declared intent ([`spec`]) → per-architecture facts ([`arch`])
//! → the exact calculator ([`calc`]) → findings ([`lint`]) → renderers ([`report`]).
//!
//! # Glossary
//!
//! One line per domain type, in pipeline order. Where another crate names the same concept
//! differently, the other name follows as "also".
//!
//! - [`arch::ArchFacts`]: one compute capability's limits (warps, registers, shared memory per SM
//!   and per block, allocation units); looked up by any spelling with [`arch::lookup`].
//! - [`arch::GpuPreset`]: a GPU product (`h100`): its arch, SM count and, where recorded, the
//!   SM groups a thread-block cluster may span (its GPCs, as the cluster scheduler sees them).
//! - [`ptxas::KernelRecord`]: what ptxas reported for one function on one arch (registers,
//!   barriers, stack, spills, static shared memory, the log line).
//! - [`ptxas::PtxEntry`]: one `.entry` of a PTX file with its compiled launch bounds
//!   (`.maxntid`, `.reqntid`, `.minnctapersm`, `.maxnreg`).
//! - [`ptxas::Diagnostic`]: a warning or error line ptxas printed (not a lint finding, nor
//!   `occupancy_build`'s rustc-style `Diagnostic`, which renders a finding).
//! - [`spec::KernelSpec`]: one declaration `#[occupancy::kernel(...)]`: the launch and the limits,
//!   one field per key of [`spec::KEYS`] (`occupancy-model`'s type, owned; also
//!   `occupancy::KernelSpec`, the same type in a const, the `spec` of the
//!   `occupancy::KernelDeclaration` the attribute generates).
//! - [`spec::Key`]: one key of the attribute; [`spec::KEYS`]: every key's declaration (name, value,
//!   unit, documentation), the list the grammar, the expansion and the docs are derived from.
//! - [`spec::BlockDim`]: threads per block as x, y, z (also `occupancy::BlockDim`, the same).
//! - `spec::DeclaredKernel` (feature `spec`): a declaration found in Rust source, with its spans
//!   (also `occupancy_build::Declared`).
//! - `spec::KernelStub` / `spec::StubKernel` (feature `spec`): the item the attribute sits on,
//!   and one kernel of it.
//! - [`calc::KernelFacts`]: the calculator's view of a compiled kernel (registers, static shared
//!   memory, barriers, bounds).
//! - [`calc::Launch`]: the calculator's view of a launch (block threads, dynamic shared memory,
//!   carveout) (also `report::RowLaunch`, the report's copy).
//! - [`calc::Occupancy`]: the calculator's answer: resident blocks, warps, occupancy, limiters,
//!   per-resource [`calc::BlockLimits`], [`calc::Headroom`].
//! - [`calc::Limiter`]: one resource that can bind (warps, blocks, registers, shared memory,
//!   barriers, launch bounds).
//! - [`calc::clusters::ClusterOccupancy`]: clusters of one launch resident at once on one GPU
//!   (also `report::RowClusters`, the report's, one per GPU of a row's arch).
//! - [`calc::Headroom`]: the calculator's distance to the next cliff (also `report::Headroom`, the
//!   report's, `None` where the resource never binds).
//! - [`lint::LintId`]: one lint (`spills`, `low_occupancy`, ...); [`lint::Level`]: allow, warn or
//!   deny (`occupancy-model`'s; also `occupancy::LintLevel`, the same).
//! - [`lint::Lint`]: one lint's declaration (its id, default level, documentation and
//!   [`lint::Check`], the function that finds it), [`lint::LintId::lint`].
//! - [`finding::Finding`]: one lint's result, with its level, kernel and place: the one finding
//!   type (also named `lint::evaluate::Finding` and `report::Finding`; the facts file's
//!   `settled` findings are it too).
//! - [`report::Report`]: everything one build or check found, the schema of every JSON report.
//! - [`report::KernelRow`]: one kernel on one arch in a report: ptxas's numbers plus the
//!   calculator's answer for the declared or requested launch.
//! - [`report::Location`]: a place in a file (a Rust attribute, a `.cu` kernel, a log line)
//!   (also `occupancy::SourceLocation`, `spec::SourceSpan` for spans inside a Rust file).
//!
//! This crate performs no I/O of its own: callers hand it text and get values back. Driving
//! nvcc, reading files and printing belong to `occupancy-build` and `cargo-occupancy`.
//!
//! # What it promises
//!
//! The public API is the list below and nothing else: an item that `occupancy-build`,
//! `cargo-occupancy`, `occupancy-macros`, the test crates and the benches do not name is
//! `pub(crate)` (`scripts/public-api.py` counts what is left). A module not listed here is
//! private to the crate.
//!
//! - [`arch`]: the facts table ([`arch::ArchFacts`], [`arch::all`], [`arch::lookup`],
//!   [`arch::known_names`]), its grammar ([`arch::Arch`], [`arch::Variant`],
//!   [`arch::UnknownArch`]) and the GPU presets ([`arch::GpuPreset`], [`arch::preset`],
//!   [`arch::presets`], [`arch::UnknownPreset`]).
//! - [`calc`]: the calculator: [`calc::occupancy`] and its parts ([`calc::resources`],
//!   [`calc::blocks_per_sm`], [`calc::warps_per_block`], [`calc::registers_per_warp`],
//!   [`calc::smem_limit_per_block`], [`calc::available_dynamic_smem_per_block`],
//!   [`calc::resolved_max_dynamic_smem`], [`calc::headroom`],
//!   [`calc::max_potential_block_size`], [`calc::write_zero_block_reason`]), their types,
//!   [`calc::sweep`] (many launches at once) and [`calc::clusters`] (thread-block clusters
//!   resident at once on a named GPU, [`calc::clusters::max_active_clusters`]).
//! - [`facts`]: the facts file the build writes for the `#[occupancy::kernel]` macro.
//! - [`finding`]: the one finding type ([`finding::Finding`]) and where it points
//!   ([`finding::Location`], [`finding::LocationKind`]; also under [`report`]).
//! - [`lint`]: the lint ids, levels and declarations ([`lint::LintId`], [`lint::Level`],
//!   [`lint::Lint`], [`lint::Check`]), `docs/lints.md` ([`lint::render_lints_markdown`]), name
//!   suggestions ([`lint::did_you_mean`], [`lint::closest_names`]), and [`lint::evaluate`]: the
//!   checks a build runs ([`lint::evaluate::check_kernel`], [`lint::evaluate::evaluate_sass`],
//!   the whole-build checks), their [`lint::evaluate::Finding`]s and how those are leveled and
//!   summarized.
//! - [`ptxas`]: reading ptxas and nvcc logs ([`ptxas::parse_log`], [`ptxas::LogParser`]),
//!   cuobjdump's resource usage, PTX directives and line info, [`ptxas::subset_ptx`] and
//!   [`ptxas::demangle`].
//! - [`report`]: the report ([`report::Report`], [`report::KernelRow`], [`report::Finding`], ...),
//!   its JSON, text, Markdown, HTML and SARIF renderings, queries over it ([`report::Query`],
//!   [`report::RowIndex`], [`report::FindingIndex`]), its digest ([`report::ReportDigest`]),
//!   the occupancy curves a row carries ([`report::Curve`]) and [`report::explain`].
//! - [`sass`]: the machine-code facts of a kernel ([`sass::analyze`], [`sass::SassFacts`] and the
//!   types of its fields), the disassembly it reads ([`sass::parse_nvdisasm`]), PTX operation
//!   searches, [`sass::FunctionSymbols`] and [`sass::raw`] (a cubin's code and line table).
//! - [`spec`]: the declaration grammar (`#[occupancy::kernel(...)]`), [`spec::KernelSpec`] (the
//!   model's, in the build's [`spec::Owned`] storage), the key list it reads ([`spec::Key`],
//!   [`spec::KEYS`], [`spec::Value`]) and the keys of `docs/declaring-kernels.md`
//!   ([`spec::render_keys_markdown`]); with the `spec` feature, `spec::parse_args` and finding
//!   declarations in Rust source.
//! - [`tune`]: choosing launch bounds (`"auto"`): the ladder of bounds worth trying
//!   ([`tune::ladder`]), a kernel's PTX at one of them ([`tune::with_bound`]), what a compile
//!   measured ([`tune::Measured`]), the objective ([`tune::choose`]) and its table
//!   ([`tune::render_ladder`]).

// Tests may be long: a table of cases reads best in one function.
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod arch;
pub mod calc;
pub mod facts;
pub mod finding;
pub mod kernel;
pub mod lint;
mod lint_id;
mod names;
pub mod ptxas;
pub mod report;
pub mod sass;
pub mod spec;
pub mod tune;
