//! The auto-bounds stage: a declaration whose `min_blocks_per_sm` or `max_registers` is
//! `"auto"` gets its bound chosen by the build, per target arch
//! (`docs/declaring-kernels.md#choosing-bounds-automatically`).
//!
//! A [`Session`] tunes each such kernel on the build's compile ([`engine`]: its PTX without
//! bounds assembled at every bound that changes its resident blocks, each compile's SASS read,
//! the objective of `occupancy_core::tune` applied). The choices go into `occupancy_bounds.h`
//! as `OCCUPANCY_BOUNDS_<kernel>` under `__CUDA_ARCH__` conditions, and when they differ from
//! the header the compile read, the pipeline compiles again, so the kernel that ships is the
//! kernel chosen. nvcc's front end sees the bound too and may make other PTX than the one
//! measured: [`Session::verify`] reads the new compile's ptxas report, and a bound whose compile
//! spills beyond what the declaration accepts is refused and the choice made again.
//!
//! What was chosen, from which PTX, and what shipped is remembered in
//! `OUT_DIR/occupancy/auto_bounds.json` ([`Memory`]): the next build's header has the choices
//! already, and when the kernel's PTX is what shipped last time nothing is tuned or compiled
//! again. When the kernel's source changed under a header that gives it a bound, the tuning
//! needs the kernel without one: one compile of that source with a header without the choices
//! (a probe, cached like any compile). `cargo occupancy tune` runs the same [`engine`].

mod assemble;
pub(crate) mod engine;
pub(crate) mod front_end;
mod memo;

use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::arch;
use occupancy_core::spec::Tunable;
use occupancy_core::tune::{Bound, Knob, Tuning};
use serde::{Deserialize, Serialize};

pub use engine::{Engine, Refusals, TuneRequest, TunedGroup, TunedKernel};

pub(crate) use crate::header_choices::{HeaderChoices, KernelChoices};

use crate::compile::{self, CompiledSource, LineTables, Product};
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::toolchain::Toolchain;
use crate::Error;

/// What a build remembers of one `"auto"` kernel for the next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Remembered {
    request: TuneRequest,
    tuned: TunedKernel,
    /// Per arch, the digest of the kernel's PTX (cut to it, without bounds) it was tuned on.
    tuned_from: BTreeMap<String, String>,
    /// Per arch, the same digest of the compile that shipped with the choice.
    shipped: BTreeMap<String, String>,
    /// Bounds a compile with them refused (per arch, its spill bytes).
    refused: Refusals,
}

/// Every `"auto"` kernel's [`Remembered`], in `OUT_DIR/occupancy/auto_bounds.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Memory {
    kernels: BTreeMap<String, Remembered>,
}

impl Memory {
    fn path(context: &Context) -> std::path::PathBuf {
        context.out_dir.join("occupancy").join("auto_bounds.json")
    }

    /// What the last build wrote (nothing when there is none, or the file is not ours alone:
    /// then the first compile is without bounds and the tuning decides).
    pub(crate) fn load(context: &Context) -> Memory {
        let path = Self::path(context);
        let trusted = std::fs::symlink_metadata(&path)
            .is_ok_and(|metadata| crate::trust::distrust(&metadata).is_none());
        trusted
            .then(|| std::fs::read(&path).ok())
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save(&self, context: &Context) -> Result<(), Error> {
        let path = Self::path(context);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|error| Error::Io {
                path: parent.to_path_buf(),
                error,
            })?;
        }
        let text = serde_json::to_vec_pretty(self).map_err(|error| Error::Io {
            path: path.clone(),
            error: std::io::Error::other(error),
        })?;
        crate::fsutil::write_atomic(&path, &text)
    }

    /// The choices as the header writes them.
    pub(crate) fn header_choices(&self) -> HeaderChoices {
        let mut choices = HeaderChoices::default();
        for (kernel, remembered) in &self.kernels {
            choices.insert(kernel.clone(), kernel_choices(&remembered.tuned));
        }
        choices
    }
}

/// A tuned kernel's choices as the header writes them.
fn kernel_choices(tuned: &TunedKernel) -> KernelChoices {
    KernelChoices {
        knob: tuned.knob,
        threads: tuned.block_threads,
        by_cuda_arch: (tuned.groups.iter())
            .map(|group| (group.cuda_arch, group.chosen))
            .collect(),
    }
}

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
            choices.insert(kernel.clone(), kernel_choices(tuned));
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

/// How the build compiles: what a probe compile repeats.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compiling {
    pub(crate) product: Product,
    pub(crate) line_tables: LineTables,
}

/// One product's tuning: what it remembers, and the compile each kernel was tuned on.
#[derive(Debug)]
pub(crate) struct Session<'a> {
    context: &'a Context,
    toolchain: &'a Toolchain,
    declarations: &'a Declarations,
    compiling: Compiling,
    memory: Memory,
    /// Per kernel, its request and the compile its candidates came from.
    tuned_on: BTreeMap<String, (TuneRequest, CompiledSource)>,
}

impl<'a> Session<'a> {
    pub(crate) fn new(
        context: &'a Context,
        toolchain: &'a Toolchain,
        declarations: &'a Declarations,
        compiling: Compiling,
        memory: Memory,
    ) -> Session<'a> {
        Session {
            context,
            toolchain,
            declarations,
            compiling,
            memory,
            tuned_on: BTreeMap::new(),
        }
    }

    /// Tunes every `"auto"` declaration whose kernel one of `compiled` defines; `compiled` was
    /// made with the remembered choices in the header. A kernel whose PTX is the one that
    /// shipped with its remembered choice keeps it, untuned.
    pub(crate) fn tune(&mut self, compiled: &[CompiledSource]) -> Result<Tuned, Error> {
        let mut tuned = Tuned::default();
        let header = self.memory.header_choices();
        for declared in &self.declarations.kernels {
            let Some(knob) = knob_of(declared) else {
                continue;
            };
            let kernel = &declared.kernel.kernel_name;
            let Some(source) = compiled.iter().find(|source| defines(source, kernel)) else {
                continue; // `missing_kernel` says so, at the declaration
            };
            let request = request_of(declared, knob);
            let shipped_now = Engine::kernel_digests(source, &request);
            if let Some(remembered) = self.memory.kernels.get(kernel).filter(|remembered| {
                remembered.request == request && remembered.shipped == shipped_now
            }) {
                tuned
                    .kernels
                    .insert(kernel.clone(), remembered.tuned.clone());
                continue;
            }
            let bounded = header.of(kernel).is_some_and(|choices| {
                choices.holds_for(knob, request.block_threads)
                    && choices
                        .by_cuda_arch
                        .values()
                        .any(|bound| *bound != Bound::None)
            });
            let tuned_on = match bounded {
                false => source.clone(),
                true => self.probe(source)?,
            };
            let tuned_from = Engine::kernel_digests(&tuned_on, &request);
            let refused = (self.memory.kernels.get(kernel))
                .filter(|remembered| remembered.tuned_from == tuned_from)
                .map(|remembered| remembered.refused.clone())
                .unwrap_or_default();
            let made = self.tune_one(&tuned_on, &request, &refused)?;
            tuned.kernels.insert(kernel.clone(), made.clone());
            self.memory.kernels.insert(
                kernel.clone(),
                Remembered {
                    request: request.clone(),
                    tuned: made,
                    tuned_from,
                    shipped: BTreeMap::new(),
                    refused,
                },
            );
            self.tuned_on.insert(kernel.clone(), (request, tuned_on));
        }
        Ok(tuned)
    }

    /// Checks `compiled`, made with `tuned`'s choices in the header, against them: a chosen
    /// bound whose compile spilled more than the declaration accepts (and than the kernel
    /// without bounds) is refused on its archs, and the kernel's choice made again (from the
    /// memo: nothing is assembled). Whether a choice changed.
    pub(crate) fn verify(
        &mut self,
        tuned: &mut Tuned,
        compiled: &[CompiledSource],
    ) -> Result<bool, Error> {
        let mut changed = false;
        for (kernel, made) in tuned.kernels.iter_mut() {
            let Some((request, tuned_on)) = self.tuned_on.get(kernel) else {
                continue; // kept from the memory: verified when it shipped
            };
            let Some(source) = compiled.iter().find(|source| defines(source, kernel)) else {
                continue;
            };
            check_shipped_facts(made, source)?;
            let broken = broken_choices(made, request, source);
            if broken.is_empty() {
                continue;
            }
            let mut refused = (self.memory.kernels.get(kernel))
                .expect("a kernel tuned in this session is remembered")
                .refused
                .clone();
            for (arch, bound, spill_bytes) in broken {
                (refused.entry(arch).or_default()).push((bound, spill_bytes));
            }
            *made = self.tune_one(tuned_on, request, &refused)?;
            let remembered = (self.memory.kernels.get_mut(kernel))
                .expect("a kernel tuned in this session is remembered");
            remembered.refused = refused;
            remembered.tuned = made.clone();
            changed = true;
        }
        Ok(changed)
    }

    /// Records what shipped (`compiled`, with `tuned`'s choices) and writes the memory.
    pub(crate) fn finish(
        mut self,
        tuned: &Tuned,
        compiled: &[CompiledSource],
    ) -> Result<(), Error> {
        for kernel in tuned.kernels.keys() {
            let Some(remembered) = self.memory.kernels.get_mut(kernel) else {
                continue;
            };
            if let Some(source) = compiled.iter().find(|source| defines(source, kernel)) {
                remembered.shipped = Engine::kernel_digests(source, &remembered.request);
            }
        }
        self.memory.save(self.context)
    }

    /// `request` tuned on `source` (the kernel without bounds), each candidate compiled from
    /// the kernel's source at its bound (a `.cu` source; a `.ptx` input ships its PTX with the
    /// bound's directives, which is what its candidates are).
    fn tune_one(
        &self,
        source: &CompiledSource,
        request: &TuneRequest,
        refused: &Refusals,
    ) -> Result<TunedKernel, Error> {
        let front_end =
            (source.kind == crate::compile::SourceKind::Cuda).then(|| front_end::SourceAtBound {
                context: self.context,
                toolchain: self.toolchain,
                compiling: self.compiling,
                source: source.source.clone(),
                kernel: request.kernel.clone(),
                knob: request.knob,
                threads: request.block_threads,
                header: front_end::Header::Declared(self.declarations),
            });
        let mut engine = self.engine()?;
        engine.front_end = front_end
            .as_ref()
            .map(|front| front as &dyn engine::FrontEnd);
        engine.tune(source, request, refused)
    }

    /// The engine, with nvdisasm (which the build then needs).
    fn engine(&self) -> Result<Engine<'a>, Error> {
        let nvdisasm = crate::sass_stage::SassTools::locate(self.context, self.toolchain)
            .nvdisasm
            .ok_or_else(|| Error::AutoBounds {
                kernel: "(every \"auto\" kernel)".to_string(),
                knob: "min_blocks_per_sm",
                message: "nvdisasm, which reads each candidate's loops, was not found beside nvcc or on PATH: install it (the CUDA toolkit's nvdisasm), point OCCUPANCY_NVDISASM at it, or write a number".to_string(),
            })?;
        Ok(engine_for(self.context, self.toolchain, nvdisasm))
    }

    /// `source` compiled again with a header that gives no `"auto"` kernel a bound (in a
    /// directory of its own, searched before `OUT_DIR`): the kernels without bounds, to tune on.
    fn probe(&self, source: &CompiledSource) -> Result<CompiledSource, Error> {
        let dir = self.context.out_dir.join("occupancy").join("probe");
        std::fs::create_dir_all(&dir).map_err(|error| Error::Io {
            path: dir.clone(),
            error,
        })?;
        crate::declarations::write_bounds_header_at(
            &dir.join("occupancy_bounds.h"),
            self.declarations,
            &HeaderChoices::default(),
        )?;
        let mut context = self.context.clone();
        context.sources = vec![(source.source.clone(), source.kind)];
        context.nvcc_args = ["-I".into(), dir.into_os_string()]
            .into_iter()
            .chain(self.context.nvcc_args.iter().cloned())
            .collect();
        let mut probed = compile::compile_all(
            &context,
            self.toolchain,
            self.compiling.product,
            self.compiling.line_tables,
        )?;
        Ok(probed.remove(0))
    }
}

/// Checks that `source`'s compile, made with `made`'s choices, is what the chosen candidates
/// measured on every arch: registers and spill bytes as ptxas reported them. Every candidate of
/// a `.cu` source is the source compiled at its bound, so they agree unless the build's compile
/// and the candidate's differ in a way the tuning does not know; then the report, `explain` and
/// the lock would describe other code than the code that ships, and the build fails.
fn check_shipped_facts(made: &TunedKernel, source: &CompiledSource) -> Result<(), Error> {
    let Ok(log) = occupancy_core::ptxas::parse_log(&source.compiler_log) else {
        return Ok(()); // no report to read: the build's own checks still run on the compile
    };
    for group in &made.groups {
        for (arch, tuning) in &group.tunings {
            let Some(record) = (log.kernels.iter())
                .find(|record| record.entry && record.name == made.kernel && record.arch == *arch)
            else {
                continue;
            };
            let Some(measured) = (tuning.candidates.iter())
                .find(|tried| tried.candidate.bound == group.chosen)
                .and_then(|tried| tried.candidate.measured.as_ref())
            else {
                continue;
            };
            let shipped = (
                record.registers.unwrap_or(0),
                record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0),
            );
            if shipped != (measured.registers, measured.spill_bytes()) {
                return Err(Error::AutoBounds {
                    kernel: made.kernel.clone(),
                    knob: made.knob.key(),
                    message: format!(
                        "the compile that ships it with {} on {arch} has {} registers and {} spill bytes, but the candidate the choice was made on measured {} and {}: the tuning and the build compiled different code (please report this)",
                        group.chosen, shipped.0, shipped.1, measured.registers, measured.spill_bytes()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The chosen bounds of `made` that `source`'s compile broke: per arch, the bound and the
/// spill bytes ptxas reported when they exceed what the declaration accepts and what the
/// kernel without bounds spilled there.
fn broken_choices(
    made: &TunedKernel,
    request: &TuneRequest,
    source: &CompiledSource,
) -> Vec<(String, Bound, u64)> {
    let Ok(log) = occupancy_core::ptxas::parse_log(&source.compiler_log) else {
        return Vec::new(); // no report to read: the build's own checks still run on the compile
    };
    let mut broken = Vec::new();
    for group in made
        .groups
        .iter()
        .filter(|group| group.chosen != Bound::None)
    {
        for (arch, tuning) in &group.tunings {
            let Some(record) = (log.kernels.iter())
                .find(|record| record.entry && record.name == made.kernel && record.arch == *arch)
            else {
                continue;
            };
            let spilled =
                record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0);
            let without = (tuning.candidates.first())
                .and_then(|first| first.candidate.measured.as_ref())
                .map_or(0, occupancy_core::tune::Measured::spill_bytes);
            if spilled > request.accepted_spill_bytes.max(without) {
                for arch in group.tunings.keys() {
                    broken.push((arch.clone(), group.chosen, spilled));
                }
                break;
            }
        }
    }
    broken
}

/// The engine of a build: its scratch directory and memos under `OUT_DIR`, its jobs.
pub(crate) fn engine_for<'a>(
    context: &'a Context,
    toolchain: &'a Toolchain,
    nvdisasm: std::path::PathBuf,
) -> Engine<'a> {
    let occupancy = context.out_dir.join("occupancy");
    Engine {
        toolchain,
        nvdisasm,
        user_args: &context.nvcc_args,
        work: engine::unique_dir(&occupancy.join("auto-work")),
        memo_root: Some(occupancy.join("cache").join("auto")),
        max_jobs: context.max_jobs,
        front_end: None,
    }
}

/// What `cargo occupancy tune` asks ([`Build::tune_kernel`](crate::Build::tune_kernel)): a
/// kernel, and what the command line gave of its launch and objective. In a declaring package
/// (`in_package`, the sources' `.manifest_dir(...)`) what it leaves out is the kernel's
/// declaration's: the knob it declares `"auto"`, its block, dynamic shared memory,
/// `max_spill_bytes` and archs; elsewhere, or for a kernel nothing declares, the defaults:
/// `min_blocks_per_sm`, the kernel's `__launch_bounds__` maximum, none, 0 and every arch.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TuneQuery {
    /// The kernel's symbol.
    pub kernel: String,
    pub knob: Option<Knob>,
    pub block_threads: Option<u32>,
    pub dynamic_smem_bytes: Option<u32>,
    pub accepted_spill_bytes: Option<u64>,
    pub in_package: bool,
    /// Bounds a compile of the source with them refused (per arch, the bound and the spill
    /// bytes it compiled to), as a build finds them: chosen again without them.
    pub refused: Refusals,
}

impl TuneQuery {
    /// The request: the query's values, else `declared`'s, else the defaults (a block of 0:
    /// the kernel's `.maxntid`, which the caller reads from its PTX).
    pub(crate) fn request(&self, declared: Option<&Declared>) -> TuneRequest {
        let knob = self
            .knob
            .or_else(|| declared.and_then(knob_of))
            .unwrap_or(Knob::MinBlocksPerSm);
        let declared = declared.map(|declared| request_of(declared, knob));
        let declared = declared.as_ref();
        TuneRequest {
            kernel: self.kernel.clone(),
            knob,
            block_threads: (self.block_threads)
                .or(declared.map(|request| request.block_threads))
                .unwrap_or(0),
            dynamic_smem_bytes: (self.dynamic_smem_bytes)
                .or(declared.map(|request| request.dynamic_smem_bytes))
                .unwrap_or(0),
            accepted_spill_bytes: (self.accepted_spill_bytes)
                .or(declared.map(|request| request.accepted_spill_bytes))
                .unwrap_or(0),
            archs: declared.and_then(|request| request.archs.clone()),
        }
    }
}

/// What [`Build::tune_kernel`](crate::Build::tune_kernel) answers: the kernel tuned, the request
/// it was tuned for, and where the declaration that gave the rest of it is.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TuneAnswer {
    pub tuned: TunedKernel,
    pub request: TuneRequest,
    /// The declaration read, in a declaring package (its path from the package's directory).
    pub declared_at: Option<occupancy_core::report::Location>,
    /// Whether each candidate is the source compiled at its bound (nvcc's front end sees the
    /// bound, as in the compile that ships it); `false`: the PTX without bounds with each
    /// bound's directives (a `.ptx` input, where that is what ships, or a `.cu` outside a
    /// package whose kernel does not take `OCCUPANCY_BOUNDS_<kernel>`).
    pub compiled_per_bound: bool,
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
