//! The lints of one launch on one architecture from ptxas's numbers and the calculator's
//! answer: `partial_warp`, `spills`, `low_occupancy`, `too_many_registers`, `stack_frame`,
//! `const_memory` and `local_memory`.

use super::finding::{
    occupancy_note, percent, ptxas_note, BoundOrigin, CompiledOnArch, Finding, LaunchOrigin,
};
use super::id::LintId;
use super::minimum::{
    capped_by_words, ignored_because, ignored_warning, reach, register_budget, Minimum, Reach,
};
use crate::ptxas::{KernelRecord, StackSize};
use crate::spec::KernelSpec;

fn spill_bytes(record: &KernelRecord) -> u64 {
    record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0)
}

/// `partial_warp`: the block is not a multiple of the warp size (once per launch).
pub(super) fn partial_warp(spec: &KernelSpec, origin: LaunchOrigin, findings: &mut Vec<Finding>) {
    let block_threads = spec.block.threads();
    if block_threads.is_multiple_of(32) {
        return;
    }
    let block_of = match origin {
        LaunchOrigin::Declaration => format!("the declared block of {block_threads} threads"),
        LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!(
            "the block of {block_threads} threads ({})",
            origin.block_setting(block_threads)
        ),
    };
    findings.push(Finding {
        arch: None,
        message: format!("{block_of} is not a multiple of the warp size (32)"),
        notes: vec![format!(
            "{} warps are scheduled per block; {} lanes of the last one idle in every block",
            block_threads.div_ceil(32),
            block_threads.div_ceil(32) * 32 - block_threads
        )],
        help: Some(format!(
            "round the block up to {} and guard the extra threads, or {}",
            block_threads.div_ceil(32) * 32,
            origin.allow(LintId::PartialWarp)
        )),
        ..Finding::new(LintId::PartialWarp)
    });
}

/// `spills`: spill bytes above the declared `max_spill_bytes` (default 0).
pub(super) fn spills(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let arch = on.arch.name;
    let spilled = spill_bytes(record);
    let max_spill = u64::from(spec.max_spill_bytes.unwrap_or(0));
    if spilled <= max_spill {
        return;
    }
    findings.push(Finding {
        arch: Some(arch.to_string()),
        message: format!(
            "kernel `{}` spills {spilled} bytes to local memory on {arch} ({} stores + {} loads; {})",
            record.name,
            record.spill_store_bytes.unwrap_or(0),
            record.spill_load_bytes.unwrap_or(0),
            origin.limit(max_spill)
        ),
        notes: bound_notes(spec, on)
            .into_iter()
            .chain([ptxas_note(record), occupancy_note(on)])
            .collect(),
        help: Some(spill_help(spec, on, origin)),
        ..Finding::new(LintId::Spills)
    });
}

/// `low_occupancy`: occupancy below the declared `min_occupancy`.
pub(super) fn low_occupancy(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    _origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(min_occupancy) = spec.min_occupancy else {
        return;
    };
    if on.occupancy.occupancy + 1e-9 >= min_occupancy {
        return;
    }
    let record = on.record;
    let arch = on.arch.name;
    let help = match on.occupancy.headroom.registers_to_gain_block {
        Some(fewer) => format!(
            "{fewer} fewer registers per thread would fit one more block on {arch} (e.g. `max_registers = {}`); or reduce shared memory, lower `min_occupancy`, or `allow(low_occupancy)` if it is deliberate",
            record.registers.unwrap_or(0).saturating_sub(fewer)
        ),
        None => String::from(
            "reduce registers, shared memory or the block size, or lower `min_occupancy`",
        ),
    };
    findings.push(Finding {
        arch: Some(arch.to_string()),
        message: format!(
            "kernel `{}` reaches {} occupancy on {arch}, below the declared `min_occupancy = {}`",
            record.name,
            percent(on.occupancy.occupancy),
            min_occupancy
        ),
        notes: vec![occupancy_note(on), ptxas_note(record)],
        help: Some(help),
        ..Finding::new(LintId::LowOccupancy)
    });
}

/// `too_many_registers`: more registers per thread than the declared
/// `max_registers_per_thread` (its own lint: `allow(low_occupancy)` does not silence it).
pub(super) fn too_many_registers(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    _origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(max) = spec.max_registers_per_thread else {
        return;
    };
    let record = on.record;
    let registers = record.registers.unwrap_or(0);
    if registers <= max {
        return;
    }
    findings.push(Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!(
            "kernel `{}` uses {registers} registers per thread on {}, above the declared `max_registers_per_thread = {max}`",
            record.name, on.arch.name
        ),
        notes: vec![ptxas_note(record), occupancy_note(on)],
        help: Some(format!("cap registers at compile time with `max_registers = {max}` (ptxas may spill), raise the threshold, or `allow(too_many_registers)`")),
        ..Finding::new(LintId::TooManyRegisters)
    });
}

/// `stack_frame`: a stack frame above the declared `max_stack_bytes` (any, when none is).
pub(super) fn stack_frame(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let stack = record.stack_frame_bytes.unwrap_or(0);
    let max_stack = u64::from(spec.max_stack_bytes.unwrap_or(0));
    if stack <= max_stack {
        return;
    }
    findings.push(Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!(
            "kernel `{}` has a {stack}-byte stack frame on {} ({})",
            record.name,
            on.arch.name,
            origin.limit(max_stack)
        ),
        notes: vec![ptxas_note(record)],
        help: Some(format!(
            "inline callees (`__forceinline__`), index local arrays with constants, or {}",
            origin.accept("max_stack_bytes = N", LintId::StackFrame)
        )),
        ..Finding::new(LintId::StackFrame)
    });
}

/// `stack_unknown`: a stack the compiler could not size ([`StackSize::Unknown`]: ptxas's
/// warning, cuobjdump's `STACK:UNKNOWN`, the cubin's `EIATTR_MIN_STACK_SIZE` of 0xffffffff),
/// never read as 0 bytes (issue #42, class 9).
pub(super) fn stack_unknown(
    _spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    _origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    if record.cumulative_stack != Some(StackSize::Unknown) {
        return;
    }
    findings.push(Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!(
            "kernel `{}` has a stack of unknown size on {}: the compiler could not size it (recursion or an indirect call), so the driver sizes it at launch from cudaLimitStackSize",
            record.name, on.arch.name
        ),
        notes: vec![ptxas_note(record)],
        help: Some("bound the recursion (a loop with an explicit stack), avoid calls through function pointers, or set cudaLimitStackSize for the depth reached and `allow(stack_unknown)`".to_string()),
        ..Finding::new(LintId::StackUnknown)
    });
}

/// `const_memory`: constant memory above the declared `max_const_bytes`: the kernel's parameter
/// bank (`cmem[0]`) and its module's `__constant__` data (`cmem[3]`), as ptxas reported them or,
/// on sm_90 and later where it prints none, as the build read them from the cubin.
pub(super) fn const_memory(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(max_const) = spec.max_const_bytes.map(u64::from) else {
        return;
    };
    let bank = |banks: &[(u32, u64)], number: u32| -> u64 {
        banks
            .iter()
            .filter(|(bank, _)| *bank == number)
            .map(|(_, bytes)| bytes)
            .sum()
    };
    let record = on.record;
    if !record.cmem.iter().any(|(number, _)| *number == 0) {
        // Every kernel has a parameter bank: no `cmem[0]` means neither ptxas (it prints none for
        // sm_90 and later) nor the cubin gave the banks. A budget that cannot be checked fails.
        findings.push(unverifiable_const_budget(
            record,
            on.arch.name,
            max_const,
            origin,
        ));
        return;
    }
    let (parameters, constants) = (bank(&record.cmem, 0), bank(&record.module_cmem, 3));
    if parameters + constants <= max_const {
        return;
    }
    findings.push(Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!(
            "kernel `{}` uses {} bytes of constant memory on {} ({})",
            record.name,
            parameters + constants,
            on.arch.name,
            origin.limit(max_const)
        ),
        notes: vec![
            format!("{parameters} bytes of parameters and the driver's reserved block (`cmem[0]`), {constants} bytes of its module's `__constant__` data (`cmem[3]`)"),
            ptxas_note(record),
        ],
        help: Some(format!(
            "shrink the `__constant__` data or move large tables to global memory, pass large parameters by pointer, or {}",
            origin.accept("max_const_bytes = N", LintId::ConstMemory)
        )),
        ..Finding::new(LintId::ConstMemory)
    });
}

/// `const_memory` when ptxas reported no constant banks for the architecture: the declared
/// `max_const_bytes` was not checked there, which must not pass silently.
fn unverifiable_const_budget(
    record: &KernelRecord,
    arch: &str,
    max_const: u64,
    origin: LaunchOrigin,
) -> Finding {
    Finding {
        arch: Some(arch.to_string()),
        message: format!(
            "kernel `{}`: `max_const_bytes = {max_const}` cannot be checked on {arch}: ptxas reports no constant banks there (it prints them only before sm_90), and they could not be read from the compiled cubin (is cuobjdump installed beside nvcc, or OCCUPANCY_CUOBJDUMP set?)",
            record.name
        ),
        notes: vec![ptxas_note(record)],
        help: Some(format!(
            "check the budget where ptxas reports it (an architecture before sm_90), remove `max_const_bytes`, or {} on this kernel",
            origin.allow(LintId::ConstMemory)
        )),
        ..Finding::new(LintId::ConstMemory)
    }
}

/// `local_memory`: local memory beyond spills (ptxas's byte count or its warning).
pub(super) fn local_memory(
    _spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    _origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let local_bytes = record.local_memory_bytes.unwrap_or(0);
    let local_warning = record
        .warnings
        .iter()
        .find(|warning| warning.contains("Local memory"));
    if spill_bytes(record) > 0 || (local_bytes == 0 && local_warning.is_none()) {
        return;
    }
    findings.push(Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!("kernel `{}` uses local memory on {}", record.name, on.arch.name),
        notes: local_warning
            .map(|warning| format!("ptxas: {warning}"))
            .into_iter()
            .chain([ptxas_note(record)])
            .collect(),
        help: Some("index local arrays with compile-time constants, or use shared memory for per-block scratch".into()),
        ..Finding::new(LintId::LocalMemory)
    });
}

/// What to change about a spilling kernel: only advice that can work. No "raise
/// `max_registers`" when ptxas already has the most registers a thread can have, no "lower
/// `min_blocks_per_sm`" when none was declared.
fn spill_help(spec: &KernelSpec, on: &CompiledOnArch<'_>, origin: LaunchOrigin) -> String {
    let hardware_max = on.arch.max_regs_per_thread;
    let registers = on.record.registers.unwrap_or(0);
    let mut help = if registers >= hardware_max {
        format!(
            "ptxas already gives `{}` the most registers a thread can have on {} ({hardware_max}): reduce live values (fewer unrolled iterations, smaller per-thread arrays, or split the kernel)",
            on.record.name, on.arch.name
        )
    } else {
        match origin {
            LaunchOrigin::Declaration => {
                let mut more_registers = Vec::new();
                match on.min_blocks_per_sm(spec) {
                    Some((blocks, BoundOrigin::Declared)) if blocks > 1 => {
                        more_registers.push("lower `min_blocks_per_sm`".to_string());
                    }
                    Some((_, BoundOrigin::Chosen)) => more_registers.push(
                        "write a lower `min_blocks_per_sm` than the build chose".to_string(),
                    ),
                    _ => {}
                }
                match on.max_registers(spec) {
                    Some((cap, BoundOrigin::Declared)) if cap < hardware_max => more_registers
                        .push(format!("raise `max_registers` (at most {hardware_max})")),
                    Some((_, BoundOrigin::Chosen)) => more_registers.push(format!(
                        "write a higher `max_registers` than the build chose (at most {hardware_max})"
                    )),
                    _ => {}
                }
                if more_registers.is_empty() {
                    "reduce live values, or launch smaller blocks (a smaller `block` with a matching `__launch_bounds__` leaves ptxas more registers per thread)".to_string()
                } else {
                    format!("{} so ptxas has more registers, or reduce live values", more_registers.join(" or "))
                }
            }
            LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => String::from("give ptxas more registers (a lower minimum blocks per SM in `__launch_bounds__`, or a higher `-maxrregcount`), or reduce live values"),
        }
    };
    if spec.max_spill_bytes.is_none() {
        help.push_str(", or ");
        help.push_str(&match origin {
            LaunchOrigin::Declaration => "accept spills with `max_spill_bytes = N`".to_string(),
            other => other.accept("max_spill_bytes = N", LintId::Spills),
        });
    }
    help
}

fn bound_notes(spec: &KernelSpec, on: &CompiledOnArch<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some((blocks, origin)) = on.min_blocks_per_sm(spec) {
        notes.push(minimum_note(spec, on, blocks, origin));
    }
    if let Some((registers, origin)) = on.max_registers(spec) {
        let written = match origin {
            BoundOrigin::Declared => format!("`max_registers = {registers}`"),
            BoundOrigin::Chosen => {
                format!("`max_registers = {registers}` (chosen for `max_registers = \"auto\"`)")
            }
        };
        notes.push(format!(
            "{written} caps ptxas at {registers} registers per thread"
        ));
    }
    notes
}

/// What the declared minimum asked of ptxas on this arch, and what ptxas made of it: a register
/// cap, or nothing when it ignored a minimum the SM cannot hold (never a cap it did not apply).
fn minimum_note(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    blocks: u32,
    origin: BoundOrigin,
) -> String {
    let threads = spec.block.threads();
    let minimum = Minimum { blocks, threads };
    let chosen = match origin {
        BoundOrigin::Declared => "",
        BoundOrigin::Chosen => " (chosen for `min_blocks_per_sm = \"auto\"`)",
    };
    let asks = format!(
        "`min_blocks_per_sm = {blocks}`{chosen} with `block = {threads}` asks ptxas to fit {} threads per SM on {}",
        u64::from(blocks) * u64::from(threads),
        on.arch.name
    );
    let without_minimum = register_budget(on.arch, threads, 1);
    match reach(on.arch, minimum, on.record, spec.dynamic_smem_bytes) {
        Reach::Ignored { by, .. } => format!(
            "{asks}; ptxas ignored the minimum ({}), so only the block caps registers (at most {without_minimum} per thread)",
            ignored_because(on.arch, minimum, &by)
        ),
        _ if ignored_warning(on.record).is_some() => format!(
            "{asks}; ptxas ignored the minimum it was compiled with (it warned so), so only the block caps registers (at most {without_minimum} per thread)"
        ),
        Reach::Capped { by, largest, .. } => format!(
            "{asks}: at most {} registers per thread, though {} let only {largest} blocks reside",
            register_budget(on.arch, threads, blocks),
            capped_by_words(&by)
        ),
        Reach::Honoured => format!(
            "{asks}: at most {} registers per thread",
            register_budget(on.arch, threads, blocks)
        ),
    }
}
