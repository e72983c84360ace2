//! A report read one row and one finding at a time, in bounded memory, for the renderings people
//! read (text and Markdown): `cargo occupancy check` on a log of millions of kernels.
//!
//! While the report is small ([`FULL_REPORT_ROWS`] rows, [`FULL_REPORT_FINDINGS`] findings) the
//! digest keeps all of it and renders exactly what [`super::render_text`] and
//! [`super::render_markdown`] render. Past that it keeps only what its rendering shows: the
//! [`WORST_ROWS_SHOWN`] worst rows (a deny finding first, then warn, then the lowest occupancy,
//! then the most spills), per lint and level the first [`FINDINGS_SHOWN_PER_LINT`] findings and
//! counts, the architectures, and kernel counts (exact up to [`DISTINCT_KERNELS_COUNTED`]
//! names, [`DISTINCT_KERNELS_COUNTED_PER_LINT`] per lint; "more than" past that). Memory is then bounded whatever the number of rows; every row
//! and finding still goes to the JSON and SARIF renderings, which the caller streams.
//!
//! Pure, like the rest of [`crate::report`]: rows and findings come in, strings go out.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::hash::{Hash, Hasher};

use super::model::{Finding, KernelRow, Report};
use super::table::{format_findings, FINDINGS_SHOWN_PER_LINT};
use crate::lint::{Level, LintId};

/// Rows kept whole: up to this many (with at most [`FULL_REPORT_FINDINGS`] findings), the
/// report renders as it always did, every row in the table.
pub(crate) const FULL_REPORT_ROWS: usize = 1000;

/// Findings kept whole (see [`FULL_REPORT_ROWS`]).
pub(crate) const FULL_REPORT_FINDINGS: usize = 5000;

/// Rows in the table of a report past the full limits: the worst ones.
pub(crate) const WORST_ROWS_SHOWN: usize = 25;

/// Distinct kernel names the summary line counts exactly; past this, "more than" this many.
/// About 18 bytes a name: 4.5 MiB at most.
pub(crate) const DISTINCT_KERNELS_COUNTED: usize = 1 << 18;

/// Distinct kernel names each lint's summary line counts exactly (1.1 MiB at most per lint
/// and level).
pub(crate) const DISTINCT_KERNELS_COUNTED_PER_LINT: usize = 1 << 16;

/// Machine-code lines shown in a report past the full limits.
const SASS_LINES_SHOWN: usize = WORST_ROWS_SHOWN;

/// Counts distinct names exactly up to a limit, by a 64-bit hash of each (bounded memory).
#[derive(Debug, Clone)]
pub(crate) struct DistinctCounter {
    hashes: HashSet<u64>,
    limit: usize,
    overflowed: bool,
}

impl DistinctCounter {
    /// Counts exactly up to `limit` distinct values.
    pub fn new(limit: usize) -> Self {
        DistinctCounter {
            hashes: HashSet::new(),
            limit,
            overflowed: false,
        }
    }

    /// Counts `value`; `true` when it was not seen before (always `false` once past the limit).
    pub fn insert(&mut self, value: impl Hash) -> bool {
        if self.overflowed {
            return false;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        value.hash(&mut hasher);
        let inserted = self.hashes.insert(hasher.finish());
        if self.hashes.len() > self.limit {
            self.overflowed = true;
            self.hashes = HashSet::new();
        }
        inserted
    }

    /// The count, or `None` when it went past the limit.
    pub fn exact(&self) -> Option<usize> {
        (!self.overflowed).then_some(self.hashes.len())
    }

    /// `3 kernels`, `1 kernel`, `more than 65536 kernels`.
    pub fn describe(&self, word: &str) -> String {
        match self.exact() {
            Some(1) => format!("1 {word}"),
            Some(count) => format!("{count} {word}s"),
            None => format!("more than {} {word}s", self.limit),
        }
    }
}

/// How bad a row is, for the table of the worst: greater is worse.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Badness {
    level: Option<Level>,
    /// `1 - occupancy` for entry rows (device functions have none: 0).
    lost: f64,
    spill_bytes: u64,
    /// Earlier rows first among equals.
    earlier: Reverse<u64>,
}

impl Eq for Badness {}

impl Ord for Badness {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.level
            .cmp(&other.level)
            .then(self.lost.total_cmp(&other.lost))
            .then(self.spill_bytes.cmp(&other.spill_bytes))
            .then(self.earlier.cmp(&other.earlier))
    }
}

impl PartialOrd for Badness {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// A row of the worst-rows table, with the (level, lint) of its findings.
#[derive(Debug, Clone)]
struct WorstRow {
    badness: Badness,
    row: KernelRow,
    lints: Vec<(Level, LintId)>,
}

impl PartialEq for WorstRow {
    fn eq(&self, other: &Self) -> bool {
        self.badness == other.badness
    }
}

impl Eq for WorstRow {}

impl Ord for WorstRow {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.badness.cmp(&other.badness)
    }
}

impl PartialOrd for WorstRow {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The findings of one lint at one level: the first few whole, the rest counted.
#[derive(Debug, Clone)]
struct FindingGroup {
    level: Level,
    lint: LintId,
    count: u64,
    /// The first [`FINDINGS_SHOWN_PER_LINT`], with their place among the shown findings.
    first: Vec<(u64, Finding)>,
    /// The first [`FINDINGS_SHOWN_PER_LINT`] distinct kernels, in order.
    first_kernels: Vec<String>,
    kernels: DistinctCounter,
    /// Each once, in the order first seen (architectures are few).
    archs: Vec<String>,
}

/// A report taken in row by row and finding by finding; see the module documentation.
#[derive(Debug, Clone)]
pub struct ReportDigest {
    /// The whole report while it is within the full limits.
    full: Option<Report>,
    /// The full limits: [`FULL_REPORT_ROWS`] and [`FULL_REPORT_FINDINGS`] (smaller in tests).
    full_limits: (usize, usize),
    rows: u64,
    worst: BinaryHeap<Reverse<WorstRow>>,
    kernels: DistinctCounter,
    device_functions: DistinctCounter,
    archs: BTreeSet<String>,
    programs: BTreeSet<(String, String)>,
    sass_lines: Vec<KernelRow>,
    sass_rows: u64,
    groups: Vec<FindingGroup>,
    group_of: HashMap<(Level, LintId), usize>,
    shown_findings: u64,
    deny: u64,
    warn: u64,
}

impl Default for ReportDigest {
    fn default() -> Self {
        Self::new()
    }
}

impl ReportDigest {
    /// An empty digest.
    pub fn new() -> Self {
        Self::with_full_limits(FULL_REPORT_ROWS, FULL_REPORT_FINDINGS)
    }

    /// An empty digest that keeps the whole report up to `rows` rows and `findings` findings.
    fn with_full_limits(rows: usize, findings: usize) -> Self {
        ReportDigest {
            full: Some(Report::default()),
            full_limits: (rows, findings),
            rows: 0,
            worst: BinaryHeap::new(),
            kernels: DistinctCounter::new(DISTINCT_KERNELS_COUNTED),
            device_functions: DistinctCounter::new(DISTINCT_KERNELS_COUNTED),
            archs: BTreeSet::new(),
            programs: BTreeSet::new(),
            sass_lines: Vec::new(),
            sass_rows: 0,
            groups: Vec::new(),
            group_of: HashMap::new(),
            shown_findings: 0,
            deny: 0,
            warn: 0,
        }
    }

    /// Takes in a whole report (rows, then findings), each row with the lints its findings
    /// give it.
    pub fn add_report(&mut self, report: &Report) {
        let index = super::index::FindingIndex::new(report);
        for row in &report.kernels {
            self.add_row(row, index.lints_for(row));
        }
        for finding in &report.findings {
            self.add_finding(finding);
        }
    }

    /// Takes in a row, with the (level, lint) of the findings that concern it (for its cell in
    /// the table of the worst rows).
    pub fn add_row(&mut self, row: &KernelRow, lints: &[(Level, LintId)]) {
        self.rows += 1;
        let name = (row.crate_name.as_deref(), row.name.as_str());
        if row.entry {
            self.kernels.insert(name);
        } else {
            self.device_functions.insert(name);
        }
        if !self.archs.contains(&row.arch) {
            self.archs.insert(row.arch.clone());
        }
        if let Some(ptx) = &row.ptx_target {
            self.programs.insert((row.arch.clone(), ptx.clone()));
        }
        if row.sass.is_some() {
            self.sass_rows += 1;
            if self.sass_lines.len() < SASS_LINES_SHOWN {
                self.sass_lines.push(row.clone());
            }
        }
        self.consider_worst(row, lints);
        if let Some(full) = &mut self.full {
            full.kernels.push(row.clone());
        }
        self.check_full_limits();
    }

    /// Keeps `row` among the worst when it is worse than the least bad of them.
    fn consider_worst(&mut self, row: &KernelRow, lints: &[(Level, LintId)]) {
        let badness = Badness {
            level: lints
                .iter()
                .map(|(level, _)| *level)
                .filter(|level| *level != Level::Allow)
                .max(),
            lost: if row.entry { 1.0 - row.occupancy } else { 0.0 },
            spill_bytes: row.spill_bytes(),
            earlier: Reverse(self.rows),
        };
        if self.worst.len() == WORST_ROWS_SHOWN {
            match self.worst.peek() {
                Some(Reverse(least)) if least.badness < badness => {
                    self.worst.pop();
                }
                _ => return,
            }
        }
        self.worst.push(Reverse(WorstRow {
            badness,
            row: row.clone(),
            lints: lints.to_vec(),
        }));
    }

    /// Takes in a finding.
    pub fn add_finding(&mut self, finding: &Finding) {
        match finding.level {
            Level::Deny => self.deny += 1,
            Level::Warn => self.warn += 1,
            Level::Allow => {}
        }
        if finding.level != Level::Allow || finding.reason.is_some() {
            self.add_shown_finding(finding);
        }
        if let Some(full) = &mut self.full {
            full.findings.push(finding.clone());
        }
        self.check_full_limits();
    }

    fn add_shown_finding(&mut self, finding: &Finding) {
        let key = (finding.level, finding.lint);
        let index = *self.group_of.entry(key).or_insert_with(|| {
            self.groups.push(FindingGroup {
                level: finding.level,
                lint: finding.lint,
                count: 0,
                first: Vec::new(),
                first_kernels: Vec::new(),
                kernels: DistinctCounter::new(DISTINCT_KERNELS_COUNTED_PER_LINT),
                archs: Vec::new(),
            });
            self.groups.len() - 1
        });
        let group = &mut self.groups[index];
        group.count += 1;
        if group.first.len() < FINDINGS_SHOWN_PER_LINT {
            group.first.push((self.shown_findings, finding.clone()));
        }
        self.shown_findings += 1;
        if let Some(kernel) = finding.kernel.as_deref() {
            if group.kernels.insert(kernel) && group.first_kernels.len() < FINDINGS_SHOWN_PER_LINT {
                group.first_kernels.push(kernel.to_string());
            }
        }
        if let Some(arch) = finding.arch.as_deref() {
            if !group.archs.iter().any(|known| known == arch) {
                group.archs.push(arch.to_string());
            }
        }
    }

    /// Drops the whole report once it is past the full limits.
    fn check_full_limits(&mut self) {
        let (rows, findings) = self.full_limits;
        if self
            .full
            .as_ref()
            .is_some_and(|full| full.kernels.len() > rows || full.findings.len() > findings)
        {
            self.full = None;
        }
    }

    /// Whether a deny finding came in: the gate fails.
    pub fn has_deny(&self) -> bool {
        self.deny > 0
    }

    /// Rows taken in.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether the digest still holds the whole report (and renders it in full).
    pub fn is_full(&self) -> bool {
        self.full.is_some()
    }

    /// The report for a terminal: [`super::render_text`] of the whole report while it is within
    /// the full limits; past them, the table of the worst rows, each lint's first finding and
    /// one summary line per lint, the counts.
    pub fn render_text(&self) -> String {
        match &self.full {
            Some(full) => super::render_text(full),
            None => render::text(self),
        }
    }

    /// The report as Markdown: [`super::render_markdown`] of the whole report while it is
    /// within the full limits; past them, as [`Self::render_text`] does.
    pub fn render_markdown(&self) -> String {
        match &self.full {
            Some(full) => super::render_markdown(full),
            None => render::markdown(self),
        }
    }
}

mod render;

#[cfg(test)]
mod tests;
