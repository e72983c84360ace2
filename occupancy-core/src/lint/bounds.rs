//! `unlaunchable`, `bounds_mismatch` and `unreachable_bound`: the declared launch against what
//! the kernel was compiled for (its PTX launch bounds) and what fits an SM.

use super::finding::{ptxas_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use super::minimum::{
    capped_because, capped_by_words, ignored_because, ignored_warning, largest_effective, reach,
    register_budget, Minimum, Reach,
};
use crate::calc::{Limiter, Resources};
use crate::ptxas::PtxEntry;
use crate::spec::{KernelSpec, Tunable};

/// `unlaunchable`: the launch cannot start, because the kernel was compiled for smaller
/// blocks or because no block fits an SM.
pub(super) fn unlaunchable(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let record = on.record;
    let arch = on.arch.name;
    let threads = spec.block.threads();
    let compiled_max = on
        .ptx
        .and_then(|ptx| ptx.maxntid.as_ref().or(ptx.reqntid.as_ref()))
        .map(|dims| dims.iter().product::<u32>());
    if let Some(max) = compiled_max {
        if threads > max {
            findings.push(Finding {
                arch: Some(arch.to_string()),
                message: format!(
                    "kernel `{}` was compiled for at most {max} threads per block, but is {} with {}",
                    record.name,
                    match origin {
                        LaunchOrigin::Declaration => "declared",
                        LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => "checked",
                    },
                    origin.block_setting(threads)
                ),
                notes: vec![format!("the PTX of `{}` says `.maxntid`/`.reqntid` {max}", record.name)],
                help: Some(match origin {
                    LaunchOrigin::Declaration => format!("launch at most {max} threads, or take `__launch_bounds__` from the declaration (occupancy_bounds.h)"),
                    LaunchOrigin::CommandLine => format!("check the launch you use: `--block {max}` or less, or raise `__launch_bounds__` in the source"),
                    LaunchOrigin::CrateDefault => format!("declare the kernel with the block it is launched with (at most {max}), or lower the crate's `block`"),
                }),
                ..Finding::new(LintId::Unlaunchable)
            });
            return;
        }
    }
    if on.occupancy.blocks_per_sm == 0 {
        let reason = on
            .occupancy
            .reason
            .clone()
            .unwrap_or_else(|| "no block fits on an SM".to_string());
        findings.push(Finding {
            arch: Some(arch.to_string()),
            message: match origin {
                LaunchOrigin::Declaration => format!("the declared launch of kernel `{}` cannot start on {arch}: {reason}", record.name),
                LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!("kernel `{}` cannot start on {arch} with {}: {reason}", record.name, origin.block_setting(threads)),
            },
            notes: vec![ptxas_note(record)],
            help: Some(match origin {
                LaunchOrigin::Declaration => "make the block smaller, cap registers (`min_blocks_per_sm`, `max_registers`), lower `dynamic_smem`, or drop the arch from `archs`".into(),
                LaunchOrigin::CommandLine => "check a smaller block (`--block`), cap registers (`__launch_bounds__`, `-maxrregcount`), lower `--dynamic-smem`, or leave the arch out (`--arch`)".into(),
                LaunchOrigin::CrateDefault => "declare the kernel with the block it is launched with, cap its registers (`__launch_bounds__`), or lower the crate's `block`".into(),
            }),
            ..Finding::new(LintId::Unlaunchable)
        });
    }
}

/// `bounds_mismatch`: the PTX's launch bounds differ from the declaration's. Only a declaration
/// has bounds for the compiled ones to disagree with.
pub(super) fn bounds_mismatch(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(ptx) = on.ptx.filter(|_| origin == LaunchOrigin::Declaration) else {
        return;
    };
    let record = on.record;
    let threads = spec.block.threads();
    let mut differences = Vec::new();
    let compiled_max = ptx
        .maxntid
        .as_ref()
        .map(|dims| dims.iter().product::<u32>());
    if let Some((blocks, origin)) = on.min_blocks_per_sm(spec) {
        if ptx.minnctapersm != Some(blocks) {
            differences.push(format!(
                "min blocks per SM: {} {blocks}, compiled {}",
                origin.words("min_blocks_per_sm"),
                ptx.minnctapersm
                    .map_or("none (.minnctapersm absent)".to_string(), |value| value
                        .to_string())
            ));
        }
        if compiled_max != Some(threads) {
            differences.push(format!(
                "max threads per block: declared {threads}, compiled {}",
                compiled_max.map_or("none (.maxntid absent)".to_string(), |value| value
                    .to_string())
            ));
        }
    } else if let Some(max) = compiled_max {
        if max > threads {
            differences.push(format!(
                "max threads per block: declared {threads}, compiled {max}"
            ));
        }
    }
    if let Some(compiled) = ptx.minnctapersm.filter(|_| {
        spec.min_blocks_per_sm == Some(Tunable::Auto) && on.min_blocks_per_sm(spec).is_none()
    }) {
        differences.push(format!(
            "min blocks per SM: none chosen for `min_blocks_per_sm = \"auto\"`, compiled {compiled}"
        ));
    }
    if let Some((registers, origin)) = on.max_registers(spec) {
        if ptx.maxnreg != Some(registers) {
            differences.push(format!(
                "max registers: {} {registers}, compiled {}",
                origin.words("max_registers"),
                ptx.maxnreg
                    .map_or("none (.maxnreg absent)".to_string(), |value| value
                        .to_string())
            ));
        }
    } else if let Some(compiled) = ptx
        .maxnreg
        .filter(|_| spec.max_registers == Some(Tunable::Auto))
    {
        differences.push(format!(
            "max registers: none chosen for `max_registers = \"auto\"`, compiled {compiled}"
        ));
    }
    if !differences.is_empty() {
        findings.push(Finding {
            arch: Some(on.arch.name.to_string()),
            message: format!("kernel `{}` was not compiled with the declared launch bounds", record.name),
            notes: differences,
            help: Some(format!(
                "take the bounds from the declaration: `__global__ void OCCUPANCY_BOUNDS_{0} {0}(...)` with `#include \"occupancy_bounds.h\"` (generated in OUT_DIR), or make the two sides agree",
                record.name
            )),
            ..Finding::new(LintId::BoundsMismatch)
        });
    }
}

/// The minimum blocks per SM the kernel was compiled with, and its block: `.minnctapersm` and
/// the product of `.maxntid` (or `.reqntid`). ptxas reads `.minnctapersm` only beside one of
/// them.
fn compiled_minimum(ptx: &PtxEntry) -> Option<Minimum> {
    let blocks = ptx.minnctapersm.filter(|&blocks| blocks > 0)?;
    let dims = ptx.maxntid.as_ref().or(ptx.reqntid.as_ref())?;
    let threads = dims.iter().map(|&value| value.max(1)).product();
    Some(Minimum { blocks, threads })
}

/// `unreachable_bound`: the compiled minimum blocks per SM cannot take effect on the
/// architecture. ptxas ignores a minimum the SM cannot hold by threads or block slots (and warns
/// once); it applies one that shared memory or barriers keep out of reach, squeezing registers
/// for blocks that never run. A ptxas warning that it dropped the minimum is a finding even
/// where the facts here would not have predicted it.
pub(super) fn unreachable_bound(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let warning = ignored_warning(on.record);
    let Some((ptx, minimum)) = on
        .ptx
        .and_then(|ptx| compiled_minimum(ptx).map(|minimum| (ptx, minimum)))
    else {
        let threads = spec.block.threads();
        if let Some(blocks) = on.ptx.and_then(PtxEntry::minimum_without_block) {
            findings.push(without_block(spec, on, blocks, warning, origin));
        } else if let Some(warning) = warning {
            findings.push(dropped_without_ptx(on, warning, origin, threads, spec));
        }
        return;
    };
    let dropped = Dropped {
        on,
        ptx,
        minimum,
        warning,
        origin,
    };
    let finding = match (
        reach(on.arch, minimum, on.record, spec.dynamic_smem_bytes),
        warning,
    ) {
        (Reach::Ignored { by, largest }, _) => dropped.ignored(&by, Some(largest)),
        (_, Some(_)) => dropped.ignored(&[], None),
        (
            Reach::Capped {
                by,
                largest,
                resources,
            },
            None,
        ) => dropped.capped(spec, &by, largest, &resources),
        (Reach::Honoured, None) => return,
    };
    findings.push(finding);
}

/// A compiled minimum that cannot take effect, and what is known about it.
struct Dropped<'a> {
    on: &'a CompiledOnArch<'a>,
    ptx: &'a PtxEntry,
    minimum: Minimum,
    warning: Option<&'a str>,
    origin: LaunchOrigin,
}

impl Dropped<'_> {
    /// `the PTX of `k` says `.maxntid 1024, 1, 1` and `.minnctapersm 4``.
    fn source_note(&self) -> String {
        let dims = |dims: &Vec<u32>| {
            dims.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let threads = match (&self.ptx.maxntid, &self.ptx.reqntid) {
            (Some(max), _) => format!("`.maxntid {}`", dims(max)),
            (None, Some(required)) => format!("`.reqntid {}`", dims(required)),
            (None, None) => String::new(),
        };
        format!(
            "the PTX of `{}` says {threads} and `.minnctapersm {}` (`__launch_bounds__({}, {})`)",
            self.on.record.name, self.minimum.blocks, self.minimum.threads, self.minimum.blocks
        )
    }

    /// How to ask for `blocks` instead, where the user writes it.
    fn ask_for(&self, blocks: u32) -> String {
        match self.origin {
            LaunchOrigin::Declaration => format!("declare `min_blocks_per_sm = {blocks}`"),
            LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!(
                "write `__launch_bounds__({}, {blocks})`",
                self.minimum.threads
            ),
        }
    }

    /// ptxas ignored the minimum (`largest`: the largest it honours, when known).
    fn ignored(&self, by: &[Limiter], largest: Option<u32>) -> Finding {
        let (on, minimum) = (self.on, self.minimum);
        let (arch, record) = (on.arch, on.record);
        let honoured = match largest {
            Some(0) => format!(
                "; no minimum can take effect for blocks of {} threads there",
                minimum.threads
            ),
            Some(largest) => format!("; the largest it honours there is {largest}"),
            None => String::new(),
        };
        let mut notes = vec![self.source_note()];
        if !by.is_empty() {
            notes.push(ignored_because(arch, minimum, by));
        }
        if let Some(warning) = self.warning {
            notes.push(format!("ptxas: {warning}"));
        }
        notes.push(format!(
            "ptxas compiled `{}` as if no minimum were given: only the block of {} threads caps its registers (at most {} per thread, not the {} that {} blocks would leave); it used {}",
            record.name,
            minimum.threads,
            register_budget(arch, minimum.threads, 1),
            register_budget(arch, minimum.threads, minimum.blocks),
            minimum.blocks,
            record.registers.unwrap_or(0)
        ));
        notes.push(ptxas_note(record));
        let help = match largest {
            Some(0) => format!(
                "launch smaller blocks with a matching bound, or drop the minimum, or {}",
                self.origin.allow(LintId::UnreachableBound)
            ),
            Some(largest) => format!(
                "{} or less so that ptxas keeps it on {}, or drop the minimum, or {}",
                self.ask_for(largest),
                arch.name,
                self.origin.allow(LintId::UnreachableBound)
            ),
            None => format!(
                "lower the minimum until ptxas no longer warns on {}, or drop it, or {}",
                arch.name,
                self.origin.allow(LintId::UnreachableBound)
            ),
        };
        Finding {
            arch: Some(arch.name.to_string()),
            message: format!(
                "kernel `{}` asks for at least {} blocks of {} threads per SM, more than {} holds: ptxas ignored the minimum{honoured}",
                record.name, minimum.blocks, minimum.threads, arch.name
            ),
            notes,
            help: Some(help),
            ..Finding::new(LintId::UnreachableBound)
        }
    }

    /// ptxas applied the minimum, but `by` lets only `largest` blocks reside.
    fn capped(
        &self,
        spec: &KernelSpec,
        by: &[Limiter],
        largest: u32,
        resources: &Resources,
    ) -> Finding {
        let (on, minimum) = (self.on, self.minimum);
        let (arch, record) = (on.arch, on.record);
        let words = capped_by_words(by);
        let mut notes = vec![self.source_note()];
        notes.extend(capped_because(
            arch,
            record,
            spec.dynamic_smem_bytes,
            by,
            resources,
        ));
        notes.push(format!(
            "ptxas capped `{}` at {} registers per thread so that {} blocks of {} threads fit the register file (it used {}); {largest} blocks leave {}",
            record.name,
            register_budget(arch, minimum.threads, minimum.blocks),
            minimum.blocks,
            minimum.threads,
            record.registers.unwrap_or(0),
            register_budget(arch, minimum.threads, largest)
        ));
        notes.push(ptxas_note(record));
        Finding {
            arch: Some(arch.name.to_string()),
            message: format!(
                "kernel `{}` asks for at least {} blocks per SM, but {words} let only {largest} reside on {}: its registers are capped for blocks that cannot run; the largest minimum that can take effect is {largest}",
                record.name, minimum.blocks, arch.name
            ),
            notes,
            help: Some(format!(
                "{} so that ptxas may use more registers, or use less {words} per block so that {} blocks fit, or {}",
                self.ask_for(largest),
                minimum.blocks,
                self.origin.allow(LintId::UnreachableBound)
            )),
            ..Finding::new(LintId::UnreachableBound)
        }
    }
}

/// What a launch of `threads` could ask for instead on the arch: `for blocks of 256 threads (the
/// launch checked), a minimum of up to 8 blocks per SM takes effect on sm_90` (or none fits).
fn effective_note(on: &CompiledOnArch<'_>, threads: u32, spec: &KernelSpec) -> (u32, String) {
    let largest = largest_effective(on.arch, threads, on.record, spec.dynamic_smem_bytes);
    let note = if largest == 0 {
        format!(
            "no minimum blocks per SM takes effect for blocks of {threads} threads (the launch checked) on {}: none fits",
            on.arch.name
        )
    } else {
        format!(
            "for blocks of {threads} threads (the launch checked), a minimum of up to {largest} blocks per SM takes effect on {}: `__launch_bounds__({threads}, {largest})`",
            on.arch.name
        )
    };
    (largest, note)
}

/// ptxas warned that it dropped the minimum, and no PTX says what the minimum was (a log, or a
/// compile whose PTX is not at hand): what the launch checked could ask for instead.
fn dropped_without_ptx(
    on: &CompiledOnArch<'_>,
    warning: &str,
    origin: LaunchOrigin,
    threads: u32,
    spec: &KernelSpec,
) -> Finding {
    let (_, effective) = effective_note(on, threads, spec);
    Finding {
        arch: Some(on.arch.name.to_string()),
        message: format!(
            "ptxas ignored the minimum blocks per SM of kernel `{}` on {}",
            on.record.name, on.arch.name
        ),
        notes: vec![
            format!("ptxas: {warning}"),
            format!(
                "ptxas compiled `{}` as if no minimum were given: only its maximum block size caps its registers",
                on.record.name
            ),
            effective,
            ptxas_note(on.record),
        ],
        help: Some(format!(
            "lower the minimum of `__launch_bounds__` until ptxas no longer warns on {}, or drop it, or {}",
            on.arch.name,
            origin.allow(LintId::UnreachableBound)
        )),
        ..Finding::new(LintId::UnreachableBound)
    }
}

/// A `.minnctapersm` without `.maxntid` or `.reqntid` (hand-written PTX): ptxas ignores it, as
/// it says in a warning that names a PTX line, not the kernel.
fn without_block(
    spec: &KernelSpec,
    on: &CompiledOnArch<'_>,
    blocks: u32,
    warning: Option<&str>,
    origin: LaunchOrigin,
) -> Finding {
    let (arch, record) = (on.arch, on.record);
    let threads = spec.block.threads();
    let (largest, effective) = effective_note(on, threads, spec);
    let mut notes = vec![format!(
        "the PTX of `{}` says `.minnctapersm {blocks}` but neither `.maxntid` nor `.reqntid`: a minimum blocks per SM needs a block size",
        record.name
    )];
    notes.extend(warning.map(|warning| format!("ptxas: {warning}")));
    notes.push(format!(
        "ptxas compiled `{}` as if no minimum were given (it used {} registers per thread)",
        record.name,
        record.registers.unwrap_or(0)
    ));
    notes.push(effective);
    notes.push(ptxas_note(record));
    let ask = blocks.min(largest).max(1);
    Finding {
        arch: Some(arch.name.to_string()),
        message: format!(
            "kernel `{}` asks for at least {blocks} blocks per SM, but its PTX gives no block size (`.maxntid`, `.reqntid`): ptxas ignored the minimum on {}",
            record.name, arch.name
        ),
        notes,
        help: Some(format!(
            "give the minimum its block: `.maxntid {threads}, 1, 1` beside `.minnctapersm {ask}` (`__launch_bounds__({threads}, {ask})`), or drop `.minnctapersm`, or {}",
            origin.allow(LintId::UnreachableBound)
        )),
        ..Finding::new(LintId::UnreachableBound)
    }
}
