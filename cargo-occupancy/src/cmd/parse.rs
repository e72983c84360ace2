//! `cargo occupancy parse LOG... [--json] [--arch ARCH] [--block THREADS]`: reads ptxas's
//! resource report (`nvcc -Xptxas -v`, `nvcc --resource-usage`, `ptxas -v`) from files or `-`
//! (stdin) and prints one row per kernel and architecture, or `{"kernels": [...]}` with `--json`.
//! With `--block` (and optionally `--arch`) each entry kernel gets its theoretical occupancy.
//!
//! Logs are read through the shared streaming reader (`log_input`, the same one `check` uses)
//! and each row is printed as soon as it is read: memory does not grow with the log. Device
//! functions (callees) are no rows; `--json` lists them under `callees`. A compiler error in a
//! log ends the run with exit 2 naming it, and the kernel it names gets no row; so does a log
//! that shows a failed build (`--allow-failed-build` makes those lines warnings), and a resource
//! line of no record ends the read (`log_input`).
//!
//! This file only reads input, calls `occupancy_core` and prints; the parsing and the
//! arithmetic live in `occupancy_core::ptxas` and `occupancy_core::calc`.

use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::{self, KernelFacts, Launch, Occupancy};
use occupancy_core::ptxas::{BuildFailure, CompilerError, Diagnostic, KernelRecord};
use serde::Serialize;
use std::path::{Path, PathBuf};

use super::log_input;
use crate::archs::ArchNames;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::stdout::Stdout;

/// Read ptxas resource reports (`-Xptxas -v`, `--resource-usage`) into kernel records.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Log files to read; `-` reads standard input.
    #[arg(value_name = "LOG", required = true)]
    logs: Vec<PathBuf>,
    /// Print `{"kernels": [...]}` instead of a table.
    #[arg(long)]
    json: bool,
    /// Compute occupancy on this architecture (`sm_90`, `8.6`, ...) instead of each record's own.
    #[arg(long, value_name = "ARCH", requires = "block")]
    arch: Option<String>,
    /// Threads per block of the launch: adds each entry kernel's occupancy.
    #[arg(long, value_name = "THREADS")]
    block: Option<u32>,
    /// Dynamic shared memory per block of the launch, in bytes (with `--block`).
    #[arg(long, value_name = "BYTES", default_value_t = 0, requires = "block")]
    dynamic_smem_bytes: u32,
    /// Read a log that shows a failed build (`FAILED:`, `make: *** ... Error`, `Segmentation
    /// fault`, ...) anyway, each such line a warning: for markers that are false positives.
    #[arg(long)]
    allow_failed_build: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    log: String,
    #[serde(flatten)]
    record: &'a KernelRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    occupancy: Option<Occupancy>,
}

/// What follows the streamed `kernels` array in `--json` output.
#[derive(Serialize, Default)]
struct JsonTail {
    callees: Vec<FromLog<KernelRecord>>,
    diagnostics: Vec<FromLog<Diagnostic>>,
    warnings: Vec<String>,
    errors: Vec<FromLog<CompilerError>>,
    /// The lines that say the build failed (each log's first 100).
    build_failures: Vec<FromLog<BuildFailure>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Something read from a log (a callee's record, a diagnostic, a compiler error, a failed
/// build), with the log it came from: `{"log": ..., <its own fields>}`.
#[derive(Serialize)]
struct FromLog<T> {
    log: String,
    #[serde(flatten)]
    item: T,
}

/// Tags each of `items` with `log`.
fn from_log<'a, T: 'a>(log: &'a str, items: Vec<T>) -> impl Iterator<Item = FromLog<T>> + 'a {
    items.into_iter().map(move |item| FromLog {
        log: log.to_string(),
        item,
    })
}

/// Runs `parse`: reads every log through the shared streaming reader and prints each kernel row
/// as soon as it is read (memory holds the open records, not the logs). A log that cannot be
/// read or holds a compiler error ends the run with exit 2, after what was read is printed.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    let request = occupancy_request(args, &env.archs)?;
    let mut printer = Printer::new(args.json, request.is_some());
    let mut tail = JsonTail::default();
    let failure = read_all(args, request.as_ref(), &mut printer, &mut tail)?;
    tail.error = failure.as_ref().map(|error| error.message().to_string());
    printer.finish(&tail)?;
    failure.map_or(Ok(Outcome::Success), Err)
}

/// The launch to compute occupancy for, from `--arch`, `--block` and `--dynamic-smem-bytes`.
struct OccupancyRequest<'a> {
    /// Reads each record's own architecture when `--arch` names none.
    archs: &'a ArchNames,
    fixed_arch: Option<&'static ArchFacts>,
    block_threads: u32,
    dynamic_smem_bytes: u32,
}

/// The launch `--block` asks for, if it does.
fn occupancy_request<'a>(
    args: &Args,
    archs: &'a ArchNames,
) -> Result<Option<OccupancyRequest<'a>>, CliError> {
    let fixed_arch: Option<&'static ArchFacts> = match &args.arch {
        Some(name) => Some(
            archs
                .lookup(name)
                .map_err(|error| CliError::Usage(format!("--arch: {error}")))?,
        ),
        None => None,
    };
    if args.block == Some(0) {
        return Err(CliError::usage("--block must be at least 1 thread"));
    }
    Ok(args.block.map(|block_threads| OccupancyRequest {
        archs,
        fixed_arch,
        block_threads,
        dynamic_smem_bytes: args.dynamic_smem_bytes,
    }))
}

/// Streams every log into `printer`; returns why the run fails once the output is finished (a
/// log that cannot be read, a compiler error, a failed build), if it does. A closed standard
/// output ends the reading at once.
fn read_all(
    args: &Args,
    request: Option<&OccupancyRequest<'_>>,
    printer: &mut Printer,
    tail: &mut JsonTail,
) -> Result<Option<CliError>, CliError> {
    let policy = log_input::LogPolicy {
        allow_failed_build: args.allow_failed_build,
    };
    let mut failed_builds = Vec::new();
    for path in &args.logs {
        match read_one(path, request, printer, tail, policy) {
            Ok(Some(failed_build)) => failed_builds.push(failed_build),
            Ok(None) => {}
            Err(CliError::StdoutClosed) => return Err(CliError::StdoutClosed),
            Err(error) => return Ok(Some(error)),
        }
    }
    let errors: Vec<String> = tail
        .errors
        .iter()
        .map(|error| format!("  {}:{}", error.log, error.item))
        .collect();
    if !errors.is_empty() {
        return Ok(Some(CliError::CouldNotCheck(format!(
            "the compile failed: the log holds {} compiler error(s); its kernels are not reported as if it had passed:\n{}",
            errors.len(),
            errors.join("\n")
        ))));
    }
    if failed_builds.is_empty() {
        return Ok(None);
    }
    let messages: Vec<&str> = failed_builds.iter().map(CliError::message).collect();
    Ok(Some(CliError::CouldNotCheck(messages.join("\n"))))
}

/// Streams one log into `printer`; keeps its callees, diagnostics, warnings, errors and build
/// failures in `tail`. Returns the error of a log that shows a failed build (unless allowed).
fn read_one(
    path: &Path,
    request: Option<&OccupancyRequest<'_>>,
    printer: &mut Printer,
    tail: &mut JsonTail,
    policy: log_input::LogPolicy,
) -> Result<Option<CliError>, CliError> {
    let log = occupancy_build::cli::shown_path(path);
    let output = log_input::read_log(path, |record| {
        // A kernel a compiler error names gets no row: its numbers are not a passing compile's.
        if !record.errors.is_empty() {
            return Ok(());
        }
        let occupancy = request
            .map(|request| occupancy_of(&record, request))
            .transpose()?;
        printer.row(&Row {
            log: log.clone(),
            record: &record,
            occupancy,
        })
    })?;
    log_input::print_reading(&log, &output);
    let failed_build = log_input::failed_build(&log, &output, policy).err();
    tail.callees.extend(from_log(&log, output.callees));
    tail.diagnostics.extend(from_log(&log, output.diagnostics));
    tail.warnings.extend(output.warnings);
    tail.errors.extend(from_log(&log, output.errors));
    tail.build_failures
        .extend(from_log(&log, output.build_failures));
    Ok(failed_build)
}

/// Prints rows as they come: one JSON object per row inside `{"kernels": [...], ...}`, or a
/// table with fixed column widths (a streamed table cannot measure rows it has not seen).
struct Printer {
    out: Stdout,
    json: bool,
    with_occupancy: bool,
    rows: usize,
}

impl Printer {
    fn new(json: bool, with_occupancy: bool) -> Printer {
        Printer {
            out: Stdout::lock("cannot write to standard output"),
            json,
            with_occupancy,
            rows: 0,
        }
    }

    fn row(&mut self, row: &Row<'_>) -> Result<(), CliError> {
        let text = if self.json {
            let json = serde_json::to_string(row).map_err(serialize_error)?;
            format!(
                "{}\n    {json}",
                if self.rows == 0 {
                    "{\n  \"kernels\": ["
                } else {
                    ","
                }
            )
        } else {
            let header = if self.rows == 0 {
                table_line(&header_cells(self.with_occupancy))
            } else {
                String::new()
            };
            header + &table_line(&row_cells(row, self.with_occupancy))
        };
        self.rows += 1;
        self.write(&text)
    }

    fn finish(mut self, tail: &JsonTail) -> Result<(), CliError> {
        if self.json {
            let head = if self.rows == 0 {
                "{\n  \"kernels\": ["
            } else {
                ""
            };
            let tail_json = serde_json::to_string_pretty(tail).map_err(serialize_error)?;
            // `{ "callees": ... }` joins the open object after the kernels array.
            let rest = tail_json.strip_prefix('{').unwrap_or(&tail_json);
            let text = format!("{head}\n  ],{rest}\n");
            self.write(&text)?;
        } else if self.rows == 0 && tail.error.is_none() {
            let header = table_line(&header_cells(self.with_occupancy));
            self.write(&header)?;
        }
        self.out.finish()
    }

    fn write(&mut self, text: &str) -> Result<(), CliError> {
        self.out.write_all(text.as_bytes())
    }
}

/// A row that serde_json cannot write (never for these types: their keys are strings).
fn serialize_error(error: serde_json::Error) -> CliError {
    CliError::Output(error.to_string())
}

fn occupancy_of(
    record: &KernelRecord,
    request: &OccupancyRequest<'_>,
) -> Result<Occupancy, CliError> {
    let facts = match request.fixed_arch {
        Some(facts) => facts,
        None => request.archs.lookup(&record.arch).map_err(|error| {
            CliError::Input(format!("kernel `{}`: {error}; pass --arch", record.name))
        })?,
    };
    let registers = record.registers.ok_or_else(|| {
        CliError::Input(format!(
            "entry kernel `{}` for {} has no register count",
            record.name, record.arch
        ))
    })?;
    let static_smem_bytes = u32::try_from(record.static_smem_bytes).map_err(|_| {
        CliError::Input(format!(
            "kernel `{}`: static shared memory out of range",
            record.name
        ))
    })?;
    let kernel = KernelFacts {
        registers_per_thread: registers,
        static_smem_bytes,
        // CUDA versions that print no barrier count target only architectures (below 9.0) where
        // barriers do not limit occupancy; the driver's own assumption is 1.
        barriers: record.barriers.unwrap_or(1),
        max_threads_per_block: None,
        max_dynamic_smem_bytes: None,
    };
    let launch = Launch {
        dynamic_smem_bytes: request.dynamic_smem_bytes,
        ..Launch::new(request.block_threads)
    };
    Ok(calc::occupancy(facts, &kernel, &launch))
}

/// A table column: its header and width; numbers are right-aligned.
struct Column {
    header: &'static str,
    width: usize,
    left_aligned: bool,
}

const fn column(header: &'static str, width: usize, left_aligned: bool) -> Column {
    Column {
        header,
        width,
        left_aligned,
    }
}

/// Widths fit every value ptxas and the calculator print for real kernels; a longer value
/// widens its own row only.
const RECORD_COLUMNS: [Column; 7] = [
    column("arch", 7, true),
    column("regs", 4, false),
    column("barriers", 8, false),
    column("smem B", 8, false),
    column("stack B", 8, false),
    column("spill st B", 10, false),
    column("spill ld B", 10, false),
];
const OCCUPANCY_COLUMNS: [Column; 5] = [
    column("on", 7, true),
    column("block", 5, false),
    column("blocks/SM", 9, false),
    column("occupancy", 9, false),
    column("limited by", 14, true),
];

fn columns(with_occupancy: bool) -> impl Iterator<Item = &'static Column> {
    let occupancy: &'static [Column] = if with_occupancy {
        &OCCUPANCY_COLUMNS
    } else {
        &[]
    };
    RECORD_COLUMNS.iter().chain(occupancy)
}

fn header_cells(with_occupancy: bool) -> Vec<String> {
    let mut cells: Vec<String> = columns(with_occupancy)
        .map(|column| column.header.to_string())
        .collect();
    cells.push("kernel".to_string());
    cells
}

fn row_cells(row: &Row<'_>, with_occupancy: bool) -> Vec<String> {
    let record = row.record;
    let optional = |value: Option<u64>| value.map_or("-".to_string(), |value| value.to_string());
    let mut cells = vec![
        record.arch.clone(),
        optional(record.registers.map(u64::from)),
        optional(record.barriers.map(u64::from)),
        record.static_smem_bytes.to_string(),
        optional(record.stack_frame_bytes),
        optional(record.spill_store_bytes),
        optional(record.spill_load_bytes),
    ];
    if with_occupancy {
        match &row.occupancy {
            Some(occupancy) => cells.extend([
                occupancy.arch.to_string(),
                occupancy.block_threads.to_string(),
                occupancy.blocks_per_sm.to_string(),
                format!("{:.1}%", occupancy.occupancy * 100.0),
                occupancy
                    .limiters
                    .iter()
                    .map(|limiter| limiter.name())
                    .collect::<Vec<_>>()
                    .join("+"),
            ]),
            None => cells.extend((0..5).map(|_| "-".to_string())),
        }
    }
    cells.push(
        record
            .demangled
            .clone()
            .unwrap_or_else(|| record.name.clone()),
    );
    cells
}

/// One table line: every cell but the last (the kernel) padded to its column's width.
fn table_line(cells: &[String]) -> String {
    let with_occupancy = cells.len() > RECORD_COLUMNS.len() + 1;
    let mut line = String::new();
    for (cell, column) in cells.iter().zip(columns(with_occupancy)) {
        let width = column.width;
        if column.left_aligned {
            line.push_str(&format!("{cell:<width$}  "));
        } else {
            line.push_str(&format!("{cell:>width$}  "));
        }
    }
    line.push_str(cells.last().map_or("", String::as_str));
    let mut line = line.trim_end().to_string();
    line.push('\n');
    line
}
