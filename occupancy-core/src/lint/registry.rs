//! What one lint declaration holds ([`Lint`]: id, default level, documentation and its
//! [`Check`]) and the macro that turns the declarations in `lint.rs` into the registry
//! [`LINTS`](super::LINTS), `LintId::default_level` and `LintId::lint`.
//!
//! A lint is declared once, clippy-style, under its id ([`LintId`], named and spelled in
//! `lint_id.rs`); everything else (the environment variable, `docs/lints.md`, SARIF rules, which
//! checks run where) is read from its declaration.

use super::baseline::BaselineNumbers;
use super::finding::{CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use super::level::Level;
use super::sass::SassLintInputs;
use crate::spec::KernelSpec;

/// Everything the toolkit knows about one lint, from its one declaration in `lint.rs`.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Lint {
    /// The id.
    pub id: LintId,
    /// The id as written in attributes (`warn(spills)`), JSON, and as the key under
    /// `[package.metadata.occupancy.lints]`.
    pub name: &'static str,
    /// The level a finding gets when nothing overrides it.
    pub default_level: Level,
    /// One line: what the lint reports.
    pub summary: &'static str,
    /// What a kernel with a finding does, for a summary's sentence: for one kernel, for
    /// several (`spills registers to local memory`, `spill registers to local memory`).
    pub phrase: (&'static str, &'static str),
    /// Why a finding is bad for the crate.
    pub why_bad: &'static str,
    /// A declaration (and situation) that triggers it.
    pub example: &'static str,
    /// What to change.
    pub fix: &'static str,
    /// Where the lint is checked, and the function that checks it.
    pub check: Check,
}

/// Where in the pipeline a lint is checked, naming the function that checks it.
///
/// The launch and SASS checks are run from the registry by
/// `evaluate_launch` (for [`check_kernel`](super::evaluate::check_kernel)) and
/// [`evaluate_sass`](super::evaluate::evaluate_sass); the others need the whole build (every
/// declaration, every compiled kernel, the baseline) and are called by the build with what it
/// found, through the function named here.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Check {
    /// Once per launch checked, whatever the architecture (the block's shape).
    Launch {
        /// Pushes the lint's findings for the launch.
        run: fn(&KernelSpec, LaunchOrigin, &mut Vec<Finding>),
        /// Also checked for a kernel with no declaration, at the crate's default launch.
        undeclared: bool,
    },
    /// Once per launch, with the kernel on every target architecture: what no one architecture
    /// tells (a GPU of `gpus` whose architecture was not compiled).
    Kernel {
        /// Pushes the lint's findings for the launch.
        run: fn(&KernelSpec, &[CompiledOnArch<'_>], LaunchOrigin, &mut Vec<Finding>),
        /// Also checked for a kernel with no declaration, at the crate's default launch.
        undeclared: bool,
    },
    /// Per launch and target architecture, from ptxas's record, the PTX's bounds and the
    /// calculator's answer.
    OnArch {
        /// Pushes the lint's findings for the launch on one architecture.
        run: fn(&KernelSpec, &CompiledOnArch<'_>, LaunchOrigin, &mut Vec<Finding>),
        /// Also checked for a kernel with no declaration, at the crate's default launch.
        undeclared: bool,
    },
    /// Per kernel and architecture from its machine code.
    Sass {
        /// Pushes the lint's findings for one kernel on one architecture.
        run: fn(&SassLintInputs<'_>, &mut Vec<Finding>),
        /// Also checked for a kernel with no declaration (a hard failure such as a spill in a
        /// loop or a dropped `setmaxnreg`, not a matter of the kernel's intent).
        undeclared: bool,
    },
    /// A declaration matched against every compiled kernel's name: `kernel` for a declared
    /// name, `family` for a `family = "prefix_*"` pattern (declared, compiled names).
    Matching {
        /// The finding for a declared name no compiled kernel has.
        kernel: fn(&str, &[&str]) -> Finding,
        /// The finding for a family pattern that matches no compiled kernel.
        family: fn(&str, &[&str]) -> Finding,
    },
    /// A compiled kernel no declaration covers (kernel name, where it was compiled from).
    Undeclared(fn(&str, &str) -> Finding),
    /// A kernel's numbers against the committed baseline (kernel, arch, baseline, now).
    Worse(fn(&str, &str, &BaselineNumbers, &BaselineNumbers) -> Option<Finding>),
    /// The committed baseline no longer equals the build (arch, message, notes): the build
    /// decides what changed.
    Stale(fn(&str, String, Vec<String>) -> Finding),
    /// An `expect(lint)` no finding fulfilled (kernel, expected lint, its reason).
    Expectation(fn(&str, LintId, Option<&str>) -> Finding),
    /// A fact of a shipped product rather than of a launch (the module, its PTX target, the
    /// kernels it holds): what `cargo occupancy build` reads in a build's output.
    Product(fn(&str, &str, &[&str]) -> Finding),
}

impl Check {
    /// Whether an undeclared kernel, checked at the crate's default launch, gets this lint's
    /// launch or machine-code findings.
    pub const fn checks_undeclared(&self) -> bool {
        match *self {
            Check::Launch { undeclared, .. }
            | Check::Kernel { undeclared, .. }
            | Check::OnArch { undeclared, .. }
            | Check::Sass { undeclared, .. } => undeclared,
            Check::Matching { .. }
            | Check::Undeclared(_)
            | Check::Worse(_)
            | Check::Stale(_)
            | Check::Expectation(_)
            | Check::Product(_) => false,
        }
    }
}

/// Declares every lint: generates the registry `LINTS` (indexed by the id),
/// `LintId::default_level` and `LintId::lint`. Used once, in `lint.rs`, with a declaration for
/// every [`LintId`] in the order of `LintId::ALL`: a missing id fails the build (the match in
/// `default_level`), and so does one out of order (the assertion below).
macro_rules! declare_lints {
    ($(
        $variant:ident {
            default_level: $level:ident,
            summary: $summary:literal,
            phrase: ($one:literal, $more:literal),
            why_bad: $why_bad:literal,
            example: $example:literal,
            fix: $fix:literal,
            check: $check:expr $(,)?
        }
    )+) => {
        impl LintId {
            /// The level a finding gets when nothing overrides it.
            pub const fn default_level(self) -> Level {
                match self {
                    $(LintId::$variant => Level::$level,)+
                }
            }

            /// The lint's declaration: its default level, documentation and check.
            pub fn lint(self) -> &'static Lint {
                &LINTS[self as usize]
            }
        }

        /// Every lint's declaration, in the order of [`LintId::ALL`] (indexed by the id).
        pub(crate) static LINTS: [Lint; LintId::ALL.len()] = [$(
            Lint {
                id: LintId::$variant,
                name: LintId::$variant.as_str(),
                default_level: Level::$level,
                summary: $summary,
                phrase: ($one, $more),
                why_bad: $why_bad,
                example: $example,
                fix: $fix,
                check: $check,
            },
        )+];

        // `LINTS[id as usize]` is `id`'s declaration: declared in the order of `LintId::ALL`.
        const _: () = {
            let declared = [$(LintId::$variant),+];
            let mut index = 0;
            while index < declared.len() {
                assert!(
                    declared[index] as usize == index,
                    "lint.rs declares the lints in the order of `LintId::ALL` (lint_id.rs)"
                );
                index += 1;
            }
        };
    };
}
