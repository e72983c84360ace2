#[occupancy::kernel(family = "uneg_*", name = "uneg_f32", block = 256)]
fn uneg();

fn main() {}
