fn main() {
    // $OUT_DIR/tile_gemm.compute_80.ptx, tile_gemm.compute_90.ptx and occupancy_ptx.rs. The
    // declaration in src/main.rs leaves `min_blocks_per_sm` to the build: it is chosen per arch
    // and reaches the kernel through `OCCUPANCY_BOUNDS_tile_gemm` in the generated
    // occupancy_bounds.h.
    occupancy_build::Build::new()
        .file("kernels/tile_gemm.cu")
        .compile_ptx();
}
