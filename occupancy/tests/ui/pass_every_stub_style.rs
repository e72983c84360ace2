// Every stub style and key, compiled with #![deny(warnings)]: the expansion adds no warning.
#![deny(warnings)]

#[allow(dead_code)]
mod fixtures {
    include!("../fixtures/declarations.rs");
}

/// Used items, so that nothing but the expansion could warn.
#[occupancy::kernel(block = 64, min_occupancy = 1, archs = ["compute_90"])]
fn scale(n: u32, x: *mut f32);

fn main() {
    assert_eq!(fixtures::SAXPY_OCCUPANCY.block.threads(), 256);
    assert_eq!(SCALE_OCCUPANCY.kernel_name, "scale");
    assert_eq!(SCALE_OCCUPANCY.source.line, 10);
    assert_eq!(fixtures::stencil_launch(256), 1);
}
