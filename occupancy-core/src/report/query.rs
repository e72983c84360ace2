//! Selecting and ordering the rows of a report: `--sort COLUMN`, `--crate`, `--kernel`, `--arch`,
//! `--lint`. Pure functions over [`Report`]; every renderer sees the already selected report.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use super::index::{FindingIndex, RowIndex};
use super::model::{Finding, KernelRow, Report};
use crate::lint::LintId;

/// A column of the kernel table, by the name the user writes after `--sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Column {
    /// `crate`
    Crate,
    /// `kernel` (the demangled name)
    Kernel,
    /// `arch` (by compute capability)
    Arch,
    /// `block`
    Block,
    /// `registers`
    Registers,
    /// `spills` (store + load bytes)
    Spills,
    /// `stack`
    Stack,
    /// `smem` (static + dynamic)
    Smem,
    /// `barriers`
    Barriers,
    /// `blocks` (resident blocks per SM)
    BlocksPerSm,
    /// `occupancy`
    Occupancy,
    /// `limiter`
    Limiter,
    /// `headroom` (spare registers per thread before the next cliff)
    Headroom,
    /// `findings` (deny first, then warn)
    Findings,
}

impl Column {
    /// Every column with its name.
    pub const ALL: [(Column, &'static str); 14] = [
        (Column::Crate, "crate"),
        (Column::Kernel, "kernel"),
        (Column::Arch, "arch"),
        (Column::Block, "block"),
        (Column::Registers, "registers"),
        (Column::Spills, "spills"),
        (Column::Stack, "stack"),
        (Column::Smem, "smem"),
        (Column::Barriers, "barriers"),
        (Column::BlocksPerSm, "blocks"),
        (Column::Occupancy, "occupancy"),
        (Column::Limiter, "limiter"),
        (Column::Headroom, "headroom"),
        (Column::Findings, "findings"),
    ];

    /// The name written after `--sort`.
    pub fn as_str(self) -> &'static str {
        Column::ALL
            .iter()
            .find(|(column, _)| *column == self)
            .map(|(_, name)| *name)
            .unwrap_or("?")
    }
}

impl fmt::Display for Column {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A `--sort` value that names no column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown column `{given}` to sort by; the columns are: {}", Column::ALL.iter().map(|(_, name)| *name).collect::<Vec<_>>().join(", "))]
#[non_exhaustive]
pub struct UnknownColumn {
    /// What was written.
    pub given: String,
}

impl FromStr for Column {
    type Err = UnknownColumn;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let lowered = text.trim().to_ascii_lowercase();
        let aliases = [
            ("regs", Column::Registers),
            ("blocks_per_sm", Column::BlocksPerSm),
            ("blocks/sm", Column::BlocksPerSm),
            ("shared_memory", Column::Smem),
            ("name", Column::Kernel),
            ("occ", Column::Occupancy),
            ("spill", Column::Spills),
        ];
        Column::ALL
            .iter()
            .find(|(_, name)| *name == lowered)
            .map(|(column, _)| *column)
            .or_else(|| {
                aliases
                    .iter()
                    .find(|(alias, _)| *alias == lowered)
                    .map(|(_, column)| *column)
            })
            .ok_or(UnknownColumn {
                given: text.to_owned(),
            })
    }
}

/// Which rows to keep and in which order. Empty filter lists keep everything; several values of
/// one filter are alternatives (`--arch sm_80 --arch sm_90`), different filters must all match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// Keep kernels of these crates.
    pub crates: Vec<String>,
    /// Keep kernels whose mangled or demangled name contains one of these.
    pub kernels: Vec<String>,
    /// Keep these architectures (canonical names, `sm_90`; other spellings are resolved by
    /// [`crate::arch::lookup`] when known).
    pub archs: Vec<String>,
    /// Keep kernels with a finding of one of these lints (and only those findings).
    pub lints: Vec<LintId>,
    /// Sort keys, most significant first; `true` means descending.
    pub sort: Vec<(Column, bool)>,
}

impl Query {
    /// Applies the query: the selected rows in order, and the findings that concern them (plus
    /// findings about no kernel, when no kernel filter is set).
    pub fn apply(&self, report: &Report) -> Report {
        let archs: Vec<String> = self.archs.iter().map(|arch| canonical_arch(arch)).collect();
        let finding_index = FindingIndex::new(report);
        let mut kernels: Vec<KernelRow> = report
            .kernels
            .iter()
            .filter(|row| self.keeps_row(row, &archs, &finding_index))
            .cloned()
            .collect();
        self.sort_rows(&mut kernels, report);
        let (kept_rows, all_rows) = (RowIndex::new(&kernels), RowIndex::new(&report.kernels));
        let findings = report
            .findings
            .iter()
            .filter(|finding| self.keeps_finding(finding, &archs, &kept_rows, &all_rows))
            .cloned()
            .collect();
        Report {
            kernels,
            findings,
            ..report.clone()
        }
    }

    /// Every filter matches the row (`archs`: the query's, canonical).
    fn keeps_row(
        &self,
        row: &KernelRow,
        archs: &[String],
        finding_index: &FindingIndex<'_>,
    ) -> bool {
        self.keeps_crate(row.crate_name.as_ref())
            && (self.kernels.is_empty()
                || self
                    .kernels
                    .iter()
                    .any(|needle| row.name.contains(needle) || row.demangled.contains(needle)))
            && (archs.is_empty() || archs.contains(&row.arch))
            && (self.lints.is_empty()
                || finding_index
                    .lints_for(row)
                    .iter()
                    .any(|(_, lint)| self.lints.contains(lint)))
    }

    /// No crate filter, or the crate is one of it.
    fn keeps_crate(&self, crate_name: Option<&String>) -> bool {
        self.crates.is_empty() || crate_name.is_some_and(|name| self.crates.contains(name))
    }

    /// Orders rows by the query's sort keys, or crate, kernel and architecture without any.
    fn sort_rows(&self, kernels: &mut [KernelRow], report: &Report) {
        let sort = if self.sort.is_empty() {
            default_sort()
        } else {
            self.sort.clone()
        };
        kernels.sort_by(|left, right| {
            for (column, descending) in &sort {
                let ordering = compare(*column, left, right, report);
                let ordering = if *descending {
                    ordering.reverse()
                } else {
                    ordering
                };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
            Ordering::Equal
        });
    }

    /// A finding of a kept lint that concerns a kept row, or no kernel at all (when no kernel
    /// filter is set and the crate and arch filters match), or a declared kernel with no row.
    fn keeps_finding(
        &self,
        finding: &Finding,
        archs: &[String],
        kept_rows: &RowIndex<'_>,
        all_rows: &RowIndex<'_>,
    ) -> bool {
        let lint_kept = self.lints.is_empty() || self.lints.contains(&finding.lint);
        let about_kept_kernel = kept_rows.first_concerned(finding).is_some();
        let about_no_kernel = finding.kernel.is_none()
            && self.kernels.is_empty()
            && self.keeps_crate(finding.crate_name.as_ref())
            && (archs.is_empty()
                || finding
                    .arch
                    .as_ref()
                    .is_none_or(|arch| archs.contains(arch)));
        let declared_but_absent = finding.kernel.is_some()
            && all_rows.first_concerned(finding).is_none()
            && (self.kernels.is_empty()
                || self
                    .kernels
                    .iter()
                    .any(|needle| finding.kernel.as_ref().is_some_and(|k| k.contains(needle))))
            && self.keeps_crate(finding.crate_name.as_ref());
        lint_kept && (about_kept_kernel || about_no_kernel || declared_but_absent)
    }
}

/// The order rows have when nothing is asked: crate, kernel, then architecture.
fn default_sort() -> Vec<(Column, bool)> {
    vec![
        (Column::Crate, false),
        (Column::Kernel, false),
        (Column::Arch, false),
    ]
}

fn canonical_arch(name: &str) -> String {
    crate::arch::lookup(name)
        .map(|facts| facts.name.to_string())
        .unwrap_or_else(|_| name.to_string())
}

/// Orders architectures by compute capability (`sm_100` after `sm_90`), unknown names last.
fn arch_order(name: &str) -> (u32, u32, String) {
    match crate::arch::lookup(name) {
        Ok(facts) => (facts.major, facts.minor, name.to_string()),
        Err(_) => (u32::MAX, u32::MAX, name.to_string()),
    }
}

fn compare(column: Column, left: &KernelRow, right: &KernelRow, report: &Report) -> Ordering {
    match column {
        Column::Crate => left.crate_name.cmp(&right.crate_name),
        Column::Kernel => left.display_name().cmp(right.display_name()),
        Column::Arch => arch_order(&left.arch).cmp(&arch_order(&right.arch)),
        Column::Block => left.block.cmp(&right.block),
        Column::Registers => left.registers.cmp(&right.registers),
        Column::Spills => left.spill_bytes().cmp(&right.spill_bytes()),
        Column::Stack => left.stack_frame_bytes.cmp(&right.stack_frame_bytes),
        Column::Smem => (left.static_smem_bytes + left.dynamic_smem_bytes)
            .cmp(&(right.static_smem_bytes + right.dynamic_smem_bytes)),
        Column::Barriers => left.barriers.cmp(&right.barriers),
        Column::BlocksPerSm => left.blocks_per_sm.cmp(&right.blocks_per_sm),
        Column::Occupancy => left.occupancy.total_cmp(&right.occupancy),
        Column::Limiter => left.limiters.cmp(&right.limiters),
        // No register cliff in reach sorts after every finite margin.
        Column::Headroom => left
            .headroom
            .spare_registers_per_thread
            .unwrap_or(u32::MAX)
            .cmp(
                &right
                    .headroom
                    .spare_registers_per_thread
                    .unwrap_or(u32::MAX),
            ),
        Column::Findings => {
            let weight = |row: &KernelRow| {
                let findings: Vec<_> = report.findings_for(row).collect();
                let deny = findings
                    .iter()
                    .filter(|f| f.level == crate::lint::Level::Deny)
                    .count();
                let warn = findings
                    .iter()
                    .filter(|f| f.level == crate::lint::Level::Warn)
                    .count();
                (deny, warn)
            };
            weight(left).cmp(&weight(right))
        }
    }
}

/// Parses `COLUMN` or `COLUMN:desc` / `-COLUMN` (descending) / `COLUMN:asc`.
pub fn parse_sort_key(text: &str) -> Result<(Column, bool), UnknownColumn> {
    let (name, descending) = if let Some(rest) = text.strip_prefix('-') {
        (rest, true)
    } else if let Some(rest) = text.strip_suffix(":desc") {
        (rest, true)
    } else if let Some(rest) = text.strip_suffix(":asc") {
        (rest, false)
    } else {
        (text, false)
    };
    Ok((name.parse()?, descending))
}
