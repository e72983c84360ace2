//! What every part of the page looks up, resolved once: which rows are the same kernel on the
//! same architecture, which findings concern which of them, and the kernels (crate and symbol)
//! with their architectures.
//!
//! A finding concerns a row when kernel, architecture (or none) and crate (or none) agree
//! ([`Finding::concerns`]). Rows with equal (crate, kernel, arch) have equal findings, and a
//! ptxas log that compiles one kernel many times gives many such rows: everything here is
//! resolved per distinct key, so each pass is linear in rows plus findings × architectures.

use std::collections::HashMap;

use crate::lint::{Level, LintId};
use crate::report::model::{Finding, KernelRow, Report};

/// The (crate, kernel, arch) a row is about.
type RowKey<'a> = (Option<&'a str>, &'a str, &'a str);

/// The shared lookups of one rendering.
pub(super) struct Context<'a> {
    pub report: &'a Report,
    /// The findings a reader is shown ([`Report::shown_findings`]), in the report's order; a
    /// finding's index here is its id on the page (`f3`).
    pub findings: Vec<&'a Finding>,
    /// For each distinct (crate, kernel, arch): its first row.
    pub keys: Vec<usize>,
    /// For each row: its key.
    pub row_key: Vec<usize>,
    /// For each key: the shown findings that concern it.
    pub key_findings: Vec<Vec<usize>>,
    /// For each shown finding: the keys it concerns.
    pub finding_keys: Vec<Vec<usize>>,
    /// The kernels (crate, symbol), in the order of their first row: each the keys of its
    /// architectures.
    pub kernels: Vec<Vec<usize>>,
    /// For each key: its kernel.
    pub key_kernel: Vec<usize>,
}

impl<'a> Context<'a> {
    pub fn new(report: &'a Report) -> Self {
        let mut key_of: HashMap<RowKey<'a>, usize> = HashMap::new();
        let mut keys = Vec::new();
        let mut row_key = Vec::with_capacity(report.kernels.len());
        let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut kernel_of: HashMap<(Option<&str>, &str), usize> = HashMap::new();
        let mut kernels: Vec<Vec<usize>> = Vec::new();
        let mut key_kernel = Vec::new();
        for (index, row) in report.kernels.iter().enumerate() {
            let key = (
                row.crate_name.as_deref(),
                row.name.as_str(),
                row.arch.as_str(),
            );
            let id = *key_of.entry(key).or_insert_with(|| {
                keys.push(index);
                by_name.entry(key.1).or_default().push(keys.len() - 1);
                let kernel = *kernel_of.entry((key.0, key.1)).or_insert_with(|| {
                    kernels.push(Vec::new());
                    kernels.len() - 1
                });
                kernels[kernel].push(keys.len() - 1);
                key_kernel.push(kernel);
                keys.len() - 1
            });
            row_key.push(id);
        }
        let findings: Vec<&Finding> = report.shown_findings().collect();
        let mut key_findings = vec![Vec::new(); keys.len()];
        let finding_keys = findings
            .iter()
            .enumerate()
            .map(|(id, finding)| {
                let concerned: Vec<usize> = finding
                    .kernel
                    .as_deref()
                    .and_then(|name| by_name.get(name))
                    .map(|candidates| {
                        candidates
                            .iter()
                            .copied()
                            .filter(|&key| finding.concerns(&report.kernels[keys[key]]))
                            .collect()
                    })
                    .unwrap_or_default();
                for &key in &concerned {
                    key_findings[key].push(id);
                }
                concerned
            })
            .collect();
        Context {
            report,
            findings,
            keys,
            row_key,
            key_findings,
            finding_keys,
            kernels,
            key_kernel,
        }
    }

    /// The row a key stands for.
    pub fn key_row(&self, key: usize) -> &'a KernelRow {
        &self.report.kernels[self.keys[key]]
    }

    /// The shown findings of a row.
    pub fn row_findings(&self, row: usize) -> &[usize] {
        &self.key_findings[self.row_key[row]]
    }

    /// The distinct (level, lint) of a row's warn and deny findings, most severe first, then
    /// by lint.
    pub fn row_lints(&self, row: usize) -> Vec<(Level, LintId)> {
        let mut lints: Vec<(Level, LintId)> = self
            .row_findings(row)
            .iter()
            .map(|&id| (self.findings[id].level, self.findings[id].lint))
            .filter(|(level, _)| *level != Level::Allow)
            .collect();
        lints.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        lints.dedup();
        lints
    }

    /// The report's architectures, oldest first.
    pub fn archs(&self) -> Vec<&'a str> {
        let mut archs: Vec<&'a str> = Vec::new();
        for &row in &self.keys {
            let arch = self.report.kernels[row].arch.as_str();
            if !archs.contains(&arch) {
                archs.push(arch);
            }
        }
        archs.sort_by_key(|name| {
            crate::arch::lookup(name).map_or(u32::MAX, |facts| facts.major * 10 + facts.minor)
        });
        archs
    }

    /// The most severe level among a row's warn and deny findings.
    pub fn row_level(&self, row: usize) -> Option<Level> {
        self.row_lints(row).first().map(|(level, _)| *level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::example_report;

    /// The lookups answer what the finding-by-finding scan answers, on every row.
    #[test]
    fn lookups_agree_with_concerns() {
        let report = example_report();
        let context = Context::new(&report);
        for (index, row) in report.kernels.iter().enumerate() {
            let scanned: Vec<usize> = context
                .findings
                .iter()
                .enumerate()
                .filter(|(_, finding)| finding.concerns(row))
                .map(|(id, _)| id)
                .collect();
            assert_eq!(
                context.row_findings(index),
                scanned.as_slice(),
                "{}",
                row.name
            );
        }
        let rows_of_kernels: usize = context.kernels.iter().map(Vec::len).sum();
        assert_eq!(rows_of_kernels, context.keys.len());
    }

    /// A log that compiled one kernel many times gives many equal rows: one key.
    #[test]
    fn equal_rows_share_one_key() {
        let mut report = example_report();
        let first = report.kernels[0].clone();
        report.kernels.extend(std::iter::repeat_n(first, 1000));
        let context = Context::new(&report);
        assert_eq!(context.keys.len(), example_report().kernels.len());
        assert_eq!(
            context.row_key[report.kernels.len() - 1],
            context.row_key[0]
        );
    }
}
