//! One line for many undeclared kernels with the same finding: what the build prints instead
//! of one diagnostic per kernel.

use super::evaluate::LeveledFinding;
use super::kernels::NAMES_SHOWN;
use super::{Level, LintId};

/// One line for many kernels with the same lint at the same level: what the build prints for
/// undeclared kernels instead of one diagnostic each (the full list is in the report).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FindingSummary {
    /// The lint.
    pub lint: LintId,
    /// Its level.
    pub level: Level,
    /// The kernels, each once, in the order first found.
    pub kernels: Vec<String>,
    /// The architectures concerned, each once, in the order first found.
    pub archs: Vec<String>,
}

impl FindingSummary {
    /// `3 undeclared kernels spill to local memory on sm_90: a, b, c (+2 more, see REPORT)`.
    pub fn message(&self, report_path: &str) -> String {
        let count = self.kernels.len();
        let (one, many) = match self.lint {
            LintId::Spills => (
                "spills registers to local memory",
                "spill registers to local memory",
            ),
            LintId::Unlaunchable => (
                "cannot start at the crate's default launch",
                "cannot start at the crate's default launch",
            ),
            LintId::StackFrame => ("has a stack frame", "have a stack frame"),
            LintId::UndeclaredKernel => (
                "is compiled without a declaration",
                "are compiled without a declaration",
            ),
            _ => ("has findings", "have findings"),
        };
        let names: Vec<&str> = self.kernels.iter().map(String::as_str).collect();
        let list = if count > NAMES_SHOWN {
            format!(
                "{} (+{} more, see {report_path})",
                names[..NAMES_SHOWN].join(", "),
                count - NAMES_SHOWN
            )
        } else {
            format!("{} (details in {report_path})", names.join(", "))
        };
        let archs = if self.archs.is_empty() {
            String::new()
        } else {
            format!(" on {}", self.archs.join(", "))
        };
        if count == 1 {
            format!("1 undeclared kernel {one}{archs}: {list}")
        } else {
            format!("{count} undeclared kernels {many}{archs}: {list}")
        }
    }
}

/// Groups findings by (lint, level), in the order first seen.
pub fn summarize<'a>(
    findings: impl IntoIterator<Item = (&'a LeveledFinding, &'a str)>,
) -> Vec<FindingSummary> {
    let mut summaries: Vec<FindingSummary> = Vec::new();
    for (leveled, kernel) in findings {
        let index = match summaries.iter().position(|summary| {
            summary.lint == leveled.finding.lint && summary.level == leveled.level
        }) {
            Some(index) => index,
            None => {
                summaries.push(FindingSummary {
                    lint: leveled.finding.lint,
                    level: leveled.level,
                    kernels: Vec::new(),
                    archs: Vec::new(),
                });
                summaries.len() - 1
            }
        };
        let summary = &mut summaries[index];
        if !summary.kernels.iter().any(|known| known == kernel) {
            summary.kernels.push(kernel.to_string());
        }
        if let Some(arch) = &leveled.finding.arch {
            if !summary.archs.contains(arch) {
                summary.archs.push(arch.clone());
            }
        }
    }
    summaries
}
