//! `cargo occupancy build [OPTIONS] [-- CARGO BUILD ARGS]`: any workspace, as it is. Runs
//! `cargo build` with the user's arguments (`cargo_run`), takes every package's `OUT_DIR` from
//! its `build-script-executed` message, finds the device code its build script left there
//! (`products`), and checks it as `check` checks files: PTX assembled as the driver would JIT it
//! on each asked arch, binaries read, every kernel x arch a row (named for its package), the
//! same lints, levels, reports, lock and exit codes (0 clean, 1 a deny finding, 2 a tool error,
//! a failed build, or no device code at all). `cargo clippy` wraps `cargo check`; this wraps
//! `cargo build`.
//!
//! What makes a build's files lie is said, never passed silently: a file left by an earlier
//! build (`products`: stale), code compiled for debugging (`-G`, which `cc` adds in a debug
//! profile: held back unless `--debug-code`), and arch-specific PTX (`arch_specific_ptx`). A
//! package whose build uses occupancy-build (its `OUT_DIR/occupancy.json`) is checked by that
//! build: its report is taken in, not read twice. Builders that ask the GPU which arch to build
//! for get `--arch` through the variables they read (`arch_env`). With `--tap`, the build's
//! nvcc calls go through the nvcc tap (`tap`, `crate::tap`), which keeps ptxas's text of each
//! compile: the warnings a binary cannot tell join the rows read from the binaries.

mod arch_env;
mod cargo_run;
mod lock_keys;
mod products;
mod tap;

use super::ptxas_reports::TapReports;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use occupancy_binary::{jit_target, PtxTarget};
use occupancy_build::cli::{KernelLaunch, OccupancySettings};
use occupancy_core::lint::evaluate::{resolve_level, LevelSources};
use occupancy_core::lint::{Check, Level, LintId};
use occupancy_core::report::{Finding, Location, LocationKind, Report};

use super::check::{self, Input, Levels, Owner, Selected};
use super::lock::Lock;
use super::stream::ReportStream;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::format::OutputArgs;
use crate::outputs::{check_outputs, Output};
use cargo_run::BuiltPackage;
use products::{Product, ProductKind, Products};

/// `cargo occupancy build` arguments.
#[derive(clap::Args, Debug)]
#[command(
    about = "Run `cargo build` and check the device code every build script left in its OUT_DIR (no edit to the crate)"
)]
pub struct Args {
    /// Target architecture (repeatable): the rows checked, and the arch of the crate's builders
    /// that would ask the GPU (sets CUDA_COMPUTE_CAP, CUDA_ARCH, CUDAARCHS and
    /// CMAKE_CUDA_ARCHITECTURES unless set). Default: each product's own.
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Threads per block kernels are checked at, where the crate's settings give none; default
    /// 256, or the kernel's `__launch_bounds__` maximum when that is smaller.
    #[arg(long, value_name = "N")]
    pub block: Option<u32>,
    /// The launch of kernels a crate's settings do not name (repeatable), as
    /// `[package.metadata.occupancy.kernels."NAME"]` gives it: `NAME:block=1024`,
    /// `'softmax_*:block=512,dynamic_smem=4096'` (a name, readable name or `*` pattern).
    #[arg(long = "kernel", value_name = "NAME:block=N[,dynamic_smem=B]", value_parser = kernel_table)]
    pub kernels: Vec<(String, KernelLaunch)>,
    #[command(flatten)]
    pub gate: crate::gate_args::GateArgs,
    /// Gate and bless code compiled for debugging (`-G`, which `cc` adds in a debug profile) as
    /// if it shipped; without it, its findings are warnings and no lock records it.
    #[arg(long)]
    pub debug_code: bool,
    /// Run the build's nvcc through the nvcc tap (NVCC, PATH, CMAKE_CUDA_COMPILER_LAUNCHER),
    /// which keeps ptxas's report of each compile beside its output (`k.o.ptxas`): what a
    /// binary cannot tell (a `__launch_bounds__` minimum ptxas dropped, an ignored register
    /// cap) joins the rows. Each tapped compile runs twice (a side compile with -Xptxas -v).
    #[arg(long)]
    pub tap: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Arguments for `cargo build` (after `--`): `--release`, `-p NAME`, `--features ...`.
    #[arg(last = true, value_name = "CARGO BUILD ARGS")]
    pub cargo_args: Vec<String>,
}

/// Why a stale product's findings do not gate.
const STALE: &str = "left in OUT_DIR by an earlier build: older than the build script's last run and named by nothing it wrote or links (`cargo clean -p PACKAGE` removes it)";

/// Runs `build`.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    let base = check_args(args, Vec::new(), args.block);
    if args.block == Some(0) {
        return Err(CliError::usage("--block must be at least 1 thread"));
    }
    for arch in &args.archs {
        (env.archs.lookup(arch)).map_err(|error| CliError::Usage(format!("--arch: {error}")))?;
    }
    // A lock only compared is an input, which `--html` must not replace.
    let lock_read: Vec<&Path> = (args.gate.lock.iter())
        .filter(|_| !args.gate.bless)
        .map(PathBuf::as_path)
        .collect();
    check_outputs(&outputs(args), &lock_read)?;
    let levels = Levels::from_args(&base, &env.lint_levels)?;
    let mut lock = Lock::open(args.gate.lock.as_deref(), args.gate.bless)?;
    let scratch = Scratch::new(&env.temp_dir)?;
    let tap = args.tap.then(|| tap::Tap::prepare(env)).transpose()?;
    let vars = builder_variables(args, env, &scratch.path, tap.as_ref())?;
    let built = cargo_run::run(&env.cargo, &args.cargo_args, (&vars, &env.build_vars))?;
    if !built.success {
        let hint = arch_env::gpu_hint(&built.stderr_tail)
            .map(|hint| format!("\nhelp: {hint}"))
            .unwrap_or_default();
        return Err(CliError::BuildFailed(format!(
            "`cargo build` failed, so its device code was not checked{hint}"
        )));
    }
    if let Some(lock) = lock.as_mut() {
        lock_keys::judge_packages(lock, &built.packages);
    }
    let mut stream = ReportStream::new(&args.output, &env.temp_dir);
    let mut summary = Summary::default();
    for package in distinct(&built.packages) {
        let checked = (&mut stream, lock.as_mut());
        check_package(args, env, package, (&levels, &mut summary), checked)?;
    }
    summary.say(built.packages.len());
    if summary.rows_or_findings == 0 && stream.rows() == 0 {
        return Err(CliError::NothingChecked(format!(
            "no device code in the OUT_DIR of any package this build ran a build script for ({} of them): nothing was checked",
            built.packages.len()
        )));
    }
    if let Some(lock) = &lock {
        lock.conclude(&levels_map(&levels), &mut stream)?;
    }
    let verdict = Outcome::failed_if(stream.has_deny());
    verdict.despite_closed_stdout(stream.finish(&args.output, "cargo occupancy build"))
}

/// `check`'s arguments for one group of products: this command's flags, `archs` and `block`.
fn check_args(args: &Args, archs: Vec<String>, block: Option<u32>) -> check::Args {
    check::Args {
        paths: Vec::new(),
        archs,
        block,
        dynamic_smem: 0,
        allow_failed_build: false,
        gate: args.gate.clone(),
        output: args.output.clone(),
        nvcc_args: Vec::new(),
    }
}

fn levels_map(levels: &Levels) -> BTreeMap<LintId, Level> {
    levels.settings().clone()
}

/// What `build` writes: `--html`, the lock it blesses, `--cache-dir`.
fn outputs(args: &Args) -> Vec<Output<'_>> {
    let mut outputs = args.output.outputs();
    outputs.extend(args.gate.outputs());
    outputs
}

/// A private directory of this run (the `nvidia-smi` stand-in), removed when it ends.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new(temp_dir: &Path) -> Result<Scratch, CliError> {
        let path = temp_dir.join(format!("occupancy-build-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).map_err(|error| {
            CliError::CouldNotCheck(format!(
                "cannot make a private directory in the temporary directory {} (TMPDIR): {error}",
                temp_dir.display()
            ))
        })?;
        Ok(Scratch { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The variables `--arch` sets for the crate's builders (said on one line), with `PATH` led by
/// the nvcc tap's directory (`--tap`) and an `nvidia-smi` stand-in when the machine has none.
fn builder_variables(
    args: &Args,
    env: &Environment,
    scratch: &Path,
    tap: Option<&tap::Tap>,
) -> Result<Vec<(String, std::ffi::OsString)>, CliError> {
    let mut vars = arch_env::variables(&args.archs, &env.build_vars);
    vars.extend(arch_env::toolkit_variables(&env.build_vars));
    vars.extend(tap.map(|tap| tap.variables(env)).unwrap_or_default());
    let path = env.build_vars.get("PATH");
    let mut said: Vec<String> = (vars.iter())
        .map(|(name, value)| format!("{name}={}", value.to_string_lossy()))
        .collect();
    let mut first: Vec<PathBuf> = tap.map(|tap| tap.bin.clone()).into_iter().collect();
    if !args.archs.is_empty() && !arch_env::has_nvidia_smi(path) {
        let written =
            arch_env::write_nvidia_smi_stand_in(scratch, &args.archs).map_err(|error| {
                CliError::CouldNotCheck(format!("writing the nvidia-smi stand-in: {error}"))
            })?;
        if written {
            first.push(scratch.to_path_buf());
            said.push("an nvidia-smi that answers the compute capability".into());
        }
    }
    if let Some(tap) = tap {
        said.push(format!("PATH led by the nvcc tap ({})", tap.bin.display()));
    }
    if !first.is_empty() {
        first.extend(path.map(std::env::split_paths).into_iter().flatten());
        let joined = std::env::join_paths(first)
            .map_err(|error| CliError::CouldNotCheck(format!("PATH: {error}")))?;
        vars.push(("PATH".into(), joined));
    }
    if !said.is_empty() {
        eprintln!("note: for the crate's builders: {}", said.join(", "));
    }
    Ok(vars)
}

/// Each `OUT_DIR` once (cargo reports a build script again for each target that needs it).
fn distinct(packages: &[BuiltPackage]) -> Vec<&BuiltPackage> {
    let mut seen = std::collections::BTreeSet::new();
    packages
        .iter()
        .filter(|package| seen.insert(package.out_dir.clone()))
        .collect()
}

/// What the run saw, for its closing lines.
#[derive(Debug, Default)]
struct Summary {
    packages_with_code: Vec<String>,
    own_builds: Vec<String>,
    rows_or_findings: usize,
}

impl Summary {
    fn say(&self, scripts: usize) {
        eprintln!(
            "note: {} of {scripts} build scripts left device code in OUT_DIR{}{}",
            self.packages_with_code.len(),
            match self.packages_with_code.is_empty() {
                true => String::new(),
                false => format!(": {}", self.packages_with_code.join(", ")),
            },
            match self.own_builds.is_empty() {
                true => String::new(),
                false => format!(
                    "; checked by their own occupancy-build: {}",
                    self.own_builds.join(", ")
                ),
            }
        );
    }
}

/// One package's `OUT_DIR`: its own occupancy-build report taken in, or its products found and
/// checked.
fn check_package(
    args: &Args,
    env: &Environment,
    package: &BuiltPackage,
    (levels, summary): (&Levels, &mut Summary),
    (stream, mut lock): (&mut ReportStream, Option<&mut Lock>),
) -> Result<(), CliError> {
    let mut covered = products::Covered::default();
    if let Some(report) = this_builds_report(package)? {
        covered = take_own_report(package, report, summary, stream)?;
    }
    let found = products::find(package, &covered).map_err(|error| {
        CliError::CouldNotCheck(format!(
            "reading the OUT_DIR of `{}` ({}): {error}",
            package.name,
            package.out_dir.display()
        ))
    })?;
    if found.products.is_empty() {
        return Ok(());
    }
    summary.packages_with_code.push(package.name.clone());
    say_products(package, &found);
    let settings = settings_of(package, env)?;
    let levels = levels.with_crate(&settings.lints).map_err(|error| {
        CliError::Input(format!(
            "[package.metadata.occupancy.lints] of `{}`: {error}",
            package.name
        ))
    })?;
    let archs = settings.archs.clone().unwrap_or_else(|| args.archs.clone());
    let block = (settings.block.map(|block| block.threads())).or(args.block);
    let groups = group(args, package, &found.products, &archs);
    let reports = tap_reports(args, package, &found)?;
    let mut debug_rows = 0;
    for (key, inputs) in &groups {
        let mut owner = owner_of(args, package, &settings, key);
        owner.ptxas_reports.clone_from(&reports);
        let group_args = check_args(args, key.archs.clone(), block);
        let selected = Selected {
            inputs,
            owner: &owner,
        };
        check::check_selected(
            &group_args,
            env,
            &selected,
            &levels,
            (stream, lock.as_deref_mut()),
        )?;
        debug_rows += owner.debug_rows.get() + usize::from(key.debug) * inputs.len();
    }
    say_debug_code(args, package, debug_rows);
    if let Some(reports) = &reports {
        reports.say_unjoined(&package.name);
    }
    for product in &found.products {
        if let ProductKind::Ptx(target) = &product.kind {
            arch_specific(package, (product, target), &archs, &levels, stream)?;
        }
    }
    summary.rows_or_findings += groups.values().map(Vec::len).sum::<usize>();
    Ok(())
}

/// With `--tap`, the package's kept reports of ptxas, read (`ptxas_reports::TapReports`), and one line
/// that says what was kept; without it, none are read.
fn tap_reports(
    args: &Args,
    package: &BuiltPackage,
    found: &Products,
) -> Result<Option<std::rc::Rc<TapReports>>, CliError> {
    if !args.tap {
        return Ok(None);
    }
    let reports = TapReports::read(&found.tap_reports)?;
    let stale = match found.stale_tap_reports {
        0 => String::new(),
        count => format!(" ({count} older than its build script's last run, not read)"),
    };
    let binaries = (found.products.iter()).any(|p| matches!(p.kind, ProductKind::Binary(_)));
    if found.tap_reports.is_empty() && binaries {
        eprintln!(
            "note: `{}`: no report of the nvcc tap in its OUT_DIR{stale}: its build script did not compile under the tap (cargo found it fresh, or its builder calls no nvcc through NVCC, PATH or CMake's launcher); `cargo clean -p {}` and build again with --tap",
            package.name, package.name
        );
    } else if !found.tap_reports.is_empty() {
        let without = match reports.without_kernels() {
            0 => String::new(),
            count => format!(" ({count} of compiles without a kernel)"),
        };
        eprintln!(
            "note: `{}`: {} report(s) of ptxas kept by the nvcc tap{without}, {} kernel record(s){stale}",
            package.name,
            found.tap_reports.len(),
            reports.records()
        );
    }
    Ok(Some(std::rc::Rc::new(reports)))
}

/// Whether the `-G` code of `package` is held back (its findings warnings, no lock entry): only
/// in a profile cargo compiled the package unoptimized in (`cc` adds `-G` there, and a release
/// build will not ship it), unless `--debug-code`. In an optimized profile `-G` was asked for by
/// hand and is what ships, so it gates; so does a package whose profile cargo did not report.
fn holds_back_debug_code(args: &Args, package: &BuiltPackage) -> bool {
    !args.debug_code && package.optimized == Some(false)
}

/// The one line that says a package's facts are code compiled for debugging, and what was done.
fn say_debug_code(args: &Args, package: &BuiltPackage, count: usize) {
    if count == 0 {
        return;
    }
    let what = match (args.debug_code, package.optimized) {
        (true, _) => "gated anyway (--debug-code)",
        (false, Some(false)) => "its findings are warnings here and no lock records it; build with `-- --release` (or pass --debug-code to gate it)",
        (false, Some(true)) => "seen in an optimized (release) profile, where `cc` adds no `-G`: the build asks for it by hand and ships it, so it gates; drop `-G` from the build's nvcc flags",
        (false, None) => "cargo reported no profile of the package, so it gates as shipped code",
    };
    eprintln!(
        "warning: `{}`: {count} kernel row(s)/module(s) of code compiled for debugging (`nvcc -G`): unoptimized device code; {what}",
        package.name
    );
}

/// The largest own report read: far above what occupancy-build writes for thousands of kernels.
const MAX_OWN_REPORT_BYTES: u64 = 64 << 20;

/// The package's own occupancy-build report (`OUT_DIR/occupancy.json`), when it is this build's:
/// written since its build script last started. One an earlier build left is said and not taken
/// (every product is then read here); one too large to be a report is an error.
fn this_builds_report(package: &BuiltPackage) -> Result<Option<Report>, CliError> {
    let path = package.out_dir.join("occupancy.json");
    let Ok(metadata) = std::fs::metadata(&path) else {
        return Ok(None);
    };
    if !metadata.is_file() {
        return Err(CliError::Input(format!(
            "{}: not a regular file, where occupancy-build writes its report: not read",
            shown(&path)
        )));
    }
    if metadata.len() > MAX_OWN_REPORT_BYTES {
        return Err(CliError::Input(format!(
            "{}: {} bytes, more than any report occupancy-build writes ({MAX_OWN_REPORT_BYTES} bytes): not read",
            shown(&path),
            metadata.len()
        )));
    }
    let started = products::script_started(&package.out_dir);
    if !products::touched_since(&path, started) {
        eprintln!(
            "warning: `{}`: {} predates its build script's last run, so it is no report of this build: not taken; every product of its OUT_DIR is read here",
            package.name,
            shown(&path)
        );
        return Ok(None);
    }
    read_own_report(&path).map(Some)
}

/// A package built through occupancy-build: its own report taken in, unless its build failed
/// (an error) or skipped its checks (said; its products are then read here). What it covers:
/// the files it names and its private directory.
fn take_own_report(
    package: &BuiltPackage,
    report: Report,
    summary: &mut Summary,
    stream: &mut ReportStream,
) -> Result<products::Covered, CliError> {
    if let Some(why) = &report.failed {
        return Err(CliError::CouldNotCheck(format!(
            "the occupancy-build of `{}` failed ({why}), though cargo built it: nothing of it was checked",
            package.name
        )));
    }
    if let Some(why) = &report.skipped {
        eprintln!(
            "warning: `{}`: its occupancy-build skipped its checks ({why}): its products are read here",
            package.name
        );
        return Ok(products::Covered::default());
    }
    summary.own_builds.push(package.name.clone());
    summary.rows_or_findings += report.kernels.len() + report.findings.len();
    stream.add_report(&report)?;
    let private_dir = std::fs::canonicalize(package.out_dir.join("occupancy")).ok();
    let files = (report.outputs.iter()).map(|output| package.out_dir.join(output));
    Ok(products::Covered {
        files: files.collect(),
        private_dir,
    })
}

/// Who shipped a group of a package's products: the package, why its findings are held back
/// (stale files; `-G` code unless `--debug-code`), its kernel tables and its lock prefix.
fn owner_of(
    args: &Args,
    package: &BuiltPackage,
    settings: &OccupancySettings,
    key: &GroupKey,
) -> Owner {
    let held_back = match (key.stale, key.debug) {
        (true, _) => Some(STALE.to_owned()),
        (false, true) => Some(check::DEBUG_CODE.to_owned()),
        (false, false) => None,
    };
    Owner {
        crate_name: Some(package.name.clone()),
        held_back,
        left_by_earlier_build: key.stale,
        hold_back_debug_code: holds_back_debug_code(args, package),
        debug_rows: std::cell::Cell::new(0),
        launch_tables: launch_tables(args, settings),
        ptxas_reports: None,
        lock_prefix: Some((
            occupancy_build::cli::shown_path(&relative(&package.out_dir)),
            lock_keys::package_prefix(package),
        )),
    }
}

fn read_own_report(path: &Path) -> Result<Report, CliError> {
    let text =
        std::fs::read_to_string(path).map_err(|error| CliError::cannot_read(path, &error))?;
    serde_json::from_str(&text).map_err(|error| {
        CliError::Input(format!(
            "{} is not an occupancy report: {error}",
            path.display()
        ))
    })
}

/// One line per package: what its `OUT_DIR` held, stale files named.
fn say_products(package: &BuiltPackage, found: &Products) {
    let ptx = (found.products.iter())
        .filter(|p| matches!(p.kind, ProductKind::Ptx(_)))
        .count();
    let binaries = found.products.len() - ptx;
    let mut parts = vec![format!("{ptx} PTX, {binaries} binaries")];
    if found.host_only > 0 {
        parts.push(format!("{} host-only", found.host_only));
    }
    if found.archived_objects > 0 {
        parts.push(format!(
            "{} objects its linked library holds",
            found.archived_objects
        ));
    }
    if found.identical_copies > 0 {
        parts.push(format!(
            "{} byte-identical copies read once",
            found.identical_copies
        ));
    }
    if !found.covered.is_empty() {
        parts.push(format!(
            "{} covered by its own occupancy-build report",
            found.covered.len()
        ));
    }
    let texts = found.texts_read;
    parts.push(format!(
        "{} text file(s), {} bytes read for the names the build uses",
        texts.files, texts.bytes
    ));
    eprintln!(
        "note: `{}`: {} in {}",
        package.name,
        parts.join(", "),
        shown(&package.out_dir)
    );
    let stale: Vec<&Product> = found.products.iter().filter(|p| p.stale).collect();
    if let Some(first) = stale.first() {
        eprintln!(
            "warning: `{}`: {} file(s) of OUT_DIR predate its build script's last run and nothing it wrote names them (first: {}): read, and their findings do not gate; `cargo clean -p {}` to drop them",
            package.name,
            stale.len(),
            shown(&first.path),
            package.name
        );
    }
    for path in &found.linked_outside {
        eprintln!(
            "note: `{}` links {} from outside its OUT_DIR: not read (`cargo occupancy check {}` reads it)",
            package.name,
            shown(path),
            shown(path)
        );
    }
}

/// `path` from the current directory when under it (as rows show paths), else as it is.
fn relative(path: &Path) -> PathBuf {
    let current = std::env::current_dir().ok();
    let relative = current
        .as_deref()
        .and_then(|dir| path.strip_prefix(dir).ok());
    relative.unwrap_or(path).to_path_buf()
}

fn shown(path: &Path) -> String {
    let current = std::env::current_dir().ok();
    let relative = current
        .as_deref()
        .and_then(|dir| path.strip_prefix(dir).ok());
    occupancy_build::cli::shown_path(relative.unwrap_or(path))
}

/// The package's `[package.metadata.occupancy]` over its workspace's, or none when cargo did not
/// name its manifest.
fn settings_of(package: &BuiltPackage, env: &Environment) -> Result<OccupancySettings, CliError> {
    let Some(dir) = package.manifest_path.as_deref().and_then(Path::parent) else {
        return Ok(OccupancySettings::default());
    };
    let timeouts = env
        .tool_timeouts
        .as_ref()
        .map_err(|error| CliError::Usage(error.to_string()))?;
    occupancy_build::cli::package_settings(dir, Some(&env.cargo), timeouts)
        .map_err(|error| CliError::Input(error.to_string()))
}

/// `--kernel NAME:block=N[,dynamic_smem=B]`.
fn kernel_table(value: &str) -> Result<(String, KernelLaunch), String> {
    let (name, keys) = value
        .rsplit_once(':')
        .ok_or("expected NAME:block=N[,dynamic_smem=BYTES]")?;
    let mut launch = KernelLaunch::default();
    for pair in keys.split(',') {
        let (key, number) = pair
            .split_once('=')
            .ok_or(format!("`{pair}`: expected KEY=N"))?;
        let number: u32 = (number.trim().parse()).map_err(|error| format!("`{key}`: {error}"))?;
        match key.trim() {
            "block" if number > 0 => {
                launch.block = Some(occupancy_core::spec::BlockDim::linear(number))
            }
            "block" => return Err("block must be at least 1 thread".into()),
            "dynamic_smem" => launch.dynamic_smem_bytes = Some(number),
            other => {
                return Err(format!(
                    "unknown key `{other}` (expected `block` or `dynamic_smem`)"
                ))
            }
        }
    }
    Ok((name.to_owned(), launch))
}

/// The kernel tables of a package: the command line's, each replaced by the crate's table of
/// the same name (the crate's word wins).
fn launch_tables(args: &Args, settings: &OccupancySettings) -> BTreeMap<String, KernelLaunch> {
    let mut tables: BTreeMap<String, KernelLaunch> = args.kernels.iter().cloned().collect();
    tables.extend(settings.kernel_launches.clone());
    tables
}

/// Products checked together: the same archs, stale or not, compiled for debugging or not.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    archs: Vec<String>,
    stale: bool,
    debug: bool,
}

/// The products grouped for `check`: binaries at the asked archs; each PTX module at the asked
/// archs the driver can JIT it for (an arch-specific one under its own name, `sm_90a`), or at
/// its own target when none is asked.
fn group(
    args: &Args,
    package: &BuiltPackage,
    products: &[Product],
    archs: &[String],
) -> BTreeMap<GroupKey, Vec<Input>> {
    let mut groups: BTreeMap<GroupKey, Vec<Input>> = BTreeMap::new();
    for product in products {
        let (key, input) = match &product.kind {
            ProductKind::Binary(kind) => (
                GroupKey {
                    archs: archs.to_vec(),
                    stale: product.stale,
                    debug: false,
                },
                Input::Binary(relative(&product.path), *kind),
            ),
            ProductKind::Ptx(target) => {
                let on = jit_archs(target, archs);
                if on.is_empty() {
                    eprintln!(
                        "note: `{}`: {} is PTX for {}, which no asked arch ({}) can JIT: not checked",
                        package.name,
                        shown(&product.path),
                        target.arch,
                        archs.join(", ")
                    );
                    continue;
                }
                let key = GroupKey {
                    archs: on,
                    stale: product.stale,
                    debug: target.debug && holds_back_debug_code(args, package),
                };
                (key, Input::Ptx(relative(&product.path)))
            }
        };
        groups.entry(key).or_default().push(input);
    }
    groups
}

/// The archs PTX for `target` is checked on: what the driver JITs it for on each asked arch
/// (`occupancy_binary::jit_target`: an arch-specific target on its own GPU, by its own name),
/// else the target itself.
fn jit_archs(target: &PtxTarget, archs: &[String]) -> Vec<String> {
    if archs.is_empty() {
        return vec![target.arch.clone()];
    }
    let mut on: Vec<String> = (archs.iter())
        .filter_map(|arch| jit_target(&target.arch, arch))
        .collect();
    on.dedup();
    on
}

/// The arch findings of a PTX module: `missing_kernel` where it was built for an arch other
/// than the asked ones ([`arch_not_built`]), `arch_specific_ptx` where its target is
/// arch-specific (`sm_90a`).
fn arch_specific(
    package: &BuiltPackage,
    (product, target): (&Product, &PtxTarget),
    archs: &[String],
    levels: &Levels,
    stream: &mut ReportStream,
) -> Result<(), CliError> {
    let refused: Vec<&str> = (archs.iter())
        .filter(|arch| jit_archs(target, std::slice::from_ref(*arch)).is_empty())
        .map(String::as_str)
        .collect();
    let not_built = !archs.is_empty() && refused.len() == archs.len() && !product.stale;
    if !target.arch.ends_with('a') && !not_built {
        return Ok(());
    }
    let text = std::fs::read_to_string(&product.path)
        .map_err(|error| CliError::cannot_read(&product.path, &error))?;
    let kernels: Vec<&str> = text.lines().filter_map(entry_name).collect();
    let module = shown(&product.path);
    if not_built {
        let finding = arch_not_built(package, (&module, target), &kernels, &refused, levels);
        stream.add_finding(&finding, None)?;
    }
    if !target.arch.ends_with('a') {
        return Ok(());
    }
    let Check::Product(make) = LintId::ArchSpecificPtx.lint().check else {
        unreachable!("arch_specific_ptx is a product check")
    };
    let made = make(&module, &target.arch, &kernels);
    let sources = LevelSources {
        environment: Some(levels.settings()),
        ..LevelSources::default()
    };
    let mut notes = made.notes;
    if !refused.is_empty() {
        notes.push(format!(
            "asked for {}: no row, as the driver cannot load it there",
            refused.join(", ")
        ));
    }
    let finding = Finding {
        lint: made.lint,
        level: resolve_level(made.lint, &sources),
        crate_name: Some(package.name.clone()),
        kernel: kernels.first().map(|name| (*name).to_owned()),
        arch: Some(target.arch.clone()),
        message: made.message,
        notes,
        help: made.help,
        location: Some(Location {
            kind: LocationKind::Binary,
            path: module,
            line: 0,
            column: 0,
        }),
        reason: None,
    };
    stream.add_finding(&finding, None)
}

/// Issue #42, class 11: the rule of an asked arch the build did not make. A module (not left
/// by an earlier build) whose PTX no asked arch can JIT (built for another arch: a build script cargo found fresh, which did
/// not see this run's arch variables) is not read as if built for the asked one: its kernels
/// are `missing_kernel` there, naming the arch it holds and the fix.
fn arch_not_built(
    package: &BuiltPackage,
    (module, target): (&str, &PtxTarget),
    kernels: &[&str],
    refused: &[&str],
    levels: &Levels,
) -> Finding {
    let sources = LevelSources {
        environment: Some(levels.settings()),
        ..LevelSources::default()
    };
    let asked = refused.join(", ");
    let name = &package.name;
    Finding {
        lint: LintId::MissingKernel,
        level: resolve_level(LintId::MissingKernel, &sources),
        crate_name: Some(name.clone()),
        kernel: kernels.first().map(|kernel| (*kernel).to_owned()),
        arch: refused.first().map(|arch| (*arch).to_owned()),
        message: format!(
            "{module} holds PTX for {}, which {asked} cannot JIT: it was built for another arch than `--arch {asked}` asks, so its {} kernel(s) have no row there",
            target.arch,
            kernels.len()
        ),
        notes: vec![format!(
            "a build script cargo finds fresh does not rerun, so it never sees the arch variables this run sets (CUDA_COMPUTE_CAP, CUDA_ARCH, CUDAARCHS, CMAKE_CUDA_ARCHITECTURES) unless it names them in `cargo:rerun-if-env-changed`"
        )],
        help: Some(format!(
            "`cargo clean -p {name}` and build again, so that its build script runs for {asked}, or set the variable its builder reads"
        )),
        location: Some(Location {
            kind: LocationKind::Binary,
            path: module.to_owned(),
            line: 0,
            column: 0,
        }),
        reason: None,
    }
}

/// The kernel a PTX line declares (`.visible .entry saxpy(`), if it declares one.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().split(".entry").nth(1)?;
    let name = rest.trim_start().split(['(', ' ', '\t']).next()?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(arch: &str) -> PtxTarget {
        PtxTarget {
            arch: arch.into(),
            debug: false,
        }
    }

    #[test]
    fn ptx_is_checked_where_the_driver_can_jit_it() {
        let asked = ["sm_80".to_owned(), "sm_90".to_owned(), "sm_100".to_owned()];
        assert_eq!(jit_archs(&target("sm_80"), &asked), asked);
        assert_eq!(jit_archs(&target("sm_90"), &asked), ["sm_90", "sm_100"]);
        assert_eq!(jit_archs(&target("sm_90a"), &asked), ["sm_90a"]);
        assert!(jit_archs(&target("sm_120a"), &asked).is_empty());
        assert_eq!(jit_archs(&target("sm_90a"), &[]), ["sm_90a"]);
    }

    #[test]
    fn kernel_tables_parse_from_the_command_line() {
        let (name, launch) = kernel_table("softmax_*:block=512,dynamic_smem=4096").unwrap();
        assert_eq!(name, "softmax_*");
        assert_eq!(launch.block.map(|block| block.threads()), Some(512));
        assert_eq!(launch.dynamic_smem_bytes, Some(4096));
        assert!(kernel_table("k:block=0").is_err());
        assert!(kernel_table("k:grid=4")
            .unwrap_err()
            .contains("unknown key `grid`"));
        assert!(kernel_table("k").is_err());
    }

    #[test]
    fn entries_are_read_from_ptx_lines() {
        assert_eq!(entry_name(".visible .entry saxpy(\n"), Some("saxpy"));
        assert_eq!(entry_name("\t.entry _Z1kv ("), Some("_Z1kv"));
        assert_eq!(entry_name(".visible .func f("), None);
    }
}
