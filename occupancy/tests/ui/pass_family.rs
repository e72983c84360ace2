#[occupancy::kernel(family = "uneg_*", block = 256, min_blocks_per_sm = 4)]
fn uneg();

fn main() {
    assert_eq!(UNEG_OCCUPANCY.kernel_name, "uneg_*");
    assert_eq!(UNEG_OCCUPANCY.block.x, 256);
}
