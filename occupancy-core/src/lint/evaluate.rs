//! Lint evaluation: from what ptxas reported, what the calculator derived and what the crate
//! declared, to findings (lint id, architecture, message, notes, help), and their levels.
//!
//! Pure: callers hand in records, PTX directives, arch facts, occupancy results, baselines and
//! levels; nothing here reads files or runs tools. `evaluate_launch` runs every launch check
//! the registry (`lint::LINTS`) declares, in its order; levels are resolved by
//! [`resolve_level`] (most specific wins: the attribute, then per-kernel Cargo.toml, then the
//! environment, then the crate's Cargo.toml, then the lint's default), and rendering belongs to
//! the caller.

use std::collections::BTreeMap;

use crate::lint::{Check, Level, LintId, LINTS};
use crate::spec::KernelSpec;

pub use super::baseline::{baseline_stale, regression, BaselineNumbers};
pub use super::checked_launch::{
    checked_launch, CheckedLaunch, LaunchSettings, TableLaunch, DEFAULT_UNDECLARED_BLOCK_THREADS,
};
pub use super::expectation::unfulfilled_expectation;
pub use super::finding::{CompiledOnArch, Finding, LaunchOrigin};
pub use super::kernels::{family_matches_nothing, missing_kernel, undeclared_kernel, NAMES_SHOWN};
pub use super::sass::{hottest_spill_note, SassLintInputs};
pub use super::smem_spill::SmemSpillRoom;
pub use super::summary::{summarize, FindingSummary, Summarized};

/// Every lint that concerns a declared, compiled kernel on its target architectures.
/// `spills` gets a generic help here; a caller that can re-run ptxas replaces it with a verified
/// `min_blocks_per_sm` (see occupancy-build).
pub(crate) fn evaluate_declared(
    spec: &KernelSpec,
    on_archs: &[CompiledOnArch<'_>],
) -> Vec<Finding> {
    evaluate_launch(spec, on_archs, LaunchOrigin::Declaration)
}

/// [`evaluate_declared`] for a launch from `origin`: the same lints, worded for where the launch
/// came from (`cargo occupancy check` passes [`LaunchOrigin::CommandLine`]). Runs the registry's
/// [`Check::Launch`] and [`Check::Kernel`] checks once, then its [`Check::OnArch`] checks on each
/// architecture, each in the registry's order.
pub(crate) fn evaluate_launch(
    spec: &KernelSpec,
    on_archs: &[CompiledOnArch<'_>],
    origin: LaunchOrigin,
) -> Vec<Finding> {
    run_launch_checks(spec, on_archs, origin, |_| true)
}

/// The launch checks of the lints `wanted` selects, in the registry's order.
fn run_launch_checks(
    spec: &KernelSpec,
    on_archs: &[CompiledOnArch<'_>],
    origin: LaunchOrigin,
    wanted: fn(&Check) -> bool,
) -> Vec<Finding> {
    let checks = || LINTS.iter().map(|lint| lint.check).filter(wanted);
    let mut findings = Vec::new();
    for check in checks() {
        if let Check::Launch { run, .. } = check {
            run(spec, origin, &mut findings);
        }
    }
    for check in checks() {
        if let Check::Kernel { run, .. } = check {
            run(spec, on_archs, origin, &mut findings);
        }
    }
    for on in on_archs {
        for check in checks() {
            if let Check::OnArch { run, .. } = check {
                run(spec, on, origin, &mut findings);
            }
        }
    }
    findings
}

/// Every SASS finding for one kernel on one architecture: the registry's [`Check::Sass`]
/// checks, in its order.
pub fn evaluate_sass(inputs: &SassLintInputs<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for lint in &LINTS {
        if let Check::Sass { run, .. } = lint.check {
            run(inputs, &mut findings);
        }
    }
    findings
}

/// Where lint levels were set, most specific first.
#[derive(Debug, Clone, Default)]
pub struct LevelSources<'a> {
    /// `allow(...)`/`warn(...)`/`deny(...)` in the kernel's attribute.
    pub attribute: Option<&'a BTreeMap<LintId, Level>>,
    /// `[package.metadata.occupancy.kernels.<name>.lints]`.
    pub kernel_config: Option<&'a BTreeMap<LintId, Level>>,
    /// `OCCUPANCY_LINT_<ID>` variables.
    pub environment: Option<&'a BTreeMap<LintId, Level>>,
    /// `[package.metadata.occupancy.lints]` (merged over the workspace's).
    pub crate_config: Option<&'a BTreeMap<LintId, Level>>,
}

/// The level of `lint`: the most specific source that sets it, else the lint's default.
/// (As with rustc, where `#[allow]` in the source beats `-D` on the command line, a kernel's
/// own choice beats the environment, which beats the crate-wide setting.)
pub fn resolve_level(lint: LintId, sources: &LevelSources<'_>) -> Level {
    explicit_level(lint, sources).unwrap_or_else(|| lint.default_level())
}

/// The level the most specific source sets for `lint`, if any sets one.
fn explicit_level(lint: LintId, sources: &LevelSources<'_>) -> Option<Level> {
    [
        sources.attribute,
        sources.kernel_config,
        sources.environment,
        sources.crate_config,
    ]
    .into_iter()
    .flatten()
    .find_map(|levels| levels.get(&lint).copied())
}

/// The level of `lint` for a kernel with no declaration. A machine-code lint whose declaration
/// says `undeclared: false` (`call`, `fp64`, `local_array`, `setmaxnreg_budget`: matters of a
/// kernel's intent, not hard failures) is `allow` there unless a level is set for it explicitly
/// (per kernel, by environment or for the crate); every other lint as [`resolve_level`].
pub fn resolve_undeclared_level(lint: LintId, sources: &LevelSources<'_>) -> Level {
    match lint.lint().check {
        Check::Sass {
            undeclared: false, ..
        } => explicit_level(lint, sources).unwrap_or(Level::Allow),
        _ => resolve_level(lint, sources),
    }
}

/// What a kernel is checked against.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Launch<'a> {
    /// Its `#[occupancy::kernel]` declaration (or the family declaration that covers it).
    Declared(&'a KernelSpec),
    /// No declaration: the crate's default launch (`[package.metadata.occupancy] block`), with
    /// the default limits, for the lints whose check is declared `undeclared: true` only: the
    /// hard failures that need no declared intent (`spills`, `unlaunchable`, `stack_frame`, the
    /// kernel's own `__launch_bounds__` minimum that cannot take effect (`unreachable_bound`);
    /// `docs/lints.md` promises them). Occupancy thresholds, cliffs and declared bounds need a
    /// declaration.
    Undeclared(&'a KernelSpec),
    /// `cargo occupancy check`'s `--block`/`--dynamic-smem`, with the default limits. No
    /// `bounds_mismatch`: there is no declaration for the compiled bounds to disagree with.
    CommandLine(&'a KernelSpec),
}

/// The one evaluate-then-level step of the gate, shared by the build (`occupancy-build`) and
/// `cargo occupancy check`: every lint for `launch` on `on_archs`, each given its level from
/// `levels` (never `allow`: those are dropped).
pub fn check_kernel(
    launch: Launch<'_>,
    on_archs: &[CompiledOnArch<'_>],
    levels: &LevelSources<'_>,
) -> Vec<Finding> {
    let findings = match launch {
        Launch::Declared(spec) => evaluate_declared(spec, on_archs),
        Launch::Undeclared(spec) => run_launch_checks(
            spec,
            on_archs,
            LaunchOrigin::CrateDefault,
            Check::checks_undeclared,
        ),
        Launch::CommandLine(spec) => evaluate_launch(spec, on_archs, LaunchOrigin::CommandLine),
    };
    findings
        .into_iter()
        .map(|finding| Finding {
            level: resolve_level(finding.lint, levels),
            ..finding
        })
        .filter(|finding| finding.level != Level::Allow)
        .collect()
}

#[cfg(test)]
mod tests;
