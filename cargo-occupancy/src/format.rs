//! How a report is printed: the format flags every report command shares (`check`, `report`),
//! the [`ReportFormat`] they select, and the one function that prints a whole report in it. The
//! renderers are `occupancy_core::report`'s; this module only picks one, writes `--html`, and
//! prints. (`check` streams its report instead: `cmd/stream.rs` has a sink per format, and its
//! tests hold each to what [`ReportFormat::render`] writes.)
//!
//! Adding a format: docs/contributing-report-format.md.

use std::path::PathBuf;

use occupancy_core::report::{
    render_html, render_json, render_markdown, render_sarif, render_text, Report,
};

use crate::error::CliError;
use crate::outputs::Output;

/// How a report is printed; shared by `check` and `report`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct OutputArgs {
    /// Print `{"schema_version", "kernels": [...], "findings": [...]}`.
    #[arg(long, conflicts_with_all = ["sarif", "markdown"])]
    pub json: bool,
    /// Print SARIF 2.1.0 (for code scanning).
    #[arg(long, conflicts_with_all = ["json", "markdown"])]
    pub sarif: bool,
    /// Print Markdown (for $GITHUB_STEP_SUMMARY or a pull-request comment).
    #[arg(long, conflicts_with_all = ["json", "sarif"])]
    pub markdown: bool,
    /// Also write a single-file HTML report with the occupancy curves of every kernel.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// The format a report is printed in on standard output: the text table unless a flag of
/// [`OutputArgs`] asks for another. (`--html` writes a file beside any of them.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Json,
    Sarif,
    Markdown,
}

impl ReportFormat {
    /// Every format; the tests check each has its flag, its renderer's snapshot and its entry in
    /// docs/reports.md, and streams as it renders (`cmd/stream.rs`).
    #[cfg(test)]
    pub const ALL: [ReportFormat; 4] = [
        ReportFormat::Text,
        ReportFormat::Json,
        ReportFormat::Sarif,
        ReportFormat::Markdown,
    ];

    /// The flag that asks for it; `None` for the default. (Tests only: clap names the flags.)
    #[cfg(test)]
    pub fn flag(self) -> Option<&'static str> {
        match self {
            ReportFormat::Text => None,
            ReportFormat::Json => Some("--json"),
            ReportFormat::Sarif => Some("--sarif"),
            ReportFormat::Markdown => Some("--markdown"),
        }
    }

    /// The whole report in this format: `occupancy_core::report`'s renderer.
    pub fn render(self, report: &Report) -> String {
        match self {
            ReportFormat::Text => render_text(report),
            ReportFormat::Json => render_json(report),
            ReportFormat::Sarif => render_sarif(report, env!("CARGO_PKG_VERSION")),
            ReportFormat::Markdown => render_markdown(report),
        }
    }
}

impl OutputArgs {
    /// The format the flags ask for (clap lets at most one through).
    pub fn format(&self) -> ReportFormat {
        if self.json {
            ReportFormat::Json
        } else if self.sarif {
            ReportFormat::Sarif
        } else if self.markdown {
            ReportFormat::Markdown
        } else {
            ReportFormat::Text
        }
    }

    /// Whether to say `wrote FILE` on stderr after writing `--html`: only beside the text table,
    /// never beside a machine-read format.
    pub fn says_what_it_wrote(&self) -> bool {
        self.format() == ReportFormat::Text
    }

    /// The files these options write (only `--html`; the formats go to standard output).
    pub fn outputs(&self) -> Vec<Output<'_>> {
        self.html
            .iter()
            .map(|path| Output {
                flag: "--html",
                path,
                is_dir: false,
            })
            .collect()
    }
}

/// Prints the report in the format asked for (text by default) and writes the HTML file.
pub fn emit(report: &Report, output: &OutputArgs, title: &str) -> Result<(), CliError> {
    let text = output.format().render(report);
    if let Some(path) = &output.html {
        let html = render_html(report, title);
        crate::outputs::write_atomically("--html", path, html.as_bytes())?;
        if output.says_what_it_wrote() {
            eprintln!("wrote {}", occupancy_build::cli::shown_path(path));
        }
    }
    crate::stdout::print("cannot write the report to standard output", &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(Parser, Debug)]
    struct Flags {
        #[command(flatten)]
        output: OutputArgs,
    }

    fn format_of(args: &[&str]) -> ReportFormat {
        let mut line = vec!["cargo-occupancy"];
        line.extend_from_slice(args);
        Flags::try_parse_from(line).unwrap().output.format()
    }

    /// Each format's flag selects it; no flag is the text table; two formats are refused.
    #[test]
    fn every_format_has_its_flag() {
        assert_eq!(format_of(&[]), ReportFormat::Text);
        for format in ReportFormat::ALL {
            if let Some(flag) = format.flag() {
                assert_eq!(format_of(&[flag]), format, "{flag}");
                for other in ReportFormat::ALL.iter().filter_map(|other| other.flag()) {
                    if other != flag {
                        let both = Flags::try_parse_from(["cargo-occupancy", flag, other]);
                        assert!(both.is_err(), "{flag} {other} is accepted");
                    }
                }
            }
        }
    }

    fn repository_file(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
    }

    /// What docs/contributing-report-format.md says a format needs: a snapshot of its renderer
    /// in occupancy-core's report tests, and its entry in docs/reports.md's "Output formats".
    #[test]
    fn every_format_has_a_renderer_snapshot_and_its_place_in_the_docs() {
        let docs = std::fs::read_to_string(repository_file("docs/reports.md")).unwrap();
        let section = docs
            .split("\n## Output formats\n")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/reports.md has an `## Output formats` section");
        for format in ReportFormat::ALL {
            let name = format!("{format:?}").to_lowercase();
            let snapshot = repository_file(&format!(
                "occupancy-core/src/report/snapshots/occupancy_core__report__tests__{name}_snapshot.snap"
            ));
            assert!(
                snapshot.is_file(),
                "{format:?}: no {}; add `fn {name}_snapshot()` to occupancy-core/src/report/tests.rs",
                snapshot.display()
            );
            let entry = match format.flag() {
                Some(flag) => format!("\n- `{flag}`"),
                None => "\n- (default)".to_string(),
            };
            assert!(
                section.contains(&entry),
                "{format:?}: docs/reports.md's `## Output formats` has no entry starting `{}`",
                entry.trim_start()
            );
        }
    }
}
