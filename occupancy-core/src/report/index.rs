//! Lookups between a report's rows and findings, built once per rendering.
//!
//! A finding concerns a row when kernel, architecture (or none) and crate (or none) agree
//! ([`Finding::concerns`]). Asking that of every finding for every row is rows x findings: a
//! check of a 16 MB log spent 60% of its time there. These maps resolve each distinct
//! (crate, kernel, arch) once, into the distinct (level, lint) pairs the renderers show: a log
//! that compiles one kernel many times gives many equal rows, and each costs one lookup.

use std::collections::HashMap;

use super::model::{Finding, KernelRow, Report};
use crate::lint::{Level, LintId};

/// The (crate, kernel, arch) a row is about: rows with equal keys have equal findings.
type RowKey<'a> = (Option<&'a str>, &'a str, &'a str);

/// The distinct (level, lint) of the findings of every row, resolved once per row key.
#[derive(Debug)]
#[non_exhaustive]
pub struct FindingIndex<'a> {
    by_row: HashMap<RowKey<'a>, Vec<(Level, LintId)>>,
}

impl<'a> FindingIndex<'a> {
    /// Indexes `report`'s findings by the rows they concern.
    pub fn new(report: &'a Report) -> Self {
        let mut by_kernel: HashMap<&str, Vec<&Finding>> = HashMap::new();
        for finding in &report.findings {
            if let Some(kernel) = finding.kernel.as_deref() {
                by_kernel.entry(kernel).or_default().push(finding);
            }
        }
        let mut by_row = HashMap::new();
        for row in &report.kernels {
            by_row.entry(row_key(row)).or_insert_with(|| {
                by_kernel
                    .get(row.name.as_str())
                    .map(|findings| {
                        let mut lints: Vec<(Level, LintId)> = findings
                            .iter()
                            .filter(|finding| finding.concerns(row))
                            .map(|finding| (finding.level, finding.lint))
                            .collect();
                        lints.sort_unstable();
                        lints.dedup();
                        lints
                    })
                    .unwrap_or_default()
            });
        }
        FindingIndex { by_row }
    }

    /// The distinct (level, lint) of the findings that concern `row` (a row of the indexed
    /// report), sorted.
    pub fn lints_for(&self, row: &'a KernelRow) -> &[(Level, LintId)] {
        self.by_row
            .get(&row_key(row))
            .map_or(&[], |findings| findings.as_slice())
    }
}

fn row_key(row: &KernelRow) -> RowKey<'_> {
    (row.crate_name.as_deref(), &row.name, &row.arch)
}

/// The rows of a report by kernel name and by (kernel, arch), for finding the rows a finding
/// concerns: a finding on one arch looks only at that arch's rows (a log that compiles a kernel
/// many times for one arch made a scan of the kernel's rows quadratic for another arch's findings).
#[derive(Debug)]
#[non_exhaustive]
pub struct RowIndex<'a> {
    by_kernel: HashMap<&'a str, Vec<&'a KernelRow>>,
    by_kernel_arch: HashMap<(&'a str, &'a str), Vec<&'a KernelRow>>,
}

impl<'a> RowIndex<'a> {
    /// Indexes `rows` by kernel name.
    pub fn new(rows: impl IntoIterator<Item = &'a KernelRow>) -> Self {
        let mut by_kernel: HashMap<&str, Vec<&KernelRow>> = HashMap::new();
        let mut by_kernel_arch: HashMap<(&str, &str), Vec<&KernelRow>> = HashMap::new();
        for row in rows {
            by_kernel.entry(row.name.as_str()).or_default().push(row);
            by_kernel_arch
                .entry((row.name.as_str(), row.arch.as_str()))
                .or_default()
                .push(row);
        }
        RowIndex {
            by_kernel,
            by_kernel_arch,
        }
    }

    /// The first indexed row `finding` concerns, if any.
    pub fn first_concerned(&self, finding: &Finding) -> Option<&'a KernelRow> {
        let kernel = finding.kernel.as_deref()?;
        let rows = match finding.arch.as_deref() {
            Some(arch) => self.by_kernel_arch.get(&(kernel, arch))?,
            None => self.by_kernel.get(kernel)?,
        };
        rows.iter().copied().find(|row| finding.concerns(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::example_report;

    /// The index answers exactly what the row-by-row scan answers, on every row and finding.
    #[test]
    fn index_agrees_with_concerns() {
        let report = example_report();
        let index = FindingIndex::new(&report);
        let rows = RowIndex::new(&report.kernels);
        for row in &report.kernels {
            let mut scanned: Vec<(Level, LintId)> = report
                .findings_for(row)
                .map(|finding| (finding.level, finding.lint))
                .collect();
            scanned.sort_unstable();
            scanned.dedup();
            assert_eq!(index.lints_for(row), scanned.as_slice(), "{}", row.name);
        }
        for finding in &report.findings {
            let scanned = report.kernels.iter().find(|row| finding.concerns(row));
            assert_eq!(rows.first_concerned(finding), scanned);
        }
    }
}
