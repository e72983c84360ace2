#[occupancy::kernel(block = (64, 32))]
fn too_many_threads(n: u32);

#[occupancy::kernel(block = 0)]
fn no_threads(n: u32);

#[occupancy::kernel(block = (1, 1, 65))]
fn too_deep(n: u32);

fn main() {}
