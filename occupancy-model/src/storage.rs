//! [`Storage`]: how the model's strings, lists and lint ids are held. [`Static`] holds them
//! in a `const` (the attribute's expansion); the build's owned form is
//! `occupancy_core::spec::Owned`.

use core::fmt::Debug;
use core::ops::Deref;

use crate::Level;

/// How a [`KernelSpec`](crate::KernelSpec) or [`CompiledFacts`](crate::CompiledFacts) holds
/// what is not a number: the same fields either way, borrowed for `'static` in a const or owned
/// where they are parsed or read from a file.
pub trait Storage: Sized + 'static {
    /// A string: a symbol, a pattern, an architecture.
    type Text: Deref<Target = str> + Clone + Debug + PartialEq;
    /// A list of names: the architectures of `archs = [...]`, the GPUs of `gpus = [...]`.
    type Archs: Deref<Target = [Self::Text]> + Clone + Debug + PartialEq;
    /// A lint: its name in a const, `occupancy_core::lint::LintId` in the build.
    type Lint: Copy + Debug + PartialEq;
    /// The levels set by `allow(...)`, `warn(...)`, `deny(...)`.
    type LintLevels: Clone + Debug + PartialEq + Default;
    /// The lints of `expect(...)`.
    type ExpectedLints: Clone + Debug + PartialEq + Default;
    /// The `reason = "..."` of each lint given one.
    type LintReasons: Clone + Debug + PartialEq + Default;

    /// The lint's name as written in the attribute (`spills`).
    fn lint_name(lint: Self::Lint) -> &'static str;

    /// Each lint given a level, with it, in the lints' order.
    fn lint_levels(levels: &Self::LintLevels) -> impl Iterator<Item = (Self::Lint, Level)> + '_;

    /// Each lint of `expect(...)`, in the lints' order.
    fn expected_lints(expected: &Self::ExpectedLints) -> impl Iterator<Item = Self::Lint> + '_;

    /// Each lint given a reason, with it.
    fn lint_reasons(reasons: &Self::LintReasons) -> impl Iterator<Item = (Self::Lint, &str)> + '_;
}

/// Everything borrowed for `'static`: what a `const` holds. The types of the facade crate
/// (`occupancy::KernelSpec`, `occupancy::CompiledFacts`) are the model's in this storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Static;

impl Storage for Static {
    type Text = &'static str;
    type Archs = &'static [&'static str];
    type Lint = &'static str;
    type LintLevels = &'static [(&'static str, Level)];
    type ExpectedLints = &'static [&'static str];
    type LintReasons = &'static [(&'static str, &'static str)];

    fn lint_name(lint: &'static str) -> &'static str {
        lint
    }

    fn lint_levels(levels: &Self::LintLevels) -> impl Iterator<Item = (&'static str, Level)> + '_ {
        levels.iter().copied()
    }

    fn expected_lints(expected: &Self::ExpectedLints) -> impl Iterator<Item = &'static str> + '_ {
        expected.iter().copied()
    }

    fn lint_reasons(
        reasons: &Self::LintReasons,
    ) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        reasons.iter().copied()
    }
}
