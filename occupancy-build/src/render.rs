//! Rendering a build's findings: each into the report (at its declaration, else the kernel's
//! definition), deny findings as rustc-style errors at the attribute, warnings as `cargo:warning`
//! lines, and one summary per lint for undeclared kernels.

use std::collections::BTreeMap;

use occupancy_core::lint::evaluate::{self, LeveledFinding};
use occupancy_core::lint::Level;

use crate::cargo_lines::CargoLines;
use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::diagnostics;
use crate::levels::Gathered;
use occupancy_core::report::{Finding, Location, Report};

/// Puts every finding in the report; prints warnings as `cargo:warning` lines and returns the
/// rendered errors. Findings about undeclared kernels are summarized: one line per lint and
/// level, the full list in the report.
pub(crate) fn render_findings(
    gathered: Vec<Gathered>,
    context: &Context,
    declarations: &Declarations,
    report: &mut Report,
    cargo: &mut CargoLines,
) -> Vec<String> {
    let mut rendered_denials = Vec::new();
    let summaries = evaluate::summarize(
        gathered
            .iter()
            .filter(|gathered| gathered.undeclared)
            .map(|gathered| (&gathered.leveled, gathered.kernel.as_str())),
    );
    let sources: BTreeMap<&str, Location> = report
        .kernels
        .iter()
        .filter_map(|row| Some((row.name.as_str(), row.source.clone()?)))
        .collect();
    let ptx_targets: BTreeMap<(&str, &str), &str> = report
        .kernels
        .iter()
        .filter_map(|row| {
            Some((
                (row.name.as_str(), row.arch.as_str()),
                row.ptx_target.as_deref()?,
            ))
        })
        .collect();
    let mut findings = Vec::new();
    for gathered in &gathered {
        let declared = gathered
            .declaration
            .map(|index| &declarations.kernels[index]);
        let mut finding = report_finding(gathered, declared, context, declarations, &sources);
        if let Some(arch) = &finding.arch {
            if let Some(ptx_target) = ptx_targets.get(&(gathered.kernel.as_str(), arch.as_str())) {
                let note = occupancy_core::report::program_note(arch, ptx_target);
                finding.notes.push(note);
            }
        }
        if !gathered.undeclared {
            match finding.level {
                Level::Deny => {
                    rendered_denials.push(render_denial(&finding, declared, declarations))
                }
                Level::Warn => {
                    cargo.warning(&format!("occupancy: {}", diagnostics::one_line(&finding)))
                }
                Level::Allow => {}
            }
        }
        findings.push(finding);
    }
    let report_path = report_display_path(context);
    for summary in &summaries {
        if let Some(denial) = render_summary(summary, &report_path, &sources, cargo) {
            rendered_denials.push(denial);
        }
    }
    report.findings.extend(findings);
    rendered_denials
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
    let LeveledFinding { finding, level } = &gathered.leveled;
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
        lint: finding.lint,
        level: *level,
        crate_name: Some(context.crate_name.clone()),
        kernel: (!gathered.kernel.is_empty()).then(|| gathered.kernel.clone()),
        arch: finding.arch.clone(),
        message: finding.message.clone(),
        notes,
        help: finding.help.clone(),
        location: match declared {
            Some(declared) => Some(declarations.location(declared)),
            None => sources.get(gathered.kernel.as_str()).cloned(),
        },
        reason: gathered.reason.clone(),
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

/// One lint's summary over undeclared kernels: a rendered error when it denies, else a warning.
pub(crate) fn render_summary(
    summary: &evaluate::FindingSummary,
    report_path: &str,
    sources: &BTreeMap<&str, Location>,
    cargo: &mut CargoLines,
) -> Option<String> {
    let message = summary.message(report_path);
    let notes: Vec<String> = summary
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
    let help = format!(
        "declare each kernel next to its Rust stub with `#[occupancy::kernel(block = ...)]` (one `family = \"prefix_*\"` declaration covers a family), set the launch undeclared kernels are checked at with `block = N` under `[package.metadata.occupancy]`, or set `{}` under `[package.metadata.occupancy.lints]`",
        summary.lint.config_line(Level::Warn)
    );
    let diagnostic = diagnostics::Diagnostic {
        id: summary.lint.as_str(),
        deny: summary.level == Level::Deny,
        message: &message,
        arch: None,
        notes: &notes,
        help: Some(&help),
    };
    if summary.level == Level::Deny {
        return Some(diagnostics::render(&diagnostic, None));
    }
    cargo.warning(&format!("occupancy: warning[{}]: {message}", summary.lint));
    None
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
