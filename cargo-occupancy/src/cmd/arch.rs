//! `cargo occupancy arch [--json] [--gpus]`: the per-architecture facts table (or the product
//! presets), and the `--arch`/`--gpu` selection the other subcommands share.

use occupancy_build::cli::{explain_unknown, NvccArchs, ToolTimeouts};
use occupancy_build::TrackedEnv;
use occupancy_core::arch::{self, Arch, ArchFacts, GpuPreset, Variant};
use std::io::Write;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// One JSON array of objects instead of a table.
    #[arg(long)]
    json: bool,
    /// List the GPU product presets (`--gpu NAME`) instead of the architectures.
    #[arg(long)]
    gpus: bool,
    /// Only these architectures (any accepted spelling, e.g. sm_90a, 9.0).
    #[arg(value_name = "ARCH")]
    names: Vec<String>,
}

/// The architecture a command targets, and the product when `--gpu` named one.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    pub arch: &'static ArchFacts,
    pub gpu: Option<&'static GpuPreset>,
}

/// Parses an `--arch` value (or a batch line's `arch`) in the one grammar of [`Arch`]. A
/// well-formed name the table lacks is checked against the installed nvcc, so that the message
/// says whether occupancy is behind the compiler.
pub fn parse_arch(text: &str) -> Result<Arch, String> {
    Arch::parse(text).map_err(|error| {
        let nvcc = error.newer_than_table.and_then(|_| installed_nvcc_archs());
        explain_unknown(&error, nvcc)
    })
}

/// The installed nvcc's listing, asked once per process: a batch of many lines naming a newer
/// architecture runs nvcc twice, not twice per line.
fn installed_nvcc_archs() -> Option<&'static NvccArchs> {
    static INSTALLED: std::sync::OnceLock<Option<NvccArchs>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let env = TrackedEnv::new();
            // Only an explanation depends on it: a bad OCCUPANCY_TOOL_TIMEOUT keeps the defaults
            // here (`check`, which runs tools for real, refuses it).
            let timeouts = ToolTimeouts::from_env(&env).unwrap_or_default();
            NvccArchs::installed(&env, &timeouts)
        })
        .as_ref()
}

/// The facts of an architecture named on the command line or in an input, with
/// [`parse_arch`]'s message when the table lacks it: every command's `--arch` goes through here,
/// so that each says the same when the installed nvcc knows an architecture occupancy does not.
pub fn lookup_arch(text: &str) -> Result<&'static ArchFacts, String> {
    parse_arch(text).map(Arch::facts)
}

/// Resolves `--arch` and `--gpu`: at least one; when both, they must agree.
pub fn resolve_target(arch_name: Option<&str>, gpu_name: Option<&str>) -> Result<Target, String> {
    let gpu = gpu_name
        .map(arch::preset)
        .transpose()
        .map_err(|error| error.to_string())?;
    let arch = match (arch_name, gpu) {
        (Some(name), _) => lookup_arch(name)?,
        (None, Some(gpu)) => gpu.arch_facts(),
        (None, None) => {
            return Err("pass --arch (e.g. --arch sm_90) or --gpu (e.g. --gpu h100)".into())
        }
    };
    if let Some(gpu) = gpu {
        if gpu.arch != arch.name {
            return Err(format!(
                "--gpu {} is {}, but --arch names {}; drop one of them",
                gpu.name, gpu.arch, arch.name
            ));
        }
    }
    Ok(Target { arch, gpu })
}

/// Command-line value parser for counts and sizes: a non-negative integer that fits 32 bits.
pub fn parse_count(text: &str) -> Result<u32, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-')
        && trimmed[1..].bytes().all(|byte| byte.is_ascii_digit())
        && trimmed.len() > 1
    {
        return Err(format!(
            "`{text}` is negative; expected a non-negative integer"
        ));
    }
    if trimmed.is_empty() || !trimmed.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(format!("`{text}` is not a non-negative integer"));
    }
    trimmed
        .parse()
        .map_err(|_| format!("`{text}` is larger than {}", u32::MAX))
}

/// Prints `error: MESSAGE` and returns exit code 2.
pub fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(2)
}

pub fn run(args: Args) -> ExitCode {
    let mut rows: Vec<&'static ArchFacts> = Vec::new();
    for name in &args.names {
        match parse_arch(name) {
            Ok(arch) => rows.push(arch.facts()),
            Err(error) => return usage_error(error),
        }
    }
    if rows.is_empty() {
        rows = arch::all().iter().collect();
    }
    let mut out = std::io::stdout().lock();
    let written = if args.gpus {
        if args.json {
            serde_json::to_writer_pretty(&mut out, arch::presets())
                .map_err(std::io::Error::from)
                .and_then(|()| writeln!(out))
        } else {
            write_presets(&mut out)
        }
    } else if args.json {
        serde_json::to_writer_pretty(&mut out, &rows)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(out))
    } else {
        write_table(&mut out, &rows)
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => usage_error(format!("writing the table: {error}")),
    }
}

fn kib(bytes: u32) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{}K", bytes / 1024)
    } else {
        format!("{bytes}")
    }
}

fn write_table(out: &mut impl Write, rows: &[&ArchFacts]) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<7} {:<8} {:>4}  {:>7} {:>5} {:>6}  {:>7} {:>9}  {:>6} {:>7} {:>6} {:>8} {:>5}  {:>8} {:>4}  {:<37} family",
        "arch", "variants", "cc", "thr/SM", "warps", "blocks", "regs/SM", "regs/blk", "smem/SM", "smem/blk", "opt-in", "reserved", "unit", "barriers", "subp", "carveout steps (KB)"
    )?;
    for arch in rows {
        let steps = if arch.smem_configs_per_sm.is_empty() {
            "fixed".to_string()
        } else {
            arch.smem_configs_per_sm
                .iter()
                .map(|bytes| (bytes / 1024).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let barriers = if arch.barrier_limit_enforced {
            arch.barriers_per_sm.to_string()
        } else {
            "-".to_string()
        };
        writeln!(
            out,
            "{:<7} {:<8} {:>4}  {:>7} {:>5} {:>6}  {:>7} {:>9}  {:>7} {:>8} {:>6} {:>8} {:>5}  {:>8} {:>4}  {:<37} {}",
            arch.name,
            variants(arch),
            arch.compute_capability(),
            arch.max_threads_per_sm,
            arch.max_warps_per_sm,
            arch.max_blocks_per_sm,
            kib(arch.regs_per_sm),
            kib(arch.regs_per_block),
            kib(arch.smem_per_sm),
            kib(arch.smem_per_block),
            kib(arch.smem_per_block_optin),
            arch.reserved_smem_per_block,
            arch.smem_alloc_unit,
            barriers,
            arch.sub_partitions,
            steps,
            arch.family
        )?;
    }
    writeln!(
        out,
        "\nAll sizes in bytes (K = 1024). Registers are allocated per warp in units of 256. \
         barriers: per SM, enforced from 9.0. variants: nvcc's sm_NNa / sm_NNf. \
         `--json` adds sources and aliases."
    )
}

/// nvcc's variants of a row: `a`, `a f`, or `-`.
fn variants(facts: &ArchFacts) -> String {
    let number = facts.major * 10 + facts.minor;
    let letters: Vec<&str> = [Variant::ArchSpecific, Variant::FamilySpecific]
        .into_iter()
        .filter(|variant| Arch::known(number, *variant).is_some())
        .map(Variant::suffix)
        .collect();
    if letters.is_empty() {
        "-".to_string()
    } else {
        letters.join(" ")
    }
}

fn write_presets(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "{:<10} {:<7} {:>4}  product", "gpu", "arch", "SMs")?;
    for preset in arch::presets() {
        writeln!(
            out,
            "{:<10} {:<7} {:>4}  {}",
            preset.name, preset.arch, preset.sm_count, preset.product
        )?;
    }
    Ok(())
}
