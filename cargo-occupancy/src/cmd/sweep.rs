//! `cargo occupancy sweep`: every combination of block sizes, registers and shared memory.
//!
//! `--summary` prints `{"configs": N, "sum_blocks": S}` (S is a checksum), `--csv` one row per
//! configuration, and by default the three classic curves (occupancy against block size,
//! registers and shared memory) around one kernel point: a dimension given as one value is the
//! point's coordinate and its curve spans the arch's full range; a dimension given as a range is
//! the curve's axis and the point sits at its first value.

use occupancy_core::arch::ArchFacts;
use occupancy_core::calc::sweep::{Sweep, SweepSpec, ValueRange};
use occupancy_core::calc::{occupancy, Carveout, KernelFacts, Launch, Limiter, Occupancy};
use std::io::Write;

use crate::env::Environment;
use crate::error::{CliError, Outcome};
use crate::stdout::Stdout;

#[derive(clap::Args, Debug)]
#[command(allow_negative_numbers = true)]
pub struct Args {
    #[command(flatten)]
    target: crate::archs::TargetArgs,
    /// Threads per block: N, START..=END or START..=END:STEP.
    #[arg(long, value_name = "RANGE", default_value = "256", value_parser = parse_range)]
    block: ValueRange,
    /// Registers per thread: N or a range.
    #[arg(long, value_name = "RANGE", default_value = "32", value_parser = parse_range)]
    registers: ValueRange,
    /// Static shared memory per block in bytes: N or a range.
    #[arg(long, value_name = "RANGE", default_value = "0", value_parser = parse_range)]
    static_smem: ValueRange,
    /// Dynamic shared memory per block in bytes: N or a range.
    #[arg(long, value_name = "RANGE", default_value = "0", value_parser = parse_range)]
    dynamic_smem: ValueRange,
    /// Block barriers the kernel uses.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = crate::flags::parse_count)]
    barriers: u32,
    /// __launch_bounds__ maximum threads per block.
    #[arg(long, value_name = "THREADS", value_parser = crate::flags::parse_count)]
    max_threads: Option<u32>,
    /// Dynamic shared memory the kernel opted into (default: what each launch needs).
    #[arg(long, value_name = "BYTES", value_parser = crate::flags::parse_count)]
    max_dynamic_smem: Option<u32>,
    /// Shared memory carveout preference: default or 0..100 (percent).
    #[arg(long, default_value = "default", value_parser = parse_carveout)]
    carveout: Carveout,
    /// Print {"configs": N, "sum_blocks": S} only.
    #[arg(long, conflicts_with = "csv")]
    summary: bool,
    /// One CSV row per configuration.
    #[arg(long)]
    csv: bool,
}

fn parse_range(text: &str) -> Result<ValueRange, String> {
    text.parse()
        .map_err(|error: occupancy_core::calc::sweep::RangeError| error.to_string())
}

fn parse_carveout(text: &str) -> Result<Carveout, String> {
    text.parse()
        .map_err(|error: occupancy_core::calc::CalcError| error.to_string())
}

/// Runs `sweep`: the summary, the CSV rows, or the curves.
pub fn run(args: &Args, env: &Environment) -> Result<Outcome, CliError> {
    let target = env
        .archs
        .resolve_target(args.target.arch.as_deref(), args.target.gpu.as_deref())?;
    let arch = target.arch;
    let mut out = Stdout::lock("writing the sweep");
    if args.summary || args.csv {
        let spec = SweepSpec {
            block_threads: args.block,
            registers_per_thread: args.registers,
            static_smem_bytes: args.static_smem,
            dynamic_smem_bytes: args.dynamic_smem,
            barriers: args.barriers,
            max_threads_per_block: args.max_threads,
            max_dynamic_smem_bytes: args.max_dynamic_smem,
            carveout: args.carveout,
        };
        let sweep = Sweep::new(arch, &spec).map_err(|error| CliError::usage(error.to_string()))?;
        out.write_with(|out| {
            if args.summary {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({ "configs": sweep.configs(), "sum_blocks": sweep.sum_blocks() })
                )
            } else {
                write_csv(out, arch, &sweep)
            }
        })?;
    } else {
        out.write_with(|out| write_curves(out, arch, args))?;
    }
    out.finish()?;
    Ok(Outcome::Success)
}

fn write_csv(out: &mut impl Write, arch: &ArchFacts, sweep: &Sweep) -> std::io::Result<()> {
    writeln!(
        out,
        "block_threads,registers_per_thread,static_smem_bytes,dynamic_smem_bytes,blocks_per_sm,warps_per_sm,occupancy"
    )?;
    let mut result = Ok(());
    sweep.for_each(|point| {
        if result.is_err() {
            return;
        }
        let warps = point.blocks_per_sm * point.block_threads.div_ceil(arch.warp_size);
        result = writeln!(
            out,
            "{},{},{},{},{},{},{:.6}",
            point.block_threads,
            point.registers_per_thread,
            point.static_smem_bytes,
            point.dynamic_smem_bytes,
            point.blocks_per_sm,
            warps,
            f64::from(warps) / f64::from(arch.max_warps_per_sm)
        );
    });
    result
}

/// A curve's axis: the given range, or the arch's full range when the dimension is one value.
fn axis(given: ValueRange, full: ValueRange) -> (u32, ValueRange) {
    if given.start == given.end_inclusive {
        (given.start, full)
    } else {
        (given.start, given)
    }
}

/// The kernel point the curves pass through, and each curve's axis.
struct Curves<'a> {
    arch: &'a ArchFacts,
    args: &'a Args,
    block: u32,
    registers: u32,
    static_smem: u32,
    block_axis: ValueRange,
    register_axis: ValueRange,
    smem_axis: ValueRange,
}

impl<'a> Curves<'a> {
    /// The point and axes of `args` on `arch` (see [`axis`]).
    fn new(arch: &'a ArchFacts, args: &'a Args) -> Curves<'a> {
        let full = |end_inclusive, step| ValueRange {
            start: 0,
            end_inclusive,
            step,
        };
        let (block, block_axis) = axis(
            args.block,
            ValueRange {
                start: arch.warp_size,
                ..full(arch.max_threads_per_block, arch.warp_size)
            },
        );
        let (registers, register_axis) = axis(args.registers, full(arch.max_regs_per_thread, 1));
        let largest_smem = if arch.major >= 7 {
            arch.smem_per_block_optin
        } else {
            arch.smem_per_block
        };
        let (static_smem, smem_axis) =
            axis(args.static_smem, full(largest_smem, arch.smem_alloc_unit));
        Curves {
            arch,
            args,
            block,
            registers,
            static_smem,
            block_axis,
            register_axis,
            smem_axis,
        }
    }

    /// The answer at a block size, registers per thread and static shared memory, the other
    /// knobs as the command line gives them.
    fn occupancy_at(&self, block_threads: u32, registers: u32, static_smem: u32) -> Occupancy {
        let kernel = KernelFacts {
            registers_per_thread: registers,
            static_smem_bytes: static_smem,
            barriers: self.args.barriers,
            max_threads_per_block: self.args.max_threads,
            max_dynamic_smem_bytes: self.args.max_dynamic_smem,
        };
        let launch = Launch {
            block_threads,
            dynamic_smem_bytes: self.args.dynamic_smem.start,
            carveout: self.args.carveout,
        };
        occupancy(self.arch, &kernel, &launch)
    }

    /// The kernel point's line.
    fn write_point(&self, out: &mut impl Write) -> std::io::Result<()> {
        let (arch, block, registers, static_smem) =
            (self.arch, self.block, self.registers, self.static_smem);
        let dynamic_smem = self.args.dynamic_smem.start;
        let point = self.occupancy_at(block, registers, static_smem);
        writeln!(
            out,
            "{arch}: kernel point block {block}, {registers} registers, {static_smem} B static + {dynamic_smem} B dynamic smem -> {} blocks/SM, {:.1}% occupancy",
            point.blocks_per_sm,
            point.occupancy * 100.0
        )
    }

    /// Occupancy against block size: one line per block size.
    fn write_block_curve(&self, out: &mut impl Write) -> std::io::Result<()> {
        let (registers, static_smem) = (self.registers, self.static_smem);
        writeln!(
            out,
            "\noccupancy vs block size ({registers} registers, {static_smem} B static smem):"
        )?;
        for block_threads in self.block_axis.values() {
            let answer = self.occupancy_at(block_threads, registers, static_smem);
            writeln!(
                out,
                "  {block_threads:>5} threads {:>3} blocks {:>6.1}% {:<32} {}",
                answer.blocks_per_sm,
                answer.occupancy * 100.0,
                bar(answer.occupancy),
                limiter_names(&answer.limiters)
            )?;
        }
        Ok(())
    }

    /// Occupancy against registers per thread, in runs of the same answer.
    fn write_register_curve(&self, out: &mut impl Write) -> std::io::Result<()> {
        let (block, static_smem) = (self.block, self.static_smem);
        writeln!(
            out,
            "\noccupancy vs registers per thread (block {block}, {static_smem} B static smem):"
        )?;
        let rows = segments(self.register_axis, |value| {
            segment_answer(&self.occupancy_at(block, value, static_smem))
        });
        write_segments(out, &rows, "registers")
    }

    /// Occupancy against static shared memory per block, in runs of the same answer.
    fn write_smem_curve(&self, out: &mut impl Write) -> std::io::Result<()> {
        let (block, registers) = (self.block, self.registers);
        writeln!(
            out,
            "\noccupancy vs static shared memory per block (block {block}, {registers} registers):"
        )?;
        let rows = segments(self.smem_axis, |value| {
            segment_answer(&self.occupancy_at(block, registers, value))
        });
        write_segments(out, &rows, "B")
    }
}

/// The kernel point, then the three curves through it.
fn write_curves(out: &mut impl Write, arch: &ArchFacts, args: &Args) -> std::io::Result<()> {
    let curves = Curves::new(arch, args);
    curves.write_point(out)?;
    curves.write_block_curve(out)?;
    curves.write_register_curve(out)?;
    curves.write_smem_curve(out)
}

/// What a curve's run of values shares: blocks per SM, occupancy, the limiters' names.
fn segment_answer(answer: &Occupancy) -> (u32, f64, String) {
    (
        answer.blocks_per_sm,
        answer.occupancy,
        limiter_names(&answer.limiters),
    )
}

type Segment = (u32, u32, (u32, f64, String));

/// Runs of consecutive axis values with the same blocks and limiters.
fn segments(range: ValueRange, answer: impl Fn(u32) -> (u32, f64, String)) -> Vec<Segment> {
    let mut rows: Vec<Segment> = Vec::new();
    for value in range.values() {
        let current = answer(value);
        match rows.last_mut() {
            Some((_, last, previous)) if previous.0 == current.0 && previous.2 == current.2 => {
                *last = value
            }
            _ => rows.push((value, value, current)),
        }
    }
    rows
}

fn write_segments(out: &mut impl Write, rows: &[Segment], unit: &str) -> std::io::Result<()> {
    for (first, last, (blocks, occupancy, limiters)) in rows {
        let span = if first == last {
            format!("{first}")
        } else {
            format!("{first}..={last}")
        };
        writeln!(
            out,
            "  {:>15} {unit:<9} {blocks:>3} blocks {:>6.1}% {:<32} {limiters}",
            span,
            occupancy * 100.0,
            bar(*occupancy)
        )?;
    }
    Ok(())
}

fn bar(occupancy: f64) -> String {
    "#".repeat((occupancy * 32.0).round() as usize)
}

fn limiter_names(limiters: &[Limiter]) -> String {
    limiters
        .iter()
        .map(|limiter| limiter.name())
        .collect::<Vec<_>>()
        .join(",")
}
