//! What a minimum blocks per SM (`__launch_bounds__(T, B)`, `.minnctapersm`,
//! `min_blocks_per_sm`) does on one architecture: ptxas honours it and caps registers so that
//! `B` blocks of `T` threads fit the register file; ptxas ignores it (with a warning) when the
//! SM cannot hold `B` such blocks by threads or block slots; or ptxas honours it while shared
//! memory or barriers keep fewer blocks resident, so registers are squeezed for blocks that
//! never run.
//!
//! The limits are the calculator's (`crate::calc::resources`) with registers left out (0
//! registers per thread: no register limit), never derived again here. Read by the
//! `unreachable_bound` check (`bounds.rs`) and by the notes of a spilling kernel (`launch.rs`).

use crate::arch::ArchFacts;
use crate::calc::{self, Carveout, KernelFacts, Launch, Limiter, Resources};
use crate::ptxas::KernelRecord;

/// A minimum blocks per SM and the block size it is for (the product of `.maxntid` or
/// `.reqntid`, or the declaration's `block`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Minimum {
    /// Blocks per SM asked for.
    pub blocks: u32,
    /// Threads of each block.
    pub threads: u32,
}

/// What becomes of a [`Minimum`] on one architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    /// It can take effect: the SM holds that many blocks by every resource but registers.
    Honoured,
    /// ptxas ignores it: `by` (warps, i.e. threads per SM, and/or block slots) holds fewer
    /// blocks; `largest` is the largest minimum ptxas honours (0: none).
    Ignored { by: Vec<Limiter>, largest: u32 },
    /// ptxas caps registers for it, but `by` (shared memory and/or barriers) lets only
    /// `largest` blocks reside (at least 1).
    Capped {
        by: Vec<Limiter>,
        largest: u32,
        resources: Resources,
    },
}

/// The kernel with registers left out: ptxas's record's shared memory and barriers (an entry
/// without a barrier count is assumed to use 1, as the driver does), no bounds.
fn facts_without_registers(record: &KernelRecord) -> KernelFacts {
    KernelFacts {
        registers_per_thread: 0,
        static_smem_bytes: u32::try_from(record.static_smem_bytes).unwrap_or(u32::MAX),
        barriers: record.barriers.unwrap_or(u32::from(record.entry)),
        max_threads_per_block: None,
        max_dynamic_smem_bytes: None,
    }
}

/// Whether `minimum` can take effect on `arch` for the kernel of `record`, launched with
/// `dynamic_smem_bytes` of dynamic shared memory (the driver's default carveout, as the build
/// and `cargo occupancy check` launch). A launch where no block fits at all is `Honoured`
/// here: `unlaunchable` reports it.
pub(crate) fn reach(
    arch: &ArchFacts,
    minimum: Minimum,
    record: &KernelRecord,
    dynamic_smem_bytes: u32,
) -> Reach {
    let launch = Launch {
        block_threads: minimum.threads,
        dynamic_smem_bytes,
        carveout: Carveout::Default,
    };
    let resources = calc::resources(arch, &facts_without_registers(record), &launch);
    let limits = resources.limits;
    let below = |limiters: &[Limiter]| -> Vec<Limiter> {
        limits
            .by_resource()
            .into_iter()
            .filter(|(limiter, limit)| {
                limiters.contains(limiter) && limit.is_some_and(|limit| limit < minimum.blocks)
            })
            .map(|(limiter, _)| limiter)
            .collect()
    };
    let ignored_by = below(&[Limiter::Warps, Limiter::Blocks]);
    if !ignored_by.is_empty() {
        return Reach::Ignored {
            by: ignored_by,
            largest: limits.warps.min(limits.blocks),
        };
    }
    let resident = limits.blocks_per_sm();
    if resident == 0 || resident >= minimum.blocks {
        return Reach::Honoured;
    }
    Reach::Capped {
        by: below(&[Limiter::SharedMemory, Limiter::Barriers]),
        largest: resident,
        resources,
    }
}

/// The largest minimum blocks per SM that takes effect for blocks of `threads` on `arch`: what
/// every resource but registers lets reside (ptxas honours no more by threads and block slots,
/// and shared memory and barriers keep more from residing). 0 when no block fits.
pub(crate) fn largest_effective(
    arch: &ArchFacts,
    threads: u32,
    record: &KernelRecord,
    dynamic_smem_bytes: u32,
) -> u32 {
    let launch = Launch {
        block_threads: threads,
        dynamic_smem_bytes,
        carveout: Carveout::Default,
    };
    calc::resources(arch, &facts_without_registers(record), &launch)
        .limits
        .blocks_per_sm()
}

/// Why ptxas ignores `minimum` on `arch`: `4 blocks of 1024 threads need 4096 threads per SM,
/// more than sm_80's 2048` and/or `sm_86 has 16 block slots per SM`.
pub(crate) fn ignored_because(arch: &ArchFacts, minimum: Minimum, by: &[Limiter]) -> String {
    let mut reasons = Vec::new();
    if by.contains(&Limiter::Warps) {
        let warps = calc::warps_per_block(arch, minimum.threads);
        let needed = u64::from(minimum.blocks) * u64::from(warps) * u64::from(arch.warp_size);
        let rounded = if minimum.threads == warps * arch.warp_size {
            String::new()
        } else {
            format!(" ({warps} warps each)")
        };
        reasons.push(format!(
            "{} blocks of {} threads{rounded} need {needed} threads per SM, more than {}'s {}",
            minimum.blocks, minimum.threads, arch.name, arch.max_threads_per_sm
        ));
    }
    if by.contains(&Limiter::Blocks) {
        reasons.push(format!(
            "{} has {} block slots per SM",
            arch.name, arch.max_blocks_per_sm
        ));
    }
    reasons.join(", and ")
}

/// What caps a honoured minimum below itself: `shared memory`, `barriers`, or both.
pub(crate) fn capped_by_words(by: &[Limiter]) -> String {
    by.iter()
        .map(|limiter| match limiter {
            Limiter::SharedMemory => "shared memory",
            Limiter::Barriers => "barriers",
            other => other.name(),
        })
        .collect::<Vec<_>>()
        .join(" and ")
}

/// How each resource of `by` caps the blocks, with its figures.
pub(crate) fn capped_because(
    arch: &ArchFacts,
    record: &KernelRecord,
    dynamic_smem_bytes: u32,
    by: &[Limiter],
    resources: &Resources,
) -> Vec<String> {
    let limits = &resources.limits;
    by.iter()
        .filter_map(|limiter| match limiter {
            Limiter::SharedMemory => Some(format!(
                "shared memory: {} bytes per block ({} static + {dynamic_smem_bytes} dynamic + {} reserved by the driver, in units of {}) fit {} times in the {} bytes per SM of {}",
                resources.allocated_smem_per_block,
                record.static_smem_bytes,
                arch.reserved_smem_per_block,
                arch.smem_alloc_unit,
                limits.shared_memory.unwrap_or(0),
                resources.smem_config_per_sm,
                arch.name
            )),
            Limiter::Barriers => Some(format!(
                "barriers: {} per block fit {} times in the {} per SM of {}",
                record.barriers.unwrap_or(1),
                limits.barriers.unwrap_or(0),
                arch.barriers_per_sm,
                arch.name
            )),
            _ => None,
        })
        .collect()
}

/// The most registers per thread with which `blocks` blocks of `threads` fit the register file
/// (per-warp allocation granularity included): the cap ptxas works under for
/// `__launch_bounds__(threads, blocks)`.
pub(crate) fn register_budget(arch: &ArchFacts, threads: u32, blocks: u32) -> u32 {
    let warps = u64::from(threads.div_ceil(arch.warp_size).max(1)) * u64::from(blocks.max(1));
    let per_warp = u64::from(arch.regs_per_sm) / warps;
    let per_warp = per_warp / u64::from(arch.reg_alloc_unit_per_warp)
        * u64::from(arch.reg_alloc_unit_per_warp);
    let per_thread = per_warp / u64::from(arch.warp_size);
    per_thread.min(u64::from(arch.max_regs_per_thread)) as u32
}

/// ptxas's warning that it dropped the kernel's minimum blocks per SM, when the record has it:
/// out of range (`... minnctapersm will be ignored`, naming the kernel), or without a block size
/// (`.minnctapersm is ignored when neither .maxntid nor .reqntid is specified.`, naming the PTX
/// line; the build gives it to the kernel whose PTX has that shape).
pub(crate) fn ignored_warning(record: &KernelRecord) -> Option<&str> {
    record.warnings.iter().map(String::as_str).find(|warning| {
        warning.contains("minnctapersm will be ignored")
            || warning.contains(crate::ptxas::WITHOUT_BLOCK_WARNING)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::lookup;
    use crate::ptxas::RecordSource;

    const ARCHS: [&str; 6] = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"];

    fn record(static_smem_bytes: u64, barriers: u32) -> KernelRecord {
        let mut record = KernelRecord::new("k", None, "sm_80".into(), true, RecordSource::PtxasLog);
        record.registers = Some(32);
        record.barriers = Some(barriers);
        record.static_smem_bytes = static_smem_bytes;
        record
    }

    /// The largest minimum each architecture leaves a bound with, `None` where it takes effect,
    /// and whether ptxas ignores it there.
    fn largest_per_arch(minimum: Minimum, record: &KernelRecord) -> Vec<Option<(u32, bool)>> {
        ARCHS
            .iter()
            .map(
                |arch| match reach(lookup(arch).unwrap(), minimum, record, 0) {
                    Reach::Honoured => None,
                    Reach::Ignored { largest, .. } => Some((largest, true)),
                    Reach::Capped { largest, .. } => Some((largest, false)),
                },
            )
            .collect()
    }

    #[test]
    fn more_threads_than_an_sm_holds_are_ignored_on_every_arch() {
        let minimum = Minimum {
            blocks: 4,
            threads: 1024,
        };
        assert_eq!(
            largest_per_arch(minimum, &record(0, 1)),
            [
                Some((2, true)),
                Some((1, true)),
                Some((1, true)),
                Some((2, true)),
                Some((2, true)),
                Some((1, true))
            ]
        );
        let Reach::Ignored { by, .. } = reach(lookup("sm_86").unwrap(), minimum, &record(0, 1), 0)
        else {
            panic!("ignored")
        };
        assert_eq!(by, [Limiter::Warps]);
        assert_eq!(
            ignored_because(lookup("sm_86").unwrap(), minimum, &by),
            "4 blocks of 1024 threads need 4096 threads per SM, more than sm_86's 1536"
        );
    }

    /// ptxas counts whole warps: 20 blocks of 100 threads are 20 x 4 warps = 2560 threads on
    /// sm_80 (it warns there), though 20 x 100 = 2000 would fit.
    #[test]
    fn threads_are_counted_in_whole_warps() {
        let minimum = Minimum {
            blocks: 20,
            threads: 100,
        };
        let sm_80 = lookup("sm_80").unwrap();
        let Reach::Ignored { by, largest } = reach(sm_80, minimum, &record(0, 1), 0) else {
            panic!("ignored")
        };
        assert_eq!((by.as_slice(), largest), ([Limiter::Warps].as_slice(), 16));
        assert_eq!(
            ignored_because(sm_80, minimum, &by),
            "20 blocks of 100 threads (4 warps each) need 2560 threads per SM, more than sm_80's 2048"
        );
    }

    #[test]
    fn more_blocks_than_block_slots_are_ignored() {
        let minimum = Minimum {
            blocks: 24,
            threads: 64,
        };
        assert_eq!(
            largest_per_arch(minimum, &record(0, 0)),
            [None, Some((16, true)), None, None, None, None]
        );
        let sm_86 = lookup("sm_86").unwrap();
        assert_eq!(
            ignored_because(sm_86, minimum, &[Limiter::Blocks]),
            "sm_86 has 16 block slots per SM"
        );
    }

    #[test]
    fn shared_memory_caps_a_minimum_ptxas_applies() {
        // 48 KiB static + 1 KiB reserved per block.
        let minimum = Minimum {
            blocks: 5,
            threads: 256,
        };
        let record = record(49152, 1);
        assert_eq!(
            largest_per_arch(minimum, &record),
            [
                Some((3, false)),
                Some((2, false)),
                Some((2, false)),
                Some((4, false)),
                Some((4, false)),
                Some((2, false))
            ]
        );
        let sm_80 = lookup("sm_80").unwrap();
        let Reach::Capped { by, resources, .. } = reach(sm_80, minimum, &record, 0) else {
            panic!("capped")
        };
        assert_eq!(by, [Limiter::SharedMemory]);
        assert_eq!(capped_by_words(&by), "shared memory");
        assert_eq!(
            capped_because(sm_80, &record, 0, &by, &resources),
            ["shared memory: 50176 bytes per block (49152 static + 0 dynamic + 1024 reserved by the driver, in units of 128) fit 3 times in the 167936 bytes per SM of sm_80"]
        );
        // The launch's dynamic shared memory counts: 16 KiB more leaves 2 on sm_80.
        assert!(matches!(
            reach(sm_80, minimum, &record, 16384),
            Reach::Capped { largest: 2, .. }
        ));
        // Reachable minimums: nothing.
        let two = Minimum {
            blocks: 2,
            threads: 256,
        };
        assert_eq!(largest_per_arch(two, &record), [None; 6]);
    }

    #[test]
    fn barriers_cap_a_minimum_from_sm_90() {
        // 16 barriers per block: sm_90's 64 barriers per SM hold 4 such blocks.
        let record = record(0, 16);
        let minimum = Minimum {
            blocks: 8,
            threads: 128,
        };
        let sm_90 = lookup("sm_90").unwrap();
        let Reach::Capped {
            by,
            largest,
            resources,
        } = reach(sm_90, minimum, &record, 0)
        else {
            panic!("capped")
        };
        assert_eq!(
            (by.as_slice(), largest),
            ([Limiter::Barriers].as_slice(), 4)
        );
        assert_eq!(
            capped_because(sm_90, &record, 0, &by, &resources),
            ["barriers: 16 per block fit 4 times in the 64 per SM of sm_90"]
        );
        // Before 9.0 barriers do not limit blocks.
        assert_eq!(
            reach(lookup("sm_80").unwrap(), minimum, &record, 0),
            Reach::Honoured
        );
    }

    #[test]
    fn the_warning_is_found_in_either_form() {
        let mut record = record(0, 1);
        assert_eq!(ignored_warning(&record), None);
        for warning in [
            "ptxas warning : Value of threads per SM for entry k is out of range. .minnctapersm will be ignored",
            "ptxas warning : Value of minnctapersm for entry k is out of range. minnctapersm will be ignored",
            "ptxas k.ptx, line 202; warning : .minnctapersm is ignored when neither .maxntid nor .reqntid is specified.",
        ] {
            record.warnings = vec!["ptxas warning : something else".into(), warning.into()];
            assert_eq!(ignored_warning(&record), Some(warning));
        }
    }
}
