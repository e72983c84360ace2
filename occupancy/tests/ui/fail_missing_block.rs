#[occupancy::kernel(min_blocks_per_sm = 2)]
fn saxpy(n: u32);

fn main() {}
