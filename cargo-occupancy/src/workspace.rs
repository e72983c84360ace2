//! The reports the workspace's builds wrote (`<target dir>/occupancy/*.json`, the one report
//! model the build helper writes): where they are (`cargo metadata`, within the time limit of
//! every tool), and reading them. `report` tables them; `explain` finds a kernel in them.

use std::path::{Path, PathBuf};

use occupancy_build::cli::{run_bounded, ToolKind, ToolTimeouts};
use occupancy_core::report::Report;

use crate::env::Environment;
use crate::error::CliError;

/// The workspace's target directory, from `cargo metadata` (honours `CARGO_TARGET_DIR` and
/// `build.target-dir`); run as `$CARGO` when cargo runs this subcommand, else `cargo` on PATH,
/// within the time limit of every tool (`OCCUPANCY_TOOL_TIMEOUT`).
pub fn target_dir(manifest_path: Option<&Path>, env: &Environment) -> Result<PathBuf, CliError> {
    let mut command = cargo_metadata::MetadataCommand::new();
    command.no_deps().cargo_path(&env.cargo);
    if let Some(path) = manifest_path {
        command.manifest_path(path);
    }
    let timeouts = env.tool_timeouts.as_ref().map_err(tool_error)?;
    match cargo_metadata(&command, timeouts) {
        Ok(metadata) => Ok(metadata.target_directory.into_std_path_buf()),
        Err(MetadataError::Tool(error)) => Err(tool_error(&error)),
        Err(MetadataError::Cargo(error)) => Err(metadata_error(error)),
    }
}

/// Why `cargo metadata` gave no metadata: it did not run (or ran too long), or said why.
enum MetadataError {
    Tool(occupancy_build::Error),
    Cargo(cargo_metadata::Error),
}

/// A tool's error (a bad `OCCUPANCY_TOOL_TIMEOUT`, `cargo` past its limit), with the way out.
fn tool_error(error: &occupancy_build::Error) -> CliError {
    CliError::CouldNotCheck(format!(
        "{}; or give the report directory with --dir",
        error.to_string().trim_start_matches("occupancy-build: ")
    ))
}

/// `MetadataCommand::exec` within the time limit of every tool.
fn cargo_metadata(
    command: &cargo_metadata::MetadataCommand,
    timeouts: &ToolTimeouts,
) -> Result<cargo_metadata::Metadata, MetadataError> {
    let output = match run_bounded(&mut command.cargo_command(), timeouts, ToolKind::Probe) {
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
fn metadata_error(error: cargo_metadata::Error) -> CliError {
    match error {
        cargo_metadata::Error::Io(error) => CliError::CouldNotCheck(format!(
            "cannot run `cargo metadata`: {error}; give the report directory with --dir"
        )),
        cargo_metadata::Error::CargoMetadata { stderr } => CliError::CouldNotCheck(format!(
            "`cargo metadata` failed (run inside a Rust workspace, or give --manifest-path or --dir):\n{}",
            stderr.trim_end()
        )),
        other => CliError::CouldNotCheck(format!(
            "`cargo metadata` printed something this cannot read: {other}; give the report directory with --dir"
        )),
    }
}

/// The report directory: `--dir`, else `<target dir>/occupancy`.
pub fn report_dir(
    dir: Option<&Path>,
    manifest_path: Option<&Path>,
    env: &Environment,
) -> Result<PathBuf, CliError> {
    match dir {
        Some(dir) => Ok(dir.to_path_buf()),
        None => Ok(target_dir(manifest_path, env)?.join("occupancy")),
    }
}

/// Reads every `*.json` report in `dir` (sorted by file name) into one report.
pub fn load_dir(dir: &Path) -> Result<Report, CliError> {
    Ok(Report::merge(load_reports(dir)?))
}

/// Every `*.json` report in `dir`, sorted by file name.
pub fn load_reports(dir: &Path) -> Result<Vec<Report>, CliError> {
    let entries = std::fs::read_dir(dir).map_err(|error| {
        CliError::Input(format!(
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
        return Err(CliError::Input(format!(
            "no occupancy reports (*.json) in {}: build a crate whose build.rs uses occupancy-build first",
            occupancy_build::cli::shown_path(dir)
        )));
    }
    let mut reports = Vec::new();
    for path in paths {
        let text =
            std::fs::read_to_string(&path).map_err(|error| CliError::cannot_read(&path, &error))?;
        reports.push(Report::from_json(&text).map_err(|error| {
            CliError::Input(format!(
                "{}: {error}",
                occupancy_build::cli::shown_path(&path)
            ))
        })?);
    }
    Ok(reports)
}
