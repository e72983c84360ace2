//! Compiles a directory of .cu files through occupancy-build, outside cargo, and prints the wall
//! time in seconds. Used by scripts/bench-build.sh to compare with plain nvcc.
//!
//! `bench_corpus <lib|ptx> <corpus dir | @list file> <out dir> <archs> <declarations dir> [flags...]`
//!
//! A corpus given as `@FILE` is the sources listed in FILE, one path a line (a crate whose
//! products take some of its `.cu` files each, as candle's does).

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: bench_corpus <lib|ptx> <corpus dir> <out dir> <archs> <declarations dir> [nvcc flags...]");
        std::process::exit(2);
    }
    let (mode, corpus, out_dir, archs) = (&args[0], &args[1], &args[2], &args[3]);
    let mut build = occupancy_build::Build::new();
    match corpus.strip_prefix('@') {
        Some(list) => {
            let text = std::fs::read_to_string(list).expect("the list of sources");
            build.files(text.lines().filter(|line| !line.trim().is_empty()));
        }
        None => {
            build.source_dir(corpus);
        }
    }
    build
        .out_dir(out_dir)
        .manifest_dir(out_dir)
        .declarations(&args[4])
        .cargo_metadata(false);
    for arch in archs.split(',') {
        build.arch(arch);
    }
    for flag in &args[5..] {
        build.flag(flag);
    }
    std::fs::create_dir_all(out_dir).expect("out dir");
    // The package the build reads its settings from with `cargo metadata`, as a crate's build
    // does: a target (never compiled) and a workspace of its own (the output dir may lie inside
    // this repository's workspace).
    let manifest = std::path::Path::new(out_dir).join("Cargo.toml");
    std::fs::write(
        &manifest,
        "[package]\nname = \"bench-corpus\"\nversion = \"0.0.0\"\n[lib]\npath = \"lib.rs\"\n\n[workspace]\n",
    )
    .expect("manifest");
    let start = Instant::now();
    let result = match mode.as_str() {
        "lib" => build.try_compile_lib("corpus"),
        "ptx" => build.try_compile_ptx(),
        other => {
            eprintln!("unknown mode {other}: lib or ptx");
            std::process::exit(2);
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    if let Some(own) = own_cpu_seconds() {
        eprintln!("build's own CPU (its threads, not the tools it ran): {own:.3} s");
    }
    match result {
        Ok(output) => {
            eprintln!(
                "{} kernels checked, {} findings",
                output.report.kernels.len(),
                output.report.findings.len()
            );
            println!("{seconds:.3}");
        }
        // Deny findings (the generated crate's spilling undeclared kernel) are a finished
        // build: the time counts.
        Err(occupancy_build::Error::Denied { count, .. }) => {
            eprintln!("{count} deny findings");
            println!("{seconds:.3}");
        }
        Err(error) => {
            eprintln!("{error}");
            std::process::exit(1);
        }
    }
}

/// User + system CPU seconds of this process's own threads, without its children (the compilers
/// and disassemblers): `/proc/self/stat` fields 14 and 15, in clock ticks (100 per second on
/// Linux). `None` where there is no procfs.
fn own_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    let ticks = |index: usize| fields.get(index)?.parse::<f64>().ok();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    Some((ticks(11)? + ticks(12)?) / 100.0)
}
