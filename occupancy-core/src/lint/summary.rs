//! One line for many kernels with the same finding: what the build prints instead of one
//! diagnostic per kernel and architecture, the full list staying in the report.

use std::collections::HashMap;

use super::id::LintId;
use super::kernels::NAMES_SHOWN;
use super::level::Level;

/// One finding as a summary counts it.
#[derive(Debug, Clone, Copy)]
pub struct Summarized<'a> {
    /// The lint.
    pub lint: LintId,
    /// Its level.
    pub level: Level,
    /// The architecture, when the finding names one.
    pub arch: Option<&'a str>,
    /// The kernel, as people read its name.
    pub kernel: &'a str,
    /// How bad it is, for ordering (spill bytes, stack bytes, ...): the worst kernels are named.
    pub weight: u64,
    /// Whether the kernel has a declaration.
    pub declared: bool,
}

/// One line for many kernels with the same lint at the same level.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FindingSummary {
    /// The lint.
    pub lint: LintId,
    /// Its level.
    pub level: Level,
    /// The kernels, each once, the worst first (then in the order first found).
    pub kernels: Vec<String>,
    /// The architectures concerned, each once, in the order first found.
    pub archs: Vec<String>,
    /// How many of the kernels have no declaration.
    pub undeclared: usize,
}

impl FindingSummary {
    /// `3 undeclared kernels spill registers to local memory on sm_90: a, b, c (details in
    /// REPORT)`; with more than [`NAMES_SHOWN`] kernels, the worst ones and `(+N more, see
    /// REPORT)`.
    pub fn message(&self, report_path: &str) -> String {
        let count = self.kernels.len();
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
        let what = phrase(self.lint, count != 1);
        let kernels = match (count, self.undeclared) {
            (1, 1) => "1 undeclared kernel".to_string(),
            (1, _) => "1 kernel".to_string(),
            (_, undeclared) if undeclared == count => format!("{count} undeclared kernels"),
            (_, 0) => format!("{count} kernels"),
            (_, undeclared) => format!("{count} kernels ({undeclared} undeclared)"),
        };
        format!("{kernels} {what}{archs}: {list}")
    }
}

/// What a kernel with a finding of `lint` does, for a summary's sentence (`many`: plural).
pub(crate) fn phrase(lint: LintId, many: bool) -> &'static str {
    let (one, more) = lint.lint().phrase;
    if many {
        more
    } else {
        one
    }
}

/// Groups findings by (lint, level), in the order first seen; each group's kernels worst
/// first. One pass, hashed: linear in the number of findings.
pub fn summarize<'a>(items: impl IntoIterator<Item = Summarized<'a>>) -> Vec<FindingSummary> {
    struct Group<'a> {
        summary: FindingSummary,
        /// Kernel -> (worst weight, first seen, declared).
        kernels: HashMap<&'a str, (u64, usize, bool)>,
    }
    let mut groups: Vec<Group<'a>> = Vec::new();
    let mut index: HashMap<(LintId, Level), usize> = HashMap::new();
    for (seen, item) in items.into_iter().enumerate() {
        let at = *index.entry((item.lint, item.level)).or_insert_with(|| {
            groups.push(Group {
                summary: FindingSummary {
                    lint: item.lint,
                    level: item.level,
                    kernels: Vec::new(),
                    archs: Vec::new(),
                    undeclared: 0,
                },
                kernels: HashMap::new(),
            });
            groups.len() - 1
        });
        let group = &mut groups[at];
        let entry = group
            .kernels
            .entry(item.kernel)
            .or_insert((item.weight, seen, item.declared));
        entry.0 = entry.0.max(item.weight);
        if let Some(arch) = item.arch {
            // A build has a handful of architectures: a short list, looked through.
            if !group.summary.archs.iter().any(|known| known == arch) {
                group.summary.archs.push(arch.to_string());
            }
        }
    }
    groups
        .into_iter()
        .map(|group| {
            let mut summary = group.summary;
            let mut kernels: Vec<(&str, (u64, usize, bool))> = group.kernels.into_iter().collect();
            kernels.sort_by_key(|(_, (weight, seen, _))| (std::cmp::Reverse(*weight), *seen));
            summary.undeclared = kernels
                .iter()
                .filter(|(_, (.., declared))| !declared)
                .count();
            summary.kernels = kernels
                .into_iter()
                .map(|(name, _)| name.to_string())
                .collect();
            summary
        })
        .collect()
}
