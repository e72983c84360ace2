//! The one finding type of the toolkit ([`Finding`]) and where it points ([`Location`]).
//!
//! A leaf: it names the lint ids and levels, nothing of the checks, the registry or the report.
//! `lint` makes findings and levels them, `report` lists them, `facts` carries the settled ones
//! to the attribute: all three hold this one type (`lint::evaluate::Finding` and
//! `report::Finding` name it; a settled finding is written without kernel, arch or place).

use serde::{Deserialize, Serialize};

use crate::lint_id::LintId;
use occupancy_model::Level;

/// What a location points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LocationKind {
    /// The `#[occupancy::kernel]` attribute in a Rust file.
    RustAttribute,
    /// The `__global__` function in a .cu file.
    CudaKernel,
    /// The `.entry` directive in a PTX file.
    PtxEntry,
    /// A line of a compiler log.
    Log,
    /// A kernel in a compiled binary (cubin, fatbin, object, library, wheel member).
    Binary,
}

/// A place in a file. Paths are as the writer saw them (relative to the workspace root when the
/// file is inside it); lines and columns start at 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    /// What the location points at.
    pub kind: LocationKind,
    /// The file.
    pub path: String,
    /// 1-based line; 0 when only the file is known.
    pub line: u32,
    /// 1-based column; 0 when unknown.
    pub column: u32,
}

impl std::fmt::Display for Location {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(formatter, "{}", self.path),
            (line, 0) => write!(formatter, "{}:{line}", self.path),
            (line, column) => write!(formatter, "{}:{line}:{column}", self.path),
        }
    }
}

/// One lint finding: what every check makes, evaluation levels, the build renders, the facts
/// file carries to the attribute and every report lists. A check makes it with
/// [`Finding::new`] (its lint's default level, about no kernel yet) and fills `arch`, `message`,
/// `notes` and `help`; evaluation resolves `level`; the caller places it (`crate_name`, `kernel`,
/// `location`, `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// Which lint.
    pub lint: LintId,
    /// The level it was resolved to (default, crate, environment, kernel).
    pub level: Level,
    /// The crate, for builds.
    #[serde(rename = "crate", default, skip_serializing_if = "Option::is_none")]
    pub crate_name: Option<String>,
    /// The kernel's symbol, when the finding is about one kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The architecture, when the finding is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// One line: what is wrong, with the numbers.
    pub message: String,
    /// Supporting facts (what ptxas reported, which resource binds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What to change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// The Rust attribute, or the .cu kernel when the kernel is not declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    /// Why the declaration set this lint's level or expects it (`reason = "..."`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Finding {
    /// A finding of `lint` at the lint's default level, about no kernel, architecture or place
    /// yet: a check sets `arch`, `message`, `notes` and `help` with struct-update syntax.
    pub fn new(lint: LintId) -> Finding {
        Finding {
            lint,
            level: lint.default_level(),
            crate_name: None,
            kernel: None,
            arch: None,
            message: String::new(),
            notes: Vec::new(),
            help: None,
            location: None,
            reason: None,
        }
    }
}
