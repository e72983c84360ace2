//! The report as GitHub-flavoured Markdown, for `$GITHUB_STEP_SUMMARY` and pull-request comments:
//! a one-line verdict, the kernel table, and the findings (deny and warn) with their locations.

use super::model::{Finding, Report};
use super::table::{summary_line, table_cells};
use crate::lint::Level;

/// Escapes text for a Markdown table cell (pipes and line breaks would break the row).
pub(super) fn cell(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
}

/// Renders the whole report.
pub fn render_markdown(report: &Report) -> String {
    let mut out = String::new();
    out.push_str("## GPU occupancy\n\n");
    out.push_str(&format!(
        "{}: {}\n\n",
        verdict(report.has_deny(), report.count(Level::Warn)),
        summary_line(report)
    ));
    if !report.kernels.is_empty() {
        let (header, rows) = table_cells(report, 60);
        out.push_str(&table(&header, rows));
        out.push('\n');
    }
    let shown: Vec<&Finding> = report.shown_findings().collect();
    if !shown.is_empty() {
        out.push_str("### Findings\n\n");
        for finding in shown {
            out.push_str(&render_finding(finding));
        }
    }
    out
}

/// The one-line verdict: failed, passed with warnings, passed.
pub(super) fn verdict(has_deny: bool, warnings: usize) -> &'static str {
    if has_deny {
        "❌ **occupancy check failed**"
    } else if warnings > 0 {
        "⚠️ **occupancy check passed with warnings**"
    } else {
        "✅ **occupancy check passed**"
    }
}

/// The kernel table of [`table_cells`]' header and rows.
pub(super) fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut out = format!("| {} |\n", header.join(" | "));
    let alignments: Vec<&str> = header
        .iter()
        .map(|title| match *title {
            "crate" | "kernel" | "arch" | "limiter" | "headroom" | "findings" => ":---",
            _ => "---:",
        })
        .collect();
    out.push_str(&format!("|{}|\n", alignments.join("|")));
    for cells in rows {
        let cells: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(index, text)| {
                if header[index] == "kernel" {
                    format!("`{}`", text.replace('`', "'"))
                } else {
                    cell(text)
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

pub(super) fn render_finding(finding: &Finding) -> String {
    let icon = if finding.level == Level::Deny {
        "❌"
    } else {
        "⚠️"
    };
    let mut out = format!(
        "- {icon} **{}** `{}`: {}",
        finding.level,
        finding.lint,
        cell(&finding.message)
    );
    if let Some(location) = &finding.location {
        out.push_str(&format!(" (`{location}`)"));
    }
    out.push('\n');
    for note in &finding.notes {
        out.push_str(&format!("  - note: {}\n", cell(note)));
    }
    if let Some(help) = &finding.help {
        out.push_str(&format!("  - help: {}\n", cell(help)));
    }
    out
}
