//! Sweeps: every combination of block sizes, registers, static and dynamic shared memory for one
//! arch, answered exactly as [`super::blocks_per_sm`] would answer each one, but fast.
//!
//! The driver's limits are separable: warps depend on the block size only, registers on block
//! size and registers, shared memory on static and dynamic shared memory only (the block size
//! does not enter), block and barrier slots on neither. A sweep therefore computes each
//! per-dimension table once and combines them; the checksum (`sum_blocks`) even reduces the whole
//! shared-memory dimension to one prefix table of `sum over configurations of min(k, limit)`.
//!
//! This module also parses the range syntax `start..=end:step` used by `cargo occupancy sweep`.
//! It does no I/O.

use super::{
    barriers_limit, preferred_smem_per_sm, registers_limit, resolved_max_dynamic_smem, smem_limit,
    warps_limit, CalcError, Carveout, KernelFacts,
};
use crate::arch::ArchFacts;
use std::fmt;
use std::str::FromStr;

/// An inclusive range of values with a step: `a`, `a..=b`, `a..b`, `a..=b:step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueRange {
    pub start: u32,
    pub end_inclusive: u32,
    pub step: u32,
}

/// A range that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid range `{text}`: {problem} (expected `N`, `START..=END`, `START..END` or `START..=END:STEP` with non-negative integers)")]
#[non_exhaustive]
pub struct RangeError {
    pub text: String,
    pub problem: &'static str,
}

impl ValueRange {
    /// A single value.
    pub fn single(value: u32) -> Self {
        ValueRange {
            start: value,
            end_inclusive: value,
            step: 1,
        }
    }

    /// The values, ascending.
    pub fn values(&self) -> impl Iterator<Item = u32> + '_ {
        (u64::from(self.start)..=u64::from(self.end_inclusive))
            .step_by(self.step as usize)
            .map(|value| value as u32)
    }

    /// How many values.
    pub fn len(&self) -> u64 {
        (u64::from(self.end_inclusive) - u64::from(self.start)) / u64::from(self.step) + 1
    }

    /// Never true: a range holds at least its start.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl fmt::Display for ValueRange {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end_inclusive {
            write!(formatter, "{}", self.start)
        } else {
            write!(
                formatter,
                "{}..={}:{}",
                self.start, self.end_inclusive, self.step
            )
        }
    }
}

impl FromStr for ValueRange {
    type Err = RangeError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = |problem| RangeError {
            text: text.to_string(),
            problem,
        };
        let number = |part: &str| -> Result<u32, RangeError> {
            let part = part.trim();
            if part.is_empty() || !part.bytes().all(|byte| byte.is_ascii_digit()) {
                return Err(error("not a non-negative integer"));
            }
            part.parse().map_err(|_| error("number too large"))
        };
        let (bounds, step) = match text.split_once(':') {
            Some((bounds, step)) => (bounds, number(step)?),
            None => (text, 1),
        };
        if step == 0 {
            return Err(error("step must be at least 1"));
        }
        let (start, end_inclusive) = if let Some((start, end)) = bounds.split_once("..=") {
            (number(start)?, number(end)?)
        } else if let Some((start, end)) = bounds.split_once("..") {
            let end = number(end)?;
            if end == 0 {
                return Err(error("empty range"));
            }
            (number(start)?, end - 1)
        } else {
            let value = number(bounds)?;
            (value, value)
        };
        if start > end_inclusive {
            return Err(error("empty range"));
        }
        Ok(ValueRange {
            start,
            end_inclusive,
            step,
        })
    }
}

/// What to sweep: ranges over the launch and kernel, the rest fixed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepSpec {
    pub block_threads: ValueRange,
    pub registers_per_thread: ValueRange,
    pub static_smem_bytes: ValueRange,
    pub dynamic_smem_bytes: ValueRange,
    pub barriers: u32,
    pub max_threads_per_block: Option<u32>,
    pub max_dynamic_smem_bytes: Option<u32>,
    pub carveout: Carveout,
}

/// One configuration of a sweep and its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SweepPoint {
    pub block_threads: u32,
    pub registers_per_thread: u32,
    pub static_smem_bytes: u32,
    pub dynamic_smem_bytes: u32,
    pub blocks_per_sm: u32,
}

/// A prepared sweep: per-dimension limit tables.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Sweep {
    block_threads: Vec<u32>,
    registers: Vec<u32>,
    smem_pairs: Vec<(u32, u32)>,
    /// Per block size: min of warps, block slots, barriers and launch bounds.
    block_limits: Vec<u32>,
    /// Per (block, registers), row-major: registers limit (u32::MAX = none).
    register_limits: Vec<u32>,
    /// Per (static, dynamic) pair: shared memory limit (u32::MAX = none).
    smem_limits: Vec<u32>,
}

impl Sweep {
    /// Largest block x registers or static x dynamic table a sweep builds (2^26 entries).
    pub const MAX_TABLE: u64 = 1 << 26;

    /// Builds the tables. Fails on a carveout above 100% or tables beyond [`Sweep::MAX_TABLE`].
    pub fn new(arch: &ArchFacts, spec: &SweepSpec) -> Result<Self, CalcError> {
        let preferred = preferred_smem_per_sm(arch, spec.carveout)?;
        let register_table = spec.block_threads.len() * spec.registers_per_thread.len();
        let smem_table = spec.static_smem_bytes.len() * spec.dynamic_smem_bytes.len();
        if register_table > Self::MAX_TABLE || smem_table > Self::MAX_TABLE {
            return Err(CalcError::SweepTooLarge {
                block_by_registers: register_table,
                static_by_dynamic: smem_table,
                max: Self::MAX_TABLE,
            });
        }
        let block_threads: Vec<u32> = spec.block_threads.values().collect();
        let registers: Vec<u32> = spec.registers_per_thread.values().collect();
        let barriers = barriers_limit(arch, spec.barriers).unwrap_or(u32::MAX);
        let block_limits = block_threads
            .iter()
            .map(|&block| {
                let launch_bounds = match spec.max_threads_per_block {
                    Some(max_threads) if block > max_threads => 0,
                    _ => u32::MAX,
                };
                warps_limit(arch, block)
                    .min(arch.max_blocks_per_sm)
                    .min(barriers)
                    .min(launch_bounds)
            })
            .collect();
        let mut register_limits = Vec::with_capacity(block_threads.len() * registers.len());
        for &block in &block_threads {
            for &registers_per_thread in &registers {
                let (limit, _) = registers_limit(arch, registers_per_thread, block);
                register_limits.push(limit.unwrap_or(u32::MAX));
            }
        }
        let mut smem_pairs = Vec::new();
        let mut smem_limits = Vec::new();
        for static_smem_bytes in spec.static_smem_bytes.values() {
            for dynamic_smem_bytes in spec.dynamic_smem_bytes.values() {
                let kernel = KernelFacts {
                    static_smem_bytes,
                    max_dynamic_smem_bytes: spec.max_dynamic_smem_bytes,
                    ..KernelFacts::default()
                };
                let max_dynamic = resolved_max_dynamic_smem(arch, &kernel, dynamic_smem_bytes);
                let limit = smem_limit(
                    arch,
                    static_smem_bytes,
                    dynamic_smem_bytes,
                    max_dynamic,
                    preferred,
                );
                smem_pairs.push((static_smem_bytes, dynamic_smem_bytes));
                smem_limits.push(limit.limit.unwrap_or(u32::MAX));
            }
        }
        Ok(Sweep {
            block_threads,
            registers,
            smem_pairs,
            block_limits,
            register_limits,
            smem_limits,
        })
    }

    /// Number of configurations.
    pub fn configs(&self) -> u64 {
        self.block_threads.len() as u64 * self.registers.len() as u64 * self.smem_pairs.len() as u64
    }

    /// Sum of blocks per SM over every configuration (a checksum).
    pub fn sum_blocks(&self) -> u64 {
        // Every limit but shared memory is at most the block slots (block_limits includes them).
        let cap = self.block_limits.iter().copied().max().unwrap_or(0) as usize;
        // sum_of_min[k] = sum over shared-memory configurations of min(k, limit).
        let mut count_at_least = vec![0u64; cap + 2];
        for &limit in &self.smem_limits {
            let clamped = (limit as usize).min(cap + 1);
            count_at_least[clamped] += 1;
        }
        // count_at_least[k] = number of configurations with limit >= k.
        for k in (0..=cap).rev() {
            count_at_least[k] += count_at_least[k + 1];
        }
        let mut sum_of_min = vec![0u64; cap + 1];
        for k in 1..=cap {
            sum_of_min[k] = sum_of_min[k - 1] + count_at_least[k];
        }
        let registers = self.registers.len();
        let mut sum = 0u64;
        for (block_index, &block_limit) in self.block_limits.iter().enumerate() {
            let row = &self.register_limits[block_index * registers..(block_index + 1) * registers];
            for &register_limit in row {
                sum += sum_of_min[register_limit.min(block_limit) as usize];
            }
        }
        sum
    }

    /// Calls `visit` for every configuration, blocks outermost, then registers, static and dynamic
    /// shared memory.
    pub fn for_each(&self, mut visit: impl FnMut(SweepPoint)) {
        let registers = self.registers.len();
        for (block_index, (&block_threads, &block_limit)) in self
            .block_threads
            .iter()
            .zip(&self.block_limits)
            .enumerate()
        {
            for (register_index, &registers_per_thread) in self.registers.iter().enumerate() {
                let limit =
                    self.register_limits[block_index * registers + register_index].min(block_limit);
                for (&(static_smem_bytes, dynamic_smem_bytes), &smem) in
                    self.smem_pairs.iter().zip(&self.smem_limits)
                {
                    visit(SweepPoint {
                        block_threads,
                        registers_per_thread,
                        static_smem_bytes,
                        dynamic_smem_bytes,
                        blocks_per_sm: limit.min(smem),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::lookup;
    use crate::calc::{blocks_per_sm, Launch};

    #[test]
    fn ranges_parse() {
        assert_eq!("32..=1024:32".parse::<ValueRange>().unwrap().len(), 32);
        assert_eq!("0..=255".parse::<ValueRange>().unwrap().len(), 256);
        assert_eq!("0..=232448:256".parse::<ValueRange>().unwrap().len(), 909);
        assert_eq!(
            "0..4"
                .parse::<ValueRange>()
                .unwrap()
                .values()
                .collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!("7".parse::<ValueRange>().unwrap(), ValueRange::single(7));
        for bad in [
            "",
            "-1",
            "a..=3",
            "5..=1",
            "0..=4:0",
            "0..0",
            "1..=x",
            "99999999999",
        ] {
            assert!(bad.parse::<ValueRange>().is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn ranges_round_trip(start in 0u32..100_000, extra in 0u32..100_000, step in 1u32..5_000) {
            let end = start + extra;
            let range: ValueRange = format!("{start}..={end}:{step}").parse().unwrap();
            proptest::prop_assert_eq!(range.values().count() as u64, range.len());
            proptest::prop_assert!(range.values().all(|value| value >= start && value <= end));
            proptest::prop_assert_eq!(range.to_string().parse::<ValueRange>().unwrap().values().collect::<Vec<_>>(), range.values().collect::<Vec<_>>());
        }

        #[test]
        fn range_parser_never_panics(text in "\\PC{0,24}") {
            let _ = text.parse::<ValueRange>();
        }
    }

    #[test]
    fn sweep_equals_per_config_queries() {
        for arch in crate::arch::all() {
            let spec = SweepSpec {
                block_threads: "1..=1100:73".parse().unwrap(),
                registers_per_thread: "0..=256:17".parse().unwrap(),
                static_smem_bytes: "0..=240000:15001".parse().unwrap(),
                dynamic_smem_bytes: "0..=100000:33333".parse().unwrap(),
                barriers: 3,
                max_threads_per_block: Some(640),
                max_dynamic_smem_bytes: None,
                carveout: Carveout::Percent(30),
            };
            let sweep = Sweep::new(arch, &spec).unwrap();
            let mut sum = 0u64;
            let mut configs = 0u64;
            sweep.for_each(|point| {
                let kernel = KernelFacts {
                    registers_per_thread: point.registers_per_thread,
                    static_smem_bytes: point.static_smem_bytes,
                    barriers: 3,
                    max_threads_per_block: Some(640),
                    max_dynamic_smem_bytes: None,
                };
                let launch = Launch {
                    block_threads: point.block_threads,
                    dynamic_smem_bytes: point.dynamic_smem_bytes,
                    carveout: Carveout::Percent(30),
                };
                assert_eq!(
                    point.blocks_per_sm,
                    blocks_per_sm(arch, &kernel, &launch),
                    "{point:?}"
                );
                sum += u64::from(point.blocks_per_sm);
                configs += 1;
            });
            assert_eq!(configs, sweep.configs());
            assert_eq!(sum, sweep.sum_blocks(), "{}", arch.name);
        }
        let _ = lookup("sm_90").unwrap();
    }
}
