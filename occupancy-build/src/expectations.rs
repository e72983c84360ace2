//! `expect(...)` and `reason = "..."` in declarations, on the build side.
//!
//! An expected finding is fulfilled (recorded at level allow with its reason, not reported); an
//! expectation no finding fulfilled is the `unfulfilled_expectation` lint, so the exception is
//! removed once it is no longer needed. Allowing or expecting a lint that denies by default
//! needs a `reason` unless the crate sets `require_reasons = false`.

use std::collections::BTreeSet;

use occupancy_core::lint::evaluate::Finding;
use occupancy_core::lint::{Level, LintId};
use occupancy_core::spec::SpecKey;

use crate::check::Declarations;
use crate::diagnostics::{self, Diagnostic};

/// `(declaration index, lint)` of every expectation some finding fulfils.
pub fn fulfilled(
    declarations: &Declarations,
    findings: &[(Finding, Option<usize>, String)],
) -> BTreeSet<(usize, LintId)> {
    findings
        .iter()
        .filter_map(|(finding, index, _)| Some((index.as_ref().copied()?, finding.lint)))
        .filter(|(index, lint)| {
            declarations.kernels[*index]
                .kernel
                .spec
                .expected_lints
                .contains(lint)
        })
        .collect()
}

/// One `unfulfilled_expectation` finding per expectation no finding fulfilled.
pub fn unfulfilled(
    declarations: &Declarations,
    fulfilled: &BTreeSet<(usize, LintId)>,
) -> Vec<(Finding, Option<usize>, String)> {
    let mut findings = Vec::new();
    for (index, declared) in declarations.kernels.iter().enumerate() {
        let spec = &declared.kernel.spec;
        for lint in &spec.expected_lints {
            if fulfilled.contains(&(index, *lint)) {
                continue;
            }
            let reason = spec
                .lint_reasons
                .get(lint)
                .map(|reason| format!(" (reason: {reason})"))
                .unwrap_or_default();
            let finding = Finding {
                lint: LintId::UnfulfilledExpectation,
                arch: None,
                message: format!(
                    "kernel `{}` expects `{lint}`{reason}, but no `{lint}` finding occurred on any target arch",
                    declared.kernel.kernel_name
                ),
                notes: vec![format!("`expect({lint})` is checked like Rust's `#[expect]`: the exception must go once it is no longer needed")],
                help: Some(format!("remove `expect({lint}...)` from the declaration")),
            };
            findings.push((finding, Some(index), declared.kernel.kernel_name.clone()));
        }
    }
    findings
}

/// Rendered errors for every `allow(...)`/`expect(...)` of a deny-by-default lint without a
/// `reason`, pointing at the lint in the attribute.
pub fn missing_reasons(declarations: &Declarations) -> Vec<String> {
    let mut rendered = Vec::new();
    for declared in &declarations.kernels {
        let spec = &declared.kernel.spec;
        let allowed = spec
            .lint_levels
            .iter()
            .filter(|(_, level)| **level == Level::Allow)
            .map(|(lint, _)| (*lint, "allow"));
        let expected = spec.expected_lints.iter().map(|lint| (*lint, "expect"));
        for (lint, word) in allowed.chain(expected) {
            if lint.default_level() != Level::Deny || spec.lint_reasons.contains_key(&lint) {
                continue;
            }
            let message = format!(
                "`{word}({lint})` on kernel `{}` needs a reason: `{lint}` fails the build by default, so say why it may not here",
                declared.kernel.kernel_name
            );
            let notes = [format!(
                "the reason is shown in every report beside the {word}ed finding"
            )];
            let diagnostic = Diagnostic {
                id: "missing_reason",
                deny: true,
                message: &message,
                arch: None,
                notes: &notes,
                help: Some("write `reason = \"...\"` in the list, e.g. `allow(spills, reason = \"tracked in #12\")`, or set `require_reasons = false` under [package.metadata.occupancy]"),
            };
            let span = declared
                .kernel
                .keys
                .iter()
                .find(|key| key.key == SpecKey::Lint(lint))
                .map_or(declared.kernel.attribute, |key| key.span);
            rendered.push(diagnostics::render(
                &diagnostic,
                Some((
                    &declarations.sources[declared.source_index],
                    (span.start.line, span.start.column),
                    (span.end.line, span.end.column),
                )),
            ));
        }
    }
    rendered
}
