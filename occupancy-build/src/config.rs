//! `[package.metadata.occupancy]` and `[workspace.metadata.occupancy]`: the crate's occupancy
//! settings, read through `cargo metadata` (the `cargo_metadata` crate), never by parsing
//! Cargo.toml by hand.
//!
//! [`load`] runs `cargo metadata --no-deps --offline` once, with the cargo that runs the build,
//! finds the package by its manifest path, and reads its metadata table over the workspace's:
//! package keys override workspace keys; lint tables merge (package wins per lint). Environment
//! variables override both (see `docs/configuration.md`). Keys are validated here; a misspelled
//! key is never guessed, it is named, with the file and the table to edit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use occupancy_core::spec::BlockDim;
use serde_json::{Map, Value};

use crate::error::settings::KNOWN_KEYS;
pub use crate::error::settings::{SettingsError, TableName};
use crate::process::{run_bounded, ToolKind, ToolTimeouts};
use crate::Error;

/// The crate's occupancy settings: `[workspace.metadata.occupancy]` overridden by
/// `[package.metadata.occupancy]`.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct OccupancySettings {
    /// `archs = ["sm_80", "sm_90"]`.
    pub archs: Option<Vec<String>>,
    /// `jit_archs = ["sm_120"]`: GPUs the shipped PTX must also run on, checked on what ptxas
    /// (the driver's JIT) makes of that PTX there.
    pub jit_archs: Option<Vec<String>>,
    /// `ptx_per_arch = true`: one PTX per target arch (see `Build::ptx_per_arch`).
    pub ptx_per_arch: Option<bool>,
    /// `[...metadata.occupancy.lints] spills = "warn"`: lint name to level word.
    pub lints: BTreeMap<String, String>,
    /// `[...metadata.occupancy.kernels.<name>.lints]`: per-kernel levels (`<name>` a kernel's
    /// symbol, readable or Rust name, or a pattern with `*`).
    pub kernel_lints: BTreeMap<String, BTreeMap<String, String>>,
    /// `[...metadata.occupancy.kernels.<name>]` `block = [32, 4]`, `dynamic_smem = 4096`: the
    /// launch an undeclared kernel the table names is checked at.
    pub kernel_launches: BTreeMap<String, KernelLaunch>,
    /// The `<name>`s of `[package.metadata.occupancy.kernels.<name>]` (not the workspace's, whose
    /// kernels may live in other members): each must name a kernel of this package.
    pub package_kernel_tables: Vec<String>,
    /// `baseline = "occupancy.lock"` (relative to the package root).
    pub baseline: Option<PathBuf>,
    /// `reports = ["json"]`.
    pub reports: Option<Vec<String>>,
    /// `block = 1024` (or `[32, 4]`): the block at which undeclared kernels are checked.
    pub block: Option<BlockDim>,
    /// `unchecked = "why"`: the attribute's opt-out for crates without an occupancy build
    /// (read by the macro; a crate whose build runs is checked anyway).
    pub unchecked: Option<String>,
    /// `require_reasons = false`: allow `allow(...)`/`expect(...)` of deny-by-default lints
    /// without a `reason` (default: required).
    pub require_reasons: Option<bool>,
    /// The package's name as cargo knows it (`None` for settings not read from a package).
    pub package_name: Option<String>,
    /// The Cargo.toml files the settings came from: the package's, then the workspace root's
    /// when it is another file (for `rerun-if-changed`).
    pub manifest_paths: Vec<PathBuf>,
}

/// The launch a kernel table gives the undeclared kernels it names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelLaunch {
    /// `block = 256` or `block = [32, 4]`.
    pub block: Option<BlockDim>,
    /// `dynamic_smem = 4096`: dynamic shared memory per block, bytes.
    pub dynamic_smem_bytes: Option<u32>,
}

impl TableName {
    fn kernel(&self, kernel: &str) -> TableName {
        TableName {
            manifest_path: self.manifest_path.clone(),
            header: format!("{} kernels.{kernel}", self.header),
        }
    }

    fn wrong(&self, key: &str, expected: &'static str) -> SettingsError {
        SettingsError::WrongValue {
            table: self.clone(),
            key: key.to_string(),
            expected,
        }
    }
}

/// Which table a value came from: the package's kernel tables must name its kernels, the
/// workspace's may name other members'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    Workspace,
    Package,
}

/// The package at `manifest_dir/Cargo.toml` and its workspace, as `cargo metadata` (run as
/// `cargo`, the build's `$CARGO`, else `cargo` on PATH, within the probes' time limit) reports
/// them, read into settings.
pub fn load(
    manifest_dir: &Path,
    cargo: Option<&Path>,
    timeouts: &ToolTimeouts,
) -> Result<OccupancySettings, SettingsError> {
    let manifest_path = manifest_dir.join("Cargo.toml");
    let mut command = cargo_metadata::MetadataCommand::new();
    command
        .manifest_path(&manifest_path)
        .no_deps()
        // Nothing to download or resolve: the build already did, and --no-deps needs neither.
        .other_options(vec!["--offline".to_string()]);
    if let Some(cargo) = cargo {
        command.cargo_path(cargo);
    }
    let metadata = run_metadata(&command, timeouts).map_err(|error| match error {
        Error::ToolTimedOut {
            command,
            limit,
            hint,
        } => SettingsError::CargoMetadataTimedOut {
            manifest_path: manifest_path.clone(),
            command,
            limit,
            hint,
        },
        Error::ToolNotStarted { error, .. } => SettingsError::CargoMetadata {
            manifest_path: manifest_path.clone(),
            source: error.into(),
        },
        other => SettingsError::CargoMetadata {
            manifest_path: manifest_path.clone(),
            source: std::io::Error::other(other.to_string()).into(),
        },
    })?;
    metadata
        .and_then(|stdout| parse_metadata(&stdout))
        .map_err(|source| SettingsError::CargoMetadata {
            manifest_path: manifest_path.clone(),
            source,
        })
        .and_then(|metadata| from_cargo_metadata(&metadata, &manifest_path))
}

/// Runs `cargo metadata` as `MetadataCommand::exec` would, within the probes' time limit:
/// `Err` when it could not start or was killed; `Ok(Err)` when it failed (its stderr);
/// `Ok(Ok(stdout))` otherwise.
fn run_metadata(
    command: &cargo_metadata::MetadataCommand,
    timeouts: &ToolTimeouts,
) -> Result<Result<Vec<u8>, cargo_metadata::Error>, Error> {
    let output = run_bounded(&mut command.cargo_command(), timeouts, ToolKind::Probe)?;
    if !output.status.success() {
        return Ok(match String::from_utf8(output.stderr) {
            Ok(stderr) => Err(cargo_metadata::Error::CargoMetadata { stderr }),
            Err(error) => Err(error.into()),
        });
    }
    Ok(Ok(output.stdout))
}

/// The metadata in `cargo metadata`'s standard output (its JSON line).
fn parse_metadata(stdout: &[u8]) -> Result<cargo_metadata::Metadata, cargo_metadata::Error> {
    let json = std::str::from_utf8(stdout)?
        .lines()
        .find(|line| line.starts_with('{'))
        .ok_or(cargo_metadata::Error::NoJson)?;
    cargo_metadata::MetadataCommand::parse(json)
}

/// The settings of the package whose manifest is `manifest_path`, from `cargo metadata`'s answer.
fn from_cargo_metadata(
    metadata: &cargo_metadata::Metadata,
    manifest_path: &Path,
) -> Result<OccupancySettings, SettingsError> {
    let wanted = canonical(manifest_path);
    let package = metadata
        .packages
        .iter()
        .find(|package| canonical(package.manifest_path.as_std_path()) == wanted)
        .ok_or_else(|| SettingsError::NotAPackage {
            manifest_path: manifest_path.to_path_buf(),
        })?;
    let package_manifest = package.manifest_path.clone().into_std_path_buf();
    let workspace_manifest = metadata
        .workspace_root
        .join("Cargo.toml")
        .into_std_path_buf();
    let mut settings = OccupancySettings {
        package_name: Some(package.name.to_string()),
        manifest_paths: vec![package_manifest.clone()],
        ..OccupancySettings::default()
    };
    if canonical(&workspace_manifest) != wanted {
        settings.manifest_paths.push(workspace_manifest.clone());
    }
    let tables = [
        (
            Scope::Workspace,
            &metadata.workspace_metadata,
            workspace_manifest,
        ),
        (Scope::Package, &package.metadata, package_manifest),
    ];
    for (scope, metadata_table, manifest_path) in tables {
        if let Some(occupancy) = metadata_table.get("occupancy") {
            let header = match scope {
                Scope::Workspace => "[workspace.metadata.occupancy]",
                Scope::Package => "[package.metadata.occupancy]",
            };
            let table = TableName {
                manifest_path,
                header: header.to_string(),
            };
            settings.apply(scope, occupancy, &table)?;
        }
    }
    Ok(settings)
}

/// What is wrong with `baseline = "path"` (relative to `package_dir`), if anything: an empty
/// value, a directory (by its trailing `/`, or on disk), a source file, cargo's own files.
/// Blessing replaces the baseline, so it must never name a file the user writes.
fn baseline_problem(path: &str, package_dir: Option<&Path>) -> Option<String> {
    if path.trim().is_empty() {
        return Some("is empty".to_string());
    }
    if path.ends_with(['/', '\\']) {
        return Some("names a directory".to_string());
    }
    let path = Path::new(path);
    if let Some(full) = package_dir.map(|dir| dir.join(path)) {
        if full.is_dir() {
            return Some(format!(
                "names a directory ({})",
                crate::fsutil::shown_path(&full)
            ));
        }
    }
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("");
    if matches!(name, "Cargo.toml" | "Cargo.lock" | "build.rs") {
        return Some(format!("names cargo's `{name}`"));
    }
    let extension = path.extension().and_then(|extension| extension.to_str());
    let kind = match extension.map(str::to_ascii_lowercase).as_deref() {
        Some("rs") => "a Rust source file",
        Some("cu" | "cuh") => "a CUDA source file",
        Some("c" | "cc" | "cpp" | "cxx" | "h" | "hh" | "hpp" | "hxx" | "inl") => {
            "a C or C++ source file"
        }
        Some("ptx") => "a PTX file",
        Some("toml") => "a TOML file",
        _ => return None,
    };
    Some(format!("names {kind}"))
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl OccupancySettings {
    /// Reads one `[...metadata.occupancy]` table over the settings so far.
    fn apply(
        &mut self,
        scope: Scope,
        value: &Value,
        table: &TableName,
    ) -> Result<(), SettingsError> {
        let entries = value.as_object().ok_or_else(|| SettingsError::NotATable {
            table: table.clone(),
            expected: "",
        })?;
        for (key, value) in entries {
            match key.as_str() {
                "lints" => {
                    for (lint, level) in level_table(value, table, "lints")? {
                        self.lints.insert(lint, level);
                    }
                }
                "kernels" => self.apply_kernels(scope, value, table)?,
                _ => self.apply_value(key, value, table)?,
            }
        }
        Ok(())
    }

    /// One plain `key = value` of an occupancy table.
    fn apply_value(
        &mut self,
        key: &str,
        value: &Value,
        table: &TableName,
    ) -> Result<(), SettingsError> {
        let wrong = |expected| table.wrong(key, expected);
        match key {
            "archs" => {
                self.archs = Some(
                    string_list(value)
                        .ok_or_else(|| wrong("a list of strings, e.g. [\"sm_80\", \"sm_90\"]"))?,
                )
            }
            "jit_archs" => {
                self.jit_archs = Some(
                    string_list(value)
                        .ok_or_else(|| wrong("a list of strings, e.g. [\"sm_120\"]"))?,
                )
            }
            "ptx_per_arch" => {
                self.ptx_per_arch = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?)
            }
            "reports" => self.reports = Some(report_formats(value, table)?),
            "block" => self.block = Some(block(value).ok_or_else(|| wrong(BLOCK_EXPECTED))?),
            "baseline" => {
                let path = value.as_str().ok_or_else(|| wrong("a path string"))?;
                let package_dir = self.manifest_paths.first().and_then(|path| path.parent());
                if let Some(problem) = baseline_problem(path, package_dir) {
                    return Err(SettingsError::BadBaseline {
                        table: table.clone(),
                        value: path.to_string(),
                        problem,
                    });
                }
                self.baseline = Some(PathBuf::from(path))
            }
            "require_reasons" => {
                self.require_reasons = Some(value.as_bool().ok_or_else(|| wrong("true or false"))?)
            }
            "unchecked" => {
                let reason = value
                    .as_str()
                    .filter(|reason| !reason.trim().is_empty())
                    .ok_or_else(|| {
                        wrong("a non-empty string saying why the crate's kernels are not checked")
                    })?;
                self.unchecked = Some(reason.to_string())
            }
            other => {
                return Err(SettingsError::UnknownKey {
                    table: table.clone(),
                    key: other.to_string(),
                    suggestion: occupancy_core::lint::did_you_mean(
                        other,
                        KNOWN_KEYS.iter().copied(),
                    ),
                })
            }
        }
        Ok(())
    }

    /// `kernels.<name>` tables: per-kernel levels and launches; the package's names are
    /// remembered.
    fn apply_kernels(
        &mut self,
        scope: Scope,
        value: &Value,
        table: &TableName,
    ) -> Result<(), SettingsError> {
        let kernels = value
            .as_object()
            .ok_or_else(|| table.wrong("kernels", "a table of kernel names"))?;
        for (kernel, kernel_table) in kernels {
            if scope == Scope::Package {
                self.package_kernel_tables.push(kernel.clone());
            }
            let sub = table.kernel(kernel);
            let entries = kernel_table
                .as_object()
                .ok_or_else(|| SettingsError::NotATable {
                    table: sub.clone(),
                    expected: " with `lints`, `block` or `dynamic_smem`",
                })?;
            for (key, value) in entries {
                self.apply_kernel_key(kernel, key, value, &sub)?;
            }
        }
        Ok(())
    }

    /// One key of a kernel's table.
    fn apply_kernel_key(
        &mut self,
        kernel: &str,
        key: &str,
        value: &Value,
        table: &TableName,
    ) -> Result<(), SettingsError> {
        match key {
            "lints" => {
                let levels = self.kernel_lints.entry(kernel.to_string()).or_default();
                for (lint, level) in level_table(value, table, "lints")? {
                    levels.insert(lint, level);
                }
            }
            "block" => {
                let block = block(value).ok_or_else(|| table.wrong(key, BLOCK_EXPECTED))?;
                self.kernel_launches
                    .entry(kernel.to_string())
                    .or_default()
                    .block = Some(block);
            }
            "dynamic_smem" => {
                let bytes = value
                    .as_u64()
                    .and_then(|bytes| u32::try_from(bytes).ok())
                    .ok_or_else(|| {
                        table.wrong(
                            key,
                            "bytes of dynamic shared memory per block, e.g. `dynamic_smem = 4096`",
                        )
                    })?;
                self.kernel_launches
                    .entry(kernel.to_string())
                    .or_default()
                    .dynamic_smem_bytes = Some(bytes);
            }
            _ => {
                return Err(SettingsError::UnknownKernelKey {
                    table: table.clone(),
                    key: key.to_string(),
                })
            }
        }
        Ok(())
    }
}

fn string_list(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_string))
        .collect()
}

fn report_formats(value: &Value, table: &TableName) -> Result<Vec<String>, SettingsError> {
    let formats = string_list(value)
        .ok_or_else(|| table.wrong("reports", "a list of strings, e.g. [\"json\"]"))?;
    match formats.iter().find(|format| format.as_str() != "json") {
        Some(unknown) => Err(SettingsError::UnknownReportFormat {
            table: table.clone(),
            format: unknown.clone(),
        }),
        None => Ok(formats),
    }
}

/// What `block` takes, for its error message.
const BLOCK_EXPECTED: &str = "threads per block, an integer from 1 to 1024 or the block's dimensions `[x, y]` / `[x, y, z]` of at most 1024 threads in all, e.g. `block = 1024` or `block = [32, 4]`";

/// `block = 256` or `block = [32, 4]` (`[x, y, z]`): each dimension at least 1, at most
/// 1024 threads in all.
fn block(value: &Value) -> Option<BlockDim> {
    let dimension = |value: &Value| -> Option<u32> {
        u32::try_from(value.as_i64()?)
            .ok()
            .filter(|&threads| threads >= 1)
    };
    let block = match value {
        Value::Array(dims) if (1..=3).contains(&dims.len()) => {
            let dims: Vec<u32> = dims.iter().map(dimension).collect::<Option<_>>()?;
            BlockDim::new(
                dims[0],
                dims.get(1).copied().unwrap_or(1),
                dims.get(2).copied().unwrap_or(1),
            )
        }
        other => BlockDim::linear(dimension(other)?),
    };
    let threads = u64::from(block.x) * u64::from(block.y) * u64::from(block.z);
    (threads <= u64::from(occupancy_core::spec::MAX_THREADS_PER_BLOCK)).then_some(block)
}

/// `{ spills = "warn", ... }`: lint name to level word (the word is checked where levels are
/// resolved, against the lint registry).
fn level_table(
    value: &Value,
    table: &TableName,
    key: &str,
) -> Result<Vec<(String, String)>, SettingsError> {
    let levels: &Map<String, Value> = value
        .as_object()
        .ok_or_else(|| table.wrong(key, "a table like { spills = \"warn\" }"))?;
    levels
        .iter()
        .map(|(lint, level)| {
            level
                .as_str()
                .map(|level| (lint.clone(), level.to_string()))
                .ok_or_else(|| {
                    table.wrong(
                        &format!("{key}.{lint}"),
                        "one of \"allow\", \"warn\", \"deny\"",
                    )
                })
        })
        .collect()
}

#[cfg(test)]
mod tests;
