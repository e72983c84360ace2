//! `cargo occupancy report`: one table of every kernel × architecture that the workspace's builds
//! checked, read from the reports `occupancy-build` wrote under `<target dir>/occupancy/*.json`;
//! sortable by any column, filterable by crate, kernel, arch or lint, in every output format.
//!
//! Where the reports are and how they are read is `crate::workspace`; how a report is printed,
//! `crate::format`.

use std::path::PathBuf;

use occupancy_core::lint::LintId;
use occupancy_core::report::{parse_sort_key, Query, Report};

use crate::archs::ArchNames;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::format::{emit, OutputArgs};
use crate::outputs::check_outputs;
use crate::workspace::{load_reports, report_dir};

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
fn query(args: &Args, archs: &ArchNames) -> Result<Query, CliError> {
    let lints = args
        .lints
        .iter()
        .map(|name| {
            name.parse::<LintId>()
                .map_err(|error| CliError::Usage(format!("--lint: {error}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let sort = args
        .sort
        .iter()
        .map(|key| parse_sort_key(key).map_err(|error| CliError::Usage(format!("--sort: {error}"))))
        .collect::<Result<Vec<_>, _>>()?;
    for arch in &args.archs {
        archs
            .lookup(arch)
            .map_err(|error| CliError::Usage(format!("--arch: {error}")))?;
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
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    let query = query(args, &env.archs)?;
    let dir = report_dir(args.dir.as_deref(), args.manifest_path.as_deref(), env)?;
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
    let verdict = Outcome::failed_if(unchecked.iter().any(|report| report.failed.is_some()));
    let report = query.apply(&Report::merge(reports));
    let written = emit(&report, &args.output, "workspace");
    // What the table leaves out goes to stderr even when stdout's reader went away.
    if matches!(written, Ok(()) | Err(CliError::StdoutClosed)) {
        for line in unchecked_builds(&unchecked) {
            eprintln!("{line}");
        }
    }
    verdict.despite_closed_stdout(written)
}
