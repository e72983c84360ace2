//! `grid_exceeds_resident`: a kernel whose blocks must all be resident at once (`launch =
//! "cooperative"` or `"persistent"`) launched with a grid the host sizes from an assumption: the
//! blocks per SM it takes for granted (`grid_blocks_per_sm`, checked on every target
//! architecture) or a fixed number of blocks (`grid_blocks`, checked on every GPU of `gpus`, at
//! its SM count). The blocks resident at once are the calculator's blocks per SM at the declared
//! launch times the GPU's SMs: what `cudaOccupancyMaxActiveBlocksPerMultiprocessor` x
//! `multiProcessorCount` gives, and the most a cooperative launch accepts, on an otherwise idle
//! GPU.

use super::finding::{occupancy_note, ptxas_note, CompiledOnArch, Finding, LaunchOrigin};
use super::id::LintId;
use crate::arch::{preset, GpuPreset};
use crate::spec::KernelSpec;

/// `grid_exceeds_resident`, on every target architecture and every GPU of `gpus`.
pub(super) fn grid_exceeds_resident(
    spec: &KernelSpec,
    on_archs: &[CompiledOnArch<'_>],
    _origin: LaunchOrigin,
    findings: &mut Vec<Finding>,
) {
    let Some(launch) = spec.launch.as_deref() else {
        return;
    };
    if let Some(assumed) = spec.grid_blocks_per_sm {
        let fewest = on_archs
            .iter()
            .map(|on| on.occupancy.blocks_per_sm)
            .min()
            .unwrap_or(0);
        for on in on_archs {
            if on.occupancy.blocks_per_sm < assumed {
                findings.push(per_sm(launch, assumed, fewest, on));
            }
        }
    }
    let gpus: Vec<&'static GpuPreset> = spec
        .gpus
        .iter()
        .flatten()
        .filter_map(|name| preset(name).ok())
        .collect();
    let on_gpu = |gpu: &GpuPreset| {
        let facts = gpu.arch_facts();
        on_archs
            .iter()
            .find(|on| (on.arch.major, on.arch.minor) == (facts.major, facts.minor))
    };
    let smallest = gpus
        .iter()
        .filter_map(|gpu| Some(resident(on_gpu(gpu)?, gpu)))
        .min()
        .unwrap_or(0);
    // Only a fixed grid is checked per GPU: a GPU of an arch not compiled leaves that check
    // undone (an assumed blocks per SM is checked on the compiled archs, whatever the GPU).
    for gpu in gpus {
        match (on_gpu(gpu), spec.grid_blocks) {
            (None, Some(_)) => findings.push(not_compiled(on_archs, gpu)),
            (Some(on), Some(grid)) if u64::from(grid) > resident(on, gpu) => {
                findings.push(on_the_gpu(launch, grid, smallest, on, gpu));
            }
            _ => {}
        }
    }
}

/// Blocks resident at once on `gpu`: blocks per SM on its architecture x its SMs.
fn resident(on: &CompiledOnArch<'_>, gpu: &GpuPreset) -> u64 {
    u64::from(on.occupancy.blocks_per_sm) * u64::from(gpu.sm_count)
}

/// The kernel's name, as ptxas reported it.
fn kernel<'a>(on: &CompiledOnArch<'a>) -> &'a str {
    &on.record.name
}

/// What a grid larger than the resident blocks does, for the launch declared.
fn consequence(launch: &str) -> String {
    match launch {
        "cooperative" => "a cooperative launch of more blocks than are resident fails with `cudaErrorCooperativeLaunchTooLarge`".to_string(),
        _ => "the blocks beyond the resident ones wait for an SM: a persistent kernel whose blocks wait on each other deadlocks, one that loops over a work queue runs a second wave".to_string(),
    }
}

/// The help of both findings: size the grid from the facts, or assume what fits.
fn size_from_facts(lower: &str) -> String {
    format!(
        "size the grid from the compiled facts and the device (`persistent_grid_on(&ctx)` on the kernel's const, or `occupancy::facts::<kernel>::persistent_grid(arch, sm_count)` from `occupancy_facts.h`), {lower}, or make more blocks fit (fewer registers or less shared memory per block)"
    )
}

/// The finding of an assumed blocks per SM above what one SM of `on`'s architecture holds.
fn per_sm(launch: &str, assumed: u32, fewest: u32, on: &CompiledOnArch<'_>) -> Finding {
    let arch = on.arch.name;
    let resident = on.occupancy.blocks_per_sm;
    let lower = if fewest > 0 {
        format!("lower `grid_blocks_per_sm` to {fewest}, which fits on every target arch")
    } else {
        "no block fits on some target arch (see `unlaunchable`)".to_string()
    };
    Finding {
        arch: Some(arch.to_string()),
        message: format!(
            "kernel `{}` is launched with {assumed} blocks per SM (`launch = \"{launch}\"`, `grid_blocks_per_sm = {assumed}`), but only {resident} blocks of {} threads are resident per SM on {arch}",
            kernel(on),
            on.occupancy.block_threads
        ),
        notes: vec![occupancy_note(on), ptxas_note(on.record), consequence(launch)],
        help: Some(size_from_facts(&lower)),
        ..Finding::new(LintId::GridExceedsResident)
    }
}

/// The finding of a fixed grid above the blocks resident on `gpu`.
fn on_the_gpu(
    launch: &str,
    grid: u32,
    smallest: u64,
    on: &CompiledOnArch<'_>,
    gpu: &GpuPreset,
) -> Finding {
    let arch = on.arch.name;
    let per_sm = on.occupancy.blocks_per_sm;
    let lower = if smallest > 0 {
        format!("lower `grid_blocks` to {smallest}, which fits every GPU of `gpus`")
    } else {
        "no block fits on some GPU of `gpus` (see `unlaunchable`)".to_string()
    };
    Finding {
        arch: Some(arch.to_string()),
        message: format!(
            "kernel `{}` is launched with {grid} blocks (`launch = \"{launch}\"`, `grid_blocks = {grid}`), but at most {} are resident on the {} (`{}`: {} SMs x {per_sm} blocks per SM on {arch})",
            kernel(on),
            resident(on, gpu),
            gpu.product,
            gpu.name,
            gpu.sm_count
        ),
        notes: vec![
            occupancy_note(on),
            format!("the {} has {} SMs: {}", gpu.product, gpu.sm_count, gpu.source),
            consequence(launch),
        ],
        help: Some(size_from_facts(&lower)),
        ..Finding::new(LintId::GridExceedsResident)
    }
}

/// The finding of a GPU of `gpus` whose architecture the kernel was not compiled for, where a
/// fixed grid is to be checked: its numbers there come from code the build never saw.
fn not_compiled(on_archs: &[CompiledOnArch<'_>], gpu: &GpuPreset) -> Finding {
    let name = on_archs.first().map_or("the kernel", |on| kernel(on));
    let compiled: Vec<&str> = on_archs.iter().map(|on| on.arch.name).collect();
    Finding {
        arch: Some(gpu.arch.to_string()),
        message: format!(
            "kernel `{name}`: its grid on the {} (`{}`, {}) cannot be checked: the build compiled it for {} only",
            gpu.product,
            gpu.name,
            gpu.arch,
            if compiled.is_empty() { "no architecture".to_string() } else { compiled.join(", ") }
        ),
        notes: vec![
            "a GPU runs SASS built for its own architecture (or an earlier minor of its major version), else code the driver compiles from PTX at load time, whose registers the build never saw".to_string(),
        ],
        help: Some(format!(
            "add `{}` to the kernel's `archs` (or the crate's), or remove `{}` from `gpus`",
            gpu.arch, gpu.name
        )),
        ..Finding::new(LintId::GridExceedsResident)
    }
}

#[cfg(test)]
mod tests;
