//! `cargo occupancy calc`: one kernel and launch as a table or JSON, or a JSON Lines batch
//! (`--batch`, see [`super::batch`] for its contract).

use super::batch::{self, BatchEnd, Field};
use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::clusters::{max_active_clusters, ClusterOccupancy};
use occupancy_core::calc::{occupancy, Carveout, KernelFacts, Launch, Limiter, Occupancy};
use std::io::{BufRead, Write};

use crate::archs::Target;
use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::stdout::Stdout;

#[derive(clap::Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    #[command(flatten)]
    target: crate::archs::TargetArgs,
    /// Threads per block.
    #[arg(long, value_name = "THREADS", required_unless_present = "batch", value_parser = crate::flags::parse_count)]
    block: Option<u32>,
    /// Registers per thread (ptxas "Used N registers").
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = crate::flags::parse_count)]
    registers: u32,
    /// Static shared memory per block, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 0, value_parser = crate::flags::parse_count)]
    static_smem: u32,
    /// Dynamic shared memory per block at launch, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 0, value_parser = crate::flags::parse_count)]
    dynamic_smem: u32,
    /// Block barriers the kernel uses (__syncthreads is one).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::flags::parse_count)]
    barriers: u32,
    /// __launch_bounds__ maximum threads per block (default: the device maximum).
    #[arg(long, value_name = "THREADS", value_parser = crate::flags::parse_count)]
    max_threads: Option<u32>,
    /// Shared memory carveout preference: default or 0..100 (percent).
    #[arg(long, default_value = "default", value_parser = parse_carveout)]
    carveout: Carveout,
    /// Dynamic shared memory the kernel opted into (default: what the launch needs).
    #[arg(long, value_name = "BYTES", value_parser = crate::flags::parse_count)]
    max_dynamic_smem: Option<u32>,
    /// Thread-block cluster: blocks per cluster (`2`) or its shape (`2x2x1`, `4,2`); adds the
    /// clusters resident at once on the --gpu (sm_90 and later).
    #[arg(long, value_name = "SIZE", requires = "gpu", conflicts_with = "batch", value_parser = parse_cluster)]
    cluster: Option<u32>,
    /// With --cluster: the kernel sets cudaFuncAttributeNonPortableClusterSizeAllowed (clusters
    /// above 8 blocks).
    #[arg(long, requires = "cluster")]
    non_portable_cluster: bool,
    /// One JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// JSON Lines in (FILE, or - for stdin), one JSON answer per line out.
    #[arg(long, value_name = "FILE")]
    batch: Option<String>,
    /// With --batch: only these answer fields, in this order (e.g. blocks_per_sm,limiters).
    #[arg(long, value_name = "FIELDS", requires = "batch")]
    fields: Option<String>,
}

/// A cluster as `N` or a shape `XxYxZ` / `X,Y,Z` (1 to 3 dimensions): its blocks, the product.
/// The one rule of a malformed value: the flag, the whole value and the shape expected.
fn parse_cluster(text: &str) -> Result<u32, String> {
    let expected = || {
        format!(
            "`--cluster {text}`: expected `X[xY[xZ]]` with each a positive integer, e.g. `2x1x1`"
        )
    };
    let dimensions: Vec<&str> = text.trim().split(['x', 'X', ',']).collect();
    if dimensions.len() > 3 {
        return Err(format!(
            "{} (a cluster has at most 3 dimensions)",
            expected()
        ));
    }
    dimensions.iter().try_fold(1u32, |size, dimension| {
        let digits = !dimension.is_empty() && dimension.bytes().all(|b| b.is_ascii_digit());
        let dimension: u32 = match digits.then(|| dimension.parse::<u32>()) {
            Some(Ok(dimension)) if dimension > 0 => dimension,
            Some(Err(_)) => return Err(format!("`--cluster {text}` is larger than {}", u32::MAX)),
            _ => return Err(expected()),
        };
        size.checked_mul(dimension)
            .ok_or_else(|| format!("`--cluster {text}` is larger than {}", u32::MAX))
    })
}

fn parse_carveout(text: &str) -> Result<Carveout, String> {
    text.parse()
        .map_err(|error: occupancy_core::calc::CalcError| error.to_string())
}

/// Runs `calc`: one answer, or a batch of them.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    if let Some(path) = &args.batch {
        return run_batch(args, path, env);
    }
    let target = env
        .archs
        .resolve_target(args.target.arch.as_deref(), args.target.gpu.as_deref())?;
    let Some(block) = args.block else {
        return Err(CliError::usage("pass --block THREADS"));
    };
    let kernel = KernelFacts {
        registers_per_thread: args.registers,
        static_smem_bytes: args.static_smem,
        barriers: args.barriers,
        max_threads_per_block: args.max_threads,
        max_dynamic_smem_bytes: args.max_dynamic_smem,
    };
    let launch = Launch {
        block_threads: block,
        dynamic_smem_bytes: args.dynamic_smem,
        carveout: args.carveout,
    };
    let answer = occupancy(target.arch, &kernel, &launch);
    let cluster = args.cluster.zip(target.gpu).map(|(size, gpu)| {
        max_active_clusters(gpu, answer.blocks_per_sm, size, args.non_portable_cluster)
    });
    let mut out = Stdout::lock("writing the answer");
    out.write_with(|out| {
        if args.json {
            writeln!(out, "{}", answer_json(&answer, target, cluster.as_ref()))
        } else {
            write_table(out, target, &kernel, &launch, &answer)?;
            cluster
                .as_ref()
                .map_or(Ok(()), |cluster| write_cluster(out, target, cluster))
        }
    })?;
    out.finish()?;
    Ok(Outcome::Success)
}

/// The JSON answer: the calculator's [`Occupancy`] (fields in declaration order), plus grid
/// figures when a GPU is known.
#[derive(serde::Serialize)]
struct AnswerJson<'a> {
    #[serde(flatten)]
    answer: &'a Occupancy,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu: Option<GpuJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a ClusterOccupancy>,
}

#[derive(serde::Serialize)]
struct GpuJson {
    name: &'static str,
    product: &'static str,
    sm_count: u32,
    blocks_per_wave: u64,
}

fn answer_json(answer: &Occupancy, target: Target, cluster: Option<&ClusterOccupancy>) -> String {
    let gpu = target.gpu.map(|gpu| GpuJson {
        name: gpu.name,
        product: gpu.product,
        sm_count: gpu.sm_count,
        blocks_per_wave: u64::from(answer.blocks_per_sm) * u64::from(gpu.sm_count),
    });
    serde_json::to_string(&AnswerJson {
        answer,
        gpu,
        cluster,
    })
    .unwrap_or_else(|error| serde_json::json!({ "error": error.to_string() }).to_string())
}

fn plural(count: u32, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

fn limit_text(limit: Option<u32>) -> String {
    limit.map_or_else(|| "-".to_string(), |blocks| blocks.to_string())
}

fn write_table(
    out: &mut impl Write,
    target: Target,
    kernel: &KernelFacts,
    launch: &Launch,
    answer: &Occupancy,
) -> std::io::Result<()> {
    let arch = target.arch;
    writeln!(
        out,
        "{arch} | block {} | {} | {} B static + {} B dynamic smem | {} | carveout {}",
        launch.block_threads,
        plural(kernel.registers_per_thread, "register"),
        kernel.static_smem_bytes,
        launch.dynamic_smem_bytes,
        plural(kernel.barriers, "barrier"),
        launch.carveout,
    )?;
    writeln!(out)?;
    write_limits(out, arch, kernel, launch, answer)?;
    writeln!(out)?;
    write_summary(out, target, answer)
}

/// The table of each resource's block limit, the binding ones marked. Per SM, so it takes the
/// architecture alone: a named GPU adds only the grid line of [`write_summary`].
fn write_limits(
    out: &mut impl Write,
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    answer: &Occupancy,
) -> std::io::Result<()> {
    let limits = &answer.block_limits;
    let warps_per_block = launch.block_threads.div_ceil(arch.warp_size);
    writeln!(out, "  {:<14} {:>12}  per block", "resource", "blocks/SM")?;
    let binds = |limiter: Limiter| {
        if answer.limiters.contains(&limiter) {
            "  <- binds"
        } else {
            ""
        }
    };
    let mut row = |name: &str, limit: String, detail: String, limiter: Limiter| {
        writeln!(out, "  {name:<14} {limit:>12}  {detail}{}", binds(limiter))
    };
    row(
        "warps",
        limits.warps.to_string(),
        format!(
            "{} of {} warp slots",
            plural(warps_per_block, "warp"),
            arch.max_warps_per_sm
        ),
        Limiter::Warps,
    )?;
    row(
        "blocks",
        limits.blocks.to_string(),
        format!("1 of {} block slots", arch.max_blocks_per_sm),
        Limiter::Blocks,
    )?;
    row(
        "registers",
        limit_text(limits.registers),
        format!(
            "{} of {} registers ({} per warp)",
            answer.allocated_registers_per_block,
            arch.regs_per_sm,
            occupancy_core::calc::registers_per_warp(arch, kernel.registers_per_thread)
        ),
        Limiter::Registers,
    )?;
    row(
        "shared memory",
        limit_text(limits.shared_memory),
        format!(
            "{} B of a {} B configuration (limit {} B per block)",
            answer.allocated_smem_per_block, answer.smem_config_per_sm, answer.smem_limit_per_block
        ),
        Limiter::SharedMemory,
    )?;
    let barrier_detail = if arch.barrier_limit_enforced {
        format!("{} of {} barriers", kernel.barriers, arch.barriers_per_sm)
    } else {
        format!("not limited on {}", arch.name)
    };
    row(
        "barriers",
        limit_text(limits.barriers),
        barrier_detail,
        Limiter::Barriers,
    )?;
    if let Some(max_threads) = kernel.max_threads_per_block {
        row(
            "launch bounds",
            limit_text(limits.launch_bounds),
            if launch.block_threads > max_threads {
                format!(
                    "block of {} exceeds __launch_bounds__({max_threads})",
                    launch.block_threads
                )
            } else {
                format!(
                    "block of {} within __launch_bounds__({max_threads})",
                    launch.block_threads
                )
            },
            Limiter::LaunchBounds,
        )?;
    }
    Ok(())
}

/// `-N UNIT gains a block`, or that no reduction does.
fn gain(amount: Option<u64>, unit: &str) -> String {
    amount.map_or_else(
        || "no reduction gains a block".to_string(),
        |amount| format!("-{amount} {unit} gains a block"),
    )
}

/// The shared memory headroom line. A block past the per-block limit has no headroom to speak
/// of: the line says by how much it is over (in 64 bits: static + dynamic may pass 4 GiB).
fn smem_headroom(answer: &Occupancy) -> String {
    let allocated = answer.allocated_smem_per_block;
    let limit = answer.smem_limit_per_block;
    if answer.block_limits.shared_memory == Some(0) && allocated > limit {
        return format!(
            "shared memory: {allocated} B per block exceed the per-block limit of {limit} B on {} by {} B; no block runs until the launch asks for less",
            answer.arch,
            allocated - limit
        );
    }
    format!(
        "shared memory +{} B per block keeps {} blocks, {}",
        answer.headroom.smem_addable_bytes,
        answer.blocks_per_sm,
        gain(answer.headroom.smem_to_gain_block_bytes, "B")
    )
}

/// What is resident, why it cannot run, the headroom, and the grid of a named GPU.
fn write_summary(out: &mut impl Write, target: Target, answer: &Occupancy) -> std::io::Result<()> {
    let limiters: Vec<&str> = answer
        .limiters
        .iter()
        .map(|limiter| limiter.name())
        .collect();
    writeln!(
        out,
        "  resident: {} = {} = {} threads per SM, occupancy {:.1}% (bound by {})",
        plural(answer.blocks_per_sm, "block"),
        plural(answer.warps_per_sm, "warp"),
        answer.threads_per_sm,
        answer.occupancy * 100.0,
        limiters.join(", ")
    )?;
    if let Some(reason) = &answer.reason {
        writeln!(out, "  cannot run: {reason}")?;
    }
    let headroom = &answer.headroom;
    writeln!(
        out,
        "  headroom: registers +{} per thread keeps {} blocks, {}",
        headroom.registers_addable,
        answer.blocks_per_sm,
        gain(
            headroom.registers_to_gain_block.map(u64::from),
            "per thread"
        )
    )?;
    writeln!(out, "            {}", smem_headroom(answer))?;
    if let Some(gpu) = target.gpu {
        writeln!(
            out,
            "  grid: {} ({} SMs): {} blocks per full wave",
            gpu.product,
            gpu.sm_count,
            u64::from(answer.blocks_per_sm) * u64::from(gpu.sm_count)
        )?;
    }
    Ok(())
}

/// The cluster line: how many clusters are resident at once on the GPU, exact or a bound, or why
/// none runs.
fn write_cluster(
    out: &mut impl Write,
    target: Target,
    cluster: &ClusterOccupancy,
) -> std::io::Result<()> {
    let Some(gpu) = target.gpu else {
        return Ok(());
    };
    let size = plural(cluster.cluster_size, "block");
    if let Some(problem) = &cluster.problem {
        return writeln!(
            out,
            "  clusters: of {size} on {}: none runs: {problem}",
            gpu.product
        );
    }
    let capped = if cluster.cluster_blocks_per_sm < cluster.blocks_per_sm {
        format!(
            "; {} of the {} blocks per SM (a cluster launch holds at most {} per SM)",
            cluster.cluster_blocks_per_sm, cluster.blocks_per_sm, cluster.cluster_blocks_per_sm
        )
    } else {
        String::new()
    };
    let (quantifier, basis) = if cluster.exact {
        (
            "",
            format!(
                "exact: {} of its {} SMs are in GPCs of at least {} SMs ({})",
                cluster.usable_sms,
                gpu.sm_count,
                cluster.cluster_size,
                groups_text(gpu.cluster_groups.unwrap_or_default())
            ),
        )
    } else {
        (
            "at most ",
            format!(
                "an upper bound: the GPC layout of the {} is not recorded",
                gpu.product
            ),
        )
    };
    writeln!(
        out,
        "  clusters: of {size} on {} ({} SMs): {quantifier}{} resident at once = {} blocks{capped}",
        gpu.product,
        gpu.sm_count,
        plural(cluster.max_active_clusters, "cluster"),
        cluster.resident_blocks(),
    )?;
    writeln!(out, "            {basis}")
}

/// `18, 18, 5 x 16, 8, 4 x 2`: the cluster groups, runs of equal sizes counted.
fn groups_text(groups: &[u32]) -> String {
    let mut runs: Vec<(u32, usize)> = Vec::new();
    for &sms in groups {
        match runs.last_mut() {
            Some((size, count)) if *size == sms => *count += 1,
            _ => runs.push((sms, 1)),
        }
    }
    runs.iter()
        .map(|&(sms, count)| match count {
            1 => sms.to_string(),
            2 => format!("{sms}, {sms}"),
            _ => format!("{count} x {sms}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `calc --batch`: answers every line; exit 2 at the end when a line was bad, or at once
/// when the input cannot be read.
fn run_batch(args: &Args, path: &str, env: &Environment) -> Result<Outcome, CliError> {
    let default_arch = match (args.target.arch.as_deref(), args.target.gpu.as_deref()) {
        (None, None) => None,
        (arch_name, gpu_name) => Some(env.archs.resolve_target(arch_name, gpu_name)?.arch),
    };
    let fields: Option<Vec<Field>> = args
        .fields
        .as_deref()
        .map(batch::parse_fields)
        .transpose()
        .map_err(CliError::Usage)?;
    let (mut reader, input_name): (Box<dyn BufRead>, String) = if path == "-" {
        // Stdin's own buffer is 8 KiB: a larger one leaves fewer lines across its end.
        (
            Box::new(std::io::BufReader::with_capacity(
                1 << 16,
                std::io::stdin().lock(),
            )),
            "(stdin)".to_string(),
        )
    } else {
        (
            Box::new(std::io::BufReader::with_capacity(
                1 << 16,
                open_batch_file(path)?,
            )),
            format!("`{path}`"),
        )
    };
    let mut out = Stdout::lock("writing answers");
    let end = out.write_with(|out| {
        batch::answer_all(
            &mut reader,
            &input_name,
            out,
            &env.archs,
            (default_arch, args.block),
            fields.as_deref(),
        )
    })?;
    out.finish()?;
    match end {
        BatchEnd::ReadError(message) => Err(CliError::Input(message)),
        BatchEnd::Finished { bad_lines } if bad_lines > 0 => Err(CliError::Input(format!(
            "{bad_lines} bad batch line(s); each got an {{\"error\": ...}} answer"
        ))),
        BatchEnd::Finished { .. } => Ok(Outcome::Success),
    }
}

/// Opens a batch file; a directory is refused up front (reading one fails on every line).
fn open_batch_file(path: &str) -> Result<std::fs::File, CliError> {
    let file = std::fs::File::open(path)
        .map_err(|error| CliError::Input(format!("cannot read batch file `{path}`: {error}")))?;
    match file.metadata() {
        Ok(metadata) if metadata.is_dir() => Err(CliError::Input(format!(
            "cannot read batch file `{path}`: it is a directory; pass a JSON Lines file or - for stdin"
        ))),
        _ => Ok(file),
    }
}
