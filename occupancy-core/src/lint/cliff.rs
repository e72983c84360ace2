//! `occupancy_cliff`: a few more registers or bytes of shared memory would cost a resident block.

use super::finding::{occupancy_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use crate::spec::KernelSpec;

/// Registers per thread (or bytes of static shared memory, see [`CLIFF_SMEM_BYTES`]) within
/// which a kernel is "at a cliff": one more costs a resident block.
pub(crate) const CLIFF_REGISTERS: u32 = 2;
/// Bytes of shared memory per block within which adding more costs a resident block.
pub(crate) const CLIFF_SMEM_BYTES: u32 = 256;

/// `occupancy_cliff`: registers or shared memory bind, and a few more cost a resident block.
pub(super) fn occupancy_cliff(
    _spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let allow = origin.allow(LintId::OccupancyCliff);
    let occupancy = on.occupancy;
    if occupancy.blocks_per_sm == 0 {
        return;
    }
    // Under a compiled register cap (.minnctapersm, .maxnreg) ptxas spills rather than grow, so
    // the register margin is not a cliff.
    let register_capped = on
        .ptx
        .is_some_and(|ptx| ptx.minnctapersm.is_some() || ptx.maxnreg.is_some());
    let registers = on.record.registers.unwrap_or(0);
    let register_limit = occupancy.block_limits.registers;
    let registers_bind = register_limit == Some(occupancy.blocks_per_sm);
    // The count that loses a block must be one ptxas can assign (at most 255 per thread): a
    // kernel at 255 registers cannot grow, so capping it at 255 would change nothing.
    let losing_registers = registers + occupancy.headroom.registers_addable + 1;
    if !register_capped
        && registers_bind
        && registers > 0
        && losing_registers <= on.arch.max_regs_per_thread
        && occupancy.headroom.registers_addable < CLIFF_REGISTERS
    {
        let margin = format!(
            "{} register{} per thread",
            occupancy.headroom.registers_addable + 1,
            if occupancy.headroom.registers_addable == 0 {
                ""
            } else {
                "s"
            },
        );
        let help = match origin {
            LaunchOrigin::Declaration => format!("cap registers at the current count (`max_registers = {registers}`) to keep this occupancy, or {allow}"),
            LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!("cap registers at the current count (`__maxnreg__({registers})` or `-maxrregcount {registers}`) to keep this occupancy, or {allow}"),
        };
        findings.push(cliff_finding(on, &margin, help));
    }
    let smem_bind = occupancy.block_limits.shared_memory == Some(occupancy.blocks_per_sm);
    if smem_bind && occupancy.headroom.smem_addable_bytes < CLIFF_SMEM_BYTES {
        let margin = format!(
            "{} bytes of shared memory",
            occupancy.headroom.smem_addable_bytes + 1
        );
        let help = format!("keep shared memory per block where it is, or {allow}");
        findings.push(cliff_finding(on, &margin, help));
    }
}

/// One `occupancy_cliff` finding: the kernel is `margin` (`2 registers per thread`, `200 bytes
/// of shared memory`) away from losing a block. The register and the shared-memory cliff differ
/// only in the margin and the advice, so their message and note are written here once.
fn cliff_finding(on: &CompiledOnArch<'_>, margin: &str, help: String) -> Finding {
    Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!(
            "kernel `{}` is {margin} away from losing a block on {}",
            on.record.name, on.arch.name
        ),
        notes: vec![occupancy_note(on)],
        help: Some(help),
        ..Finding::new(LintId::OccupancyCliff)
    }
}
