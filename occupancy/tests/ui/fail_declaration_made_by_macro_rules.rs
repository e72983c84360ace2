// A declaration produced by `macro_rules!` is invisible to the build's scanner: it was never
// checked, so it must not compile as if it had been.
macro_rules! declare {
    ($name:ident) => {
        #[occupancy::kernel(block = 256)]
        fn $name(n: u32, x: *mut f32);
    };
}

declare!(generated_scale);

fn main() {}
