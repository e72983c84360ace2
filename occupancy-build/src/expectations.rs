//! `expect(...)` and `reason = "..."` in declarations, on the build side.
//!
//! An expected finding is fulfilled (recorded at level allow with its reason, not reported); an
//! expectation no finding fulfilled is the `unfulfilled_expectation` lint, so the exception is
//! removed once it is no longer needed. Allowing or expecting a lint that denies by default
//! needs a `reason` unless the crate sets `require_reasons = false`.

use std::collections::{BTreeMap, BTreeSet};

use occupancy_core::lint::evaluate::{self, Finding};
use occupancy_core::lint::{Level, LintId};
use occupancy_core::spec::{KernelSpec, SpecKey};

use crate::context::Context;
use crate::declarations::{Declarations, Declared};
use crate::diagnostics::{self, Diagnostic};
use crate::levels::Gathered;
use crate::Error;

/// The attribute's levels as the lints are evaluated: an expected lint, and a lint allowed with
/// a reason, at warn, so that their findings reach [`settle`] (which sets them back to allow).
pub fn evaluated_levels(spec: &KernelSpec) -> BTreeMap<LintId, Level> {
    let mut levels = spec.lint_levels.clone();
    for lint in &spec.expected_lints {
        levels.insert(*lint, Level::Warn);
    }
    for (lint, level) in &mut levels {
        if *level == Level::Allow && spec.lint_reasons.contains_key(lint) {
            *level = Level::Warn;
        }
    }
    levels
}

/// Settles expectations and reasons over one product's findings: an expected finding is
/// fulfilled (kept at allow with its reason), a finding allowed with a reason is kept at allow,
/// every finding gets its declaration's reason. Returns the expectations fulfilled; whether an
/// expectation no finding fulfilled is `unfulfilled_expectation` is for the whole build script
/// to say (`crate_view.rs`): a later product may fulfil it.
pub(crate) fn settle(
    declarations: &Declarations,
    gathered: &mut [Gathered],
) -> BTreeSet<(usize, LintId)> {
    let mut fulfilled: BTreeSet<(usize, LintId)> = BTreeSet::new();
    for found in gathered.iter_mut() {
        let Some(index) = found.declaration else {
            continue;
        };
        let spec = &declarations.kernels[index].kernel.spec;
        let lint = found.finding.lint;
        found.reason = spec.lint_reasons.get(&lint).cloned();
        if spec.expected_lints.contains(&lint) {
            fulfilled.insert((index, lint));
            found.finding.level = Level::Allow;
        } else if spec.lint_levels.get(&lint) == Some(&Level::Allow) {
            found.finding.level = Level::Allow;
        }
    }
    fulfilled
}

/// The `unfulfilled_expectation` finding of `expect(lint)` on `declared`.
pub(crate) fn unfulfilled(declared: &Declared, lint: LintId) -> Finding {
    let spec = &declared.kernel.spec;
    evaluate::unfulfilled_expectation(
        &declared.kernel.kernel_name,
        lint,
        spec.lint_reasons.get(&lint).map(String::as_str),
    )
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

/// `allow`/`expect` of a deny-by-default lint without a `reason` (unless the crate opts out).
pub(crate) fn require_reasons(context: &Context, declarations: &Declarations) -> Result<(), Error> {
    if context.settings.require_reasons == Some(false) {
        return Ok(());
    }
    let missing = crate::expectations::missing_reasons(declarations);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::Denied {
        count: missing.len(),
        rendered: missing.join("\n"),
    })
}
