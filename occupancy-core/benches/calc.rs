//! Single-query benchmarks of the calculator (divan): `cargo bench -p occupancy-core --bench calc`.
//! The whole-sweep comparison against cuda_occupancy.h is `scripts/bench-sweep.sh`.

use divan::black_box;
use occupancy_core::arch::lookup;
use occupancy_core::calc::{
    available_dynamic_smem_per_block, blocks_per_sm, max_potential_block_size, occupancy,
    sweep::{Sweep, SweepSpec},
    Carveout, KernelFacts, Launch,
};

fn main() {
    divan::main();
}

fn kernel() -> KernelFacts {
    KernelFacts {
        registers_per_thread: 64,
        static_smem_bytes: 12_000,
        barriers: 1,
        max_threads_per_block: None,
        max_dynamic_smem_bytes: None,
    }
}

#[divan::bench(args = ["sm_60", "sm_80", "sm_90", "sm_120"])]
fn blocks_per_sm_only(bencher: divan::Bencher, arch_name: &str) {
    let arch = lookup(arch_name).unwrap();
    let launch = Launch {
        block_threads: 256,
        dynamic_smem_bytes: 4096,
        carveout: Carveout::Percent(50),
    };
    let kernel = kernel();
    bencher.bench(|| blocks_per_sm(black_box(arch), black_box(&kernel), black_box(&launch)));
}

#[divan::bench(args = ["sm_60", "sm_80", "sm_90", "sm_120"])]
fn full_answer_with_headroom(bencher: divan::Bencher, arch_name: &str) {
    let arch = lookup(arch_name).unwrap();
    let launch = Launch {
        block_threads: 256,
        dynamic_smem_bytes: 4096,
        carveout: Carveout::Default,
    };
    let kernel = kernel();
    bencher.bench(|| occupancy(black_box(arch), black_box(&kernel), black_box(&launch)).occupancy);
}

#[divan::bench]
fn max_potential_block_size_sm_90() -> u32 {
    let arch = lookup("sm_90").unwrap();
    max_potential_block_size(
        black_box(arch),
        black_box(&kernel()),
        |_| 0,
        Carveout::Default,
    )
    .block_threads
}

#[divan::bench]
fn available_dynamic_smem_sm_90() -> u32 {
    let arch = lookup("sm_90").unwrap();
    available_dynamic_smem_per_block(
        black_box(arch),
        black_box(&kernel()),
        256,
        2,
        Carveout::Default,
    )
    .unwrap()
}

#[divan::bench]
fn lookup_arch_name() -> u32 {
    lookup(black_box("sm_90a")).unwrap().major
}

fn hopper_sweep() -> SweepSpec {
    SweepSpec {
        block_threads: "32..=1024:32".parse().unwrap(),
        registers_per_thread: "0..=255".parse().unwrap(),
        static_smem_bytes: "0..=232448:256".parse().unwrap(),
        dynamic_smem_bytes: "0".parse().unwrap(),
        barriers: 1,
        max_threads_per_block: None,
        max_dynamic_smem_bytes: None,
        carveout: Carveout::Default,
    }
}

/// The 7,446,528-configuration checksum through the per-dimension tables and prefix sums.
#[divan::bench(sample_count = 20)]
fn sweep_summary_7_446_528_configs() -> u64 {
    let arch = lookup("sm_90").unwrap();
    Sweep::new(arch, black_box(&hopper_sweep()))
        .unwrap()
        .sum_blocks()
}

/// The same sweep visiting every configuration (what `--csv` does, without the formatting).
#[divan::bench(sample_count = 10)]
fn sweep_visit_every_config_7_446_528() -> u64 {
    let arch = lookup("sm_90").unwrap();
    let mut sum = 0u64;
    Sweep::new(arch, black_box(&hopper_sweep()))
        .unwrap()
        .for_each(|point| sum += u64::from(point.blocks_per_sm));
    sum
}
