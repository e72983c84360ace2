// `expect(...)` takes lint names and one string `reason`.
#[occupancy::kernel(block = 256, expect(spills, reason = 12))]
fn hot(n: u32);

#[occupancy::kernel(block = 256, expect(spills, reason = "a", reason = "b"))]
fn warm(n: u32);

#[occupancy::kernel(block = 256, allow(spills), expect(spills, reason = "tracked"))]
fn cold(n: u32);

fn main() {}
