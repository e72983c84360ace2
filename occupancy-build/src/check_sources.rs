//! Checking CUDA sources outside any package: [`Build::check_sources`], the library entry
//! `cargo occupancy check` calls. The same stages as a build (compile, parse, rows, the SASS
//! stage), with the launch of the request standing in for a declaration: every kernel is
//! evaluated at it by [`evaluate_at_launch`], which the CLI also uses for the rows it reads from
//! ptxas logs. Nothing is written but the compile cache under `.out_dir(...)`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use occupancy_core::lint::evaluate::{check_kernel, CompiledOnArch, Launch, LevelSources};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::ptxas::{KernelRecord, PtxEntry};
use occupancy_core::report::{Finding, KernelRow, Report};
use occupancy_core::spec::{BlockDim, KernelSpec};

use crate::bounds_notes::DefinedBounds;
use crate::check;
use crate::compile::{self, LineTables, Product};
use crate::declarations::Declarations;
use crate::levels::Levels;
use crate::matching::Matching;
use crate::parse::{self, CompiledKernel};
use crate::rows;
use crate::sass::{SassEvidence, SassTools};
use crate::{Build, Error, Toolchain};

/// The launch and levels kernels are checked at when nothing declares them.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SourceCheck {
    /// Threads per block; `None`: 256, or the kernel's `__launch_bounds__` maximum when smaller.
    pub block_threads: Option<u32>,
    /// Dynamic shared memory per block.
    pub dynamic_smem_bytes: u64,
    /// Levels over the lints' defaults, for every kernel (`--deny`/`--warn`/`--allow`).
    pub lint_levels: BTreeMap<LintId, Level>,
}

/// What [`Build::check_sources`] found.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SourceCheckOutput {
    /// A row per kernel and arch (sorted by file, line, kernel, arch) and every finding.
    pub report: Report,
    /// Sources that define no kernel (device functions only): nothing was checked in them.
    pub without_kernels: Vec<PathBuf>,
    /// Why some check did not run (the SASS tools missing), and what to know about how a source
    /// was compiled (an input changed during its compile, a cache entry not trusted), for
    /// warnings.
    pub warnings: Vec<String>,
}

/// A report row with what it was computed from: the evaluation reads the record and the PTX.
#[derive(Debug, Clone)]
pub struct CheckedRow {
    pub row: KernelRow,
    pub record: KernelRecord,
    pub ptx: Option<PtxEntry>,
}

impl Build {
    /// Compiles this builder's sources (`.file`, `.source_dir`, `.ptx_file`, flags, archs) into
    /// the compile cache under `.out_dir(...)`, without a package: no Cargo.toml, no
    /// declarations, no reports written; then checks every kernel at `request`'s launch, as
    /// `cargo occupancy check` does. Paths are shown relative to `.manifest_dir(...)` (default:
    /// the current directory). Deny findings are in the report (`Report::has_deny`), not an
    /// error.
    pub fn check_sources(&self, request: &SourceCheck) -> Result<SourceCheckOutput, Error> {
        let context = self.resolve_without_package()?;
        let toolchain = Toolchain::find(&self.env, false, &context.tool_timeouts)?;
        // Every lint on every kernel: the SASS stage reads every kernel with local memory.
        let compiled =
            compile::compile_all(&context, &toolchain, Product::Ptx, LineTables::Everywhere)
                .map_err(|error| {
                    crate::bounds_notes::annotate(error, &DefinedBounds::without_package())
                })?;
        let (kernels, without_kernels) = parse::parse_compiled(&compiled, &context)?;
        let levels = Levels::uniform(request.lint_levels.clone());
        let declarations = Declarations::default();
        let demands = check::sass_demands(
            &kernels,
            &Matching::default(),
            &declarations,
            &levels,
            context.read_all_sass,
            occupancy_core::lint::evaluate::resolve_level,
        );
        let spilled = check::spilled_on(&kernels);
        let evidence = crate::sass::read_evidence(
            &SassTools::locate(&context, &toolchain),
            &compiled,
            &demands,
            &|kernel, arch| spilled.contains(&(kernel.to_owned(), arch.to_owned())),
        )?;
        let mut checked = Vec::new();
        for kernel in &kernels {
            for (facts, record, mut row) in
                rows::kernel_rows(&context, kernel, None, None, &declarations)?
            {
                row.crate_name = None;
                if let Some(block) = request.block_threads {
                    row.block = block;
                }
                row.dynamic_smem_bytes = request.dynamic_smem_bytes;
                row.compute(facts);
                row.sass = evidence.facts_of(&kernel.name, &row.arch, &context.manifest_dir);
                checked.push(CheckedRow {
                    row,
                    record: record.clone(),
                    ptx: kernel.ptx_on(&record.arch).cloned(),
                });
            }
        }
        sort_rows(&mut checked);
        let mut findings = evaluate_at_launch(&checked, &request.lint_levels);
        findings.extend(sass_findings(&checked, &kernels, &evidence, &levels));
        Ok(SourceCheckOutput {
            report: Report {
                kernels: checked.into_iter().map(|checked| checked.row).collect(),
                findings,
                ..Report::default()
            },
            without_kernels: without_kernels.into_iter().map(PathBuf::from).collect(),
            warnings: compiled
                .iter()
                .flat_map(|source| source.notes.iter().cloned())
                .chain(evidence.unavailable_warning())
                .collect(),
        })
    }
}

/// Grouped by file, then line, kernel and architecture.
pub fn sort_rows(rows: &mut [CheckedRow]) {
    rows.sort_by_cached_key(|CheckedRow { row, .. }| {
        let (path, line) = row.source.as_ref().map_or((String::new(), 0), |source| {
            (source.path.clone(), source.line)
        });
        let arch = occupancy_core::arch::lookup(&row.arch)
            .map_or((u32::MAX, u32::MAX), |facts| (facts.major, facts.minor));
        (path, line, row.name.clone(), arch)
    });
}

/// The SASS findings of every row, leveled like the others.
fn sass_findings(
    checked: &[CheckedRow],
    kernels: &[CompiledKernel<'_>],
    evidence: &SassEvidence,
    levels: &Levels,
) -> Vec<Finding> {
    let sources: BTreeMap<&str, &std::path::Path> = kernels
        .iter()
        .map(|kernel| (kernel.name.as_str(), kernel.source.source.as_path()))
        .collect();
    let mut findings = Vec::new();
    for CheckedRow { row, .. } in checked {
        let Some(source) = sources.get(row.name.as_str()) else {
            continue;
        };
        for finding in evidence.findings(source, row) {
            let level = occupancy_core::lint::evaluate::resolve_level(
                finding.lint,
                &levels.sources(None, &row.name),
            );
            findings.push(report_finding(row, finding, level));
        }
    }
    findings
}

/// The lints of every kernel at the launch of its rows (sorted by [`sort_rows`]; a kernel's
/// rows are adjacent): the build gate's evaluation (`check_kernel`, worded for a launch from the
/// command line) with the defaults of every limit (no spills, no stack, no minimum occupancy).
/// `bounds_mismatch` is left out: there is no declaration for compiled bounds to disagree with.
pub fn evaluate_at_launch(rows: &[CheckedRow], levels: &BTreeMap<LintId, Level>) -> Vec<Finding> {
    let sources = LevelSources {
        attribute: None,
        kernel_config: None,
        environment: None,
        crate_config: Some(levels),
    };
    let mut findings = Vec::new();
    for group in rows.chunk_by(|a, b| {
        a.row.name == b.row.name
            && a.row.source.as_ref().map(|source| &source.path)
                == b.row.source.as_ref().map(|source| &source.path)
    }) {
        let first = &group[0].row;
        if !first.entry {
            continue;
        }
        let mut spec = KernelSpec::with_block(BlockDim::linear(first.block));
        spec.dynamic_smem_bytes = u32::try_from(first.dynamic_smem_bytes).unwrap_or(u32::MAX);
        let evaluated: Vec<_> = group
            .iter()
            .filter_map(|item| {
                let arch = occupancy_core::arch::lookup(&item.row.arch).ok()?;
                Some((arch, item, item.row.occupancy_on(arch)))
            })
            .collect();
        let on: Vec<CompiledOnArch<'_>> = evaluated
            .iter()
            .map(|(arch, item, occupancy)| CompiledOnArch {
                arch,
                record: &item.record,
                ptx: item.ptx.as_ref(),
                occupancy,
            })
            .collect();
        for leveled in check_kernel(Launch::CommandLine(&spec), &on, &sources) {
            findings.push(report_finding(first, leveled.finding, leveled.level));
        }
    }
    findings
}

/// A finding of `row`'s kernel, for the report: people read the demangled name, the symbol
/// stays in `kernel` (and SARIF's logical location); located at the kernel's definition.
fn report_finding(
    row: &KernelRow,
    finding: occupancy_core::lint::evaluate::Finding,
    level: Level,
) -> Finding {
    let readable = |text: &str| {
        if row.demangled != row.name && !row.demangled.is_empty() {
            text.replace(&format!("`{}`", row.name), &format!("`{}`", row.demangled))
        } else {
            text.to_string()
        }
    };
    Finding {
        lint: finding.lint,
        level,
        crate_name: None,
        kernel: Some(row.name.clone()),
        arch: finding.arch,
        message: readable(&finding.message),
        notes: finding.notes.iter().map(|note| readable(note)).collect(),
        help: finding.help,
        location: row.source.clone(),
        reason: None,
    }
}
