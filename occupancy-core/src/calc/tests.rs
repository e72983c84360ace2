//! Hand-worked cases and property tests of the calculator. Bit-exactness against NVIDIA's
//! `cuda_occupancy.h` is checked by `tests/differential.rs`.

use super::*;
use crate::arch::{all, lookup};
use proptest::prelude::*;

fn kernel(registers_per_thread: u32, static_smem_bytes: u32) -> KernelFacts {
    KernelFacts {
        registers_per_thread,
        static_smem_bytes,
        barriers: 1,
        max_threads_per_block: None,
        max_dynamic_smem_bytes: None,
    }
}

#[test]
fn hopper_256_threads_64_registers_is_register_bound_at_half() {
    let arch = lookup("sm_90").unwrap();
    let answer = occupancy(arch, &kernel(64, 0), &Launch::new(256));
    assert_eq!(answer.blocks_per_sm, 4);
    assert_eq!(answer.warps_per_sm, 32);
    assert_eq!(answer.occupancy, 0.5);
    assert_eq!(answer.limiters, vec![Limiter::Registers]);
    assert_eq!(answer.allocated_registers_per_block, 16384);
    assert_eq!(answer.allocated_smem_per_block, 1024);
    assert_eq!(answer.block_limits.warps, 8);
    assert_eq!(answer.block_limits.shared_memory, Some(228));
    assert_eq!(answer.block_limits.barriers, Some(64));
    // 64 -> 72 registers: 72*32 = 2304 per warp, 7 warps per sub-partition, 28 warps: 3 blocks.
    assert_eq!(answer.headroom.registers_addable, 0);
    // 56 registers: 1792 per warp, 9 warps per sub-partition, 36 warps: 4 blocks; 48: 5 blocks.
    assert_eq!(answer.headroom.registers_to_gain_block, Some(16));
    assert_eq!(answer.reason, None);
}

#[test]
fn register_file_over_the_block_limit_gives_zero_with_reason() {
    let arch = lookup("sm_90").unwrap();
    // 65 registers -> 2080 -> 2304 per warp, 32 warps = 73728 > 65536.
    let answer = occupancy(arch, &kernel(65, 0), &Launch::new(1024));
    assert_eq!(answer.blocks_per_sm, 0);
    assert!(answer.limiters.contains(&Limiter::Registers));
    assert!(answer.reason.unwrap().contains("registers per block"));
    let answer = occupancy(arch, &kernel(257, 0), &Launch::new(32));
    assert_eq!(answer.blocks_per_sm, 0);
    assert!(answer.reason.unwrap().contains("maximum of 256"));
}

#[test]
fn sub_partition_rounding_rejects_blocks_the_plain_sum_would_fit() {
    // sm_53 holds 32K registers per block. 9 warps of 112 registers: 3584 per warp,
    // 9 warps = 32256 fits, but rounded up to 12 warps (4 sub-partitions) = 43008 does not.
    let arch = lookup("sm_53").unwrap();
    assert_eq!(blocks_per_sm(arch, &kernel(112, 0), &Launch::new(288)), 0);
    assert_eq!(blocks_per_sm(arch, &kernel(112, 0), &Launch::new(256)), 2);
}

#[test]
fn gp100_has_two_sub_partitions_but_checks_blocks_with_four() {
    let arch = lookup("sm_60").unwrap();
    assert_eq!(arch.sub_partitions, 2);
    // 168 registers: 5376 per warp. 2 sub-partitions hold 32768/5376 = 6 warps each = 12;
    // 4 would hold 16384/5376 = 3 each = 12 as well. 10 warps in a block: 1 block.
    assert_eq!(blocks_per_sm(arch, &kernel(168, 0), &Launch::new(320)), 1);
    // 200 registers: 6400 per warp; 2 sub-partitions: 5 each = 10 warps -> 1 block of 10 warps;
    // but the 4-sub-partition check rounds 10 warps to 12 * 6400 = 76800 > 65536: 0 blocks.
    assert_eq!(blocks_per_sm(arch, &kernel(200, 0), &Launch::new(320)), 0);
}

#[test]
fn barriers_limit_from_hopper_on() {
    let hopper = lookup("sm_90").unwrap();
    let mut facts = kernel(0, 0);
    facts.barriers = 16;
    let answer = occupancy(hopper, &facts, &Launch::new(32));
    assert_eq!(answer.blocks_per_sm, 4);
    assert_eq!(answer.limiters, vec![Limiter::Barriers]);
    let ampere = lookup("sm_80").unwrap();
    assert_eq!(blocks_per_sm(ampere, &facts, &Launch::new(32)), 32);
    let rtx50 = lookup("sm_120").unwrap();
    assert_eq!(blocks_per_sm(rtx50, &facts, &Launch::new(32)), 1);
}

#[test]
fn carveout_maps_to_the_next_configuration() {
    let hopper = lookup("sm_90").unwrap();
    let launch = |percent| Launch {
        block_threads: 32,
        dynamic_smem_bytes: 0,
        carveout: Carveout::Percent(percent),
    };
    // 0% selects 0 KB, then the driver grows it to the 8 KB step for one block: 8 blocks of 1 KB.
    let answer = occupancy(hopper, &kernel(0, 0), &launch(0));
    assert_eq!(answer.smem_config_per_sm, 8 * 1024);
    assert_eq!(answer.blocks_per_sm, 8);
    // 50% of 228 KB = 114 KB -> 132 KB step.
    assert_eq!(
        occupancy(hopper, &kernel(0, 0), &launch(50)).smem_config_per_sm,
        132 * 1024
    );
    let turing = lookup("sm_75").unwrap();
    assert_eq!(
        occupancy(turing, &kernel(0, 1), &launch(0)).smem_config_per_sm,
        32 * 1024
    );
    assert_eq!(
        occupancy(turing, &kernel(0, 1), &launch(0)).blocks_per_sm,
        16
    );
    let bad = occupancy(hopper, &kernel(0, 0), &launch(101));
    assert_eq!(bad.blocks_per_sm, 0);
    assert!(bad.reason.unwrap().contains("above 100"));
}

#[test]
fn shared_memory_units_reserved_bytes_and_opt_in() {
    let hopper = lookup("sm_90").unwrap();
    // 1 B static + 1 KB reserved -> 1152 B in 128 B units.
    assert_eq!(
        occupancy(hopper, &kernel(0, 1), &Launch::new(32)).allocated_smem_per_block,
        1152
    );
    let volta = lookup("sm_70").unwrap();
    assert_eq!(
        occupancy(volta, &kernel(0, 1), &Launch::new(32)).allocated_smem_per_block,
        256
    );
    // The opt-in maximum fits one block; one byte more never runs.
    let launch = |dynamic_smem_bytes| Launch {
        block_threads: 128,
        dynamic_smem_bytes,
        carveout: Carveout::Default,
    };
    assert_eq!(blocks_per_sm(hopper, &kernel(0, 0), &launch(232_448)), 1);
    let over = occupancy(hopper, &kernel(0, 0), &launch(232_449));
    assert_eq!(over.blocks_per_sm, 0);
    assert_eq!(over.limiters, vec![Limiter::SharedMemory]);
    // A kernel that opted into 48 KB cannot launch with 64 KB.
    let mut facts = kernel(0, 0);
    facts.max_dynamic_smem_bytes = Some(48 * 1024);
    let not_opted = occupancy(hopper, &facts, &launch(64 * 1024));
    assert_eq!(not_opted.blocks_per_sm, 0);
    assert!(not_opted.reason.unwrap().contains("opt-in"));
}

#[test]
fn launch_bounds_and_block_sizes_that_cannot_run() {
    let hopper = lookup("sm_90").unwrap();
    let mut facts = kernel(32, 0);
    facts.max_threads_per_block = Some(128);
    let answer = occupancy(hopper, &facts, &Launch::new(256));
    assert_eq!(answer.blocks_per_sm, 0);
    assert_eq!(answer.limiters, vec![Limiter::LaunchBounds]);
    assert!(answer.reason.unwrap().contains("__launch_bounds__"));
    for block in [0, 1025, u32::MAX] {
        let answer = occupancy(hopper, &kernel(32, 0), &Launch::new(block));
        assert_eq!(answer.blocks_per_sm, 0, "{block}");
        assert!(answer.limiters.contains(&Limiter::Warps));
        assert!(answer.reason.is_some());
    }
}

#[test]
fn max_potential_block_size_matches_hand_computation() {
    let hopper = lookup("sm_90").unwrap();
    // 32 registers: 1024 threads * 2 blocks = full occupancy at the first try.
    let suggestion = max_potential_block_size(hopper, &kernel(32, 0), |_| 0, Carveout::Default);
    assert_eq!(
        suggestion,
        BlockSizeSuggestion {
            block_threads: 1024,
            blocks_per_sm: 2
        }
    );
    assert_eq!(suggestion.min_grid_blocks(132), 264);
    let mut bounded = kernel(32, 0);
    bounded.max_threads_per_block = Some(100);
    let suggestion = max_potential_block_size(hopper, &bounded, |_| 0, Carveout::Default);
    // 100 threads: 4 warps, 16 blocks = 1600 threads; 96: 21 blocks = 2016; 64: 32 blocks = 2048.
    assert_eq!(
        suggestion,
        BlockSizeSuggestion {
            block_threads: 64,
            blocks_per_sm: 32
        }
    );
}

#[test]
fn available_dynamic_smem() {
    let hopper = lookup("sm_90").unwrap();
    let facts = kernel(32, 0);
    assert_eq!(
        available_dynamic_smem_per_block(hopper, &facts, 128, 1, Carveout::Default),
        Ok(232_448)
    );
    // Two blocks share 228 KB: 116736 B each, less the 1 KB the driver reserves per block
    // (cuda_occupancy.h 13.5 subtracts it from 8.0 on; 13.0 answered 116736).
    assert_eq!(
        available_dynamic_smem_per_block(hopper, &facts, 128, 2, Carveout::Default),
        Ok(115_712)
    );
    // Before 8.0 nothing is reserved.
    let volta = lookup("sm_70").unwrap();
    assert_eq!(
        available_dynamic_smem_per_block(volta, &facts, 128, 2, Carveout::Default),
        Ok(49_152)
    );
    assert_eq!(
        available_dynamic_smem_per_block(hopper, &facts, 128, 0, Carveout::Default),
        Err(CalcError::ZeroBlocks)
    );
    assert!(matches!(
        available_dynamic_smem_per_block(hopper, &facts, 1024, 3, Carveout::Default),
        Err(CalcError::TooManyBlocks {
            requested: 3,
            resident: 2
        })
    ));
}

#[test]
fn carveout_parses() {
    assert_eq!("default".parse::<Carveout>(), Ok(Carveout::Default));
    assert_eq!("50".parse::<Carveout>(), Ok(Carveout::Percent(50)));
    assert_eq!("100%".parse::<Carveout>(), Ok(Carveout::Percent(100)));
    for bad in ["101", "-1", "x", "", "50.5"] {
        assert!(bad.parse::<Carveout>().is_err(), "{bad}");
    }
}

#[test]
fn json_names_are_snake_case() {
    let hopper = lookup("sm_90").unwrap();
    let answer = occupancy(hopper, &kernel(0, 100_000), &Launch::new(256));
    let json = serde_json::to_value(&answer).unwrap();
    assert_eq!(json["limiters"], serde_json::json!(["shared_memory"]));
    assert_eq!(json["blocks_per_sm"], 2);
}

fn arch_strategy() -> impl Strategy<Value = &'static ArchFacts> {
    (0..all().len()).prop_map(|index| &all()[index])
}

fn carveout_strategy() -> impl Strategy<Value = Carveout> {
    prop_oneof![
        Just(Carveout::Default),
        (0u8..=100).prop_map(Carveout::Percent)
    ]
}

proptest! {
    #[test]
    fn more_registers_never_give_more_blocks(
        arch in arch_strategy(), registers in 0u32..300, extra in 1u32..40,
        block in 1u32..1100, static_smem in 0u32..60_000, carveout in carveout_strategy(),
    ) {
        let launch = Launch { block_threads: block, dynamic_smem_bytes: 0, carveout };
        let fewer = blocks_per_sm(arch, &kernel(registers, static_smem), &launch);
        let more = blocks_per_sm(arch, &kernel(registers + extra, static_smem), &launch);
        prop_assert!(more <= fewer);
    }

    #[test]
    fn more_static_smem_never_gives_more_blocks_with_default_carveout(
        arch in arch_strategy(), smem in 0u32..240_000, extra in 1u32..20_000, block in 1u32..1025,
    ) {
        let launch = Launch::new(block);
        let fewer = blocks_per_sm(arch, &kernel(16, smem), &launch);
        let more = blocks_per_sm(arch, &kernel(16, smem + extra), &launch);
        prop_assert!(more <= fewer);
    }

    #[test]
    fn resident_threads_and_blocks_stay_within_the_sm(
        arch in arch_strategy(), registers in 0u32..300, block in 0u32..2000,
        static_smem in 0u32..240_000, dynamic_smem in 0u32..240_000, barriers in 0u32..20,
        carveout in carveout_strategy(),
    ) {
        let facts = KernelFacts { barriers, ..kernel(registers, static_smem) };
        let launch = Launch { block_threads: block, dynamic_smem_bytes: dynamic_smem, carveout };
        let answer = occupancy(arch, &facts, &launch);
        prop_assert!(answer.blocks_per_sm * block <= arch.max_threads_per_sm);
        prop_assert!(answer.blocks_per_sm <= arch.max_blocks_per_sm);
        prop_assert!((0.0..=1.0).contains(&answer.occupancy));
        prop_assert!(!answer.limiters.is_empty());
        prop_assert_eq!(answer.reason.is_some(), answer.blocks_per_sm == 0);
        prop_assert!(u64::from(answer.blocks_per_sm) * u64::from(answer.allocated_registers_per_block) <= u64::from(arch.regs_per_sm));
        if answer.blocks_per_sm > 0 {
            prop_assert!(u64::from(answer.blocks_per_sm) * answer.allocated_smem_per_block <= u64::from(answer.smem_config_per_sm));
        }
    }

    #[test]
    fn register_headroom_is_exact(
        arch in arch_strategy(), registers in 0u32..=255, block in 1u32..=1024,
    ) {
        let launch = Launch::new(block);
        let answer = occupancy(arch, &kernel(registers, 0), &launch);
        let blocks = answer.blocks_per_sm;
        let headroom = answer.headroom;
        if blocks > 0 {
            let at_edge = registers + headroom.registers_addable;
            prop_assert_eq!(blocks_per_sm(arch, &kernel(at_edge, 0), &launch), blocks);
            if at_edge < arch.max_regs_per_thread_accepted {
                prop_assert!(blocks_per_sm(arch, &kernel(at_edge + 1, 0), &launch) < blocks);
            }
        }
        match headroom.registers_to_gain_block {
            Some(remove) => {
                prop_assert!(remove >= 1 && remove <= registers);
                prop_assert!(blocks_per_sm(arch, &kernel(registers - remove, 0), &launch) > blocks);
                if remove > 1 {
                    prop_assert_eq!(blocks_per_sm(arch, &kernel(registers - remove + 1, 0), &launch), blocks);
                }
            }
            None => prop_assert!(blocks_per_sm(arch, &kernel(0, 0), &launch) <= blocks),
        }
    }

    #[test]
    fn smem_headroom_is_exact(
        arch in arch_strategy(), static_smem in 0u32..49_152, dynamic in 0u32..100_000,
        block in prop::sample::select(vec![32u32, 64, 128, 256]), carveout in carveout_strategy(),
    ) {
        let facts = kernel(0, static_smem);
        let launch = Launch { block_threads: block, dynamic_smem_bytes: dynamic, carveout };
        let answer = occupancy(arch, &facts, &launch);
        let blocks = answer.blocks_per_sm;
        let with_dynamic = |dynamic_smem_bytes: u32| {
            blocks_per_sm(arch, &facts, &Launch { dynamic_smem_bytes, ..launch })
        };
        if blocks > 0 {
            let edge = dynamic + answer.headroom.smem_addable_bytes;
            prop_assert_eq!(with_dynamic(edge), blocks);
            prop_assert!(with_dynamic(edge + 1) < blocks);
        }
        if let Some(remove) = answer.headroom.smem_to_gain_block_bytes {
            prop_assert!(remove >= 1 && remove <= u64::from(static_smem + dynamic));
            let remove = u32::try_from(remove).expect("at most static + dynamic");
            if remove <= dynamic {
                prop_assert!(with_dynamic(dynamic - remove) > blocks);
                prop_assert!(remove == 1 || with_dynamic(dynamic - remove + 1) <= blocks);
            }
        }
    }

    #[test]
    fn never_panics(
        registers in any::<u32>(), static_smem in any::<u32>(), dynamic in any::<u32>(),
        block in any::<u32>(), barriers in any::<u32>(), max_threads in any::<Option<u32>>(),
        max_dynamic in any::<Option<u32>>(), percent in any::<u8>(), arch in arch_strategy(),
    ) {
        let facts = KernelFacts {
            registers_per_thread: registers, static_smem_bytes: static_smem, barriers,
            max_threads_per_block: max_threads, max_dynamic_smem_bytes: max_dynamic,
        };
        let launch = Launch { block_threads: block, dynamic_smem_bytes: dynamic, carveout: Carveout::Percent(percent) };
        let _ = occupancy(arch, &facts, &launch);
        let _ = available_dynamic_smem_per_block(arch, &facts, block, barriers, Carveout::Percent(percent));
    }
}

/// The headroom search as first written: a linear walk over every register count and every
/// shared-memory unit. The fast search in `mod.rs` must give the same answer.
fn reference_headroom(
    arch: &ArchFacts,
    kernel: &KernelFacts,
    launch: &Launch,
    resources: &Resources,
) -> Headroom {
    let current = resources.limits.blocks_per_sm();
    let other_than = |skip: Limiter| resources.limits.limit_without(skip);

    // Registers: every count from 0 to the accepted maximum.
    let without_registers = other_than(Limiter::Registers);
    let blocks_with_registers = |registers: u32| -> u32 {
        let (limit, _) = registers_limit(arch, registers, launch.block_threads);
        limit.unwrap_or(u32::MAX).min(without_registers)
    };
    let registers = kernel.registers_per_thread;
    let max_registers = arch.max_regs_per_thread_accepted;
    let registers_addable = if current == 0 || registers >= max_registers {
        0
    } else {
        (registers + 1..=max_registers)
            .find(|&more| blocks_with_registers(more) < current)
            .map_or(max_registers - registers, |losing| losing - 1 - registers)
    };
    let registers_to_gain_block = (0..registers.min(max_registers + 1))
        .rev()
        .find(|&fewer| blocks_with_registers(fewer) > current)
        .map(|gaining| registers - gaining);

    // Shared memory: the allocation steps from the reserved bytes to the opt-in limit, assuming
    // the kernel opts in to the dynamic shared memory it needs.
    let without_smem = other_than(Limiter::SharedMemory);
    let unit = u64::from(arch.smem_alloc_unit);
    let reserved = u64::from(arch.reserved_smem_per_block);
    let largest_per_block = smem_limit_per_block(arch, u64::MAX);
    let preferred = preferred_smem_per_sm(arch, launch.carveout).ok();
    let blocks_at_allocation = |allocated: u64| -> u32 {
        let Some(preferred) = preferred else { return 0 };
        if allocated > largest_per_block {
            return 0;
        }
        let config = if u64::from(preferred) >= allocated {
            preferred
        } else {
            smem_config_at_least(arch, allocated).unwrap_or(0)
        };
        let limit = u64::from(config)
            .checked_div(allocated)
            .map_or(u32::MAX, saturate);
        limit.min(without_smem)
    };
    let used =
        reserved + u64::from(kernel.static_smem_bytes) + u64::from(launch.dynamic_smem_bytes);
    let allocated = round_up(used, unit);
    let smem_addable_bytes = if current == 0 {
        0
    } else {
        let mut last_kept = allocated;
        let mut candidate = allocated + unit;
        while candidate <= largest_per_block && blocks_at_allocation(candidate) >= current {
            last_kept = candidate;
            candidate += unit;
        }
        saturate(last_kept.saturating_sub(used))
    };
    let smem_to_gain_block_bytes = {
        let floor = round_up(reserved, unit);
        let mut found = None;
        // Above the largest per-block limit nothing runs: start the search there.
        let mut candidate = allocated.min(largest_per_block / unit * unit + unit);
        while candidate > floor {
            candidate = candidate.saturating_sub(unit).max(floor);
            let total = candidate.max(reserved);
            if total < used && blocks_at_allocation(candidate) > current {
                found = Some(used - total);
                break;
            }
        }
        found
    };
    Headroom {
        registers_addable,
        registers_to_gain_block,
        smem_addable_bytes,
        smem_to_gain_block_bytes,
    }
}

proptest! {
    #[test]
    fn the_fast_headroom_search_equals_the_linear_walk(
        arch in arch_strategy(), registers in 0u32..300, block in 0u32..1100,
        static_smem in 0u32..240_000, dynamic_smem in 0u32..240_000, barriers in 0u32..17,
        max_dynamic in proptest::option::of(0u32..240_000), carveout in carveout_strategy(),
    ) {
        let facts = KernelFacts {
            barriers, max_dynamic_smem_bytes: max_dynamic, ..kernel(registers, static_smem)
        };
        let launch = Launch { block_threads: block, dynamic_smem_bytes: dynamic_smem, carveout };
        let answer = occupancy(arch, &facts, &launch);
        let resources = resources(arch, &facts, &launch);
        prop_assert_eq!(answer.headroom, reference_headroom(arch, &facts, &launch, &resources));
    }
}

#[test]
fn the_reason_counts_registers_past_32_bits() {
    let arch = crate::arch::lookup("sm_90").unwrap();
    let kernel = KernelFacts {
        registers_per_thread: 255,
        ..KernelFacts::default()
    };
    let answer = occupancy(arch, &kernel, &Launch::new(u32::MAX));
    let reason = answer.reason.unwrap();
    // 8192 registers per warp (255 × 32 rounded to 256) × 134217728 warps.
    assert!(
        reason.contains("allocate 1099511627776 registers per block"),
        "{reason}"
    );
}

/// Every architecture, every warp count of a block (and blocks of 0, above the arch's maximum
/// and of u32::MAX threads), every register count to past the accepted maximum, with barriers
/// binding or not: the closed-form register headroom equals a linear walk over the counts.
#[test]
fn register_headroom_equals_the_linear_walk_everywhere() {
    let block_sizes: Vec<u32> = [0, 1, 31, 33, 1025, 4096, u32::MAX]
        .into_iter()
        .chain((1..=32).map(|warps| warps * 32))
        .collect();
    for arch in all() {
        let max = arch.max_regs_per_thread_accepted;
        for &block in &block_sizes {
            for barriers in [1, 16] {
                let launch = Launch::new(block);
                let facts = |registers| KernelFacts {
                    barriers,
                    ..kernel(registers, 0)
                };
                // Blocks at every register count; every count above the maximum gives 0.
                let walk: Vec<u32> = (0..=max + 1)
                    .map(|registers| blocks_per_sm(arch, &facts(registers), &launch))
                    .collect();
                for registers in 0..=max + 4 {
                    let current = walk[registers.min(max + 1) as usize];
                    let addable = if current == 0 || registers >= max {
                        0
                    } else {
                        (registers + 1..=max)
                            .find(|&more| walk[more as usize] < current)
                            .map_or(max - registers, |losing| losing - 1 - registers)
                    };
                    let to_gain = (0..registers.min(max + 1))
                        .rev()
                        .find(|&fewer| walk[fewer as usize] > current)
                        .map(|gaining| registers - gaining);
                    let kernel = facts(registers);
                    let answer =
                        headroom(arch, &kernel, &launch, &resources(arch, &kernel, &launch));
                    assert_eq!(
                        (answer.registers_addable, answer.registers_to_gain_block),
                        (addable, to_gain),
                        "{} block {block} barriers {barriers} registers {registers}",
                        arch.name
                    );
                }
            }
        }
    }
}
