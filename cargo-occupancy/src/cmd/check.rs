//! `cargo occupancy check PATHS... [-- NVCC ARGS]`: the build gate for CUDA code that is not built
//! through a Rust build.rs. `.cu` files (directories recursively) are compiled and `.ptx` files
//! assembled by `occupancy-build`'s engine (the same nvcc invocation, cache and report parsing a
//! build uses), any other file is read as a ptxas `-v` log (a CMake or make build's output);
//! every kernel is evaluated on every target architecture for the launch given by `--block` and
//! `--dynamic-smem` by the build gate's lint evaluation (`occupancy_core::lint::evaluate`), and
//! the findings decide the exit code: 0 clean, 1 a deny finding stands, 2 usage or tool errors
//! (nvcc missing or failing, unreadable input, a log that holds a compiler error, shows a failed
//! build or holds a resource line of no record: `log_input`). Logs are read
//! through the streaming reader `parse` uses (`log_input`); a kernel a log has on one requested
//! arch but not another is a `missing_kernel` finding.
//!
//! Memory does not grow with a log: each record becomes a row, is evaluated and goes to
//! [`ReportStream`] as it is read, which keeps what the output needs (text and Markdown: the
//! worst rows, each lint's first findings and counts; JSON and SARIF: spooled to a temporary
//! file and written whole at the end). What grows is `--html` (the page draws every kernel) and,
//! with `--arch`, the set of kernel names each log has (for `missing_kernel`).
//!
//! `.cu`/`.ptx` inputs go to `occupancy_build::Build::check_sources`, the build's own pipeline
//! without a package (compile, parse, rows, the SASS stage, evaluation at the command line's
//! launch); rows read from logs are evaluated by the same `occupancy_core::kernel::evaluate_at_launch`.
//! This module parses the command line, reads logs and renders: it evaluates nothing itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use occupancy_binary::{
    BinaryKernel, BinaryKind, BinaryReading, BinarySession, BinaryTools, MachineCodeLints,
};
use occupancy_build::cli::{recorded_toolchain, relative_facts, NVCC_WHEELS};
use occupancy_build::{Build, SourceCheck};
use occupancy_core::kernel::{evaluate_at_launch, KernelOnArch};
use occupancy_core::lint::evaluate::{checked_launch, LaunchOrigin, LaunchSettings, LevelSources};
use occupancy_core::lint::{Check, Level, LintId};
use occupancy_core::ptxas::PtxEntry;
use occupancy_core::report::{Finding, KernelRow, Location, LocationKind, Report, RowLaunch};
use occupancy_core::spec::BlockDim;

use super::lock::Lock;
use super::log_input::{self, kernel_from_record};
use super::stream::ReportStream;
use crate::cache_dir::CacheDir;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::format::OutputArgs;
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
    /// Check a log that shows a failed build (`FAILED:`, `make: *** ... Error`, `Segmentation
    /// fault`, ...) anyway, each such line a warning: for markers that are false positives.
    #[arg(long)]
    pub allow_failed_build: bool,
    #[command(flatten)]
    pub gate: crate::gate_args::GateArgs,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Arguments passed to nvcc for every .cu file (after `--`): includes, defines, -std=...
    #[arg(last = true, value_name = "NVCC ARGS")]
    pub nvcc_args: Vec<String>,
}

/// What an input path is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Input {
    Cuda(PathBuf),
    Ptx(PathBuf),
    Log(PathBuf),
    /// A cubin, fatbin, object, library, executable or wheel.
    Binary(PathBuf, BinaryKind),
}

/// Runs `check`: exit 1 when a deny finding stands, whether or not the report's reader read
/// it to its end.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    if args.block == Some(0) {
        return Err(CliError::usage("--block must be at least 1 thread"));
    }
    check_outputs(&outputs(args), &input_paths(args))?;
    let levels = Levels::from_args(args, &env.lint_levels)?;
    for arch in &args.archs {
        env.archs
            .lookup(arch)
            .map_err(|error| CliError::Usage(format!("--arch: {error}")))?;
    }
    let mut lock = Lock::open(args.gate.lock.as_deref(), args.gate.bless)?;
    let inputs = collect_inputs(&args.paths)?;
    // nvcc and the binary reader work in the temporary directory: one that cannot be used is
    // named by its variable before they run, not by a scratch path of theirs (issue #35, class 7).
    if inputs.iter().any(|input| !matches!(input, Input::Log(_))) {
        env.scratch()?;
    }
    let mut stream = ReportStream::new(&args.output, &env.temp_dir);
    let selected = Selected {
        inputs: &inputs,
        owner: &Owner::default(),
    };
    let missing = check_selected(args, env, &selected, &levels, (&mut stream, lock.as_mut()))?;
    if stream.rows() == 0 && missing == 0 {
        let paths: Vec<String> = (args.paths.iter())
            .map(|path| occupancy_build::cli::shown_path(path))
            .collect();
        return Err(CliError::NothingChecked(format!(
            "no kernel found in {}: nothing was checked (the notes above say what each held)",
            paths.join(", ")
        )));
    }
    if let Some(lock) = &lock {
        lock.conclude(&levels.settings, &mut stream)?;
    }
    let title = args
        .paths
        .iter()
        .map(|path| occupancy_build::cli::shown_path(path))
        .collect::<Vec<_>>()
        .join(" ");
    let verdict = Outcome::failed_if(stream.has_deny());
    verdict.despite_closed_stdout(stream.finish(&args.output, &title))
}

/// Inputs a check reads, and who shipped them.
pub(super) struct Selected<'a> {
    pub inputs: &'a [Input],
    pub owner: &'a Owner,
}

/// Who shipped a set of inputs, for `cargo occupancy build` (the default for `check`: nobody,
/// every finding at its level).
#[derive(Debug, Clone, Default)]
pub(super) struct Owner {
    /// The package whose build script made them: every row and finding names it.
    pub crate_name: Option<String>,
    /// Why these inputs may not be what ships (left by an earlier build): their findings are
    /// warnings with this note, and no lock records them.
    pub held_back: Option<String>,
    /// Whether these inputs were left by an earlier build (stale): a lock judges the products
    /// it has entries of and no other input of the run has as vanished.
    pub left_by_earlier_build: bool,
    /// Whether code compiled for debugging (`-G`) is held back too (`build` without
    /// `--debug-code`); `check` gates whatever it is given.
    pub hold_back_debug_code: bool,
    /// Rows of code compiled for debugging seen (held back or not), for the owner's warning.
    pub debug_rows: std::cell::Cell<usize>,
    /// A path prefix of the inputs (an `OUT_DIR`, as rows show it) and the stable name a lock
    /// records instead (`OUT_DIR(candle-kernels)`): the directory's hash and the target
    /// directory differ between machines and profiles; the package and the file do not.
    pub lock_prefix: Option<(String, String)>,
    /// Launches by kernel name or `*` pattern: the kernels a table names are checked at its
    /// block and dynamic shared memory.
    pub launch_tables: BTreeMap<String, occupancy_build::cli::KernelLaunch>,
    /// ptxas's reports the nvcc tap kept for these inputs (`build --tap`): a binary's row takes
    /// the warnings its compile printed, which the binary does not keep.
    pub ptxas_reports: Option<std::rc::Rc<super::ptxas_reports::TapReports>>,
}

/// Why a `-G` kernel's findings do not gate (`Owner::hold_back_debug_code`).
pub(super) const DEBUG_CODE: &str = "compiled for debugging (`nvcc -G`, which `cc` adds in a debug profile): unoptimized code, not what a release build ships";

impl Owner {
    /// Why the findings of a kernel (compiled for debugging or not) do not gate, if they don't.
    pub(super) fn held_back_for(&self, debug_code: bool) -> Option<&str> {
        if debug_code {
            self.debug_rows.set(self.debug_rows.get() + 1);
        }
        match &self.held_back {
            Some(why) => Some(why),
            None => (debug_code && self.hold_back_debug_code).then_some(DEBUG_CODE),
        }
    }

    /// The name a lock records an input's rows under: `shown` with [`Owner::lock_prefix`]'s
    /// prefix replaced.
    pub(super) fn lock_source(&self, shown: &str) -> String {
        match &self.lock_prefix {
            Some((prefix, name)) => match shown.strip_prefix(prefix.as_str()) {
                Some(rest) => format!("{name}{rest}"),
                None => shown.to_owned(),
            },
            None => shown.to_owned(),
        }
    }

    /// The row as the owner has it: its crate named.
    pub(super) fn own_row(&self, row: &mut KernelRow) {
        if let Some(name) = &self.crate_name {
            row.crate_name = Some(name.clone());
        }
    }

    /// Findings as the owner has them: its crate named, and those held back (`held_back`, why)
    /// warnings that say why.
    pub(super) fn own_findings(&self, findings: &mut [Finding], held_back: Option<&str>) {
        for finding in findings {
            if let Some(name) = &self.crate_name {
                finding.crate_name = Some(name.clone());
            }
            if let (Some(why), Level::Deny) = (held_back, finding.level) {
                finding.level = Level::Warn;
                finding.notes.push(format!("not gating: {why}"));
            }
        }
    }
}

/// Tells the lock the inputs this run has (all but those an earlier build left), by the names
/// their rows are recorded under: their products have not vanished.
fn show_to_lock(lock: Option<&mut Lock>, selected: &Selected<'_>) {
    let (Some(lock), false) = (lock, selected.owner.left_by_earlier_build) else {
        return;
    };
    for input in selected.inputs {
        let shown = display_path(input_path_buf(input));
        lock.saw(&selected.owner.lock_source(&shown));
    }
}

/// Checks the selected inputs into the sinks: the .cu/.ptx compiled, then the logs and binaries
/// streamed. Returns how many `missing_kernel` findings there were.
pub(super) fn check_selected(
    args: &Args,
    env: &Environment,
    selected: &Selected<'_>,
    levels: &Levels,
    (stream, mut lock): (&mut ReportStream, Option<&mut Lock>),
) -> Result<usize, CliError> {
    show_to_lock(lock.as_deref_mut(), selected);
    let compile_inputs: Vec<&Input> = selected
        .inputs
        .iter()
        .filter(|input| matches!(input, Input::Cuda(_) | Input::Ptx(_)))
        .collect();
    if !compile_inputs.is_empty() {
        let lock = lock
            .as_deref_mut()
            .filter(|_| selected.owner.held_back.is_none());
        // A build's products are not sources of the package around them (`target/` sits in
        // the workspace): compiled as found, not as a declaring package's build would.
        let in_packages = selected.owner.crate_name.is_none();
        let compile = (compile_inputs.as_slice(), in_packages);
        let mut report = check_compiled(args, env, compile, levels, (lock, selected.owner))?;
        let owner = selected.owner;
        report.kernels.iter_mut().for_each(|row| owner.own_row(row));
        owner.own_findings(&mut report.findings, owner.held_back_for(false));
        stream.add_report(&report)?;
    }
    stream_logs(args, env, selected, levels, (stream, lock))
}

/// Compiles and checks the .cu/.ptx inputs through `Build::check_sources`: those of a package
/// that declares kernels (`occupancy_build::cli::declaring_package`) as its build does, one
/// check per package, the rest at the command line's launch. Their rows go to the lock, when
/// there is one, under the source as rows show it.
fn check_compiled(
    args: &Args,
    env: &Environment,
    (inputs, in_packages): (&[&Input], bool),
    levels: &Levels,
    (mut lock, owner): (Option<&mut Lock>, &Owner),
) -> Result<Report, CliError> {
    let cache_dir = CacheDir::choose(
        args.gate.cache_dir.as_deref(),
        env.cache_home.as_deref(),
        &env.temp_dir,
    )?;
    // A package's sources are scanned for declarations once, however many inputs it has.
    let mut declares: BTreeMap<PathBuf, bool> = BTreeMap::new();
    let mut groups: BTreeMap<Option<PathBuf>, Vec<&Input>> = BTreeMap::new();
    for input in inputs {
        let found = in_packages.then(|| occupancy_build::cli::package_of(input_path_buf(input)));
        let package = found.flatten().filter(|package| {
            *declares
                .entry(package.clone())
                .or_insert_with(|| occupancy_build::cli::declares_kernels(package))
        });
        groups.entry(package).or_default().push(input);
    }
    let mut report = Report::default();
    for (package, group) in groups {
        if package.is_some() && args.dynamic_smem != 0 {
            return Err(CliError::usage(format!(
                "--dynamic-smem: the sources of {} are checked at the launches its `#[occupancy::kernel]` declarations give; declare `dynamic_smem` there, or under [package.metadata.occupancy.kernels.\"<name>\"] for a kernel it does not declare",
                display_path(package.as_deref().unwrap_or(Path::new(".")))
            )));
        }
        let group = (package.as_deref(), group.as_slice(), owner);
        let checked = check_group(args, env, &cache_dir, group, levels)?;
        record_in_lock(lock.as_deref_mut(), &checked, owner);
        report.kernels.extend(checked.report.kernels);
        report.findings.extend(checked.report.findings);
    }
    Ok(report)
}

/// One `Build::check_sources` of inputs of one declaring package (or of none): compiled into
/// the cache directory (a package's into its own directory there), paths shown from the
/// current directory.
fn check_group(
    args: &Args,
    env: &Environment,
    cache_dir: &CacheDir,
    (package, inputs, owner): (Option<&Path>, &[&Input], &Owner),
    levels: &Levels,
) -> Result<occupancy_build::SourceCheckOutput, CliError> {
    let mut build = Build::new();
    for input in inputs {
        let absolute = std::fs::canonicalize(input_path_buf(input))
            .unwrap_or_else(|_| input_path_buf(input).to_path_buf());
        match input {
            Input::Cuda(_) => build.file(absolute),
            Input::Ptx(_) => build.ptx_file(absolute),
            Input::Log(_) | Input::Binary(..) => &mut build,
        };
    }
    for arch in &args.archs {
        build.arch(arch);
    }
    for flag in &args.nvcc_args {
        build.flag(flag);
    }
    cache_dir.place(&mut build, package);
    let current = std::env::current_dir().and_then(std::fs::canonicalize).ok();
    build.env(env.for_build());
    let mut request = SourceCheck::default();
    request.block_threads = args.block;
    request.dynamic_smem_bytes = args.dynamic_smem;
    request.lint_levels = levels.settings.clone();
    request.stamp_toolchain = args.gate.lock.is_some();
    request.in_package = package.is_some();
    request.launch_tables = owner.launch_tables.clone();
    let mut output = build.check_sources(&request).map_err(toolchain_error)?;
    if let (Some(package), Some(current)) = (package, &current) {
        shown_from(&mut output.report, package, current);
    }
    for source in &output.without_kernels {
        eprintln!(
            "note: {} defines no kernel (device functions only): nothing to check in it",
            display_path(source)
        );
    }
    for warning in &output.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(output)
}

/// A package's rows in the lock, under their sources as rows show them.
fn record_in_lock(
    lock: Option<&mut Lock>,
    output: &occupancy_build::SourceCheckOutput,
    owner: &Owner,
) {
    if let (Some(lock), Some(stamp)) = (lock, &output.toolchain) {
        let product = lock.input();
        for row in &output.report.kernels {
            let source = row.source.as_ref().map(|at| at.path.as_str());
            lock.record(
                product,
                &owner.lock_source(source.unwrap_or_default()),
                row,
                stamp,
            );
        }
    }
}

/// Paths a package's check shows from the package (`kernels/k.cu`, `src/lib.rs`) shown from
/// the current directory instead, as every other input's are.
fn shown_from(report: &mut Report, package: &Path, current: &Path) {
    for row in &mut report.kernels {
        row.source
            .iter_mut()
            .for_each(|at| shown_from_here(at, package, current));
    }
    for finding in &mut report.findings {
        (finding.location.iter_mut()).for_each(|at| shown_from_here(at, package, current));
    }
}

/// A location a package's check gives from the package's directory, given from `current`
/// instead (when the package is under it).
pub(super) fn shown_from_here(location: &mut Location, package: &Path, current: &Path) {
    if let Ok(prefix) = package.strip_prefix(current) {
        if Path::new(&location.path).is_relative() {
            location.path = occupancy_build::cli::shown_path(&prefix.join(&location.path));
        }
    }
}

/// What `check` writes: `--html`, the `--cache-dir` it compiles into, the lock it blesses.
fn outputs(args: &Args) -> Vec<Output<'_>> {
    let mut outputs = args.output.outputs();
    outputs.extend(args.gate.outputs());
    outputs
}

/// What `check` reads: the paths, the lock it compares with, and the files named by nvcc
/// arguments (`-include file`, a linked object), which an output must not replace either.
/// Include directories (`-I.`) are not claimed whole: a report beside the sources is fine, a
/// report over one of them is not.
fn input_paths(args: &Args) -> Vec<&Path> {
    let mut inputs: Vec<&Path> = args.paths.iter().map(PathBuf::as_path).collect();
    // A lock only read (no `--bless`) is an input too: `--html` over it would replace it.
    inputs.extend(
        args.gate
            .lock
            .iter()
            .filter(|_| !args.gate.bless)
            .map(PathBuf::as_path),
    );
    inputs.extend(
        args.nvcc_args
            .iter()
            .map(Path::new)
            .filter(|path| path.is_file()),
    );
    inputs
}

/// Expands directories and classifies every path; unreadable paths are errors.
fn collect_inputs(paths: &[PathBuf]) -> Result<Vec<Input>, CliError> {
    let mut inputs = Vec::new();
    for path in paths {
        let metadata =
            std::fs::metadata(path).map_err(|error| CliError::cannot_read(path, &error))?;
        if metadata.is_dir() {
            let mut found = Vec::new();
            walk(path, &mut found)?;
            if found.is_empty() {
                return Err(CliError::Input(format!(
                    "{} holds no .cu or .ptx file",
                    occupancy_build::cli::shown_path(path)
                )));
            }
            inputs.extend(found);
        } else {
            crate::inputs::refuse_named_node(
                path,
                named_like_input,
                "give the file itself, or a log as a pipe or `-`",
            )?;
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
        Input::Cuda(path) | Input::Ptx(path) | Input::Log(path) | Input::Binary(path, _) => path,
    }
}

/// `.cu` and `.ptx` by name; a compiled binary by its first bytes; anything else is a log.
fn classify(path: &Path) -> Input {
    match path.extension().and_then(|extension| extension.to_str()) {
        Some("cu") => Input::Cuda(path.to_path_buf()),
        Some("ptx") => Input::Ptx(path.to_path_buf()),
        _ => match occupancy_binary::sniff(path) {
            Ok(Some(kind)) => Input::Binary(path.to_path_buf(), kind),
            _ => Input::Log(path.to_path_buf()),
        },
    }
}

/// Whether a file's name is an input's that is opened and read whole: a source's (`.cu`,
/// `.ptx`) or a compiled binary's.
fn named_like_input(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|extension| extension.to_str()),
        Some("cu" | "ptx")
    ) || named_like_binary(path)
}

/// Whether a file's name is a compiled binary's (`.cubin`, `.fatbin`, `.o`, `.a`, `.so`,
/// `.so.12`, `.whl`).
fn named_like_binary(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    [".cubin", ".fatbin", ".o", ".a", ".so", ".whl"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.contains(".so.")
}

/// Whether a file found in a directory may be a compiled binary worth reading: by name
/// (`.cubin`, `.fatbin`, `.o`, `.a`, `.so`, `.so.12`, `.whl`), then by its first bytes. One
/// named so that cannot be read (no permission, a dangling link) or whose first bytes are no
/// binary's (empty, damaged) is an error naming it: a check reads every file it selects (issue
/// #35, class 1).
fn binary_in_directory(path: &Path) -> Result<Option<Input>, CliError> {
    if !named_like_binary(path) {
        return Ok(None);
    }
    let kind =
        occupancy_binary::sniff(path).map_err(|error| CliError::cannot_read(path, &error))?;
    match kind {
        Some(kind) => Ok(Some(Input::Binary(path.to_path_buf(), kind))),
        // Empty or damaged, it is an error, never a file passed over (a `.so` linker script is
        // passed over: it names libraries, it holds no code).
        None => match crate::inputs::not_a_binary(path) {
            Some(why) => Err(CliError::Input(format!(
                "{}: {why}; move it out of the directory or check the files one by one",
                occupancy_build::cli::shown_path(path)
            ))),
            None => Ok(None),
        },
    }
}

/// The inputs under `dir`, each directory visited once (a link back to a directory already
/// walked, or to itself, is not walked again: two self-links once made 2^40 paths). A FIFO,
/// device or socket named like an input is an error naming it: opening it could wait forever or
/// read without end (issue #35, class 2).
fn walk(dir: &Path, found: &mut Vec<Input>) -> Result<(), CliError> {
    walk_once(dir, found, &mut std::collections::BTreeSet::new())
}

fn walk_once(
    dir: &Path,
    found: &mut Vec<Input>,
    visited: &mut std::collections::BTreeSet<PathBuf>,
) -> Result<(), CliError> {
    let canonical =
        std::fs::canonicalize(dir).map_err(|error| CliError::cannot_read(dir, &error))?;
    if !visited.insert(canonical) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|error| CliError::cannot_read(dir, &error))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    paths.sort();
    for path in paths {
        let is_source = matches!(
            path.extension().and_then(|extension| extension.to_str()),
            Some("cu" | "ptx")
        );
        let metadata = std::fs::metadata(&path);
        if metadata.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
            walk_once(&path, found, visited)?;
        } else if let Some(node) = metadata
            .as_ref()
            .ok()
            .filter(|m| !m.is_file() && named_like_input(&path))
        {
            let remedy = format!("move it out of {}", occupancy_build::cli::shown_path(dir));
            return Err(crate::inputs::not_a_regular_file(&path, node, &remedy));
        } else if is_source {
            found.push(classify(&path));
        } else if let Some(binary) = binary_in_directory(&path)? {
            found.push(binary);
        }
    }
    Ok(())
}

/// What the binary front end needs, resolved once for the run (only when a binary is given):
/// its tools, the machine-code lints whose SASS it reads, and the directory rows' source paths
/// are shown relative to (as `check` shows a source's).
struct BinaryInputs {
    tools: BinaryTools,
    machine_code: MachineCodeLints,
    current_dir: PathBuf,
}

impl BinaryInputs {
    /// A session that reads the binaries of the run, asking for `asked` archs, in private
    /// directories under `scratch`.
    fn session<'s>(
        &'s self,
        asked: &'s [String],
        scratch: &'s Path,
    ) -> Result<BinarySession<'s>, CliError> {
        let reading = BinaryReading {
            tools: &self.tools,
            asked_archs: asked,
            machine_code: &self.machine_code,
        };
        BinarySession::new(reading, scratch)
            .map_err(|error| CliError::CouldNotCheck(error.to_string()))
    }

    fn resolve(env: &Environment, levels: &Levels) -> Result<BinaryInputs, String> {
        let timeouts = env.tool_timeouts.as_ref().map_err(ToString::to_string)?;
        let build_env = env.for_build();
        let machine_code = MachineCodeLints::from_environment(&levels.settings, &build_env)
            .map_err(|error| error.to_string())?;
        Ok(BinaryInputs {
            tools: BinaryTools::resolve(&build_env, timeouts),
            machine_code,
            current_dir: std::env::current_dir()
                .and_then(std::fs::canonicalize)
                .unwrap_or_default(),
        })
    }
}

/// Lint levels: the registry's defaults, `OCCUPANCY_LINT_<ID>` variables (read by
/// `Environment::read`), then `--allow/--warn/--deny` (last wins), resolved by the gate's own
/// `check_kernel`.
pub(super) struct Levels {
    settings: BTreeMap<LintId, Level>,
}

impl Levels {
    pub(super) fn from_args(
        args: &Args,
        environment: &BTreeMap<LintId, Level>,
    ) -> Result<Levels, CliError> {
        let mut overrides = Vec::new();
        for (names, level) in [
            (&args.gate.allow, Level::Allow),
            (&args.gate.warn, Level::Warn),
            (&args.gate.deny, Level::Deny),
        ] {
            for name in names {
                let lint = name
                    .parse::<LintId>()
                    .map_err(|error| CliError::Usage(format!("--{level}: {error}")))?;
                overrides.push((lint, level));
            }
        }
        Ok(Levels::new(environment, &overrides))
    }

    /// The levels of every lint set here (the environment's and the command line's).
    pub(super) fn settings(&self) -> &BTreeMap<LintId, Level> {
        &self.settings
    }

    /// These levels, each overridden by a crate's `[...metadata.occupancy.lints]` (lint name to
    /// level word): a crate's own word wins over the command line, as its `#![allow]` does
    /// over clippy's `-D`.
    pub(super) fn with_crate(&self, lints: &BTreeMap<String, String>) -> Result<Levels, String> {
        let mut settings = self.settings.clone();
        for (name, level) in lints {
            let lint = name.parse::<LintId>().map_err(|error| error.to_string())?;
            let level = level
                .parse::<Level>()
                .map_err(|error| format!("`{name}`: {error}"))?;
            settings.insert(lint, level);
        }
        Ok(Levels { settings })
    }

    /// The environment's levels, each overridden by the command line's.
    fn new(environment: &BTreeMap<LintId, Level>, overrides: &[(LintId, Level)]) -> Levels {
        let mut settings = environment.clone();
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

/// How a binary's read ended: its notes said, then the first kernel's error (`failed`), else
/// the read's own.
fn delivered(
    notes: Result<Vec<String>, occupancy_build::Error>,
    failed: Option<CliError>,
) -> Result<(), CliError> {
    let notes = notes.map_err(|error| CliError::CouldNotCheck(error.to_string()))?;
    for note in &notes {
        eprintln!("note: {note}");
    }
    failed.map_or(Ok(()), Err)
}

/// The build's toolchain error in `check`'s words: the build's "nvcc not found" suggests
/// `OCCUPANCY_SKIP`, which only a build reads; `check` can read ptxas logs instead.
fn toolchain_error(error: occupancy_build::Error) -> CliError {
    match error {
        occupancy_build::Error::NvccNotFound { looked } => CliError::CouldNotCheck(format!(
            "nvcc, the CUDA compiler, was not found (looked at: {looked}); `check` needs it for .cu and .ptx inputs.\n\
             Install the CUDA toolkit and set CUDA_HOME, or `pip install {NVCC_WHEELS}` and set \
             CUDA_HOME=<site-packages>/nvidia/cu13, or point NVCC at the nvcc executable; \
             or check a ptxas log (`nvcc -Xptxas -v` output) instead of the sources."
        )),
        other => CliError::CouldNotCheck(other.to_string()),
    }
}

/// Kernel symbol → the architectures a log has it for (a bit per `occupancy_core::arch::all()`
/// row): what `missing_kernel` needs. Kept only when `--arch` asks for architectures; it grows
/// with the distinct kernels (about 80 bytes each), not the records.
type SeenKernels = BTreeMap<String, u64>;

/// The bit of canonical architecture `name` in [`SeenKernels`].
fn arch_bit(name: &str) -> u64 {
    occupancy_core::arch::all()
        .iter()
        .position(|facts| facts.name == name)
        .map_or(0, |index| 1 << index)
}

/// Reads every log and binary into `stream`, in the order of the report (by path, as
/// `sort_rows` groups rows; each log's rows in log order, which is line order; a binary's
/// kernels whose SASS is read come when their batch is, which may be with a later binary's); then
/// the `missing_kernel` findings of each, in the order they were given. Returns how many of those
/// there were.
fn stream_logs(
    args: &Args,
    env: &Environment,
    selected: &Selected<'_>,
    levels: &Levels,
    (stream, mut lock): (&mut ReportStream, Option<&mut Lock>),
) -> Result<usize, CliError> {
    let wanted: Vec<&'static str> = args
        .archs
        .iter()
        .filter_map(|arch| occupancy_core::arch::lookup(arch).ok())
        .map(|facts| facts.name)
        .collect();
    let mut logs: Vec<(String, usize, &Input)> = (selected.inputs.iter())
        .filter(|input| matches!(input, Input::Log(_) | Input::Binary(..)))
        .enumerate()
        .map(|(given, input)| (display_path(input_path_buf(input)), given, input))
        .collect();
    logs.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    let has_binary = logs
        .iter()
        .any(|(_, _, input)| matches!(input, Input::Binary(..)));
    let binary = match has_binary {
        true => Some(BinaryInputs::resolve(env, levels).map_err(CliError::Usage)?),
        false => None,
    };
    let asked: Vec<String> = wanted.iter().map(ToString::to_string).collect();
    let mut session = match &binary {
        Some(binary) => Some(binary.session(&asked, env.scratch()?)?),
        None => None,
    };
    let reader = Reader {
        args,
        levels,
        wanted: &wanted,
        owner: selected.owner,
    };
    let mut states: Vec<InputState> = Vec::new();
    for (index, (log, _, input)) in logs.iter().enumerate() {
        let product = lock.as_deref_mut().map(Lock::input);
        states.push(InputState::new(product));
        let mut sinks = (&mut *stream, lock.as_deref_mut());
        match (input, &binary, session.as_mut()) {
            (Input::Binary(path, kind), Some(binary), Some(session)) => {
                let read = (session, binary, &mut states[..]);
                reader.stream_binary(path, (*kind, index), read, &mut sinks)?;
            }
            _ => reader.stream(input_path_buf(input), log, &mut states[index], &mut sinks)?,
        }
    }
    if let (Some(session), Some(binary)) = (session.as_mut(), &binary) {
        let mut sinks = (&mut *stream, lock);
        reader.finish_binaries(session, binary, &mut states, &mut sinks)?;
    }
    let level = levels.level(LintId::MissingKernel);
    let mut missing = 0;
    let mut given: Vec<(usize, &str, &SeenKernels)> = (logs.iter().zip(&states))
        .map(|((log, given, _), state)| (*given, log.as_str(), &state.seen))
        .collect();
    given.sort_by_key(|(given, _, _)| *given);
    for (_, log, kernels) in given {
        missing += missing_on_requested_archs(kernels, &wanted, log, level, |finding| {
            stream.add_finding(&finding, None)
        })?;
    }
    Ok(missing)
}

/// Whether `lint` is checked once per launch whatever the architecture (`partial_warp`): its
/// finding concerns every row of the kernel.
fn once_per_launch(lint: LintId) -> bool {
    matches!(lint.lint().check, Check::Launch { .. })
}

/// Consecutive rows of one kernel in a log: `evaluate_at_launch` takes them as one group, whose
/// findings all point at its first row, with the per-launch ones once.
struct Run {
    kernel: String,
    location: Option<Location>,
    /// The (level, lint) of the group's per-launch findings: they concern every row of it.
    launch_lints: Vec<(Level, LintId)>,
}

/// What `check` keeps of one log or binary while its rows come: the kernels it has on each arch
/// (with `--arch`, for `missing_kernel`), its current [`Run`] of rows, and its product in the lock.
struct InputState {
    seen: SeenKernels,
    run: Option<Run>,
    product: Option<usize>,
}

impl InputState {
    fn new(product: Option<usize>) -> InputState {
        InputState {
            seen: SeenKernels::new(),
            run: None,
            product,
        }
    }
}

/// Where rows go: the report, and the lock when there is one.
type Sinks<'s, 'l> = (&'s mut ReportStream, Option<&'l mut Lock>);

/// Reads ptxas logs (CMake, make, a CI log) and compiled binaries into the report.
struct Reader<'a> {
    args: &'a Args,
    levels: &'a Levels,
    /// The canonical names of `--arch`.
    wanted: &'a [&'static str],
    /// Who shipped the inputs read.
    owner: &'a Owner,
}

impl Reader<'_> {
    /// The launch the rows of kernel `symbol` are evaluated at, as `occupancy_core`'s
    /// `checked_launch` decides it: its owner's kernel table's, else the command line's, else
    /// the default lowered to the kernel's compiled maximum (`ptx`: its `.maxntid`/`.reqntid`,
    /// known for a binary's kernels).
    fn launch_for(&self, symbol: &str, ptx: Option<&PtxEntry>) -> Result<RowLaunch, CliError> {
        let demangled = occupancy_core::ptxas::demangle(symbol);
        let table = occupancy_build::cli::table_launch(
            &self.owner.launch_tables,
            symbol,
            demangled.as_deref(),
        )
        .map_err(|error| CliError::Input(error.to_string()))?;
        let launch = checked_launch(&LaunchSettings {
            origin: LaunchOrigin::CommandLine,
            declared: None,
            table,
            given_block: self.args.block.map(BlockDim::linear),
            given_dynamic_smem_bytes: self.args.dynamic_smem,
            crate_block: None,
            compiled_max_threads: ptx.and_then(PtxEntry::max_threads_per_block),
            at_compiled_max: false,
        });
        Ok(RowLaunch {
            block: launch.block_threads(),
            dynamic_smem_bytes: launch.dynamic_smem_bytes,
            carveout_percent: None,
        })
    }

    /// Streams the log's rows (the log shown as `log`) into the sinks through the shared reader
    /// (`log_input`), each evaluated at the launch as it is read: `evaluate_at_launch` on the row
    /// alone, made what it gives for a [`Run`] of rows taken whole (the per-launch findings once,
    /// every finding at the run's first row). A log holding a compiler error, or showing a failed
    /// build, is an error of the run: its kernels' numbers are not a passing build's.
    fn stream(
        &self,
        path: &Path,
        log: &str,
        state: &mut InputState,
        (stream, lock): &mut Sinks<'_, '_>,
    ) -> Result<(), CliError> {
        let made_by = recorded_toolchain(None);
        let output = log_input::read_log(path, |record| {
            if !record.errors.is_empty() {
                return Ok(()); // reported below as the run's error
            }
            let launch = self.launch_for(&record.name, None)?;
            let at = Location {
                kind: LocationKind::Log,
                path: log.to_string(),
                line: u32::try_from(record.line_number).unwrap_or(0),
                column: 0,
            };
            let mut checked = kernel_from_record(record, None, launch)?;
            checked.row.source = Some(at);
            if !self.wanted_on_arch(&checked, state) {
                return Ok(());
            }
            let held_back = self.owner.held_back_for(false);
            let evaluated = (checked, held_back);
            let row = self.evaluate_with_notes(evaluated, &[], &mut state.run, stream)?;
            if let (Some(lock), Some(product), None) =
                (lock.as_deref_mut(), state.product, held_back)
            {
                lock.record(product, &self.owner.lock_source(log), &row, &made_by);
            }
            Ok(())
        })?;
        let name = occupancy_build::cli::shown_path(path);
        let policy = log_input::LogPolicy {
            allow_failed_build: self.args.allow_failed_build,
        };
        log_input::conclude(&name, &output, policy)?;
        Ok(())
    }

    /// Streams the kernels of the compiled binary at `path` (input `index` of `states`) into the
    /// sinks like a log's records: each kernel x arch a row located at its place in the binary,
    /// evaluated as it comes (those whose SASS a lint reads when their batch is read). A binary
    /// that cannot be read is an error of the run.
    fn stream_binary(
        &self,
        path: &Path,
        (kind, index): (BinaryKind, usize),
        (session, binary, states): (&mut BinarySession<'_>, &BinaryInputs, &mut [InputState]),
        sinks: &mut Sinks<'_, '_>,
    ) -> Result<(), CliError> {
        let mut failed = None;
        // Each kernel is evaluated and streamed as it comes, so that memory does not grow with
        // the binary; after an error the rest are passed over.
        let notes = session.read(path, kind, index, &mut |input, kernel| {
            self.deliver(kernel, binary, &mut states[input], sinks, &mut failed);
        });
        delivered(notes, failed)
    }

    /// The binaries' kernels still held for their SASS, read and streamed.
    fn finish_binaries(
        &self,
        session: &mut BinarySession<'_>,
        binary: &BinaryInputs,
        states: &mut [InputState],
        sinks: &mut Sinks<'_, '_>,
    ) -> Result<(), CliError> {
        let mut failed = None;
        let notes = session.finish(&mut |input, kernel| {
            self.deliver(kernel, binary, &mut states[input], sinks, &mut failed);
        });
        delivered(notes, failed)
    }

    /// Streams one kernel of a binary unless an earlier one failed (`failed` keeps the first
    /// error).
    fn deliver(
        &self,
        kernel: BinaryKernel,
        binary: &BinaryInputs,
        state: &mut InputState,
        sinks: &mut Sinks<'_, '_>,
        failed: &mut Option<CliError>,
    ) {
        if failed.is_none() {
            if let Err(error) = self.stream_kernel(kernel, binary, state, sinks) {
                *failed = Some(error);
            }
        }
    }

    /// One kernel of a binary: its row, located at its place in the binary, with the SASS facts
    /// read for it, evaluated and handed to the sinks (with `--arch`, only on an asked arch;
    /// `seen` notes it either way).
    fn stream_kernel(
        &self,
        mut kernel: BinaryKernel,
        binary: &BinaryInputs,
        state: &mut InputState,
        (stream, lock): &mut Sinks<'_, '_>,
    ) -> Result<(), CliError> {
        let directives = kernel.compiled_directives();
        if let Some(reports) = &self.owner.ptxas_reports {
            reports.join(&kernel.module, &mut kernel.record);
        }
        let launch = self.launch_for(&kernel.record.name, Some(&kernel.launch))?;
        let notes = kernel.record.warnings.clone();
        let mut checked = kernel_from_record(kernel.record, Some(kernel.launch), launch)?;
        checked.row.sass = (kernel.sass).map(|facts| relative_facts(facts, &binary.current_dir));
        checked.row.source = Some(Location {
            kind: LocationKind::Binary,
            path: kernel.origin.clone(),
            line: 0,
            column: 0,
        });
        // The lints read the directives the cubin compiled under; the row shows the cubin's.
        checked.ptx = Some(directives);
        checked.compile.smem_spilling = kernel.smem_spilling;
        if !self.wanted_on_arch(&checked, state) {
            return Ok(());
        }
        let held_back = self.owner.held_back_for(kernel.debug_code);
        let evaluated = (checked, held_back);
        let row = self.evaluate_with_notes(evaluated, &notes, &mut state.run, stream)?;
        if let (Some(lock), Some(product), None) = (lock.as_deref_mut(), state.product, held_back) {
            let made_by = recorded_toolchain(kernel.compiler.as_deref());
            lock.record(
                product,
                &self.owner.lock_source(&kernel.module),
                &row,
                &made_by,
            );
        }
        Ok(())
    }

    /// Whether `checked` is on an arch `--arch` asks for (every arch without it); `seen` notes
    /// its kernel's arch either way.
    fn wanted_on_arch(&self, checked: &KernelOnArch, state: &mut InputState) -> bool {
        if self.wanted.is_empty() {
            return true;
        }
        let arch = checked.row.arch.as_str();
        *state.seen.entry(checked.record.name.clone()).or_default() |= arch_bit(arch);
        self.wanted.contains(&arch)
    }

    /// Evaluates one row and hands it and its findings to `stream`; `spill_notes` (how the
    /// spill figures were read, when not exactly) go with its `spills` findings. Returns the
    /// row, for the lock.
    fn evaluate_with_notes(
        &self,
        (mut checked, held_back): (KernelOnArch, Option<&str>),
        spill_notes: &[String],
        run: &mut Option<Run>,
        stream: &mut ReportStream,
    ) -> Result<KernelRow, CliError> {
        let mut findings =
            evaluate_at_launch(std::slice::from_ref(&checked), &self.levels.settings);
        for finding in &mut findings {
            if finding.lint == LintId::Spills {
                finding.notes.extend(spill_notes.iter().cloned());
            }
        }
        self.owner.own_row(&mut checked.row);
        self.owner.own_findings(&mut findings, held_back);
        let mut lints: Vec<(Level, LintId)> = findings
            .iter()
            .map(|finding| (finding.level, finding.lint))
            .collect();
        match run {
            Some(run) if run.kernel == checked.row.name => {
                findings.retain(|finding| !once_per_launch(finding.lint));
                for finding in &mut findings {
                    finding.location.clone_from(&run.location);
                }
                lints.extend(run.launch_lints.iter().copied());
            }
            _ => {
                *run = Some(Run {
                    kernel: checked.row.name.clone(),
                    location: checked.row.source.clone(),
                    launch_lints: lints
                        .iter()
                        .copied()
                        .filter(|(_, lint)| once_per_launch(*lint))
                        .collect(),
                });
            }
        }
        lints.sort_unstable();
        lints.dedup();
        stream.add_row(&checked.row, &lints)?;
        for finding in &findings {
            stream.add_finding(finding, Some(&checked.row))?;
        }
        Ok(checked.row)
    }
}

/// `missing_kernel` for every kernel of the log that has no record for a requested arch, each
/// handed to `emit` in kernel order; returns how many there were.
fn missing_on_requested_archs(
    seen: &SeenKernels,
    wanted: &[&str],
    log: &str,
    level: Level,
    mut emit: impl FnMut(Finding) -> Result<(), CliError>,
) -> Result<usize, CliError> {
    let mut count = 0;
    for (kernel, present) in seen {
        let missing: Vec<&&str> = wanted
            .iter()
            .filter(|arch| present & arch_bit(arch) == 0)
            .collect();
        if missing.is_empty() {
            continue;
        }
        // As the row shows it: the demangled name, and the archs in name order.
        let shown = demangled(kernel);
        let mut present: Vec<&str> = occupancy_core::arch::all()
            .iter()
            .filter(|facts| present & arch_bit(facts.name) != 0)
            .map(|facts| facts.name)
            .collect();
        present.sort_unstable();
        for arch in missing {
            count += 1;
            emit(Finding {
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
            })?;
        }
    }
    Ok(count)
}

/// A kernel symbol as a row shows it: demangled when it is a C++ or Rust symbol (what the log
/// parser gives a record).
fn demangled(symbol: &str) -> String {
    occupancy_core::ptxas::demangle(symbol).unwrap_or_else(|| symbol.to_string())
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
        Some(relative) => occupancy_build::cli::shown_path(relative),
        None => occupancy_build::cli::shown_path(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_override_defaults_last_wins() {
        let levels = Levels::new(
            &BTreeMap::new(),
            &[
                (LintId::Spills, Level::Warn),
                (LintId::StackFrame, Level::Deny),
            ],
        );
        assert_eq!(levels.level(LintId::Spills), Level::Warn);
        assert_eq!(levels.level(LintId::StackFrame), Level::Deny);
        assert_eq!(levels.level(LintId::Unlaunchable), Level::Deny);
    }

    /// `OCCUPANCY_LINT_<ID>` (as `Environment::read` found it) overrides a default; a flag
    /// overrides both.
    #[test]
    fn flags_override_the_environment_which_overrides_defaults() {
        let environment = BTreeMap::from([
            (LintId::Spills, Level::Allow),
            (LintId::Unlaunchable, Level::Warn),
        ]);
        let levels = Levels::new(&environment, &[(LintId::Spills, Level::Deny)]);
        assert_eq!(levels.level(LintId::Spills), Level::Deny);
        assert_eq!(levels.level(LintId::Unlaunchable), Level::Warn);
    }
}
