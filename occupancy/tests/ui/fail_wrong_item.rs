#[occupancy::kernel(block = 256)]
struct Saxpy;

fn main() {}
