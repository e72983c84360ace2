fn main() {
    occupancy_build::Build::new().file("kernels/stencil.cu").compile_ptx();
}
