//! Rendering a build's findings: each into the report (at its declaration, else the kernel's
//! definition), deny findings as rustc-style errors at the attribute, warnings as `cargo:warning`
//! lines, and one summary per lint for undeclared kernels.

use std::collections::{BTreeMap, HashMap};

use occupancy_core::lint::evaluate;
use occupancy_core::lint::{Level, LintId};

use crate::cargo_lines::CargoLines;
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::diagnostics;
use crate::levels::Gathered;
use occupancy_core::report::{Finding, KernelRow, Location, Report};

/// Puts every finding in the report; prints warnings as `cargo:warning` lines and returns the
/// rendered errors. What a person reads stays short however many kernels there are: one line
/// per lint for its warnings (the finding itself when it is the only one, else the count, the
/// architectures and the worst few kernels); one error per declaration and lint (the worst
/// finding in full, the others as a note); one summary per lint for undeclared kernels' errors.
/// The full list is in the report.
pub(crate) fn render_findings(
    gathered: Vec<Gathered>,
    context: &Context,
    declarations: &Declarations,
    report: &mut Report,
    cargo: &mut CargoLines,
) -> Vec<String> {
    let rows = RowLookup::new(report, gathered.iter().map(|found| found.kernel.as_str()));
    let findings: Vec<Finding> = gathered
        .iter()
        .map(|gathered| {
            let declared = gathered
                .declaration
                .map(|index| &declarations.kernels[index]);
            let mut finding =
                report_finding(gathered, declared, context, declarations, &rows.sources);
            rows.annotate(&mut finding);
            finding
        })
        .collect();
    let report_path = report_display_path(context);
    let mut rendered_denials = render_declared_denials(&gathered, &findings, &rows, declarations);
    let undeclared_denials = summary_items(&gathered, &findings, &rows, |gathered, finding| {
        gathered.undeclared && finding.level == Level::Deny
    });
    for summary in evaluate::summarize(undeclared_denials) {
        let launches = launches_of(&gathered, &findings, &summary);
        rendered_denials.push(render_summary(
            &summary,
            &report_path,
            &rows.readable_sources,
            launches,
        ));
    }
    render_warnings(&gathered, &findings, &rows, &report_path, cargo);
    drop(rows);
    report.findings.extend(findings);
    rendered_denials
}

/// What rendering needs of the report's rows: each kernel's readable name, where it is
/// defined, the PTX each arch's SASS came from, and how bad a finding about it is.
struct RowLookup<'r> {
    rows: HashMap<(&'r str, &'r str), &'r KernelRow>,
    /// By symbol; a kernel without a row (a baseline entry no longer compiled) demangled.
    readable: HashMap<String, String>,
    /// Where each kernel is defined, by symbol.
    sources: BTreeMap<&'r str, Location>,
    /// The same, by readable name (what summaries list).
    readable_sources: BTreeMap<&'r str, Location>,
}

impl<'r> RowLookup<'r> {
    fn new<'k>(report: &'r Report, kernels: impl Iterator<Item = &'k str>) -> RowLookup<'r> {
        let mut lookup = RowLookup {
            rows: HashMap::new(),
            readable: HashMap::new(),
            sources: BTreeMap::new(),
            readable_sources: BTreeMap::new(),
        };
        for row in &report.kernels {
            lookup
                .rows
                .insert((row.name.as_str(), row.arch.as_str()), row);
            lookup
                .readable
                .insert(row.name.clone(), row.readable_name().to_string());
            if let Some(source) = &row.source {
                lookup.sources.insert(row.name.as_str(), source.clone());
                lookup
                    .readable_sources
                    .insert(row.readable_name(), source.clone());
            }
        }
        for kernel in kernels {
            if !lookup.readable.contains_key(kernel) {
                if let Some(demangled) = occupancy_core::ptxas::demangle(kernel) {
                    let readable = occupancy_core::report::readable_kernel_name(&demangled);
                    lookup
                        .readable
                        .insert(kernel.to_string(), readable.to_string());
                }
            }
        }
        lookup
    }

    /// The name people read for a kernel symbol.
    fn readable<'a>(&'a self, kernel: &'a str) -> &'a str {
        self.readable.get(kernel).map_or(kernel, String::as_str)
    }

    /// The finding's text with the kernel's readable name (the symbol stays in `kernel`), and
    /// the note saying which PTX its arch's SASS came from.
    fn annotate(&self, finding: &mut Finding) {
        let Some(kernel) = finding.kernel.as_deref() else {
            return;
        };
        let readable = self.readable(kernel);
        if readable != kernel {
            let (symbol, name) = (format!("`{kernel}`"), format!("`{readable}`"));
            finding.message = finding.message.replace(&symbol, &name);
            for note in &mut finding.notes {
                *note = note.replace(&symbol, &name);
            }
            finding.help = finding
                .help
                .as_ref()
                .map(|help| help.replace(&symbol, &name));
        }
        let row = finding
            .arch
            .as_deref()
            .and_then(|arch| self.rows.get(&(kernel, arch)));
        if let (Some(row), Some(arch)) = (row, &finding.arch) {
            if let Some(ptx_target) = &row.ptx_target {
                let note = occupancy_core::report::program_note(arch, ptx_target);
                finding.notes.push(note);
            }
        }
    }

    /// How bad a finding is, to name the worst kernels first: the bytes spilled or on the
    /// stack, the registers, or the occupancy missing.
    fn weight(&self, finding: &Finding) -> u64 {
        let Some(row) = finding
            .kernel
            .as_deref()
            .zip(finding.arch.as_deref())
            .and_then(|key| self.rows.get(&key))
        else {
            return 0;
        };
        match finding.lint {
            LintId::Spills | LintId::SpillInLoop => row.spill_bytes(),
            LintId::StackFrame | LintId::LocalMemory | LintId::LocalArray => row.stack_frame_bytes,
            LintId::TooManyRegisters => u64::from(row.registers),
            LintId::LowOccupancy | LintId::Unlaunchable | LintId::OccupancyCliff => {
                ((1.0 - row.occupancy.clamp(0.0, 1.0)) * 1e6) as u64
            }
            _ => 0,
        }
    }
}

/// The findings `keep` selects, as a summary counts them.
fn summary_items<'a>(
    gathered: &'a [Gathered],
    findings: &'a [Finding],
    rows: &'a RowLookup<'_>,
    keep: impl Fn(&Gathered, &Finding) -> bool,
) -> Vec<evaluate::Summarized<'a>> {
    gathered
        .iter()
        .zip(findings)
        .filter(|(gathered, finding)| keep(gathered, finding))
        .map(|(gathered, finding)| evaluate::Summarized {
            lint: finding.lint,
            level: finding.level,
            arch: finding.arch.as_deref(),
            kernel: rows.readable(&gathered.kernel),
            weight: rows.weight(finding),
            declared: !gathered.undeclared,
        })
        .collect()
}

/// One rustc-style error per declaration and lint: its worst finding in full, the others of
/// the same declaration and lint in a note (a family's members, the other archs).
fn render_declared_denials(
    gathered: &[Gathered],
    findings: &[Finding],
    rows: &RowLookup<'_>,
    declarations: &Declarations,
) -> Vec<String> {
    /// A declaration (none for a crate-wide finding) and a lint.
    type GroupKey = (Option<usize>, LintId);
    let mut groups: Vec<(GroupKey, Vec<&Finding>)> = Vec::new();
    let mut index: HashMap<GroupKey, usize> = HashMap::new();
    for (gathered, finding) in gathered.iter().zip(findings) {
        if gathered.undeclared || finding.level != Level::Deny {
            continue;
        }
        let key = (gathered.declaration, finding.lint);
        let at = *index.entry(key).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[at].1.push(finding);
    }
    groups
        .into_iter()
        .map(|((declaration, _), mut group)| {
            group.sort_by_key(|finding| std::cmp::Reverse(rows.weight(finding)));
            let mut worst = group[0].clone();
            if let Some(note) = others_note(&group[1..], rows) {
                worst.notes.push(note);
            }
            let declared = declaration.map(|index| &declarations.kernels[index]);
            render_denial(&worst, declared, declarations)
        })
        .collect()
}

/// The launches the undeclared kernels of a summary were checked at, each once (the first
/// three, and how many more), with where each comes from: how to change them.
fn launches_of(
    gathered: &[Gathered],
    findings: &[Finding],
    summary: &evaluate::FindingSummary,
) -> Option<String> {
    let mut launches: Vec<&str> = Vec::new();
    for (gathered, finding) in gathered.iter().zip(findings) {
        if finding.lint != summary.lint || finding.level != summary.level {
            continue;
        }
        if let Some(launch) = gathered.launch.as_deref() {
            if !launches.contains(&launch) {
                launches.push(launch);
            }
        }
    }
    match launches.len() {
        0 => None,
        1..=3 => Some(launches.join("; ")),
        more => Some(format!(
            "{} (and {} more launches)",
            launches[..3].join("; "),
            more - 3
        )),
    }
}

/// The warning of a lint that concerns one kernel: its worst finding in one line, and the
/// other archs it occurs on.
fn one_kernel_line(
    summary: &evaluate::FindingSummary,
    findings: &[Finding],
    rows: &RowLookup<'_>,
) -> String {
    let mut of_lint: Vec<&Finding> = findings
        .iter()
        .filter(|finding| finding.level == Level::Warn && finding.lint == summary.lint)
        .collect();
    of_lint.sort_by_key(|finding| std::cmp::Reverse(rows.weight(finding)));
    let mut line = diagnostics::one_line(of_lint[0]);
    let other_archs: Vec<&str> = of_lint[1..]
        .iter()
        .filter_map(|finding| finding.arch.as_deref())
        .filter(|arch| Some(*arch) != of_lint[0].arch.as_deref())
        .collect();
    if !other_archs.is_empty() {
        line.push_str(&format!("; also on {}", other_archs.join(", ")));
    }
    line
}

/// `also on sm_80; and 11 more kernels: a (sm_90), b (sm_80, sm_90), ...`: the rest of a
/// group of findings, in one note.
fn others_note(others: &[&Finding], rows: &RowLookup<'_>) -> Option<String> {
    if others.is_empty() {
        return None;
    }
    if others.len() <= 2 {
        let messages: Vec<&str> = others
            .iter()
            .map(|finding| finding.message.as_str())
            .collect();
        return Some(format!("also: {}", messages.join("; ")));
    }
    let mut kernels: Vec<(&str, Vec<&str>)> = Vec::new();
    for finding in others {
        let kernel = rows.readable(finding.kernel.as_deref().unwrap_or_default());
        let arch = finding.arch.as_deref().unwrap_or("every arch");
        match kernels.iter_mut().find(|(name, _)| *name == kernel) {
            Some((_, archs)) => archs.push(arch),
            None => kernels.push((kernel, vec![arch])),
        }
        if kernels.len() > evaluate::NAMES_SHOWN {
            break;
        }
    }
    let listed: Vec<String> = kernels
        .iter()
        .take(evaluate::NAMES_SHOWN)
        .map(|(kernel, archs)| format!("`{kernel}` ({})", archs.join(", ")))
        .collect();
    let total_kernels: std::collections::HashSet<&str> = others
        .iter()
        .filter_map(|finding| finding.kernel.as_deref())
        .collect();
    let more = total_kernels.len().saturating_sub(listed.len());
    Some(format!(
        "the same finding {} more time{}: {}{}",
        others.len(),
        if others.len() == 1 { "" } else { "s" },
        listed.join(", "),
        if more > 0 {
            format!(" and {more} more kernels (see the report)")
        } else {
            String::new()
        }
    ))
}

/// One `cargo:warning` line per lint: the finding itself when it is the lint's only warning,
/// else how many kernels, on which archs, and the worst few.
fn render_warnings(
    gathered: &[Gathered],
    findings: &[Finding],
    rows: &RowLookup<'_>,
    report_path: &str,
    cargo: &mut CargoLines,
) {
    let items = summary_items(gathered, findings, rows, |_, finding| {
        finding.level == Level::Warn
    });
    for summary in evaluate::summarize(items) {
        let mut line = match summary.kernels.as_slice() {
            [_] => one_kernel_line(&summary, findings, rows),
            _ => format!(
                "warning[{}]: {}",
                summary.lint,
                summary.message(report_path)
            ),
        };
        if let Some(launches) = launches_of(gathered, findings, &summary) {
            line.push_str(&format!("; undeclared kernels checked at {launches}"));
        }
        cargo.warning(&format!("occupancy: {line}"));
    }
}

/// One gathered finding as the report has it: located at its declaration (else at the
/// kernel's definition), its reason said in a note.
pub(crate) fn report_finding(
    gathered: &Gathered,
    declared: Option<&Declared>,
    context: &Context,
    declarations: &Declarations,
    sources: &BTreeMap<&str, Location>,
) -> Finding {
    let finding = &gathered.finding;
    let level = finding.level;
    let mut notes = finding.notes.clone();
    if let Some(reason) = &gathered.reason {
        let expected = declared
            .is_some_and(|declared| declared.kernel.spec.expected_lints.contains(&finding.lint));
        let word = if expected { "expect" } else { level.as_str() };
        notes.push(format!(
            "`{word}({})` in the declaration: {reason}",
            finding.lint
        ));
    }
    Finding {
        crate_name: Some(context.crate_name.clone()),
        kernel: (!gathered.kernel.is_empty()).then(|| gathered.kernel.clone()),
        notes,
        location: match declared {
            Some(declared) => Some(declarations.location(declared)),
            None => sources.get(gathered.kernel.as_str()).cloned(),
        },
        reason: gathered.reason.clone(),
        ..finding.clone()
    }
}

/// A deny finding as rustc renders an error, with the declaration's attribute underlined.
pub(crate) fn render_denial(
    finding: &Finding,
    declared: Option<&Declared>,
    declarations: &Declarations,
) -> String {
    let source = declared.map(|declared| {
        let span = declared.kernel.attribute;
        (
            &declarations.sources[declared.source_index],
            (span.start.line, span.start.column),
            (span.end.line, span.end.column),
        )
    });
    diagnostics::render(&finding.into(), source)
}

/// One lint's summary over undeclared kernels' errors, rendered as an error.
pub(crate) fn render_summary(
    summary: &evaluate::FindingSummary,
    report_path: &str,
    sources: &BTreeMap<&str, Location>,
    launches: Option<String>,
) -> String {
    let message = summary.message(report_path);
    let mut notes: Vec<String> = summary
        .kernels
        .iter()
        .take(evaluate::NAMES_SHOWN)
        .filter_map(|kernel| {
            Some(format!(
                "`{kernel}` is defined at {}",
                sources.get(kernel.as_str())?
            ))
        })
        .collect();
    notes.extend(launches.map(|launches| format!("checked at {launches}")));
    let help = format!(
        "declare each kernel next to its Rust stub with `#[occupancy::kernel(block = ...)]` (one `family = \"prefix_*\"` declaration covers a family), set the launch undeclared kernels are checked at with `block = N` under `[package.metadata.occupancy]` (per kernel or pattern under `[package.metadata.occupancy.kernels.\"name_*\"]`), or set `{}` under `[package.metadata.occupancy.lints]`",
        summary.lint.config_line(Level::Warn)
    );
    let diagnostic = diagnostics::Diagnostic {
        id: summary.lint.as_str(),
        deny: true,
        message: &message,
        arch: None,
        notes: &notes,
        help: Some(&help),
    };
    diagnostics::render(&diagnostic, None)
}

/// `target/occupancy/<crate>.json` as a user finds it: relative to the directory holding
/// `target/` when that is the package's or one of its ancestors (the workspace root).
pub(crate) fn report_display_path(context: &Context) -> String {
    let Some(target) = crate::report::target_dir(&context.out_dir) else {
        return context.out_dir.join("occupancy.json").display().to_string();
    };
    let path = target
        .join("occupancy")
        .join(format!("{}.json", context.crate_name));
    match target.parent() {
        Some(root) if context.manifest_dir.starts_with(root) => path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string(),
        _ => path.display().to_string(),
    }
}
