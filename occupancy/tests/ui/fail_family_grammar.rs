// Family patterns: every mistake in one attribute each, all reported at the pattern.
#[occupancy::kernel(family = "uneg_f32", block = 256)]
fn no_star();

#[occupancy::kernel(family = "*", block = 256)]
fn everything();

#[occupancy::kernel(family = "uneg_?", block = 256)]
fn question_mark();

#[occupancy::kernel(family = uneg_, block = 256)]
fn not_a_string();

#[occupancy::kernel(family = "", block = 256)]
fn empty();

fn main() {}
