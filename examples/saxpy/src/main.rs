//! SAXPY with cudarc: the PTX occupancy-build compiled (and checked) is loaded at run time, and
//! the launch configuration comes from the same declaration the build checked.

use cudarc::driver::{CudaContext, PushKernelArg};
use cudarc::nvrtc::Ptx;

mod ptx {
    include!(concat!(env!("OUT_DIR"), "/occupancy_ptx.rs"));
}

// The kernel is loaded by name from the PTX; this body-less stub carries its declaration.
#[occupancy::kernel(block = 256, min_blocks_per_sm = 4, min_occupancy = 0.5, max_spill_bytes = 0)]
fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(error) => {
            println!("saxpy: no usable CUDA device ({error:?}); the PTX was built and checked at build time");
            return Ok(());
        }
    };
    let stream = ctx.default_stream();
    let module = ctx.load_module(Ptx::from_src(ptx::SAXPY))?;
    let function = module.load_function(SAXPY_OCCUPANCY.kernel_name)?;

    let n: u32 = 1 << 20;
    let a = 2.0f32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = vec![1.0; n as usize];
    let x_device = stream.clone_htod(&x)?;
    let mut y_device = stream.clone_htod(&y)?;

    let config = SAXPY_OCCUPANCY.launch_config(n);
    let mut launch = stream.launch_builder(&function);
    launch.arg(&n).arg(&a).arg(&x_device).arg(&mut y_device);
    // SAFETY: the arguments match the kernel's signature and the buffers hold n floats.
    unsafe { launch.launch(config) }?;

    let result = stream.clone_dtoh(&y_device)?;
    let wrong = (0..n as usize).filter(|&i| result[i] != a * x[i] + y[i]).count();
    println!("saxpy: {n} elements, {wrong} wrong, grid {:?} x block {:?}", config.grid_dim, config.block_dim);
    if wrong == 0 {
        Ok(())
    } else {
        Err(format!("{wrong} wrong results").into())
    }
}
