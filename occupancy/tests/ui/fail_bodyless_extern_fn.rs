#[occupancy::kernel(block = 256)]
extern "C" fn launch_saxpy(n: usize);

fn main() {}
