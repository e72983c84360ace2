//! `cargo occupancy parse LOG... [--json] [--arch ARCH] [--block THREADS]`: reads ptxas's
//! resource report (`nvcc -Xptxas -v`, `nvcc --resource-usage`, `ptxas -v`) from files or `-`
//! (stdin) and prints one row per kernel and architecture, or `{"kernels": [...]}` with `--json`.
//! With `--block` (and optionally `--arch`) each entry kernel gets its theoretical occupancy.
//!
//! This file only reads input, calls `occupancy_core` and prints; the parsing and the
//! arithmetic live in `occupancy_core::ptxas` and `occupancy_core::calc`.

use occupancy_core::arch::{self, ArchFacts};
use occupancy_core::calc::{self, KernelFacts, Launch, Occupancy};
use occupancy_core::ptxas::{Diagnostic, KernelRecord, LogParser};
use serde::Serialize;
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

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
}

#[derive(Serialize)]
struct Row<'a> {
    log: String,
    #[serde(flatten)]
    record: &'a KernelRecord,
    #[serde(skip_serializing_if = "Option::is_none")]
    occupancy: Option<Occupancy>,
}

#[derive(Serialize)]
struct JsonOutput<'a> {
    kernels: Vec<Row<'a>>,
    diagnostics: Vec<LogDiagnostic<'a>>,
    warnings: Vec<String>,
    errors: Vec<String>,
}

#[derive(Serialize)]
struct LogDiagnostic<'a> {
    log: String,
    #[serde(flatten)]
    diagnostic: &'a Diagnostic,
}

pub fn run(args: Args) -> ExitCode {
    match run_inner(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn read_log(path: &PathBuf) -> Result<occupancy_core::ptxas::ParseOutput, String> {
    crate::inputs::check_input_file("the ptxas log", path).map_err(|error| error.0)?;
    let name = path.display().to_string();
    let mut parser = LogParser::new();
    let mut buffer = vec![0u8; 1 << 16];
    let mut reader: Box<dyn Read> = if name == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(
            std::fs::File::open(path).map_err(|error| format!("cannot read `{name}`: {error}"))?,
        )
    };
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(count) => parser.feed(&buffer[..count]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(format!("cannot read `{name}`: {error}")),
        }
    }
    parser.finish().map_err(|error| format!("{name}: {error}"))
}

fn run_inner(args: &Args) -> Result<(), String> {
    let fixed_arch: Option<&'static ArchFacts> = match &args.arch {
        Some(name) => Some(arch::lookup(name).map_err(|error| format!("--arch: {error}"))?),
        None => None,
    };
    if args.block == Some(0) {
        return Err("--block must be at least 1 thread".to_string());
    }
    let mut outputs = Vec::new();
    for path in &args.logs {
        outputs.push((path.display().to_string(), read_log(path)?));
    }
    let mut rows = Vec::new();
    let mut diagnostics = Vec::new();
    let (mut warnings, mut errors) = (Vec::new(), Vec::new());
    for (log, output) in &outputs {
        for record in &output.kernels {
            let occupancy = match args.block {
                Some(block_threads) if record.entry => Some(occupancy_of(
                    record,
                    fixed_arch,
                    block_threads,
                    args.dynamic_smem_bytes,
                )?),
                _ => None,
            };
            rows.push(Row {
                log: log.clone(),
                record,
                occupancy,
            });
        }
        diagnostics.extend(output.diagnostics.iter().map(|diagnostic| LogDiagnostic {
            log: log.clone(),
            diagnostic,
        }));
        warnings.extend(output.warnings.iter().cloned());
        errors.extend(output.errors.iter().cloned());
    }
    for diagnostic in &diagnostics {
        eprintln!("warning: {}:{}", diagnostic.log, diagnostic.diagnostic);
    }
    for error in &errors {
        eprintln!("note: the compile reported: {error}");
    }
    if args.json {
        let json = JsonOutput {
            kernels: rows,
            diagnostics,
            warnings,
            errors,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&json).map_err(|error| error.to_string())?
        );
    } else {
        print!("{}", table(&rows, args.block.is_some()));
    }
    Ok(())
}

fn occupancy_of(
    record: &KernelRecord,
    fixed_arch: Option<&'static ArchFacts>,
    block_threads: u32,
    dynamic_smem_bytes: u32,
) -> Result<Occupancy, String> {
    let facts = match fixed_arch {
        Some(facts) => facts,
        None => arch::lookup(&record.arch)
            .map_err(|error| format!("kernel `{}`: {error}; pass --arch", record.name))?,
    };
    let registers = record.registers.ok_or_else(|| {
        format!(
            "entry kernel `{}` for {} has no register count",
            record.name, record.arch
        )
    })?;
    let static_smem_bytes = u32::try_from(record.static_smem_bytes).map_err(|_| {
        format!(
            "kernel `{}`: static shared memory out of range",
            record.name
        )
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
        dynamic_smem_bytes,
        ..Launch::new(block_threads)
    };
    Ok(calc::occupancy(facts, &kernel, &launch))
}

fn table(rows: &[Row<'_>], with_occupancy: bool) -> String {
    let mut header = vec![
        "arch",
        "kind",
        "regs",
        "barriers",
        "smem B",
        "stack B",
        "spill st B",
        "spill ld B",
    ];
    if with_occupancy {
        header.extend(["on", "block", "blocks/SM", "occupancy", "limited by"]);
    }
    header.push("kernel");
    let optional = |value: Option<u64>| value.map_or("-".to_string(), |value| value.to_string());
    let mut lines: Vec<Vec<String>> = vec![header.iter().map(|cell| cell.to_string()).collect()];
    for row in rows {
        let record = row.record;
        let mut cells = vec![
            record.arch.clone(),
            if record.entry { "entry" } else { "device" }.to_string(),
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
        lines.push(cells);
    }
    let columns = lines[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|column| {
            lines
                .iter()
                .map(|line| line[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut text = String::new();
    for line in &lines {
        let mut rendered = String::new();
        for (column, cell) in line.iter().enumerate() {
            if column + 1 == columns {
                rendered.push_str(cell);
            } else if column < 2 || (with_occupancy && (column == 8 || column == 12)) {
                rendered.push_str(&format!("{cell:<width$}  ", width = widths[column]));
            } else {
                rendered.push_str(&format!("{cell:>width$}  ", width = widths[column]));
            }
        }
        text.push_str(rendered.trim_end());
        text.push('\n');
    }
    text
}
