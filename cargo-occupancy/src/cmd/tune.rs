//! `cargo occupancy tune FILE --kernel NAME`: the launch bounds `min_blocks_per_sm = "auto"`
//! would choose for one kernel, with the whole ladder: every bound that changes the kernel's
//! resident blocks, compiled from the file at that bound (where the kernel takes
//! `OCCUPANCY_BOUNDS_<kernel>`; else assembled from its PTX with the bound) and measured (registers, spills and where
//! they are, the loops' instructions and memory accesses, blocks per SM, occupancy), and the
//! objective's verdict on each. The engine is the build's (`Build::tune_kernel`); this file
//! parses the arguments and prints. A file of a package that declares kernels compiles as its
//! build compiles it (its `occupancy_bounds.h`), and the kernel's declaration gives what the
//! command line leaves out: the knob it declares `"auto"`, its block, dynamic shared memory,
//! `max_spill_bytes` and archs.

use std::path::PathBuf;

use occupancy_build::cli::{TuneAnswer, TuneQuery};
use occupancy_build::Build;
use occupancy_core::tune::{render_ladder, Bound, Knob};

use crate::cache_dir::CacheDir;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::stdout::Stdout;

/// Which launch bound to choose.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum KnobArg {
    /// `__launch_bounds__(block, B)`: `min_blocks_per_sm = "auto"`.
    MinBlocksPerSm,
    /// `__maxnreg__(R)`: `max_registers = "auto"`.
    MaxRegisters,
}

/// How to print the ladder.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table per architecture, and the choice with its reason.
    Text,
    /// One JSON object: the kernel, the launch, and per architecture the choice and every
    /// candidate with its measurements and verdict.
    Json,
}

/// `cargo occupancy tune` arguments.
#[derive(clap::Args, Debug)]
#[command(
    about = "Try every launch bound that changes a kernel's resident blocks, and say which the build's \"auto\" would choose"
)]
pub struct Args {
    /// The .cu or .ptx file that defines the kernel.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The kernel's symbol (as in the PTX: `extern "C"` name or mangled name).
    #[arg(long, value_name = "NAME")]
    pub kernel: String,
    /// Target architecture (repeatable); default: as a build resolves them.
    #[arg(long = "arch", value_name = "ARCH")]
    pub archs: Vec<String>,
    /// Threads per block of the launch; default: its declaration's `block`, else the kernel's
    /// `__launch_bounds__` maximum.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub block: Option<u32>,
    /// Dynamic shared memory per block of the launch, in bytes; default: its declaration's
    /// `dynamic_smem`, else 0.
    #[arg(long, value_name = "BYTES", value_parser = crate::flags::smem_bytes)]
    pub dynamic_smem: Option<u64>,
    /// The bound to choose; default: the one its declaration writes `"auto"`, else
    /// `min-blocks-per-sm`.
    #[arg(long, value_enum)]
    pub knob: Option<KnobArg>,
    /// Spill bytes per thread accepted; default: its declaration's `max_spill_bytes`, else 0.
    #[arg(long, value_name = "BYTES")]
    pub max_spill_bytes: Option<u64>,
    /// A bound the compile of the source with it refused, as a build's check finds it
    /// (`ARCH:BOUND:SPILL_BYTES`, the bound in blocks or registers as `--knob`; repeatable):
    /// chosen again without it, to reproduce a build's choice where nvcc's front end made
    /// other code under the bound.
    #[arg(long = "refused", value_name = "ARCH:BOUND:BYTES", value_parser = refusal)]
    pub refused: Vec<(String, u32, u64)>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Directory for nvcc's outputs and the caches, yours alone (default as `check`'s).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Arguments passed to nvcc (after `--`): includes, defines, -std=...
    #[arg(last = true, value_name = "NVCC ARGS")]
    pub nvcc_args: Vec<String>,
}

/// Runs `tune`: exit 0 after printing the ladder, 2 when it could not be made.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    for arch in &args.archs {
        env.archs
            .lookup(arch)
            .map_err(|error| CliError::Usage(format!("--arch: {error}")))?;
    }
    // A symbol is one word of the PTX: an empty or spaced `--kernel` names none (it was shown as
    // an empty quote, or across lines).
    if args.kernel.is_empty()
        || args
            .kernel
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        let given = match args.kernel.is_empty() {
            true => "is empty".to_string(),
            false => format!("{:?} is not one", args.kernel),
        };
        return Err(CliError::Usage(format!(
            "--kernel {given}: a kernel's symbol is one word without spaces or control characters (the `extern \"C\"` name, or the mangled name as in the PTX)"
        )));
    }
    crate::inputs::check_input_file("the input", &args.file)?;
    env.scratch()?;
    let (build, package, _cache_dir) = build(args, env)?;
    let mut query = TuneQuery::default();
    query.kernel = args.kernel.clone();
    query.knob = args.knob.map(|knob| match knob {
        KnobArg::MinBlocksPerSm => Knob::MinBlocksPerSm,
        KnobArg::MaxRegisters => Knob::MaxRegisters,
    });
    query.block_threads = args.block;
    query.dynamic_smem_bytes = args
        .dynamic_smem
        .map(|bytes| u32::try_from(bytes).unwrap_or(u32::MAX));
    query.accepted_spill_bytes = args.max_spill_bytes;
    query.in_package = package.is_some();
    for (arch, bound, bytes) in &args.refused {
        let bound = match query.knob.unwrap_or(Knob::MinBlocksPerSm) {
            Knob::MinBlocksPerSm => Bound::MinBlocksPerSm(*bound),
            Knob::MaxRegisters => Bound::MaxRegisters(*bound),
        };
        query
            .refused
            .entry(arch.clone())
            .or_default()
            .push((bound, *bytes));
    }
    let mut answer = build
        .tune_kernel(&query)
        .map_err(|error| CliError::CouldNotCheck(error.to_string()))?;
    if let (Some(package), Some(at), Ok(current)) = (
        &package,
        answer.declared_at.as_mut(),
        std::env::current_dir().and_then(std::fs::canonicalize),
    ) {
        super::check::shown_from_here(at, package, &current);
    }
    let from_source = args
        .file
        .extension()
        .is_some_and(|extension| extension == "cu");
    let text = match args.format {
        Format::Text => render_text(&answer, from_source),
        Format::Json => render_json(&answer),
    };
    let mut out = Stdout::lock("cannot write the ladder to standard output");
    out.write_all(text.as_bytes())?;
    out.finish()?;
    Ok(Outcome::Success)
}

/// The build `check` would make of the file, compiling into the cache directory, and the
/// declaring package the file is in, if any; the cache directory, which the caller keeps until
/// the build is done (a temporary one is removed when it is dropped: dropped here, it was
/// removed before the compiles, which made it again, not private, and left it behind).
fn build(args: &Args, env: &Environment) -> Result<(Build, Option<PathBuf>, CacheDir), CliError> {
    let cache_dir = CacheDir::choose(
        args.cache_dir.as_deref(),
        env.cache_home.as_deref(),
        &env.temp_dir,
    )?;
    let file = std::fs::canonicalize(&args.file).unwrap_or_else(|_| args.file.clone());
    let mut build = Build::new();
    match file.extension().and_then(|extension| extension.to_str()) {
        Some("cu") => build.file(&file),
        Some("ptx") => build.ptx_file(&file),
        _ => {
            return Err(CliError::Usage(format!(
                "{}: `tune` reads a .cu or a .ptx file",
                occupancy_build::cli::shown_path(&args.file)
            )))
        }
    };
    for arch in &args.archs {
        build.arch(arch);
    }
    for flag in &args.nvcc_args {
        build.flag(flag);
    }
    let package = occupancy_build::cli::declaring_package(&file);
    cache_dir.place(&mut build, package.as_deref());
    build.env(env.for_build());
    Ok((build, package, cache_dir))
}

/// Every arch's ladder, then one line per arch with the choice as qualifiers, and where the
/// candidates came from: the source compiled at each bound, or, for a `.cu` (`from_source`)
/// whose kernel does not take its bound from the header, a note that they did not.
fn render_text(answer: &TuneAnswer, from_source: bool) -> String {
    let tuned = &answer.tuned;
    let mut text = String::new();
    let mut summary = Vec::new();
    for group in &tuned.groups {
        for (arch, tuning) in &group.tunings {
            text.push_str(&render_ladder(
                &tuned.kernel,
                arch,
                tuned.block_threads,
                tuning,
            ));
            text.push('\n');
            let qualifiers = group.chosen.qualifiers(tuned.knob, tuned.block_threads);
            summary.push(format!(
                "  {arch} (__CUDA_ARCH__ {}): {}{}",
                group.cuda_arch,
                group.chosen,
                match qualifiers.is_empty() {
                    true => String::new(),
                    false => format!(" -> {qualifiers}"),
                }
            ));
        }
    }
    if let Some(at) = &answer.declared_at {
        text.push_str(&format!(
            "declared at {at}: block {}, dynamic_smem {} bytes, max_spill_bytes {} (the command line's values where it gives them)\n",
            answer.request.block_threads,
            answer.request.dynamic_smem_bytes,
            answer.request.accepted_spill_bytes
        ));
    }
    text.push_str(&format!(
        "`{}` = \"auto\" for `{}` (block {}; {} compiles assembled, the rest from the cache):\n{}\n",
        tuned.knob,
        tuned.kernel,
        tuned.block_threads,
        tuned.assembled,
        summary.join("\n")
    ));
    match (answer.compiled_per_bound, from_source) {
        (true, _) => text.push_str("each candidate is the source compiled with its bound's qualifiers: the code that bound ships\n"),
        (false, true) => text.push_str(&format!(
            "note: `{kernel}` does not take `OCCUPANCY_BOUNDS_{kernel}`, so each bound was assembled from its PTX without bounds with the bound's directives; nvcc's front end sees `__launch_bounds__` too and may compile the source with it into other code: write `OCCUPANCY_BOUNDS_{kernel}` where its bounds go (and give `--block`) to measure what ships\n",
            kernel = tuned.kernel
        )),
        (false, false) => {}
    }
    text
}

/// The same as one JSON object.
fn render_json(answer: &TuneAnswer) -> String {
    let tuned = &answer.tuned;
    let archs: Vec<serde_json::Value> = tuned
        .groups
        .iter()
        .flat_map(|group| {
            group.tunings.iter().map(move |(arch, tuning)| {
                serde_json::json!({
                    "arch": arch,
                    "cuda_arch": group.cuda_arch,
                    "chosen": group.chosen,
                    "qualifiers": group.chosen.qualifiers(tuned.knob, tuned.block_threads),
                    "tuning": tuning,
                })
            })
        })
        .collect();
    let value = serde_json::json!({
        "kernel": tuned.kernel,
        "knob": tuned.knob,
        "block": tuned.block_threads,
        "dynamic_smem_bytes": answer.request.dynamic_smem_bytes,
        "max_spill_bytes": answer.request.accepted_spill_bytes,
        "declared_at": answer.declared_at.as_ref().map(ToString::to_string),
        "assembled": tuned.assembled,
        "compiled_per_bound": answer.compiled_per_bound,
        "archs": archs,
    });
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// `sm_90:6:16`: an arch, a bound and the spill bytes its compile had.
fn refusal(text: &str) -> Result<(String, u32, u64), String> {
    let mut parts = text.split(':');
    let (Some(arch), Some(bound), Some(bytes), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!(
            "`{text}`: expected ARCH:BOUND:SPILL_BYTES, e.g. sm_90:6:16"
        ));
    };
    let number = |what: &str, value: &str| {
        value
            .parse::<u64>()
            .map_err(|_| format!("`{text}`: the {what} `{value}` is not a number"))
    };
    let bound = u32::try_from(number("bound", bound)?).map_err(|error| error.to_string())?;
    Ok((arch.to_string(), bound, number("spill bytes", bytes)?))
}
