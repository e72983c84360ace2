//! A cooperative sum (`kernels/grid_sum.cu`) launched by a C++ launcher
//! (`launcher/grid_sum.cpp`) that sizes its grid from `occupancy_facts.h`, the facts the build
//! compiled and checked, instead of a blocks per SM or an SM count written for one GPU.
//!
//! The declaration says how the kernel is launched and what its grid assumes: every block
//! resident at once (`launch = "cooperative"`), 4 blocks per SM on every target arch
//! (`grid_blocks_per_sm = 4`), on an A100, an H100 and an H20 (`gpus`). The build checks both on
//! sm_80 and sm_90 (`grid_exceeds_resident`); the launcher's own assumptions are `static_assert`s
//! on the header.

use std::os::raw::c_int;

#[occupancy::kernel]
extern "C" {
    /// Sums `n` floats at `x` (host memory) into `*sum` with one cooperative launch of
    /// `grid_sum`. Returns a `cudaError_t`, or -1 when the build did not compile the kernel for
    /// the device's arch.
    #[occupancy::kernel(
        block = 256,
        dynamic_smem = 32768,
        name = "grid_sum",
        launch = "cooperative",
        grid_blocks_per_sm = 4,
        gpus = ["a100", "h100", "h20"],
        max_spill_bytes = 0
    )]
    pub fn grid_sum_run(x: *const f32, n: u32, sum: *mut f32) -> c_int;
}

extern "C" {
    fn grid_sum_device_count() -> c_int;
    fn grid_sum_device(arch: *mut u32, sm_count: *mut u32) -> c_int;
    fn grid_sum_run_with_grid(x: *const f32, n: u32, grid: u32, sum: *mut f32) -> c_int;
    fn grid_sum_facts_blocks_per_sm(arch: u32) -> u32;
    fn grid_sum_grid(arch: u32, sm_count: u32, n: u32) -> u32;
}

/// A CUDA runtime error code (`cudaError_t`), or -1: not compiled for this device's arch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaError(pub i32);

/// Whether a CUDA device is present.
pub fn gpu_available() -> bool {
    // SAFETY: no arguments; the runtime reports 0 devices when there is no driver.
    unsafe { grid_sum_device_count() > 0 }
}

/// The sum of `x`, on the GPU.
pub fn sum(x: &[f32]) -> Result<f32, CudaError> {
    let n = u32::try_from(x.len()).expect("at most 2^32 - 1 values");
    let mut sum = 0.0f32;
    // SAFETY: `x` holds `n` floats and `sum` is one; the launcher copies them to and from the device.
    match unsafe { grid_sum_run(x.as_ptr(), n, &mut sum) } {
        0 => Ok(sum),
        code => Err(CudaError(code)),
    }
}

/// The sum of `x` with a cooperative grid of exactly `grid` blocks (at most 1024, the launcher's
/// workspace): `Err(CudaError(720))`, `cudaErrorCooperativeLaunchTooLarge`, when more blocks than
/// are resident.
pub fn sum_with_grid(x: &[f32], grid: u32) -> Result<f32, CudaError> {
    let n = u32::try_from(x.len()).expect("at most 2^32 - 1 values");
    let mut sum = 0.0f32;
    // SAFETY: as in `sum`.
    match unsafe { grid_sum_run_with_grid(x.as_ptr(), n, grid, &mut sum) } {
        0 => Ok(sum),
        code => Err(CudaError(code)),
    }
}

/// The device's arch number (`major * 10 + minor`) and SM count.
pub fn device() -> Result<(u32, u32), CudaError> {
    let (mut arch, mut sm_count) = (0, 0);
    // SAFETY: two valid out-pointers.
    match unsafe { grid_sum_device(&mut arch, &mut sm_count) } {
        0 => Ok((arch, sm_count)),
        code => Err(CudaError(code)),
    }
}

/// Blocks per SM of `grid_sum` on `arch` (`major * 10 + minor`) as `occupancy_facts.h` has them.
pub fn header_blocks_per_sm(arch: u32) -> u32 {
    // SAFETY: a pure function of its argument.
    unsafe { grid_sum_facts_blocks_per_sm(arch) }
}

/// The grid the C++ launcher launches for `n` values on a device of `arch` with `sm_count` SMs.
pub fn launcher_grid(arch: u32, sm_count: u32, n: u32) -> u32 {
    // SAFETY: a pure function of its arguments.
    unsafe { grid_sum_grid(arch, sm_count, n) }
}

/// The arch number of a compiled arch's name (`sm_90` is 90).
pub fn arch_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?.parse().ok()
}
