//! `check`'s report made one row and one finding at a time, in bounded memory, whatever the
//! number of kernels in the logs it reads.
//!
//! Each row and finding passes through [`ReportStream`] once, in report order, and goes where
//! the output format needs it:
//!
//! * text and Markdown: a [`ReportDigest`], which renders the whole report as before while it is
//!   small and the worst rows, the first findings of each lint and the counts past that;
//! * `--json` and `--sarif`: complete, every row and finding. Each is serialized as it comes into
//!   an anonymous temporary file (a *spool*), and the document is written at the end around the
//!   spooled arrays, byte for byte what [`render_json`] / [`render_sarif`] write for the whole
//!   report. Standard output gets the whole document or, when the run fails, nothing. Disk, not
//!   memory, holds the size of the output (memory, with a warning, when `$TMPDIR` takes no
//!   file);
//! * `--html`: the HTML page draws every kernel's curves, so this one output still keeps the
//!   whole report in memory (its size grows with the rows, as the page does).

use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use occupancy_core::lint::{Level, LintId};
use occupancy_core::report::{
    render_html, render_json, render_sarif, sarif_result, FindingIndex, KernelRow, Report,
    ReportDigest, RowIndex,
};
use serde::Serialize;

use crate::error::CliError;
use crate::format::{OutputArgs, ReportFormat};
use crate::stdout::Stdout;

/// Where a spool's bytes go.
#[derive(Debug)]
enum Storage {
    /// An anonymous temporary file in `dir`: memory holds 64 KiB of it.
    File { file: BufWriter<File>, dir: PathBuf },
    /// Memory, when no temporary file can be made (a read-only `$TMPDIR`): the output is right,
    /// and memory grows with it, as it did before spooling.
    Memory(Vec<u8>),
}

/// Serialized elements of one JSON array, in an anonymous temporary file.
#[derive(Debug)]
struct Spool {
    storage: Storage,
    elements: u64,
    /// The indentation of the array's elements in the document.
    indent: usize,
}

impl Spool {
    /// A spool in `temp_dir` for an array whose elements stand `indent` spaces in.
    fn new(indent: usize, temp_dir: &Path) -> Spool {
        let storage = match anonymous_file(temp_dir) {
            Ok(file) => Storage::File {
                file: BufWriter::with_capacity(1 << 16, file),
                dir: temp_dir.to_path_buf(),
            },
            Err(error) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!("warning: {error}; the report is held in memory instead");
                });
                Storage::Memory(Vec::new())
            }
        };
        Spool {
            storage,
            elements: 0,
            indent,
        }
    }

    /// Appends `element`, pretty-printed at the array's indentation.
    fn push(&mut self, element: &impl Serialize) -> Result<(), CliError> {
        let text = serde_json::to_string_pretty(element)
            .map_err(|error| CliError::Output(format!("cannot serialize the report: {error}")))?;
        let pad = " ".repeat(self.indent);
        let mut out = String::with_capacity(text.len() + text.len() / 8);
        out.push_str(if self.elements == 0 { "\n" } else { ",\n" });
        out.push_str(&pad);
        // Strings hold no raw line breaks: every `\n` of the text starts a line to indent.
        out.push_str(&text.replace('\n', &format!("\n{pad}")));
        match &mut self.storage {
            Storage::File { file, dir } => file
                .write_all(out.as_bytes())
                .map_err(|error| spool_error(dir, &error))?,
            Storage::Memory(bytes) => bytes.extend_from_slice(out.as_bytes()),
        }
        self.elements += 1;
        Ok(())
    }

    /// Writes the array (`[]`, or `[` + the elements + `]` on its own line) to `out`.
    fn write_array(self, out: &mut impl Write) -> std::io::Result<()> {
        if self.elements == 0 {
            return out.write_all(b"[]");
        }
        out.write_all(b"[")?;
        match self.storage {
            Storage::File { file, .. } => {
                let mut file = file.into_inner().map_err(|error| error.into_error())?;
                file.rewind()?;
                std::io::copy(&mut file, out)?;
            }
            Storage::Memory(bytes) => out.write_all(&bytes)?,
        }
        write!(out, "\n{}]", " ".repeat(self.indent.saturating_sub(2)))
    }
}

fn spool_error(dir: &Path, error: &std::io::Error) -> CliError {
    CliError::Output(format!(
        "cannot write the report to a temporary file in {}: {error} (set TMPDIR to a writable directory with room for the report)",
        occupancy_build::cli::shown_path(dir)
    ))
}

/// A new file in the temporary directory, removed from it at once (the open file stays; the
/// system frees it when it is closed, even if this process is killed).
fn anonymous_file(dir: &Path) -> Result<File, CliError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    loop {
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(
            ".cargo-occupancy-{}-{nanos}-{count}.spool",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                let _ = std::fs::remove_file(&path);
                return Ok(file);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && count < 1000 => {}
            Err(error) => return Err(spool_error(dir, &error)),
        }
    }
}

/// `text` split around the empty array of `key` at `indent` spaces: what comes before the `[]`
/// and what comes after it. The key is found on a line of its own (string values hold no raw
/// line break, so no value can look like it).
fn split_at_array<'a>(text: &'a str, key: &str, indent: usize) -> Option<(&'a str, &'a str)> {
    let marker = format!("\n{}\"{key}\": []", " ".repeat(indent));
    let start = text.find(&marker)?;
    let end = start + marker.len();
    Some((&text[..end - 2], &text[end..]))
}

/// Where the rows and findings go, by output format.
#[derive(Debug)]
enum Sink {
    Text(Box<ReportDigest>),
    Markdown(Box<ReportDigest>),
    Json { kernels: Spool, findings: Spool },
    Sarif { results: Spool },
}

/// The report of a `check`, taken in row by row and finding by finding; see the module docs.
#[derive(Debug)]
pub struct ReportStream {
    sink: Sink,
    /// The whole report, for `--html` only.
    html: Option<Report>,
    rows: u64,
    deny: bool,
}

impl ReportStream {
    /// A stream for the output `output` asks for, spooling in `temp_dir`.
    pub fn new(output: &OutputArgs, temp_dir: &Path) -> ReportStream {
        let sink = match output.format() {
            ReportFormat::Json => Sink::Json {
                kernels: Spool::new(4, temp_dir),
                findings: Spool::new(4, temp_dir),
            },
            ReportFormat::Sarif => Sink::Sarif {
                results: Spool::new(8, temp_dir),
            },
            ReportFormat::Markdown => Sink::Markdown(Box::default()),
            ReportFormat::Text => Sink::Text(Box::default()),
        };
        ReportStream {
            sink,
            html: output.html.is_some().then(Report::default),
            rows: 0,
            deny: false,
        }
    }

    /// Takes in a whole report (the compiled sources'): its rows, then its findings.
    pub fn add_report(&mut self, report: &Report) -> Result<(), CliError> {
        let index = FindingIndex::new(report);
        for row in &report.kernels {
            self.add_row(row, index.lints_for(row))?;
        }
        let rows = RowIndex::new(&report.kernels);
        for finding in &report.findings {
            self.add_finding(finding, rows.first_concerned(finding))?;
        }
        Ok(())
    }

    /// Takes in a row, with the distinct (level, lint) of the findings that concern it.
    pub fn add_row(&mut self, row: &KernelRow, lints: &[(Level, LintId)]) -> Result<(), CliError> {
        self.rows += 1;
        match &mut self.sink {
            Sink::Text(digest) | Sink::Markdown(digest) => digest.add_row(row, lints),
            Sink::Json { kernels, .. } => kernels.push(row)?,
            Sink::Sarif { .. } => {}
        }
        if let Some(report) = &mut self.html {
            report.kernels.push(row.clone());
        }
        Ok(())
    }

    /// Takes in a finding, with the row it concerns when known (SARIF locates it there).
    pub fn add_finding(
        &mut self,
        finding: &occupancy_core::report::Finding,
        row: Option<&KernelRow>,
    ) -> Result<(), CliError> {
        self.deny |= finding.level == Level::Deny;
        let shown = finding.level != Level::Allow || finding.reason.is_some();
        match &mut self.sink {
            Sink::Text(digest) | Sink::Markdown(digest) => digest.add_finding(finding),
            Sink::Json { findings, .. } => findings.push(finding)?,
            Sink::Sarif { results } if shown => results.push(&sarif_result(finding, row))?,
            Sink::Sarif { .. } => {}
        }
        if let Some(report) = &mut self.html {
            report.findings.push(finding.clone());
        }
        Ok(())
    }

    /// Rows taken in.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Whether a deny finding came in: the gate fails.
    pub fn has_deny(&self) -> bool {
        self.deny
    }

    /// Writes the `--html` page, then the report to standard output.
    pub fn finish(self, output: &OutputArgs, title: &str) -> Result<(), CliError> {
        if let (Some(report), Some(path)) = (&self.html, &output.html) {
            let html = render_html(report, title);
            crate::outputs::write_atomically("--html", path, html.as_bytes())?;
            if output.says_what_it_wrote() {
                eprintln!("wrote {}", occupancy_build::cli::shown_path(path));
            }
        }
        let mut out = Stdout::lock("cannot write the report to standard output");
        out.write_with(|out| self.sink.write(out))?;
        out.finish()
    }
}

impl Sink {
    /// Writes the document: the digest's rendering, or the skeleton of the whole report's
    /// rendering with the spooled arrays in place of its empty ones.
    fn write(self, out: &mut impl Write) -> std::io::Result<()> {
        let broken = |what: &str| {
            std::io::Error::other(format!("the {what} skeleton has no empty array to fill"))
        };
        match self {
            Sink::Text(digest) => out.write_all(digest.render_text().as_bytes()),
            Sink::Markdown(digest) => out.write_all(digest.render_markdown().as_bytes()),
            Sink::Json { kernels, findings } => {
                let skeleton = render_json(&Report::default());
                let (head, rest) =
                    split_at_array(&skeleton, "kernels", 2).ok_or_else(|| broken("JSON"))?;
                let (middle, tail) =
                    split_at_array(rest, "findings", 2).ok_or_else(|| broken("JSON"))?;
                out.write_all(head.as_bytes())?;
                kernels.write_array(out)?;
                out.write_all(middle.as_bytes())?;
                findings.write_array(out)?;
                out.write_all(tail.as_bytes())
            }
            Sink::Sarif { results } => {
                let skeleton = render_sarif(&Report::default(), env!("CARGO_PKG_VERSION"));
                let (head, tail) =
                    split_at_array(&skeleton, "results", 6).ok_or_else(|| broken("SARIF"))?;
                out.write_all(head.as_bytes())?;
                results.write_array(out)?;
                out.write_all(tail.as_bytes())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use occupancy_core::report::example_report;

    fn streamed(output: &OutputArgs, report: &Report) -> String {
        let mut stream = ReportStream::new(output, &std::env::temp_dir());
        stream.add_report(report).unwrap();
        assert_eq!(stream.has_deny(), report.has_deny());
        let mut out = Vec::new();
        stream.sink.write(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn reports() -> Vec<Report> {
        let example = example_report();
        let mut no_findings = example.clone();
        no_findings.findings.clear();
        let mut no_rows = example.clone();
        no_rows.kernels.clear();
        let mut one_finding = Report::default();
        one_finding.findings.push(example.findings[0].clone());
        vec![
            example,
            no_findings,
            no_rows,
            one_finding,
            Report::default(),
        ]
    }

    /// OutputArgs asking for `format`.
    fn asking_for(format: ReportFormat) -> OutputArgs {
        let mut output = OutputArgs::default();
        match format {
            ReportFormat::Text => {}
            ReportFormat::Json => output.json = true,
            ReportFormat::Sarif => output.sarif = true,
            ReportFormat::Markdown => output.markdown = true,
        }
        assert_eq!(output.format(), format);
        output
    }

    /// Every format streams byte for byte what its renderer writes for the whole report: the
    /// spooled JSON and SARIF arrays (empty ones included), the digested text and Markdown of a
    /// small report.
    #[test]
    fn every_streamed_format_equals_the_whole_reports_rendering() {
        for format in ReportFormat::ALL {
            for report in reports() {
                assert_eq!(
                    streamed(&asking_for(format), &report),
                    format.render(&report),
                    "{format:?}"
                );
            }
        }
    }

    /// Without a temporary file the spool holds the array in memory, with the same bytes.
    #[test]
    fn a_spool_in_memory_writes_what_a_spool_in_a_file_writes() {
        let report = example_report();
        let mut arrays = Vec::new();
        for storage in [
            Storage::Memory(Vec::new()),
            Spool::new(4, &std::env::temp_dir()).storage,
        ] {
            let mut spool = Spool {
                storage,
                elements: 0,
                indent: 4,
            };
            for row in &report.kernels {
                spool.push(row).unwrap();
            }
            let mut out = Vec::new();
            spool.write_array(&mut out).unwrap();
            arrays.push(out);
        }
        assert!(arrays[0].starts_with(b"[\n    {\n      \"crate\""));
        assert_eq!(arrays[0], arrays[1]);
    }

    #[test]
    fn the_array_split_finds_the_key_on_its_own_line_only() {
        let text = "{\n  \"a\": \"\\n  \\\"kernels\\\": []\",\n  \"kernels\": [],\n  \"b\": 1\n}";
        let (head, tail) = split_at_array(text, "kernels", 2).unwrap();
        assert!(head.ends_with("\n  \"kernels\": "), "{head}");
        assert_eq!(tail, ",\n  \"b\": 1\n}");
        assert!(split_at_array(text, "kernels", 4).is_none());
    }
}
