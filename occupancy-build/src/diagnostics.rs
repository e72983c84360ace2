//! Rendering findings as rustc renders errors (annotate-snippets): `error[spills]: ...`,
//! ` --> src/lib.rs:12:1`, the attribute underlined, `= note:` and `= help:` lines.
//!
//! This module formats text only; the engine decides what is printed where.

use annotate_snippets::{Level, Renderer, Snippet};

use occupancy_core::lint::Level as LintLevel;
use occupancy_core::report::Finding;

/// What a diagnostic says: a finding of the report, or a problem found before the lints ran
/// (an attribute that does not parse, id `declaration`).
#[derive(Debug, Clone, Copy)]
pub struct Diagnostic<'a> {
    /// The lint id, or `declaration`.
    pub id: &'a str,
    /// An error (deny) or a warning.
    pub deny: bool,
    pub message: &'a str,
    pub arch: Option<&'a str>,
    pub notes: &'a [String],
    pub help: Option<&'a str>,
}

impl<'a> From<&'a Finding> for Diagnostic<'a> {
    fn from(finding: &'a Finding) -> Self {
        Diagnostic {
            id: finding.lint.as_str(),
            deny: finding.level == LintLevel::Deny,
            message: &finding.message,
            arch: finding.arch.as_deref(),
            notes: &finding.notes,
            help: finding.help.as_deref(),
        }
    }
}

/// A Rust source file a diagnostic points into.
#[derive(Debug, Clone)]
pub struct SourceText {
    /// As shown: relative to the package root (`src/lib.rs`).
    pub display_path: String,
    pub text: String,
}

/// Where a finding is shown: the file, and the start and end (line, column) of the attribute.
pub type Placement<'a> = (&'a SourceText, (usize, usize), (usize, usize));

/// Byte range of `start..end` (1-based line/column, columns in characters, end exclusive).
pub fn byte_range(
    text: &str,
    start: (usize, usize),
    end: (usize, usize),
) -> std::ops::Range<usize> {
    let offset = |(line, column): (usize, usize)| -> usize {
        let mut position = 0;
        for (index, line_text) in text.split_inclusive('\n').enumerate() {
            if index + 1 == line {
                let within: usize = line_text
                    .chars()
                    .take(column.saturating_sub(1))
                    .map(char::len_utf8)
                    .sum();
                return position + within;
            }
            position += line_text.len();
        }
        text.len()
    };
    let start = offset(start);
    let end = offset(end).max(start + 1).min(text.len().max(start + 1));
    start..end.min(text.len()).max(start)
}

/// Renders one finding; `source` and `span` place it at the attribute when it was declared.
pub fn render(finding: &Diagnostic<'_>, source: Option<Placement<'_>>) -> String {
    let level = if finding.deny {
        Level::Error
    } else {
        Level::Warning
    };
    let label = match finding.arch {
        Some(arch) => format!("declared here; checked on {arch}"),
        None => "declared here".to_string(),
    };
    let mut message = level.title(finding.message).id(finding.id);
    if let Some((source, start, end)) = source {
        let range = byte_range(&source.text, start, end);
        message = message.snippet(
            Snippet::source(&source.text)
                .line_start(1)
                .origin(&source.display_path)
                .fold(true)
                .annotation(level.span(range).label(&label)),
        );
    }
    let notes: Vec<_> = finding
        .notes
        .iter()
        .map(|note| Level::Note.title(note))
        .collect();
    message = message.footers(notes);
    if let Some(help) = finding.help {
        message = message.footer(Level::Help.title(help));
    }
    let rendered = Renderer::plain().render(message).to_string();
    rendered
}

/// One line for `cargo:warning=`: `warning[stack_frame]: <message> (src/lib.rs:12:1)`.
pub fn one_line(finding: &Finding) -> String {
    let location = finding
        .location
        .as_ref()
        .map(|location| format!(" ({location})"))
        .unwrap_or_default();
    let level = if finding.level == LintLevel::Deny {
        "error"
    } else {
        "warning"
    };
    format!("{level}[{}]: {}{location}", finding.lint, finding.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ranges_count_characters() {
        let text = "fn a() {}\n#[k(é = 1)]\nfn b();\n";
        let range = byte_range(text, (2, 1), (2, 12));
        assert_eq!(&text[range], "#[k(é = 1)]");
    }

    #[test]
    fn renders_like_rustc() {
        let source = SourceText { display_path: "src/lib.rs".into(), text: "extern \"C\" {\n    #[occupancy::kernel(block = 256, min_blocks_per_sm = 8)]\n    fn hot();\n}\n".into() };
        let finding = Finding {
            lint: occupancy_core::lint::LintId::Spills,
            level: LintLevel::Deny,
            crate_name: None,
            kernel: Some("hot".into()),
            arch: Some("sm_90".into()),
            message: "kernel `hot` spills 80 bytes".into(),
            notes: vec!["ptxas reported 32 registers".into()],
            help: Some("`min_blocks_per_sm = 4` keeps it spill-free".into()),
            location: Some(occupancy_core::report::Location {
                kind: occupancy_core::report::LocationKind::RustAttribute,
                path: "src/lib.rs".into(),
                line: 2,
                column: 5,
            }),
            reason: None,
        };
        let rendered = render(&(&finding).into(), Some((&source, (2, 5), (2, 61))));
        insta::assert_snapshot!(rendered);
        assert_eq!(
            one_line(&finding),
            "error[spills]: kernel `hot` spills 80 bytes (src/lib.rs:2:5)"
        );
    }
}
