//! SAXPY with cudarc: the PTX occupancy-build compiled (and checked) is loaded at run time, and
//! the launch comes from what the build checked: a persistent grid of exactly the blocks that
//! stay resident on this GPU (`SAXPY_OCCUPANCY.persistent_grid_on`), from the compiled facts the
//! attribute put into the const.

use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;

mod ptx {
    include!(concat!(env!("OUT_DIR"), "/occupancy_ptx.rs"));
}

// The kernel is loaded by name from the PTX; this body-less stub carries its declaration.
#[occupancy::kernel(
    block = 256,
    min_blocks_per_sm = 4,
    min_occupancy = 0.5,
    max_spill_bytes = 0
)]
fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // What the build compiled and checked, per target arch: no GPU needed to know it.
    for facts in SAXPY_OCCUPANCY.compiled {
        println!(
            "saxpy compiled for {}: {} registers, {} blocks of {} threads per SM ({:.1}% occupancy), persistent grid on 132 SMs: {:?}",
            facts.arch,
            facts.registers,
            facts.blocks_per_sm,
            facts.block_threads,
            facts.occupancy * 100.0,
            SAXPY_OCCUPANCY.persistent_grid(132, facts.arch)
        );
    }
    // Without a driver, cudarc's dynamic loading panics; that is "no GPU" here, not a crash.
    // OCCUPANCY_REQUIRE_GPU=1 (GPU verification runs) turns "no GPU" into a failure.
    let require_gpu = std::env::var("OCCUPANCY_REQUIRE_GPU").is_ok_and(|value| value == "1");
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {})); // cudarc's "library not found" panic is reported below
    let context = std::panic::catch_unwind(|| CudaContext::new(0));
    std::panic::set_hook(default_hook);
    let ctx = match context {
        Ok(Ok(ctx)) => ctx,
        other => {
            let why = match other {
                Ok(Err(error)) => format!("{error:?}"),
                _ => "the CUDA driver library could not be loaded".to_string(),
            };
            println!(
                "saxpy: no usable CUDA device ({why}); the PTX was built and checked at build time"
            );
            if require_gpu {
                return Err("OCCUPANCY_REQUIRE_GPU=1 but no GPU could be used".into());
            }
            return Ok(());
        }
    };
    let stream = ctx.default_stream();
    let module = ctx.load_module(Ptx::from_src(ptx::SAXPY))?;
    let function = module.load_function(SAXPY_OCCUPANCY.kernel_name)?;

    // Random inputs (a fixed-seed xorshift, so a failure can be reproduced), 2^20 + 3 elements so
    // the last block is partial and the kernel's bounds check is exercised.
    let n: u32 = (1 << 20) + 3;
    let a = 1.75f32;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    let x: Vec<f32> = (0..n).map(|_| random()).collect();
    let y: Vec<f32> = (0..n).map(|_| random()).collect();
    let x_device = stream.clone_htod(&x)?;
    let mut y_device = stream.clone_htod(&y)?;

    // A persistent grid: every block resident at once on this device (its compute capability
    // and SM count read from the driver, blocks per SM from the build). On a GPU the build did
    // not compile for, the driver JITs the PTX and the numbers are unknown: one thread per item.
    let config = match SAXPY_OCCUPANCY.persistent_grid_on(&ctx)? {
        Some(blocks) => LaunchConfig {
            grid_dim: (blocks.min(SAXPY_OCCUPANCY.grid_for(n)), 1, 1),
            ..SAXPY_OCCUPANCY.launch_config(n)
        },
        None => SAXPY_OCCUPANCY.launch_config(n),
    };
    let mut launch = stream.launch_builder(&function);
    launch.arg(&n).arg(&a).arg(&x_device).arg(&mut y_device);
    // SAFETY: the arguments match the kernel's signature and the buffers hold n floats.
    unsafe { launch.launch(config) }?;

    let result = stream.clone_dtoh(&y_device)?;
    // The GPU may fuse a * x + y into one rounding (FMA); allow that, nothing more.
    let wrong = (0..n as usize)
        .filter(|&i| {
            let expected = a.mul_add(x[i], y[i]);
            (result[i] - expected).abs() > 2.0 * f32::EPSILON * expected.abs().max(1.0)
        })
        .count();
    println!(
        "saxpy: {n} elements, {wrong} wrong, grid {:?} x block {:?}",
        config.grid_dim, config.block_dim
    );
    if wrong == 0 {
        Ok(())
    } else {
        Err(format!("{wrong} wrong results").into())
    }
}
