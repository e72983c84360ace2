//! `cargo occupancy`: a thin shell over `occupancy-core` (and `occupancy-build`'s engine).
//! Each subcommand lives in `cmd/<name>.rs`; this file parses the command line, dispatches, and
//! is the one place that turns a command's result into the exit code (`error.rs` says which).

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::env::Environment;
use crate::error::{CliError, Outcome};

mod archs;
mod cache_dir;
mod cmd;
mod env;
mod error;
mod flags;
mod format;
mod gate_args;
mod inputs;
mod lines;
mod outputs;
mod stdout;
mod tap;
mod workspace;

/// Cargo invokes `cargo-occupancy occupancy <args>`; a user may also run `cargo-occupancy <args>`.
#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo")]
enum CargoCli {
    /// GPU occupancy and register spills, computed as NVIDIA's driver does.
    Occupancy(Cli),
}

#[derive(Parser, Debug)]
#[command(
    name = "cargo-occupancy",
    version,
    about = "GPU occupancy and register spills, computed as NVIDIA's driver does"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Occupancy of one kernel launch (table, --json, or a --batch of JSON Lines).
    Calc(cmd::calc::Args),
    /// The per-architecture facts the calculator uses (--json for scripts, --gpus for presets).
    Arch(cmd::arch::Args),
    /// Every combination of block size, registers and shared memory (--summary, --csv, or curves).
    Sweep(cmd::sweep::Args),
    /// Read ptxas / nvcc --resource-usage logs into per-kernel records (table or --json).
    Parse(cmd::parse::Args),
    /// Compile .cu/.ptx files (or read ptxas logs) and check every kernel like the build gate.
    Check(cmd::check::Args),
    /// Run `cargo build` and check the device code every build script left in its OUT_DIR.
    Build(cmd::build::Args),
    /// Explain a kernel's occupancy: what binds, what each knob would change, the curves.
    Explain(cmd::explain::Args),
    /// The occupancy report of every kernel the workspace's builds checked.
    Report(cmd::report::Args),
    /// Try every launch bound that changes a kernel's resident blocks; say which "auto" chooses.
    Tune(cmd::tune::Args),
}

/// Exit codes: 0 clean, 1 deny findings / failed checks, 2 usage or tool errors (`error.rs`).
fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // Started as `nvcc` or `nvcc-launcher` from `cargo occupancy build --tap`'s directory: the
    // nvcc tap, before any parsing (its arguments are nvcc's).
    if tap::started_as_tap(args.first()) {
        return tap::main(args);
    }
    // `cargo occupancy X` runs `cargo-occupancy occupancy X`; drop the repeated subcommand name.
    if args.get(1).is_some_and(|a| a == "occupancy") {
        args.remove(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let _ = CargoCli::Occupancy; // documents the cargo calling convention above

    // The one read of the environment: what the command line leaves to it.
    let env = Environment::read();
    let json = cli.command.writes_json();
    let result = match cli.command {
        Command::Calc(args) => cmd::calc::run(&args, &env),
        Command::Arch(args) => cmd::arch::run(&args, &env),
        Command::Sweep(args) => cmd::sweep::run(&args, &env),
        Command::Parse(args) => cmd::parse::run(&args, &env),
        Command::Check(args) => cmd::check::run(&args, &env),
        Command::Build(args) => cmd::build::run(&args, &env),
        Command::Explain(args) => cmd::explain::run(&args, &env),
        Command::Report(args) => cmd::report::run(&args, &env),
        Command::Tune(args) => cmd::tune::run(&args, &env),
    };
    exit(result, json)
}

impl Command {
    /// Whether the command was asked for a JSON report on standard output (`--json`).
    fn writes_json(&self) -> bool {
        match self {
            Command::Check(args) => args.output.json,
            Command::Build(args) => args.output.json,
            _ => false,
        }
    }
}

/// The exit code of a command's result (`error.rs` says which); prints its error, the one
/// `error: ...` line of a run that could not do its work, and with `--json` the one JSON object
/// that says so on standard output. A closed standard output ends the run quietly with 0 (or
/// with the verdict the command already had: `Outcome::despite_closed_stdout`).
fn exit(result: Result<Outcome, CliError>, json: bool) -> ExitCode {
    match result {
        Ok(Outcome::Success) | Err(CliError::StdoutClosed) => ExitCode::SUCCESS,
        Ok(Outcome::ChecksFailed) => ExitCode::from(1),
        Err(error) => {
            // Not `eprintln!`, which panics when standard error is closed too.
            let _ = writeln!(std::io::stderr().lock(), "error: {error}");
            if json {
                let object = serde_json::json!({
                    "schema_version": occupancy_core::report::SCHEMA_VERSION,
                    "status": error.json_status(),
                    "exit_code": error.exit_code(),
                    "error": error.message(),
                    "kernels": [],
                    "findings": [],
                });
                let _ = writeln!(std::io::stdout().lock(), "{object}");
            }
            ExitCode::from(error.exit_code())
        }
    }
}
