//! `cargo occupancy explain KERNEL`: which resource binds a kernel's occupancy and by how much,
//! what each knob would change (computed), whether the occupancy is a problem, and the three
//! curves as text. The facts come from a ptxas log (`--log`), from direct values
//! (`--registers`, ...), or from the reports the workspace's builds wrote.
//! The reasoning lives in `occupancy_core::report::explain`; this file finds the kernel.

use std::path::PathBuf;
use std::process::ExitCode;

use occupancy_core::arch;
use occupancy_core::report::explain::{explain, render_explanation_text};
use occupancy_core::report::{KernelRow, RowLaunch};

use super::report::{fail, load_dir, report_dir, row_from_record, UsageError};

/// `cargo occupancy explain` arguments.
#[derive(clap::Args, Debug)]
#[command(
    about = "Explain a kernel's occupancy: what binds, what each knob would change, the curves"
)]
pub struct Args {
    /// The kernel: its symbol or demangled name, or a unique part of one.
    pub kernel: String,
    /// Architecture(s) to explain on (repeatable; default: every one the facts cover).
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Threads per block (default: the declared block, else the compiled maximum, else 256).
    #[arg(long, value_name = "N")]
    pub block: Option<u32>,
    /// Dynamic shared memory per block in bytes.
    #[arg(long, value_name = "BYTES", value_parser = crate::flags::smem_bytes)]
    pub dynamic_smem: Option<u64>,
    /// Shared memory carveout preference: `default` or a percentage 0..=100.
    #[arg(long, value_name = "default|PERCENT")]
    pub carveout: Option<String>,
    /// Read the kernel's facts from a ptxas `-v` log (`nvcc -Xptxas -v` output; repeatable).
    #[arg(long = "log", value_name = "FILE")]
    pub logs: Vec<PathBuf>,
    /// Give the facts directly: registers per thread (needs --arch; at most 255).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=255))]
    pub registers: Option<u32>,
    /// With --registers: static shared memory per block in bytes.
    #[arg(long, value_name = "BYTES", requires = "registers", value_parser = crate::flags::smem_bytes)]
    pub static_smem: Option<u64>,
    /// With --registers: barriers the kernel uses (default 1; at most 16).
    #[arg(long, value_name = "N", requires = "registers", value_parser = clap::value_parser!(u32).range(0..=16))]
    pub barriers: Option<u32>,
    /// With --registers: the `__launch_bounds__` maximum threads per block.
    #[arg(long, value_name = "N", requires = "registers")]
    pub max_threads: Option<u32>,
    /// Directory of build reports (default: `<target dir>/occupancy`).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Cargo.toml of the workspace whose reports to read.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
}

/// Runs `explain`: exit 0 after explaining, 2 when the kernel or its facts cannot be found.
pub fn run(args: Args) -> ExitCode {
    match rows(&args) {
        Ok(rows) => {
            let mut first = true;
            for row in rows {
                let Ok(facts) = arch::lookup(&row.arch) else {
                    continue;
                };
                if !first {
                    println!("{}", "─".repeat(100));
                }
                first = false;
                print!("{}", render_explanation_text(&explain(facts, &row)));
            }
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error),
    }
}

fn carveout_percent(text: Option<&str>) -> Result<Option<u32>, UsageError> {
    match text {
        None | Some("default") => Ok(None),
        Some(text) => match text.trim_end_matches('%').parse::<u32>() {
            Ok(percent) if percent <= 100 => Ok(Some(percent)),
            _ => Err(UsageError(format!(
                "--carveout `{text}`: write `default` or a percentage from 0 to 100"
            ))),
        },
    }
}

fn canonical_archs(names: &[String]) -> Result<Vec<&'static str>, UsageError> {
    names
        .iter()
        .map(|name| {
            super::arch::lookup_arch(name)
                .map(|facts| facts.name)
                .map_err(|error| UsageError(format!("--arch: {error}")))
        })
        .collect()
}

/// The rows to explain, with the command line's launch applied.
fn rows(args: &Args) -> Result<Vec<KernelRow>, UsageError> {
    let archs = canonical_archs(&args.archs)?;
    let carveout = carveout_percent(args.carveout.as_deref())?;
    if args.block == Some(0) {
        return Err(UsageError("--block must be at least 1 thread".to_string()));
    }
    let mut rows = if let Some(registers) = args.registers {
        if archs.is_empty() {
            return Err(UsageError("--registers gives the facts of no particular build: name the architecture with --arch".into()));
        }
        archs
            .iter()
            .map(|name| direct_row(args, name, registers))
            .collect()
    } else if !args.logs.is_empty() {
        rows_from_logs(args)?
    } else {
        let dir = report_dir(args.dir.as_deref(), args.manifest_path.as_deref())?;
        load_dir(&dir)?
            .kernels
            .into_iter()
            .filter(|row| row.entry)
            .collect()
    };
    if args.registers.is_none() {
        rows = select_kernel(rows, &args.kernel)?;
    }
    if !archs.is_empty() {
        let available: Vec<String> = rows.iter().map(|row| row.arch.clone()).collect();
        rows.retain(|row| archs.contains(&row.arch.as_str()));
        if rows.is_empty() {
            return Err(UsageError(format!(
                "`{}` was not compiled for {}; its facts cover: {}",
                args.kernel,
                archs.join(", "),
                available.join(", ")
            )));
        }
    }
    for row in &mut rows {
        if let Some(block) = args.block {
            row.block = block;
        }
        if let Some(bytes) = args.dynamic_smem {
            row.dynamic_smem_bytes = bytes;
        }
        if args.carveout.is_some() {
            row.carveout_percent = carveout;
        }
        if let Ok(facts) = arch::lookup(&row.arch) {
            row.compute(facts);
        }
    }
    Ok(rows)
}

fn direct_row(args: &Args, arch_name: &str, registers: u32) -> KernelRow {
    KernelRow {
        registers,
        barriers: args.barriers.unwrap_or(1),
        static_smem_bytes: args.static_smem.unwrap_or(0),
        max_threads_per_block: args.max_threads,
        dynamic_smem_bytes: args.dynamic_smem.unwrap_or(0),
        ..KernelRow::new(&args.kernel, arch_name, args.block.unwrap_or(256))
    }
}

fn rows_from_logs(args: &Args) -> Result<Vec<KernelRow>, UsageError> {
    let mut rows = Vec::new();
    for path in &args.logs {
        // Without PTX the compiled bounds are unknown; the launch is the user's or 256.
        let launch = RowLaunch {
            block: args.block.unwrap_or(256),
            dynamic_smem_bytes: 0,
            carveout_percent: None,
        };
        let output = super::log_input::read_log(path, |record| {
            rows.push(row_from_record(&record, None, launch).map_err(|error| error.0)?);
            Ok(())
        })
        .map_err(UsageError)?;
        let name = path.display().to_string();
        for note in super::log_input::reading_notes(&name, &output) {
            eprintln!("note: {note}");
        }
        super::log_input::compile_errors(&name, &output).map_err(UsageError)?;
    }
    Ok(rows)
}

/// Keeps the rows of the one kernel `wanted` names: an exact symbol or demangled name, else the
/// demangled name without its parameter list, else a unique substring.
fn select_kernel(rows: Vec<KernelRow>, wanted: &str) -> Result<Vec<KernelRow>, UsageError> {
    let short = |row: &KernelRow| {
        row.demangled
            .split('(')
            .next()
            .unwrap_or("")
            .trim()
            .rsplit(' ')
            .next()
            .unwrap_or("")
            .to_string()
    };
    let tiers: [&dyn Fn(&KernelRow) -> bool; 3] = [
        &|row: &KernelRow| row.name == wanted || row.demangled == wanted,
        &|row: &KernelRow| short(row) == wanted || short(row).split('<').next() == Some(wanted),
        &|row: &KernelRow| row.name.contains(wanted) || row.demangled.contains(wanted),
    ];
    let mut all_names: Vec<String> = rows
        .iter()
        .map(|row| row.display_name().to_string())
        .collect();
    all_names.sort();
    all_names.dedup();
    for matches in tiers {
        let selected: Vec<KernelRow> = rows.iter().filter(|row| matches(row)).cloned().collect();
        let mut names: Vec<(Option<String>, String)> = selected
            .iter()
            .map(|row| (row.crate_name.clone(), row.name.clone()))
            .collect();
        names.sort();
        names.dedup();
        match names.len() {
            0 => continue,
            1 => return Ok(selected),
            _ => {
                let listed: Vec<String> =
                    names.iter().map(|(_, name)| format!("  {name}")).collect();
                return Err(UsageError(format!(
                    "`{wanted}` matches several kernels; name one exactly:\n{}",
                    listed.join("\n")
                )));
            }
        }
    }
    Err(UsageError(format!(
        "no kernel named `{wanted}`; the kernels are:\n{}",
        all_names
            .iter()
            .map(|name| format!("  {name}"))
            .collect::<Vec<_>>()
            .join("\n")
    )))
}
