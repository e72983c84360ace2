//! The text and Markdown of a [`ReportDigest`] past the full limits: the shapes of
//! [`crate::report::render_text`] and [`crate::report::render_markdown`], with the table cut to
//! the worst rows and every lint's findings to its first and a summary line.

use std::fmt::Write as _;

use super::{FindingGroup, ReportDigest, WorstRow, FINDINGS_SHOWN_PER_LINT};
use crate::report::markdown;
use crate::report::model::{Finding, Report};
use crate::report::table::{aligned, describe_programs, render_finding_text, table_cells};

/// The kept rows, worst first.
fn worst_first(digest: &ReportDigest) -> Vec<&WorstRow> {
    let mut rows: Vec<&WorstRow> = digest.worst.iter().map(|kept| &kept.0).collect();
    rows.sort_by(|a, b| b.cmp(a));
    rows
}

/// The kept rows, worst first, as rows (for tests).
#[cfg(test)]
pub(super) fn worst_first_rows(digest: &ReportDigest) -> Vec<crate::report::KernelRow> {
    worst_first(digest)
        .into_iter()
        .map(|kept| kept.row.clone())
        .collect()
}

/// The header and cells of the worst rows: [`table_cells`], with each row's own findings.
fn worst_cells(rows: &[&WorstRow], max_name_chars: usize) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let report = Report {
        kernels: rows.iter().map(|kept| kept.row.clone()).collect(),
        ..Report::default()
    };
    let (header, mut cells) = table_cells(&report, max_name_chars);
    for (cells, kept) in cells.iter_mut().zip(rows) {
        if let Some(last) = cells.last_mut() {
            *last = super::format_findings(&kept.lints);
        }
    }
    (header, cells)
}

/// What the table leaves out, when it leaves something out.
fn more_rows(digest: &ReportDigest, shown: usize) -> Option<String> {
    let rows = digest.rows;
    (rows > shown as u64).then(|| {
        format!(
            "… {} more rows: the table shows the {shown} worst of {rows} (a deny finding first, then warn, then the lowest occupancy, then the most spills); `--json` or `--sarif` lists every row and finding",
            rows - shown as u64
        )
    })
}

/// `2000000 kernels (+3 device functions) on 2 archs: 10 deny, 4 warn`.
fn summary_line(digest: &ReportDigest) -> String {
    let device_functions = match digest.device_functions.exact() {
        Some(0) => String::new(),
        _ => format!(
            " (+{})",
            digest.device_functions.describe("device function")
        ),
    };
    let archs = match digest.archs.len() {
        1 => "1 arch".to_string(),
        count => format!("{count} archs"),
    };
    format!(
        "{}{device_functions} on {archs}: {} deny, {} warn",
        digest.kernels.describe("kernel"),
        digest.deny,
        digest.warn
    )
}

/// The machine-code lines of the first rows that have SASS facts.
fn sass_text(digest: &ReportDigest) -> String {
    let mut out = crate::report::sass::render_sass_text(&digest.sass_lines);
    let more = digest.sass_rows - digest.sass_lines.len() as u64;
    if more > 0 {
        let _ = writeln!(out, "  … {more} more rows with machine-code facts");
    }
    out
}

/// `programs: sm_80 from compute_80 PTX, ...`, when known.
fn programs_line(digest: &ReportDigest) -> Option<String> {
    describe_programs(
        digest
            .programs
            .iter()
            .map(|(arch, ptx)| (arch.as_str(), ptx.as_str()))
            .collect(),
    )
}

/// The findings to show whole, in the order they came, each with its group; a group past
/// [`FINDINGS_SHOWN_PER_LINT`] shows only its first.
fn shown_findings(digest: &ReportDigest) -> Vec<(u64, &Finding, &FindingGroup)> {
    let mut shown: Vec<(u64, &Finding, &FindingGroup)> = digest
        .groups
        .iter()
        .flat_map(|group| {
            let whole = group.count <= FINDINGS_SHOWN_PER_LINT as u64;
            let kept = if whole { group.first.len() } else { 1 };
            group.first[..kept]
                .iter()
                .map(move |(order, finding)| (*order, finding, group))
        })
        .collect();
    shown.sort_by_key(|(order, _, _)| *order);
    shown
}

/// `warn[occupancy_cliff]: 211 more like this; 118 kernels in all on sm_80, sm_90: a, b, c, d, e (+113 more) (...)`.
fn group_summary_line(group: &FindingGroup) -> String {
    let kernels = group.kernels.describe("kernel");
    let more = match group.kernels.exact() {
        Some(count) if count > group.first_kernels.len() => {
            format!(" (+{} more)", count - group.first_kernels.len())
        }
        Some(_) => String::new(),
        None => " (and more)".to_string(),
    };
    let on = if group.archs.is_empty() {
        String::new()
    } else {
        format!(" on {}", group.archs.join(", "))
    };
    format!(
        "{}[{}]: {} more like this; {kernels} in all{on}: {}{more} (`--json` or `--sarif` lists every finding)\n",
        group.level,
        group.lint,
        group.count - 1,
        group.first_kernels.join(", ")
    )
}

/// Each lint's first findings in rustc's shape, and its summary line past a few.
fn findings_text(digest: &ReportDigest) -> String {
    let mut out = String::new();
    for (_, finding, group) in shown_findings(digest) {
        out.push('\n');
        out.push_str(&render_finding_text(finding));
        if group.count > FINDINGS_SHOWN_PER_LINT as u64 {
            out.push_str(&group_summary_line(group));
        }
    }
    out
}

/// The text rendering past the full limits.
pub(super) fn text(digest: &ReportDigest) -> String {
    let mut out = String::new();
    let rows = worst_first(digest);
    if rows.is_empty() {
        out.push_str("no kernels\n");
    } else {
        let (header, cells) = worst_cells(&rows, 48);
        out.push_str(&aligned(&header, &cells));
        if let Some(line) = more_rows(digest, rows.len()) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out.push_str(&sass_text(digest));
    out.push_str(&findings_text(digest));
    out.push('\n');
    if let Some(line) = programs_line(digest) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&summary_line(digest));
    out.push('\n');
    out
}

/// The Markdown rendering past the full limits.
pub(super) fn markdown(digest: &ReportDigest) -> String {
    let mut out = String::from("## GPU occupancy\n\n");
    let warnings = usize::try_from(digest.warn).unwrap_or(usize::MAX);
    let _ = write!(
        out,
        "{}: {}\n\n",
        markdown::verdict(digest.has_deny(), warnings),
        summary_line(digest)
    );
    let rows = worst_first(digest);
    if !rows.is_empty() {
        let (header, cells) = worst_cells(&rows, 60);
        out.push_str(&markdown::table(&header, cells));
        if let Some(line) = more_rows(digest, rows.len()) {
            let _ = write!(out, "\n_{}_\n", markdown::cell(&line));
        }
        out.push('\n');
    }
    let shown = shown_findings(digest);
    if !shown.is_empty() {
        out.push_str("### Findings\n\n");
        for (_, finding, group) in shown {
            out.push_str(&markdown::render_finding(finding));
            if group.count > FINDINGS_SHOWN_PER_LINT as u64 {
                let _ = writeln!(
                    out,
                    "- {}",
                    markdown::cell(group_summary_line(group).trim_end())
                );
            }
        }
    }
    out
}
