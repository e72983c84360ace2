// "auto" misspelt, quoted numbers, and "auto" where the build cannot choose: beside the other
// bound, and for a family, whose kernels share one macro.
#[occupancy::kernel(block = 256, min_blocks_per_sm = "Auto")]
fn misspelt();

#[occupancy::kernel(block = 256, max_registers = "64")]
fn quoted();

#[occupancy::kernel(block = 256, max_registers = "fastest")]
fn unknown_word();

#[occupancy::kernel(block = 256, min_blocks_per_sm = "auto", max_registers = 64)]
fn both_bounds();

#[occupancy::kernel(block = 256, max_registers = "auto", min_blocks_per_sm = 2)]
fn both_bounds_the_other_way();

#[occupancy::kernel(family = "uneg_*", block = 256, min_blocks_per_sm = "auto")]
fn uneg();

fn main() {}
