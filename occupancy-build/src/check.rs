//! The evaluate stage of a build: for every compiled kernel, its rows (`rows`), its lints
//! (`occupancy_core::lint::evaluate::check_kernel`) and machine-code lints (`sass`) at the
//! levels that apply (`levels`); then the baseline, expectations, rendering (`render`) and the
//! reports. Files in pipeline order: `declarations` -> `compile` -> `parse` -> `matching` ->
//! `rows` -> `sass` -> this -> `render` -> `report`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use occupancy_core::lint::evaluate::{self, CompiledOnArch, Launch, LevelSources};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::ptxas::KernelRecord;
use occupancy_core::spec::KernelSpec;

use crate::baseline::{Baseline, ToolchainStamp};
use crate::cargo_lines::CargoLines;
use crate::compile::CompiledSource;
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::fsutil::display_path;
use crate::kernel_tables::{KernelNames, KernelTables};
use crate::levels::{Gathered, Levels};
use crate::matching::{match_declarations, Matching};
use crate::parse::{parse_compiled, CompiledKernel};
use crate::render::render_findings;
use crate::report::for_build;
use crate::rows::{kernel_rows, undeclared_launch, ArchRow, UndeclaredLaunch};
use crate::spill_help::spill_free_help;
use crate::toolchain::Toolchain;
use crate::Error;
use occupancy_core::report::{KernelRow, Report, SourceFile};

/// What checking one product found: its report (rows and the findings of its kernels), which
/// declarations its kernels matched and which expectations they fulfilled (the crate-level
/// questions `crate_view` settles over every product), and its rendered errors.
#[derive(Debug, Default)]
pub(crate) struct CheckedProduct {
    /// This product's rows, sources and findings.
    pub(crate) report: Report,
    /// Every compiled kernel's name (for a missing declaration's suggestions).
    pub(crate) compiled_kernels: Vec<String>,
    /// Declarations (indices into the build's `Declarations`) a kernel of this product matched.
    pub(crate) matched: BTreeSet<usize>,
    /// `expect(lint)` of a declaration that a finding of this product fulfilled.
    pub(crate) fulfilled: BTreeSet<(usize, LintId)>,
    /// Deny findings rendered as rustc-style errors.
    pub(crate) denials: Vec<String>,
    /// Toolchain changes since the baseline (said first in a failure).
    pub(crate) toolchain_changes: Vec<String>,
    /// The toolchain stamp when blessing: the crate view writes the baseline.
    pub(crate) bless_stamp: Option<ToolchainStamp>,
    /// Why nothing was checked (`.check(false)`, `OCCUPANCY_SKIP`); `None`: checked.
    pub(crate) unchecked: Option<String>,
}

/// Checks one product's compiled sources against the declarations: parse, match declarations,
/// read the SASS where it matters, evaluate every kernel, compare with the baseline, settle the
/// expectations its findings fulfil, render. Nothing is written here: the crate view writes the
/// crate's files from every product (`crate_view.rs`).
/// `first_to_compare`: no other product of the build script compared with the baseline before
/// this one (`crate_view::first_to_compare`), so this one judges what concerns the whole crate.
pub fn check(
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    declarations: &Declarations,
    first_to_compare: bool,
    cargo: &mut CargoLines,
) -> Result<CheckedProduct, Error> {
    let mut report = product_report(context, toolchain, compiled);
    require_reasons(context, declarations)?;
    let (kernels, _) = parse_compiled(compiled, context)?;
    let levels = Levels::read(context)?;
    let baseline = BaselineFile::load(context, first_to_compare, cargo)?;
    let matching = match_declarations(&kernels, declarations)?;
    let tables = KernelTables::of(&context.settings);
    check_table_ambiguity(&tables, &kernels, &matching, declarations)?;
    let demands = sass_demands(
        &kernels,
        &matching,
        declarations,
        &levels,
        context.read_all_sass,
        evaluate::resolve_undeclared_level,
    );
    let evidence = read_sass_evidence(context, toolchain, compiled, &kernels, &demands, cargo)?;
    let inputs = CheckInputs {
        context,
        toolchain,
        declarations,
        levels: &levels,
        evidence: &evidence,
        tables: &tables,
    };
    let mut gathered = Vec::new();
    for (kernel_index, kernel) in kernels.iter().enumerate() {
        let declared = matching
            .by_kernel
            .get(&kernel_index)
            .map(|&index| (&declarations.kernels[index], index));
        let (found, rows) = check_one_kernel(&inputs, kernel, declared)?;
        gathered.extend(found);
        report.kernels.extend(rows);
    }
    // Asking ptxas its version costs a process: only when there is a baseline to stamp.
    let stamp = (context.bless || baseline.baseline.is_some())
        .then(|| ToolchainStamp::of(&context.stamped_flags, toolchain));
    let mut toolchain_changes = Vec::new();
    if let (Some(stamp), false) = (&stamp, context.bless) {
        let (found, changes) = baseline.compare(
            context,
            &report,
            stamp,
            &kernels,
            &matching,
            declarations,
            &levels,
            cargo,
        );
        gathered.extend(found);
        toolchain_changes = changes;
    }
    let fulfilled = crate::expectations::settle(declarations, &mut gathered);
    accept_frames_of_accepted_spills(&mut gathered, &report);
    let denials = render_findings(gathered, context, declarations, &mut report, cargo);
    Ok(CheckedProduct {
        report,
        compiled_kernels: kernels.iter().map(|kernel| kernel.name.clone()).collect(),
        matched: matching.matched.clone(),
        fulfilled,
        denials,
        toolchain_changes,
        bless_stamp: stamp.filter(|_| context.bless),
        unchecked: None,
    })
}

/// The product's report before its kernels: the build's fields and its compiled sources (the
/// names the baseline groups its entries by).
fn product_report(context: &Context, toolchain: &Toolchain, compiled: &[CompiledSource]) -> Report {
    let mut report = for_build(context, Some(toolchain.release.clone()), None);
    report.sources = compiled
        .iter()
        .map(|source| SourceFile {
            path: display_path(&context.manifest_dir, &source.source),
            from_cache: source.from_cache,
            product: None,
        })
        .collect();
    report
}

/// The frame of an accepted spill is accepted too: a `stack_frame` finding on an arch where the
/// kernel's spill stands accepted (within `max_spill_bytes`, or allowed or expected with a
/// reason) is allowed when the frame holds nothing but that spill (the SASS shows no local
/// array, stack data or call; without the SASS, the frame is no bigger than the spill stores).
fn accept_frames_of_accepted_spills(gathered: &mut [Gathered], report: &Report) {
    let rows: BTreeMap<(&str, &str), &KernelRow> = report
        .kernels
        .iter()
        .map(|row| ((row.name.as_str(), row.arch.as_str()), row))
        .collect();
    let reported_spills: BTreeSet<(String, String)> = gathered
        .iter()
        .filter(|found| {
            found.leveled.finding.lint == LintId::Spills && found.leveled.level != Level::Allow
        })
        .filter_map(|found| Some((found.kernel.clone(), found.leveled.finding.arch.clone()?)))
        .collect();
    for found in gathered.iter_mut() {
        let finding = &found.leveled.finding;
        let Some(arch) = finding.arch.as_deref() else {
            continue;
        };
        let Some(row) = rows.get(&(found.kernel.as_str(), arch)) else {
            continue;
        };
        let accepted_spill = row.spill_bytes() > 0
            && !reported_spills.contains(&(found.kernel.clone(), arch.to_string()));
        let frame_is_the_spill = match &row.sass {
            Some(sass) => {
                sass.local_array_accesses == 0
                    && sass.stack_data_accesses == 0
                    && sass.calls.is_empty()
            }
            None => row.stack_frame_bytes <= row.spill_store_bytes,
        };
        if finding.lint == LintId::StackFrame && accepted_spill && frame_is_the_spill {
            found.leveled.level = Level::Allow;
            found.leveled.finding.notes.push(
                "the frame holds the kernel's accepted spill, and nothing else: accepted with it"
                    .to_string(),
            );
        }
    }
}

/// Two kernel-table patterns that both name one kernel: neither is more specific, so the
/// build refuses to pick (as for two family declarations).
fn check_table_ambiguity(
    tables: &KernelTables,
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
) -> Result<(), Error> {
    for (index, kernel) in kernels.iter().enumerate() {
        let rust_name = matching
            .by_kernel
            .get(&index)
            .map(|&at| declarations.kernels[at].kernel.rust_name.as_str());
        let names = KernelNames::of(&kernel.name, kernel.demangled.as_deref(), rust_name);
        if let Err(ambiguous) = tables.table_for(names) {
            return Err(Error::AmbiguousKernelTables {
                kernel: ambiguous.kernel,
                tables: [ambiguous.first, ambiguous.second],
            });
        }
    }
    Ok(())
}

/// `allow`/`expect` of a deny-by-default lint without a `reason` (unless the crate opts out).
fn require_reasons(context: &Context, declarations: &Declarations) -> Result<(), Error> {
    if context.settings.require_reasons == Some(false) {
        return Ok(());
    }
    let missing = crate::expectations::missing_reasons(declarations);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Denied {
        count: missing.len(),
        rendered: missing.join("\n"),
    })
}

/// The package's baseline file (`occupancy.lock`, or `baseline = ...`) and what it holds.
struct BaselineFile {
    baseline: Option<Baseline>,
    /// Its sources whose file no longer exists, judged by the first product that compares.
    deleted: BTreeSet<String>,
}

impl BaselineFile {
    /// Loaded when blessing too: a lock that cannot be read is refused before anything is
    /// written. The first product to compare says once that a schema-1 lock is converted, and
    /// judges the entries of deleted sources.
    fn load(context: &Context, first: bool, cargo: &mut CargoLines) -> Result<BaselineFile, Error> {
        let path = crate::baseline::baseline_path(context);
        let parsed = Baseline::load(&path)?;
        if path.exists() {
            cargo.rerun_if_changed(&path);
        }
        let Some(parsed) = parsed else {
            return Ok(BaselineFile {
                baseline: None,
                deleted: BTreeSet::new(),
            });
        };
        // Blessing, the bless's own line says the file was rewritten.
        if first && !context.bless && parsed.schema_version != crate::baseline::SCHEMA_VERSION {
            cargo.warning(&format!(
                "occupancy: the baseline {} is schema {}: its entries, which name no source, are compared by kernel name; the next `OCCUPANCY_BLESS=1 cargo build` rewrites it as schema {}",
                display_path(&context.manifest_dir, &path),
                parsed.schema_version,
                crate::baseline::SCHEMA_VERSION
            ));
        }
        let deleted = match first && !context.bless {
            true => parsed.baseline.deleted_sources(&context.manifest_dir),
            false => BTreeSet::new(),
        };
        Ok(BaselineFile {
            baseline: Some(parsed.baseline),
            deleted,
        })
    }

    /// The regressions against the baseline, and the toolchain changes since it (said as
    /// warnings, and first in a failure: they may explain every regression).
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &self,
        context: &Context,
        report: &Report,
        stamp: &ToolchainStamp,
        kernels: &[CompiledKernel<'_>],
        matching: &Matching,
        declarations: &Declarations,
        levels: &Levels,
        cargo: &mut CargoLines,
    ) -> (Vec<Gathered>, Vec<String>) {
        let Some(baseline) = &self.baseline else {
            return (Vec::new(), Vec::new());
        };
        let comparison =
            crate::baseline::compare(baseline, &Baseline::of_report(report, stamp), &self.deleted);
        let mut changes = Vec::new();
        for line in &comparison.toolchain_changes {
            cargo.warning(&format!(
                "occupancy: the toolchain changed since the baseline: {line}"
            ));
            changes.push(format!(
                "note: the toolchain changed since the baseline: {line}\n"
            ));
        }
        let found = baseline_findings(
            context,
            comparison.findings,
            kernels,
            matching,
            declarations,
            levels,
        );
        (found, changes)
    }
}

/// How a lint's level is found for a kernel without a declaration.
pub(crate) type LevelOf = fn(LintId, &LevelSources<'_>) -> Level;

/// Whether ptxas reported spill bytes for this kernel on this arch.
pub(crate) fn spills(record: &KernelRecord) -> bool {
    record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) > 0
}

/// The SASS lints, and `spills` (whose finding carries the hottest spill's line), that are above
/// `allow` for one kernel, with its declaration's levels as check evaluates them (for a kernel
/// without one, `undeclared_level`: [`evaluate::resolve_undeclared_level`] in a build, where it
/// is checked against the hard limits only, [`evaluate::resolve_level`] in `cargo occupancy
/// check`, where the command line gives every kernel its launch).
fn machine_code_lints(
    levels: &Levels,
    declared: Option<&Declared>,
    kernel_name: &str,
    undeclared_level: LevelOf,
) -> BTreeSet<LintId> {
    let attribute_levels =
        declared.map(|declared| crate::expectations::evaluated_levels(&declared.kernel.spec));
    let mut sources = levels.sources(declared, kernel_name);
    if let Some(attribute_levels) = &attribute_levels {
        sources.attribute = Some(attribute_levels);
    }
    [
        LintId::Spills,
        LintId::SpillInLoop,
        LintId::LocalArray,
        LintId::Call,
        LintId::Fp64,
        LintId::SetmaxnregIgnored,
        LintId::SetmaxnregBudget,
    ]
    .into_iter()
    .filter(|&lint| {
        let level = match declared {
            Some(_) => evaluate::resolve_level(lint, &sources),
            None => undeclared_level(lint, &sources),
        };
        level != Level::Allow
    })
    .collect()
}

/// What the SASS stage must read per source: the machine-code lints above `allow` for some
/// kernel of it, and the archs where such a kernel has local memory for them to read.
pub(crate) fn sass_demands(
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
    levels: &Levels,
    read_all: bool,
    undeclared_level: LevelOf,
) -> BTreeMap<PathBuf, crate::sass::SassDemand> {
    let mut demands: BTreeMap<PathBuf, crate::sass::SassDemand> = BTreeMap::new();
    for (index, kernel) in kernels.iter().enumerate() {
        let declared = matching
            .by_kernel
            .get(&index)
            .map(|&at| &declarations.kernels[at]);
        let enabled = machine_code_lints(levels, declared, &kernel.name, undeclared_level);
        let reads_spills =
            enabled.contains(&LintId::Spills) || enabled.contains(&LintId::SpillInLoop);
        let reads_local = enabled.contains(&LintId::LocalArray);
        let demand = demands.entry(kernel.source.source.clone()).or_default();
        demand.everything = read_all;
        demand.entries.insert(kernel.name.clone());
        for (arch, record) in &kernel.records {
            let spilled = spills(record);
            let uses_local = spilled
                || record.stack_frame_bytes.unwrap_or(0) > 0
                || record.local_memory_bytes.unwrap_or(0) > 0;
            // Lines where a person reads them: a declared kernel's findings are rendered in
            // full (the hottest spill's line, each in-loop spill's line); an undeclared kernel's
            // are summarized, so its facts come from the binary, exact but for the source lines
            // (assembling its line tables cost candle's PTX build 2.7% more ptxas).
            if uses_local && (declared.is_some() || read_all) {
                demand
                    .uses_local_memory
                    .entry(arch.clone())
                    .or_default()
                    .insert(kernel.name.clone());
            }
            if (spilled && reads_spills) || (uses_local && reads_local) {
                demand
                    .local_memory
                    .entry(arch.clone())
                    .or_default()
                    .insert(kernel.name.clone());
            }
        }
        demand.enabled_lints.extend(enabled);
    }
    demands
}

/// Reads the SASS where a machine-code lint above `allow` can fire ([`sass_demands`]).
fn read_sass_evidence(
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    kernels: &[CompiledKernel<'_>],
    demands: &BTreeMap<PathBuf, crate::sass::SassDemand>,
    cargo: &mut CargoLines,
) -> Result<crate::sass::SassEvidence, Error> {
    let spilled = spilled_on(kernels);
    crate::sass::read_build_evidence(context, toolchain, compiled, demands, &spilled, cargo)
}

/// Every (kernel, arch) ptxas reported spill bytes for: what the SASS reader calls a spill.
pub(crate) fn spilled_on(kernels: &[CompiledKernel<'_>]) -> BTreeSet<(String, String)> {
    kernels
        .iter()
        .flat_map(|kernel| {
            kernel
                .records
                .iter()
                .filter(|(_, record)| spills(record))
                .map(|(arch, _)| (kernel.name.clone(), arch.clone()))
        })
        .collect()
}

/// What checking one kernel needs besides the kernel.
struct CheckInputs<'a> {
    context: &'a Context,
    toolchain: &'a Toolchain,
    declarations: &'a Declarations,
    levels: &'a Levels,
    evidence: &'a crate::sass::SassEvidence,
    tables: &'a KernelTables,
}

/// One compiled kernel: its report rows, and its findings (its declaration's lints, or an
/// undeclared kernel's hard failures at the crate's launch). Baseline findings are made once
/// for the whole build ([`baseline_findings`]).
fn check_one_kernel(
    inputs: &CheckInputs<'_>,
    kernel: &CompiledKernel<'_>,
    declared: Option<(&Declared, usize)>,
) -> Result<(Vec<Gathered>, Vec<KernelRow>), Error> {
    let CheckInputs {
        context,
        declarations,
        levels,
        evidence,
        ..
    } = *inputs;
    let mut found: Vec<Gathered> = Vec::new();
    let undeclared = declared
        .is_none()
        .then(|| undeclared_launch(context, kernel, inputs.tables));
    let mut rows = kernel_rows(context, kernel, declared, undeclared.as_ref(), declarations)?;
    for (_, _, row) in &mut rows {
        row.sass = evidence.facts_of(&kernel.name, &row.arch, &context.manifest_dir);
    }
    // Expected lints and lints allowed with a reason are evaluated as warnings here, so that
    // `expectations::settle` sees them; it sets their level back to allow.
    let attribute_levels =
        declared.map(|(declared, _)| crate::expectations::evaluated_levels(&declared.kernel.spec));
    let mut level_sources = levels.sources(declared.map(|(declared, _)| declared), &kernel.name);
    if let Some(attribute_levels) = &attribute_levels {
        level_sources.attribute = Some(attribute_levels);
    }
    let evaluated: Vec<_> = rows
        .iter()
        .map(|(facts, record, row)| (*facts, *record, row.occupancy_on(facts)))
        .collect();
    let on: Vec<CompiledOnArch<'_>> = evaluated
        .iter()
        .map(|(facts, record, occupancy)| CompiledOnArch {
            arch: facts,
            record,
            ptx: kernel.ptx_on(&record.arch),
            occupancy,
        })
        .collect();
    found.extend(match declared {
        Some(declared) => declared_findings(inputs, kernel, declared, &rows, &on, &level_sources),
        None => undeclared_findings(
            kernel,
            undeclared
                .as_ref()
                .expect("made for every undeclared kernel"),
            &rows,
            &on,
            &level_sources,
        ),
    });
    // The machine-code lints, for declared and undeclared kernels alike (undeclared ones are
    // summarized with the others of their lint).
    for (_, _, row) in &rows {
        for finding in evidence.findings(&kernel.source.source, row) {
            found.extend(Gathered::leveled(
                finding,
                &level_sources,
                declared.map(|(_, index)| index),
                &kernel.name,
                declared.is_none(),
            ));
        }
    }
    if let Some(launch) = &undeclared {
        for gathered in &mut found {
            gathered
                .leveled
                .finding
                .notes
                .push(format!("checked at {}", launch.origin));
            gathered.launch = Some(launch.origin.clone());
        }
    }
    Ok((found, rows.into_iter().map(|(_, _, row)| row).collect()))
}

/// A declared kernel's findings at its declared launch; a spill gets the hottest spill's line
/// and the `min_blocks_per_sm` that keeps it spill-free.
fn declared_findings(
    inputs: &CheckInputs<'_>,
    kernel: &CompiledKernel<'_>,
    (declared, declaration_index): (&Declared, usize),
    rows: &[ArchRow<'_>],
    on: &[CompiledOnArch<'_>],
    level_sources: &LevelSources<'_>,
) -> Vec<Gathered> {
    let spec = &declared.kernel.spec;
    let mut found = Vec::new();
    for mut leveled in evaluate::check_kernel(Launch::Declared(spec), on, level_sources) {
        if leveled.finding.lint == LintId::Spills {
            crate::sass::note_hottest_spill(
                &mut leveled.finding,
                rows.iter().map(|(_, _, row)| row),
            );
            if let Some(help) = spill_free_help(
                inputs.toolchain,
                inputs.context,
                kernel,
                &declared.kernel,
                leveled.finding.arch.as_deref(),
            ) {
                leveled.finding.help = Some(help);
            }
        }
        found.push(Gathered {
            leveled,
            declaration: Some(declaration_index),
            kernel: kernel.name.clone(),
            undeclared: false,
            reason: None,
            launch: None,
        });
    }
    found
}

/// An undeclared kernel's hard failures at the launch it is checked at, and
/// `undeclared_kernel`.
fn undeclared_findings(
    kernel: &CompiledKernel<'_>,
    launch: &UndeclaredLaunch,
    rows: &[ArchRow<'_>],
    on: &[CompiledOnArch<'_>],
    level_sources: &LevelSources<'_>,
) -> Vec<Gathered> {
    let mut spec = KernelSpec::with_block(launch.block);
    spec.dynamic_smem_bytes = launch.dynamic_smem_bytes;
    let mut found: Vec<Gathered> =
        evaluate::check_kernel(Launch::Undeclared(&spec), on, level_sources)
            .into_iter()
            .map(|leveled| Gathered {
                leveled,
                declaration: None,
                kernel: kernel.name.clone(),
                undeclared: true,
                reason: None,
                launch: None,
            })
            .collect();
    let source = rows.first().and_then(|(_, _, row)| row.source.clone());
    let source_text = source.map_or_else(String::new, |source| source.to_string());
    found.extend(Gathered::leveled(
        evaluate::undeclared_kernel(&kernel.name, &source_text),
        level_sources,
        None,
        &kernel.name,
        true,
    ));
    found
}

/// The baseline's `regression` and `baseline_stale` findings, leveled like the kernel's others
/// (an arch-wide finding, about another toolchain, concerns no kernel: an empty name). A finding
/// goes to the declaration of the kernel of its name compiled from its source (two sources may
/// each define a kernel of one name), else of its name.
fn baseline_findings(
    context: &Context,
    findings: Vec<(Option<crate::baseline::KernelAt>, evaluate::Finding)>,
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
    levels: &Levels,
) -> Vec<Gathered> {
    let mut gathered = Vec::new();
    for (at, finding) in findings {
        let (source, kernel_name) = at.map_or((None, String::new()), |at| (at.source, at.kernel));
        let from_source = |kernel: &&CompiledKernel<'_>| {
            source.as_deref()
                == Some(display_path(&context.manifest_dir, &kernel.source.source).as_str())
        };
        let named = |kernel: &&CompiledKernel<'_>| kernel.name == kernel_name;
        let index = kernels
            .iter()
            .position(|kernel| named(&kernel) && from_source(&kernel))
            .or_else(|| kernels.iter().position(|kernel| named(&kernel)));
        let declaration = index
            .and_then(|index| matching.by_kernel.get(&index).copied())
            .or_else(|| {
                declarations
                    .kernels
                    .iter()
                    .position(|declared| declared.kernel.kernel_name == kernel_name)
            });
        let declared = declaration.map(|index| &declarations.kernels[index]);
        gathered.extend(Gathered::leveled(
            finding,
            &levels.sources(declared, &kernel_name),
            declaration,
            &kernel_name,
            false,
        ));
    }
    gathered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::Program;
    use crate::declarations::write_bounds_header;
    use crate::diagnostics::SourceText;
    use crate::parse::cuda_definition_lines;
    use crate::ptx_summary::entry_definition_lines;
    use crate::rows::kernel_location;
    use crate::spill_help::minnctapersm_position;
    use occupancy_core::ptxas::{self, EntrySourceLine};
    use occupancy_core::spec;
    use occupancy_core::spec::BlockDim;
    use std::path::Path;

    #[test]
    fn definition_lines_find_c_and_template_kernels_in_one_pass() {
        let text = "#include <x>\n\n__global__ void __launch_bounds__(256)\nsaxpy(int n) {}\n\ntemplate <int N>\n__global__ void tiled(float* x) {}\n\n\n\n\nvoid host(int) {}\n";
        let lines = cuda_definition_lines(text);
        assert_eq!(lines.get("saxpy"), Some(&4));
        assert_eq!(lines.get("tiled"), Some(&7));
        assert_eq!(lines.get("host"), None, "no __global__ within three lines");
        let ptx = "//\n.visible .entry k1(\n)\n{\n}\n.entry _Z2k2v()\n{\n}\n";
        let entries = entry_definition_lines(ptx);
        assert_eq!(entries.get("k1"), Some(&2));
        assert_eq!(entries.get("_Z2k2v"), Some(&6));
    }

    #[test]
    fn finds_the_minnctapersm_of_one_entry() {
        let ptx = ".visible .entry other(\n)\n.minnctapersm 2\n{\n}\n.visible .entry hot(\n\t.param .u32 hot_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 8\n{\n}\n";
        let range = minnctapersm_position(ptx, "hot").unwrap();
        assert_eq!(&ptx[range], ".minnctapersm 8");
        assert!(minnctapersm_position(ptx, "missing").is_none());
    }

    fn context_for(archs: &[&str], dir: &Path) -> Context {
        Context::for_tests(dir, archs)
    }

    fn compiled(dir: &Path, log: &str) -> CompiledSource {
        let ptx = dir.join("k.ptx");
        std::fs::write(
            &ptx,
            ".version 9.0\n.target sm_80\n.visible .entry k(\n)\n{\nret;\n}\n",
        )
        .unwrap();
        CompiledSource {
            source: dir.join("k.cu"),
            kind: crate::SourceKind::Cuda,
            programs: vec![Program {
                ptx_target: Some("compute_80".into()),
                ptx: ptx.clone(),
                archs: vec!["sm_80".into(), "sm_90".into()],
                summary: None,
            }],
            ptx,
            binary: None,
            lineinfo_ptx: None,
            kernel_lines: None,
            compiler_log: log.to_string(),
            dependencies: Vec::new(),
            from_cache: false,
            wrapper_failure: None,
            notes: Vec::new(),
            ptx_target: Some("compute_80".into()),
        }
    }

    const REPORT_SM_90: &str = "ptxas info    : Compiling entry function 'k' for 'sm_90'\nptxas info    : Function properties for k\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 8 registers, used 0 barriers\n";

    #[test]
    fn unreadable_compiler_output_fails_closed() {
        let dir = std::env::temp_dir().join(format!("occupancy-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let context = context_for(&["sm_90"], &dir);
        // A complete report parses.
        let good = [compiled(&dir, REPORT_SM_90)];
        assert_eq!(parse_compiled(&good, &context).unwrap().0.len(), 1);
        // A line that looks like ptxas's but is not understood.
        let garbled = [compiled(
            &dir,
            &REPORT_SM_90.replace("Used 8 registers", "Used eight registers"),
        )];
        let error = parse_compiled(&garbled, &context).unwrap_err().to_string();
        assert!(
            error.contains("could not read the compiler's output"),
            "{error}"
        );
        // No report for a target arch the PTX was assembled for.
        let two_archs = context_for(&["sm_80", "sm_90"], &dir);
        let error = parse_compiled(&good, &two_archs).unwrap_err().to_string();
        assert!(
            error.contains("ptxas reported nothing for kernel `k` on sm_80"),
            "{error}"
        );
        // A kernel in the PTX with no report at all.
        let error = parse_compiled(&[compiled(&dir, "")], &context)
            .unwrap_err()
            .to_string();
        assert!(error.contains("ptxas's report"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn declarations_of(text: &str) -> Declarations {
        Declarations {
            kernels: spec::scan_source(text)
                .unwrap()
                .into_iter()
                .map(|kernel| Declared {
                    kernel,
                    source_index: 0,
                })
                .collect(),
            sources: vec![SourceText {
                display_path: "src/lib.rs".into(),
                text: text.into(),
            }],
        }
    }

    fn kernels_named<'a>(source: &'a CompiledSource, names: &[&str]) -> Vec<CompiledKernel<'a>> {
        names
            .iter()
            .map(|name| CompiledKernel {
                name: (*name).to_string(),
                demangled: None,
                source,
                ptx: None,
                defined_at: None,
                entry_line: None,
                records: BTreeMap::new(),
                programs: BTreeMap::new(),
            })
            .collect()
    }

    const FAMILIES: &str = "#[occupancy::kernel(family = \"affine_*\", block = 256)]\nfn affine();\n\n#[occupancy::kernel(block = 128)]\nfn affine_f64();\n\n#[occupancy::kernel(family = \"cast_*\", block = 64)]\nfn cast();\n";

    #[test]
    fn families_match_by_pattern_and_exact_declarations_win() {
        let dir = std::env::temp_dir().join(format!("occupancy-match-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let kernels = kernels_named(&source, &["affine_f32", "affine_f64", "uneg_f32"]);
        let declarations = declarations_of(FAMILIES);
        let matching = match_declarations(&kernels, &declarations).unwrap();
        let declared = |kernel: usize| {
            matching
                .by_kernel
                .get(&kernel)
                .map(|&index| declarations.kernels[index].kernel.rust_name.as_str())
        };
        assert_eq!(declared(0), Some("affine"));
        assert_eq!(declared(1), Some("affine_f64"));
        assert_eq!(declared(2), None);
        // `cast_*` matches nothing: reported as missing at its attribute.
        let unmatched: Vec<&str> = (0..declarations.kernels.len())
            .filter(|index| !matching.matched.contains(index))
            .map(|index| declarations.kernels[index].kernel.rust_name.as_str())
            .collect();
        assert_eq!(unmatched, ["cast"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn two_patterns_matching_one_kernel_is_an_error_naming_both() {
        let dir = std::env::temp_dir().join(format!("occupancy-two-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let kernels = kernels_named(&source, &["affine_f32"]);
        let declarations = declarations_of(
            "#[occupancy::kernel(family = \"affine_*\", block = 256)]\nfn affine();\n#[occupancy::kernel(family = \"*_f32\", block = 256)]\nfn f32s();\n",
        );
        let error = match_declarations(&kernels, &declarations).err().unwrap();
        assert!(
            matches!(&error, Error::AmbiguousFamily { kernel, families }
                if kernel == "affine_f32" && families[1].pattern == "*_f32"),
            "{error:?}"
        );
        let error = error.to_string();
        assert!(
            error.contains("kernel `affine_f32` matches two family declarations")
                && error.contains("`family = \"affine_*\"` (src/lib.rs:1:1)")
                && error.contains("`family = \"*_f32\"` (src/lib.rs:3:1)"),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_kernel_table_naming_no_kernel_of_any_product_is_settled_with_a_suggestion() {
        use crate::crate_view::{CrateView, ProductKey, RecordedProduct};
        use crate::Product;
        let dir = std::env::temp_dir().join(format!("occupancy-tables-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let declarations = declarations_of(FAMILIES);
        let mut context = context_for(&["sm_90"], &dir);
        context.settings.package_kernel_tables =
            vec!["saxpy".into(), "affine".into(), "mul_mat_vec_*".into()];
        let product = |library: Option<&str>, kernels: &[&str]| RecordedProduct {
            key: ProductKey {
                product: if library.is_some() {
                    Product::Object
                } else {
                    Product::Ptx
                },
                library: library.map(str::to_string),
                sources: Default::default(),
            },
            report: Report::default(),
            declarations: declarations.clone(),
            compiled_kernels: kernels.iter().map(|name| name.to_string()).collect(),
            matched: Default::default(),
            fulfilled: Default::default(),
            ptx: Vec::new(),
            bless_stamp: None,
            unchecked: None,
        };
        let mut view = CrateView {
            products: vec![product(None, &["spill", "saxpy"])],
        };
        let crate_wide = |view: &CrateView, context: &Context| -> Vec<String> {
            let levels = Levels::read(context).unwrap();
            view.settle(&levels, context)
                .into_iter()
                .filter(|settled| settled.at.is_none())
                .map(|settled| settled.finding.message)
                .collect()
        };
        // The pattern names a kernel of a product not built yet: nothing is settled about it
        // until then, and it is a finding only if no product of the build script has one.
        let unknown = crate_wide(&view, &context);
        assert_eq!(unknown.len(), 1, "{unknown:?}");
        assert!(unknown[0].contains("kernels.mul_mat_vec_*]"), "{unknown:?}");
        view.products
            .push(product(Some("moe"), &["_Z13mul_mat_vec_qILi1EEvPKfS1_Pfi"]));
        assert_eq!(crate_wide(&view, &context), Vec::<String>::new());
        context.settings.package_kernel_tables.push("spil".into());
        let unknown = crate_wide(&view, &context);
        assert!(
            unknown.len() == 1
                && unknown[0]
                    .contains("[package.metadata.occupancy.kernels.spil] names no compiled kernel")
                && unknown[0].contains("did you mean `spill`?"),
            "{unknown:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_bounds_header_has_one_macro_per_family() {
        let dir = std::env::temp_dir().join(format!("occupancy-header-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let context = context_for(&["sm_90"], &dir);
        let declarations = declarations_of(
            "#[occupancy::kernel(family = \"uneg_*\", block = 256, min_blocks_per_sm = 4)]\nfn uneg();\n#[occupancy::kernel(block = 128)]\nfn saxpy();\n",
        );
        let header =
            std::fs::read_to_string(write_bounds_header(&context, &declarations).unwrap()).unwrap();
        for line in [
            "#define OCCUPANCY_BOUNDS_FAMILY(family) OCCUPANCY_BOUNDS_FAMILY_##family",
            "#define OCCUPANCY_BOUNDS_FAMILY_uneg __launch_bounds__(256, 4)",
            "#define OCCUPANCY_BLOCK_THREADS_FAMILY_uneg 256",
            "#define OCCUPANCY_BOUNDS_saxpy __launch_bounds__(128)",
        ] {
            assert!(header.contains(line), "{line}\n{header}");
        }
        assert!(!header.contains("OCCUPANCY_BOUNDS_uneg_*"), "{header}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn kernels_are_located_by_line_info_and_undeclared_blocks_respect_bounds() {
        let dir = std::env::temp_dir().join(format!("occupancy-locate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let mut context = context_for(&["sm_90"], &dir);
        let mut kernels = kernels_named(&source, &["uneg_f32"]);
        kernels[0].defined_at = Some(EntrySourceLine {
            file: dir.join("kernels/unary.cu").display().to_string(),
            line: 8,
        });
        let location = kernel_location(&context, &kernels[0]);
        assert_eq!(
            (location.path.as_str(), location.line),
            ("kernels/unary.cu", 8)
        );
        let launch = |context: &Context, kernel: &CompiledKernel<'_>| {
            let launch = undeclared_launch(context, kernel, &KernelTables::of(&context.settings));
            (
                launch.block.to_string(),
                launch.dynamic_smem_bytes,
                launch.origin,
            )
        };
        let (block, _, origin) = launch(&context, &kernels[0]);
        assert_eq!(block, "256");
        assert!(
            origin.contains("the default for undeclared kernels (set `block`"),
            "{origin}"
        );
        context.settings.block = Some(BlockDim::linear(1024));
        let (block, _, origin) = launch(&context, &kernels[0]);
        assert_eq!(block, "1024");
        assert!(origin.contains("the crate's `block`"), "{origin}");
        // A kernel table for a pattern gives its launch, 2-D blocks and dynamic smem too.
        context.settings.kernel_launches.insert(
            "uneg_*".into(),
            crate::config::KernelLaunch {
                block: Some(BlockDim::new(32, 4, 1)),
                dynamic_smem_bytes: Some(4096),
            },
        );
        assert_eq!(
            launch(&context, &kernels[0]),
            (
                "(32, 4)".to_string(),
                4096,
                "block (32, 4) from [package.metadata.occupancy.kernels.\"uneg_*\"]".to_string()
            )
        );
        context.settings.kernel_launches.clear();
        kernels[0].ptx = ptxas::parse_ptx_directives(
            ".visible .entry uneg_f32(\n)\n.maxntid 512, 1, 1\n{\nret;\n}\n",
        )
        .into_iter()
        .next();
        let (block, _, origin) = launch(&context, &kernels[0]);
        assert_eq!(block, "512");
        assert!(origin.contains("`__launch_bounds__` maximum"), "{origin}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
