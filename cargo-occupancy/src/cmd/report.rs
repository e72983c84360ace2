//! `cargo occupancy report`: one table of every kernel × architecture that the workspace's builds
//! checked, read from the reports `occupancy-build` wrote under `<target dir>/occupancy/*.json`;
//! sortable by any column, filterable by crate, kernel, arch or lint, in every output format.
//!
//! Also home of what `check` and `explain` share with it: finding the target directory (cargo
//! metadata), reading report files (the one report model, which the build helper writes), and
//! writing a report in the format asked for.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use occupancy_build::cli::{run_bounded, ToolKind, ToolTimeouts};
use occupancy_build::TrackedEnv;
use occupancy_core::lint::LintId;

use crate::outputs::{check_outputs, Output};
use occupancy_core::report::{
    parse_sort_key, render_html, render_json, render_markdown, render_sarif, render_text,
    KernelRow, Query, Report, RowLaunch,
};

/// `cargo occupancy report` arguments.
#[derive(clap::Args, Debug)]
#[command(
    about = "Show the occupancy report of every kernel the workspace's builds checked (target/occupancy/*.json)"
)]
pub struct Args {
    /// Directory holding the report files; default: `<target dir>/occupancy` from `cargo metadata`.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Cargo.toml of the workspace (passed to `cargo metadata`).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Keep only kernels of this crate (repeatable).
    #[arg(long = "crate", value_name = "NAME")]
    pub crates: Vec<String>,
    /// Keep only kernels whose name contains this text (repeatable).
    #[arg(long = "kernel", value_name = "TEXT")]
    pub kernels: Vec<String>,
    /// Keep only this architecture (repeatable; `sm_90`, `90`, `9.0`).
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Keep only kernels with a finding of this lint (repeatable).
    #[arg(long = "lint", value_name = "LINT")]
    pub lints: Vec<String>,
    /// Sort by a column (repeatable, most significant first): crate, kernel, arch, block,
    /// registers, spills, stack, smem, barriers, blocks, occupancy, limiter, headroom, findings.
    /// Prefix with `-` or suffix `:desc` for descending.
    #[arg(long = "sort", value_name = "COLUMN", allow_hyphen_values = true)]
    pub sort: Vec<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How a report is printed; shared by `check` and `report`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// Print `{"schema_version", "kernels": [...], "findings": [...]}`.
    #[arg(long, conflicts_with_all = ["sarif", "markdown"])]
    pub json: bool,
    /// Print SARIF 2.1.0 (for code scanning).
    #[arg(long, conflicts_with_all = ["json", "markdown"])]
    pub sarif: bool,
    /// Print Markdown (for $GITHUB_STEP_SUMMARY or a pull-request comment).
    #[arg(long, conflicts_with_all = ["json", "sarif"])]
    pub markdown: bool,
    /// Also write a single-file HTML report with the occupancy curves of every kernel.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

impl OutputArgs {
    /// The files these options write (only `--html`; the formats go to standard output).
    pub fn outputs(&self) -> Vec<Output<'_>> {
        self.html
            .iter()
            .map(|path| Output {
                flag: "--html",
                path,
                is_dir: false,
            })
            .collect()
    }
}

/// An error that ends the command with exit code 2 and this message.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl From<String> for UsageError {
    fn from(message: String) -> Self {
        UsageError(message)
    }
}

/// Prints `error: ...` and returns exit code 2.
pub fn fail(error: &UsageError) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(2)
}

/// Prints the report in the format asked for (text by default) and writes the HTML file.
pub fn emit(report: &Report, output: &OutputArgs, title: &str) -> Result<(), UsageError> {
    let text = if output.json {
        render_json(report)
    } else if output.sarif {
        render_sarif(report, env!("CARGO_PKG_VERSION"))
    } else if output.markdown {
        render_markdown(report)
    } else {
        render_text(report)
    };
    if let Some(path) = &output.html {
        let html = render_html(report, title);
        crate::outputs::write_atomically("--html", path, html.as_bytes())?;
        if !(output.json || output.sarif || output.markdown) {
            eprintln!("wrote {}", occupancy_build::cli::shown_path(path));
        }
    }
    print!("{text}");
    Ok(())
}

/// The workspace's target directory, from `cargo metadata` (honours `CARGO_TARGET_DIR` and
/// `build.target-dir`); run as `$CARGO` when cargo runs this subcommand, else `cargo` on PATH,
/// within the time limit of every tool (`OCCUPANCY_TOOL_TIMEOUT`).
pub fn target_dir(manifest_path: Option<&Path>) -> Result<PathBuf, UsageError> {
    let mut command = cargo_metadata::MetadataCommand::new();
    command.no_deps();
    if let Some(path) = manifest_path {
        command.manifest_path(path);
    }
    match cargo_metadata(&command) {
        Ok(metadata) => Ok(metadata.target_directory.into_std_path_buf()),
        Err(MetadataError::Tool(error)) => Err(UsageError(format!(
            "{}; or give the report directory with --dir",
            error.to_string().trim_start_matches("occupancy-build: ")
        ))),
        Err(MetadataError::Cargo(error)) => Err(metadata_error(error)),
    }
}

/// Why `cargo metadata` gave no metadata: it did not run (or ran too long), or said why.
enum MetadataError {
    Tool(occupancy_build::Error),
    Cargo(cargo_metadata::Error),
}

/// `MetadataCommand::exec` within the time limit of every tool.
fn cargo_metadata(
    command: &cargo_metadata::MetadataCommand,
) -> Result<cargo_metadata::Metadata, MetadataError> {
    let timeouts = ToolTimeouts::from_env(&TrackedEnv::new()).map_err(MetadataError::Tool)?;
    let output = match run_bounded(&mut command.cargo_command(), &timeouts, ToolKind::Probe) {
        Ok(output) => output,
        Err(occupancy_build::Error::ToolNotStarted { error, .. }) => {
            return Err(MetadataError::Cargo(error.into()))
        }
        Err(error) => return Err(MetadataError::Tool(error)),
    };
    let cargo = |error: cargo_metadata::Error| MetadataError::Cargo(error);
    if !output.status.success() {
        let stderr = String::from_utf8(output.stderr).map_err(|error| cargo(error.into()))?;
        return Err(cargo(cargo_metadata::Error::CargoMetadata { stderr }));
    }
    let stdout = std::str::from_utf8(&output.stdout).map_err(|error| cargo(error.into()))?;
    let json = stdout
        .lines()
        .find(|line| line.starts_with('{'))
        .ok_or(cargo(cargo_metadata::Error::NoJson))?;
    cargo_metadata::MetadataCommand::parse(json).map_err(cargo)
}

/// What to say when `cargo metadata` could not tell the target directory.
fn metadata_error(error: cargo_metadata::Error) -> UsageError {
    match error {
        cargo_metadata::Error::Io(error) => UsageError(format!(
            "cannot run `cargo metadata`: {error}; give the report directory with --dir"
        )),
        cargo_metadata::Error::CargoMetadata { stderr } => UsageError(format!(
            "`cargo metadata` failed (run inside a Rust workspace, or give --manifest-path or --dir):\n{}",
            stderr.trim_end()
        )),
        other => UsageError(format!(
            "`cargo metadata` printed something this cannot read: {other}; give the report directory with --dir"
        )),
    }
}

/// The report directory: `--dir`, else `<target dir>/occupancy`.
pub fn report_dir(dir: Option<&Path>, manifest_path: Option<&Path>) -> Result<PathBuf, UsageError> {
    match dir {
        Some(dir) => Ok(dir.to_path_buf()),
        None => Ok(target_dir(manifest_path)?.join("occupancy")),
    }
}

/// Reads every `*.json` report in `dir` (sorted by file name) into one report.
pub fn load_dir(dir: &Path) -> Result<Report, UsageError> {
    Ok(Report::merge(load_reports(dir)?))
}

/// Every `*.json` report in `dir`, sorted by file name.
fn load_reports(dir: &Path) -> Result<Vec<Report>, UsageError> {
    let entries = std::fs::read_dir(dir).map_err(|error| {
        UsageError(format!(
            "no occupancy reports in {}: {error}. Build a crate whose build.rs uses occupancy-build first (`cargo build`), or use `cargo occupancy check PATHS`",
            occupancy_build::cli::shown_path(dir)
        ))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "json")
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(UsageError(format!(
            "no occupancy reports (*.json) in {}: build a crate whose build.rs uses occupancy-build first",
            occupancy_build::cli::shown_path(dir)
        )));
    }
    let mut reports = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|error| {
            UsageError(format!(
                "cannot read {}: {error}",
                occupancy_build::cli::shown_path(&path)
            ))
        })?;
        reports.push(Report::from_json(&text).map_err(|error| {
            UsageError(format!(
                "{}: {error}",
                occupancy_build::cli::shown_path(&path)
            ))
        })?);
    }
    Ok(reports)
}

/// What a reader must know before trusting the table: builds that failed or checked nothing.
/// One line per such report, for stderr.
fn unchecked_builds(reports: &[Report]) -> Vec<String> {
    let name = |report: &Report| report.crate_name.clone().unwrap_or_else(|| "?".into());
    let mut lines = Vec::new();
    for report in reports {
        if let Some(why) = &report.failed {
            lines.push(format!(
                "error: crate `{}`: its last build failed, so nothing of it was checked: {why}",
                name(report)
            ));
        } else if let Some(why) = &report.skipped {
            lines.push(format!(
                "warning: crate `{}`: its last build checked nothing: {why}",
                name(report)
            ));
        }
    }
    lines
}

/// Builds the query of `--crate/--kernel/--arch/--lint/--sort`.
fn query(args: &Args) -> Result<Query, UsageError> {
    let lints = args
        .lints
        .iter()
        .map(|name| {
            name.parse::<LintId>()
                .map_err(|error| UsageError(format!("--lint: {error}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sort = args
        .sort
        .iter()
        .map(|key| parse_sort_key(key).map_err(|error| UsageError(format!("--sort: {error}"))))
        .collect::<Result<Vec<_>, _>>()?;
    for arch in &args.archs {
        super::arch::lookup_arch(arch).map_err(|error| UsageError(format!("--arch: {error}")))?;
    }
    Ok(Query {
        crates: args.crates.clone(),
        kernels: args.kernels.clone(),
        archs: args.archs.clone(),
        lints,
        sort,
    })
}

/// Runs `cargo occupancy report`. Exit code 0 (the report is information; `check` and the build
/// are the gates), 1 when a crate's last build failed (its report holds nothing checked), 2 on
/// usage errors or unreadable reports.
pub fn run(args: Args) -> ExitCode {
    match run_inner(&args) {
        Ok(false) => ExitCode::SUCCESS,
        Ok(true) => ExitCode::from(1),
        Err(error) => fail(&error),
    }
}

/// Prints the report; `true` when a build behind it failed.
fn run_inner(args: &Args) -> Result<bool, UsageError> {
    let query = query(args)?;
    let dir = report_dir(args.dir.as_deref(), args.manifest_path.as_deref())?;
    check_outputs(&args.output.outputs(), &[dir.as_path()])?;
    let reports = load_reports(&dir)?;
    let wanted = |report: &Report| {
        args.crates.is_empty()
            || report
                .crate_name
                .as_ref()
                .is_some_and(|name| args.crates.contains(name))
    };
    let unchecked: Vec<Report> = reports.iter().filter(|r| wanted(r)).cloned().collect();
    let any_failed = unchecked.iter().any(|report| report.failed.is_some());
    let report = query.apply(&Report::merge(reports));
    emit(&report, &args.output, "workspace")?;
    for line in unchecked_builds(&unchecked) {
        eprintln!("{line}");
    }
    Ok(any_failed)
}

/// A row from a ptxas record, for `check` and `explain`.
pub fn row_from_record(
    record: &occupancy_core::ptxas::KernelRecord,
    ptx: Option<&occupancy_core::ptxas::PtxEntry>,
    launch: RowLaunch,
) -> Result<KernelRow, UsageError> {
    KernelRow::from_record(record, ptx, launch)
        .map_err(|error| UsageError(format!("kernel `{}`: {error}", record.name)))
}
