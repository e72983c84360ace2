//! Lint evaluation: from what ptxas reported, what the calculator derived and what the crate
//! declared, to findings (lint id, architecture, message, notes, help).
//!
//! Pure: callers hand in records, PTX directives, arch facts, occupancy results, baselines and
//! levels; nothing here reads files or runs tools. Levels are resolved by [`resolve_level`]
//! (most specific wins: the attribute, then per-kernel Cargo.toml, then the environment, then the
//! crate's Cargo.toml, then the lint's default), and rendering belongs to the caller.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::arch::ArchFacts;
use crate::calc::{Limiter, Occupancy};
use crate::lint::{closest_names, Level, LintId};
use crate::ptxas::{KernelRecord, PtxEntry};
use crate::spec::KernelSpec;

/// Registers per thread (or bytes of static shared memory, see [`CLIFF_SMEM_BYTES`]) within
/// which a kernel is "at a cliff": one more costs a resident block.
pub const CLIFF_REGISTERS: u32 = 2;
/// Bytes of shared memory per block within which adding more costs a resident block.
pub const CLIFF_SMEM_BYTES: u32 = 256;

/// One finding, before a level is attached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Which lint.
    pub lint: LintId,
    /// The architecture it concerns; `None` when it holds on every one (`partial_warp`).
    pub arch: Option<String>,
    /// One line: what is wrong.
    pub message: String,
    /// Facts behind it: what ptxas reported, which resource binds on which arch.
    pub notes: Vec<String>,
    /// What to change.
    pub help: Option<String>,
}

/// A compiled kernel on one target architecture, with the calculator's answer for the launch.
#[derive(Debug, Clone, Copy)]
pub struct CompiledOnArch<'a> {
    /// The arch's facts.
    pub arch: &'a ArchFacts,
    /// ptxas's record for the kernel on this arch.
    pub record: &'a KernelRecord,
    /// The kernel's `.entry` directives in the PTX that was assembled, when known.
    pub ptx: Option<&'a PtxEntry>,
    /// Occupancy of the declared launch.
    pub occupancy: &'a Occupancy,
}

fn spill_bytes(record: &KernelRecord) -> u64 {
    record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0)
}

fn percent(fraction: f64) -> String {
    let value = fraction * 100.0;
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}%")
    } else {
        format!("{value:.1}%")
    }
}

/// `2 blocks x 256 threads = 16 of 64 warps (25%)`, and what binds.
pub fn occupancy_note(on: &CompiledOnArch<'_>) -> String {
    let occupancy = on.occupancy;
    let limiters: Vec<&str> = occupancy
        .limiters
        .iter()
        .map(|limiter| limiter.name())
        .collect();
    let mut note = format!(
        "on {}: {} block{} of {} threads = {} of {} warps per SM ({})",
        on.arch.name,
        occupancy.blocks_per_sm,
        if occupancy.blocks_per_sm == 1 {
            ""
        } else {
            "s"
        },
        occupancy.block_threads,
        occupancy.warps_per_sm,
        on.arch.max_warps_per_sm,
        percent(occupancy.occupancy)
    );
    if !limiters.is_empty() {
        note.push_str(&format!("; limited by {}", limiters.join(" and ")));
    }
    if occupancy.limiters.contains(&Limiter::Registers) {
        note.push_str(&format!(
            " ({} registers/thread, {} allocated per block of {})",
            on.record.registers.unwrap_or(0),
            occupancy.allocated_registers_per_block,
            on.arch.regs_per_sm
        ));
    }
    if occupancy.limiters.contains(&Limiter::SharedMemory) {
        note.push_str(&format!(
            " ({} bytes allocated per block of {} per SM)",
            occupancy.allocated_smem_per_block, occupancy.smem_config_per_sm
        ));
    }
    note
}

/// `ptxas: 128 registers, 0 bytes stack frame, 24 bytes spill stores, 24 bytes spill loads`.
pub fn ptxas_note(record: &KernelRecord) -> String {
    format!(
        "ptxas reported for {} on {}: {} registers, {} barriers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads, {} bytes static shared memory",
        record.name,
        record.arch,
        record.registers.unwrap_or(0),
        record.barriers.unwrap_or(0),
        record.stack_frame_bytes.unwrap_or(0),
        record.spill_store_bytes.unwrap_or(0),
        record.spill_load_bytes.unwrap_or(0),
        record.static_smem_bytes
    )
}

/// Where the launch and limits a kernel is checked against came from. The lints are the same
/// either way; only the wording of their messages and help lines differs (what to edit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchOrigin {
    /// An `#[occupancy::kernel(...)]` declaration: the user edits its keys.
    Declaration,
    /// `cargo occupancy check` flags (`--block`, `--dynamic-smem`) with the default limits: the
    /// user changes flags or levels (`--allow`/`--warn`).
    CommandLine,
    /// A kernel with no declaration, checked at the crate's default launch
    /// (`[package.metadata.occupancy] block`) with the default limits: the user declares the
    /// kernel, or sets the crate's level of the lint.
    CrateDefault,
}

impl LaunchOrigin {
    /// `block = 256` as the user wrote it.
    fn block_setting(self, threads: u32) -> String {
        match self {
            LaunchOrigin::Declaration => format!("`block = {threads}`"),
            LaunchOrigin::CommandLine => format!("`--block {threads}`"),
            LaunchOrigin::CrateDefault => {
                format!("the crate's default launch of {threads} threads (`[package.metadata.occupancy] block`)")
            }
        }
    }

    /// `at most 0 declared` / `at most 0 allowed`.
    fn limit(self, max: u64) -> String {
        match self {
            LaunchOrigin::Declaration => format!("at most {max} declared"),
            LaunchOrigin::CommandLine => format!("at most {max} allowed"),
            LaunchOrigin::CrateDefault => format!("at most {max} allowed for an undeclared kernel"),
        }
    }

    /// How a user silences `lint` for this kernel: `allow(lint)` in the attribute, or the flag.
    fn allow(self, lint: LintId) -> String {
        match self {
            LaunchOrigin::Declaration => format!("`allow({})`", lint.as_str()),
            LaunchOrigin::CommandLine => format!("`--allow {}`", lint.as_str()),
            LaunchOrigin::CrateDefault => format!(
                "`{}` under `[package.metadata.occupancy.kernels.<name>.lints]`",
                lint.config_line(Level::Allow)
            ),
        }
    }

    /// How a user accepts a finding of `lint` as it is.
    fn accept(self, declaration_key: &str, lint: LintId) -> String {
        match self {
            LaunchOrigin::Declaration => format!("declare `{declaration_key}`"),
            LaunchOrigin::CommandLine => {
                format!(
                    "accept it with `--warn {0}` or `--allow {0}`",
                    lint.as_str()
                )
            }
            LaunchOrigin::CrateDefault => format!(
                "declare the kernel with `{declaration_key}`, or set `{}` under `[package.metadata.occupancy.lints]`",
                lint.config_line(Level::Warn)
            ),
        }
    }
}

/// Every lint that concerns a declared, compiled kernel on its target architectures.
/// `spills` gets a generic help here; a caller that can re-run ptxas replaces it with a verified
/// `min_blocks_per_sm` (see occupancy-build).
pub fn evaluate_declared(spec: &KernelSpec, on_archs: &[CompiledOnArch<'_>]) -> Vec<Finding> {
    evaluate_launch(spec, on_archs, LaunchOrigin::Declaration)
}

/// [`evaluate_declared`] for a launch from `origin`: the same lints, worded for where the launch
/// came from (`cargo occupancy check` passes [`LaunchOrigin::CommandLine`]).
pub fn evaluate_launch(
    spec: &KernelSpec,
    on_archs: &[CompiledOnArch<'_>],
    origin: LaunchOrigin,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let block_threads = spec.block.threads();
    if block_threads % 32 != 0 {
        let block_of = match origin {
            LaunchOrigin::Declaration => format!("the declared block of {block_threads} threads"),
            LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!(
                "the block of {block_threads} threads ({})",
                origin.block_setting(block_threads)
            ),
        };
        findings.push(Finding {
            lint: LintId::PartialWarp,
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
        });
    }
    for on in on_archs {
        let record = on.record;
        let arch = on.arch.name.to_string();
        let spilled = spill_bytes(record);
        let max_spill = u64::from(spec.max_spill_bytes.unwrap_or(0));
        if spilled > max_spill {
            let help = spill_help(spec, on, origin);
            findings.push(Finding {
                lint: LintId::Spills,
                arch: Some(arch.clone()),
                message: format!(
                    "kernel `{}` spills {spilled} bytes to local memory on {arch} ({} stores + {} loads; {})",
                    record.name,
                    record.spill_store_bytes.unwrap_or(0),
                    record.spill_load_bytes.unwrap_or(0),
                    origin.limit(max_spill)
                ),
                notes: bound_notes(spec, on).into_iter().chain([ptxas_note(record), occupancy_note(on)]).collect(),
                help: Some(help),
            });
        }
        if let Some(min_occupancy) = spec.min_occupancy {
            if on.occupancy.occupancy + 1e-9 < min_occupancy {
                let mut help = String::from(
                    "reduce registers, shared memory or the block size, or lower `min_occupancy`",
                );
                if let Some(fewer) = on.occupancy.headroom.registers_to_gain_block {
                    help = format!(
                        "{fewer} fewer registers per thread would fit one more block on {arch} (e.g. `max_registers = {}`); or reduce shared memory, lower `min_occupancy`, or `allow(low_occupancy)` if it is deliberate",
                        record.registers.unwrap_or(0).saturating_sub(fewer)
                    );
                }
                findings.push(Finding {
                    lint: LintId::LowOccupancy,
                    arch: Some(arch.clone()),
                    message: format!(
                        "kernel `{}` reaches {} occupancy on {arch}, below the declared `min_occupancy = {}`",
                        record.name,
                        percent(on.occupancy.occupancy),
                        min_occupancy
                    ),
                    notes: vec![occupancy_note(on), ptxas_note(record)],
                    help: Some(help),
                });
            }
        }
        unlaunchable(spec, on, origin, &mut findings);
        bounds_mismatch(spec, on, &mut findings);
        let stack = record.stack_frame_bytes.unwrap_or(0);
        let max_stack = u64::from(spec.max_stack_bytes.unwrap_or(0));
        if stack > max_stack {
            findings.push(Finding {
                lint: LintId::StackFrame,
                arch: Some(arch.clone()),
                message: format!(
                    "kernel `{}` has a {stack}-byte stack frame on {arch} ({})",
                    record.name,
                    origin.limit(max_stack)
                ),
                notes: vec![ptxas_note(record)],
                help: Some(format!(
                    "inline callees (`__forceinline__`), index local arrays with constants, or {}",
                    origin.accept("max_stack_bytes = N", LintId::StackFrame)
                )),
            });
        }
        let local_bytes = record.local_memory_bytes.unwrap_or(0);
        let local_warning = record
            .warnings
            .iter()
            .find(|warning| warning.contains("Local memory"));
        if spilled == 0 && (local_bytes > 0 || local_warning.is_some()) {
            findings.push(Finding {
                lint: LintId::LocalMemory,
                arch: Some(arch.clone()),
                message: format!("kernel `{}` uses local memory on {arch}", record.name),
                notes: local_warning.map(|warning| format!("ptxas: {warning}")).into_iter().chain([ptxas_note(record)]).collect(),
                help: Some("index local arrays with compile-time constants, or use shared memory for per-block scratch".into()),
            });
        }
        if let Some(max) = spec.max_registers_per_thread {
            let registers = record.registers.unwrap_or(0);
            if registers > max {
                findings.push(Finding {
                    lint: LintId::TooManyRegisters,
                    arch: Some(arch.clone()),
                    message: format!(
                        "kernel `{}` uses {registers} registers per thread on {arch}, above the declared `max_registers_per_thread = {max}`",
                        record.name
                    ),
                    notes: vec![ptxas_note(record), occupancy_note(on)],
                    help: Some(format!("cap registers at compile time with `max_registers = {max}` (ptxas may spill), raise the threshold, or `allow(too_many_registers)`")),
                });
            }
        }
        occupancy_cliff(on, origin, &mut findings);
    }
    findings
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
                if spec.min_blocks_per_sm.is_some_and(|blocks| blocks > 1) {
                    more_registers.push("lower `min_blocks_per_sm`".to_string());
                }
                if spec.max_registers.is_some_and(|cap| cap < hardware_max) {
                    more_registers.push(format!("raise `max_registers` (at most {hardware_max})"));
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
    if let Some(blocks) = spec.min_blocks_per_sm {
        let threads = spec.block.threads();
        notes.push(format!(
            "`min_blocks_per_sm = {blocks}` with `block = {threads}` asks ptxas to fit {} threads per SM on {}: at most {} registers per thread",
            blocks * threads,
            on.arch.name,
            register_budget(on.arch, threads, blocks)
        ));
    }
    if let Some(registers) = spec.max_registers {
        notes.push(format!(
            "`max_registers = {registers}` caps ptxas at {registers} registers per thread"
        ));
    }
    notes
}

/// The most registers per thread with which `blocks` blocks of `threads` fit the register file
/// (per-warp allocation granularity included): the cap ptxas works under for
/// `__launch_bounds__(threads, blocks)`.
pub fn register_budget(arch: &ArchFacts, threads: u32, blocks: u32) -> u32 {
    let warps = u64::from(threads.div_ceil(arch.warp_size).max(1)) * u64::from(blocks.max(1));
    let per_warp = u64::from(arch.regs_per_sm) / warps;
    let per_warp = per_warp / u64::from(arch.reg_alloc_unit_per_warp)
        * u64::from(arch.reg_alloc_unit_per_warp);
    let per_thread = per_warp / u64::from(arch.warp_size);
    per_thread.min(u64::from(arch.max_regs_per_thread)) as u32
}

fn unlaunchable(
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
                lint: LintId::Unlaunchable,
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
            lint: LintId::Unlaunchable,
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
        });
    }
}

fn bounds_mismatch(spec: &KernelSpec, on: &CompiledOnArch<'_>, findings: &mut Vec<Finding>) {
    let Some(ptx) = on.ptx else { return };
    let record = on.record;
    let threads = spec.block.threads();
    let mut differences = Vec::new();
    let compiled_max = ptx
        .maxntid
        .as_ref()
        .map(|dims| dims.iter().product::<u32>());
    if let Some(blocks) = spec.min_blocks_per_sm {
        if ptx.minnctapersm != Some(blocks) {
            differences.push(format!(
                "min blocks per SM: declared {blocks}, compiled {}",
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
    if let Some(registers) = spec.max_registers {
        if ptx.maxnreg != Some(registers) {
            differences.push(format!(
                "max registers: declared {registers}, compiled {}",
                ptx.maxnreg
                    .map_or("none (.maxnreg absent)".to_string(), |value| value
                        .to_string())
            ));
        }
    }
    if !differences.is_empty() {
        findings.push(Finding {
            lint: LintId::BoundsMismatch,
            arch: Some(on.arch.name.to_string()),
            message: format!("kernel `{}` was not compiled with the declared launch bounds", record.name),
            notes: differences,
            help: Some(format!(
                "take the bounds from the declaration: `__global__ void OCCUPANCY_BOUNDS_{0} {0}(...)` with `#include \"occupancy_bounds.h\"` (generated in OUT_DIR), or make the two sides agree",
                record.name
            )),
        });
    }
}

fn occupancy_cliff(on: &CompiledOnArch<'_>, origin: LaunchOrigin, findings: &mut Vec<Finding>) {
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
        findings.push(Finding {
            lint: LintId::OccupancyCliff,
            arch: Some(on.arch.name.to_string()),
            message: format!(
                "kernel `{}` is {} register{} per thread away from losing a block on {}",
                on.record.name,
                occupancy.headroom.registers_addable + 1,
                if occupancy.headroom.registers_addable == 0 { "" } else { "s" },
                on.arch.name
            ),
            notes: vec![occupancy_note(on)],
            help: Some(match origin {
                LaunchOrigin::Declaration => format!("cap registers at the current count (`max_registers = {registers}`) to keep this occupancy, or {allow}"),
                LaunchOrigin::CommandLine | LaunchOrigin::CrateDefault => format!("cap registers at the current count (`__maxnreg__({registers})` or `-maxrregcount {registers}`) to keep this occupancy, or {allow}"),
            }),
        });
    }
    let smem_bind = occupancy.block_limits.shared_memory == Some(occupancy.blocks_per_sm);
    if smem_bind && occupancy.headroom.smem_addable_bytes < CLIFF_SMEM_BYTES {
        findings.push(Finding {
            lint: LintId::OccupancyCliff,
            arch: Some(on.arch.name.to_string()),
            message: format!(
                "kernel `{}` is {} bytes of shared memory away from losing a block on {}",
                on.record.name,
                occupancy.headroom.smem_addable_bytes + 1,
                on.arch.name
            ),
            notes: vec![occupancy_note(on)],
            help: Some(format!(
                "keep shared memory per block where it is, or {allow}"
            )),
        });
    }
}

/// Names a "did you mean" or a note lists at most.
pub const NAMES_SHOWN: usize = 5;

/// `name1, name2, name3 (+595 more)`: at most [`NAMES_SHOWN`] names of a list.
pub fn few_names(names: &[&str]) -> String {
    let mut text = names
        .iter()
        .take(NAMES_SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > NAMES_SHOWN {
        text.push_str(&format!(" (+{} more)", names.len() - NAMES_SHOWN));
    }
    text
}

/// `missing_kernel`: declared, but no compiled entry has its name; suggests the closest one (by
/// edit distance) and lists a few close names, never all of them.
pub fn missing_kernel(kernel_name: &str, compiled_names: &[&str]) -> Finding {
    let close = closest_names(kernel_name, compiled_names.iter().copied(), NAMES_SHOWN);
    let note = if compiled_names.is_empty() {
        "no kernel was compiled".to_string()
    } else if close.len() > 1 {
        format!(
            "close compiled names: {} ({} kernels compiled)",
            close.join(", "),
            compiled_names.len()
        )
    } else {
        format!(
            "{} kernel{} compiled: {}",
            compiled_names.len(),
            if compiled_names.len() == 1 { "" } else { "s" },
            few_names(compiled_names)
        )
    };
    Finding {
        lint: LintId::MissingKernel,
        arch: None,
        message: format!("declared kernel `{kernel_name}` is not in any compiled output"),
        notes: vec![note],
        help: Some(match close.first() {
            Some(name) => format!("did you mean `name = \"{name}\"`?"),
            None => "set `name = \"...\"` to the compiled symbol (mangled for C++ kernels), declare the kernel `extern \"C\"`, or add its file to the builder".into(),
        }),
    }
}

/// `missing_kernel` for a family: its pattern matches no compiled kernel.
pub fn family_matches_nothing(pattern: &str, compiled_names: &[&str]) -> Finding {
    Finding {
        lint: LintId::MissingKernel,
        arch: None,
        message: format!("kernel family `{pattern}` matches no compiled kernel"),
        notes: vec![if compiled_names.is_empty() {
            "no kernel was compiled".to_string()
        } else {
            format!(
                "{} kernel{} compiled: {}",
                compiled_names.len(),
                if compiled_names.len() == 1 { "" } else { "s" },
                few_names(compiled_names)
            )
        }],
        help: Some("fix the pattern (`*` stands for any run of characters; the rest must match the compiled symbol exactly), or remove the declaration".into()),
    }
}

/// `undeclared_kernel`: compiled, with no declaration.
pub fn undeclared_kernel(kernel_name: &str, source: &str) -> Finding {
    Finding {
        lint: LintId::UndeclaredKernel,
        arch: None,
        message: format!(
            "kernel `{kernel_name}` from {source} has no `#[occupancy::kernel]` declaration"
        ),
        notes: Vec::new(),
        help: Some(
            "declare it next to its Rust stub with `#[occupancy::kernel(block = ...)]`".into(),
        ),
    }
}

/// What the baseline (`occupancy.lock`) records per kernel and arch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BaselineNumbers {
    pub registers: u32,
    pub spill_store_bytes: u64,
    pub spill_load_bytes: u64,
    pub stack_frame_bytes: u64,
    pub static_smem_bytes: u64,
    pub occupancy: f64,
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
        lint: LintId::Regression,
        arch: Some(arch.to_string()),
        message: format!("kernel `{kernel_name}` is worse than the baseline on {arch}"),
        notes: worse,
        help: Some("fix the kernel, or accept the new numbers with `OCCUPANCY_BLESS=1 cargo build` and commit the baseline".into()),
    })
}

/// Where lint levels were set, most specific first.
#[derive(Debug, Clone, Default)]
pub struct LevelSources<'a> {
    /// `allow(...)`/`warn(...)`/`deny(...)` in the kernel's attribute.
    pub attribute: Option<&'a BTreeMap<LintId, Level>>,
    /// `[package.metadata.occupancy.kernels.<name>.lints]`.
    pub kernel_config: Option<&'a BTreeMap<LintId, Level>>,
    /// `OCCUPANCY_LINT_<ID>` variables.
    pub environment: Option<&'a BTreeMap<LintId, Level>>,
    /// `[package.metadata.occupancy.lints]` (merged over the workspace's).
    pub crate_config: Option<&'a BTreeMap<LintId, Level>>,
}

/// The level of `lint`: the most specific source that sets it, else the lint's default.
/// (As with rustc, where `#[allow]` in the source beats `-D` on the command line, a kernel's
/// own choice beats the environment, which beats the crate-wide setting.)
pub fn resolve_level(lint: LintId, sources: &LevelSources<'_>) -> Level {
    [
        sources.attribute,
        sources.kernel_config,
        sources.environment,
        sources.crate_config,
    ]
    .into_iter()
    .flatten()
    .find_map(|levels| levels.get(&lint).copied())
    .unwrap_or_else(|| lint.default_level())
}

/// The lints an undeclared kernel is checked for: the hard failures that need no declared
/// intent (`docs/lints.md` promises them). Occupancy thresholds, cliffs and bounds need a
/// declaration.
pub const UNDECLARED_LINTS: [LintId; 3] =
    [LintId::Spills, LintId::Unlaunchable, LintId::StackFrame];

/// The block an undeclared kernel is checked at when the crate sets none: the common launch of
/// CUDA crates, and what `cargo occupancy check` assumes without `--block`.
pub const DEFAULT_UNDECLARED_BLOCK_THREADS: u32 = 256;

/// What a kernel is checked against.
#[derive(Debug, Clone, Copy)]
pub enum Launch<'a> {
    /// Its `#[occupancy::kernel]` declaration (or the family declaration that covers it).
    Declared(&'a KernelSpec),
    /// No declaration: the crate's default launch (`[package.metadata.occupancy] block`), with
    /// the default limits, for [`UNDECLARED_LINTS`] only.
    Undeclared(&'a KernelSpec),
    /// `cargo occupancy check`'s `--block`/`--dynamic-smem`, with the default limits. No
    /// `bounds_mismatch`: there is no declaration for the compiled bounds to disagree with.
    CommandLine(&'a KernelSpec),
}

/// A finding with its level resolved (never `allow`: those are dropped).
#[derive(Debug, Clone, PartialEq)]
pub struct LeveledFinding {
    /// What was found.
    pub finding: Finding,
    /// `warn` or `deny`.
    pub level: Level,
}

/// The one evaluate-then-level step of the gate, shared by the build (`occupancy-build`) and
/// `cargo occupancy check`: every lint for `launch` on `on_archs`, each given its level from
/// `levels`; allowed findings are dropped.
pub fn check_kernel(
    launch: Launch<'_>,
    on_archs: &[CompiledOnArch<'_>],
    levels: &LevelSources<'_>,
) -> Vec<LeveledFinding> {
    let findings = match launch {
        Launch::Declared(spec) => evaluate_declared(spec, on_archs),
        Launch::Undeclared(spec) => evaluate_launch(spec, on_archs, LaunchOrigin::CrateDefault)
            .into_iter()
            .filter(|finding| UNDECLARED_LINTS.contains(&finding.lint))
            .collect(),
        Launch::CommandLine(spec) => evaluate_launch(spec, on_archs, LaunchOrigin::CommandLine)
            .into_iter()
            .filter(|finding| finding.lint != LintId::BoundsMismatch)
            .collect(),
    };
    findings
        .into_iter()
        .map(|finding| LeveledFinding {
            level: resolve_level(finding.lint, levels),
            finding,
        })
        .filter(|leveled| leveled.level != Level::Allow)
        .collect()
}

/// One line for many kernels with the same lint at the same level: what the build prints for
/// undeclared kernels instead of one diagnostic each (the full list is in the report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingSummary {
    /// The lint.
    pub lint: LintId,
    /// Its level.
    pub level: Level,
    /// The kernels, each once, in the order first found.
    pub kernels: Vec<String>,
    /// The architectures concerned, each once, in the order first found.
    pub archs: Vec<String>,
}

impl FindingSummary {
    /// `3 undeclared kernels spill to local memory on sm_90: a, b, c (+2 more, see REPORT)`.
    pub fn message(&self, report_path: &str) -> String {
        let count = self.kernels.len();
        let (one, many) = match self.lint {
            LintId::Spills => (
                "spills registers to local memory",
                "spill registers to local memory",
            ),
            LintId::Unlaunchable => (
                "cannot start at the crate's default launch",
                "cannot start at the crate's default launch",
            ),
            LintId::StackFrame => ("has a stack frame", "have a stack frame"),
            LintId::UndeclaredKernel => (
                "is compiled without a declaration",
                "are compiled without a declaration",
            ),
            _ => ("has findings", "have findings"),
        };
        let names: Vec<&str> = self.kernels.iter().map(String::as_str).collect();
        let list = if count > NAMES_SHOWN {
            format!(
                "{} (+{} more, see {report_path})",
                names[..NAMES_SHOWN].join(", "),
                count - NAMES_SHOWN
            )
        } else {
            format!("{} (details in {report_path})", names.join(", "))
        };
        let archs = if self.archs.is_empty() {
            String::new()
        } else {
            format!(" on {}", self.archs.join(", "))
        };
        if count == 1 {
            format!("1 undeclared kernel {one}{archs}: {list}")
        } else {
            format!("{count} undeclared kernels {many}{archs}: {list}")
        }
    }
}

/// Groups findings by (lint, level), in the order first seen.
pub fn summarize<'a>(
    findings: impl IntoIterator<Item = (&'a LeveledFinding, &'a str)>,
) -> Vec<FindingSummary> {
    let mut summaries: Vec<FindingSummary> = Vec::new();
    for (leveled, kernel) in findings {
        let index = match summaries.iter().position(|summary| {
            summary.lint == leveled.finding.lint && summary.level == leveled.level
        }) {
            Some(index) => index,
            None => {
                summaries.push(FindingSummary {
                    lint: leveled.finding.lint,
                    level: leveled.level,
                    kernels: Vec::new(),
                    archs: Vec::new(),
                });
                summaries.len() - 1
            }
        };
        let summary = &mut summaries[index];
        if !summary.kernels.iter().any(|known| known == kernel) {
            summary.kernels.push(kernel.to_string());
        }
        if let Some(arch) = &leveled.finding.arch {
            if !summary.archs.contains(arch) {
                summary.archs.push(arch.clone());
            }
        }
    }
    summaries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::lookup;
    use crate::calc::{occupancy, KernelFacts, Launch};
    use crate::ptxas::parse_log;
    use crate::spec::{BlockDim, KernelSpec};

    fn record(log: &str) -> KernelRecord {
        parse_log(log)
            .unwrap()
            .kernels
            .into_iter()
            .find(|kernel| kernel.entry)
            .unwrap()
    }

    const SPILLING: &str = "ptxas info    : Compiling entry function 'hot' for 'sm_90'\nptxas info    : Function properties for hot\n    0 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads\nptxas info    : Used 32 registers, used 1 barriers\n";

    fn facts(record: &KernelRecord) -> KernelFacts {
        KernelFacts {
            registers_per_thread: record.registers.unwrap_or(0),
            static_smem_bytes: record.static_smem_bytes as u32,
            barriers: record.barriers.unwrap_or(1),
            max_threads_per_block: None,
            max_dynamic_smem_bytes: None,
        }
    }

    #[test]
    fn spills_above_the_declared_maximum_are_found_with_notes() {
        let record = record(SPILLING);
        let arch = lookup("sm_90").unwrap();
        let mut spec = KernelSpec::with_block(BlockDim::linear(256));
        spec.min_blocks_per_sm = Some(8);
        let result = occupancy(arch, &facts(&record), &Launch::new(256));
        let on = [CompiledOnArch {
            arch,
            record: &record,
            ptx: None,
            occupancy: &result,
        }];
        let findings = evaluate_declared(&spec, &on);
        let spills: Vec<_> = findings
            .iter()
            .filter(|finding| finding.lint == LintId::Spills)
            .collect();
        assert_eq!(spills.len(), 1, "{findings:#?}");
        assert!(
            spills[0].message.contains("spills 80 bytes"),
            "{}",
            spills[0].message
        );
        assert!(
            spills[0].notes[0].contains("at most 32 registers per thread"),
            "{:?}",
            spills[0].notes
        );
        spec.max_spill_bytes = Some(80);
        assert!(evaluate_declared(&spec, &on)
            .iter()
            .all(|finding| finding.lint != LintId::Spills));
    }

    #[test]
    fn a_command_line_launch_gets_the_same_lints_worded_with_flags() {
        let record = record(SPILLING);
        let arch = lookup("sm_90").unwrap();
        // 250 threads: a partial warp too, whose message names the block.
        let spec = KernelSpec::with_block(BlockDim::linear(250));
        let result = occupancy(arch, &facts(&record), &Launch::new(250));
        let on = [CompiledOnArch {
            arch,
            record: &record,
            ptx: None,
            occupancy: &result,
        }];
        let declared = evaluate_declared(&spec, &on);
        let command_line = evaluate_launch(&spec, &on, LaunchOrigin::CommandLine);
        let lints = |findings: &[Finding]| findings.iter().map(|f| f.lint).collect::<Vec<_>>();
        assert_eq!(lints(&declared), lints(&command_line));
        assert!(lints(&command_line).contains(&LintId::Spills));
        assert!(lints(&command_line).contains(&LintId::PartialWarp));
        for finding in &command_line {
            let text = format!(
                "{} {}",
                finding.message,
                finding.help.as_deref().unwrap_or("")
            );
            for attribute_word in ["declared", "min_blocks_per_sm", "max_spill_bytes", "allow("] {
                assert!(!text.contains(attribute_word), "{attribute_word}: {text}");
            }
        }
        let spills = command_line
            .iter()
            .find(|finding| finding.lint == LintId::Spills)
            .unwrap();
        assert!(
            spills.message.contains("at most 0 allowed"),
            "{}",
            spills.message
        );
        assert!(
            spills.help.as_deref().unwrap().contains("`--allow spills`"),
            "{:?}",
            spills.help
        );
        let partial = command_line
            .iter()
            .find(|finding| finding.lint == LintId::PartialWarp)
            .unwrap();
        assert!(
            partial.message.contains("`--block 250`"),
            "{}",
            partial.message
        );
    }

    #[test]
    fn register_budget_matches_the_launch_bounds_arithmetic() {
        let arch = lookup("sm_90").unwrap();
        assert_eq!(register_budget(arch, 256, 8), 32);
        assert_eq!(register_budget(arch, 256, 4), 64);
        assert_eq!(register_budget(arch, 256, 1), 255);
        assert_eq!(register_budget(arch, 96, 5), 136);
    }

    #[test]
    fn low_occupancy_and_partial_warp() {
        let record = record(
            &SPILLING
                .replace("Used 32", "Used 128")
                .replace("40 bytes", "0 bytes"),
        );
        let arch = lookup("sm_90").unwrap();
        let mut spec = KernelSpec::with_block(BlockDim::linear(250));
        spec.min_occupancy = Some(0.5);
        let result = occupancy(arch, &facts(&record), &Launch::new(250));
        let on = [CompiledOnArch {
            arch,
            record: &record,
            ptx: None,
            occupancy: &result,
        }];
        let lints: Vec<LintId> = evaluate_declared(&spec, &on)
            .iter()
            .map(|finding| finding.lint)
            .collect();
        assert!(lints.contains(&LintId::LowOccupancy), "{lints:?}");
        assert!(lints.contains(&LintId::PartialWarp), "{lints:?}");
    }

    #[test]
    fn stack_frames_and_cliffs() {
        // 64 registers at 256 threads on sm_90: 4 blocks, and one more register (allocated as 72)
        // leaves 3: a cliff. 16 bytes of stack with nothing declared: stack_frame.
        let log = SPILLING.replace("Used 32", "Used 64").replace(
            "0 bytes stack frame, 40 bytes spill stores, 40 bytes spill loads",
            "16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads",
        );
        let record = record(&log);
        let arch = lookup("sm_90").unwrap();
        let spec = KernelSpec::with_block(BlockDim::linear(256));
        let result = occupancy(arch, &facts(&record), &Launch::new(256));
        assert_eq!(result.blocks_per_sm, 4);
        let on = [CompiledOnArch {
            arch,
            record: &record,
            ptx: None,
            occupancy: &result,
        }];
        let findings = evaluate_declared(&spec, &on);
        let lints: Vec<LintId> = findings.iter().map(|finding| finding.lint).collect();
        assert!(lints.contains(&LintId::StackFrame), "{findings:#?}");
        assert!(lints.contains(&LintId::OccupancyCliff), "{findings:#?}");
        assert!(!lints.contains(&LintId::Spills), "{findings:#?}");
        let mut allowed = spec.clone();
        allowed.max_stack_bytes = Some(16);
        assert!(evaluate_declared(&allowed, &on)
            .iter()
            .all(|finding| finding.lint != LintId::StackFrame));
    }

    #[test]
    fn regression_compares_every_number() {
        let base = BaselineNumbers {
            registers: 40,
            spill_store_bytes: 0,
            spill_load_bytes: 0,
            stack_frame_bytes: 0,
            static_smem_bytes: 0,
            occupancy: 0.5,
        };
        assert!(regression("k", "sm_90", &base, &base).is_none());
        let worse = BaselineNumbers {
            registers: 48,
            occupancy: 0.375,
            ..base
        };
        let finding = regression("k", "sm_90", &base, &worse).unwrap();
        assert_eq!(
            finding.notes,
            vec!["registers: 40 -> 48", "occupancy: 50% -> 37.5%"]
        );
        let better = BaselineNumbers {
            registers: 32,
            occupancy: 0.75,
            ..base
        };
        assert!(regression("k", "sm_90", &base, &better).is_none());
    }

    #[test]
    fn levels_resolve_most_specific_first() {
        let attribute = BTreeMap::from([(LintId::LowOccupancy, Level::Allow)]);
        let environment = BTreeMap::from([
            (LintId::LowOccupancy, Level::Deny),
            (LintId::Spills, Level::Warn),
        ]);
        let crate_config = BTreeMap::from([
            (LintId::Spills, Level::Allow),
            (LintId::StackFrame, Level::Deny),
        ]);
        let sources = LevelSources {
            attribute: Some(&attribute),
            kernel_config: None,
            environment: Some(&environment),
            crate_config: Some(&crate_config),
        };
        assert_eq!(resolve_level(LintId::LowOccupancy, &sources), Level::Allow);
        assert_eq!(resolve_level(LintId::Spills, &sources), Level::Warn);
        assert_eq!(resolve_level(LintId::StackFrame, &sources), Level::Deny);
        assert_eq!(resolve_level(LintId::Regression, &sources), Level::Deny);
        assert_eq!(
            resolve_level(LintId::UndeclaredKernel, &sources),
            Level::Allow
        );
    }

    #[test]
    fn missing_kernels_suggest_a_close_name() {
        let finding = missing_kernel("saxpi", &["saxpy", "gemm"]);
        assert_eq!(
            finding.help.as_deref(),
            Some("did you mean `name = \"saxpy\"`?")
        );
    }

    fn on_sm_90<'a>(record: &'a KernelRecord, result: &'a Occupancy) -> [CompiledOnArch<'a>; 1] {
        [CompiledOnArch {
            arch: lookup("sm_90").unwrap(),
            record,
            ptx: None,
            occupancy: result,
        }]
    }

    #[test]
    fn undeclared_kernels_get_only_the_hard_failures_at_the_default_launch() {
        // Spills 80 bytes, 16 bytes of stack, and a partial warp: only spills and stack_frame.
        let log = SPILLING.replace("0 bytes stack frame", "16 bytes stack frame");
        let record = record(&log);
        let spec = KernelSpec::with_block(BlockDim::linear(250));
        let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(250));
        let on = on_sm_90(&record, &result);
        let found = check_kernel(
            super::Launch::Undeclared(&spec),
            &on,
            &LevelSources::default(),
        );
        let lints: Vec<(LintId, Level)> = found
            .iter()
            .map(|leveled| (leveled.finding.lint, leveled.level))
            .collect();
        assert_eq!(
            lints,
            [
                (LintId::Spills, Level::Deny),
                (LintId::StackFrame, Level::Warn)
            ]
        );
        let spills = &found[0].finding;
        assert!(
            spills
                .message
                .contains("at most 0 allowed for an undeclared kernel"),
            "{}",
            spills.message
        );
        assert!(
            spills
                .help
                .as_deref()
                .unwrap()
                .contains("declare the kernel"),
            "{:?}",
            spills.help
        );
        // A crate-wide level applies to them as to any finding.
        let crate_config = BTreeMap::from([(LintId::Spills, Level::Allow)]);
        let sources = LevelSources {
            crate_config: Some(&crate_config),
            ..LevelSources::default()
        };
        assert!(
            check_kernel(super::Launch::Undeclared(&spec), &on, &sources)
                .iter()
                .all(|leveled| leveled.finding.lint != LintId::Spills)
        );
    }

    #[test]
    fn an_undeclared_kernel_too_big_for_the_crate_block_is_unlaunchable() {
        // 72 registers x 1024 threads = 73728 registers, over the 65536 of a block.
        let record = record(
            &SPILLING
                .replace("Used 32", "Used 72")
                .replace("40 bytes", "0 bytes"),
        );
        let spec = KernelSpec::with_block(BlockDim::linear(1024));
        let result = occupancy(
            lookup("sm_90").unwrap(),
            &facts(&record),
            &Launch::new(1024),
        );
        let found = check_kernel(
            super::Launch::Undeclared(&spec),
            &on_sm_90(&record, &result),
            &LevelSources::default(),
        );
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].finding.lint, LintId::Unlaunchable);
        assert!(
            found[0]
                .finding
                .message
                .contains("the crate's default launch of 1024 threads"),
            "{}",
            found[0].finding.message
        );
    }

    #[test]
    fn summaries_name_a_few_kernels_and_count_the_rest() {
        let finding = |arch: &str| LeveledFinding {
            finding: Finding {
                lint: LintId::Spills,
                arch: Some(arch.to_string()),
                message: String::new(),
                notes: Vec::new(),
                help: None,
            },
            level: Level::Deny,
        };
        let names: Vec<String> = (0..8).map(|index| format!("k{index}")).collect();
        let findings: Vec<(LeveledFinding, &str)> = names
            .iter()
            .flat_map(|name| {
                [
                    (finding("sm_80"), name.as_str()),
                    (finding("sm_90"), name.as_str()),
                ]
            })
            .collect();
        let summaries = summarize(findings.iter().map(|(leveled, name)| (leveled, *name)));
        assert_eq!(summaries.len(), 1);
        assert_eq!(
            summaries[0].message("target/occupancy/k.json"),
            "8 undeclared kernels spill registers to local memory on sm_80, sm_90: k0, k1, k2, k3, k4 (+3 more, see target/occupancy/k.json)"
        );
        let one = summarize(findings[..1].iter().map(|(leveled, name)| (leveled, *name)));
        assert_eq!(
            one[0].message("r.json"),
            "1 undeclared kernel spills registers to local memory on sm_80: k0 (details in r.json)"
        );
    }

    #[test]
    fn no_cliff_and_no_raise_at_the_hardware_register_maximum() {
        // 255 registers at 256 threads on sm_90: 1 block; the next count (256) is one no
        // compiler assigns, so capping at 255 would change nothing.
        let log = SPILLING.replace("Used 32", "Used 255");
        let record = record(&log);
        let mut spec = KernelSpec::with_block(BlockDim::linear(256));
        spec.max_registers = Some(255);
        let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
        assert_eq!(result.blocks_per_sm, 1);
        let findings = evaluate_declared(&spec, &on_sm_90(&record, &result));
        assert!(
            findings
                .iter()
                .all(|finding| finding.lint != LintId::OccupancyCliff),
            "{findings:#?}"
        );
        let spills = findings
            .iter()
            .find(|finding| finding.lint == LintId::Spills)
            .unwrap();
        let help = spills.help.as_deref().unwrap();
        assert!(!help.contains("raise `max_registers`"), "{help}");
        assert!(!help.contains("min_blocks_per_sm"), "{help}");
        assert!(
            help.contains("the most registers a thread can have on sm_90 (255)"),
            "{help}"
        );
    }

    #[test]
    fn spill_help_names_only_keys_that_were_declared() {
        let record = record(SPILLING);
        let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
        let on = on_sm_90(&record, &result);
        let help_for = |spec: &KernelSpec| {
            evaluate_declared(spec, &on)
                .into_iter()
                .find(|finding| finding.lint == LintId::Spills)
                .and_then(|finding| finding.help)
                .unwrap()
        };
        let mut spec = KernelSpec::with_block(BlockDim::linear(256));
        spec.min_blocks_per_sm = Some(8);
        assert!(
            help_for(&spec).starts_with("lower `min_blocks_per_sm` so ptxas"),
            "{}",
            help_for(&spec)
        );
        spec.min_blocks_per_sm = None;
        spec.max_registers = Some(32);
        assert!(
            help_for(&spec).starts_with("raise `max_registers` (at most 255)"),
            "{}",
            help_for(&spec)
        );
    }

    #[test]
    fn max_registers_per_thread_has_its_own_lint() {
        let record = record(
            &SPILLING
                .replace("Used 32", "Used 72")
                .replace("40 bytes", "0 bytes"),
        );
        let mut spec = KernelSpec::with_block(BlockDim::linear(256));
        spec.max_registers_per_thread = Some(64);
        spec.lint_levels.insert(LintId::LowOccupancy, Level::Allow);
        let result = occupancy(lookup("sm_90").unwrap(), &facts(&record), &Launch::new(256));
        let on = on_sm_90(&record, &result);
        let sources = LevelSources {
            attribute: Some(&spec.lint_levels),
            ..LevelSources::default()
        };
        // `allow(low_occupancy)` does not silence it.
        let found = check_kernel(super::Launch::Declared(&spec), &on, &sources);
        assert!(
            found
                .iter()
                .any(|leveled| leveled.finding.lint == LintId::TooManyRegisters
                    && leveled.level == Level::Deny),
            "{found:#?}"
        );
    }

    #[test]
    fn missing_kernels_list_a_few_close_names_not_all() {
        // `where_u32_f16` comes first and is two edits away; the transposition is one.
        let names: Vec<String> = ["where_u32_f16", "where_u8_f32", "where_u32_f32"]
            .into_iter()
            .map(String::from)
            .chain((0..597).map(|index| format!("affine_{index}")))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let finding = missing_kernel("where_u32_f23", &refs);
        assert_eq!(
            finding.help.as_deref(),
            Some("did you mean `name = \"where_u32_f32\"`?")
        );
        let notes = finding.notes.join("\n");
        assert!(notes.len() < 300, "{notes}");
        assert!(notes.contains("600 kernels compiled"), "{notes}");
    }
}
