#[occupancy::kernel(block = 256)]
extern "C" {
    fn launch_a(n: usize);
    fn launch_b(n: usize);
}

fn main() {}
