extern "C" {
    // Inside an extern block, rustc lets the attribute expand only to foreign items: the block
    // needs the bare #[occupancy::kernel] marker (see fail output and docs).
    #[occupancy::kernel(block = 256)]
    fn launch_saxpy(n: usize);
}

fn main() {}
