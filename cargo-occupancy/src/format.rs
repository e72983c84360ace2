//! How a report is printed: the format flags every report command shares (`check`, `report`),
//! and the one function that prints a whole report in the format asked for. The renderers are
//! `occupancy_core::report`'s; this module only picks one, writes `--html`, and prints.

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

impl OutputArgs {
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
    let text = if output.json {
        render_json(report)
    } else if output.sarif {
        render_sarif(report, env!("CARGO_PKG_VERSION"))
    } else if output.markdown {
        render_markdown(report)
    } else {
        render_text(report)
    };
    if let Some(path) = &output.html {
        let html = render_html(report, title);
        crate::outputs::write_atomically("--html", path, html.as_bytes())?;
        if !(output.json || output.sarif || output.markdown) {
            eprintln!("wrote {}", occupancy_build::cli::shown_path(path));
        }
    }
    crate::stdout::print("cannot write the report to standard output", &text)
}
