use std::path::PathBuf;

fn main() {
    // 1. The kernel (and its launch primitives) into libgrid_sum_kernels.a, checked against the
    //    declaration in src/lib.rs. This writes $OUT_DIR/occupancy_facts.h: what it compiled.
    occupancy_build::Build::new()
        .file("kernels/grid_sum.cu")
        .flag("-O3")
        .compile_lib("grid_sum_kernels");
    // 2. The C++ launcher, compiled after the facts exist: it includes occupancy_facts.h,
    //    static_asserts its assumptions against them and sizes the grid from them.
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    cc::Build::new()
        .cpp(true)
        .std("c++14")
        .file("launcher/grid_sum.cpp")
        .include(&out_dir)
        .warnings_into_errors(true)
        .compile("grid_sum_launcher");
    println!("cargo:rerun-if-changed=launcher/grid_sum.cpp");
}
