//! Prints, per compiled arch, the blocks per SM of `grid_sum` as the attribute's const and the C++
//! header have them (both from the build) and the grid the launcher sizes on the GPUs of the
//! declaration; then sums a vector on the GPU if there is one. Without a GPU it says so and exits
//! 0; OCCUPANCY_REQUIRE_GPU=1 makes "no GPU" a failure.

use persistent_grid::{arch_number, header_blocks_per_sm, launcher_grid, GRID_SUM_RUN_OCCUPANCY};

fn main() {
    for facts in GRID_SUM_RUN_OCCUPANCY.compiled {
        let arch = arch_number(facts.arch).expect("an sm_NN arch");
        println!(
            "grid_sum on {}: {} blocks per SM (const), {} (occupancy_facts.h); grid on 132 SMs: {}, on 78 SMs: {}",
            facts.arch,
            facts.blocks_per_sm,
            header_blocks_per_sm(arch),
            launcher_grid(arch, 132, u32::MAX),
            launcher_grid(arch, 78, u32::MAX),
        );
    }
    let require_gpu = std::env::var("OCCUPANCY_REQUIRE_GPU").is_ok_and(|value| value == "1");
    if !persistent_grid::gpu_available() {
        println!("persistent-grid: no usable CUDA device here, nothing to run");
        if require_gpu {
            eprintln!("persistent-grid: OCCUPANCY_REQUIRE_GPU=1 but no GPU could be used");
            std::process::exit(1);
        }
        return;
    }
    let x: Vec<f32> = (0..1_000_003)
        .map(|index| (index % 7) as f32 - 3.0)
        .collect();
    let expected: f64 = x.iter().map(|value| f64::from(*value)).sum();
    let close = |sum: f32| (f64::from(sum) - expected).abs() < 1e-3 * expected.abs().max(1.0);
    let fail = |message: String| -> ! {
        eprintln!("persistent-grid: {message}");
        std::process::exit(1)
    };
    match persistent_grid::sum(&x) {
        Ok(sum) if close(sum) => {
            println!("persistent-grid: sum {sum} (expected {expected}), 0 wrong")
        }
        Ok(sum) => fail(format!("sum {sum}, expected {expected}")),
        Err(error) => fail(format!("CUDA error {error:?}")),
    }
    // Every block the facts say is resident launches cooperatively; one more does not.
    let (arch, sm_count) =
        persistent_grid::device().unwrap_or_else(|error| fail(format!("{error:?}")));
    let resident = header_blocks_per_sm(arch) * sm_count;
    if resident == 0 || resident >= 1024 {
        println!("persistent-grid: sm_{arch} with {sm_count} SMs: no resident grid within the launcher's workspace to try");
        return;
    }
    match persistent_grid::sum_with_grid(&x, resident) {
        Ok(sum) if close(sum) => {}
        other => fail(format!(
            "a grid of the {resident} resident blocks: {other:?}"
        )),
    }
    match persistent_grid::sum_with_grid(&x, resident + 1) {
        Err(persistent_grid::CudaError(720)) => println!(
            "persistent-grid: sm_{arch}, {sm_count} SMs: a cooperative grid of {resident} blocks (the facts' resident blocks) runs; {} fails with cudaErrorCooperativeLaunchTooLarge",
            resident + 1
        ),
        other => fail(format!("a grid of {} blocks, one more than resident: {other:?}", resident + 1)),
    }
}
