//! Declared intent: the typed model of `#[occupancy::kernel(...)]` and its one grammar.
//!
//! The proc macro (`occupancy-macros`, through `KernelSpec::parse_args` and `KernelStub`) and
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
//! them. The grammar that needs `syn` (`KernelSpec::parse_args`, `scan_source`,
//! `KernelStub`) is behind the `spec` feature.

mod family;
#[cfg(feature = "spec")]
mod grammar;
#[cfg(feature = "spec")]
mod scan;
#[cfg(feature = "spec")]
mod stub;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::lint::{Level, LintId};

pub use family::family_matches;
#[cfg(feature = "spec")]
pub use scan::{
    scan_source, DeclaredKernel, KeySpan, LineColumn, ScanError, SourceSpan, SpecDiagnostic,
};
#[cfg(feature = "spec")]
pub use stub::{KernelStub, StubKernel, StubKind};

/// The documentation file every error message points into.
pub const DOCS_PATH: &str = "docs/declaring-kernels.md";

/// The largest number of threads in one block on any architecture.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
/// The largest block dimensions (x, y, z) on any architecture.
pub const MAX_BLOCK_DIMS: (u32, u32, u32) = (1024, 1024, 64);
/// The largest number of resident blocks per SM on any architecture (the upper bound for
/// `min_blocks_per_sm`; the per-architecture check is the `unlaunchable` lint).
pub const MAX_BLOCKS_PER_SM_ANY_ARCH: u32 = 32;
/// The most registers a thread can have on any architecture.
pub const MAX_REGISTERS_PER_THREAD_ANY_ARCH: u32 = 255;

/// Threads per block, as the crate launches the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BlockDim {
    /// Threads along x.
    pub x: u32,
    /// Threads along y (1 for a 1-D block).
    pub y: u32,
    /// Threads along z (1 for 1-D and 2-D blocks).
    pub z: u32,
}

impl BlockDim {
    /// A 1-D block of `x` threads.
    pub const fn linear(x: u32) -> BlockDim {
        BlockDim { x, y: 1, z: 1 }
    }

    /// A block of `x` by `y` by `z` threads (each at least 1, as a launch gives them).
    pub const fn new(x: u32, y: u32, z: u32) -> BlockDim {
        BlockDim { x, y, z }
    }

    /// Threads in one block: x * y * z.
    pub const fn threads(self) -> u32 {
        self.x * self.y * self.z
    }
}

impl fmt::Display for BlockDim {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.y, self.z) {
            (1, 1) => write!(formatter, "{}", self.x),
            (_, 1) => write!(formatter, "({}, {})", self.x, self.y),
            _ => write!(formatter, "({}, {}, {})", self.x, self.y, self.z),
        }
    }
}

/// One declaration: the launch a kernel is made with and the limits it must meet.
///
/// Produced only by parsing (so every value is in range); `Display` prints the attribute's
/// arguments back in the canonical form, which parses to an equal spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KernelSpec {
    /// `block`: threads per block of the launch.
    pub block: BlockDim,
    /// `min_blocks_per_sm`: the second `__launch_bounds__` argument (blocks that must fit on
    /// one SM at once; ptxas caps registers to make them fit).
    pub min_blocks_per_sm: Option<u32>,
    /// `max_registers`: a per-kernel register cap (`__maxnreg__`), registers per thread.
    pub max_registers: Option<u32>,
    /// `dynamic_smem`: bytes of dynamic shared memory per block requested at launch (0 if none).
    pub dynamic_smem_bytes: u32,
    /// `min_occupancy`: the least theoretical occupancy accepted, a fraction in (0, 1] of the
    /// SM's maximum resident warps.
    pub min_occupancy: Option<f64>,
    /// `max_spill_bytes`: the most spill bytes (stores + loads reported by ptxas) accepted;
    /// the `spills` lint treats an absent value as 0.
    pub max_spill_bytes: Option<u32>,
    /// `max_stack_bytes`: the largest stack frame per thread accepted, in bytes.
    pub max_stack_bytes: Option<u32>,
    /// `max_registers_per_thread`: the most registers per thread accepted (a threshold
    /// checked after compiling; unlike `max_registers` it does not constrain ptxas).
    pub max_registers_per_thread: Option<u32>,
    /// `name`: the compiled symbol when it differs from the Rust item's name.
    pub name: Option<String>,
    /// `archs`: this kernel's target architectures, overriding the crate's list.
    pub archs: Option<Vec<String>>,
    /// `family = "affine_*"`: the declaration covers every compiled kernel whose symbol matches
    /// this pattern (`*` is any run of characters), not one kernel.
    #[serde(default)]
    pub family: Option<String>,
    /// `allow(...)`, `warn(...)`, `deny(...)`: per-kernel lint levels.
    pub lint_levels: BTreeMap<LintId, Level>,
    /// `expect(...)`: lints whose finding must occur; the build fails when none does (like
    /// Rust's `#[expect]`), so the exception goes when it is no longer needed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub expected_lints: BTreeSet<LintId>,
    /// `reason = "..."` written in a lint list: why the level or expectation was set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lint_reasons: BTreeMap<LintId, String>,
}

impl KernelSpec {
    /// A spec with only a block: every other key absent.
    pub fn with_block(block: BlockDim) -> KernelSpec {
        KernelSpec {
            block,
            min_blocks_per_sm: None,
            max_registers: None,
            dynamic_smem_bytes: 0,
            min_occupancy: None,
            max_spill_bytes: None,
            max_stack_bytes: None,
            max_registers_per_thread: None,
            name: None,
            archs: None,
            family: None,
            lint_levels: BTreeMap::new(),
            expected_lints: BTreeSet::new(),
            lint_reasons: BTreeMap::new(),
        }
    }

    /// Parses and validates the arguments of `#[occupancy::kernel(...)]` (the tokens inside the
    /// parentheses). This is what the proc macro calls; errors carry the span of the offending
    /// token and a message that says what to edit.
    #[cfg(feature = "spec")]
    pub fn parse_args(tokens: proc_macro2::TokenStream) -> syn::Result<KernelSpec> {
        grammar::parse_spec(tokens, proc_macro2::Span::call_site()).map(|parsed| parsed.spec)
    }

    /// The spill bytes the `spills` lint accepts: `max_spill_bytes`, 0 when not declared.
    pub fn spill_bytes_allowed(&self) -> u32 {
        self.max_spill_bytes.unwrap_or(0)
    }

    /// The level of `lint` set in this declaration, if any.
    pub fn lint_level(&self, lint: LintId) -> Option<Level> {
        self.lint_levels.get(&lint).copied()
    }
}

impl fmt::Display for KernelSpec {
    /// The canonical attribute arguments, e.g. `block = (32, 8), min_occupancy = 0.5, warn(spills)`.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "block = {}", self.block)?;
        let optional_integers = [
            ("min_blocks_per_sm", self.min_blocks_per_sm),
            ("max_registers", self.max_registers),
            (
                "dynamic_smem",
                Some(self.dynamic_smem_bytes).filter(|bytes| *bytes != 0),
            ),
        ];
        for (key, value) in optional_integers {
            if let Some(value) = value {
                write!(formatter, ", {key} = {value}")?;
            }
        }
        if let Some(fraction) = self.min_occupancy {
            // f64's Display is the shortest text that parses back to the same value.
            write!(formatter, ", min_occupancy = {fraction}")?;
        }
        let thresholds = [
            ("max_spill_bytes", self.max_spill_bytes),
            ("max_stack_bytes", self.max_stack_bytes),
            ("max_registers_per_thread", self.max_registers_per_thread),
        ];
        for (key, value) in thresholds {
            if let Some(value) = value {
                write!(formatter, ", {key} = {value}")?;
            }
        }
        if let Some(name) = &self.name {
            write!(formatter, ", name = {name:?}")?;
        }
        if let Some(family) = &self.family {
            write!(formatter, ", family = {family:?}")?;
        }
        if let Some(archs) = &self.archs {
            let quoted: Vec<String> = archs.iter().map(|arch| format!("{arch:?}")).collect();
            write!(formatter, ", archs = [{}]", quoted.join(", "))?;
        }
        let levels = Level::ALL.map(|level| {
            let lints: Vec<LintId> = self
                .lint_levels
                .iter()
                .filter(|(_, lint_level)| **lint_level == level)
                .map(|(lint, _)| *lint)
                .collect();
            (level.as_str(), lints)
        });
        let expected = ("expect", self.expected_lints.iter().copied().collect());
        for (word, lints) in levels.into_iter().chain([expected]) {
            self.write_lint_lists(formatter, word, &lints)?;
        }
        Ok(())
    }
}

impl KernelSpec {
    /// `word(a, b)` for the lints without a reason, then `word(c, reason = "...")` per reason.
    fn write_lint_lists(
        &self,
        formatter: &mut fmt::Formatter<'_>,
        word: &str,
        lints: &[LintId],
    ) -> fmt::Result {
        let mut by_reason: BTreeMap<Option<&str>, Vec<&str>> = BTreeMap::new();
        for lint in lints {
            let reason = self.lint_reasons.get(lint).map(String::as_str);
            by_reason.entry(reason).or_default().push(lint.as_str());
        }
        for (reason, names) in by_reason {
            match reason {
                None => write!(formatter, ", {word}({})", names.join(", "))?,
                Some(reason) => write!(
                    formatter,
                    ", {word}({}, reason = {reason:?})",
                    names.join(", ")
                )?,
            }
        }
        Ok(())
    }
}

/// One key of the attribute, for pointing diagnostics at it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SpecKey {
    /// `block = ...`
    Block,
    /// `min_blocks_per_sm = ...`
    MinBlocksPerSm,
    /// `max_registers = ...`
    MaxRegisters,
    /// `dynamic_smem = ...`
    DynamicSmem,
    /// `min_occupancy = ...`
    MinOccupancy,
    /// `max_spill_bytes = ...`
    MaxSpillBytes,
    /// `max_stack_bytes = ...`
    MaxStackBytes,
    /// `max_registers_per_thread = ...`
    MaxRegistersPerThread,
    /// `name = "..."`
    Name,
    /// `archs = [...]`
    Archs,
    /// `family = "pattern_*"`
    Family,
    /// The lint's name inside `allow(...)`, `warn(...)`, `deny(...)` or `expect(...)`.
    Lint(LintId),
}

impl SpecKey {
    /// Every `key = value` key, in documentation order.
    pub const VALUE_KEYS: [SpecKey; 11] = [
        SpecKey::Block,
        SpecKey::MinBlocksPerSm,
        SpecKey::MaxRegisters,
        SpecKey::DynamicSmem,
        SpecKey::MinOccupancy,
        SpecKey::MaxSpillBytes,
        SpecKey::MaxStackBytes,
        SpecKey::MaxRegistersPerThread,
        SpecKey::Name,
        SpecKey::Archs,
        SpecKey::Family,
    ];

    /// The key as written in the attribute (`lint levels` for lint entries).
    pub const fn as_str(self) -> &'static str {
        match self {
            SpecKey::Block => "block",
            SpecKey::MinBlocksPerSm => "min_blocks_per_sm",
            SpecKey::MaxRegisters => "max_registers",
            SpecKey::DynamicSmem => "dynamic_smem",
            SpecKey::MinOccupancy => "min_occupancy",
            SpecKey::MaxSpillBytes => "max_spill_bytes",
            SpecKey::MaxStackBytes => "max_stack_bytes",
            SpecKey::MaxRegistersPerThread => "max_registers_per_thread",
            SpecKey::Name => "name",
            SpecKey::Archs => "archs",
            SpecKey::Family => "family",
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
            SpecKey::Lint(_) => "lint-levels",
            other => other.as_str(),
        }
    }
}

impl fmt::Display for SpecKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecKey::Lint(lint) => write!(formatter, "lint `{lint}`"),
            other => formatter.write_str(other.as_str()),
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
