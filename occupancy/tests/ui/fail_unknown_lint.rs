#[occupancy::kernel(block = 256, allow(low_ocupancy), warn(spills), deny(spills))]
fn saxpy(n: u32);

fn main() {}
