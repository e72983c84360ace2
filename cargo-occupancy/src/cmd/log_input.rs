//! The one way every command reads a ptxas log (`parse`, `check`, `explain --log`).
//!
//! The file (or standard input) is streamed through `occupancy_core::ptxas::LogParser` in
//! 64 KiB chunks; each kernel record is handed to the caller as soon as no later line can change
//! it, so memory holds the records still open and what the caller keeps, never the file. The
//! parser's policies hold for every command alike: invalid UTF-8 is read lossily line by line
//! (and noted once per log), a line longer than any ptxas line is skipped in bounded chunks, and
//! after the read [`conclude`] says the same for every command: a compiler error in the log, or
//! a line that says the build failed (`FAILED:`, `make: *** ... Error 1`, `Segmentation
//! fault`, ...: [`failed_build`]), is an error of the run, exit 2. A resource line that belongs
//! to no record, a record cut off or a figure that cannot be read fail the read itself
//! ([`read_log`]'s error, from the parser).

use std::io::Read;
use std::path::Path;

use occupancy_build::cli::shown_path;
use occupancy_core::kernel::KernelOnArch;
use occupancy_core::ptxas::{
    KernelRecord, LogParser, ParseError, ParseOutput, PtxEntry, MAX_LINE_BYTES,
};
use occupancy_core::report::RowLaunch;

use crate::error::CliError;

/// How much is read at a time.
const CHUNK_BYTES: usize = 64 << 10;

/// Reads the log at `path` (`-`: standard input), calling `on_kernel` with every entry record in
/// log order; returns the rest of what the log held (callees, diagnostics, warnings, errors).
/// A record `on_kernel` refuses ends the read with its error.
pub fn read_log(
    path: &Path,
    on_kernel: impl FnMut(KernelRecord) -> Result<(), CliError>,
) -> Result<ParseOutput, CliError> {
    let name = shown_path(path);
    read_parsed(path, on_kernel)?.map_err(|error| CliError::Input(format!("{name}: {error}")))
}

/// [`read_log`] for the report of one compile (the nvcc tap's `<output>.ptxas`): `None` when
/// ptxas reported its modules and no entry function in them, as for a translation unit of host
/// code and device functions only. Any other log without a kernel is an error, as in
/// [`read_log`].
pub fn read_compile_report(
    path: &Path,
    on_kernel: impl FnMut(KernelRecord) -> Result<(), CliError>,
) -> Result<Option<ParseOutput>, CliError> {
    let name = shown_path(path);
    match read_parsed(path, on_kernel)? {
        Ok(output) => Ok(Some(output)),
        Err(error) if error.is_compile_without_kernels() => Ok(None),
        Err(error) => Err(CliError::Input(format!("{name}: {error}"))),
    }
}

/// The stream read of [`read_log`], with the parser's own verdict on the whole log.
fn read_parsed(
    path: &Path,
    mut on_kernel: impl FnMut(KernelRecord) -> Result<(), CliError>,
) -> Result<Result<ParseOutput, ParseError>, CliError> {
    crate::inputs::check_input_file("the ptxas log", path)?;
    let name = shown_path(path);
    // A compiled binary given as a log is no log: read as one it is megabytes of bytes without a
    // record (a sparse one, read to its end). `sniff` opens regular files only, never a pipe.
    if let Ok(Some(_)) = occupancy_binary::sniff(path) {
        return Err(CliError::Input(format!(
            "`{name}` is a compiled binary (a cubin, fatbin, object, library or wheel), not a ptxas log: `cargo occupancy check {name}` reads its kernels"
        )));
    }
    let cannot_read =
        |error: std::io::Error| CliError::Input(format!("cannot read `{name}`: {error}"));
    let mut reader: Box<dyn Read> = if name == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::fs::File::open(path).map_err(cannot_read)?)
    };
    let mut parser = LogParser::new();
    let mut buffer = vec![0u8; CHUNK_BYTES];
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => parser.feed(&buffer[..count]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(cannot_read(error)),
        }
        for record in parser.take_finished_kernels() {
            on_kernel(record)?;
        }
    }
    let mut output = match parser.finish() {
        Ok(output) => output,
        Err(error) => return Ok(Err(error)),
    };
    for record in std::mem::take(&mut output.kernels) {
        on_kernel(record)?;
    }
    Ok(Ok(output))
}

/// The notes every command prints about how a log was read: lossily decoded lines and skipped
/// over-long lines (each skipped one that mattered is also a diagnostic).
pub fn reading_notes(name: &str, output: &ParseOutput) -> Vec<String> {
    let mut notes = Vec::new();
    if output.invalid_utf8_lines > 0 {
        notes.push(format!(
            "{name}: {} line(s) were not valid UTF-8 and were read with U+FFFD in place of the bad bytes",
            output.invalid_utf8_lines
        ));
    }
    if output.long_lines_skipped > 0 {
        let first = output
            .first_long_line
            .map_or(String::new(), |line| format!("; the first is line {line}"));
        notes.push(format!(
            "{name}: {} line(s) longer than {MAX_LINE_BYTES} bytes were skipped unread (1 MiB, the longest line read: no ptxas line is that long{first})",
            output.long_lines_skipped
        ));
    }
    if output.diagnostics_not_kept > 0 {
        notes.push(format!(
            "{name}: {} more line(s) that looked like ptxas's were not understood (only the first {} are listed)",
            output.diagnostics_not_kept,
            output.diagnostics.len()
        ));
    }
    notes
}

/// How a log's failure lines are judged (`--allow-failed-build`).
#[derive(Debug, Clone, Copy, Default)]
pub struct LogPolicy {
    /// Lines that say the build failed only warn: for a log whose markers are false positives
    /// (a test's output that prints `FAILED: ...`, a step that failed and was retried).
    pub allow_failed_build: bool,
}

/// What every command does once a log was read: the notes on how it was read and its
/// diagnostics (warnings), then its verdict: the compiler's errors, then the lines that say
/// the build failed, each an error of the run.
pub fn conclude(name: &str, output: &ParseOutput, policy: LogPolicy) -> Result<(), CliError> {
    print_reading(name, output);
    compile_errors(name, output)?;
    failed_build(name, output, policy)
}

/// Prints the notes on how the log was read and its diagnostics, as warnings.
pub fn print_reading(name: &str, output: &ParseOutput) {
    for note in reading_notes(name, output) {
        eprintln!("note: {note}");
    }
    for diagnostic in &output.diagnostics {
        eprintln!("warning: {name}:{diagnostic}");
    }
}

/// Failure lines listed in one message; the rest are counted.
const FAILURES_LISTED: usize = 10;

/// The log's lines that say the build failed, as one error of the run naming each line and
/// marker: the kernels of what failed were never compiled, so the log cannot show that every
/// kernel passed. With `--allow-failed-build` each is a warning instead.
pub fn failed_build(name: &str, output: &ParseOutput, policy: LogPolicy) -> Result<(), CliError> {
    let failures = &output.build_failures;
    if failures.is_empty() {
        return Ok(());
    }
    if policy.allow_failed_build {
        for failure in failures {
            eprintln!("warning: {name}:{failure} (allowed by --allow-failed-build: the kernels of the step that failed may be missing from the log)");
        }
        return Ok(());
    }
    let total = failures.len() + output.build_failures_not_kept;
    let mut listed: Vec<String> = failures
        .iter()
        .take(FAILURES_LISTED)
        .map(|failure| format!("  {name}:{failure}"))
        .collect();
    if total > FAILURES_LISTED {
        listed.push(format!("  ... and {} more", total - FAILURES_LISTED));
    }
    Err(CliError::CouldNotCheck(format!(
        "{name}: the log shows a failed build ({total} line(s)): the kernels of what failed were never compiled, so the log cannot show that every kernel passed:\n{}\nfix the build and check the log of a build that succeeded; if these lines are not failures of this build (a false positive), pass --allow-failed-build",
        listed.join("\n")
    )))
}

/// The log's compiler errors as one error of the run, naming kernel and arch where the log does.
pub fn compile_errors(name: &str, output: &ParseOutput) -> Result<(), CliError> {
    if output.errors.is_empty() {
        return Ok(());
    }
    let listed: Vec<String> = output
        .errors
        .iter()
        .map(|error| format!("  {name}:{error}"))
        .collect();
    Err(CliError::CouldNotCheck(format!(
        "{name}: the compile failed: the log holds {} compiler error(s); a failed compile's numbers are not checked:\n{}",
        output.errors.len(),
        listed.join("\n")
    )))
}

/// A record (a log's or a binary's) as the kernel on its arch at `launch`, for `check` and
/// `explain`.
pub fn kernel_from_record(
    record: KernelRecord,
    ptx: Option<PtxEntry>,
    launch: RowLaunch,
) -> Result<KernelOnArch, CliError> {
    let name = record.name.clone();
    KernelOnArch::new(record, ptx, launch)
        .map_err(|error| CliError::Input(format!("kernel `{name}`: {error}")))
}
