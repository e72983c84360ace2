//! [`LintId`]: the name of every lint, how it is spelled and read (with a suggestion for a typo),
//! its environment variable and config line.
//!
//! A leaf: the declaration grammar (`crate::spec`) stores lint ids and reads them from
//! attributes, so this module names nothing that reads a declaration. Each id's declaration (its
//! default level, documentation and check) is in `lint.rs`, which must declare every id here, in
//! this order (the build fails otherwise).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::names::did_you_mean;
use occupancy_model::Level;

/// Generates [`LintId`] (a variant per line, in order), `LintId::ALL` and `LintId::as_str`.
macro_rules! lint_ids {
    ($($(#[doc = $doc:literal])+ $variant:ident = $name:literal,)+) => {
        /// Every lint the build gate can report, in the order they are documented.
        #[non_exhaustive]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum LintId {
            $(
                $(#[doc = $doc])+
                #[serde(rename = $name)]
                $variant,
            )+
        }

        impl LintId {
            /// Every lint, in the order they are documented.
            pub const ALL: [LintId; [$($name),+].len()] = [$(LintId::$variant),+];

            /// The id as written in attributes (`warn(spills)`), config keys and JSON.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(LintId::$variant => $name,)+
                }
            }
        }
    };
}

lint_ids! {
    /// Spill bytes above the declared `max_spill_bytes` (default 0).
    Spills = "spills",
    /// Theoretical occupancy below the declared `min_occupancy`.
    LowOccupancy = "low_occupancy",
    /// More registers per thread than the declared `max_registers_per_thread`.
    TooManyRegisters = "too_many_registers",
    /// The declared launch cannot start on an architecture.
    Unlaunchable = "unlaunchable",
    /// The kernel was not compiled with the declared launch bounds.
    BoundsMismatch = "bounds_mismatch",
    /// A declared kernel is not in any compiled output.
    MissingKernel = "missing_kernel",
    /// Stack frame above the declared `max_stack_bytes` (or any stack when none is declared).
    StackFrame = "stack_frame",
    /// The compiler could not size the kernel's stack (recursion, an indirect call).
    StackUnknown = "stack_unknown",
    /// The kernel uses local memory (arrays indexed at run time, large structs).
    LocalMemory = "local_memory",
    /// A few registers or bytes more would cost a resident block.
    OccupancyCliff = "occupancy_cliff",
    /// The declared block is not a multiple of the warp size (32 threads).
    PartialWarp = "partial_warp",
    /// A compiled kernel has no `#[occupancy::kernel]` declaration.
    UndeclaredKernel = "undeclared_kernel",
    /// Worse than the committed baseline.
    Regression = "regression",
    /// Better than, or otherwise different from, the committed baseline: it no longer says
    /// what the code compiles to.
    BaselineStale = "baseline_stale",
    /// An `expect(...)` in a declaration whose finding no longer occurs.
    UnfulfilledExpectation = "unfulfilled_expectation",
    /// Spill loads or stores inside a loop of the kernel's machine code (SASS).
    SpillInLoop = "spill_in_loop",
    /// A local array indexed at run time (local memory at a computed address in the SASS).
    LocalArray = "local_array",
    /// A `setmaxnreg` ptxas dropped (no `USETMAXREG` in the SASS; its C750x warning quoted).
    SetmaxnregIgnored = "setmaxnreg_ignored",
    /// Warp-specialised `setmaxnreg` budgets that exceed the block's register allocation.
    SetmaxnregBudget = "setmaxnreg_budget",
    /// Double-precision instructions in the kernel's SASS.
    Fp64 = "fp64",
    /// Non-inlined calls in the kernel's SASS.
    Call = "call",
    /// Constant memory above the declared `max_const_bytes`.
    ConstMemory = "const_memory",
    /// A minimum blocks per SM (`.minnctapersm`) that cannot take effect on an architecture:
    /// ptxas ignored it, or shared memory or barriers keep fewer blocks resident.
    UnreachableBound = "unreachable_bound",
    /// A register cap ptxas did not apply as asked (`__maxnreg__`/`.maxnreg` or `-maxrregcount`
    /// below its lower bound, raised to it; options dropped for `-maxrregcount`), per its warning.
    RegisterCapIgnored = "register_cap_ignored",
    /// Registers ptxas spilled to shared memory (`enable_smem_spilling`): the spill area in the
    /// kernel's static shared memory.
    SmemSpill = "smem_spill",
    /// A persistent or cooperative grid the launcher assumes (`grid_blocks_per_sm`, `grid_blocks`
    /// on the declared `gpus`) holds more blocks than are resident at once.
    GridExceedsResident = "grid_exceeds_resident",
    /// The launch's thread-block cluster cannot start on an architecture or GPU.
    ClusterUnlaunchable = "cluster_unlaunchable",
    /// Fewer clusters resident at once on a GPU than the declared `min_active_clusters`.
    LowClusterOccupancy = "low_cluster_occupancy",
    /// A shipped PTX module targets an arch-specific variant (`sm_90a`), which no newer GPU's
    /// driver can JIT-compile.
    ArchSpecificPtx = "arch_specific_ptx",
}

impl LintId {
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
}

impl fmt::Display for LintId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A lint name that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lint `{given}`{}", suggestion_text(.suggestion))]
#[non_exhaustive]
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
