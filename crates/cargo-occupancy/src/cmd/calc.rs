//! `cargo occupancy calc` (filled in by the calculator work).
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> ExitCode {
    eprintln!("error: calc is not implemented yet");
    ExitCode::from(2)
}
