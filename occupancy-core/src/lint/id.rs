//! What every lint id can say about itself beyond its declaration: its environment variable,
//! its config line, its declaration, and how an id is read (with a suggestion for a typo).

use std::fmt;
use std::str::FromStr;

use super::{did_you_mean, Level, Lint, LintId, LINTS};

impl LintId {
    /// The environment variable that sets this lint's level for a whole build, e.g.
    /// `OCCUPANCY_LINT_SPILLS=warn`.
    pub fn env_var(self) -> String {
        format!("OCCUPANCY_LINT_{}", self.as_str().to_ascii_uppercase())
    }

    /// The line to write in Cargo.toml under `[package.metadata.occupancy.lints]`
    /// (or `[workspace.metadata.occupancy.lints]`) to set `level` for a whole crate.
    pub fn config_line(self, level: Level) -> String {
        format!("{} = \"{}\"", self.as_str(), level.as_str())
    }

    /// The lint's declaration: its default level, documentation and check.
    pub fn lint(self) -> &'static Lint {
        &LINTS[self as usize]
    }
}

impl fmt::Display for LintId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A lint name that is not in the registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lint `{given}`{}", suggestion_text(.suggestion))]
#[non_exhaustive]
pub struct UnknownLint {
    /// What was written.
    pub given: String,
    /// The closest lint id, if one is close enough to be a likely typo.
    pub suggestion: Option<LintId>,
}

fn suggestion_text(suggestion: &Option<LintId>) -> String {
    match suggestion {
        Some(id) => format!(": did you mean `{id}`?"),
        None => format!(
            "; the lints are: {}",
            LintId::ALL
                .iter()
                .map(|id| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl FromStr for LintId {
    type Err = UnknownLint;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Some(id) = LintId::ALL.into_iter().find(|id| id.as_str() == text) {
            return Ok(id);
        }
        let normalized = text.trim().to_ascii_lowercase().replace('-', "_");
        let suggestion = LintId::ALL
            .into_iter()
            .find(|id| id.as_str() == normalized)
            .or_else(|| {
                let candidate =
                    did_you_mean(&normalized, LintId::ALL.iter().map(|id| id.as_str()))?;
                LintId::ALL.into_iter().find(|id| id.as_str() == candidate)
            });
        Err(UnknownLint {
            given: text.to_owned(),
            suggestion,
        })
    }
}
