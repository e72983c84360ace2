//! `explain`: the reasoning an expert does by hand about one kernel on one architecture, computed
//! with [`crate::calc`]: which resource binds and by how much, what each knob would change
//! (`__launch_bounds__` min blocks and `max_registers`, block size, shared memory, carveout),
//! whether the resulting occupancy is likely a problem, and the three curves as text.
//!
//! Every number here comes from a calculator call on a modified kernel or launch; the prose only
//! connects them. The guidance on when low occupancy is fine follows Volkov ("Better Performance
//! at Lower Occupancy", GTC 2010): an SM needs enough independent instructions in flight, which
//! warps (occupancy) or instruction-level parallelism within a warp can each provide.

use std::fmt::Write as _;

use super::bytes_u32;
use super::curves::{all_curves, format_x, Axis, Curve};
use super::model::{Finding, KernelRow};
use super::table::{format_bytes, format_occupancy};
use crate::arch::ArchFacts;
use crate::calc::{self, Carveout, KernelFacts, Launch, Limiter};
use crate::lint::LintId;

/// One resource's limit on resident blocks.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResourceLimit {
    /// The resource.
    pub limiter: Limiter,
    /// Blocks per SM it allows (`None`: it does not limit).
    pub blocks_per_sm: Option<u32>,
    /// How the figure comes about, with the numbers.
    pub detail: String,
}

/// What one change would do, computed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct KnobEffect {
    /// The knob and its new value, as the user would write it.
    pub change: String,
    /// Resident blocks per SM after the change.
    pub blocks_per_sm: u32,
    /// Occupancy after the change.
    pub occupancy: f64,
    /// The binding resources after the change.
    pub limiters: Vec<String>,
    /// A caveat (e.g. "ptxas may spill").
    pub caveat: Option<String>,
}

/// The whole explanation of one kernel on one architecture.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Explanation {
    /// The kernel row explained (with its computed columns filled).
    pub row: KernelRow,
    /// The arch.
    pub arch: &'static ArchFacts,
    /// Each resource's limit, in the calculator's order.
    pub limits: Vec<ResourceLimit>,
    /// Blocks per SM if the binding resources did not bind (the next tightest limit).
    pub next_limit: Option<(u32, Vec<String>)>,
    /// `__launch_bounds__(block, N)` / `max_registers` for every block count above the current
    /// one that registers can reach.
    pub register_knobs: Vec<KnobEffect>,
    /// Other block sizes.
    pub block_knobs: Vec<KnobEffect>,
    /// Shared memory changes.
    pub smem_knobs: Vec<KnobEffect>,
    /// Carveout choices.
    pub carveout_knobs: Vec<KnobEffect>,
    /// The three curves.
    pub curves: [Curve; 3],
    /// Assessment of the occupancy (latency hiding, Volkov regime, spills).
    pub assessment: Vec<String>,
    /// What ptxas did with the kernel's minimum blocks per SM and register cap on this arch, when
    /// it did not apply them as written: the `unreachable_bound` and `register_cap_ignored`
    /// findings of the kernel's record, made by those lints' checks
    /// ([`Explanation::with_bound_findings`]); empty when the facts came without a record.
    pub bounds: Vec<Finding>,
}

/// The lints that say what became of a kernel's launch bounds and register cap.
const BOUND_LINTS: [LintId; 2] = [LintId::UnreachableBound, LintId::RegisterCapIgnored];

fn limiter_names(limiters: &[Limiter]) -> Vec<String> {
    limiters
        .iter()
        .map(|limiter| limiter.name().to_string())
        .collect()
}

fn effect(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    change: String,
    caveat: Option<String>,
) -> KnobEffect {
    let answer = calc::occupancy(arch, kernel, launch);
    KnobEffect {
        change,
        blocks_per_sm: answer.blocks_per_sm,
        occupancy: answer.occupancy,
        limiters: limiter_names(&answer.limiters),
        caveat,
    }
}

/// Explains `row` (its inputs: registers, shared memory, barriers, bounds, launch) on `arch`.
pub fn explain(arch: &'static ArchFacts, row: &KernelRow) -> Explanation {
    let mut row = row.clone();
    row.compute(arch);
    let kernel = row.kernel_facts();
    let launch = row.launch();
    let answer = calc::occupancy(arch, &kernel, &launch);
    let limits = resource_limits(arch, &kernel, &launch, &answer);
    let next_limit = next_limit(&limits, &answer);
    let register_knobs = register_knobs(arch, &row, &kernel, &launch, &answer, next_limit.as_ref());
    let block_knobs = block_knobs(arch, &row, &kernel, &launch);
    let smem_knobs = smem_knobs(arch, &row, &kernel, &launch);
    let carveout_knobs = carveout_knobs(arch, &kernel, &launch, &answer);
    let curves = all_curves(arch, &row.curve_input());
    let assessment = assess(arch, &row, &answer);
    Explanation {
        row,
        arch,
        limits,
        next_limit,
        register_knobs,
        block_knobs,
        smem_knobs,
        carveout_knobs,
        curves,
        assessment,
        bounds: Vec::new(),
    }
}

impl Explanation {
    /// Keeps, of `findings` (a report's, or a check of the kernel's record), those that say what
    /// became of this kernel's minimum blocks per SM or register cap on this arch
    /// (`unreachable_bound`, `register_cap_ignored`), in their order.
    pub fn with_bound_findings<'a>(
        mut self,
        findings: impl IntoIterator<Item = &'a Finding>,
    ) -> Self {
        let row = &self.row;
        self.bounds.extend(
            findings
                .into_iter()
                .filter(|finding| BOUND_LINTS.contains(&finding.lint))
                .filter(|finding| finding.kernel.as_deref() == Some(row.name.as_str()))
                .filter(|finding| finding.arch.as_deref() == Some(row.arch.as_str()))
                .filter(|finding| finding.crate_name == row.crate_name)
                .cloned(),
        );
        self
    }
}

/// The blocks per SM the tightest resource that does not bind would allow, and its names.
fn next_limit(limits: &[ResourceLimit], answer: &calc::Occupancy) -> Option<(u32, Vec<String>)> {
    let others: Vec<&ResourceLimit> = limits
        .iter()
        .filter(|limit| !answer.limiters.contains(&limit.limiter))
        .filter(|limit| limit.blocks_per_sm.is_some())
        .collect();
    let smallest = others.iter().filter_map(|limit| limit.blocks_per_sm).min();
    smallest.map(|blocks| {
        let names = others
            .iter()
            .filter(|limit| limit.blocks_per_sm == Some(blocks))
            .map(|limit| limit.limiter.name().to_string())
            .collect();
        (blocks, names)
    })
}

/// Registers: `__launch_bounds__(block, N)` makes ptxas fit N blocks, i.e. cap registers at the
/// budget for N blocks; `max_registers` (`__maxnreg__`) caps them directly. Then the next cliff
/// up, when registers can grow before a block is lost.
fn register_knobs(
    arch: &ArchFacts,
    row: &KernelRow,
    kernel: &KernelFacts,
    launch: &Launch,
    answer: &calc::Occupancy,
    next_limit: Option<&(u32, Vec<String>)>,
) -> Vec<KnobEffect> {
    let mut knobs = Vec::new();
    if answer.blocks_per_sm == 0 || row.registers == 0 {
        return knobs;
    }
    let ceiling = next_limit.map_or(u32::MAX, |(blocks, _)| *blocks);
    for blocks in answer.blocks_per_sm + 1..=ceiling.min(arch.max_blocks_per_sm) {
        let Some(budget) = calc::register_cap_for_blocks(arch, kernel, launch, blocks)
            .filter(|&budget| budget < row.registers)
        else {
            break;
        };
        // A larger min-blocks with the same register budget changes nothing.
        let same_budget = format!("max_registers = {budget} ");
        if knobs
            .last()
            .is_some_and(|previous: &KnobEffect| previous.change.contains(&same_budget))
        {
            continue;
        }
        let caveat = format!(
            "{} fewer registers per thread: ptxas may spill to reach it",
            row.registers - budget
        );
        let reduced = KernelFacts {
            registers_per_thread: budget,
            ..*kernel
        };
        let change = format!(
            "__launch_bounds__({}, {blocks}) or max_registers = {budget} (now {})",
            row.block, row.registers
        );
        knobs.push(effect(arch, &reduced, launch, change, Some(caveat)));
    }
    if let Some(spare) = row.headroom.spare_registers_per_thread {
        let more = row.registers + spare + 1;
        let grown = KernelFacts {
            registers_per_thread: more,
            ..*kernel
        };
        let change = format!("{more} registers (+{}): the next cliff up", spare + 1);
        knobs.push(effect(arch, &grown, launch, change, None));
    }
    knobs
}

/// Block size: halving and doubling the block, and the sizes with the most resident threads.
fn block_knobs(
    arch: &ArchFacts,
    row: &KernelRow,
    kernel: &KernelFacts,
    launch: &Launch,
) -> Vec<KnobEffect> {
    let max_block = kernel
        .max_threads_per_block
        .unwrap_or(arch.max_threads_per_block)
        .min(arch.max_threads_per_block);
    let suggestion = calc::max_potential_block_size(
        arch,
        kernel,
        |_| launch.dynamic_smem_bytes,
        launch.carveout,
    );
    let mut sizes: Vec<u32> = vec![
        row.block / 2,
        row.block.saturating_mul(2),
        suggestion.block_threads,
        64,
        128,
        256,
        512,
    ];
    sizes.retain(|&size| size >= arch.warp_size && size <= max_block && size != row.block);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
        .into_iter()
        .map(|size| {
            let changed = Launch {
                block_threads: size,
                ..*launch
            };
            let note = (size == suggestion.block_threads).then(|| {
                "the most resident threads (cudaOccupancyMaxPotentialBlockSize)".to_string()
            });
            effect(arch, kernel, &changed, format!("block = {size}"), note)
        })
        .collect()
}

/// Shared memory: what to remove to gain a block, what can be added before losing one.
fn smem_knobs(
    arch: &ArchFacts,
    row: &KernelRow,
    kernel: &KernelFacts,
    launch: &Launch,
) -> Vec<KnobEffect> {
    let mut knobs = Vec::new();
    let smem_used = row.static_smem_bytes + row.dynamic_smem_bytes;
    if let Some(remove) = row.headroom.smem_bytes_to_gain_block {
        let (static_bytes, dynamic_bytes) =
            take_smem(row.static_smem_bytes, row.dynamic_smem_bytes, remove);
        let kernel_less = KernelFacts {
            static_smem_bytes: bytes_u32(static_bytes),
            ..*kernel
        };
        let launch_less = Launch {
            dynamic_smem_bytes: bytes_u32(dynamic_bytes),
            ..*launch
        };
        let change = format!(
            "{} less shared memory per block ({} → {})",
            format_bytes(remove),
            format_bytes(smem_used),
            format_bytes(smem_used - remove)
        );
        knobs.push(effect(arch, &kernel_less, &launch_less, change, None));
    }
    if let Some(spare) = row.headroom.spare_smem_bytes {
        let launch_more = Launch {
            dynamic_smem_bytes: bytes_u32(row.dynamic_smem_bytes + spare + 1),
            ..*launch
        };
        let opted_in = KernelFacts {
            max_dynamic_smem_bytes: None,
            ..*kernel
        };
        let change = format!(
            "more than {} added per block (the next cliff up; up to {} is free)",
            format_bytes(spare),
            format_bytes(spare)
        );
        knobs.push(effect(arch, &opted_in, &launch_more, change, None));
    }
    knobs
}

/// Carveout: each configuration the arch offers, by the smallest percent that selects it;
/// neighbouring configurations with the same answer are one line. The smallest carveout that
/// keeps the blocks leaves the most L1 cache, and is marked.
fn carveout_knobs(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    answer: &calc::Occupancy,
) -> Vec<KnobEffect> {
    let mut knobs: Vec<KnobEffect> = Vec::new();
    let mut previous: Option<(u8, u32, u32)> = None; // (first percent, first config, blocks)
    for (percent, config) in carveout_configs(arch) {
        let changed = Launch {
            carveout: Carveout::Percent(percent),
            ..*launch
        };
        let blocks = calc::blocks_per_sm(arch, kernel, &changed);
        let (first_percent, first_config) = match previous {
            Some((first_percent, first_config, previous_blocks)) if previous_blocks == blocks => {
                knobs.pop();
                (first_percent, first_config)
            }
            _ => (percent, config),
        };
        previous = Some((first_percent, first_config, blocks));
        let range = if first_percent == percent {
            format!(
                "carveout = {percent}% ({} shared memory per SM, the rest L1)",
                format_bytes(u64::from(config))
            )
        } else {
            format!(
                "carveout = {first_percent}%..={percent}% ({}..={} shared memory per SM, the rest L1)",
                format_bytes(u64::from(first_config)),
                format_bytes(u64::from(config))
            )
        };
        let first_launch = Launch {
            carveout: Carveout::Percent(first_percent),
            ..*launch
        };
        knobs.push(effect(arch, kernel, &first_launch, range, None));
    }
    if answer.blocks_per_sm > 0 {
        if let Some(smallest) = knobs
            .iter_mut()
            .find(|knob| knob.blocks_per_sm >= answer.blocks_per_sm)
        {
            smallest.caveat = Some(format!(
                "the smallest carveout keeping {} blocks/SM, leaving the most L1",
                answer.blocks_per_sm
            ));
        }
    }
    knobs
}

/// Each shared memory configuration of the arch with the smallest carveout percent selecting it.
fn carveout_configs(arch: &ArchFacts) -> Vec<(u8, u32)> {
    arch.smem_configs_per_sm
        .iter()
        .filter_map(|&config| {
            let percent = (u64::from(config) * 100).div_ceil(u64::from(arch.smem_per_sm.max(1)));
            u8::try_from(percent.min(100))
                .ok()
                .map(|percent| (percent, config))
        })
        .collect()
}

/// Removes `remove` bytes, from dynamic shared memory first.
fn take_smem(static_bytes: u64, dynamic_bytes: u64, remove: u64) -> (u64, u64) {
    let from_dynamic = remove.min(dynamic_bytes);
    (
        static_bytes.saturating_sub(remove - from_dynamic),
        dynamic_bytes - from_dynamic,
    )
}

fn resource_limits(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    answer: &calc::Occupancy,
) -> Vec<ResourceLimit> {
    let limits = answer.block_limits;
    let warps = calc::warps_per_block(arch, launch.block_threads);
    let per_warp = calc::registers_per_warp(arch, kernel.registers_per_thread);
    vec![
        ResourceLimit {
            limiter: Limiter::Warps,
            blocks_per_sm: Some(limits.warps),
            detail: format!("{} threads = {warps} warps per block; {} warp slots per SM", launch.block_threads, arch.max_warps_per_sm),
        },
        ResourceLimit {
            limiter: Limiter::Blocks,
            blocks_per_sm: Some(limits.blocks),
            detail: format!("{} block slots per SM", arch.max_blocks_per_sm),
        },
        ResourceLimit {
            limiter: Limiter::Registers,
            blocks_per_sm: limits.registers,
            detail: format!(
                "{} registers/thread → {per_warp} per warp (units of {}) → {} per block; {} per SM in {} sub-partitions",
                kernel.registers_per_thread,
                arch.reg_alloc_unit_per_warp,
                answer.allocated_registers_per_block,
                arch.regs_per_sm,
                arch.sub_partitions
            ),
        },
        ResourceLimit {
            limiter: Limiter::SharedMemory,
            blocks_per_sm: limits.shared_memory,
            detail: format!(
                "{} static + {} dynamic + {} reserved → {} per block (units of {} B); {} configured per SM, {} per block allowed",
                format_bytes(u64::from(kernel.static_smem_bytes)),
                format_bytes(u64::from(launch.dynamic_smem_bytes)),
                format_bytes(u64::from(arch.reserved_smem_per_block)),
                format_bytes(answer.allocated_smem_per_block),
                arch.smem_alloc_unit,
                format_bytes(u64::from(answer.smem_config_per_sm)),
                format_bytes(answer.smem_limit_per_block)
            ),
        },
        ResourceLimit {
            limiter: Limiter::Barriers,
            blocks_per_sm: limits.barriers,
            detail: if arch.barrier_limit_enforced {
                format!("{} barrier(s) per block; {} per SM", kernel.barriers, arch.barriers_per_sm)
            } else {
                format!("not limited before 9.0 ({} barrier(s) per block)", kernel.barriers)
            },
        },
        ResourceLimit {
            limiter: Limiter::LaunchBounds,
            blocks_per_sm: limits.launch_bounds,
            detail: match kernel.max_threads_per_block {
                Some(max) => format!("compiled for at most {max} threads per block"),
                None => "no __launch_bounds__ maximum".to_string(),
            },
        },
    ]
}

/// Whether the occupancy is likely a problem, from computed figures.
fn assess(arch: &ArchFacts, row: &KernelRow, answer: &calc::Occupancy) -> Vec<String> {
    let mut lines = Vec::new();
    if answer.blocks_per_sm == 0 {
        lines.push(format!(
            "The launch cannot start on {}: {}. This is a bug, not a performance question.",
            arch.name,
            answer
                .reason
                .clone()
                .unwrap_or_else(|| "no block fits".to_string())
        ));
        return lines;
    }
    let schedulers = arch.sub_partitions.max(1);
    let warps_per_scheduler = f64::from(answer.warps_per_sm) / f64::from(schedulers);
    lines.push(format!(
        "{} resident warps per SM = {:.1} per scheduler ({} schedulers). A scheduler issues one instruction per cycle from any ready warp, so what matters is whether enough independent instructions are in flight, from more warps (occupancy) or from more independent instructions per warp (ILP).",
        answer.warps_per_sm, warps_per_scheduler, schedulers
    ));
    if answer.occupancy >= 0.5 {
        lines.push(format!(
            "At {} occupancy latency hiding is rarely the bottleneck; raising it further seldom pays. Look at memory access patterns and instruction mix instead.",
            format_occupancy(answer.occupancy)
        ));
    } else if warps_per_scheduler >= 4.0 {
        lines.push(format!(
            "{} is fine when each thread has independent work (unrolled loops, several loads in flight, register tiling): Volkov showed GEMM and FFT reaching peak at 10-25% occupancy that way (\"Better Performance at Lower Occupancy\", GTC 2010). With {:.0} warps per scheduler, arithmetic latency (about 4 cycles) is covered even with dependent instructions.",
            format_occupancy(answer.occupancy), warps_per_scheduler
        ));
        lines.push(format!(
            "For a memory-bound kernel what counts is bytes in flight per SM (Little's law): {} resident threads with one 4-byte load in flight each keep {} in flight; every further independent load per thread, or a 16-byte vector load, multiplies that. Bandwidth-bound kernels reach DRAM bandwidth at modest occupancy when each thread issues several independent loads; with one dependent load at a time (a gather, a pointer chase) bandwidth scales with resident warps and this occupancy is a problem.",
            answer.threads_per_sm,
            format_bytes(u64::from(answer.threads_per_sm) * 4)
        ));
    } else {
        lines.push(format!(
            "{:.1} warps per scheduler is low: with dependent instructions (about 4 cycles each) and memory latency of hundreds of cycles, the scheduler idles unless every thread has several independent instructions or loads in flight. Unless the kernel is deliberately register-tiled (the Volkov regime), raise occupancy with the knobs above.",
            warps_per_scheduler
        ));
    }
    if row.spill_bytes() > 0 {
        lines.push(format!(
            "ptxas spilled {} B stored / {} B loaded per thread: spills go to local memory (device memory behind L1). If the register cap comes from __launch_bounds__ min blocks or max_registers, the occupancy it buys is often worth less than the spill traffic; measure both.",
            row.spill_store_bytes, row.spill_load_bytes
        ));
    }
    if !row.block.is_multiple_of(arch.warp_size) {
        lines.push(format!(
            "The block of {} threads is not a multiple of {}: the last warp of each block runs partly empty but still takes a full warp's registers and slot.",
            row.block, arch.warp_size
        ));
    }
    lines
}

/// Renders an explanation as text for a terminal.
pub fn render_explanation_text(explanation: &Explanation) -> String {
    let mut out = String::new();
    write_heading(&mut out, explanation);
    write_bounds(&mut out, explanation);
    write_what_binds(&mut out, explanation);
    write_knobs(&mut out, explanation);
    out.push_str("Is this occupancy a problem?\n");
    for line in &explanation.assessment {
        let _ = writeln!(out, "  - {line}");
    }
    out.push('\n');
    write_tuning(&mut out, explanation);
    write_machine_code(&mut out, explanation);
    for curve in &explanation.curves {
        out.push_str(&render_curve_text(curve));
        out.push('\n');
    }
    out
}

/// The build's choice for a bound written `"auto"`: every bound it tried on this arch, the
/// measurements and the objective's verdicts, and why it chose what it chose.
fn write_tuning(out: &mut String, explanation: &Explanation) {
    let row = &explanation.row;
    let Some(tuning) = &row.tuning else {
        return;
    };
    let _ = writeln!(
        out,
        "Bounds chosen by the build (`{} = \"auto\"`): {}",
        tuning.knob, tuning.chosen
    );
    out.push_str(&crate::tune::render_ladder(
        row.readable_name(),
        &row.arch,
        row.block,
        tuning,
    ));
    out.push('\n');
}

/// What ptxas did with the kernel's minimum blocks per SM and register cap, when it did not
/// apply them as written: each finding with its notes and help, as the check reported it.
fn write_bounds(out: &mut String, explanation: &Explanation) {
    if explanation.bounds.is_empty() {
        return;
    }
    out.push_str("What ptxas did with the kernel's launch bounds:\n");
    for finding in &explanation.bounds {
        let _ = writeln!(
            out,
            "  - {}[{}]: {}",
            finding.level.as_str(),
            finding.lint.as_str(),
            finding.message
        );
        for note in &finding.notes {
            let _ = writeln!(out, "      note: {note}");
        }
        if let Some(help) = &finding.help {
            let _ = writeln!(out, "      help: {help}");
        }
    }
    out.push('\n');
}

/// What the SASS says, when the build read it: spill cost per loop iteration, callees.
fn write_machine_code(out: &mut String, explanation: &Explanation) {
    let machine_code = super::sass::explain_lines(&explanation.row);
    if machine_code.is_empty() {
        return;
    }
    out.push_str("What the machine code (SASS) says:\n");
    for line in &machine_code {
        let _ = writeln!(out, "  - {line}");
    }
    out.push('\n');
}

/// The kernel, where it was declared and defined, its resources and its occupancy.
fn write_heading(out: &mut String, explanation: &Explanation) {
    let row = &explanation.row;
    let arch = explanation.arch;
    let _ = writeln!(
        out,
        "{} on {} ({} {}), block {}",
        row.display_name(),
        arch.name,
        arch.family,
        arch.compute_capability(),
        row.block
    );
    let mut places = Vec::new();
    if let Some(declaration) = &row.declaration {
        places.push(format!("declared at {declaration}"));
    }
    if let Some(source) = &row.source {
        places.push(format!("defined in {source}"));
    }
    match (row.max_threads_per_block, row.min_blocks_per_sm) {
        (Some(max_threads), Some(min_blocks)) => places.push(format!(
            "compiled with __launch_bounds__({max_threads}, {min_blocks})"
        )),
        (Some(max_threads), None) => {
            places.push(format!("compiled with __launch_bounds__({max_threads})"));
        }
        _ => {}
    }
    if !places.is_empty() {
        let _ = writeln!(out, "  {}", places.join("; "));
    }
    let _ = writeln!(
        out,
        "  {} registers/thread, {} static + {} dynamic shared memory, {} barrier(s), {} B stack, spills {} B stored / {} B loaded",
        row.registers,
        format_bytes(row.static_smem_bytes),
        format_bytes(row.dynamic_smem_bytes),
        row.barriers,
        row.stack_frame_bytes,
        row.spill_store_bytes,
        row.spill_load_bytes
    );
    let _ = writeln!(
        out,
        "  → {} blocks/SM × {} warps = {} of {} warps: {} occupancy\n",
        row.blocks_per_sm,
        calc::warps_per_block(arch, row.block),
        row.warps_per_sm,
        arch.max_warps_per_sm,
        format_occupancy(row.occupancy)
    );
}

/// Each resource's limit, the binding ones marked, and what the binding ones cost.
fn write_what_binds(out: &mut String, explanation: &Explanation) {
    let row = &explanation.row;
    let arch = explanation.arch;
    out.push_str("What binds\n");
    for limit in &explanation.limits {
        let blocks = limit
            .blocks_per_sm
            .map_or("-".to_string(), |blocks| blocks.to_string());
        let mark = if row.limiters.iter().any(|name| name == limit.limiter.name()) {
            "◀ binds"
        } else {
            ""
        };
        let line = format!(
            "  {:<14} {:>3} blocks  {}  {mark}",
            limit.limiter.name(),
            blocks,
            limit.detail
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    if let Some((blocks, names)) = &explanation.next_limit {
        if row.blocks_per_sm > 0 && *blocks > row.blocks_per_sm {
            let gain_occupancy = f64::from(*blocks * calc::warps_per_block(arch, row.block))
                / f64::from(arch.max_warps_per_sm);
            let _ = writeln!(
                out,
                "  {} costs {} block(s): without it {} would allow {} blocks ({}).",
                row.limiters.join(" + "),
                blocks - row.blocks_per_sm,
                names.join(" + "),
                blocks,
                format_occupancy(gain_occupancy.min(1.0))
            );
        }
    }
    out.push('\n');
}

/// What each knob would change, one section per knob.
fn write_knobs(out: &mut String, explanation: &Explanation) {
    let sections: [(&str, &Vec<KnobEffect>); 4] = [
        (
            "Registers (__launch_bounds__ min blocks, max_registers)",
            &explanation.register_knobs,
        ),
        ("Block size", &explanation.block_knobs),
        ("Shared memory", &explanation.smem_knobs),
        ("Carveout", &explanation.carveout_knobs),
    ];
    out.push_str("What each knob would change (computed)\n");
    for (title, knobs) in sections {
        let _ = writeln!(out, "  {title}:");
        if knobs.is_empty() {
            let reason = match title {
                "Carveout" => format!("{} has a fixed shared memory size", explanation.arch.name),
                "Shared memory" => "shared memory does not bind in either direction".to_string(),
                _ => "no change of this knob gains a block; another resource binds".to_string(),
            };
            let _ = writeln!(out, "    - {reason}");
        }
        for knob in knobs {
            let limiters = if knob.limiters.is_empty() {
                "-".to_string()
            } else {
                knob.limiters.join(" + ")
            };
            let _ = write!(
                out,
                "    - {}: {} blocks/SM, {} ({limiters})",
                knob.change,
                knob.blocks_per_sm,
                format_occupancy(knob.occupancy),
            );
            if let Some(caveat) = &knob.caveat {
                let _ = write!(out, "; {caveat}");
            }
            out.push('\n');
        }
    }
    out.push('\n');
}

/// One curve as text: one line per run of equal blocks per SM, with a bar, the current run
/// marked.
pub(crate) fn render_curve_text(curve: &Curve) -> String {
    let mut out = format!("Occupancy vs {}\n", curve.axis.title());
    let steps = curve.steps();
    let width = steps
        .iter()
        .map(|step| {
            range_text(curve.axis, step.x_first, step.x_last)
                .chars()
                .count()
        })
        .max()
        .unwrap_or(0);
    for step in &steps {
        let range = range_text(curve.axis, step.x_first, step.x_last);
        let filled = (step.occupancy * 20.0).round() as usize;
        let bar = format!(
            "{}{}",
            "█".repeat(filled),
            "·".repeat(20usize.saturating_sub(filled))
        );
        let here = step.x_first <= curve.current_x && curve.current_x <= step.x_last;
        let _ = writeln!(
            out,
            "  {range:<width$}  {bar} {:>6}  {:>2} blocks  {}{}",
            format_occupancy(step.occupancy),
            step.blocks_per_sm,
            if step.limiters.is_empty() {
                "-".to_string()
            } else {
                step.limiters.join("+")
            },
            if here {
                format!("   ◀ now ({})", format_x(curve.axis, curve.current_x))
            } else {
                String::new()
            }
        );
    }
    out
}

fn range_text(axis: Axis, first: u64, last: u64) -> String {
    let format = |x: u64| match axis {
        Axis::SharedMemory => format_bytes(x),
        _ => x.to_string(),
    };
    if first == last {
        format(first)
    } else {
        format!("{}..={}", format(first), format(last))
    }
}
