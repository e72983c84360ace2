//! `cargo occupancy check PATHS... [-- NVCC ARGS]`: the build gate for CUDA code that is not built
//! through a Rust build.rs. `.cu` files (directories recursively) are compiled and `.ptx` files
//! assembled by `occupancy-build`'s engine (the same nvcc invocation, cache and report parsing a
//! build uses), any other file is read as a ptxas `-v` log (a CMake or make build's output);
//! every kernel is evaluated on every target architecture for the launch given by `--block` and
//! `--dynamic-smem` by the build gate's lint evaluation (`occupancy_core::lint::evaluate`), and
//! the findings decide the exit code: 0 clean, 1 a deny finding stands, 2 usage or tool errors
//! (nvcc missing or failing, unreadable input, a log that holds a compiler error). Logs are read
//! through the streaming reader `parse` uses (`log_input`); a kernel a log has on one requested
//! arch but not another is a `missing_kernel` finding.
//!
//! `.cu`/`.ptx` inputs go to `occupancy_build::Build::check_sources`, the build's own pipeline
//! without a package (compile, parse, rows, the SASS stage, evaluation at the command line's
//! launch); rows read from logs are evaluated by the same `occupancy_build::evaluate_at_launch`.
//! This module parses the command line, reads logs and renders: it evaluates nothing itself.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use occupancy_build::{
    evaluate_at_launch, sort_rows, Build, CheckedRow, SourceCheck, TrackedEnv, NVCC_WHEELS,
};
use occupancy_core::lint::evaluate::LevelSources;
use occupancy_core::lint::{Level, LintId};
use occupancy_core::ptxas::PtxEntry;
use occupancy_core::report::{Finding, Location, LocationKind, Report, RowLaunch};

use super::log_input;
use super::report::{emit, fail, row_from_record, OutputArgs, UsageError};
use crate::cache_dir::CacheDir;
use crate::outputs::{check_outputs, Output};

/// `cargo occupancy check` arguments.
#[derive(clap::Args, Debug)]
#[command(
    about = "Compile .cu/.ptx files (or read ptxas logs) and check every kernel like the build gate does"
)]
pub struct Args {
    /// .cu and .ptx files, directories (searched recursively for .cu and .ptx), or ptxas `-v` logs.
    #[arg(required = true, value_name = "PATHS")]
    pub paths: Vec<PathBuf>,
    /// Target architecture (repeatable); default: as a build resolves them (OCCUPANCY_ARCHS,
    /// CUDA_COMPUTE_CAP, the GPU in this machine, else sm_80 and sm_90).
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Threads per block of the launch to evaluate; default: 256, or the kernel's
    /// `__launch_bounds__` maximum when that is smaller.
    #[arg(long, value_name = "N")]
    pub block: Option<u32>,
    /// Dynamic shared memory per block of the launch, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 0, value_parser = crate::flags::smem_bytes)]
    pub dynamic_smem: u64,
    /// Make a lint deny-level (repeatable).
    #[arg(long = "deny", value_name = "LINT")]
    pub deny: Vec<String>,
    /// Make a lint warn-level (repeatable).
    #[arg(long = "warn", value_name = "LINT")]
    pub warn: Vec<String>,
    /// Make a lint allow-level (repeatable).
    #[arg(long = "allow", value_name = "LINT")]
    pub allow: Vec<String>,
    /// Directory for nvcc's outputs and the per-file cache, yours alone (default:
    /// $XDG_CACHE_HOME/occupancy or ~/.cache/occupancy, created private, kept between runs).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Arguments passed to nvcc for every .cu file (after `--`): includes, defines, -std=...
    #[arg(last = true, value_name = "NVCC ARGS")]
    pub nvcc_args: Vec<String>,
}

/// The block evaluated when `--block` is not given (and the kernel allows it).
const DEFAULT_BLOCK: u32 = 256;

/// What an input path is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Input {
    Cuda(PathBuf),
    Ptx(PathBuf),
    Log(PathBuf),
}

/// Runs `check`.
pub fn run(args: Args) -> ExitCode {
    match run_inner(&args) {
        Ok(report) => {
            if report.has_deny() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => fail(&error),
    }
}

fn run_inner(args: &Args) -> Result<Report, UsageError> {
    if args.block == Some(0) {
        return Err(UsageError("--block must be at least 1 thread".into()));
    }
    check_outputs(&outputs(args), &input_paths(args))?;
    let levels = Levels::from_args(args)?;
    for arch in &args.archs {
        super::arch::lookup_arch(arch).map_err(|error| UsageError(format!("--arch: {error}")))?;
    }
    let inputs = collect_inputs(&args.paths)?;
    let launch = RowLaunch {
        block: args.block.unwrap_or(DEFAULT_BLOCK),
        dynamic_smem_bytes: args.dynamic_smem,
        carveout_percent: None,
    };
    let compile_inputs: Vec<&Input> = inputs
        .iter()
        .filter(|input| !matches!(input, Input::Log(_)))
        .collect();
    let mut report = Report::default();
    if !compile_inputs.is_empty() {
        report = check_compiled(args, &compile_inputs, &levels)?;
    }
    let mut log_rows: Vec<CheckedRow> = Vec::new();
    let mut log_findings = Vec::new();
    for input in &inputs {
        if let Input::Log(path) = input {
            let (rows, missing) = rows_of_log(path, launch, &args.archs, &levels)?;
            log_rows.extend(rows);
            log_findings.extend(missing);
        }
    }
    if report.kernels.is_empty() && log_rows.is_empty() && log_findings.is_empty() {
        return Err(UsageError("no kernels found in the given paths".into()));
    }
    if args.block.is_none() {
        for CheckedRow { row, .. } in &mut log_rows {
            if let (Some(bound), Ok(facts)) = (
                row.max_threads_per_block,
                occupancy_core::arch::lookup(&row.arch),
            ) {
                if bound < row.block {
                    row.block = bound;
                    row.compute(facts);
                }
            }
        }
    }
    sort_rows(&mut log_rows);
    report
        .findings
        .extend(evaluate_at_launch(&log_rows, &levels.settings));
    report.findings.extend(log_findings);
    report
        .kernels
        .extend(log_rows.into_iter().map(|checked| checked.row));
    let title = args
        .paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    emit(&report, &args.output, &title)?;
    Ok(report)
}

/// Compiles and checks the .cu/.ptx inputs through `Build::check_sources`.
fn check_compiled(args: &Args, inputs: &[&Input], levels: &Levels) -> Result<Report, UsageError> {
    let cache_dir = CacheDir::choose(args.cache_dir.as_deref())?;
    let mut build = Build::new();
    for input in inputs {
        let absolute = std::fs::canonicalize(input_path_buf(input))
            .unwrap_or_else(|_| input_path_buf(input).to_path_buf());
        match input {
            Input::Cuda(_) => build.file(absolute),
            Input::Ptx(_) => build.ptx_file(absolute),
            Input::Log(_) => &mut build,
        };
    }
    for arch in &args.archs {
        build.arch(arch);
    }
    for flag in &args.nvcc_args {
        build.flag(flag);
    }
    if let Ok(current) = std::env::current_dir().and_then(std::fs::canonicalize) {
        build.manifest_dir(current);
    }
    build.out_dir(&cache_dir.path).env(TrackedEnv::new());
    let mut request = SourceCheck::default();
    request.block_threads = args.block;
    request.dynamic_smem_bytes = args.dynamic_smem;
    request.lint_levels = levels.settings.clone();
    let output = build.check_sources(&request).map_err(toolchain_error)?;
    for source in &output.without_kernels {
        eprintln!(
            "note: {} defines no kernel (device functions only): nothing to check in it",
            display_path(source)
        );
    }
    for warning in &output.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(output.report)
}

/// What `check` writes: `--html` and the `--cache-dir` it compiles into.
fn outputs(args: &Args) -> Vec<Output<'_>> {
    let mut outputs = args.output.outputs();
    outputs.extend(args.cache_dir.iter().map(|dir| Output {
        flag: "--cache-dir",
        path: dir,
        is_dir: true,
    }));
    outputs
}

/// What `check` reads: the paths, and the files named by nvcc arguments (`-include file`, a
/// linked object), which an output must not replace either. Include directories (`-I.`) are not
/// claimed whole: a report beside the sources is fine, a report over one of them is not.
fn input_paths(args: &Args) -> Vec<&Path> {
    let mut inputs: Vec<&Path> = args.paths.iter().map(PathBuf::as_path).collect();
    inputs.extend(
        args.nvcc_args
            .iter()
            .map(Path::new)
            .filter(|path| path.is_file()),
    );
    inputs
}

/// Expands directories and classifies every path; unreadable paths are errors.
fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, UsageError> {
    let mut inputs = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path)
            .map_err(|error| UsageError(format!("cannot read {}: {error}", path.display())))?;
        if metadata.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            if found.is_empty() {
                return Err(UsageError(format!(
                    "{} holds no .cu or .ptx file",
                    path.display()
                )));
            }
            inputs.extend(found);
        } else {
            crate::inputs::check_input_file("the input", path)?;
            inputs.push(classify(path));
        }
    }
    // `check dir dir/a.cu` or `check a.cu ./a.cu` name one file twice: check it once.
    let mut seen = std::collections::BTreeSet::new();
    inputs.retain(|input| {
        let path = input_path_buf(input);
        seen.insert(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
    });
    Ok(inputs)
}

fn input_path_buf(input: &Input) -> &Path {
    match input {
        Input::Cuda(path) | Input::Ptx(path) | Input::Log(path) => path,
    }
}

fn classify(path: &Path) -> Input {
    match path.extension().and_then(|extension| extension.to_str()) {
        Some("cu") => Input::Cuda(path.to_path_buf()),
        Some("ptx") => Input::Ptx(path.to_path_buf()),
        _ => Input::Log(path.to_path_buf()),
    }
}

fn walk(dir: &Path, found: &mut Vec<Input>) -> Result<(), UsageError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| UsageError(format!("cannot read {}: {error}", dir.display())))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(&path, found)?;
        } else if matches!(
            path.extension().and_then(|extension| extension.to_str()),
            Some("cu" | "ptx")
        ) {
            found.push(classify(&path));
        }
    }
    Ok(())
}

/// Lint levels: the registry's defaults, `OCCUPANCY_LINT_<ID>` variables, then
/// `--allow/--warn/--deny` (last wins), resolved by the gate's own `check_kernel`.
struct Levels {
    settings: std::collections::BTreeMap<LintId, Level>,
}

impl Levels {
    fn from_args(args: &Args) -> Result<Levels, UsageError> {
        let mut overrides = Vec::new();
        for (names, level) in [
            (&args.allow, Level::Allow),
            (&args.warn, Level::Warn),
            (&args.deny, Level::Deny),
        ] {
            for name in names {
                let lint = name
                    .parse::<LintId>()
                    .map_err(|error| UsageError(format!("--{level}: {error}")))?;
                overrides.push((lint, level));
            }
        }
        Ok(Levels::new(&overrides))
    }

    fn new(overrides: &[(LintId, Level)]) -> Levels {
        let mut settings = std::collections::BTreeMap::new();
        for lint in LintId::ALL {
            if let Some(level) = std::env::var(lint.env_var())
                .ok()
                .and_then(|value| value.trim().parse::<Level>().ok())
            {
                settings.insert(lint, level);
            }
        }
        for (id, level) in overrides {
            settings.insert(*id, *level);
        }
        Levels { settings }
    }

    fn sources(&self) -> LevelSources<'_> {
        LevelSources {
            environment: Some(&self.settings),
            ..LevelSources::default()
        }
    }

    fn level(&self, lint: LintId) -> Level {
        occupancy_core::lint::evaluate::resolve_level(lint, &self.sources())
    }
}

/// The build's toolchain error in `check`'s words: the build's "nvcc not found" suggests
/// `OCCUPANCY_SKIP`, which only a build reads; `check` can read ptxas logs instead.
fn toolchain_error(error: occupancy_build::Error) -> UsageError {
    match error {
        occupancy_build::Error::NvccNotFound { looked } => UsageError(format!(
            "nvcc, the CUDA compiler, was not found (looked at: {looked}); `check` needs it for .cu and .ptx inputs.\n\
             Install the CUDA toolkit and set CUDA_HOME, or `pip install {NVCC_WHEELS}` and set \
             CUDA_HOME=<site-packages>/nvidia/cu13, or point NVCC at the nvcc executable; \
             or check a ptxas log (`nvcc -Xptxas -v` output) instead of the sources."
        )),
        other => UsageError(other.to_string()),
    }
}

/// Rows of a ptxas log file (CMake, make, a CI log), read through the shared streaming reader
/// (`log_input`), and a `missing_kernel` finding for each kernel the log has on some
/// architecture but not on a requested one. A log holding a compiler error is an error of the
/// run: its kernels' numbers are not a passing compile's.
fn rows_of_log(
    path: &Path,
    launch: RowLaunch,
    archs: &[String],
    levels: &Levels,
) -> Result<(Vec<CheckedRow>, Vec<Finding>), UsageError> {
    let wanted: Vec<&str> = archs
        .iter()
        .filter_map(|arch| occupancy_core::arch::lookup(arch).ok())
        .map(|facts| facts.name)
        .collect();
    let log = display_path(path);
    // Kernel → (display name, the architectures the log has it for).
    let mut seen: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    let mut rows = Vec::new();
    let output = log_input::read_log(path, |record| {
        if !record.errors.is_empty() {
            return Ok(()); // reported below as the run's error
        }
        let mut row =
            row_from_record(&record, None::<&PtxEntry>, launch).map_err(|error| error.0)?;
        seen.entry(record.name.clone())
            .or_insert_with(|| (row.demangled.clone(), BTreeSet::new()))
            .1
            .insert(row.arch.clone());
        if !wanted.is_empty() && !wanted.contains(&row.arch.as_str()) {
            return Ok(());
        }
        row.source = Some(Location {
            kind: LocationKind::Log,
            path: log.clone(),
            line: u32::try_from(record.line_number).unwrap_or(0),
            column: 0,
        });
        rows.push(CheckedRow {
            row,
            record,
            ptx: None,
        });
        Ok(())
    })
    .map_err(UsageError)?;
    let name = path.display().to_string();
    for note in log_input::reading_notes(&name, &output) {
        eprintln!("note: {note}");
    }
    for diagnostic in &output.diagnostics {
        eprintln!("warning: {name}:{diagnostic}");
    }
    log_input::compile_errors(&name, &output).map_err(UsageError)?;
    let missing =
        missing_on_requested_archs(&seen, &wanted, &log, levels.level(LintId::MissingKernel));
    Ok((rows, missing))
}

/// `missing_kernel` for every kernel of the log that has no record for a requested arch.
fn missing_on_requested_archs(
    seen: &BTreeMap<String, (String, BTreeSet<String>)>,
    wanted: &[&str],
    log: &str,
    level: Level,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (kernel, (shown, present)) in seen {
        for arch in wanted.iter().filter(|arch| !present.contains(**arch)) {
            let present: Vec<&str> = present.iter().map(String::as_str).collect();
            findings.push(Finding {
                lint: LintId::MissingKernel,
                level,
                crate_name: None,
                kernel: Some(kernel.clone()),
                arch: Some((*arch).to_string()),
                message: format!(
                    "kernel `{shown}` has no ptxas record for {arch} in {log}, though `--arch {arch}` asks for it (the log has it for {})",
                    present.join(", ")
                ),
                notes: Vec::new(),
                help: Some(format!(
                    "compile for {arch} too (nvcc -gencode arch=compute_XX,code={arch}) and check the new log, or leave `--arch {arch}` out"
                )),
                location: Some(Location {
                    kind: LocationKind::Log,
                    path: log.to_string(),
                    line: 0,
                    column: 0,
                }),
                reason: None,
            });
        }
    }
    findings
}

/// The path as given relative to the current directory when inside it.
fn display_path(path: &Path) -> String {
    let current = std::env::current_dir()
        .ok()
        .and_then(|dir| std::fs::canonicalize(dir).ok());
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match current
        .as_ref()
        .and_then(|dir| absolute.strip_prefix(dir).ok())
    {
        Some(relative) => relative.display().to_string(),
        None => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_override_defaults_last_wins() {
        let levels = Levels::new(&[
            (LintId::Spills, Level::Warn),
            (LintId::StackFrame, Level::Deny),
        ]);
        assert_eq!(levels.level(LintId::Spills), Level::Warn);
        assert_eq!(levels.level(LintId::StackFrame), Level::Deny);
        assert_eq!(levels.level(LintId::Unlaunchable), Level::Deny);
    }
}
