//! The three occupancy curves NVIDIA's occupancy calculator spreadsheet draws, computed with
//! [`crate::calc`] around one kernel's point: occupancy against threads per block, against
//! registers per thread, and against shared memory per block, each with the kernel's current
//! point and the cliffs (where the number of resident blocks changes).
//!
//! Curves are step functions; [`Curve::steps`] gives them as runs of equal blocks per SM, which
//! is what the text curves of `explain` print and what the SVG charts draw.

use super::table::format_bytes;
use crate::arch::ArchFacts;
use crate::calc::{self, Carveout, KernelFacts, Launch};

/// Which resource the x axis varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Axis {
    /// Threads per block, in whole warps.
    BlockSize,
    /// Registers per thread.
    Registers,
    /// Shared memory per block (static + dynamic), in bytes.
    SharedMemory,
}

impl Axis {
    /// Every axis, in the spreadsheet's order.
    pub const ALL: [Axis; 3] = [Axis::BlockSize, Axis::Registers, Axis::SharedMemory];

    /// The axis title.
    pub fn title(self) -> &'static str {
        match self {
            Axis::BlockSize => "threads per block",
            Axis::Registers => "registers per thread",
            Axis::SharedMemory => "shared memory per block (bytes)",
        }
    }

    /// A short name for ids and headings.
    pub fn slug(self) -> &'static str {
        match self {
            Axis::BlockSize => "block",
            Axis::Registers => "registers",
            Axis::SharedMemory => "smem",
        }
    }
}

/// An x value of an axis for labels: `256 threads`, `40 regs`, `4 KiB`.
pub(crate) fn format_x(axis: Axis, x: u64) -> String {
    match axis {
        Axis::BlockSize => format!("{x} threads"),
        Axis::Registers => format!("{x} regs"),
        Axis::SharedMemory => format_bytes(x),
    }
}

/// One evaluated point.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CurvePoint {
    /// The x value (threads, registers or bytes).
    pub x: u64,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Occupancy, 0..=1.
    pub occupancy: f64,
    /// The binding resources at this point.
    pub limiters: Vec<String>,
}

/// A run of x values with the same blocks per SM.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Step {
    /// First x of the run.
    pub x_first: u64,
    /// Last x of the run.
    pub x_last: u64,
    /// Resident blocks per SM over the run.
    pub blocks_per_sm: u32,
    /// Occupancy over the run (at `x_first`; constant except on the block-size axis).
    pub occupancy: f64,
    /// Binding resources at `x_first`.
    pub limiters: Vec<String>,
}

/// One curve and the kernel's position on it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Curve {
    /// What varies.
    pub axis: Axis,
    /// Every evaluated point, ascending in x.
    pub points: Vec<CurvePoint>,
    /// The kernel's current x.
    pub current_x: u64,
    /// The x axis maximum (the arch's or the kernel's limit).
    pub x_max: u64,
}

impl Curve {
    /// The point at the kernel's current x (or the nearest evaluated one below it).
    pub fn current(&self) -> Option<&CurvePoint> {
        self.points
            .iter()
            .rev()
            .find(|point| point.x <= self.current_x)
            .or(self.points.first())
    }

    /// Runs of equal blocks per SM (on the block-size axis: equal occupancy as well).
    pub fn steps(&self) -> Vec<Step> {
        let mut steps: Vec<Step> = Vec::new();
        for point in &self.points {
            let same = steps.last().is_some_and(|step| {
                step.blocks_per_sm == point.blocks_per_sm
                    && (self.axis != Axis::BlockSize
                        || (step.occupancy - point.occupancy).abs() < 1e-12)
            });
            if same {
                if let Some(step) = steps.last_mut() {
                    step.x_last = point.x;
                }
            } else {
                steps.push(Step {
                    x_first: point.x,
                    x_last: point.x,
                    blocks_per_sm: point.blocks_per_sm,
                    occupancy: point.occupancy,
                    limiters: point.limiters.clone(),
                });
            }
        }
        steps
    }

    /// The runs just below and just above the kernel's current run: where removing (or adding)
    /// the resource changes blocks per SM. `(below, current, above)`.
    pub fn neighbours(&self) -> (Option<Step>, Option<Step>, Option<Step>) {
        let steps = self.steps();
        let Some(index) = steps
            .iter()
            .position(|step| step.x_first <= self.current_x && self.current_x <= step.x_last)
        else {
            return (None, None, None);
        };
        let below = index
            .checked_sub(1)
            .and_then(|before| steps.get(before).cloned());
        (
            below,
            steps.get(index).cloned(),
            steps.get(index + 1).cloned(),
        )
    }

    /// The x values where blocks per SM change (the first x of every run after the first).
    pub fn cliffs(&self) -> Vec<u64> {
        let steps = self.steps();
        steps
            .windows(2)
            .filter(|pair| pair[0].blocks_per_sm != pair[1].blocks_per_sm)
            .map(|pair| pair[1].x_first)
            .collect()
    }
}

/// The kernel and launch the curves are drawn around.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CurveInput {
    /// The kernel's facts (registers, static shared memory, barriers, bounds).
    pub kernel: KernelFacts,
    /// The launch (block, dynamic shared memory, carveout).
    pub launch: Launch,
}

fn evaluate(arch: &ArchFacts, kernel: &KernelFacts, launch: &Launch, x: u64) -> CurvePoint {
    let answer = calc::occupancy(arch, kernel, launch);
    CurvePoint {
        x,
        blocks_per_sm: answer.blocks_per_sm,
        occupancy: answer.occupancy,
        limiters: answer
            .limiters
            .iter()
            .map(|limiter| limiter.name().to_string())
            .collect(),
    }
}

/// Occupancy against threads per block: every multiple of 32 up to the arch's (or the kernel's
/// `__launch_bounds__`) maximum, plus the current block when it is not a multiple of 32.
pub(crate) fn block_size_curve(arch: &ArchFacts, input: &CurveInput) -> Curve {
    let x_max = input
        .kernel
        .max_threads_per_block
        .unwrap_or(arch.max_threads_per_block)
        .min(arch.max_threads_per_block);
    let mut xs: Vec<u32> = (1..=x_max / arch.warp_size)
        .map(|warps| warps * arch.warp_size)
        .collect();
    if !xs.contains(&input.launch.block_threads)
        && input.launch.block_threads > 0
        && input.launch.block_threads <= x_max
    {
        xs.push(input.launch.block_threads);
        xs.sort_unstable();
    }
    let points = xs
        .into_iter()
        .map(|block| {
            let launch = Launch {
                block_threads: block,
                ..input.launch
            };
            evaluate(arch, &input.kernel, &launch, u64::from(block))
        })
        .collect();
    Curve {
        axis: Axis::BlockSize,
        points,
        current_x: u64::from(input.launch.block_threads),
        x_max: u64::from(x_max),
    }
}

/// Occupancy against registers per thread, 1 to the arch's maximum.
pub(crate) fn registers_curve(arch: &ArchFacts, input: &CurveInput) -> Curve {
    let x_max = arch.max_regs_per_thread;
    let points = (1..=x_max)
        .map(|registers| {
            let kernel = KernelFacts {
                registers_per_thread: registers,
                ..input.kernel
            };
            evaluate(arch, &kernel, &input.launch, u64::from(registers))
        })
        .collect();
    Curve {
        axis: Axis::Registers,
        points,
        current_x: u64::from(input.kernel.registers_per_thread),
        x_max: u64::from(x_max),
    }
}

/// Occupancy against shared memory per block (static + dynamic, the kernel opting in to what it
/// needs), 0 to the arch's opt-in maximum in the arch's allocation unit, plus the current amount
/// as one more point when it is above that (nothing fits there; the steps stop at the maximum, so
/// the curve has at most a few thousand points whatever the input says).
pub(crate) fn shared_memory_curve(arch: &ArchFacts, input: &CurveInput) -> Curve {
    let current =
        u64::from(input.kernel.static_smem_bytes) + u64::from(input.launch.dynamic_smem_bytes);
    let optin_max = u64::from(arch.smem_per_block_optin);
    let x_max = optin_max.max(current);
    let unit = u64::from(arch.smem_alloc_unit.max(1));
    let mut xs: Vec<u64> = (0..=optin_max / unit).map(|units| units * unit).collect();
    if !xs.contains(&current) {
        xs.push(current);
        xs.sort_unstable();
    }
    let points = xs
        .into_iter()
        .map(|bytes| {
            // The total as dynamic shared memory on top of no static: the driver adds them.
            let kernel = KernelFacts {
                static_smem_bytes: 0,
                max_dynamic_smem_bytes: None,
                ..input.kernel
            };
            let launch = Launch {
                dynamic_smem_bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
                ..input.launch
            };
            evaluate(arch, &kernel, &launch, bytes)
        })
        .collect();
    Curve {
        axis: Axis::SharedMemory,
        points,
        current_x: current,
        x_max,
    }
}

/// The three curves, in the spreadsheet's order.
pub(crate) fn all_curves(arch: &ArchFacts, input: &CurveInput) -> [Curve; 3] {
    [
        block_size_curve(arch, input),
        registers_curve(arch, input),
        shared_memory_curve(arch, input),
    ]
}

/// A carveout from the report's percent (`None`: the driver's default).
pub(crate) fn carveout_from_percent(percent: Option<u32>) -> Carveout {
    match percent {
        Some(percent) => Carveout::Percent(u8::try_from(percent.min(255)).unwrap_or(u8::MAX)),
        None => Carveout::Default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::lookup;

    fn input(registers: u32, block: u32) -> CurveInput {
        CurveInput {
            kernel: KernelFacts {
                registers_per_thread: registers,
                barriers: 1,
                ..KernelFacts::default()
            },
            launch: Launch::new(block),
        }
    }

    #[test]
    fn shared_memory_beyond_every_limit_is_one_point_not_billions() {
        let arch = lookup("sm_90").unwrap();
        let mut huge = input(32, 256);
        huge.kernel.static_smem_bytes = u32::MAX;
        huge.launch.dynamic_smem_bytes = u32::MAX;
        let curve = shared_memory_curve(arch, &huge);
        let steps = u64::from(arch.smem_per_block_optin / arch.smem_alloc_unit);
        assert_eq!(curve.points.len() as u64, steps + 2);
        assert_eq!(curve.current_x, 2 * u64::from(u32::MAX));
        assert_eq!(curve.x_max, curve.current_x);
        assert_eq!(curve.points.last().unwrap().blocks_per_sm, 0);
    }

    #[test]
    fn every_curve_point_is_the_calculator_answer() {
        let arch = lookup("sm_90").unwrap();
        let input = input(64, 256);
        for curve in all_curves(arch, &input) {
            for point in &curve.points {
                let (kernel, launch) = match curve.axis {
                    Axis::BlockSize => (
                        input.kernel,
                        Launch {
                            block_threads: point.x as u32,
                            ..input.launch
                        },
                    ),
                    Axis::Registers => (
                        KernelFacts {
                            registers_per_thread: point.x as u32,
                            ..input.kernel
                        },
                        input.launch,
                    ),
                    Axis::SharedMemory => (
                        KernelFacts {
                            static_smem_bytes: 0,
                            ..input.kernel
                        },
                        Launch {
                            dynamic_smem_bytes: point.x as u32,
                            ..input.launch
                        },
                    ),
                };
                assert_eq!(
                    point.blocks_per_sm,
                    calc::blocks_per_sm(arch, &kernel, &launch),
                    "{:?} x={}",
                    curve.axis,
                    point.x
                );
            }
        }
    }

    #[test]
    fn register_cliff_of_a_64_register_kernel_on_hopper() {
        // 256 threads × 64 registers = 16384 registers per block: 4 blocks of 65536. At 65
        // registers a warp allocates 72 × 32 = 2304 registers, 18432 per block: 3 blocks.
        let arch = lookup("sm_90").unwrap();
        let curve = registers_curve(arch, &input(64, 256));
        assert_eq!(curve.current().unwrap().blocks_per_sm, 4);
        assert!(curve.cliffs().contains(&65), "{:?}", curve.cliffs());
        let step = curve
            .steps()
            .into_iter()
            .find(|step| step.x_first <= 64 && 64 <= step.x_last)
            .unwrap();
        assert_eq!((step.x_first, step.x_last, step.blocks_per_sm), (49, 64, 4));
    }

    #[test]
    fn steps_cover_the_axis_without_gaps() {
        let arch = lookup("sm_80").unwrap();
        for curve in all_curves(arch, &input(40, 128)) {
            let steps = curve.steps();
            assert_eq!(
                steps.first().unwrap().x_first,
                curve.points.first().unwrap().x
            );
            assert_eq!(steps.last().unwrap().x_last, curve.points.last().unwrap().x);
            for pair in steps.windows(2) {
                assert!(pair[0].x_last < pair[1].x_first);
            }
        }
    }
}
