//! Which kernels the SASS stage reads, from what is known before any disassembly: the rule a
//! source build (`sass_stage::sass_demands`, from ptxas's report and the PTX) and a binary (the
//! binary front end's `machine_code.rs`, from its cubins) share. A leaf: the binary front end
//! reads it without reaching the SASS stage, which reads binaries.

use std::collections::BTreeSet;

use occupancy_core::lint::LintId;
use occupancy_core::ptxas::KernelRecord;

use crate::cubin::CodeMarks;

/// Whether ptxas reported spill bytes for this kernel on this arch.
pub fn spills(record: &KernelRecord) -> bool {
    record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) > 0
}

/// Whether the kernel uses local memory on this record's arch: spills, a stack frame or local
/// bytes (every `LDL`/`STL` is in ptxas's stack frame, so a kernel without one has none).
pub(crate) fn uses_local_memory(record: &KernelRecord) -> bool {
    spills(record)
        || record.stack_frame_bytes.unwrap_or(0) > 0
        || record.local_memory_bytes.unwrap_or(0) > 0
}

/// Whether a lint of `enabled` reads this kernel's local memory on the record's arch: a spill
/// for `spills` (the hottest spill's line) and `spill_in_loop`, any local memory for
/// `local_array`. The same for a source build and a binary: ptxas's report and the cubin say it.
pub(crate) fn local_memory_is_read(record: &KernelRecord, enabled: &BTreeSet<LintId>) -> bool {
    let reads_spills = enabled.contains(&LintId::Spills) || enabled.contains(&LintId::SpillInLoop);
    (spills(record) && reads_spills)
        || (uses_local_memory(record) && enabled.contains(&LintId::LocalArray))
}

/// The machine-code lints above `allow` for the kernels of a binary (`cargo occupancy check`,
/// where the command line's levels are every kernel's: `MachineCodeLints::at` in the SASS stage),
/// and whether everything is read (`OCCUPANCY_SASS=all`): what the binary front end reads the
/// SASS for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MachineCodeLints {
    pub enabled: BTreeSet<LintId>,
    pub everything: bool,
}

impl MachineCodeLints {
    /// Whether the SASS stage reads this kernel of a binary, which has no PTX to say which
    /// lints its code can trigger: where a source build reads it for local memory
    /// ([`local_memory_is_read`]), and, in place of the PTX's operations (the SASS stage's
    /// `PTX_TRIGGERS`), where the cubin marks a call or `setmaxnreg` ([`CodeMarks`]); FP64 leaves
    /// no mark, so an enabled `fp64` reads every kernel.
    pub fn read_binary_kernel(&self, record: &KernelRecord, marks: CodeMarks) -> bool {
        let enabled = |lint: LintId| self.enabled.contains(&lint);
        self.everything
            || local_memory_is_read(record, &self.enabled)
            || (marks.calls && enabled(LintId::Call))
            || (marks.setmaxnreg && enabled(LintId::SetmaxnregBudget))
            || enabled(LintId::Fp64)
    }
}
