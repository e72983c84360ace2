//! The top of the page: what needs attention, before the table. Findings by lint with the worst
//! kernels of each, the kernels that spill most, the kernels with the lowest occupancy, the
//! occupancy of every kernel per architecture ([`super::histogram`]) and, when the build compared
//! against its baseline, what changed. Every kernel named links to its row, which opens with
//! its details.
//!
//! Lists are per kernel (crate and symbol), its architectures side by side, and short: the table
//! below holds every row.

use std::cmp::Ordering;
use std::fmt::Write as _;

use super::context::Context;
use super::findings::{counts_text, LintGroup};
use super::histogram::render_histograms;
use super::names::short_name;
use crate::lint::{Level, LintId};
use crate::report::markup::escape;
use crate::report::table::{format_occupancy, format_spills};

/// Kernels named per lint.
const WORST_PER_LINT: usize = 3;
/// Kernels listed under the most spills and the lowest occupancy.
const WORST_LISTED: usize = 8;
/// Baseline changes listed; the findings section has the rest.
const BASELINE_LISTED: usize = 12;

/// The section.
pub(super) fn render_attention(out: &mut String, context: &Context<'_>, groups: &[LintGroup]) {
    out.push_str("<section id=\"attention\" class=\"attention\">\n<div class=\"column\">\n");
    render_by_lint(out, context, groups);
    render_lowest_occupancy(out, context);
    out.push_str("</div>\n<div class=\"column\">\n");
    render_histograms(out, context);
    render_most_spills(out, context);
    render_baseline(out, context, groups);
    out.push_str("</div>\n</section>\n");
}

/// A link to a row, showing a kernel's short name (the full one on hover).
fn kernel_link(context: &Context<'_>, row: usize) -> String {
    let name = context.report.kernels[row].display_name();
    format!(
        "<a class=\"kn\" href=\"#k{row}\" title=\"{}\">{}</a>",
        escape(name),
        escape(short_name(name))
    )
}

/// How bad a row is, worst first: more spill bytes, then lower occupancy.
fn row_order(context: &Context<'_>, a: usize, b: usize) -> Ordering {
    let (a, b) = (&context.report.kernels[a], &context.report.kernels[b]);
    b.spill_bytes()
        .cmp(&a.spill_bytes())
        .then(a.occupancy.total_cmp(&b.occupancy))
}

/// One lint's row of the card: counts, kernels, the worst few.
fn render_lint_row(out: &mut String, context: &Context<'_>, group: &LintGroup) {
    // Per kernel: the most severe level of this lint's findings and its worst row.
    let mut worst: Vec<Option<(Level, usize)>> = vec![None; context.kernels.len()];
    let mut crate_wide = 0;
    for &id in &group.findings {
        let level = context.findings[id].level;
        if context.finding_keys[id].is_empty() {
            crate_wide += 1;
        }
        for &key in &context.finding_keys[id] {
            let row = context.keys[key];
            match &mut worst[context.key_kernel[key]] {
                Some((seen_level, seen_row)) => {
                    *seen_level = (*seen_level).max(level);
                    if row_order(context, row, *seen_row) == Ordering::Less {
                        *seen_row = row;
                    }
                }
                slot => *slot = Some((level, row)),
            }
        }
    }
    let mut kernels: Vec<(Level, usize)> = worst.into_iter().flatten().collect();
    kernels.sort_by(|a, b| b.0.cmp(&a.0).then(row_order(context, a.1, b.1)));
    let level = if group.deny > 0 { "deny" } else { "warn" };
    let _ = write!(
        out,
        "<tr class=\"{level}\"><td><a class=\"lint\" href=\"#lint-{lint}\">{lint}</a><div class=\"note summary\" title=\"{summary}\">{summary}</div></td><td class=\"n\">{counts}</td><td class=\"n\">{kernels}</td><td>",
        lint = group.lint,
        summary = escape(group.lint.lint().summary),
        counts = counts_text(group).replace(", ", "<br>"),
        kernels = kernels.len(),
    );
    let links: Vec<String> = kernels
        .iter()
        .take(WORST_PER_LINT)
        .map(|&(_, row)| {
            let arch = escape(&context.report.kernels[row].arch);
            format!(
                "<div class=\"w\">{} <span class=\"note\">{arch}</span></div>",
                kernel_link(context, row)
            )
        })
        .collect();
    out.push_str(&links.concat());
    if kernels.len() > WORST_PER_LINT {
        let _ = write!(
            out,
            "<a class=\"more\" href=\"#filter=lint:{}\">all {} kernels →</a>",
            group.lint,
            kernels.len()
        );
    }
    if crate_wide > 0 {
        let _ = write!(
            out,
            "<span class=\"note\">{crate_wide} not about one kernel</span>"
        );
    }
    out.push_str("</td></tr>\n");
}

/// Findings by lint: counts per level, how many kernels, the worst few of each.
fn render_by_lint(out: &mut String, context: &Context<'_>, groups: &[LintGroup]) {
    out.push_str("<div class=\"card\" id=\"by-lint\"><h2>Findings by lint</h2>\n");
    if groups.is_empty() {
        out.push_str(
            "<p class=\"ok\">No findings: every kernel passes every lint at its level.</p></div>\n",
        );
        return;
    }
    out.push_str("<table class=\"lints\"><thead><tr><th>lint</th><th class=\"n\">findings</th><th class=\"n\">kernels</th><th>worst first</th></tr></thead><tbody>\n");
    for group in groups {
        render_lint_row(out, context, group);
    }
    out.push_str("</tbody></table></div>\n");
}

/// A card's table of kernels: the name (linked to its worst row), then one column per
/// architecture of the report with the kernel's figure there, linked to that row.
fn render_kernel_list(
    out: &mut String,
    context: &Context<'_>,
    listed: &[(usize, usize)],
    figure: impl Fn(usize) -> String,
) {
    let archs = context.archs();
    out.push_str("<table class=\"worst\"><thead><tr><th class=\"kname\">kernel</th>");
    for arch in &archs {
        let _ = write!(out, "<th>{}</th>", escape(arch));
    }
    out.push_str("</tr></thead><tbody>\n");
    for &(kernel, row) in listed.iter().take(WORST_LISTED) {
        let _ = write!(
            out,
            "<tr><td class=\"kname\">{}</td>",
            kernel_link(context, row)
        );
        for arch in &archs {
            out.push_str("<td>");
            let on_arch = context.kernels[kernel]
                .iter()
                .map(|&key| context.keys[key])
                .find(|&row| context.report.kernels[row].arch == *arch);
            if let Some(row) = on_arch {
                let _ = write!(
                    out,
                    "<a class=\"arch\" href=\"#k{row}\">{}</a>",
                    figure(row)
                );
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

/// The kernels with the most spill bytes (stores + loads per thread) on any architecture.
fn render_most_spills(out: &mut String, context: &Context<'_>) {
    let mut spilling: Vec<(usize, usize)> =
        worst_rows(context, |row| context.report.kernels[row].spill_bytes() > 0);
    spilling.sort_by(|a, b| row_order(context, a.1, b.1));
    let _ = writeln!(
        out,
        "<div class=\"card\" id=\"most-spills\"><h2>Most spills <span class=\"note\">{}</span></h2>",
        match spilling.len() {
            1 => "1 kernel spills".to_string(),
            count => format!("{count} kernels spill"),
        }
    );
    if spilling.is_empty() {
        out.push_str("<p class=\"ok\">No kernel spills registers to local memory.</p></div>\n");
        return;
    }
    render_kernel_list(out, context, &spilling, |row| {
        format!("<b>{}</b>", format_spills(&context.report.kernels[row]))
    });
    out.push_str("<p class=\"note\">spill store/load bytes per thread · <a href=\"#sort=-spills\">every row by spills →</a></p></div>\n");
}

/// The entry kernels with the lowest occupancy on any architecture.
fn render_lowest_occupancy(out: &mut String, context: &Context<'_>) {
    let mut kernels: Vec<(usize, usize)> =
        worst_rows(context, |row| context.report.kernels[row].entry);
    kernels.sort_by(|a, b| {
        let (x, y) = (&context.report.kernels[a.1], &context.report.kernels[b.1]);
        x.occupancy
            .total_cmp(&y.occupancy)
            .then(y.registers.cmp(&x.registers))
    });
    out.push_str("<div class=\"card\" id=\"lowest-occupancy\"><h2>Lowest occupancy</h2>\n");
    if kernels.is_empty() {
        out.push_str("<p>No entry kernels.</p></div>\n");
        return;
    }
    render_kernel_list(out, context, &kernels, |row| {
        let row = &context.report.kernels[row];
        let shown = format_occupancy(row.occupancy);
        let short: Vec<&str> = row
            .limiters
            .iter()
            .map(|name| short_limiter(name))
            .collect();
        format!(
            "<i class=\"bar\" style=\"--o:{shown}\"></i><b>{shown}</b> <span class=\"lim\" title=\"limited by {}\">{}</span>",
            escape(&row.limiters.join(" + ")),
            escape(&short.join("+"))
        )
    });
    out.push_str("<p class=\"note\">theoretical occupancy and what limits it · <a href=\"#sort=occupancy\">every row by occupancy →</a></p></div>\n");
}

/// A limiter's name in a few letters, for the lists' narrow columns (`smem`, as the headroom
/// column says).
fn short_limiter(name: &str) -> &str {
    match name {
        "registers" => "regs",
        "shared_memory" => "smem",
        "launch_bounds" => "bounds",
        other => other,
    }
}

/// For each kernel with a row that `keep`s: its worst such row (most spills, lowest occupancy).
fn worst_rows(context: &Context<'_>, keep: impl Fn(usize) -> bool) -> Vec<(usize, usize)> {
    context
        .kernels
        .iter()
        .enumerate()
        .filter_map(|(kernel, keys)| {
            keys.iter()
                .map(|&key| context.keys[key])
                .filter(|&row| keep(row))
                .min_by(|&a, &b| {
                    let (x, y) = (&context.report.kernels[a], &context.report.kernels[b]);
                    y.spill_bytes()
                        .cmp(&x.spill_bytes())
                        .then(x.occupancy.total_cmp(&y.occupancy))
                })
                .map(|row| (kernel, row))
        })
        .collect()
}

/// The baseline's changes: regressions first, then what is stale (better, new, gone, another
/// toolchain), with the numbers that changed.
fn render_baseline(out: &mut String, context: &Context<'_>, groups: &[LintGroup]) {
    let mut changes: Vec<usize> = groups
        .iter()
        .filter(|group| matches!(group.lint, LintId::Regression | LintId::BaselineStale))
        .flat_map(|group| group.findings.iter().copied())
        .collect();
    if changes.is_empty() {
        return;
    }
    changes.sort_by_key(|&id| {
        let finding = context.findings[id];
        (
            finding.lint != LintId::Regression,
            std::cmp::Reverse(finding.level),
            id,
        )
    });
    let _ = write!(
        out,
        "<div class=\"card\" id=\"baseline\"><h2>Changes against the baseline <span class=\"note\">{} ({})</span></h2>\n<table class=\"changes\"><tbody>\n",
        changes.len(),
        baseline_counts(context, &changes)
    );
    for &id in changes.iter().take(BASELINE_LISTED) {
        render_change(out, context, id);
    }
    out.push_str("</tbody></table>\n");
    if changes.len() > BASELINE_LISTED {
        let _ = write!(
            out,
            "<p class=\"note\">{} more in <a href=\"#lint-regression\">regression</a> and <a href=\"#lint-baseline_stale\">baseline_stale</a> below</p>",
            changes.len() - BASELINE_LISTED
        );
    }
    out.push_str("</div>\n");
}

/// `3 worse, 5 stale`.
fn baseline_counts(context: &Context<'_>, changes: &[usize]) -> String {
    let worse = changes
        .iter()
        .filter(|&&id| context.findings[id].lint == LintId::Regression)
        .count();
    format!("{worse} worse, {} stale", changes.len() - worse)
}

/// One change: the kernel (linked), the numbers that changed (`registers: 40 -> 48`), or the
/// finding's message when none did (a new or vanished kernel, another toolchain).
fn render_change(out: &mut String, context: &Context<'_>, id: usize) {
    let finding = context.findings[id];
    let kind = if finding.lint == LintId::Regression {
        "worse"
    } else {
        "stale"
    };
    let kernel = match context.finding_keys[id].first() {
        Some(&key) => kernel_link(context, context.keys[key]),
        None => escape(finding.kernel.as_deref().unwrap_or("")),
    };
    let numbers: Vec<String> = finding
        .notes
        .iter()
        .filter(|note| note.contains(" -> "))
        .map(|note| escape(note).replace(" -&gt; ", " → "))
        .collect();
    let what = if numbers.is_empty() {
        escape(&finding.message)
    } else {
        numbers.join("; ")
    };
    let _ = writeln!(
        out,
        "<tr class=\"{level}\"><td><span class=\"f {level}\">{kind}</span></td><td class=\"kname\">{kernel}</td><td>{arch}</td><td>{what}</td></tr>",
        level = finding.level,
        arch = escape(finding.arch.as_deref().unwrap_or("")),
    );
}
