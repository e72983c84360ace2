#[occupancy::kernel(block = 256, archs = ["sm_80", "sm90"])]
fn saxpy(n: u32);

fn main() {}
