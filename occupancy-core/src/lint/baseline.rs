//! `regression` and `baseline_stale`: a kernel's numbers against the committed baseline
//! (`occupancy.lock`). The build reads and compares the baseline; these functions make the
//! findings.

use serde::{Deserialize, Serialize};

use super::finding::{percent, Finding};
use super::id::LintId;

/// What the baseline (`occupancy.lock`) records per kernel and arch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BaselineNumbers {
    pub registers: u32,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
    pub stack_frame_bytes: u64,
    pub static_smem_bytes: u64,
    pub occupancy: f64,
    /// For a declaration with a bound written `"auto"`: the bound the build chose on this arch
    /// (`crate::tune`), so that a changed choice is a reviewable change of the lock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_bounds: Option<crate::tune::Bound>,
}

/// `regression`: any number worse than the baseline's.
pub fn regression(
    kernel_name: &str,
    arch: &str,
    baseline: &BaselineNumbers,
    current: &BaselineNumbers,
) -> Option<Finding> {
    let mut worse = Vec::new();
    let mut compare = |what: &str, before: u64, after: u64| {
        if after > before {
            worse.push(format!("{what}: {before} -> {after}"));
        }
    };
    compare(
        "registers",
        u64::from(baseline.registers),
        u64::from(current.registers),
    );
    compare(
        "spill store bytes",
        baseline.spill_store_bytes,
        current.spill_store_bytes,
    );
    compare(
        "spill load bytes",
        baseline.spill_load_bytes,
        current.spill_load_bytes,
    );
    compare(
        "stack frame bytes",
        baseline.stack_frame_bytes,
        current.stack_frame_bytes,
    );
    compare(
        "static shared memory bytes",
        baseline.static_smem_bytes,
        current.static_smem_bytes,
    );
    if current.occupancy + 1e-9 < baseline.occupancy {
        worse.push(format!(
            "occupancy: {} -> {}",
            percent(baseline.occupancy),
            percent(current.occupancy)
        ));
    }
    if worse.is_empty() {
        return None;
    }
    Some(Finding {
        arch: Some(arch.to_string()),
        message: format!("kernel `{kernel_name}` is worse than the baseline on {arch}"),
        notes: worse,
        help: Some("fix the kernel, or accept the new numbers with `OCCUPANCY_BLESS=1 cargo build` and commit the baseline".into()),
        ..Finding::new(LintId::Regression)
    })
}

/// `baseline_stale`: the baseline no longer equals the build on `arch` (a kernel got better, is
/// new or gone, or the toolchain changed); the build says which in `message` and `notes`.
pub fn baseline_stale(arch: &str, message: String, notes: Vec<String>) -> Finding {
    Finding {
        arch: Some(arch.to_string()),
        message,
        notes,
        help: Some(
            "record what the code compiles to now: `OCCUPANCY_BLESS=1 cargo build`, and commit the baseline with the change".into(),
        ),
        ..Finding::new(LintId::BaselineStale)
    }
}
