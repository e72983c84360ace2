//! `unfulfilled_expectation`: an `expect(lint)` in a declaration that no finding fulfilled. The
//! build settles expectations over every finding; this function makes the finding.

use super::finding::Finding;
use super::id::LintId;

/// The `unfulfilled_expectation` finding of `expect(lint)` (with its `reason`, if any) on
/// kernel `kernel_name`.
pub fn unfulfilled_expectation(kernel_name: &str, lint: LintId, reason: Option<&str>) -> Finding {
    let reason = reason
        .map(|reason| format!(" (reason: {reason})"))
        .unwrap_or_default();
    Finding {
        arch: None,
        message: format!(
            "kernel `{kernel_name}` expects `{lint}`{reason}, but no `{lint}` finding occurred on any target arch"
        ),
        notes: vec![format!("`expect({lint})` is checked like Rust's `#[expect]`: the exception must go once it is no longer needed")],
        help: Some(format!("remove `expect({lint}...)` from the declaration")),
        ..Finding::new(LintId::UnfulfilledExpectation)
    }
}
