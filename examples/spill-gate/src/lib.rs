//! The spill gate: `cargo build` in this crate fails because the declaration below asks for more
//! resident blocks than the kernel's registers allow. The error points at the attribute and says
//! which `min_blocks_per_sm` keeps the kernel spill-free (found by re-running ptxas).

/// The PTX of `kernels/stencil.cu`.
pub mod ptx {
    include!(concat!(env!("OUT_DIR"), "/occupancy_ptx.rs"));
}

#[occupancy::kernel]
extern "C" {
    /// 256 threads per block, and 8 blocks must fit on one SM: too many for this kernel.
    #[occupancy::kernel(block = 256, min_blocks_per_sm = 8)]
    pub fn stencil48(input: *const f32, output: *mut f32, n: i32);
}
