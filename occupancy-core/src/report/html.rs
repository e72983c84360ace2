//! The report as one self-contained HTML page: the kernel table (sortable by clicking a column),
//! the findings, and per kernel and architecture three inline SVG charts (occupancy against
//! threads per block, registers per thread and shared memory per block) with the kernel's
//! current point and the cliffs marked: the pictures NVIDIA's occupancy calculator spreadsheet
//! draws, computed with [`crate::calc`] through [`super::curves`].
//!
//! The page fetches nothing: no scripts, fonts, styles or images from the network. Its one small
//! script sorts the table and must not log anything to the console.

use std::fmt::Write as _;

use super::curves::{all_curves, format_x, Axis, Curve, Step};
use super::index::FindingIndex;
use super::markup::escape;
use super::model::{Finding, KernelRow, Report};
use super::table::{
    format_bytes, format_findings, format_headroom, format_limiters, format_occupancy, format_smem,
    format_spills, summary_line,
};
use crate::arch;
use crate::lint::{Level, LintId};

const STYLE: &str = r#"
:root { --ink:#1d2330; --muted:#5b6475; --line:#d8dce3; --accent:#1c64d9; --fill:rgba(28,100,217,.12);
        --now:#d9480f; --cliff:#c92a2a; --ok:#2b8a3e; --warn:#e67700; --bad:#c92a2a; --bg:#f7f8fa; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--ink); background: var(--bg); }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 16px 28px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 10px; }
main { padding: 0 28px 40px; }
.verdict { font-weight: 600; }
.verdict.fail { color: var(--bad); } .verdict.warn { color: var(--warn); } .verdict.pass { color: var(--ok); }
.table-wrap { overflow-x: auto; border: 1px solid var(--line); background: #fff; }
table.kernels { border-collapse: collapse; width: 100%; font-size: 13px; }
table.kernels th, table.kernels td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: left;
       white-space: nowrap; }
table.kernels th { background: #eef1f5; cursor: pointer; user-select: none; font-weight: 600; }
table.kernels th[aria-sort=ascending]::after { content: " ▲"; } table.kernels th[aria-sort=descending]::after { content: " ▼"; }
table.kernels td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kernels td.name { font-family: ui-monospace, "DejaVu Sans Mono", monospace; max-width: 300px; overflow: hidden;
       text-overflow: ellipsis; }
tr.deny td:first-child { box-shadow: inset 4px 0 var(--bad); } tr.warn td:first-child { box-shadow: inset 4px 0 var(--warn); }
.bar { display: inline-block; width: 56px; height: 8px; background: #e6e9ee; border-radius: 4px; margin-right: 6px;
       vertical-align: middle; overflow: hidden; }
.bar > i { display: block; height: 100%; background: var(--accent); }
ul.findings { list-style: none; padding: 0; }
ul.findings li { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--warn); padding: 8px 12px;
       margin-bottom: 8px; }
ul.findings li.deny { border-left-color: var(--bad); }
.lint { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: 600; }
.loc, .note { color: var(--muted); }
article.kernel { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; margin-bottom: 16px; }
article.kernel h3 { margin: 0 0 2px; font-size: 15px; font-family: ui-monospace, "DejaVu Sans Mono", monospace;
       word-break: break-all; }
article.kernel .facts { color: var(--muted); margin: 0 0 8px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 0; }
figcaption { color: var(--muted); font-size: 12px; max-width: 380px; }
svg.chart { background: #fff; }
svg.chart text { font: 11px system-ui, "DejaVu Sans", sans-serif; fill: var(--muted); }
svg.chart .grid { stroke: #eceff3; } svg.chart .axis { stroke: #9aa3b2; }
svg.chart .curve { fill: none; stroke: var(--accent); stroke-width: 2; }
svg.chart .area { fill: var(--fill); stroke: none; }
svg.chart .now { stroke: var(--now); stroke-dasharray: 4 3; } svg.chart circle.now { fill: var(--now); stroke: #fff; stroke-width: 1.5; }
svg.chart text.now { fill: var(--now); font-weight: 600; }
svg.chart text.now, svg.chart text.cliff { paint-order: stroke; stroke: #fff; stroke-width: 3px; stroke-linejoin: round; }
svg.chart .cliff { fill: var(--cliff); } svg.chart text.cliff { fill: var(--cliff); }
svg.chart text.title { fill: var(--ink); font-weight: 600; }
.tools input { font: inherit; padding: 4px 8px; width: 340px; border: 1px solid var(--line); border-radius: 4px; }
footer { color: var(--muted); font-size: 12px; padding: 0 28px 24px; }
"#;

const SCRIPT: &str = r#"
(function () {
  var table = document.getElementById("kernels");
  if (!table) { return; }
  var headers = table.querySelectorAll("th");
  function sortBy(column, descending) {
    headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
    headers[column].setAttribute("aria-sort", descending ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[column].getAttribute("data-sort"), y = b.cells[column].getAttribute("data-sort");
      var nx = parseFloat(x), ny = parseFloat(y);
      var order = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  headers.forEach(function (th, column) {
    th.addEventListener("click", function () {
      sortBy(column, th.getAttribute("aria-sort") === "ascending");
    });
  });
  // Rows whose text contains every word typed (crate, kernel, arch, lint, limiter...).
  var filter = document.getElementById("filter");
  function applyFilter() {
    var words = filter.value.toLowerCase().split(/\s+/).filter(function (word) { return word.length > 0; });
    var shown = 0;
    Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
      var text = row.textContent.toLowerCase();
      var keep = words.every(function (word) { return text.indexOf(word) >= 0; });
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    document.getElementById("shown").textContent = shown + " of " + table.tBodies[0].rows.length + " rows";
  }
  if (filter) { filter.addEventListener("input", applyFilter); }
  // A link can carry the order and the filter: report.html#sort=-occupancy&filter=sm_90%20spills.
  var hash = window.location.hash.replace(/^#/, "");
  hash.split("&").forEach(function (part) {
    var pair = part.split("=");
    var value = decodeURIComponent(pair.slice(1).join("="));
    if (pair[0] === "sort") {
      var descending = value.charAt(0) === "-";
      var name = descending ? value.slice(1) : value;
      headers.forEach(function (th, column) {
        if (th.getAttribute("data-column") === name) { sortBy(column, descending); }
      });
    } else if (pair[0] === "filter" && filter) {
      filter.value = value;
    }
  });
  if (filter) { applyFilter(); }
})();
"#;

/// The page title and the verdict class.
fn verdict(report: &Report) -> (&'static str, &'static str) {
    if report.has_deny() {
        ("fail", "Check failed")
    } else if report.count(Level::Warn) > 0 {
        ("warn", "Passed with warnings")
    } else {
        ("pass", "Passed")
    }
}

fn row_level(lints: &[(Level, LintId)]) -> &'static str {
    if lints.iter().any(|(level, _)| *level == Level::Deny) {
        "deny"
    } else if lints.iter().any(|(level, _)| *level == Level::Warn) {
        "warn"
    } else {
        ""
    }
}

/// Renders the page. `title` names what was checked (a crate, a directory).
pub fn render_html(report: &Report, title: &str) -> String {
    let mut out = String::new();
    let (class, word) = verdict(report);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>GPU occupancy: {title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <header><h1>GPU occupancy: {title}</h1>\
         <div class=\"verdict {class}\">{word}: {summary}</div></header>\n<main>\n",
        title = escape(title),
        summary = escape(&summary_line(report)),
    );
    render_table(&mut out, report);
    render_findings(&mut out, report);
    out.push_str("<h2>Occupancy curves</h2>\n");
    out.push_str(
        "<p class=\"note\">Theoretical occupancy as the driver computes it, varying one resource while the others \
         stay at the kernel's values. The dashed line and dot mark the kernel now; red marks are cliffs, where one \
         more register, thread or byte changes the number of resident blocks.</p>\n",
    );
    for (index, row) in report.kernels.iter().enumerate() {
        render_kernel(&mut out, index, row);
    }
    out.push_str("</main>\n<footer>Generated by occupancy; computed with the exact calculator of occupancy-core. This page loads nothing from the network.</footer>\n");
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    out
}

fn render_table(out: &mut String, report: &Report) {
    out.push_str("<h2>Kernels</h2>\n");
    if report.kernels.is_empty() {
        out.push_str("<p>No kernels.</p>\n");
        return;
    }
    let with_crate = report.kernels.iter().any(|row| row.crate_name.is_some());
    out.push_str(
        "<p class=\"tools\"><input id=\"filter\" type=\"search\" placeholder=\"filter: kernel, arch, crate, lint, limiter\" aria-label=\"filter rows\"> <span id=\"shown\" class=\"note\"></span> <span class=\"note\">· click a column header to sort</span></p>\n",
    );
    out.push_str("<div class=\"table-wrap\"><table class=\"kernels\" id=\"kernels\">\n<thead><tr>");
    if with_crate {
        out.push_str("<th data-column=\"crate\">crate</th>");
    }
    // `data-column` is the name `--sort` takes ([`super::Column`]).
    for (column, title) in [
        ("kernel", "kernel"),
        ("arch", "arch"),
        ("block", "block"),
        ("registers", "regs"),
        ("spills", "spills st/ld"),
        ("stack", "stack"),
        ("smem", "smem"),
        ("barriers", "bar"),
        ("blocks", "blocks/SM"),
        ("occupancy", "occupancy"),
        ("limiter", "limiter"),
        ("headroom", "headroom"),
        ("findings", "findings"),
    ] {
        let _ = write!(out, "<th data-column=\"{column}\">{}</th>", escape(title));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let finding_index = FindingIndex::new(report);
    for (index, row) in report.kernels.iter().enumerate() {
        render_table_row(out, index, row, with_crate, finding_index.lints_for(row));
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// One `<tr>` of the kernels table: every column with its sort key.
fn render_table_row(
    out: &mut String,
    index: usize,
    row: &KernelRow,
    with_crate: bool,
    row_findings: &[(Level, LintId)],
) {
    let _ = write!(out, "<tr class=\"{}\">", row_level(row_findings));
    let text = |out: &mut String, sort: &str, shown: &str| {
        let _ = write!(
            out,
            "<td data-sort=\"{}\">{}</td>",
            escape(sort),
            escape(shown)
        );
    };
    let number = |out: &mut String, sort: f64, shown: &str| {
        let _ = write!(
            out,
            "<td class=\"num\" data-sort=\"{sort}\">{}</td>",
            escape(shown)
        );
    };
    if with_crate {
        let name = row.crate_name.clone().unwrap_or_default();
        text(out, &name, &name);
    }
    let _ = write!(
        out,
        "<td class=\"name\" data-sort=\"{sort}\" title=\"{full}\"><a href=\"#k{index}\">{shown}</a></td>",
        sort = escape(row.display_name()),
        full = escape(&format!("{}\n{}", row.display_name(), row.name)),
        shown = escape(row.display_name()),
    );
    let arch_rank = arch::lookup(&row.arch)
        .map(|facts| facts.major * 10 + facts.minor)
        .unwrap_or(0);
    let _ = write!(
        out,
        "<td data-sort=\"{arch_rank}\">{}</td>",
        escape(&row.arch)
    );
    let dash = |value: String| if row.entry { value } else { "-".to_string() };
    number(out, f64::from(row.block), &dash(row.block.to_string()));
    number(out, f64::from(row.registers), &row.registers.to_string());
    number(out, row.spill_bytes() as f64, &format_spills(row));
    number(
        out,
        row.stack_frame_bytes as f64,
        &format_bytes(row.stack_frame_bytes),
    );
    number(
        out,
        (row.static_smem_bytes + row.dynamic_smem_bytes) as f64,
        &format_smem(row),
    );
    number(out, f64::from(row.barriers), &row.barriers.to_string());
    number(
        out,
        f64::from(row.blocks_per_sm),
        &dash(row.blocks_per_sm.to_string()),
    );
    if row.entry {
        let _ = write!(
            out,
            "<td class=\"num\" data-sort=\"{sort}\"><span class=\"bar\"><i style=\"width:{width:.1}%\"></i></span>{shown}</td>",
            sort = row.occupancy,
            width = row.occupancy * 100.0,
            shown = format_occupancy(row.occupancy),
        );
    } else {
        out.push_str("<td class=\"num\" data-sort=\"-1\">-</td>");
    }
    text(out, &format_limiters(row), &format_limiters(row));
    let spare = row
        .headroom
        .spare_registers_per_thread
        .map_or(f64::from(u32::MAX), f64::from);
    let _ = write!(
        out,
        "<td data-sort=\"{spare}\">{}</td>",
        escape(&format_headroom(row))
    );
    let findings = format_findings(row_findings);
    text(out, &findings, &findings);
    out.push_str("</tr>\n");
}

fn render_findings(out: &mut String, report: &Report) {
    let shown: Vec<&Finding> = report.shown_findings().collect();
    if shown.is_empty() {
        return;
    }
    out.push_str("<h2>Findings</h2>\n<ul class=\"findings\">\n");
    for finding in shown {
        let _ = write!(
            out,
            "<li class=\"{level}\"><span class=\"lint\">{level}[{lint}]</span> {message}",
            level = finding.level,
            lint = finding.lint,
            message = escape(&finding.message)
        );
        if let Some(location) = &finding.location {
            let _ = write!(
                out,
                "<div class=\"loc\">--&gt; {}</div>",
                escape(&location.to_string())
            );
        }
        for note in &finding.notes {
            let _ = write!(out, "<div class=\"note\">note: {}</div>", escape(note));
        }
        if let Some(help) = &finding.help {
            let _ = write!(out, "<div>help: {}</div>", escape(help));
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ul>\n");
}

fn render_kernel(out: &mut String, index: usize, row: &KernelRow) {
    let _ = write!(
        out,
        "<article class=\"kernel\" id=\"k{index}\" data-kernel=\"{name}\" data-arch=\"{arch}\">\n<h3>{shown} <span class=\"note\">on {arch}</span></h3>\n",
        name = escape(&row.name),
        shown = escape(row.display_name()),
        arch = escape(&row.arch),
    );
    let facts = format!(
        "{} registers, {} static + {} dynamic shared memory, {} barrier(s), block {}: {} blocks/SM, {} warps/SM, {} occupancy, limited by {}",
        row.registers,
        format_bytes(row.static_smem_bytes),
        format_bytes(row.dynamic_smem_bytes),
        row.barriers,
        row.block,
        row.blocks_per_sm,
        row.warps_per_sm,
        format_occupancy(row.occupancy),
        format_limiters(row)
    );
    let _ = writeln!(out, "<p class=\"facts\">{}</p>", escape(&facts));
    if !row.entry {
        out.push_str(
            "<p>A device function: it has no launch and no occupancy of its own.</p>\n</article>\n",
        );
        return;
    }
    let Ok(facts) = arch::lookup(&row.arch) else {
        let _ = writeln!(
            out,
            "<p>Unknown architecture {}: no curves.</p>\n</article>",
            escape(&row.arch)
        );
        return;
    };
    out.push_str(&super::sass::render_loop_nest_html(row));
    out.push_str("<div class=\"charts\">\n");
    for curve in all_curves(facts, &row.curve_input()) {
        out.push_str("<figure>");
        out.push_str(&render_chart(
            &curve,
            &format!("k{index}-{}", curve.axis.slug()),
        ));
        let _ = write!(out, "<figcaption>{}</figcaption>", escape(&caption(&curve)));
        out.push_str("</figure>\n");
    }
    out.push_str("</div>\n</article>\n");
}

/// One sentence under a chart: where the kernel is and where the nearest cliffs are.
pub(crate) fn caption(curve: &Curve) -> String {
    let (below, current, above) = curve.neighbours();
    let Some(current) = current else {
        return format!("The kernel's {} is outside this chart.", curve.axis.title());
    };
    let mut text = format!(
        "At {}: {} blocks/SM ({}), bound by {}.",
        format_x(curve.axis, curve.current_x),
        current.blocks_per_sm,
        format_occupancy(current.occupancy),
        if current.limiters.is_empty() {
            "nothing".to_string()
        } else {
            current.limiters.join(" + ")
        }
    );
    if let Some(above) = above {
        let _ = write!(
            text,
            " From {}: {} blocks/SM ({}).",
            format_x(curve.axis, above.x_first),
            above.blocks_per_sm,
            format_occupancy(above.occupancy)
        );
    }
    if let Some(below) = below {
        let _ = write!(
            text,
            " At {}: {} blocks/SM ({}).",
            format_x(curve.axis, below.x_last),
            below.blocks_per_sm,
            format_occupancy(below.occupancy)
        );
    }
    text
}

/// A tick step giving about `target` ticks over `max`, from 1-2-4-8 × powers of two for
/// bytes and threads.
fn tick_step(axis: Axis, max: u64) -> u64 {
    let candidates: &[u64] = match axis {
        Axis::BlockSize => &[32, 64, 128, 256, 512],
        Axis::Registers => &[8, 16, 32, 64],
        Axis::SharedMemory => &[1024, 2048, 4096, 8192, 16384, 32768, 65536],
    };
    // Beyond the largest candidate (a report's 4 GiB of shared memory), a power of two that
    // still gives at most 8 ticks: the axis never draws more than 9 labels.
    candidates
        .iter()
        .copied()
        .find(|step| max / step <= 8)
        .unwrap_or_else(|| max.div_ceil(8).next_power_of_two())
}

fn tick_label(axis: Axis, x: u64) -> String {
    match axis {
        Axis::SharedMemory => {
            if x == 0 {
                "0".to_string()
            } else {
                format!("{}K", x / 1024)
            }
        }
        _ => x.to_string(),
    }
}

/// The chart's geometry: its size, margins and the scales from data to pixels.
struct ChartFrame {
    /// The largest x of the curve (at least 1), at the right edge of the plot.
    x_max: f64,
}

impl ChartFrame {
    const WIDTH: f64 = 380.0;
    const HEIGHT: f64 = 230.0;
    const LEFT: f64 = 44.0;
    const RIGHT: f64 = 14.0;
    const TOP: f64 = 26.0;
    const BOTTOM: f64 = 42.0;
    const PLOT_WIDTH: f64 = Self::WIDTH - Self::LEFT - Self::RIGHT;
    const PLOT_HEIGHT: f64 = Self::HEIGHT - Self::TOP - Self::BOTTOM;
    /// The y of the x axis.
    const BASE: f64 = Self::TOP + Self::PLOT_HEIGHT;

    fn sx(&self, x: u64) -> f64 {
        Self::LEFT + (x as f64 / self.x_max) * Self::PLOT_WIDTH
    }

    fn sy(&self, occupancy: f64) -> f64 {
        Self::TOP + (1.0 - occupancy.clamp(0.0, 1.0)) * Self::PLOT_HEIGHT
    }
}

/// One chart as an inline SVG element.
pub(crate) fn render_chart(curve: &Curve, id: &str) -> String {
    let frame = ChartFrame {
        x_max: curve.x_max.max(1) as f64,
    };
    let mut svg = String::new();
    let (width, height) = (ChartFrame::WIDTH, ChartFrame::HEIGHT);
    let _ = write!(
        svg,
        "<svg class=\"chart\" id=\"{id}\" data-axis=\"{slug}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"occupancy against {title}\">",
        slug = curve.axis.slug(),
        title = curve.axis.title(),
    );
    chart_axes(&mut svg, curve, &frame);
    chart_curve(&mut svg, curve, &frame);
    let (_, current, above) = curve.neighbours();
    chart_cliffs(&mut svg, curve, &frame, above.as_ref());
    if let Some(current) = &current {
        chart_current_point(&mut svg, curve, &frame, current);
    }
    svg.push_str("</svg>");
    svg
}

/// The title, the grid with its y labels, the x ticks, both axes and the x axis's title.
fn chart_axes(svg: &mut String, curve: &Curve, frame: &ChartFrame) {
    const LEFT: f64 = ChartFrame::LEFT;
    const TOP: f64 = ChartFrame::TOP;
    let plot_width = ChartFrame::PLOT_WIDTH;
    let plot_height = ChartFrame::PLOT_HEIGHT;
    let _ = write!(
        svg,
        "<text class=\"title\" x=\"{LEFT}\" y=\"15\">occupancy vs {}</text>",
        curve.axis.title()
    );
    // Horizontal grid and y labels.
    for quarter in 0..=4 {
        let occupancy = f64::from(quarter) / 4.0;
        let y = frame.sy(occupancy);
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text x=\"{lx}\" y=\"{ty:.1}\" text-anchor=\"end\">{pct}%</text>",
            x2 = LEFT + plot_width,
            lx = LEFT - 5.0,
            ty = y + 4.0,
            pct = quarter * 25
        );
    }
    // X ticks.
    let step = tick_step(curve.axis, curve.x_max);
    let mut tick = 0;
    while tick <= curve.x_max {
        let x = frame.sx(tick);
        let _ = write!(
            svg,
            "<line class=\"axis\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{y1:.1}\" y2=\"{y2:.1}\"/><text x=\"{x:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\">{label}</text>",
            y1 = TOP + plot_height,
            y2 = TOP + plot_height + 4.0,
            ty = TOP + plot_height + 16.0,
            label = tick_label(curve.axis, tick)
        );
        tick += step;
    }
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><line class=\"axis\" x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{y:.1}\"/>",
        x2 = LEFT + plot_width,
        y = TOP + plot_height
    );
    let _ = write!(
        svg,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\">{title}</text>",
        x = LEFT + plot_width / 2.0,
        y = ChartFrame::HEIGHT - 6.0,
        title = curve.axis.title()
    );
}

/// The curve: a step function (the value holds until the next point), as an outline and a
/// filled area.
fn chart_curve(svg: &mut String, curve: &Curve, frame: &ChartFrame) {
    let Some(first) = curve.points.first() else {
        return;
    };
    let mut path = format!("M{:.1},{:.1}", frame.sx(first.x), frame.sy(first.occupancy));
    // Only where the value changes: a step function needs no vertex inside a run.
    let mut previous = first.occupancy;
    for point in &curve.points[1..] {
        if point.occupancy != previous {
            let _ = write!(
                path,
                "H{:.1}V{:.1}",
                frame.sx(point.x),
                frame.sy(point.occupancy)
            );
            previous = point.occupancy;
        }
    }
    let end = curve
        .points
        .last()
        .map_or(curve.x_max, |last| last.x.max(curve.x_max));
    let _ = write!(path, "H{:.1}", frame.sx(end));
    let _ = write!(
        svg,
        "<path class=\"area\" d=\"{path}V{base:.1}H{start:.1}Z\"/><path class=\"curve\" d=\"{path}\"/>",
        base = ChartFrame::BASE,
        start = frame.sx(first.x),
    );
}

/// A red tick on the x axis at every change of blocks per SM, and a label at the nearest cliff
/// above the current point, with the blocks after it.
fn chart_cliffs(svg: &mut String, curve: &Curve, frame: &ChartFrame, above: Option<&Step>) {
    for cliff in &curve.cliffs() {
        let x = frame.sx(*cliff);
        let _ = write!(
            svg,
            "<path class=\"cliff\" d=\"M{x:.1},{y:.1}l-3.5,6h7z\"><title>cliff at {label}</title></path>",
            y = ChartFrame::BASE - 6.0,
            label = escape(&format_x(curve.axis, *cliff))
        );
    }
    let Some(above) = above else {
        return;
    };
    let x = frame.sx(above.x_first);
    let anchor = if x > ChartFrame::LEFT + ChartFrame::PLOT_WIDTH * 0.75 {
        "end"
    } else {
        "start"
    };
    let _ = write!(
        svg,
        "<text class=\"cliff\" x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"{anchor}\">{label} → {blocks} blk</text>",
        tx = if anchor == "end" { x - 3.0 } else { x + 3.0 },
        ty = ChartFrame::BASE - 10.0,
        label = escape(&tick_label(curve.axis, above.x_first)),
        blocks = above.blocks_per_sm
    );
}

/// The current point: a vertical line, a dot and its blocks and occupancy.
fn chart_current_point(svg: &mut String, curve: &Curve, frame: &ChartFrame, current: &Step) {
    const TOP: f64 = ChartFrame::TOP;
    let x = frame.sx(curve.current_x);
    let y = frame.sy(current.occupancy);
    let label = format!(
        "{} blk, {}",
        current.blocks_per_sm,
        format_occupancy(current.occupancy)
    );
    let anchor = if x > ChartFrame::LEFT + ChartFrame::PLOT_WIDTH * 0.6 {
        "end"
    } else {
        "start"
    };
    let label_y = if y < TOP + 14.0 { y + 16.0 } else { y - 8.0 };
    let _ = write!(
        svg,
        "<line class=\"now\" x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{base:.1}\"/><circle class=\"now\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4.5\"><title>now: {title}</title></circle><text class=\"now\" x=\"{lx:.1}\" y=\"{label_y:.1}\" text-anchor=\"{anchor}\">{label}</text>",
        base = ChartFrame::BASE,
        title = escape(&format!("{} → {}", format_x(curve.axis, curve.current_x), label)),
        lx = if anchor == "end" { x - 6.0 } else { x + 6.0 },
    );
}
