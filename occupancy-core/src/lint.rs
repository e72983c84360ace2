//! Lints: the registry of every check the build gate can report, and their levels.
//!
//! This module is the single list of lint ids, their default levels and their documentation.
//! `docs/lints.md` is rendered from it ([`render_lints_markdown`]) and a test fails when the
//! committed file drifts. Users set levels in clippy's words, most specific wins:
//!
//! 1. per kernel, in the attribute: `#[occupancy::kernel(block = 256, warn(spills))]`;
//! 2. by environment: `OCCUPANCY_LINT_SPILLS=warn` ([`LintId::env_var`]);
//! 3. per crate: `[package.metadata.occupancy.lints]` then `[workspace.metadata.occupancy.lints]`
//!    with `spills = "warn"` ([`LintId::as_str`] is the key);
//! 4. the default ([`LintId::default_level`]).
//!
//! What this module must not do: evaluate anything. Turning compiler reports into findings is
//! the evaluation part of the build gate, which lives below the registry (see the seam at the
//! end of this file) and must take its ids, levels and texts from here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How a finding of a lint is treated, in clippy's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Not reported (still recorded in the JSON report).
    Allow,
    /// Reported as a `cargo:warning`; the build goes on.
    Warn,
    /// Reported as an error; the build fails.
    Deny,
}

impl Level {
    /// Every level, from least to most severe.
    pub const ALL: [Level; 3] = [Level::Allow, Level::Warn, Level::Deny];

    /// The word used in attributes, config files and environment variables.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Allow => "allow",
            Level::Warn => "warn",
            Level::Deny => "deny",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A level word that is not `allow`, `warn` or `deny`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lint level `{given}`: write `allow`, `warn` or `deny`{hint}")]
pub struct UnknownLevel {
    /// What was written.
    pub given: String,
    hint: String,
}

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "allow" => Ok(Level::Allow),
            "warn" => Ok(Level::Warn),
            "deny" => Ok(Level::Deny),
            other => {
                let lowered = other.trim().to_ascii_lowercase();
                let hint = match lowered.as_str() {
                    "forbid" => " (`forbid` is not supported; `deny` fails the build)".to_owned(),
                    "error" => " (did you mean `deny`?)".to_owned(),
                    "warning" => " (did you mean `warn`?)".to_owned(),
                    "off" | "ignore" | "none" => " (did you mean `allow`?)".to_owned(),
                    _ => {
                        match did_you_mean(&lowered, Level::ALL.iter().map(|level| level.as_str()))
                        {
                            Some(suggestion) => format!(" (did you mean `{suggestion}`?)"),
                            None => String::new(),
                        }
                    }
                };
                Err(UnknownLevel {
                    given: other.to_owned(),
                    hint,
                })
            }
        }
    }
}

/// Every lint the build gate can report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LintId {
    /// Spill bytes above the declared `max_spill_bytes` (default 0).
    Spills,
    /// Theoretical occupancy below the declared `min_occupancy`.
    LowOccupancy,
    /// More registers per thread than the declared `max_registers_per_thread`.
    TooManyRegisters,
    /// The declared launch cannot start on an architecture.
    Unlaunchable,
    /// The kernel was not compiled with the declared launch bounds.
    BoundsMismatch,
    /// A declared kernel is not in any compiled output.
    MissingKernel,
    /// Stack frame above the declared `max_stack_bytes` (or any stack when none is declared).
    StackFrame,
    /// The kernel uses local memory (arrays indexed at run time, large structs).
    LocalMemory,
    /// A few registers or bytes more would cost a resident block.
    OccupancyCliff,
    /// The declared block is not a multiple of the warp size (32 threads).
    PartialWarp,
    /// A compiled kernel has no `#[occupancy::kernel]` declaration.
    UndeclaredKernel,
    /// Worse than the committed baseline.
    Regression,
    /// Better than, or otherwise different from, the committed baseline: it no longer says
    /// what the code compiles to.
    BaselineStale,
    /// An `expect(...)` in a declaration whose finding no longer occurs.
    UnfulfilledExpectation,
    /// Spill loads or stores inside a loop of the kernel's machine code (SASS).
    SpillInLoop,
    /// A local array indexed at run time (local memory at a computed address in the SASS).
    LocalArray,
    /// A `setmaxnreg` ptxas dropped (warning C7508, or no `USETMAXREG` in the SASS).
    SetmaxnregIgnored,
    /// Warp-specialised `setmaxnreg` budgets that exceed the block's register allocation.
    SetmaxnregBudget,
    /// Double-precision instructions in the kernel's SASS.
    Fp64,
    /// Non-inlined calls in the kernel's SASS.
    Call,
}

/// The documentation of one lint, as it appears in `docs/lints.md` and in `cargo occupancy explain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LintInfo {
    /// The id, as in [`LintId`].
    pub id: LintId,
    /// One line: what the lint reports.
    pub summary: &'static str,
    /// Why a finding is bad for the crate.
    pub why_bad: &'static str,
    /// A declaration (and situation) that triggers it.
    pub example: &'static str,
    /// What to change.
    pub fix: &'static str,
}

impl LintId {
    /// Every lint, in the order they are documented.
    pub const ALL: [LintId; 20] = [
        LintId::Spills,
        LintId::LowOccupancy,
        LintId::TooManyRegisters,
        LintId::Unlaunchable,
        LintId::BoundsMismatch,
        LintId::MissingKernel,
        LintId::StackFrame,
        LintId::LocalMemory,
        LintId::OccupancyCliff,
        LintId::PartialWarp,
        LintId::UndeclaredKernel,
        LintId::Regression,
        LintId::BaselineStale,
        LintId::UnfulfilledExpectation,
        LintId::SpillInLoop,
        LintId::LocalArray,
        LintId::SetmaxnregIgnored,
        LintId::SetmaxnregBudget,
        LintId::Fp64,
        LintId::Call,
    ];

    /// The id as written in attributes (`warn(spills)`), config keys and JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            LintId::Spills => "spills",
            LintId::LowOccupancy => "low_occupancy",
            LintId::TooManyRegisters => "too_many_registers",
            LintId::Unlaunchable => "unlaunchable",
            LintId::BoundsMismatch => "bounds_mismatch",
            LintId::MissingKernel => "missing_kernel",
            LintId::StackFrame => "stack_frame",
            LintId::LocalMemory => "local_memory",
            LintId::OccupancyCliff => "occupancy_cliff",
            LintId::PartialWarp => "partial_warp",
            LintId::UndeclaredKernel => "undeclared_kernel",
            LintId::Regression => "regression",
            LintId::BaselineStale => "baseline_stale",
            LintId::UnfulfilledExpectation => "unfulfilled_expectation",
            LintId::SpillInLoop => "spill_in_loop",
            LintId::LocalArray => "local_array",
            LintId::SetmaxnregIgnored => "setmaxnreg_ignored",
            LintId::SetmaxnregBudget => "setmaxnreg_budget",
            LintId::Fp64 => "fp64",
            LintId::Call => "call",
        }
    }

    /// The level a finding gets when nothing overrides it.
    pub const fn default_level(self) -> Level {
        match self {
            LintId::Spills
            | LintId::LowOccupancy
            | LintId::TooManyRegisters
            | LintId::Unlaunchable
            | LintId::BoundsMismatch
            | LintId::MissingKernel
            | LintId::Regression
            | LintId::UnfulfilledExpectation
            | LintId::SpillInLoop
            | LintId::SetmaxnregIgnored
            | LintId::SetmaxnregBudget => Level::Deny,
            LintId::StackFrame
            | LintId::LocalMemory
            | LintId::OccupancyCliff
            | LintId::PartialWarp
            | LintId::BaselineStale
            | LintId::LocalArray
            | LintId::Call => Level::Warn,
            LintId::UndeclaredKernel | LintId::Fp64 => Level::Allow,
        }
    }

    /// The environment variable that sets this lint's level for a whole build, e.g.
    /// `OCCUPANCY_LINT_SPILLS=warn`.
    pub fn env_var(self) -> String {
        format!("OCCUPANCY_LINT_{}", self.as_str().to_ascii_uppercase())
    }

    /// The line to write in Cargo.toml under `[package.metadata.occupancy.lints]`
    /// (or `[workspace.metadata.occupancy.lints]`) to set `level` for a whole crate.
    pub fn config_line(self, level: Level) -> String {
        format!("{} = \"{}\"", self.as_str(), level.as_str())
    }

    /// The lint's documentation.
    pub const fn info(self) -> LintInfo {
        let (summary, why_bad, example, fix) = match self {
            LintId::Spills => (
                "ptxas spilled registers to local memory: spill bytes above the declared `max_spill_bytes` (default 0).",
                "Spilled values live in local memory, which is cached device memory: every spill store and load is a memory round trip in the kernel's hot path, often costing more than the occupancy the register cap bought.",
                "`#[occupancy::kernel(block = 256, min_blocks_per_sm = 8)]` on a kernel that needs 96 registers per thread: 8 blocks of 256 threads leave ptxas 32 registers, so it spills.",
                "Lower `min_blocks_per_sm` (the diagnostic names the largest value that keeps the kernel spill-free), raise `max_registers`, reduce live values in the kernel, or accept the spills with `max_spill_bytes = N`.",
            ),
            LintId::LowOccupancy => (
                "Theoretical occupancy on some target architecture is below the declared `min_occupancy`.",
                "Too few resident warps leave the SM idle while warps wait on memory; the kernel runs at a fraction of the bandwidth or throughput the crate expects.",
                "`#[occupancy::kernel(block = 256, min_occupancy = 0.5)]` on a kernel using 128 registers per thread: on sm_90 only 2 blocks (512 of 2048 threads, 25%) fit.",
                "Reduce registers (`min_blocks_per_sm` or `max_registers`), shared memory or block size; or lower `min_occupancy`, or `expect(low_occupancy, reason = \"...\")` when low occupancy is deliberate (register tiling).",
            ),
            LintId::TooManyRegisters => (
                "The kernel uses more registers per thread than the declared `max_registers_per_thread`.",
                "Registers per thread decide how many warps fit on an SM; a kernel that grows past the budget its authors set loses occupancy (or spills once capped) without anyone deciding it.",
                "`#[occupancy::kernel(block = 256, max_registers_per_thread = 64)]` on a kernel that ptxas compiles to 72 registers per thread.",
                "Reduce live values, cap registers at compile time with `max_registers = N` (ptxas may spill), raise `max_registers_per_thread`, or `allow(too_many_registers)`.",
            ),
            LintId::Unlaunchable => (
                "The declared launch cannot start on some target architecture.",
                "The launch fails at run time (too many resources requested for launch, or invalid argument), on exactly the GPUs named, usually far from where the kernel was changed.",
                "`#[occupancy::kernel(block = 1024)]` on a kernel using 72 registers per thread: 1024 x 72 = 73728 registers, above the 65536 per block.",
                "Make the block smaller, cap registers with `min_blocks_per_sm` or `max_registers`, or lower `dynamic_smem`; or drop the architecture from `archs`.",
            ),
            LintId::BoundsMismatch => (
                "The compiled kernel's launch bounds (`.maxntid`, `.minnctapersm`, `.maxnreg`) differ from the declaration.",
                "The declaration is what the crate launches with; a kernel compiled for other bounds either spends registers the launch cannot use or cannot be launched with the declared block.",
                "`#[occupancy::kernel(block = 256, min_blocks_per_sm = 4)]` while the .cu kernel says `__launch_bounds__(128)`.",
                "Take the bounds from the declaration: `__launch_bounds__(OCCUPANCY_BOUNDS_<kernel>)` from the generated `occupancy_bounds.h`, or edit one side to match the other.",
            ),
            LintId::MissingKernel => (
                "A declared kernel was not found in any compiled output.",
                "Nothing about the kernel could be checked: a renamed or removed kernel, a C++ name without `extern \"C\"`, or a file not handed to the builder would otherwise pass silently.",
                "`#[occupancy::kernel(block = 256)] fn saxpy();` while the .cu file defines `saxpy_f32`.",
                "Set `name = \"...\"` to the compiled symbol (the mangled name for C++ kernels), declare the kernel `extern \"C\"`, or add its file to the builder.",
            ),
            LintId::StackFrame => (
                "The kernel's stack frame is above the declared `max_stack_bytes` (any stack when none is declared).",
                "Stack lives in local memory: each thread's frame costs memory traffic and, for deep call chains or recursion, device memory reserved per resident thread.",
                "A kernel calling a non-inlined device function with a 64-byte local array: ptxas reports `64 bytes stack frame`.",
                "Inline the callee (`__forceinline__`), keep arrays indexed by constants so they stay in registers, or declare `max_stack_bytes = N`.",
            ),
            LintId::LocalMemory => (
                "The kernel uses local memory (`ld.local`/`st.local`) beyond register spills.",
                "Local memory is device memory behind the L1 cache; arrays indexed at run time and large structs placed there turn register reads into memory traffic.",
                "`float acc[16]; acc[threadIdx.x % 16] += x;`: the run-time index forces `acc` into local memory.",
                "Index local arrays with compile-time constants (unrolled loops), use shared memory for per-block scratch, or `allow(local_memory)`.",
            ),
            LintId::OccupancyCliff => (
                "A few more registers or bytes of shared memory would cost a resident block on some architecture.",
                "The next small change to the kernel (one more live variable) silently drops occupancy by a whole block; knowing the margin keeps that drop a decision, not an accident.",
                "A 256-thread kernel at 64 registers on sm_90: 4 blocks fit; at 65 registers (allocated as 72) only 3 do.",
                "Leave it as a warning to watch, cap registers at the current value (`max_registers = 64`), or `allow(occupancy_cliff)`.",
            ),
            LintId::PartialWarp => (
                "The declared block is not a multiple of the warp size (32 threads).",
                "Threads are scheduled in warps of 32: the last warp of each block runs partly empty, and the idle lanes still take registers and issue slots.",
                "`#[occupancy::kernel(block = 100)]`: 4 warps are allocated, 28 lanes idle in every block.",
                "Round the block up to a multiple of 32 and guard the extra threads with a bounds check, or `allow(partial_warp)`.",
            ),
            LintId::UndeclaredKernel => (
                "A compiled kernel has no `#[occupancy::kernel]` declaration.",
                "An undeclared kernel is only checked for spills, unlaunchable launches and stack frames, at the crate's default launch (`block` under `[package.metadata.occupancy]`, 256 threads when unset, or the kernel's smaller `__launch_bounds__`), not against the crate's intent; findings of many undeclared kernels are shown as one summary per lint, the full list in the report.",
                "A .cu file defines `__global__ void transpose(...)` but no Rust stub declares it.",
                "Declare it next to its Rust stub with `#[occupancy::kernel(...)]` (one `family = \"prefix_*\"` declaration covers a macro-generated family), or leave this lint at its default `allow`.",
            ),
            LintId::Regression => (
                "A kernel is worse than the committed baseline (`occupancy.lock`): more registers, spills or stack, or lower occupancy.",
                "Regressions in resource use are invisible in review and show up as slowdowns much later; the baseline makes every one a visible diff.",
                "The baseline records 40 registers and 50% occupancy on sm_80; a change makes it 48 registers and 37.5%.",
                "Fix the kernel, or accept the new numbers with `OCCUPANCY_BLESS=1 cargo build` (or `cargo occupancy bless`) and commit the updated baseline.",
            ),
            LintId::BaselineStale => (
                "The committed baseline (`occupancy.lock`) no longer equals what the code compiles to: a kernel got better, is new or gone, or the toolchain changed.",
                "A one-way baseline lets improvements rot: the next regression back to the old numbers passes unnoticed, and the file stops reading like the history of the kernels.",
                "The baseline records 48 registers on sm_90; a change makes it 40 (occupancy 50% -> 62.5%), and the file still says 48.",
                "Run `OCCUPANCY_BLESS=1 cargo build` and commit the baseline with the change; in CI set `baseline_stale = \"deny\"` (or `OCCUPANCY_LINT_BASELINE_STALE=deny`) so the committed file always matches.",
            ),
            LintId::UnfulfilledExpectation => (
                "A declaration expects a finding (`expect(spills, reason = \"...\")`) that no longer occurs.",
                "An exception that outlives its cause hides the next real finding of the same lint; like Rust's `#[expect]`, it must be removed when it is no longer needed.",
                "`#[occupancy::kernel(block = 256, expect(spills, reason = \"tracked in #12\"))]` on a kernel that no longer spills on any target arch.",
                "Remove the `expect(...)` from the declaration (the finding is gone), or keep it as `allow(...)` if the exception should stay without being checked.",
            ),
            LintId::SpillInLoop => (
                "Spill loads or stores sit inside a loop of the kernel's machine code (SASS), at the source lines named.",
                "A spill inside a loop is a local-memory round trip on every iteration, which is where spills cost time; a spill outside loops runs once and stays with `spills` at its own level.",
                "A loop that updates 48 accumulators under `__launch_bounds__(256, 8)` (32 registers): ptxas spills some of them and reloads them in the loop body on every iteration.",
                "Give the loop more registers (lower `min_blocks_per_sm`, raise `max_registers`, move `setmaxnreg` budget to the warps that run the loop), keep fewer values live across the loop at the line named, or `allow(spill_in_loop)` when the loop is cold.",
            ),
            LintId::LocalArray => (
                "A local array is indexed at run time: the SASS reads or writes local memory at a computed address, at the line named.",
                "An array indexed by a value the compiler cannot resolve cannot live in registers; every access is a local-memory access, often inside the loop that computes the index.",
                "`float table[32]; ... sum += table[index[i] & 31];`: ptxas places `table` in local memory and each lookup is an `LDL`.",
                "Index with compile-time constants (unroll the loop), use shared memory for tables, select with a switch or shuffles, or `allow(local_array)`.",
            ),
            LintId::SetmaxnregIgnored => (
                "ptxas dropped a `setmaxnreg`: it warned C7508 (register count at entry unknown), or the PTX has `setmaxnreg` and the SASS has no `USETMAXREG`.",
                "Warp-specialised kernels rely on `setmaxnreg` to give consumer warps more registers; ignored, every warp keeps the entry count, and the consumers spill or the budget plan silently does nothing.",
                "`setmaxnreg.inc.sync.aligned.u32 240;` in a kernel without `__launch_bounds__`: ptxas prints `(C7508) ... 'setmaxnreg' ignored` and emits no `USETMAXREG`.",
                "Give the kernel launch bounds with a maximum block size (`__launch_bounds__(OCCUPANCY_BOUNDS_<kernel>)` from the declaration, or `__launch_bounds__(384, 1)`), so ptxas knows the register count at entry.",
            ),
            LintId::SetmaxnregBudget => (
                "The kernel's warp-specialised `setmaxnreg` budgets need more registers than the declared block is allocated.",
                "`setmaxnreg.inc` waits until the block's pool has the registers; if the roles' budgets add up to more than the block got at launch, the increasing warps wait forever or the plan cannot hold.",
                "384 threads at 168 registers (64512 per block): one producer warpgroup at 40 and two consumers at 240 need 128 x (40 + 2 x 240) = 66560.",
                "Lower the consumers' `setmaxnreg.inc` value or raise the producer's `.dec` release so that 128 x (producer + consumers x warpgroups) fits the block's allocation, or change the block size.",
            ),
            LintId::Fp64 => (
                "The kernel runs double-precision instructions (`DFMA`, `DADD`, `DMUL`, ...); the finding counts them.",
                "FP64 throughput is 1/2 of FP32 on data-centre GPUs but 1/64 on consumer ones; a stray `double` literal or `sin` instead of `sinf` can make a float kernel FP64-bound.",
                "`out[i] = sin(x[i]);` on a `float` array promotes to double: DFMA/DMUL in the SASS and a call to the double-precision sin/cos slow path.",
                "Use `float` literals (`1.0f`) and functions (`sinf`, `expf`), `-use_fast_math` where acceptable; or leave this lint at its default `allow` when FP64 is intended.",
            ),
            LintId::Call => (
                "The kernel makes non-inlined calls (`CALL`) in its SASS; the finding names each callee and, for math-library helpers, what it is. ptxas's own arithmetic subroutines (the IEEE division, square root and reciprocal slow paths, 64-bit integer division) are not counted: ptxas branches to them only for operands its inline fast path cannot handle, and calls them without a frame.",
                "A call spills live registers around it to the callee's frame in local memory and blocks optimisation across it; in a loop, that cost is paid every iteration.",
                "`sin(x)` on a double: ptxas calls `__internal_trig_reduction_slowpathd`, the double-precision sin/cos slow path, with a local-memory frame.",
                "For math helpers, the fix the finding names (`sinf`/`__sinf`/`-use_fast_math`); for your own functions, `__forceinline__`; or `allow(call)`.",
            ),
        };
        LintInfo {
            id: self,
            summary,
            why_bad,
            example,
            fix,
        }
    }
}

impl fmt::Display for LintId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A lint name that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lint `{given}`{}", suggestion_text(.suggestion))]
pub struct UnknownLint {
    /// What was written.
    pub given: String,
    /// The closest lint id, if one is close enough to be a likely typo.
    pub suggestion: Option<LintId>,
}

fn suggestion_text(suggestion: &Option<LintId>) -> String {
    match suggestion {
        Some(id) => format!(": did you mean `{id}`?"),
        None => format!(
            "; the lints are: {}",
            LintId::ALL
                .iter()
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl FromStr for LintId {
    type Err = UnknownLint;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(id) = LintId::ALL.into_iter().find(|id| id.as_str() == text) {
            return Ok(id);
        }
        let normalized = text.trim().to_ascii_lowercase().replace('-', "_");
        let suggestion = LintId::ALL
            .into_iter()
            .find(|id| id.as_str() == normalized)
            .or_else(|| {
                let candidate =
                    did_you_mean(&normalized, LintId::ALL.iter().map(|id| id.as_str()))?;
                LintId::ALL.into_iter().find(|id| id.as_str() == candidate)
            });
        Err(UnknownLint {
            given: text.to_owned(),
            suggestion,
        })
    }
}

/// The candidate closest to `given` by edit distance, when close enough to be a typo.
///
/// Shared by every "did you mean" in the toolkit (keys, lint ids, levels, kernel names). Ties
/// go to the candidate listed first.
pub fn did_you_mean<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    closest_names(given, candidates, 1).into_iter().next()
}

/// At most `limit` candidates close enough to `given` to be a typo of it, closest first (ties in
/// the order given). What a "did you mean" lists, so a list of 600 names is never printed whole.
pub fn closest_names<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<&'a str> {
    let allowed_distance = (given.chars().count() / 3).max(2);
    let mut close: Vec<(usize, usize, &'a str)> = candidates
        .into_iter()
        .enumerate()
        .map(|(order, candidate)| (edit_distance(given, candidate), order, candidate))
        .filter(|(distance, _, _)| *distance <= allowed_distance)
        .collect();
    close.sort_unstable();
    close.dedup_by_key(|(_, _, candidate)| *candidate);
    close
        .into_iter()
        .take(limit)
        .map(|(_, _, candidate)| candidate)
        .collect()
}

/// Edit distance in characters: insertions, deletions, substitutions and transpositions of two
/// neighbours each count 1 (optimal string alignment), so `f23` is one edit from `f32`.
pub fn edit_distance(left: &str, right: &str) -> usize {
    let left: Vec<char> = left.chars().collect();
    let right: Vec<char> = right.chars().collect();
    let width = right.len() + 1;
    // Three rows: two back (for transpositions), one back, current.
    let mut before_previous = vec![0; width];
    let mut previous: Vec<usize> = (0..width).collect();
    for left_index in 1..=left.len() {
        let mut current = vec![left_index; width];
        for right_index in 1..width {
            let same = left[left_index - 1] == right[right_index - 1];
            let mut best = (previous[right_index - 1] + usize::from(!same))
                .min(previous[right_index] + 1)
                .min(current[right_index - 1] + 1);
            if left_index > 1
                && right_index > 1
                && left[left_index - 1] == right[right_index - 2]
                && left[left_index - 2] == right[right_index - 1]
            {
                best = best.min(before_previous[right_index - 2] + 1);
            }
            current[right_index] = best;
        }
        before_previous = std::mem::replace(&mut previous, current);
    }
    previous[right.len()]
}

/// Renders `docs/lints.md` from the registry. A test compares the committed file with this;
/// `OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test lints_doc` rewrites it.
pub fn render_lints_markdown() -> String {
    let mut out = String::new();
    out.push_str("# Lints\n\n");
    out.push_str("<!-- Generated from occupancy-core/src/lint.rs by `render_lints_markdown`; a test fails when this file drifts.\n");
    out.push_str("     Regenerate with: OCCUPANCY_BLESS_DOCS=1 cargo test -p occupancy-core --test lints_doc -->\n\n");
    out.push_str("Every finding of the build gate belongs to one of these lints. Each has a level, in clippy's words:\n");
    out.push_str("`allow` (recorded in the JSON report only), `warn` (a `cargo:warning`, the build goes on) or\n");
    out.push_str("`deny` (an error, the build fails).\n\n");
    out.push_str("## Setting levels\n\n");
    out.push_str("The most specific setting wins:\n\n");
    out.push_str("1. per kernel, in the declaration: `#[occupancy::kernel(block = 256, warn(spills), allow(low_occupancy, partial_warp, reason = \"register tiling\"))]`\n");
    out.push_str("   (allowing a lint that denies by default needs a `reason`; `expect(lint, reason = \"...\")` also fails the build once the finding is gone,\n");
    out.push_str("   see [declaring-kernels.md](declaring-kernels.md#expect));\n");
    out.push_str(
        "2. for one build, by environment variable: `OCCUPANCY_LINT_SPILLS=warn cargo build`;\n",
    );
    out.push_str("3. per crate, in Cargo.toml:\n\n");
    out.push_str("   ```toml\n   [package.metadata.occupancy.lints]\n   spills = \"warn\"\n   partial_warp = \"allow\"\n   ```\n\n");
    out.push_str(
        "   or for every crate of a workspace under `[workspace.metadata.occupancy.lints]`;\n",
    );
    out.push_str("4. the default level below.\n\n");
    out.push_str("| lint | default | environment variable | summary |\n|---|---|---|---|\n");
    for id in LintId::ALL {
        out.push_str(&format!(
            "| [`{id}`](#{id}) | {} | `{}` | {} |\n",
            id.default_level(),
            id.env_var(),
            id.info().summary
        ));
    }
    for id in LintId::ALL {
        let info = id.info();
        out.push_str(&format!("\n## {id}\n\n"));
        out.push_str(&format!("Default level: **{}**.\n\n", id.default_level()));
        out.push_str(&format!("{}\n\n", info.summary));
        out.push_str(&format!("**Why is this bad?** {}\n\n", info.why_bad));
        out.push_str(&format!("**Example.** {}\n\n", info.example));
        out.push_str(&format!("**Fix.** {}\n\n", info.fix));
        let other_level = if id.default_level() == Level::Deny {
            Level::Warn
        } else {
            Level::Deny
        };
        out.push_str(&format!(
            "**Configure.** Per kernel: `{other_level}({id})` in the attribute. Per crate: `{}` under `[package.metadata.occupancy.lints]`. Per build: `{}={other_level}`.\n",
            id.config_line(other_level),
            id.env_var()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_from_str_display_and_serde() {
        for id in LintId::ALL {
            assert_eq!(id.as_str().parse::<LintId>(), Ok(id));
            assert_eq!(id.to_string(), id.as_str());
            assert_eq!(
                serde_json::to_string(&id).unwrap(),
                format!("\"{}\"", id.as_str())
            );
            assert_eq!(
                serde_json::from_str::<LintId>(&format!("\"{id}\"")).unwrap(),
                id
            );
        }
    }

    #[test]
    fn all_lists_every_variant_once() {
        let mut ids: Vec<&str> = LintId::ALL.iter().map(|id| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), LintId::ALL.len());
        assert_eq!(ids.len(), 20);
    }

    #[test]
    fn default_levels_are_the_documented_ones() {
        let defaults: Vec<(&str, Level)> = LintId::ALL
            .iter()
            .map(|id| (id.as_str(), id.default_level()))
            .collect();
        assert_eq!(
            defaults,
            [
                ("spills", Level::Deny),
                ("low_occupancy", Level::Deny),
                ("too_many_registers", Level::Deny),
                ("unlaunchable", Level::Deny),
                ("bounds_mismatch", Level::Deny),
                ("missing_kernel", Level::Deny),
                ("stack_frame", Level::Warn),
                ("local_memory", Level::Warn),
                ("occupancy_cliff", Level::Warn),
                ("partial_warp", Level::Warn),
                ("undeclared_kernel", Level::Allow),
                ("regression", Level::Deny),
                ("baseline_stale", Level::Warn),
                ("unfulfilled_expectation", Level::Deny),
                ("spill_in_loop", Level::Deny),
                ("local_array", Level::Warn),
                ("setmaxnreg_ignored", Level::Deny),
                ("setmaxnreg_budget", Level::Deny),
                ("fp64", Level::Allow),
                ("call", Level::Warn),
            ]
        );
    }

    #[test]
    fn unknown_lint_suggests_the_closest_id() {
        let error = "spill".parse::<LintId>().unwrap_err();
        assert_eq!(error.suggestion, Some(LintId::Spills));
        assert_eq!(
            error.to_string(),
            "unknown lint `spill`: did you mean `spills`?"
        );
        assert_eq!(
            "low-occupancy".parse::<LintId>().unwrap_err().suggestion,
            Some(LintId::LowOccupancy)
        );
        assert_eq!(
            "occupancy_clif".parse::<LintId>().unwrap_err().suggestion,
            Some(LintId::OccupancyCliff)
        );
        let far = "banana".parse::<LintId>().unwrap_err();
        assert_eq!(far.suggestion, None);
        assert!(
            far.to_string()
                .contains("the lints are: spills, low_occupancy"),
            "{far}"
        );
    }

    #[test]
    fn levels_parse_and_suggest() {
        for level in Level::ALL {
            assert_eq!(level.as_str().parse::<Level>(), Ok(level));
        }
        assert_eq!(
            "forbid".parse::<Level>().unwrap_err().to_string(),
            "unknown lint level `forbid`: write `allow`, `warn` or `deny` (`forbid` is not supported; `deny` fails the build)"
        );
        assert!("wran"
            .parse::<Level>()
            .unwrap_err()
            .to_string()
            .ends_with("(did you mean `warn`?)"));
        assert!("error"
            .parse::<Level>()
            .unwrap_err()
            .to_string()
            .ends_with("(did you mean `deny`?)"));
    }

    #[test]
    fn env_var_and_config_line() {
        assert_eq!(LintId::Spills.env_var(), "OCCUPANCY_LINT_SPILLS");
        assert_eq!(
            LintId::OccupancyCliff.env_var(),
            "OCCUPANCY_LINT_OCCUPANCY_CLIFF"
        );
        assert_eq!(LintId::Spills.config_line(Level::Warn), "spills = \"warn\"");
    }

    #[test]
    fn every_lint_is_documented() {
        for id in LintId::ALL {
            let info = id.info();
            assert_eq!(info.id, id);
            for text in [info.summary, info.why_bad, info.example, info.fix] {
                assert!(text.len() > 20 && !text.contains('\n'), "{id}: {text:?}");
            }
        }
    }

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("block", "block"), 0);
        assert_eq!(did_you_mean("blok", ["block", "name"]), Some("block"));
        assert_eq!(did_you_mean("zzzzzz", ["block", "name"]), None);
    }

    #[test]
    fn transpositions_are_one_edit_so_the_typo_picks_its_kernel() {
        assert_eq!(edit_distance("f23", "f32"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        // `where_u32_f16` is listed first and two substitutions away; the transposition wins.
        let names = ["where_u32_f16", "where_u32_f32", "where_u8_f32"];
        assert_eq!(did_you_mean("where_u32_f23", names), Some("where_u32_f32"));
    }

    #[test]
    fn closest_names_lists_a_few_closest_first() {
        let many: Vec<String> = (0..600).map(|index| format!("kernel_{index}")).collect();
        let close = closest_names("kernel_1O", many.iter().map(String::as_str), 3);
        assert_eq!(close.len(), 3, "{close:?}");
        assert!(close.contains(&"kernel_10"), "{close:?}");
        assert!(
            close
                .iter()
                .all(|name| edit_distance("kernel_1O", name) == 1),
            "{close:?}"
        );
        assert!(closest_names("zzzzzzzz", many.iter().map(String::as_str), 3).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn edit_distance_is_a_symmetric_bounded_metric(left in "[a-c_]{0,8}", right in "[a-c_]{0,8}") {
            let distance = edit_distance(&left, &right);
            proptest::prop_assert_eq!(distance, edit_distance(&right, &left));
            proptest::prop_assert!(distance <= left.chars().count().max(right.chars().count()));
            proptest::prop_assert_eq!(distance == 0, left == right);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation seam: findings (a lint id, a level resolved from the settings above, a kernel, an
// arch, numbers and a message) are produced by the build gate's evaluation, added below this
// line or in a `lint::eval` submodule. It must take ids, default levels and texts from the
// registry above and never hard-code a second list.
// ---------------------------------------------------------------------------------------------

pub mod evaluate;
