//! The auto-bounds stage: a declaration whose `min_blocks_per_sm` or `max_registers` is
//! `"auto"` gets its bound chosen by the build, per target arch
//! (`docs/declaring-kernels.md#choosing-bounds-automatically`).
//!
//! After the first compile, [`tune_declared`] tunes each such kernel ([`engine`]: the same PTX
//! assembled at every bound that changes its resident blocks, each compile's SASS read, the
//! objective of `occupancy_core::tune` applied). The choices ([`HeaderChoices`]) go into
//! `occupancy_bounds.h` as `OCCUPANCY_BOUNDS_<kernel>` under `__CUDA_ARCH__` conditions, and
//! when they differ from the header the compile read, the pipeline compiles again, so the
//! kernel that ships is the kernel chosen. The choices are remembered in
//! `OUT_DIR/occupancy/auto_bounds.json`, so the next build's first compile already has them:
//! with nothing changed it compiles once (a cache hit) and assembles nothing (the memo).
//! `cargo occupancy tune` runs the same [`engine`] on one kernel.

mod assemble;
pub(crate) mod engine;
mod memo;

use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::arch;
use occupancy_core::spec::Tunable;
use occupancy_core::tune::{Bound, Knob, Tuning};

pub use engine::{Engine, TuneRequest, TunedGroup, TunedKernel};

pub(crate) use crate::header_choices::{HeaderChoices, KernelChoices};

use crate::compile::CompiledSource;
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::toolchain::Toolchain;
use crate::Error;

/// The `"auto"` kernels this product tuned, by symbol.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tuned {
    pub(crate) kernels: BTreeMap<String, TunedKernel>,
}

impl Tuned {
    /// The bound chosen for `kernel` on `arch`.
    pub(crate) fn chosen(&self, kernel: &str, arch: &str) -> Option<Bound> {
        self.tuning(kernel, arch).map(|tuning| tuning.chosen)
    }

    /// The choice for `kernel` on `arch`, as its report row shows it.
    pub(crate) fn tuning(&self, kernel: &str, arch: &str) -> Option<&Tuning> {
        self.kernels.get(kernel)?.tuning(arch)
    }

    /// `previous` with this product's choices in place of its kernels' (other products'
    /// kernels keep theirs).
    pub(crate) fn header_choices(&self, previous: &HeaderChoices) -> HeaderChoices {
        let mut choices = previous.clone();
        for (kernel, tuned) in &self.kernels {
            choices.insert(
                kernel.clone(),
                KernelChoices {
                    knob: tuned.knob,
                    threads: tuned.block_threads,
                    by_cuda_arch: tuned
                        .groups
                        .iter()
                        .map(|group| (group.cuda_arch, group.chosen))
                        .collect(),
                },
            );
        }
        choices
    }
}

/// The key a declaration leaves to the build, if any.
pub(crate) fn knob_of(declared: &Declared) -> Option<Knob> {
    let spec = &declared.kernel.spec;
    match (spec.min_blocks_per_sm, spec.max_registers) {
        (Some(Tunable::Auto), _) => Some(Knob::MinBlocksPerSm),
        (_, Some(Tunable::Auto)) => Some(Knob::MaxRegisters),
        _ => None,
    }
}

/// Whether any declaration leaves a bound to the build.
pub(crate) fn any_auto(declarations: &Declarations) -> bool {
    declarations
        .kernels
        .iter()
        .any(|declared| knob_of(declared).is_some())
}

/// Tunes every `"auto"` declaration whose kernel one of `compiled` defines.
pub(crate) fn tune_declared(
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    declarations: &Declarations,
) -> Result<Tuned, Error> {
    let mut tuned = Tuned::default();
    let wanted: Vec<(&Declared, Knob)> = declarations
        .kernels
        .iter()
        .filter_map(|declared| Some((declared, knob_of(declared)?)))
        .collect();
    if wanted.is_empty() {
        return Ok(tuned);
    }
    let tools = crate::sass_stage::SassTools::locate(context, toolchain);
    for (declared, knob) in wanted {
        let kernel = &declared.kernel.kernel_name;
        let Some(source) = compiled.iter().find(|source| defines(source, kernel)) else {
            continue; // `missing_kernel` says so, at the declaration
        };
        let nvdisasm = tools.nvdisasm.as_deref().ok_or_else(|| Error::AutoBounds {
            kernel: kernel.clone(),
            knob: knob.key(),
            message: "nvdisasm, which reads each candidate's loops, was not found beside nvcc or on PATH: install it (the CUDA toolkit's nvdisasm), point OCCUPANCY_NVDISASM at it, or write a number".to_string(),
        })?;
        let engine = engine_for(context, toolchain, nvdisasm);
        let request = request_of(declared, knob);
        tuned
            .kernels
            .insert(kernel.clone(), engine.tune(source, &request)?);
    }
    Ok(tuned)
}

/// The engine of a build: its scratch directory and memos under `OUT_DIR`, its jobs.
pub(crate) fn engine_for<'a>(
    context: &'a Context,
    toolchain: &'a Toolchain,
    nvdisasm: &'a std::path::Path,
) -> Engine<'a> {
    let occupancy = context.out_dir.join("occupancy");
    Engine {
        toolchain,
        nvdisasm,
        user_args: &context.nvcc_args,
        work: occupancy.join("auto-work"),
        memo_root: Some(occupancy.join("cache").join("auto")),
        max_jobs: context.max_jobs,
    }
}

/// What to tune for a declaration.
fn request_of(declared: &Declared, knob: Knob) -> TuneRequest {
    let spec = &declared.kernel.spec;
    TuneRequest {
        kernel: declared.kernel.kernel_name.clone(),
        knob,
        block_threads: spec.block.threads(),
        dynamic_smem_bytes: spec.dynamic_smem_bytes,
        accepted_spill_bytes: u64::from(spec.spill_bytes_allowed()),
        archs: spec.archs.as_ref().map(|archs| {
            archs
                .iter()
                .filter_map(|name| arch::lookup(name).ok().map(|facts| facts.name.to_string()))
                .collect::<BTreeSet<String>>()
        }),
    }
}

/// The compiled source that defines `kernel`; else why not, naming the kernels there are.
pub(crate) fn source_defining<'a>(
    compiled: &'a [CompiledSource],
    kernel: &str,
) -> Result<&'a CompiledSource, String> {
    if let Some(source) = compiled.iter().find(|source| defines(source, kernel)) {
        return Ok(source);
    }
    let mut names: Vec<String> = compiled
        .iter()
        .flat_map(|source| &source.programs)
        .filter_map(|program| std::fs::read_to_string(&program.ptx).ok())
        .flat_map(|text| {
            occupancy_core::ptxas::parse_ptx_directives(&text)
                .into_iter()
                .map(|entry| entry.name)
                .collect::<Vec<_>>()
        })
        .collect();
    names.sort();
    names.dedup();
    Err(format!(
        "no compiled source defines it; the kernels are: {}",
        match names.is_empty() {
            true => "none".to_string(),
            false => names.join(", "),
        }
    ))
}

/// The threads per block of `kernel`'s `.maxntid` (or `.reqntid`) in `source`'s first PTX.
pub(crate) fn compiled_block(source: &CompiledSource, kernel: &str) -> Option<u32> {
    let text = std::fs::read_to_string(&source.programs.first()?.ptx).ok()?;
    let entry = occupancy_core::ptxas::parse_ptx_directives(&text)
        .into_iter()
        .find(|entry| entry.name == kernel)?;
    let dims = entry.maxntid.or(entry.reqntid)?;
    Some(dims.iter().map(|&dim| dim.max(1)).product())
}

/// Whether a program of `source` defines `kernel`.
fn defines(source: &CompiledSource, kernel: &str) -> bool {
    let entry = format!(".entry {kernel}(");
    source.programs.iter().any(|program| {
        std::fs::read_to_string(&program.ptx).is_ok_and(|text| text.contains(&entry))
    })
}
