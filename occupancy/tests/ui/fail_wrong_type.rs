#[occupancy::kernel(block = "256", name = saxpy)]
fn saxpy(n: u32);

fn main() {}
