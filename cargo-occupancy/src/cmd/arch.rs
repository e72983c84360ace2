//! `cargo occupancy arch [--json] [--gpus]`: the per-architecture facts table (or the product
//! presets). The `--arch`/`--gpu` selection every subcommand shares is `crate::archs`.

use occupancy_core::arch::{self, Arch, ArchFacts, Variant};
use std::io::Write;

use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::stdout::Stdout;

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

/// Runs `arch`: the table (or the presets) for the names given, else for every architecture.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    let mut rows: Vec<&'static ArchFacts> = Vec::new();
    for name in &args.names {
        rows.push(env.archs.lookup(name).map_err(CliError::Usage)?);
    }
    if rows.is_empty() {
        rows = arch::all().iter().collect();
    }
    let mut out = Stdout::lock("writing the table");
    out.write_with(|out| {
        if args.gpus {
            if args.json {
                write_json(out, arch::presets())
            } else {
                write_presets(out)
            }
        } else if args.json {
            write_json(out, &rows)
        } else {
            write_table(out, &rows)
        }
    })?;
    out.finish()?;
    Ok(Outcome::Success)
}

/// `value` as pretty JSON and a newline.
fn write_json(
    out: &mut impl Write,
    value: &(impl serde::Serialize + ?Sized),
) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value).map_err(std::io::Error::from)?;
    writeln!(out)
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

/// The presets, with whether their cluster answers are exact (GPC layout recorded), upper bounds
/// (sm_90 and later, not recorded) or absent (no clusters before sm_90); `--json` adds the
/// layout and each preset's source.
fn write_presets(out: &mut impl Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<12} {:<7} {:>4}  {:<8}  product",
        "gpu", "arch", "SMs", "clusters"
    )?;
    for preset in arch::presets() {
        let clusters = if preset.cluster_groups.is_some() {
            "exact"
        } else if occupancy_core::calc::clusters::cluster_rules(preset.arch_facts()).is_some() {
            "bound"
        } else {
            "-"
        };
        writeln!(
            out,
            "{:<12} {:<7} {:>4}  {clusters:<8}  {}",
            preset.name, preset.arch, preset.sm_count, preset.product
        )?;
    }
    writeln!(out, "\n`--json` adds where each SM count comes from.")
}
