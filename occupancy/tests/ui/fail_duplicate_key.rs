#[occupancy::kernel(block = 256, min_blocks_per_sm = 2, block = 128)]
fn saxpy(n: u32);

fn main() {}
