//! The check half of the engine: read each compile's ptxas report and PTX, match kernels to
//! their `#[occupancy::kernel]` declarations, calculate occupancy per target architecture,
//! evaluate the lints, resolve levels, write the reports and the baseline, and render findings.
//!
//! Parsing (`occupancy_core::ptxas`), declarations (`occupancy_core::spec`), the calculator
//! (`occupancy_core::calc`) and lint evaluation (`occupancy_core::lint::evaluate`) are called,
//! never re-implemented. What only this module does is I/O around them: reading Rust sources,
//! writing `occupancy_bounds.h`, the reports and the baseline, and re-running ptxas on the PTX to
//! find the `min_blocks_per_sm` that keeps a spilling kernel spill-free.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use occupancy_core::arch::{self, ArchFacts};
use occupancy_core::lint::evaluate::{self, CompiledOnArch, Launch, LevelSources, LeveledFinding};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::ptxas::{self, EntrySourceLine, KernelRecord, PtxEntry};
use occupancy_core::spec::{self, BlockDim, DeclaredKernel, KernelSpec};

use crate::baseline::{Baseline, ToolchainStamp};
use crate::cargo_lines::CargoLines;
use crate::compile::{render_command, CompiledSource, Program};
use crate::context::Context;
use crate::diagnostics::{self, SourceText};
use crate::fsutil::{write_atomic, write_if_changed};
use crate::report::{for_build, write_reports};
use crate::toolchain::Toolchain;
use crate::Error;
use occupancy_core::report::{
    Finding, KernelRow, Location, LocationKind, Report, RowLaunch, SourceFile,
};

/// A declaration found in the package's Rust sources.
#[derive(Debug, Clone)]
pub struct Declared {
    pub kernel: DeclaredKernel,
    /// Index into the source texts.
    pub source_index: usize,
}

/// All declarations of the package, with the sources they were read from.
#[derive(Debug, Clone, Default)]
pub struct Declarations {
    pub kernels: Vec<Declared>,
    pub sources: Vec<SourceText>,
}

impl Declarations {
    pub(crate) fn location(&self, declared: &Declared) -> Location {
        Location {
            kind: LocationKind::RustAttribute,
            path: self.sources[declared.source_index].display_path.clone(),
            line: u32::try_from(declared.kernel.attribute.start.line).unwrap_or(u32::MAX),
            column: u32::try_from(declared.kernel.attribute.start.column).unwrap_or(u32::MAX),
        }
    }
}

fn collect_rust_files(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_file() {
        if path.extension().is_some_and(|ext| ext == "rs") {
            found.push(path.to_path_buf());
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        collect_rust_files(&path, found);
    }
}

fn display_path(manifest_dir: &Path, path: &Path) -> String {
    path.strip_prefix(manifest_dir)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Finds every `#[occupancy::kernel]` under `src/` (or the builder's `.declarations(...)`).
pub fn scan_declarations(context: &Context, cargo: &mut CargoLines) -> Result<Declarations, Error> {
    let roots = &context.declaration_roots;
    let mut files = Vec::new();
    for root in roots {
        if root.exists() {
            // A directory: cargo reruns the build script when any file in it changes, so a new
            // declaration in a new file is seen too.
            cargo.rerun_if_changed(root);
        }
        collect_rust_files(root, &mut files);
    }
    let mut declarations = Declarations::default();
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|error| Error::Io {
            path: file.clone(),
            error,
        })?;
        if !text.contains("kernel") {
            continue;
        }
        let source = SourceText {
            display_path: display_path(&context.manifest_dir, &file),
            text,
        };
        match spec::scan_source(&source.text) {
            Ok(kernels) if kernels.is_empty() => {}
            Ok(kernels) => {
                let source_index = declarations.sources.len();
                declarations.sources.push(source);
                declarations
                    .kernels
                    .extend(kernels.into_iter().map(|kernel| Declared {
                        kernel,
                        source_index,
                    }));
            }
            Err(error) => {
                for diagnostic in error.diagnostics {
                    let finding = diagnostics::Diagnostic {
                        id: "declaration",
                        deny: true,
                        message: &diagnostic.message,
                        arch: None,
                        notes: &[],
                        help: None,
                    };
                    let span = (
                        (diagnostic.span.start.line, diagnostic.span.start.column),
                        (diagnostic.span.end.line, diagnostic.span.end.column),
                    );
                    problems.push(diagnostics::render(
                        &finding,
                        Some((&source, span.0, span.1)),
                    ));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(Error::Denied {
            count: problems.len(),
            rendered: problems.join("\n"),
        });
    }
    let mut seen = BTreeMap::new();
    for declared in &declarations.kernels {
        if let Some(previous) = seen.insert(
            declared.kernel.kernel_name.clone(),
            declarations.location(declared),
        ) {
            let here = declarations.location(declared);
            return Err(Error::Config {
                message: format!(
                    "kernel `{}` is declared twice ({}:{}:{} and {}:{}:{}); keep one declaration per compiled kernel",
                    declared.kernel.kernel_name, previous.path, previous.line, previous.column, here.path, here.line, here.column
                ),
            });
        }
    }
    Ok(declarations)
}

/// `$OUT_DIR/occupancy_bounds.h`: for each declared kernel `K`, macros a .cu file uses to take
/// its launch bounds from the Rust declaration:
/// `__global__ void OCCUPANCY_BOUNDS_K K(...)` or `__launch_bounds__(OCCUPANCY_LAUNCH_BOUNDS_K)`.
pub fn write_bounds_header(
    context: &Context,
    declarations: &Declarations,
) -> Result<PathBuf, Error> {
    let mut header = String::from(
        "// @generated by occupancy-build from the #[occupancy::kernel] declarations: do not edit.\n\
         // For each declared kernel K:\n\
         //   OCCUPANCY_BLOCK_THREADS_K        threads per block of the declared launch\n\
         //   OCCUPANCY_MIN_BLOCKS_PER_SM_K    min_blocks_per_sm (when declared)\n\
         //   OCCUPANCY_LAUNCH_BOUNDS_K        the arguments of __launch_bounds__(...)\n\
         //   OCCUPANCY_BOUNDS_K               __launch_bounds__(...) and __maxnreg__(...) as declared\n\
         #pragma once\n",
    );
    header.push_str(
        "// For each kernel family F (`family = \"pattern_*\"` on the Rust stub `F`), the same macros with\n\
         // FAMILY_F in place of K, and OCCUPANCY_BOUNDS_FAMILY(F) for use inside the C macro that\n\
         // generates the family: every instance compiles, declared on its own or not.\n\
         #define OCCUPANCY_BOUNDS_FAMILY(family) OCCUPANCY_BOUNDS_FAMILY_##family\n",
    );
    let mut kernels: Vec<&Declared> = declarations.kernels.iter().collect();
    kernels.sort_by(|left, right| left.kernel.kernel_name.cmp(&right.kernel.kernel_name));
    for declared in kernels {
        let (suffix, what) = match &declared.kernel.spec.family {
            Some(pattern) => (
                format!("FAMILY_{}", declared.kernel.rust_name),
                format!("family `{pattern}`"),
            ),
            None => (declared.kernel.kernel_name.clone(), String::new()),
        };
        if !suffix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let location = declarations.location(declared);
        let what = if what.is_empty() {
            suffix.clone()
        } else {
            format!("{suffix} ({what})")
        };
        header.push_str(&format!(
            "\n// {what}: declared at {}:{}:{}\n",
            location.path, location.line, location.column
        ));
        header.push_str(&bounds_macros(&suffix, &declared.kernel.spec));
    }
    let path = context.out_dir.join("occupancy_bounds.h");
    write_if_changed(&path, header.as_bytes())?;
    Ok(path)
}

/// The `#define`s of one declaration: `OCCUPANCY_BLOCK_THREADS_<suffix>`, ...,
/// `OCCUPANCY_BOUNDS_<suffix>`.
fn bounds_macros(suffix: &str, spec: &occupancy_core::spec::KernelSpec) -> String {
    let threads = spec.block.threads();
    let mut text = format!("#define OCCUPANCY_BLOCK_THREADS_{suffix} {threads}\n");
    let launch_bounds = match spec.min_blocks_per_sm {
        Some(blocks) => {
            text.push_str(&format!(
                "#define OCCUPANCY_MIN_BLOCKS_PER_SM_{suffix} {blocks}\n"
            ));
            format!("{threads}, {blocks}")
        }
        None => format!("{threads}"),
    };
    text.push_str(&format!(
        "#define OCCUPANCY_LAUNCH_BOUNDS_{suffix} {launch_bounds}\n"
    ));
    let mut bounds = format!("__launch_bounds__({launch_bounds})");
    if let Some(registers) = spec.max_registers {
        text.push_str(&format!(
            "#define OCCUPANCY_MAX_REGISTERS_{suffix} {registers}\n"
        ));
        if spec.min_blocks_per_sm.is_none() {
            // __maxnreg__ cannot be combined with a minimum block count.
            bounds = format!("__launch_bounds__({threads}) __maxnreg__({registers})");
        }
    }
    text.push_str(&format!("#define OCCUPANCY_BOUNDS_{suffix} {bounds}\n"));
    text
}

/// A compiled entry function on every arch it was compiled for.
#[derive(Debug)]
pub(crate) struct CompiledKernel<'a> {
    pub(crate) name: String,
    pub(crate) demangled: Option<String>,
    pub(crate) source: &'a CompiledSource,
    /// The entry in the first program that defines it (launch-bound defaults).
    pub(crate) ptx: Option<PtxEntry>,
    /// Where the kernel is defined, from the PTX's `-lineinfo` (`.file`/`.loc`).
    defined_at: Option<EntrySourceLine>,
    /// For a `.ptx_file` source: the line of its `.entry` in that file.
    entry_line: Option<u32>,
    pub(crate) records: BTreeMap<String, KernelRecord>,
    /// Per arch: the program its SASS came from and the entry in that program's PTX.
    programs: BTreeMap<String, (&'a Program, PtxEntry)>,
}

impl CompiledKernel<'_> {
    /// The PTX entry this arch's SASS was assembled from.
    pub(crate) fn ptx_on(&self, arch: &str) -> Option<&PtxEntry> {
        self.programs
            .get(arch)
            .map(|(_, entry)| entry)
            .or(self.ptx.as_ref())
    }
}

/// The kernels of the compiled sources, and the sources that define none (device functions
/// only: nothing to check there, which is no reason to stop checking the others).
pub(crate) fn parse_compiled<'a>(
    compiled: &'a [CompiledSource],
    context: &Context,
) -> Result<(Vec<CompiledKernel<'a>>, Vec<&'a Path>), Error> {
    let mut kernels = Vec::new();
    let mut without_kernels = Vec::new();
    let archs: BTreeSet<String> = context.archs.iter().map(ToString::to_string).collect();
    for source in compiled {
        let unreadable = |message: String| Error::UnreadableOutput {
            file: source.source.clone(),
            message,
        };
        let mut programs = Vec::new();
        let mut source_lines = BTreeMap::new();
        let mut entry_lines = BTreeMap::new();
        for program in &source.programs {
            let ptx_text = std::fs::read_to_string(&program.ptx).map_err(|error| Error::Io {
                path: program.ptx.clone(),
                error,
            })?;
            for (name, line) in ptxas::entry_source_lines(&ptx_text) {
                source_lines.entry(name).or_insert(line);
            }
            if source.kind == crate::SourceKind::Ptx {
                entry_lines = entry_definition_lines(&ptx_text);
            }
            programs.push((program, ptxas::parse_ptx_directives(&ptx_text)));
        }
        let no_entries = programs.iter().all(|(_, entries)| entries.is_empty());
        let parsed = match ptxas::parse_log(&source.compiler_log) {
            Ok(parsed) => parsed,
            Err(ptxas::ParseError::NoKernels { .. }) if no_entries => {
                without_kernels.push(source.source.as_path());
                continue;
            }
            Err(error) => return Err(unreadable(format!("ptxas's report: {error}"))),
        };
        if let Some(diagnostic) = parsed.diagnostics.first() {
            return Err(unreadable(format!(
                "ptxas's report has a line that is not understood (line {}: `{}`): {}",
                diagnostic.line_number, diagnostic.line, diagnostic.message
            )));
        }
        // The first program's entry of each name (the launch-bound defaults), found by name.
        let mut first_entries: BTreeMap<&str, &PtxEntry> = BTreeMap::new();
        for entry in programs.iter().flat_map(|(_, entries)| entries) {
            first_entries.entry(entry.name.as_str()).or_insert(entry);
        }
        let mut by_name: BTreeMap<String, CompiledKernel<'a>> = BTreeMap::new();
        for record in parsed.kernels.into_iter().filter(|record| record.entry) {
            let kernel = by_name
                .entry(record.name.clone())
                .or_insert_with(|| CompiledKernel {
                    name: record.name.clone(),
                    demangled: record.demangled.clone(),
                    source,
                    ptx: first_entries
                        .get(record.name.as_str())
                        .map(|entry| (*entry).clone()),
                    defined_at: source_lines.remove(&record.name),
                    entry_line: entry_lines.get(&record.name).copied(),
                    records: BTreeMap::new(),
                    programs: BTreeMap::new(),
                });
            kernel.records.insert(record.arch.clone(), record);
        }
        // Fail closed: every entry of a program must have a report on every arch assembled
        // from that program (and only there: a kernel behind `__CUDA_ARCH__ >= 900` exists
        // in the compute_90 program alone).
        for (program, entries) in &programs {
            let program_archs = program.archs.iter().filter(|arch| archs.contains(*arch));
            for entry in entries {
                let Some(kernel) = by_name.get_mut(&entry.name) else {
                    return Err(unreadable(format!(
                        "the PTX defines kernel `{}` but ptxas reported nothing for it",
                        entry.name
                    )));
                };
                for arch in program_archs.clone() {
                    if !kernel.records.contains_key(arch) {
                        return Err(unreadable(format!(
                            "ptxas reported nothing for kernel `{}` on {arch}",
                            entry.name
                        )));
                    }
                    kernel
                        .programs
                        .insert(arch.clone(), (*program, entry.clone()));
                }
            }
        }
        if source.kind == crate::SourceKind::Cuda
            && by_name.values().any(|k| k.defined_at.is_none())
        {
            // No `-lineinfo` for some kernel (a `-G` build, a flag that drops it): the line that
            // names it after `__global__` in the source, indexed in one pass.
            let text = std::fs::read_to_string(&source.source).unwrap_or_default();
            let lines = cuda_definition_lines(&text);
            for kernel in by_name.values_mut().filter(|k| k.defined_at.is_none()) {
                kernel.entry_line = lines.get(short_name(kernel)).copied();
            }
        }
        kernels.extend(by_name.into_values());
    }
    Ok((kernels, without_kernels))
}

/// The kernel's name as written in C++: the demangled name's last component without template
/// arguments or parameters (`tiled` for `void ns::tiled<4>(float*)`), else the symbol.
fn short_name<'k>(kernel: &'k CompiledKernel<'_>) -> &'k str {
    kernel
        .demangled
        .as_deref()
        .and_then(|demangled| demangled.split('(').next())
        .map(|head| {
            let head = head.rsplit(' ').next().unwrap_or(head);
            let head = head.split('<').next().unwrap_or(head);
            head.rsplit("::").next().unwrap_or(head)
        })
        .unwrap_or(&kernel.name)
}

/// For each identifier followed by `(` or `<` on a line at most three lines after a
/// `__global__`, the 1-based line where it first appears so (one pass over the text).
fn cuda_definition_lines(text: &str) -> BTreeMap<&str, u32> {
    let mut lines = BTreeMap::new();
    let mut last_global: Option<usize> = None;
    for (index, line) in text.lines().enumerate() {
        if line.contains("__global__") {
            last_global = Some(index);
        }
        if !last_global.is_some_and(|global| index - global <= 3) {
            continue;
        }
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let bytes = line.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let is_ident = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_';
            if !is_ident(bytes[at]) {
                at += 1;
                continue;
            }
            let start = at;
            while at < bytes.len() && is_ident(bytes[at]) {
                at += 1;
            }
            let rest = line[at..].trim_start();
            if rest.starts_with('(') || rest.starts_with('<') {
                lines.entry(&line[start..at]).or_insert(number);
            }
        }
    }
    lines
}

/// The 1-based line of each `.entry` in a PTX text (one pass).
fn entry_definition_lines(ptx: &str) -> BTreeMap<String, u32> {
    let mut lines = BTreeMap::new();
    for (index, line) in ptx.lines().enumerate() {
        let text = line.trim_start();
        let text = text.strip_prefix(".visible ").unwrap_or(text);
        let text = text.strip_prefix(".weak ").unwrap_or(text);
        if let Some(rest) = text.strip_prefix(".entry ") {
            let name = rest
                .trim_start()
                .split(['(', ' ', '\t'])
                .next()
                .unwrap_or("");
            if !name.is_empty() {
                lines
                    .entry(name.to_string())
                    .or_insert(u32::try_from(index + 1).unwrap_or(u32::MAX));
            }
        }
    }
    lines
}

fn parse_levels(
    entries: &BTreeMap<String, String>,
    what: &str,
) -> Result<BTreeMap<LintId, Level>, Error> {
    let mut levels = BTreeMap::new();
    for (lint, level) in entries {
        let id: LintId = lint.parse().map_err(|error| Error::Config {
            message: format!("{what}: {error}"),
        })?;
        let level: Level = level.parse().map_err(|error| Error::Config {
            message: format!("{what} `{lint}`: {error}"),
        })?;
        levels.insert(id, level);
    }
    Ok(levels)
}

/// Checks the compiled sources against the declarations and writes the reports: parse, match
/// declarations, read the SASS where it matters, evaluate every kernel, compare with the
/// baseline, settle expectations, render; deny findings come back as [`Error::Denied`].
pub fn check(
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    declarations: &Declarations,
    cargo: &mut CargoLines,
) -> Result<Report, Error> {
    let mut report = for_build(context, Some(toolchain.release.clone()), None);
    report.sources = compiled
        .iter()
        .map(|source| SourceFile {
            path: display_path(&context.manifest_dir, &source.source),
            from_cache: source.from_cache,
        })
        .collect();
    require_reasons(context, declarations)?;
    let (kernels, _) = parse_compiled(compiled, context)?;
    let levels = Levels::read(context)?;
    let baseline = BaselineFile::load(context, cargo)?;
    check_kernel_tables(context, &kernels, declarations)?;
    let matching = match_declarations(&kernels, declarations)?;
    let demands = sass_demands(&kernels, &matching, declarations, &levels);
    let evidence = read_sass_evidence(context, toolchain, compiled, &kernels, &demands, cargo)?;
    let inputs = CheckInputs {
        context,
        toolchain,
        declarations,
        levels: &levels,
        evidence: &evidence,
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
    gathered.extend(unmatched_declarations(
        &kernels,
        &matching,
        declarations,
        &levels,
    ));
    // Asking ptxas its version costs a process: only when there is a baseline to stamp.
    let stamp = (context.bless || baseline.baseline.is_some())
        .then(|| ToolchainStamp::of(&context.stamped_flags, toolchain));
    let mut toolchain_changes = Vec::new();
    if let (Some(stamp), false) = (&stamp, context.bless) {
        let (found, changes) = baseline.compare(
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
    crate::expectations::settle(declarations, &levels, &mut gathered);
    let rendered_denials = render_findings(gathered, context, declarations, &mut report, cargo);
    if let (Some(stamp), true) = (stamp, context.bless) {
        baseline.bless(context, &report, stamp, cargo)?;
    }
    write_reports(context, &report)?;
    crate::facts::write(context, &crate::facts::of_report(&report, declarations))?;
    denied(context, &toolchain_changes, &rendered_denials)?;
    Ok(report)
}

/// `allow`/`expect` of a deny-by-default lint without a `reason` (unless the crate opts out).
fn require_reasons(context: &Context, declarations: &Declarations) -> Result<(), Error> {
    if context.metadata.require_reasons == Some(false) {
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

/// `missing_kernel` (or a family matching nothing) for every declaration no kernel took.
fn unmatched_declarations(
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
    levels: &Levels,
) -> Vec<Gathered> {
    let compiled_names: Vec<&str> = kernels.iter().map(|kernel| kernel.name.as_str()).collect();
    let mut gathered = Vec::new();
    for &declaration_index in &matching.unmatched {
        let declared = &declarations.kernels[declaration_index];
        let finding = match &declared.kernel.spec.family {
            Some(pattern) => evaluate::family_matches_nothing(pattern, &compiled_names),
            None => evaluate::missing_kernel(&declared.kernel.kernel_name, &compiled_names),
        };
        gathered.extend(Gathered::leveled(
            finding,
            &levels.sources(Some(declared), &declared.kernel.kernel_name),
            Some(declaration_index),
            &declared.kernel.kernel_name,
            false,
        ));
    }
    gathered
}

/// The package's baseline file (`occupancy.lock`, or `baseline = ...`) and what it holds.
struct BaselineFile {
    path: PathBuf,
    baseline: Option<Baseline>,
}

impl BaselineFile {
    /// Loaded when blessing too: blessing keeps the entries of archs this build did not check.
    fn load(context: &Context, cargo: &mut CargoLines) -> Result<BaselineFile, Error> {
        let path = context.manifest_dir.join(
            context
                .metadata
                .baseline
                .clone()
                .unwrap_or_else(|| PathBuf::from("occupancy.lock")),
        );
        let baseline = Baseline::load(&path)?;
        if path.exists() {
            cargo.rerun_if_changed(&path);
        }
        Ok(BaselineFile { path, baseline })
    }

    /// The regressions against the baseline, and the toolchain changes since it (said as
    /// warnings, and first in a failure: they may explain every regression).
    #[allow(clippy::too_many_arguments)]
    fn compare(
        &self,
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
        let comparison = crate::baseline::compare(baseline, &Baseline::of_report(report, stamp));
        let mut changes = Vec::new();
        for line in &comparison.toolchain_changes {
            cargo.warning(&format!(
                "occupancy: the toolchain changed since the baseline: {line}"
            ));
            changes.push(format!(
                "note: the toolchain changed since the baseline: {line}\n"
            ));
        }
        let found = baseline_findings(comparison.findings, kernels, matching, declarations, levels);
        (found, changes)
    }

    /// `OCCUPANCY_BLESS`: writes this build's numbers as the baseline.
    fn bless(
        self,
        context: &Context,
        report: &Report,
        stamp: ToolchainStamp,
        cargo: &mut CargoLines,
    ) -> Result<(), Error> {
        let blessed = Baseline::blessed(self.baseline, Baseline::of_report(report, &stamp));
        write_atomic(&self.path, blessed.to_text().as_bytes())?;
        cargo.warning(&format!(
            "occupancy: OCCUPANCY_BLESS is set: wrote the baseline {}",
            display_path(&context.manifest_dir, &self.path)
        ));
        Ok(())
    }
}

/// [`Error::Denied`] with every deny finding rendered, when there is one.
fn denied(
    context: &Context,
    toolchain_changes: &[String],
    rendered_denials: &[String],
) -> Result<(), Error> {
    if rendered_denials.is_empty() {
        return Ok(());
    }
    let count = rendered_denials.len();
    // A toolchain change is said first: it may explain every regression below.
    let mut rendered = toolchain_changes.concat();
    rendered.push_str(&rendered_denials.join("\n"));
    rendered.push_str(&format!(
        "\nerror: occupancy checks failed for `{}`: {count} error{} (full report: {})\n",
        context.crate_name,
        if count == 1 { "" } else { "s" },
        context.out_dir.join("occupancy.json").display()
    ));
    Err(Error::Denied { rendered, count })
}

/// Whether ptxas reported spill bytes for this kernel on this arch.
fn spills(record: &KernelRecord) -> bool {
    record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) > 0
}

/// The SASS lints, and `spills` (whose finding carries the hottest spill's line), that are above
/// `allow` for one kernel, with its declaration's levels as check evaluates them.
fn machine_code_lints(
    levels: &Levels,
    declared: Option<&Declared>,
    kernel_name: &str,
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
    .filter(|&lint| evaluate::resolve_level(lint, &sources) != Level::Allow)
    .collect()
}

/// What the SASS stage must read per source: the machine-code lints above `allow` for some
/// kernel of it, and the archs where such a kernel has local memory for them to read.
pub(crate) fn sass_demands(
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
    levels: &Levels,
) -> BTreeMap<PathBuf, crate::sass::SassDemand> {
    let mut demands: BTreeMap<PathBuf, crate::sass::SassDemand> = BTreeMap::new();
    for (index, kernel) in kernels.iter().enumerate() {
        let declared = matching
            .by_kernel
            .get(&index)
            .map(|&at| &declarations.kernels[at]);
        let enabled = machine_code_lints(levels, declared, &kernel.name);
        let reads_spills =
            enabled.contains(&LintId::Spills) || enabled.contains(&LintId::SpillInLoop);
        let reads_local = enabled.contains(&LintId::LocalArray);
        let demand = demands.entry(kernel.source.source.clone()).or_default();
        for (arch, record) in &kernel.records {
            let local = record.stack_frame_bytes.unwrap_or(0) > 0
                || record.local_memory_bytes.unwrap_or(0) > 0;
            if (spills(record) && reads_spills) || ((local || spills(record)) && reads_local) {
                demand.local_memory_archs.insert(arch.clone());
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
    let spilled: BTreeSet<(String, String)> = kernels
        .iter()
        .flat_map(|kernel| {
            kernel
                .records
                .iter()
                .filter(|(_, record)| spills(record))
                .map(|(arch, _)| (kernel.name.clone(), arch.clone()))
        })
        .collect();
    crate::sass::read_build_evidence(context, toolchain, compiled, demands, &spilled, cargo)
}

/// What checking one kernel needs besides the kernel.
struct CheckInputs<'a> {
    context: &'a Context,
    toolchain: &'a Toolchain,
    declarations: &'a Declarations,
    levels: &'a Levels,
    evidence: &'a crate::sass::SassEvidence,
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
        toolchain,
        declarations,
        levels,
        evidence,
    } = *inputs;
    let mut found: Vec<Gathered> = Vec::new();
    let mut rows = kernel_rows(context, kernel, declared, declarations)?;
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
    match declared {
        Some((declared, declaration_index)) => {
            let spec = &declared.kernel.spec;
            for mut leveled in evaluate::check_kernel(Launch::Declared(spec), &on, &level_sources) {
                if leveled.finding.lint == LintId::Spills {
                    crate::sass::note_hottest_spill(
                        &mut leveled.finding,
                        rows.iter().map(|(_, _, row)| row),
                    );
                    if let Some(help) = spill_free_help(
                        toolchain,
                        context,
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
                });
            }
        }
        None => {
            let block = rows
                .first()
                .map_or(evaluate::DEFAULT_UNDECLARED_BLOCK_THREADS, |(_, _, row)| {
                    row.block
                });
            let spec = KernelSpec::with_block(BlockDim::linear(block));
            for leveled in evaluate::check_kernel(Launch::Undeclared(&spec), &on, &level_sources) {
                found.push(Gathered {
                    leveled,
                    declaration: None,
                    kernel: kernel.name.clone(),
                    undeclared: true,
                    reason: None,
                });
            }
            let source = rows.first().and_then(|(_, _, row)| row.source.clone());
            let source_text = source.map_or_else(String::new, |source| source.to_string());
            found.extend(Gathered::leveled(
                evaluate::undeclared_kernel(&kernel.name, &source_text),
                &level_sources,
                None,
                &kernel.name,
                true,
            ));
        }
    }
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
    Ok((found, rows.into_iter().map(|(_, _, row)| row).collect()))
}

/// A finding of this build with its level, and what it concerns.
pub(crate) struct Gathered {
    pub(crate) leveled: LeveledFinding,
    /// The declaration it is shown at.
    pub(crate) declaration: Option<usize>,
    /// The compiled kernel (or the declared name, for `missing_kernel`).
    pub(crate) kernel: String,
    /// About an undeclared kernel: summarized with the others of its lint, not shown one by one.
    pub(crate) undeclared: bool,
    /// Why the declaration allowed or expects this finding (`reason = "..."`).
    pub(crate) reason: Option<String>,
}

impl Gathered {
    /// A finding made outside `check_kernel` (regression, missing or undeclared kernel), given
    /// its level from the same sources; `None` when it is allowed.
    pub(crate) fn leveled(
        finding: evaluate::Finding,
        sources: &LevelSources<'_>,
        declaration: Option<usize>,
        kernel: &str,
        undeclared: bool,
    ) -> Option<Gathered> {
        let level = evaluate::resolve_level(finding.lint, sources);
        (level != Level::Allow).then(|| Gathered {
            leveled: LeveledFinding { finding, level },
            declaration,
            kernel: kernel.to_string(),
            undeclared,
            reason: None,
        })
    }
}

/// The baseline's `regression` and `baseline_stale` findings, leveled like the kernel's others
/// (an arch-wide finding, about another toolchain, concerns no kernel: an empty name).
fn baseline_findings(
    findings: Vec<(Option<String>, evaluate::Finding)>,
    kernels: &[CompiledKernel<'_>],
    matching: &Matching,
    declarations: &Declarations,
    levels: &Levels,
) -> Vec<Gathered> {
    let mut gathered = Vec::new();
    for (kernel_name, finding) in findings {
        let kernel_name = kernel_name.unwrap_or_default();
        let declaration = kernels
            .iter()
            .position(|kernel| kernel.name == kernel_name)
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

/// The crate's lint levels: Cargo.toml (crate-wide and per kernel) and the environment.
pub(crate) struct Levels {
    crate_levels: BTreeMap<LintId, Level>,
    kernel_levels: BTreeMap<String, BTreeMap<LintId, Level>>,
    environment_levels: BTreeMap<LintId, Level>,
}

impl Levels {
    /// Levels set for every kernel alike (a command line's `--deny`/`--warn`/`--allow`), over
    /// the lints' defaults; no environment, no per-kernel configuration.
    pub(crate) fn uniform(levels: BTreeMap<LintId, Level>) -> Levels {
        Levels {
            crate_levels: levels,
            kernel_levels: BTreeMap::new(),
            environment_levels: BTreeMap::new(),
        }
    }

    fn read(context: &Context) -> Result<Levels, Error> {
        let crate_levels = parse_levels(
            &context.metadata.lints,
            "[package.metadata.occupancy.lints]",
        )?;
        let mut kernel_levels = BTreeMap::new();
        for (kernel, entries) in &context.metadata.kernel_lints {
            kernel_levels.insert(
                kernel.clone(),
                parse_levels(
                    entries,
                    &format!("[package.metadata.occupancy.kernels.{kernel}.lints]"),
                )?,
            );
        }
        Ok(Levels {
            crate_levels,
            kernel_levels,
            environment_levels: context.env_lint_levels.clone(),
        })
    }

    /// Where the levels of `kernel_name`'s findings come from, most specific first.
    pub(crate) fn sources<'a>(
        &'a self,
        declared: Option<&'a Declared>,
        kernel_name: &str,
    ) -> LevelSources<'a> {
        let kernel_config = self.kernel_levels.get(kernel_name).or_else(|| {
            declared.and_then(|declared| self.kernel_levels.get(&declared.kernel.rust_name))
        });
        LevelSources {
            attribute: declared.map(|declared| &declared.kernel.spec.lint_levels),
            kernel_config,
            environment: Some(&self.environment_levels),
            crate_config: Some(&self.crate_levels),
        }
    }
}

/// Which declaration checks which compiled kernel.
#[derive(Default)]
pub(crate) struct Matching {
    /// Kernel index -> declaration index.
    by_kernel: BTreeMap<usize, usize>,
    /// Declarations that matched no compiled kernel (exact names and families).
    unmatched: Vec<usize>,
}

/// Matches declarations to compiled kernels: an exact declaration by symbol (else a unique
/// demangled base name); every kernel no exact declaration took, by the one family pattern that
/// matches it. Exact beats pattern; two patterns matching one kernel is an error naming both.
fn match_declarations(
    kernels: &[CompiledKernel<'_>],
    declarations: &Declarations,
) -> Result<Matching, Error> {
    let mut by_kernel: BTreeMap<usize, usize> = BTreeMap::new();
    let mut unmatched = Vec::new();
    let mut families = Vec::new();
    for (declaration_index, declared) in declarations.kernels.iter().enumerate() {
        if declared.kernel.spec.family.is_some() {
            families.push(declaration_index);
            continue;
        }
        let wanted = &declared.kernel.kernel_name;
        let exact = kernels.iter().position(|kernel| &kernel.name == wanted);
        let by_demangled = || {
            let candidates: Vec<usize> = kernels
                .iter()
                .enumerate()
                .filter(|(_, kernel)| {
                    kernel
                        .demangled
                        .as_deref()
                        .and_then(|name| name.split('(').next())
                        .map(|base| base.rsplit("::").next() == Some(wanted) || base == wanted)
                        == Some(true)
                })
                .map(|(index, _)| index)
                .collect();
            (candidates.len() == 1).then(|| candidates[0])
        };
        match exact.or_else(by_demangled) {
            Some(index) => {
                by_kernel.insert(index, declaration_index);
            }
            None => unmatched.push(declaration_index),
        }
    }
    for &family_index in &families {
        let pattern = declarations.kernels[family_index]
            .kernel
            .kernel_name
            .as_str();
        let mut matched_any = false;
        for (kernel_index, kernel) in kernels.iter().enumerate() {
            if !spec::family_matches(pattern, &kernel.name) {
                continue;
            }
            matched_any = true;
            match by_kernel.get(&kernel_index) {
                None => {
                    by_kernel.insert(kernel_index, family_index);
                }
                Some(&other) if declarations.kernels[other].kernel.spec.family.is_some() => {
                    return Err(two_families(declarations, kernel, other, family_index));
                }
                Some(_) => {} // an exact declaration beats the pattern
            }
        }
        if !matched_any {
            unmatched.push(family_index);
        }
    }
    Ok(Matching {
        by_kernel,
        unmatched,
    })
}

fn two_families(
    declarations: &Declarations,
    kernel: &CompiledKernel<'_>,
    first: usize,
    second: usize,
) -> Error {
    let describe = |index: usize| {
        let declared = &declarations.kernels[index];
        let location = declarations.location(declared);
        format!(
            "`family = \"{}\"` ({}:{}:{})",
            declared.kernel.kernel_name, location.path, location.line, location.column
        )
    };
    Error::Config {
        message: format!(
            "kernel `{}` matches two family declarations, {} and {}: make the patterns disjoint, or declare `{}` on its own (an exact declaration beats every pattern)",
            kernel.name,
            describe(first),
            describe(second),
            kernel.name
        ),
    }
}

/// Every `[package.metadata.occupancy.kernels.<name>]` table must name a compiled kernel or a
/// declaration (Rust name, symbol or family pattern): a misspelt name would silently set nothing.
fn check_kernel_tables(
    context: &Context,
    kernels: &[CompiledKernel<'_>],
    declarations: &Declarations,
) -> Result<(), Error> {
    let known: Vec<&str> = kernels
        .iter()
        .map(|kernel| kernel.name.as_str())
        .chain(declarations.kernels.iter().flat_map(|declared| {
            [
                declared.kernel.rust_name.as_str(),
                declared.kernel.kernel_name.as_str(),
            ]
        }))
        .collect();
    for name in &context.metadata.package_kernel_tables {
        if known.contains(&name.as_str()) {
            continue;
        }
        let close =
            occupancy_core::lint::closest_names(name, known.iter().copied(), evaluate::NAMES_SHOWN);
        let hint = match close.as_slice() {
            [] => format!(
                "; the build compiled {} kernel{}",
                kernels.len(),
                if kernels.len() == 1 { "" } else { "s" }
            ),
            [one] => format!(": did you mean `{one}`?"),
            more => format!(
                ": did you mean one of {}?",
                more.iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Err(Error::Config {
            message: format!(
                "[package.metadata.occupancy.kernels.{name}] names no compiled kernel and no declaration{hint} (a kernel table is keyed by the compiled symbol or the Rust name)"
            ),
        });
    }
    Ok(())
}

/// Where a compiled kernel is defined: the PTX's line information (`-lineinfo`) for a `.cu`
/// source, so a kernel made by a C macro points at the macro's invocation and one in a header
/// at the header's line; else the source file (line 0).
fn kernel_location(context: &Context, kernel: &CompiledKernel<'_>) -> Location {
    let kind = match kernel.source.kind {
        crate::SourceKind::Ptx => LocationKind::PtxEntry,
        _ => LocationKind::CudaKernel,
    };
    match (&kernel.defined_at, kind) {
        (Some(defined_at), LocationKind::CudaKernel) => Location {
            kind,
            path: display_path(&context.manifest_dir, Path::new(&defined_at.file)),
            line: defined_at.line,
            column: 1,
        },
        _ => {
            let line = kernel.entry_line.unwrap_or(0);
            Location {
                kind,
                path: display_path(&context.manifest_dir, &kernel.source.source),
                line,
                column: u32::from(line > 0),
            }
        }
    }
}

/// The block an undeclared kernel is checked at: the crate's `block` (default
/// [`evaluate::DEFAULT_UNDECLARED_BLOCK_THREADS`]), or the kernel's compiled maximum
/// (`__launch_bounds__`) when that is smaller: it cannot be launched with more.
fn undeclared_block(context: &Context, kernel: &CompiledKernel<'_>) -> u32 {
    let crate_block = context
        .metadata
        .block_threads
        .unwrap_or(evaluate::DEFAULT_UNDECLARED_BLOCK_THREADS);
    let compiled_max = kernel
        .ptx
        .as_ref()
        .and_then(|ptx| ptx.maxntid.as_ref().or(ptx.reqntid.as_ref()))
        .map(|dims| dims.iter().product::<u32>());
    compiled_max.map_or(crate_block, |max| max.min(crate_block))
}

pub(crate) type ArchRow<'a> = (&'static ArchFacts, &'a KernelRecord, KernelRow);

/// One report row per target arch of `kernel` (those its declaration keeps), computed by the
/// report model (the one place the computed columns come from); the lints read the same rows.
pub(crate) fn kernel_rows<'a>(
    context: &Context,
    kernel: &'a CompiledKernel<'_>,
    declared: Option<(&Declared, usize)>,
    declarations: &Declarations,
) -> Result<Vec<ArchRow<'a>>, Error> {
    let spec = declared.map(|(declared, _)| &declared.kernel.spec);
    let block_threads = spec.map_or_else(
        || undeclared_block(context, kernel),
        |spec| spec.block.threads(),
    );
    let dynamic_smem_bytes = spec.map_or(0, |spec| spec.dynamic_smem_bytes);
    let arch_filter: Option<BTreeSet<String>> =
        spec.and_then(|spec| spec.archs.as_ref()).map(|archs| {
            archs
                .iter()
                .filter_map(|name| crate::SmArch::parse(name).ok())
                .map(|arch| arch.to_string())
                .collect()
        });
    if let (Some(filter), Some((declared, _))) = (&arch_filter, declared) {
        let not_built: Vec<&String> = filter
            .iter()
            .filter(|arch| !kernel.records.contains_key(*arch))
            .collect();
        if !not_built.is_empty() {
            let location = declarations.location(declared);
            return Err(Error::Config {
                message: format!(
                    "{}:{}:{}: kernel `{}` declares `archs` {:?}, but the build does not target {:?} (it targets {}); add them to the crate's archs or drop them from the attribute",
                    location.path,
                    location.line,
                    location.column,
                    kernel.name,
                    filter,
                    not_built,
                    kernel.records.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            });
        }
    }
    let source_location = kernel_location(context, kernel);
    let launch = RowLaunch {
        block: block_threads,
        dynamic_smem_bytes: u64::from(dynamic_smem_bytes),
        carveout_percent: None,
    };
    let mut rows = Vec::new();
    for (arch_name, record) in &kernel.records {
        if arch_filter
            .as_ref()
            .is_some_and(|filter| !filter.contains(arch_name))
        {
            continue;
        }
        let no_facts = |error: &dyn std::fmt::Display| {
            Error::Config {
            message: format!("{error}: occupancy-core has no facts for {arch_name}; remove it from the target archs"),
        }
        };
        let facts: &'static ArchFacts =
            arch::lookup(arch_name).map_err(|error| no_facts(&error))?;
        let mut row = KernelRow::from_record(record, kernel.ptx_on(arch_name), launch)
            .map_err(|error| no_facts(&error))?;
        row.crate_name = Some(context.crate_name.clone());
        row.ptx_target = match kernel.programs.get(arch_name) {
            Some((program, _)) => program.ptx_target.clone(),
            None => kernel.source.ptx_target.clone(),
        };
        row.source = Some(source_location.clone());
        if let Some((declared, _)) = declared {
            row.declaration = Some(declarations.location(declared));
            row.rust_name = Some(declared.kernel.rust_name.clone());
        }
        rows.push((facts, record, row));
    }
    Ok(rows)
}

/// Puts every finding in the report; prints warnings as `cargo:warning` lines and returns the
/// rendered errors. Findings about undeclared kernels are summarized: one line per lint and
/// level, the full list in the report.
fn render_findings(
    gathered: Vec<Gathered>,
    context: &Context,
    declarations: &Declarations,
    report: &mut Report,
    cargo: &mut CargoLines,
) -> Vec<String> {
    let mut rendered_denials = Vec::new();
    let summaries = evaluate::summarize(
        gathered
            .iter()
            .filter(|gathered| gathered.undeclared)
            .map(|gathered| (&gathered.leveled, gathered.kernel.as_str())),
    );
    let sources: BTreeMap<&str, Location> = report
        .kernels
        .iter()
        .filter_map(|row| Some((row.name.as_str(), row.source.clone()?)))
        .collect();
    let ptx_targets: BTreeMap<(&str, &str), &str> = report
        .kernels
        .iter()
        .filter_map(|row| {
            Some((
                (row.name.as_str(), row.arch.as_str()),
                row.ptx_target.as_deref()?,
            ))
        })
        .collect();
    let mut findings = Vec::new();
    for gathered in &gathered {
        let declared = gathered
            .declaration
            .map(|index| &declarations.kernels[index]);
        let mut finding = report_finding(gathered, declared, context, declarations, &sources);
        if let Some(arch) = &finding.arch {
            if let Some(ptx_target) = ptx_targets.get(&(gathered.kernel.as_str(), arch.as_str())) {
                let note = occupancy_core::report::program_note(arch, ptx_target);
                finding.notes.push(note);
            }
        }
        if !gathered.undeclared {
            match finding.level {
                Level::Deny => {
                    rendered_denials.push(render_denial(&finding, declared, declarations))
                }
                Level::Warn => {
                    cargo.warning(&format!("occupancy: {}", diagnostics::one_line(&finding)))
                }
                Level::Allow => {}
            }
        }
        findings.push(finding);
    }
    let report_path = report_display_path(context);
    for summary in &summaries {
        if let Some(denial) = render_summary(summary, &report_path, &sources, cargo) {
            rendered_denials.push(denial);
        }
    }
    report.findings.extend(findings);
    rendered_denials
}

/// One gathered finding as the report has it: located at its declaration (else at the
/// kernel's definition), its reason said in a note.
fn report_finding(
    gathered: &Gathered,
    declared: Option<&Declared>,
    context: &Context,
    declarations: &Declarations,
    sources: &BTreeMap<&str, Location>,
) -> Finding {
    let LeveledFinding { finding, level } = &gathered.leveled;
    let mut notes = finding.notes.clone();
    if let Some(reason) = &gathered.reason {
        let expected = declared
            .is_some_and(|declared| declared.kernel.spec.expected_lints.contains(&finding.lint));
        let word = if expected { "expect" } else { level.as_str() };
        notes.push(format!(
            "`{word}({})` in the declaration: {reason}",
            finding.lint
        ));
    }
    Finding {
        lint: finding.lint,
        level: *level,
        crate_name: Some(context.crate_name.clone()),
        kernel: (!gathered.kernel.is_empty()).then(|| gathered.kernel.clone()),
        arch: finding.arch.clone(),
        message: finding.message.clone(),
        notes,
        help: finding.help.clone(),
        location: match declared {
            Some(declared) => Some(declarations.location(declared)),
            None => sources.get(gathered.kernel.as_str()).cloned(),
        },
        reason: gathered.reason.clone(),
    }
}

/// A deny finding as rustc renders an error, with the declaration's attribute underlined.
fn render_denial(
    finding: &Finding,
    declared: Option<&Declared>,
    declarations: &Declarations,
) -> String {
    let source = declared.map(|declared| {
        let span = declared.kernel.attribute;
        (
            &declarations.sources[declared.source_index],
            (span.start.line, span.start.column),
            (span.end.line, span.end.column),
        )
    });
    diagnostics::render(&finding.into(), source)
}

/// One lint's summary over undeclared kernels: a rendered error when it denies, else a warning.
fn render_summary(
    summary: &evaluate::FindingSummary,
    report_path: &str,
    sources: &BTreeMap<&str, Location>,
    cargo: &mut CargoLines,
) -> Option<String> {
    let message = summary.message(report_path);
    let notes: Vec<String> = summary
        .kernels
        .iter()
        .take(evaluate::NAMES_SHOWN)
        .filter_map(|kernel| {
            Some(format!(
                "`{kernel}` is defined at {}",
                sources.get(kernel.as_str())?
            ))
        })
        .collect();
    let help = format!(
        "declare each kernel next to its Rust stub with `#[occupancy::kernel(block = ...)]` (one `family = \"prefix_*\"` declaration covers a family), set the launch undeclared kernels are checked at with `block = N` under `[package.metadata.occupancy]`, or set `{}` under `[package.metadata.occupancy.lints]`",
        summary.lint.config_line(Level::Warn)
    );
    let diagnostic = diagnostics::Diagnostic {
        id: summary.lint.as_str(),
        deny: summary.level == Level::Deny,
        message: &message,
        arch: None,
        notes: &notes,
        help: Some(&help),
    };
    if summary.level == Level::Deny {
        return Some(diagnostics::render(&diagnostic, None));
    }
    cargo.warning(&format!("occupancy: warning[{}]: {message}", summary.lint));
    None
}

/// `target/occupancy/<crate>.json` as a user finds it: relative to the directory holding
/// `target/` when that is the package's or one of its ancestors (the workspace root).
fn report_display_path(context: &Context) -> String {
    let Some(target) = crate::report::target_dir(&context.out_dir) else {
        return context.out_dir.join("occupancy.json").display().to_string();
    };
    let path = target
        .join("occupancy")
        .join(format!("{}.json", context.crate_name));
    match target.parent() {
        Some(root) if context.manifest_dir.starts_with(root) => path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string(),
        _ => path.display().to_string(),
    }
}

/// For a spilling kernel compiled with `min_blocks_per_sm = B`: re-runs ptxas on the same PTX
/// with `.minnctapersm` lowered (B-1, B-2, ... 1) and returns a help line naming the largest value
/// with no spills, verified, not estimated.
fn spill_free_help(
    toolchain: &Toolchain,
    context: &Context,
    kernel: &CompiledKernel<'_>,
    declared: &DeclaredKernel,
    arch: Option<&str>,
) -> Option<String> {
    let arch = arch?;
    let blocks = declared.spec.min_blocks_per_sm?;
    let ptx_path = kernel
        .programs
        .get(arch)
        .map_or(&kernel.source.ptx, |(program, _)| &program.ptx);
    let ptx_text = std::fs::read_to_string(ptx_path).ok()?;
    let directive = minnctapersm_position(&ptx_text, &kernel.name)?;
    let probe_dir = context.out_dir.join("occupancy").join("probe");
    std::fs::create_dir_all(&probe_dir).ok()?;
    for candidate in (1..blocks).rev() {
        let patched = format!(
            "{}.minnctapersm {candidate}{}",
            &ptx_text[..directive.start],
            &ptx_text[directive.end..]
        );
        let ptx_path = probe_dir.join(format!("{}-{arch}-{candidate}.ptx", kernel.name));
        std::fs::write(&ptx_path, &patched).ok()?;
        // Not through the compiler cache: sccache 0.16 refuses `nvcc -cubin x.ptx` ("PCH not
        // supported by nvcc"), and a probe that fails would only weaken the help line.
        let mut command = toolchain.command_without_wrapper();
        command
            .args(["-cubin", &format!("-arch={arch}"), "-Xptxas", "-v", "-o"])
            .arg(probe_dir.join("probe.cubin"))
            .arg(&ptx_path);
        let _ = render_command(&command);
        let output = command.output().ok()?;
        if !output.status.success() {
            return None;
        }
        let log = String::from_utf8_lossy(&output.stderr);
        let parsed = ptxas::parse_log(&log).ok()?;
        let record = parsed
            .kernels
            .iter()
            .find(|record| record.entry && record.name == kernel.name && record.arch == arch)?;
        if record.spill_store_bytes.unwrap_or(0) + record.spill_load_bytes.unwrap_or(0) == 0 {
            let threads = declared.spec.block.threads();
            let launch = RowLaunch {
                block: threads,
                dynamic_smem_bytes: u64::from(declared.spec.dynamic_smem_bytes),
                carveout_percent: None,
            };
            let mut row = KernelRow::from_record(record, kernel.ptx_on(arch), launch).ok()?;
            row.max_threads_per_block = Some(threads);
            row.compute(arch::lookup(arch).ok()?);
            return Some(format!(
                "`min_blocks_per_sm = {candidate}` lets ptxas keep `{}` spill-free on {arch} ({} registers per thread, {} blocks per SM, {:.0}% occupancy; checked by re-running ptxas on this PTX)",
                kernel.name,
                row.registers,
                row.blocks_per_sm,
                row.occupancy * 100.0
            ));
        }
    }
    Some(format!(
        "even `min_blocks_per_sm = 1` spills on {arch} (checked by re-running ptxas): reduce live values in `{}`, or accept the spills with `max_spill_bytes = N`",
        kernel.name
    ))
}

/// The byte range of `.minnctapersm N` in the directives of `.entry <name>`.
fn minnctapersm_position(ptx: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let entry = ptx.find(&format!(".entry {name}("))?;
    let body = entry + ptx[entry..].find('{')?;
    let relative = ptx[entry..body].find(".minnctapersm")?;
    let start = entry + relative;
    let end = start + ptx[start..].find('\n').unwrap_or(body - start);
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }],
            ptx,
            binary: None,
            compiler_log: log.to_string(),
            dependencies: Vec::new(),
            from_cache: false,
            wrapper_failure: None,
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
        let unmatched: Vec<&str> = matching
            .unmatched
            .iter()
            .map(|&index| declarations.kernels[index].kernel.rust_name.as_str())
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
        let error = match_declarations(&kernels, &declarations)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("kernel `affine_f32` matches two family declarations")
                && error.contains("`family = \"affine_*\"` (src/lib.rs:1:1)")
                && error.contains("`family = \"*_f32\"` (src/lib.rs:3:1)"),
            "{error}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_kernel_table_naming_no_kernel_is_an_error_with_a_suggestion() {
        let dir = std::env::temp_dir().join(format!("occupancy-tables-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = compiled(&dir, "");
        let kernels = kernels_named(&source, &["spill", "saxpy"]);
        let declarations = declarations_of(FAMILIES);
        let mut context = context_for(&["sm_90"], &dir);
        context.metadata.package_kernel_tables = vec!["saxpy".into(), "affine".into()];
        check_kernel_tables(&context, &kernels, &declarations).unwrap();
        context.metadata.package_kernel_tables.push("spil".into());
        let error = check_kernel_tables(&context, &kernels, &declarations)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("[package.metadata.occupancy.kernels.spil] names no compiled kernel")
                && error.contains("did you mean `spill`?"),
            "{error}"
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
        assert_eq!(undeclared_block(&context, &kernels[0]), 256);
        context.metadata.block_threads = Some(1024);
        assert_eq!(undeclared_block(&context, &kernels[0]), 1024);
        kernels[0].ptx = ptxas::parse_ptx_directives(
            ".visible .entry uneg_f32(\n)\n.maxntid 512, 1, 1\n{\nret;\n}\n",
        )
        .into_iter()
        .next();
        assert_eq!(undeclared_block(&context, &kernels[0]), 512);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
