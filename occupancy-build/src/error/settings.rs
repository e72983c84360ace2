//! Why a crate's occupancy settings could not be read ([`SettingsError`]), kept with the error
//! type so that it stays a leaf: `config.rs` reads the settings, this names what is wrong.

use std::fmt;
use std::path::PathBuf;

/// Why the settings could not be read: each names the file and the table or key to edit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// `cargo metadata` could not be run or refused the manifest (its stderr is in `source`).
    #[error("could not read the package settings in {} with `cargo metadata --no-deps --offline` (run with $CARGO, else `cargo` on PATH): {source}", manifest_path.display())]
    CargoMetadata {
        manifest_path: PathBuf,
        #[source]
        source: cargo_metadata::Error,
    },
    /// `cargo metadata` ran past its time limit (`OCCUPANCY_TOOL_TIMEOUT`) and was killed.
    #[error(
        "`{command}` did not finish within {} and was killed, with every process it started, so the package settings in {} could not be read; {hint}",
        crate::words::seconds(*.limit), manifest_path.display()
    )]
    CargoMetadataTimedOut {
        manifest_path: PathBuf,
        /// The command line, as a shell would take it.
        command: String,
        limit: std::time::Duration,
        /// Which setting sets the limit and how to raise it.
        hint: String,
    },
    /// The manifest is not a package's (a virtual workspace manifest, for one).
    #[error("{} is not a package's manifest (`cargo metadata` lists no package with it): give `.manifest_dir(...)` the directory of the package whose kernels this build checks", manifest_path.display())]
    NotAPackage { manifest_path: PathBuf },
    /// A table (`[package.metadata.occupancy]`, a kernel's table) is some other kind of value.
    #[error("{table} must be a table{expected}")]
    NotATable {
        table: TableName,
        expected: &'static str,
    },
    /// A key's value has the wrong type or is out of range.
    #[error("{table} `{key}` must be {expected}")]
    WrongValue {
        table: TableName,
        key: String,
        expected: &'static str,
    },
    /// `reports` names a format this crate does not write.
    #[error("{table} `reports`: unknown format {format:?} (supported: \"json\")")]
    UnknownReportFormat { table: TableName, format: String },
    /// A key this version does not know, at the top of an occupancy table.
    #[error("{table}: unknown key `{key}` ({}known keys: {})", suggestion.map(|key| format!("did you mean `{key}`? ")).unwrap_or_default(), KNOWN_KEYS.join(", "))]
    UnknownKey {
        table: TableName,
        key: String,
        suggestion: Option<&'static str>,
    },
    /// A key other than `lints`, `block` and `dynamic_smem` in a kernel's table.
    #[error("{table}: unknown key `{key}` (expected `lints`, `block` or `dynamic_smem`)")]
    UnknownKernelKey { table: TableName, key: String },
    /// `baseline = ...` names what cannot be the baseline: a directory, a source file, a
    /// manifest. The baseline is a file occupancy writes (blessing replaces it) and reads.
    #[error("{table} `baseline = {value:?}` {problem}; the baseline is a file of its own that occupancy writes with OCCUPANCY_BLESS=1 (replacing what is there) and compares every build with: name one, e.g. `baseline = \"occupancy.lock\"` (relative to the package root), or remove the key for that default")]
    BadBaseline {
        table: TableName,
        /// The value as written.
        value: String,
        /// What the value names instead (`names a Rust source file`).
        problem: String,
    },
}

/// A table of settings, as the user finds it: the file, then the TOML table header (and, for a
/// kernel's table, `kernels.<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub manifest_path: PathBuf,
    pub header: String,
}

impl fmt::Display for TableName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}: {}",
            self.manifest_path.display(),
            self.header
        )
    }
}

/// The keys an occupancy table may have, in the order the docs list them.
pub(crate) const KNOWN_KEYS: &[&str] = &[
    "archs",
    "block",
    "jit_archs",
    "ptx_per_arch",
    "lints",
    "kernels",
    "baseline",
    "reports",
    "unchecked",
    "require_reasons",
];
