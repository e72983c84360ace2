//! One line for many undeclared kernels with the same finding: what the build prints instead
//! of one diagnostic per kernel.

use std::collections::{HashMap, HashSet};

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

/// Groups findings by (lint, level), in the order first seen. Linear in the findings: the group
/// is one hash lookup, and each group's kernels and archs are de-duplicated through hash sets
/// (a scan of the names gathered so far made this quadratic in the kernels).
pub fn summarize<'a>(
    findings: impl IntoIterator<Item = (&'a LeveledFinding, &'a str)>,
) -> Vec<FindingSummary> {
    let mut summaries: Vec<FindingSummary> = Vec::new();
    let mut index_of: HashMap<(LintId, Level), usize> = HashMap::new();
    let mut seen: Vec<(HashSet<&'a str>, HashSet<&'a str>)> = Vec::new();
    for (leveled, kernel) in findings {
        let key = (leveled.finding.lint, leveled.level);
        let index = *index_of.entry(key).or_insert_with(|| {
            summaries.push(FindingSummary {
                lint: leveled.finding.lint,
                level: leveled.level,
                kernels: Vec::new(),
                archs: Vec::new(),
            });
            seen.push((HashSet::new(), HashSet::new()));
            summaries.len() - 1
        });
        let summary = &mut summaries[index];
        let (kernels, archs) = &mut seen[index];
        if kernels.insert(kernel) {
            summary.kernels.push(kernel.to_string());
        }
        if let Some(arch) = &leveled.finding.arch {
            if archs.insert(arch.as_str()) {
                summary.archs.push(arch.clone());
            }
        }
    }
    summaries
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::evaluate::Finding;

    fn leveled(lint: LintId, level: Level, arch: &str) -> LeveledFinding {
        LeveledFinding {
            finding: Finding {
                lint,
                arch: Some(arch.to_string()),
                message: String::new(),
                notes: Vec::new(),
                help: None,
            },
            level,
        }
    }

    /// Groups in first-seen order; kernels and archs each once, in first-seen order.
    #[test]
    fn groups_by_lint_and_level_keeping_first_seen_order() {
        let spills_80 = leveled(LintId::Spills, Level::Deny, "sm_80");
        let spills_90 = leveled(LintId::Spills, Level::Deny, "sm_90");
        let stack = leveled(LintId::StackFrame, Level::Warn, "sm_90");
        let spills_warn = leveled(LintId::Spills, Level::Warn, "sm_80");
        let summaries = summarize([
            (&spills_80, "b"),
            (&stack, "a"),
            (&spills_90, "a"),
            (&spills_80, "b"),
            (&spills_warn, "c"),
            (&spills_90, "b"),
        ]);
        let shape: Vec<(LintId, Level, Vec<&str>, Vec<&str>)> = summaries
            .iter()
            .map(|summary| {
                (
                    summary.lint,
                    summary.level,
                    summary.kernels.iter().map(String::as_str).collect(),
                    summary.archs.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (
                    LintId::Spills,
                    Level::Deny,
                    vec!["b", "a"],
                    vec!["sm_80", "sm_90"]
                ),
                (LintId::StackFrame, Level::Warn, vec!["a"], vec!["sm_90"]),
                (LintId::Spills, Level::Warn, vec!["c"], vec!["sm_80"]),
            ]
        );
    }

    /// 200,000 findings of distinct kernels: one summary holding each kernel once (this took
    /// minutes when every finding scanned the kernels gathered so far).
    #[test]
    fn many_distinct_kernels_are_summarized_each_once() {
        let finding = leveled(LintId::Spills, Level::Deny, "sm_90");
        let names: Vec<String> = (0..200_000).map(|index| format!("k{index}")).collect();
        let summaries = summarize(
            names
                .iter()
                .chain(names.iter().take(10))
                .map(|name| (&finding, name.as_str())),
        );
        assert_eq!(summaries.len(), 1);
        assert_eq!(summaries[0].kernels.len(), 200_000);
        assert_eq!(summaries[0].kernels[199_999], "k199999");
        assert_eq!(summaries[0].archs, ["sm_90"]);
    }
}
