//! Declared intent: the typed model of `#[occupancy::kernel(...)]` and its one grammar.
//!
//! The proc macro (`occupancy-macros`, through `parse_args` and `KernelStub`) and
//! the build helper (`occupancy-build`, through `scan_source`) both read declarations with the
//! code in this module, so the two can never disagree about what an attribute means.
//!
//! What this module does: parse and validate the attribute's arguments (syntax, types, ranges
//! that hold on every architecture, lint and arch names), classify the item the attribute sits
//! on, and find declarations in Rust source text with their line/column spans.
//! What it must not do: read files, know per-architecture limits (those checks are lints, see
//! [`crate::lint`]), or evaluate anything about compiled kernels.
//!
//! Every error message says what to edit and names the section of `docs/declaring-kernels.md`
//! that documents the key.

//!
//! The types here (the declaration, its keys, the limits) are always available: the lints read
//! them. They are `occupancy-model`'s, the same the attribute's const and the facade use, in
//! the build's [`Owned`] storage; each key is declared once there (`occupancy-model/src/keys.rs`)
//! and the grammar reads its value and range from [`KEYS`]. The grammar that needs `syn`
//! (`parse_args`, `scan_source`, `KernelStub`) is behind the `spec` feature.

mod docs;
mod family;
#[cfg(feature = "spec")]
mod grammar;
#[cfg(feature = "spec")]
mod scan;
#[cfg(feature = "spec")]
mod stub;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

#[cfg(feature = "spec")]
use occupancy_model::{Kind, ValueMut};
use occupancy_model::{Level, Storage};
use serde::{Deserialize, Serialize};

use crate::lint_id::LintId;

pub use occupancy_model::{
    BlockDim, Key, Tunable, Value, KEYS, MAX_BLOCKS_PER_SM_ANY_ARCH, MAX_BLOCK_DIMS,
    MAX_REGISTERS_PER_THREAD_ANY_ARCH, MAX_THREADS_PER_BLOCK,
};

pub use docs::render_keys_markdown;
pub use family::family_matches;
#[cfg(feature = "spec")]
pub use scan::{
    scan_source, DeclaredKernel, KeySpan, LineColumn, ScanError, SourceSpan, SpecDiagnostic,
};
#[cfg(feature = "spec")]
pub use stub::{KernelStub, StubKernel, StubKind};

/// The documentation file every error message points into.
pub const DOCS_PATH: &str = "docs/declaring-kernels.md";

/// The build's [`Storage`]: owned strings and lists, lints by their typed [`LintId`], in
/// sorted maps. What the grammar produces and the lints read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Owned;

impl Storage for Owned {
    type Text = String;
    type Archs = Vec<String>;
    type Lint = LintId;
    type LintLevels = BTreeMap<LintId, Level>;
    type ExpectedLints = BTreeSet<LintId>;
    type LintReasons = BTreeMap<LintId, String>;

    fn lint_name(lint: LintId) -> &'static str {
        lint.as_str()
    }

    fn lint_levels(levels: &Self::LintLevels) -> impl Iterator<Item = (LintId, Level)> + '_ {
        levels.iter().map(|(lint, level)| (*lint, *level))
    }

    fn expected_lints(expected: &Self::ExpectedLints) -> impl Iterator<Item = LintId> + '_ {
        expected.iter().copied()
    }

    fn lint_reasons(reasons: &Self::LintReasons) -> impl Iterator<Item = (LintId, &str)> + '_ {
        reasons
            .iter()
            .map(|(lint, reason)| (*lint, reason.as_str()))
    }
}

/// One declaration as the build reads it: the model's [`occupancy_model::KernelSpec`] (one
/// field per key of [`KEYS`], then the lint settings), owned. The attribute's const holds the
/// same type, borrowed (`occupancy::KernelSpec`).
pub type KernelSpec = occupancy_model::KernelSpec<Owned>;

/// Parses and validates the arguments of `#[occupancy::kernel(...)]` (the tokens inside the
/// parentheses). Errors carry the span of the offending token and a message that says what to
/// edit.
#[cfg(feature = "spec")]
pub fn parse_args(tokens: proc_macro2::TokenStream) -> syn::Result<KernelSpec> {
    grammar::parse_spec(tokens, proc_macro2::Span::call_site()).map(|parsed| parsed.spec)
}

/// Where a diagnostic about a declaration points: a `key = value` key, or a lint named in a
/// lint list.
///
/// In JSON a key is its name (`"block"`), a lint `{"lint": "spills"}`, as before keys were the
/// model's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SpecKey {
    /// The lint's name inside `allow(...)`, `warn(...)`, `deny(...)` or `expect(...)`.
    Lint(LintId),
    /// `key = value`.
    #[serde(untagged)]
    Key(Key),
}

impl SpecKey {
    /// The key as written in the attribute (`lint levels` for lint entries).
    pub const fn as_str(self) -> &'static str {
        match self {
            SpecKey::Key(key) => key.as_str(),
            SpecKey::Lint(_) => "lint levels",
        }
    }

    /// Where the key is documented, e.g. `docs/declaring-kernels.md#block`.
    pub fn docs_link(self) -> String {
        format!("{DOCS_PATH}#{}", self.docs_anchor())
    }

    /// The heading anchor of the key's section in `docs/declaring-kernels.md`.
    pub const fn docs_anchor(self) -> &'static str {
        match self {
            SpecKey::Key(key) => key.as_str(),
            SpecKey::Lint(_) => "lint-levels",
        }
    }
}

impl From<Key> for SpecKey {
    fn from(key: Key) -> SpecKey {
        SpecKey::Key(key)
    }
}

impl fmt::Display for SpecKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecKey::Lint(lint) => write!(formatter, "lint `{lint}`"),
            SpecKey::Key(key) => formatter.write_str(key.as_str()),
        }
    }
}

/// Checks an architecture name against [`crate::arch::Arch`]'s grammar, the one every input
/// uses: `sm_90`, `sm_90a`, `sm_100f`, `compute_90`, `90`, `9.0`, for architectures nvcc has
/// (`sm_999` and `sm_89a` are refused). On error, returns the suggestion when one is obvious
/// (`sm90` → `sm_90`).
pub fn check_arch_name(arch: &str) -> Result<(), Option<String>> {
    crate::arch::Arch::parse(arch)
        .map(|_| ())
        .map_err(|error| error.suggestion)
}

#[cfg(all(test, feature = "spec"))]
mod tests;
