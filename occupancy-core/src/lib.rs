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
//! - [`arch::GpuPreset`]: a GPU product (`h100`): its arch and SM count.
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
//! - [`calc::Headroom`]: the calculator's distance to the next cliff (also `report::Headroom`, the
//!   report's, `None` where the resource never binds).
//! - [`lint::LintId`]: one lint (`spills`, `low_occupancy`, ...); [`lint::Level`]: allow, warn or
//!   deny (`occupancy-model`'s; also `occupancy::LintLevel`, the same).
//! - [`lint::Lint`]: one lint's declaration (its id, default level, documentation and
//!   [`lint::Check`], the function that finds it); every one in [`lint::LINTS`].
//! - [`lint::evaluate::Finding`]: one lint's result before a level is attached
//!   (also `report::Finding`, the same with its level, crate and location).
//! - [`report::Report`]: everything one build or check found, the schema of every JSON report.
//! - [`report::KernelRow`]: one kernel on one arch in a report: ptxas's numbers plus the
//!   calculator's answer for the declared or requested launch.
//! - [`report::Location`]: a place in a file (a Rust attribute, a `.cu` kernel, a log line)
//!   (also `occupancy::SourceLocation`, `spec::SourceSpan` for spans inside a Rust file).
//!
//! This crate performs no I/O of its own: callers hand it text and get values back. Driving
//! nvcc, reading files and printing belong to `occupancy-build` and `cargo-occupancy`.

pub mod arch;
pub mod calc;
pub mod facts;
pub mod lint;
pub mod ptxas;
pub mod report;
pub mod sass;
pub mod spec;
