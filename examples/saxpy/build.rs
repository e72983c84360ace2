fn main() {
    // $OUT_DIR/saxpy.ptx and $OUT_DIR/occupancy_ptx.rs (`pub const SAXPY: &str`), checked
    // against the `#[occupancy::kernel]` declaration in src/main.rs.
    occupancy_build::Build::new()
        .file("kernels/saxpy.cu")
        .compile_ptx();
}
