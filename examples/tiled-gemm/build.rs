fn main() {
    // lib tiled_gemm_kernels.a (with the SASS for every target arch), linked into this crate with
    // the CUDA runtime; the kernels are checked against the declaration in src/lib.rs.
    occupancy_build::Build::new()
        .file("kernels/sgemm.cu")
        .flag("-O3")
        .compile_lib("tiled_gemm_kernels");
}
