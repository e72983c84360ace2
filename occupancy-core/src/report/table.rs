//! The kernel table as text (a terminal) and the cell formatting shared with Markdown and HTML.

use std::collections::{HashMap, HashSet};

use super::index::FindingIndex;
use super::model::{Finding, KernelRow, Report};
use crate::lint::{Level, LintId};

/// Bytes for people: `0`, `512 B`, `48 KiB`, `1.5 KiB`.
pub(crate) fn format_bytes(bytes: u64) -> String {
    if bytes == 0 {
        "0".to_string()
    } else if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// Occupancy as a percentage with one decimal: `62.5%`.
pub(crate) fn format_occupancy(occupancy: f64) -> String {
    format!("{:.1}%", occupancy * 100.0)
}

/// `store/load` spill bytes, or `0`.
pub fn format_spills(row: &KernelRow) -> String {
    if row.spill_bytes() == 0 {
        "0".to_string()
    } else {
        format!("{}/{}", row.spill_store_bytes, row.spill_load_bytes)
    }
}

/// Shared memory per block: static, plus dynamic when the launch has some.
pub fn format_smem(row: &KernelRow) -> String {
    if row.dynamic_smem_bytes == 0 {
        format_bytes(row.static_smem_bytes)
    } else {
        format!(
            "{}+{}",
            format_bytes(row.static_smem_bytes),
            format_bytes(row.dynamic_smem_bytes)
        )
    }
}

/// The limiters, joined by `+`; `-` for device functions.
pub fn format_limiters(row: &KernelRow) -> String {
    if !row.entry {
        return "-".to_string();
    }
    if row.limiters.is_empty() {
        "-".to_string()
    } else {
        row.limiters.join("+")
    }
}

/// Headroom to the next cliff: spare registers per thread and spare shared memory per block
/// before a resident block is lost (`∞` when that resource never binds up to the arch limit).
pub fn format_headroom(row: &KernelRow) -> String {
    if !row.entry || row.blocks_per_sm == 0 {
        return "-".to_string();
    }
    let registers = match row.headroom.spare_registers_per_thread {
        Some(spare) => format!("+{spare} reg"),
        None => "reg ∞".to_string(),
    };
    let smem = match row.headroom.spare_smem_bytes {
        Some(spare) => format!("+{} smem", format_bytes(spare)),
        None => "smem ∞".to_string(),
    };
    format!("{registers}, {smem}")
}

/// The findings of a row as `deny: spills, warn: occupancy_cliff`, allow-level ones left out.
pub fn format_findings(lints: &[(Level, LintId)]) -> String {
    let mut parts: Vec<String> = lints
        .iter()
        .filter(|(level, _)| *level != Level::Allow)
        .map(|(level, lint)| format!("{level}: {lint}"))
        .collect();
    parts.sort();
    parts.dedup();
    parts.join(", ")
}

/// The kernel name shortened for a table cell (templates make names long).
pub fn short_name(name: &str, max_chars: usize) -> String {
    if name.chars().count() <= max_chars {
        name.to_string()
    } else {
        let kept: String = name.chars().take(max_chars.saturating_sub(1)).collect();
        format!("{kept}…")
    }
}

/// The text table's lines: columns padded to their widest cell, numbers right-aligned, each
/// line without trailing blanks. The full table and the digest's worst rows share it.
pub(super) fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(index, title)| {
            rows.iter()
                .map(|cells| cells[index].chars().count())
                .chain([title.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let mut text = String::new();
        for (index, cell) in cells.iter().enumerate() {
            let pad = " ".repeat(widths[index] - cell.chars().count());
            if index > 0 {
                text.push_str("  ");
            }
            if numeric(header[index]) {
                text.push_str(&pad);
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&pad);
            }
        }
        format!("{}\n", text.trim_end())
    };
    let titles: Vec<String> = header.iter().map(|title| title.to_string()).collect();
    let mut out = line(&titles);
    for cells in rows {
        out.push_str(&line(cells));
    }
    out
}

/// The header and cells of the kernel table, shared by the text and Markdown renderers.
/// The crate column is present only when some row has a crate.
pub fn table_cells(
    report: &Report,
    max_name_chars: usize,
) -> (Vec<&'static str>, Vec<Vec<String>>) {
    let with_crate = report.kernels.iter().any(|row| row.crate_name.is_some());
    let mut header = Vec::new();
    if with_crate {
        header.push("crate");
    }
    header.extend([
        "kernel",
        "arch",
        "block",
        "regs",
        "spills st/ld",
        "stack",
        "smem",
        "bar",
        "blocks/SM",
        "occupancy",
        "limiter",
        "headroom",
        "findings",
    ]);
    let index = FindingIndex::new(report);
    let rows = report
        .kernels
        .iter()
        .map(|row| {
            let mut cells = Vec::new();
            if with_crate {
                cells.push(row.crate_name.clone().unwrap_or_default());
            }
            cells.push(short_name(row.display_name(), max_name_chars));
            cells.push(row.arch.clone());
            cells.push(if row.entry {
                row.block.to_string()
            } else {
                "-".to_string()
            });
            // ptxas prints no register line for device functions.
            cells.push(if row.entry || row.registers > 0 {
                row.registers.to_string()
            } else {
                "-".to_string()
            });
            cells.push(format_spills(row));
            cells.push(format_bytes(row.stack_frame_bytes));
            cells.push(format_smem(row));
            cells.push(row.barriers.to_string());
            cells.push(if row.entry {
                row.blocks_per_sm.to_string()
            } else {
                "-".to_string()
            });
            cells.push(if row.entry {
                format_occupancy(row.occupancy)
            } else {
                "-".to_string()
            });
            cells.push(format_limiters(row));
            cells.push(format_headroom(row));
            cells.push(format_findings(index.lints_for(row)));
            cells
        })
        .collect();
    (header, rows)
}

/// Whether a column holds numbers (right-aligned).
pub(super) fn numeric(header: &str) -> bool {
    matches!(
        header,
        "block" | "regs" | "spills st/ld" | "stack" | "smem" | "bar" | "blocks/SM" | "occupancy"
    )
}

/// Renders the report for a terminal: the kernel table, then every warn and deny finding in
/// rustc's shape (`deny[spills]: message` / `  --> path:line:col` / notes / help), then a summary.
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    if report.kernels.is_empty() {
        out.push_str("no kernels\n");
    } else {
        let (header, rows) = table_cells(report, 48);
        out.push_str(&aligned(&header, &rows));
    }
    out.push_str(&super::sass::render_sass_text(&report.kernels));
    out.push_str(&super::tuning::render_tuning_text(&report.kernels));
    out.push_str(&render_findings_text(
        &report.shown_findings().collect::<Vec<_>>(),
    ));
    out.push('\n');
    if let Some(line) = programs_line(report) {
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&summary_line(report));
    out.push('\n');
    out
}

/// Findings of one lint at one level shown in full; past this, the first is shown and the rest
/// summarized in one line (a crate with hundreds of kernels gets a few lines per lint).
pub const FINDINGS_SHOWN_PER_LINT: usize = 5;

/// Every finding in rustc's shape, in order; a lint with more than [`FINDINGS_SHOWN_PER_LINT`]
/// findings at one level shows its first, then one summary line naming a few of its kernels.
/// Linear in the findings: each finds its group with one hash lookup.
fn render_findings_text(findings: &[&Finding]) -> String {
    let group_of = |finding: &Finding| (finding.level, finding.lint);
    let mut group_index: HashMap<(Level, LintId), usize> = HashMap::new();
    let mut groups: Vec<Vec<&Finding>> = Vec::new();
    let mut member_of = Vec::with_capacity(findings.len());
    for finding in findings {
        let index = *group_index.entry(group_of(finding)).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[index].push(finding);
        member_of.push(index);
    }
    let mut out = String::new();
    for (finding, index) in findings.iter().zip(member_of) {
        let members = &groups[index];
        let first = std::ptr::eq(members[0], *finding);
        if members.len() <= FINDINGS_SHOWN_PER_LINT || first {
            out.push('\n');
            out.push_str(&render_finding_text(finding));
        }
        if members.len() > FINDINGS_SHOWN_PER_LINT && first {
            out.push_str(&group_summary_line(members));
        }
    }
    out
}

/// `warn[occupancy_cliff]: 211 more like this, 118 kernels in all on sm_80, sm_90: a, b, c, d, e (+113 more; --json lists every finding)`.
/// Kernels and archs are each counted once through a hash set (a `Vec::contains` per finding
/// made 200,000 findings of distinct kernels take a minute).
fn group_summary_line(members: &[&Finding]) -> String {
    let mut kernels: Vec<&str> = Vec::new();
    let mut archs: Vec<&str> = Vec::new();
    let mut seen_kernels: HashSet<&str> = HashSet::new();
    let mut seen_archs: HashSet<&str> = HashSet::new();
    for finding in members {
        if let Some(kernel) = finding.kernel.as_deref() {
            if seen_kernels.insert(kernel) {
                kernels.push(kernel);
            }
        }
        if let Some(arch) = finding.arch.as_deref() {
            if seen_archs.insert(arch) {
                archs.push(arch);
            }
        }
    }
    let shown = kernels.len().min(FINDINGS_SHOWN_PER_LINT);
    let more = if kernels.len() > shown {
        format!(" (+{} more)", kernels.len() - shown)
    } else {
        String::new()
    };
    let on = if archs.is_empty() {
        String::new()
    } else {
        format!(" on {}", archs.join(", "))
    };
    format!(
        "{}[{}]: {} more like this; {} kernel{} in all{on}: {}{more} (`--json` or `--sarif` lists every finding)\n",
        members[0].level,
        members[0].lint,
        members.len() - 1,
        kernels.len(),
        if kernels.len() == 1 { "" } else { "s" },
        kernels[..shown].join(", ")
    )
}

/// Which program a row describes, for a note: `sm_90 SASS from compute_80 PTX, as the driver
/// JIT-compiles the shipped PTX on sm_90` (or `... PTX, compiled natively`).
pub fn program_note(arch: &str, ptx_target: &str) -> String {
    let number = |name: &str| {
        name.trim_start_matches(|c: char| !c.is_ascii_digit())
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .parse::<u32>()
            .ok()
    };
    let how = if number(arch) == number(ptx_target) {
        "compiled natively".to_string()
    } else {
        format!("as the driver JIT-compiles the shipped PTX on {arch}")
    };
    format!("program checked: {arch} SASS from {ptx_target} PTX, {how}")
}

/// `programs: sm_80 from compute_80 PTX, sm_90 from compute_80 PTX (JIT)`: which program each
/// architecture's rows describe, when known.
fn programs_line(report: &Report) -> Option<String> {
    let pairs: Vec<(&str, &str)> = report
        .kernels
        .iter()
        .filter_map(|row| Some((row.arch.as_str(), row.ptx_target.as_deref()?)))
        .collect();
    describe_programs(pairs)
}

/// [`programs_line`] of these (arch, PTX target) pairs.
pub(super) fn describe_programs(mut pairs: Vec<(&str, &str)>) -> Option<String> {
    pairs.sort_by_key(|(arch, ptx)| {
        (
            crate::arch::lookup(arch).map_or(u32::MAX, |facts| facts.major * 10 + facts.minor),
            *ptx,
        )
    });
    pairs.dedup();
    if pairs.is_empty() {
        return None;
    }
    let described: Vec<String> = pairs
        .iter()
        .map(|(arch, ptx)| {
            let jit = !program_note(arch, ptx).ends_with("compiled natively");
            format!("{arch} from {ptx} PTX{}", if jit { " (JIT)" } else { "" })
        })
        .collect();
    Some(format!("programs: {}", described.join(", ")))
}

/// One finding in rustc's shape.
pub(crate) fn render_finding_text(finding: &Finding) -> String {
    let mut out = format!("{}[{}]: {}\n", finding.level, finding.lint, finding.message);
    if let Some(location) = &finding.location {
        out.push_str(&format!("  --> {location}\n"));
    }
    for note in &finding.notes {
        out.push_str(&format!("   = note: {note}\n"));
    }
    if let Some(help) = &finding.help {
        out.push_str(&format!("   = help: {help}\n"));
    }
    out
}

/// `3 kernels × archs, 1 deny, 2 warn` style summary.
pub(crate) fn summary_line(report: &Report) -> String {
    let count_of = |entry: bool| {
        let mut names: Vec<(&Option<String>, &str)> = report
            .kernels
            .iter()
            .filter(|row| row.entry == entry)
            .map(|row| (&row.crate_name, row.name.as_str()))
            .collect();
        names.sort();
        names.dedup();
        names.len()
    };
    let kernel_count = count_of(true);
    let device_function_count = count_of(false);
    let mut archs: Vec<&str> = report.kernels.iter().map(|row| row.arch.as_str()).collect();
    archs.sort();
    archs.dedup();
    let plural = |count: usize, word: &str| {
        if count == 1 {
            format!("{count} {word}")
        } else {
            format!("{count} {word}s")
        }
    };
    let device_functions = match device_function_count {
        0 => String::new(),
        1 => " (+1 device function)".to_string(),
        count => format!(" (+{count} device functions)"),
    };
    format!(
        "{}{device_functions} on {}: {} deny, {} warn",
        plural(kernel_count, "kernel"),
        plural(archs.len(), "arch"),
        report.count(Level::Deny),
        report.count(Level::Warn)
    )
}
