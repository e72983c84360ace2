#[occupancy::kernel(block = 256, min_ocupancy = 0.5)]
fn saxpy(n: u32);

fn main() {}
