const BLOCK: u32 = 256;

#[occupancy::kernel(block = BLOCK)]
fn saxpy(n: u32);

fn main() {}
