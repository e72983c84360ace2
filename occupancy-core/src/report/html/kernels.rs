//! The table of every kernel × arch row, after the summary: sortable by a click on a column
//! header, filterable by words, and a click on a kernel opens its details (facts, findings,
//! loop nest and the three charts) under its row.
//!
//! A row holds what the columns show and nothing else: names are written once (the full
//! name is the text, the cell clamps it to two lines), a cell carries a sort key only where
//! its text does not sort as itself, and the details are drawn from the page data when opened.

use std::fmt::Write as _;

use super::context::Context;
use super::names::name_html;
use crate::lint::Level;
use crate::report::markup::escape;
use crate::report::model::KernelRow;
use crate::report::table::{
    format_bytes, format_headroom, format_limiters, format_occupancy, format_smem, format_spills,
};

/// The columns: the name `--sort` and `#sort=` take ([`crate::report::Column`]), the header,
/// and whether the column is numeric (right-aligned).
const COLUMNS: [(&str, &str, bool); 13] = [
    ("kernel", "kernel", false),
    ("arch", "arch", false),
    ("block", "block", true),
    ("registers", "regs", true),
    ("spills", "spills st/ld", true),
    ("stack", "stack", true),
    ("smem", "smem", true),
    ("barriers", "bar", true),
    ("blocks", "blocks/SM", true),
    ("occupancy", "occupancy", true),
    ("limiter", "limiter", false),
    ("headroom", "headroom", false),
    ("findings", "findings", false),
];

/// Whether the table has a crate column: only when rows come from more than one crate.
fn with_crate(context: &Context<'_>) -> bool {
    let mut crates = context.report.kernels.iter().map(|row| &row.crate_name);
    let first = crates.next();
    crates.any(|other| Some(other) != first)
}

/// The section: filter box, table, one row per kernel × arch.
pub(super) fn render_kernels(out: &mut String, context: &Context<'_>, row_curves: &[String]) {
    let rows = context.report.kernels.len();
    let _ = writeln!(
        out,
        "<section id=\"all-kernels\"><h2>All kernels <span class=\"note\">{rows} kernel × arch rows</span></h2>"
    );
    if rows == 0 {
        out.push_str("<p>No kernels.</p></section>\n");
        return;
    }
    out.push_str(
        "<p class=\"tools\"><input id=\"filter\" type=\"search\" placeholder=\"filter: kernel, arch, crate, lint, limiter, deny, lint:spills\" aria-label=\"filter rows\"> <span id=\"shown\" class=\"note\"></span> <span class=\"note\">· click a column to sort, a kernel for its details and charts</span></p>\n",
    );
    let crate_column = with_crate(context);
    render_alignment(out, crate_column);
    out.push_str("<table class=\"kernels\" id=\"kernels\">\n<thead><tr>");
    if crate_column {
        out.push_str("<th data-column=\"crate\">crate</th>");
    }
    for (column, title, _) in COLUMNS {
        let _ = write!(out, "<th data-column=\"{column}\">{}</th>", escape(title));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (index, row) in context.report.kernels.iter().enumerate() {
        let curves = row_curves.get(index).map_or("", String::as_str);
        render_row(out, context, index, row, crate_column, curves);
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

/// Right-aligns the numeric columns by position: one rule instead of a class on every cell.
fn render_alignment(out: &mut String, crate_column: bool) {
    let offset = usize::from(crate_column) + 1;
    let selectors: Vec<String> = COLUMNS
        .iter()
        .enumerate()
        .filter(|(_, (_, _, numeric))| *numeric)
        .map(|(index, _)| format!("#kernels td:nth-child({})", index + offset))
        .collect();
    let _ = writeln!(
        out,
        "<style>{} {{ text-align: right; font-variant-numeric: tabular-nums; }}</style>",
        selectors.join(", ")
    );
}

/// One `<tr>`: `id="kN"` (links and the details use it), the level of its worst finding, and
/// its curves for the details.
fn render_row(
    out: &mut String,
    context: &Context<'_>,
    index: usize,
    row: &KernelRow,
    crate_column: bool,
    curves: &str,
) {
    let level = context.row_level(index);
    let _ = write!(out, "<tr id=\"k{index}\"");
    if let Some(level) = level {
        let _ = write!(out, " class=\"{level}\"");
    }
    if !curves.is_empty() {
        let _ = write!(out, " data-curves=\"{curves}\"");
    }
    out.push('>');
    if crate_column {
        let name = row.crate_name.as_deref().unwrap_or_default();
        let _ = write!(out, "<td>{}</td>", escape(name));
    }
    let _ = write!(
        out,
        "<td class=\"name\"><a class=\"k\" href=\"#k{index}\">{}</a></td><td>{}</td>",
        name_html(row.display_name()),
        escape(&row.arch)
    );
    render_resources(out, row);
    render_result(out, row);
    render_findings_cell(out, context, index);
    out.push_str("</tr>\n");
}

/// `<td>` with a sort key only when the text does not sort as itself.
fn cell(out: &mut String, sort: Option<String>, shown: &str) {
    match sort {
        Some(sort) => {
            let _ = write!(
                out,
                "<td data-sort=\"{}\">{}</td>",
                escape(&sort),
                escape(shown)
            );
        }
        None => {
            let _ = write!(out, "<td>{}</td>", escape(shown));
        }
    }
}

/// A byte count's cell: sorted by the count when the text is in KiB.
fn bytes_cell(out: &mut String, bytes: u64, shown: &str) {
    let sort = (bytes >= 1024 || shown.contains('+')).then(|| bytes.to_string());
    cell(out, sort, shown);
}

/// Block, registers, spills, stack, shared memory, barriers.
fn render_resources(out: &mut String, row: &KernelRow) {
    let dash = |value: u32| {
        if row.entry {
            value.to_string()
        } else {
            "-".to_string()
        }
    };
    cell(out, None, &dash(row.block));
    let registers = if row.entry || row.registers > 0 {
        row.registers.to_string()
    } else {
        "-".to_string()
    };
    cell(out, None, &registers);
    let spills = row.spill_bytes();
    cell(
        out,
        (spills > 0).then(|| spills.to_string()),
        &format_spills(row),
    );
    bytes_cell(
        out,
        row.stack_frame_bytes,
        &format_bytes(row.stack_frame_bytes),
    );
    bytes_cell(
        out,
        row.static_smem_bytes.saturating_add(row.dynamic_smem_bytes),
        &format_smem(row),
    );
    cell(out, None, &row.barriers.to_string());
    cell(out, None, &dash(row.blocks_per_sm));
}

/// Occupancy with its bar, limiters, headroom.
fn render_result(out: &mut String, row: &KernelRow) {
    if row.entry {
        let shown = format_occupancy(row.occupancy);
        let _ = write!(
            out,
            "<td><i class=\"bar\" style=\"--o:{shown}\"></i>{shown}</td>"
        );
    } else {
        out.push_str("<td>-</td>");
    }
    // `registers+shared_memory` may wrap after a `+`.
    let _ = write!(
        out,
        "<td>{}</td>",
        escape(&format_limiters(row)).replace('+', "+<wbr>")
    );
    // Rows with no register cliff sort after every count of spare registers.
    let sort = (row.entry && row.headroom.spare_registers_per_thread.is_none())
        .then(|| u32::MAX.to_string());
    // `+33 reg, +110 KiB smem` may wrap after the comma only.
    let headroom: Vec<String> = format_headroom(row)
        .split(", ")
        .map(|part| part.replace(' ', "\u{a0}"))
        .collect();
    cell(out, sort, &headroom.join(", "));
}

/// The row's lints as chips, most severe first; sorted by severity (deny counts 100, warn 1).
fn render_findings_cell(out: &mut String, context: &Context<'_>, index: usize) {
    let lints = context.row_lints(index);
    if lints.is_empty() {
        out.push_str("<td></td>");
        return;
    }
    let severity: usize = lints
        .iter()
        .map(|(level, _)| if *level == Level::Deny { 100 } else { 1 })
        .sum();
    let _ = write!(out, "<td data-sort=\"{severity}\">");
    for (level, lint) in lints {
        let _ = write!(out, "<span class=\"f {level}\">{lint}</span> ");
    }
    out.push_str("</td>");
}
