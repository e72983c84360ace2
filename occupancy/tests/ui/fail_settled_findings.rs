// What the build settled over every product it compiled is reported at the attribute: a kernel
// no product compiled fails, an expectation no finding fulfilled (set to warn) warns.
#[occupancy::kernel(block = 256, expect(stack_frame))]
fn settled_expected();

#[occupancy::kernel(block = 256)]
fn settled_missing();

fn main() {}
