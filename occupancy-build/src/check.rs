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
use occupancy_core::lint::evaluate::{self, CompiledOnArch, LevelSources};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::ptxas::{self, KernelRecord, PtxEntry};
use occupancy_core::spec::{self, DeclaredKernel};

use crate::baseline::Baseline;
use crate::compile::{render_command, CompiledSource};
use crate::diagnostics::{self, SourceText};
use crate::engine::{CargoLines, Context};
use crate::fsutil::{write_atomic, write_if_changed};
use crate::report::{for_build, write_reports};
use crate::toolchain::Toolchain;
use crate::{Build, Error};
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
    fn location(&self, declared: &Declared) -> Location {
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
pub fn scan_declarations(
    build: &Build,
    context: &Context,
    cargo: &mut CargoLines,
) -> Result<Declarations, Error> {
    let roots: Vec<PathBuf> = if build.rust_sources.is_empty() {
        vec![context.manifest_dir.join("src")]
    } else {
        build
            .rust_sources
            .iter()
            .map(|path| {
                if path.is_absolute() {
                    path.clone()
                } else {
                    context.manifest_dir.join(path)
                }
            })
            .collect()
    };
    let mut files = Vec::new();
    for root in &roots {
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
    let mut kernels: Vec<&Declared> = declarations.kernels.iter().collect();
    kernels.sort_by(|left, right| left.kernel.kernel_name.cmp(&right.kernel.kernel_name));
    for declared in kernels {
        let name = &declared.kernel.kernel_name;
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let spec = &declared.kernel.spec;
        let threads = spec.block.threads();
        let location = declarations.location(declared);
        header.push_str(&format!(
            "\n// {name}: declared at {}:{}:{}\n",
            location.path, location.line, location.column
        ));
        header.push_str(&format!(
            "#define OCCUPANCY_BLOCK_THREADS_{name} {threads}\n"
        ));
        let launch_bounds = match spec.min_blocks_per_sm {
            Some(blocks) => {
                header.push_str(&format!(
                    "#define OCCUPANCY_MIN_BLOCKS_PER_SM_{name} {blocks}\n"
                ));
                format!("{threads}, {blocks}")
            }
            None => format!("{threads}"),
        };
        header.push_str(&format!(
            "#define OCCUPANCY_LAUNCH_BOUNDS_{name} {launch_bounds}\n"
        ));
        let mut bounds = format!("__launch_bounds__({launch_bounds})");
        if let Some(registers) = spec.max_registers {
            header.push_str(&format!(
                "#define OCCUPANCY_MAX_REGISTERS_{name} {registers}\n"
            ));
            bounds = match spec.min_blocks_per_sm {
                // __maxnreg__ cannot be combined with a minimum block count.
                Some(_) => bounds,
                None => format!("__launch_bounds__({threads}) __maxnreg__({registers})"),
            };
        }
        header.push_str(&format!("#define OCCUPANCY_BOUNDS_{name} {bounds}\n"));
    }
    let path = context.out_dir.join("occupancy_bounds.h");
    write_if_changed(&path, header.as_bytes())?;
    Ok(path)
}

/// A compiled entry function on every arch it was compiled for.
#[derive(Debug)]
struct CompiledKernel<'a> {
    name: String,
    demangled: Option<String>,
    source: &'a CompiledSource,
    ptx: Option<PtxEntry>,
    records: BTreeMap<String, KernelRecord>,
}

fn parse_compiled<'a>(
    compiled: &'a [CompiledSource],
    context: &Context,
) -> Result<Vec<CompiledKernel<'a>>, Error> {
    let mut kernels = Vec::new();
    let archs: BTreeSet<String> = context.archs.iter().map(ToString::to_string).collect();
    for source in compiled {
        let unreadable = |message: String| Error::UnreadableOutput {
            file: source.source.clone(),
            message,
        };
        let ptx_text = std::fs::read_to_string(&source.ptx).map_err(|error| Error::Io {
            path: source.ptx.clone(),
            error,
        })?;
        let entries = ptxas::parse_ptx_directives(&ptx_text);
        let parsed = match ptxas::parse_log(&source.compiler_log) {
            Ok(parsed) => parsed,
            Err(ptxas::ParseError::NoKernels { .. }) if entries.is_empty() => continue,
            Err(error) => return Err(unreadable(format!("ptxas's report: {error}"))),
        };
        if let Some(diagnostic) = parsed.diagnostics.first() {
            return Err(unreadable(format!(
                "ptxas's report has a line that is not understood (line {}: `{}`): {}",
                diagnostic.line_number, diagnostic.line, diagnostic.message
            )));
        }
        let mut by_name: BTreeMap<String, CompiledKernel<'a>> = BTreeMap::new();
        for record in parsed.kernels.into_iter().filter(|record| record.entry) {
            let kernel = by_name
                .entry(record.name.clone())
                .or_insert_with(|| CompiledKernel {
                    name: record.name.clone(),
                    demangled: record.demangled.clone(),
                    source,
                    ptx: entries
                        .iter()
                        .find(|entry| entry.name == record.name)
                        .cloned(),
                    records: BTreeMap::new(),
                });
            kernel.records.insert(record.arch.clone(), record);
        }
        // Fail closed: every entry in the PTX must have a report on every target arch.
        for entry in &entries {
            let Some(kernel) = by_name.get(&entry.name) else {
                return Err(unreadable(format!(
                    "the PTX defines kernel `{}` but ptxas reported nothing for it",
                    entry.name
                )));
            };
            for arch in &archs {
                if !kernel.records.contains_key(arch) {
                    return Err(unreadable(format!(
                        "ptxas reported nothing for kernel `{}` on {arch}",
                        entry.name
                    )));
                }
            }
        }
        kernels.extend(by_name.into_values());
    }
    Ok(kernels)
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

fn env_levels(build: &Build) -> Result<BTreeMap<LintId, Level>, Error> {
    let mut levels = BTreeMap::new();
    for id in LintId::ALL {
        let variable = id.env_var();
        if let Some(value) = build.env.get(&variable) {
            let level: Level = value.trim().parse().map_err(|error| Error::Config {
                message: format!("{variable}: {error}"),
            })?;
            levels.insert(id, level);
        }
    }
    Ok(levels)
}

/// Checks the compiled sources against the declarations and writes the reports.
pub fn check(
    build: &Build,
    context: &Context,
    toolchain: &Toolchain,
    compiled: &[CompiledSource],
    declarations: &Declarations,
    cargo: &mut CargoLines,
) -> Result<Report, Error> {
    let mut report = for_build(context, Some(toolchain.release.clone()), None);
    for source in compiled {
        report.sources.push(SourceFile {
            path: display_path(&context.manifest_dir, &source.source),
            from_cache: source.from_cache,
        });
    }
    let kernels = parse_compiled(compiled, context)?;
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
    let environment_levels = env_levels(build)?;
    let bless = build.env.flag("OCCUPANCY_BLESS");
    let baseline_path = context.manifest_dir.join(
        context
            .metadata
            .baseline
            .clone()
            .unwrap_or_else(|| PathBuf::from("occupancy.lock")),
    );
    let baseline = if bless {
        None
    } else {
        Baseline::load(&baseline_path)?
    };
    if baseline_path.exists() {
        cargo.rerun_if_changed(&baseline_path);
    }

    // Match declarations to compiled kernels: exact symbol, else a unique demangled base name.
    let mut matched: BTreeMap<usize, usize> = BTreeMap::new(); // kernel index -> declaration index
    let mut unmatched_declarations = Vec::new();
    for (declaration_index, declared) in declarations.kernels.iter().enumerate() {
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
                matched.insert(index, declaration_index);
            }
            None => unmatched_declarations.push(declaration_index),
        }
    }

    let mut raw_findings: Vec<(evaluate::Finding, Option<usize>, String)> = Vec::new(); // finding, declaration, kernel name
    for (kernel_index, kernel) in kernels.iter().enumerate() {
        let declared = matched
            .get(&kernel_index)
            .map(|&index| (&declarations.kernels[index], index));
        let spec = declared.map(|(declared, _)| &declared.kernel.spec);
        let block_threads = spec
            .map(|spec| spec.block.threads())
            .or_else(|| {
                kernel
                    .ptx
                    .as_ref()
                    .and_then(|ptx| ptx.maxntid.as_ref().or(ptx.reqntid.as_ref()))
                    .map(|dims| dims.iter().product())
            })
            .unwrap_or(256);
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
        let source_location = Location {
            kind: match kernel.source.kind {
                crate::SourceKind::Ptx => LocationKind::PtxEntry,
                _ => LocationKind::CudaKernel,
            },
            path: display_path(&context.manifest_dir, &kernel.source.source),
            line: 0,
            column: 0,
        };
        let launch = RowLaunch {
            block: block_threads,
            dynamic_smem_bytes: u64::from(dynamic_smem_bytes),
            carveout_percent: None,
        };
        // One row per target arch, computed by the report model (the one place the computed
        // columns come from); the lints read the same rows.
        let mut rows: Vec<(&'static ArchFacts, &KernelRecord, KernelRow)> = Vec::new();
        for (arch_name, record) in &kernel.records {
            if arch_filter
                .as_ref()
                .is_some_and(|filter| !filter.contains(arch_name))
            {
                continue;
            }
            let facts: &'static ArchFacts = arch::lookup(arch_name).map_err(|error| Error::Config {
                message: format!("{error}: occupancy-core has no facts for {arch_name}; remove it from the target archs"),
            })?;
            let mut row = KernelRow::from_record(record, kernel.ptx.as_ref(), launch).map_err(
                |error| Error::Config {
                    message: format!("{error}: occupancy-core has no facts for {arch_name}; remove it from the target archs"),
                },
            )?;
            row.crate_name = Some(context.crate_name.clone());
            row.ptx_target = kernel.source.ptx_target.clone();
            row.source = Some(source_location.clone());
            if let Some((declared, _)) = declared {
                row.declaration = Some(declarations.location(declared));
                row.rust_name = Some(declared.kernel.rust_name.clone());
            }
            rows.push((facts, record, row));
        }
        for (_, _, row) in &rows {
            let numbers = crate::baseline::numbers_of(row);
            if let Some(before) = baseline
                .as_ref()
                .and_then(|baseline| baseline.kernels.get(&kernel.name))
                .and_then(|archs| archs.get(&row.arch))
            {
                if let Some(finding) =
                    evaluate::regression(&kernel.name, &row.arch, before, &numbers)
                {
                    raw_findings.push((
                        finding,
                        declared.map(|(_, index)| index),
                        kernel.name.clone(),
                    ));
                }
            }
        }
        match declared {
            Some((declared, declaration_index)) => {
                let evaluated: Vec<_> = rows
                    .iter()
                    .map(|(facts, record, row)| (*facts, *record, row.occupancy_on(facts)))
                    .collect();
                let on: Vec<CompiledOnArch<'_>> = evaluated
                    .iter()
                    .map(|(facts, record, occupancy)| CompiledOnArch {
                        arch: facts,
                        record,
                        ptx: kernel.ptx.as_ref(),
                        occupancy,
                    })
                    .collect();
                for mut finding in evaluate::evaluate_declared(&declared.kernel.spec, &on) {
                    if finding.lint == LintId::Spills {
                        if let Some(help) = spill_free_help(
                            toolchain,
                            context,
                            kernel,
                            &declared.kernel,
                            finding.arch.as_deref(),
                        ) {
                            finding.help = Some(help);
                        }
                    }
                    raw_findings.push((finding, Some(declaration_index), kernel.name.clone()));
                }
            }
            None => raw_findings.push((
                evaluate::undeclared_kernel(&kernel.name, &source_location.path),
                None,
                kernel.name.clone(),
            )),
        }
        report
            .kernels
            .extend(rows.into_iter().map(|(_, _, row)| row));
    }
    let compiled_names: Vec<&str> = kernels.iter().map(|kernel| kernel.name.as_str()).collect();
    for &declaration_index in &unmatched_declarations {
        let declared = &declarations.kernels[declaration_index];
        raw_findings.push((
            evaluate::missing_kernel(&declared.kernel.kernel_name, &compiled_names),
            Some(declaration_index),
            declared.kernel.kernel_name.clone(),
        ));
    }

    // Levels, rendering, cargo lines.
    let mut rendered_denials = Vec::new();
    for (finding, declaration_index, kernel_name) in raw_findings {
        let declared = declaration_index.map(|index| &declarations.kernels[index]);
        let kernel_config = kernel_levels.get(&kernel_name).or_else(|| {
            declared.and_then(|declared| kernel_levels.get(&declared.kernel.rust_name))
        });
        let level = evaluate::resolve_level(
            finding.lint,
            &LevelSources {
                attribute: declared.map(|declared| &declared.kernel.spec.lint_levels),
                kernel_config,
                environment: Some(&environment_levels),
                crate_config: Some(&crate_levels),
            },
        );
        if level == Level::Allow {
            continue;
        }
        let mut notes = finding.notes;
        let ptx_target = report
            .kernels
            .iter()
            .find(|row| row.name == kernel_name && Some(&row.arch) == finding.arch.as_ref())
            .and_then(|row| row.ptx_target.as_deref());
        if let (Some(arch), Some(ptx_target)) = (&finding.arch, ptx_target) {
            notes.push(occupancy_core::report::program_note(arch, ptx_target));
        }
        let finding = Finding {
            lint: finding.lint,
            level,
            crate_name: Some(context.crate_name.clone()),
            kernel: Some(kernel_name),
            arch: finding.arch,
            message: finding.message,
            notes,
            help: finding.help,
            location: declared.map(|declared| declarations.location(declared)),
        };
        match level {
            Level::Deny => {
                let source = declared.map(|declared| {
                    let span = declared.kernel.attribute;
                    (
                        &declarations.sources[declared.source_index],
                        (span.start.line, span.start.column),
                        (span.end.line, span.end.column),
                    )
                });
                rendered_denials.push(diagnostics::render(&(&finding).into(), source));
            }
            _ => cargo.warning(&format!("occupancy: {}", diagnostics::one_line(&finding))),
        }
        report.findings.push(finding);
    }

    if bless {
        write_atomic(
            &baseline_path,
            Baseline::of_report(&report).to_text().as_bytes(),
        )?;
        cargo.warning(&format!(
            "occupancy: OCCUPANCY_BLESS is set: wrote the baseline {}",
            display_path(&context.manifest_dir, &baseline_path)
        ));
    }
    write_reports(context, &report)?;
    if !rendered_denials.is_empty() {
        let count = rendered_denials.len();
        let mut rendered = rendered_denials.join("\n");
        rendered.push_str(&format!(
            "\nerror: occupancy checks failed for `{}`: {count} error{} (full report: {})\n",
            context.crate_name,
            if count == 1 { "" } else { "s" },
            context.out_dir.join("occupancy.json").display()
        ));
        return Err(Error::Denied { rendered, count });
    }
    Ok(report)
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
    let ptx_text = std::fs::read_to_string(&kernel.source.ptx).ok()?;
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
            let mut row = KernelRow::from_record(record, kernel.ptx.as_ref(), launch).ok()?;
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
    fn finds_the_minnctapersm_of_one_entry() {
        let ptx = ".visible .entry other(\n)\n.minnctapersm 2\n{\n}\n.visible .entry hot(\n\t.param .u32 hot_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 8\n{\n}\n";
        let range = minnctapersm_position(ptx, "hot").unwrap();
        assert_eq!(&ptx[range], ".minnctapersm 8");
        assert!(minnctapersm_position(ptx, "missing").is_none());
    }

    fn context_for(archs: &[&str], dir: &Path) -> Context {
        Context {
            out_dir: dir.to_path_buf(),
            manifest_dir: dir.to_path_buf(),
            crate_name: "k".into(),
            metadata: crate::config::Metadata::default(),
            archs: archs
                .iter()
                .map(|arch| crate::SmArch::parse(arch).unwrap())
                .collect(),
            jit_archs: Vec::new(),
            arch_source: crate::ArchSource::Builder,
            skip_reason: None,
        }
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
        assert_eq!(parse_compiled(&good, &context).unwrap().len(), 1);
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
}
