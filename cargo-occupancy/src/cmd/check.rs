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
//! The engine's `compile_and_check` is not used as a whole: a check of plain CUDA code has no
//! declarations and no crate. So this calls its compile step (`engine::compile_all`) and the
//! gate's one evaluate-then-level step (`occupancy_core::lint::evaluate::check_kernel`) with the
//! command line's launch standing in for a declaration.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use occupancy_build::{Build, CompiledSource, Product, Toolchain, TrackedEnv, NVCC_WHEELS};
use occupancy_core::lint::evaluate::{check_kernel, CompiledOnArch, Launch, LevelSources};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::ptxas::{
    entry_source_lines, parse_log, parse_ptx_directives, KernelRecord, PtxEntry,
};
use occupancy_core::report::{Finding, KernelRow, Location, LocationKind, Report, RowLaunch};
use occupancy_core::spec::{BlockDim, KernelSpec};

use super::log_input;
use super::report::{emit, fail, row_from_record, OutputArgs, UsageError};
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
    /// Directory for nvcc's outputs and the per-file cache (default: a directory under the
    /// system's temporary directory, kept between runs).
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
    let mut checked: Vec<Checked> = Vec::new();
    let compile_inputs: Vec<&Input> = inputs
        .iter()
        .filter(|input| !matches!(input, Input::Log(_)))
        .collect();
    if !compile_inputs.is_empty() {
        for compiled in compile(args, &compile_inputs)? {
            checked.extend(rows_of_compiled(&compiled, launch)?);
        }
    }
    let mut log_findings = Vec::new();
    for input in &inputs {
        if let Input::Log(path) = input {
            let (rows, missing) = rows_of_log(path, launch, &args.archs, &levels)?;
            checked.extend(rows);
            log_findings.extend(missing);
        }
    }
    if checked.is_empty() && log_findings.is_empty() {
        return Err(UsageError("no kernels found in the given paths".into()));
    }
    if args.block.is_none() {
        for Checked { row, .. } in &mut checked {
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
    // Grouped by file, then kernel, then architecture.
    checked.sort_by_cached_key(|Checked { row, .. }| {
        let (path, line) = row.source.as_ref().map_or((String::new(), 0), |source| {
            (source.path.clone(), source.line)
        });
        let arch = occupancy_core::arch::lookup(&row.arch)
            .map_or((u32::MAX, u32::MAX), |facts| (facts.major, facts.minor));
        (path, line, row.name.clone(), arch)
    });
    let mut findings = evaluate(&checked, &levels);
    findings.extend(log_findings);
    let report = Report {
        kernels: checked.into_iter().map(|checked| checked.row).collect(),
        findings,
        ..Report::default()
    };
    let title = args
        .paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    emit(&report, &args.output, &title)?;
    Ok(report)
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

/// One kernel on one architecture: the row, and what it was computed from.
#[derive(Debug)]
struct Checked {
    row: KernelRow,
    record: KernelRecord,
    ptx: Option<PtxEntry>,
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

/// One input's compiled sources, or the engine's error.
type CompileResult = Result<Vec<CompiledSource>, String>;

/// Compiles every .cu/.ptx input through the build helper's engine, one source per task, on as
/// many threads as the machine has cores, with a progress bar on a terminal.
fn compile(args: &Args, inputs: &[&Input]) -> Result<Vec<CompiledSource>, UsageError> {
    let cache_dir = match &args.cache_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join("cargo-occupancy-check"),
    };
    // The engine reads a package manifest for `[package.metadata.occupancy]`; a plain CUDA
    // project has none, so check runs as an empty package of its own.
    let manifest_dir = cache_dir.join("package");
    std::fs::create_dir_all(&manifest_dir).map_err(|error| {
        UsageError(format!("cannot create {}: {error}", manifest_dir.display()))
    })?;
    std::fs::write(
        manifest_dir.join("Cargo.toml"),
        "[package]\nname = \"occupancy-check\"\nversion = \"0.0.0\"\n",
    )
    .map_err(|error| {
        UsageError(format!(
            "cannot write into {}: {error}",
            manifest_dir.display()
        ))
    })?;
    let env = TrackedEnv::new();
    let toolchain = Toolchain::find(&env, false).map_err(toolchain_error)?;
    let builds: Vec<Build> = inputs
        .iter()
        .map(|input| {
            let mut build = Build::new();
            let absolute =
                |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            match input {
                Input::Cuda(path) => build.file(absolute(path)),
                Input::Ptx(path) => build.ptx_file(absolute(path)),
                Input::Log(_) => &mut build,
            };
            for arch in &args.archs {
                build.arch(arch);
            }
            for flag in &args.nvcc_args {
                build.flag(flag);
            }
            build
                .out_dir(&cache_dir)
                .manifest_dir(&manifest_dir)
                .cargo_metadata(false);
            build
        })
        .collect();
    let progress = Progress::new(builds.len());
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, CompileResult)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism()
        .map_or(2, usize::from)
        .min(builds.len())
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::SeqCst);
                let Some(build) = builds.get(index) else {
                    break;
                };
                let result = occupancy_build::engine::context(build)
                    .and_then(|context| {
                        occupancy_build::engine::compile_all(
                            build,
                            &toolchain,
                            &context,
                            Product::Ptx,
                        )
                    })
                    .map_err(|error| error.to_string());
                progress.tick(&input_path(inputs[index]));
                results
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push((index, result));
            });
        }
    });
    progress.finish();
    let mut results = results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    results.sort_by_key(|(index, _)| *index);
    let mut compiled = Vec::new();
    let mut errors = Vec::new();
    for (_, result) in results {
        match result {
            Ok(sources) => compiled.extend(sources),
            Err(error) => errors.push(error),
        }
    }
    if !errors.is_empty() {
        return Err(UsageError(errors.join("\n\n")));
    }
    Ok(compiled)
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

fn input_path(input: &Input) -> String {
    match input {
        Input::Cuda(path) | Input::Ptx(path) | Input::Log(path) => path.display().to_string(),
    }
}

/// A one-line progress bar on stderr, only when stderr is a terminal.
struct Progress {
    total: usize,
    done: AtomicUsize,
    enabled: bool,
}

impl Progress {
    fn new(total: usize) -> Progress {
        Progress {
            total,
            done: AtomicUsize::new(0),
            enabled: std::io::stderr().is_terminal(),
        }
    }

    fn tick(&self, what: &str) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.enabled {
            return;
        }
        let width = 30;
        let filled = width * done / self.total.max(1);
        let mut stderr = std::io::stderr().lock();
        let _ = write!(
            stderr,
            "\r\x1b[2K[{}{}] {done}/{} {}",
            "=".repeat(filled),
            " ".repeat(width - filled),
            self.total,
            what.chars()
                .rev()
                .take(60)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<String>()
        );
        let _ = stderr.flush();
    }

    fn finish(&self) {
        if self.enabled {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

/// Rows of one compiled source: its ptxas report, with the launch bounds from its PTX.
fn rows_of_compiled(
    compiled: &CompiledSource,
    launch: RowLaunch,
) -> Result<Vec<Checked>, UsageError> {
    let ptx_text = std::fs::read_to_string(&compiled.ptx).unwrap_or_default();
    let entries = parse_ptx_directives(&ptx_text);
    let source_lines = entry_source_lines(&ptx_text);
    let parsed = match parse_log(&compiled.compiler_log) {
        Ok(parsed) => parsed,
        // Device functions only (a helper file in a scanned directory): nothing to check in
        // it, which is no reason to stop checking the others.
        Err(occupancy_core::ptxas::ParseError::NoKernels { .. }) if entries.is_empty() => {
            eprintln!(
                "note: {} defines no kernel (device functions only): nothing to check in it",
                compiled.source.display()
            );
            return Ok(Vec::new());
        }
        Err(error) => {
            return Err(UsageError(format!(
                "cannot read ptxas's report for {}: {error}",
                compiled.source.display()
            )))
        }
    };
    let source_text = std::fs::read_to_string(&compiled.source).unwrap_or_default();
    let source_lines_text: Vec<&str> = source_text.lines().collect();
    let entries_by_name: std::collections::HashMap<&str, _> = entries
        .iter()
        .map(|entry| (entry.name.as_str(), entry))
        .collect();
    // One record per kernel and arch: a kernel's definition line is searched for once.
    let mut definition_lines: std::collections::HashMap<&str, u32> =
        std::collections::HashMap::new();
    let mut rows = Vec::new();
    for record in &parsed.kernels {
        let ptx = entries_by_name.get(record.name.as_str()).copied();
        let mut row = row_from_record(record, ptx, launch)?;
        row.ptx_target = compiled.ptx_target.clone();
        let kind = if compiled
            .source
            .extension()
            .is_some_and(|extension| extension == "ptx")
        {
            LocationKind::PtxEntry
        } else {
            LocationKind::CudaKernel
        };
        // Where the kernel is defined: the PTX's `-lineinfo` (a macro's invocation, a header's
        // line) for a .cu source, else the first line naming it in the source.
        let (path, line) = match source_lines.get(&record.name) {
            Some(defined_at) if kind == LocationKind::CudaKernel => {
                (display_path(Path::new(&defined_at.file)), defined_at.line)
            }
            _ => (
                display_path(&compiled.source),
                *definition_lines
                    .entry(record.name.as_str())
                    .or_insert_with(|| kernel_line(&source_lines_text, record)),
            ),
        };
        row.source = Some(Location {
            kind,
            path,
            line,
            column: if line > 0 { 1 } else { 0 },
        });
        rows.push(Checked {
            row,
            record: record.clone(),
            ptx: ptx.cloned(),
        });
    }
    Ok(rows)
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
) -> Result<(Vec<Checked>, Vec<Finding>), UsageError> {
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
        rows.push(Checked {
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

/// The 1-based line of the kernel's definition in a .cu or .ptx file (0 when not found): the
/// first line naming the kernel at or after a `__global__` / `.entry`.
fn kernel_line(lines: &[&str], record: &KernelRecord) -> u32 {
    let short = record
        .demangled
        .as_deref()
        .and_then(|demangled| demangled.split('(').next())
        .map(|head| {
            head.rsplit(' ')
                .next()
                .unwrap_or(head)
                .split('<')
                .next()
                .unwrap_or(head)
                .rsplit("::")
                .next()
                .unwrap_or(head)
        })
        .unwrap_or(&record.name)
        .to_string();
    let (call, template, spaced) = (
        format!("{short}("),
        format!("{short}<"),
        format!("{short} ("),
    );
    for (index, line) in lines.iter().enumerate() {
        let names_kernel = line.contains(&call)
            || line.contains(&template)
            || line.contains(&spaced)
            || line.contains(&record.name);
        if !names_kernel {
            continue;
        }
        let window = &lines[index.saturating_sub(3)..=index];
        if window
            .iter()
            .any(|text| text.contains("__global__") || text.contains(".entry"))
        {
            return u32::try_from(index + 1).unwrap_or(0);
        }
    }
    0
}

/// The lints of every kernel, evaluated by the build gate's own evaluation
/// (`occupancy_core::lint::evaluate::check_kernel`, worded for a launch from the command
/// line): each compiled kernel is checked with the launch of the command line (`--block`, `--dynamic-smem`) and the defaults of
/// every limit (no spills, no stack, no minimum occupancy). `bounds_mismatch` is left out: there
/// is no declaration for the compiled bounds to disagree with.
fn evaluate(checked: &[Checked], levels: &Levels) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut index = 0;
    while index < checked.len() {
        // The rows of one kernel (sorted by file, kernel, arch), entries only.
        let first = &checked[index];
        let mut end = index + 1;
        while end < checked.len()
            && checked[end].row.name == first.row.name
            && checked[end].row.source.as_ref().map(|source| &source.path)
                == first.row.source.as_ref().map(|source| &source.path)
        {
            end += 1;
        }
        let group = &checked[index..end];
        index = end;
        if !first.row.entry {
            continue;
        }
        let mut spec = KernelSpec::with_block(BlockDim::linear(first.row.block));
        spec.dynamic_smem_bytes = u32::try_from(first.row.dynamic_smem_bytes).unwrap_or(u32::MAX);
        let mut evaluated = Vec::new();
        for item in group {
            let Ok(arch) = occupancy_core::arch::lookup(&item.row.arch) else {
                continue;
            };
            let occupancy = item.row.occupancy_on(arch);
            evaluated.push((arch, item, occupancy));
        }
        let on: Vec<CompiledOnArch<'_>> = evaluated
            .iter()
            .map(|(arch, item, occupancy)| CompiledOnArch {
                arch,
                record: &item.record,
                ptx: item.ptx.as_ref(),
                occupancy,
            })
            .collect();
        let readable = |text: &str| {
            if first.row.demangled != first.row.name && !first.row.demangled.is_empty() {
                text.replace(
                    &format!("`{}`", first.row.name),
                    &format!("`{}`", first.row.demangled),
                )
            } else {
                text.to_string()
            }
        };
        for leveled in check_kernel(Launch::CommandLine(&spec), &on, &levels.sources()) {
            let finding = leveled.finding;
            findings.push(Finding {
                lint: finding.lint,
                level: leveled.level,
                crate_name: None,
                kernel: Some(first.row.name.clone()),
                arch: finding.arch,
                // People read the demangled name; the symbol stays in `kernel` (and SARIF's
                // logical location).
                message: readable(&finding.message),
                notes: finding.notes.iter().map(|note| readable(note)).collect(),
                help: finding.help,
                location: first.row.source.clone(),
                reason: None,
            });
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, demangled: Option<&str>) -> KernelRecord {
        let log = format!(
            "ptxas info    : Compiling entry function '{name}' for 'sm_90'\nptxas info    : Function properties for {name}\n    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\nptxas info    : Used 10 registers, used 0 barriers, 356 bytes cmem[0]\n"
        );
        let mut parsed = parse_log(&log).unwrap();
        let mut record = parsed.kernels.remove(0);
        record.demangled = demangled.map(str::to_string);
        record
    }

    #[test]
    fn kernel_line_finds_c_and_template_kernels() {
        let text = "#include <x>\n\n__global__ void __launch_bounds__(256)\nsaxpy(int n) {}\n\ntemplate <int N>\n__global__ void tiled(float* x) {}\n";
        let source: Vec<&str> = text.lines().collect();
        let source = source.as_slice();
        assert_eq!(kernel_line(source, &record("saxpy", None)), 4);
        assert_eq!(
            kernel_line(
                source,
                &record("_Z5tiledILi4EEvPf", Some("void tiled<4>(float*)"))
            ),
            7
        );
        assert_eq!(kernel_line(source, &record("absent", None)), 0);
    }

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
