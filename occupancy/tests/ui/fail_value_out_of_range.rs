#[occupancy::kernel(block = 256, min_occupancy = 1.5, min_blocks_per_sm = 33, max_registers = 300)]
fn saxpy(n: u32);

fn main() {}
