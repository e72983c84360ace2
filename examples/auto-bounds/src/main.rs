//! A kernel whose launch bounds the build chooses: `min_blocks_per_sm = "auto"`. Prints, per
//! target arch, what the build compiled (registers, resident blocks and occupancy, from the
//! facts the attribute put into `TILE_GEMM_OCCUPANCY`) and the bounds in the PTX the driver
//! loads on that arch.

mod ptx {
    include!(concat!(env!("OUT_DIR"), "/occupancy_ptx.rs"));
}

// Loaded by name from the PTX at run time; this body-less stub carries the declaration.
#[occupancy::kernel(block = 256, min_blocks_per_sm = "auto", max_spill_bytes = 0)]
fn tile_gemm(a: *const f32, b: *const f32, c: *mut f32, n: i32);

fn main() {
    for facts in TILE_GEMM_OCCUPANCY.compiled {
        println!(
            "tile_gemm compiled for {}: {} registers, {} blocks of {} threads per SM ({:.1}% occupancy)",
            facts.arch,
            facts.registers,
            facts.blocks_per_sm,
            facts.block_threads,
            facts.occupancy * 100.0,
        );
    }
    for (arch, (major, minor)) in [("sm_80", (8, 0)), ("sm_90", (9, 0))] {
        let text = ptx::tile_gemm(major, minor).expect("the build compiled both archs");
        let bounds: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|line| line.starts_with(".maxntid") || line.starts_with(".minnctapersm"))
            .collect();
        println!("tile_gemm PTX loaded on {arch}: {}", bounds.join(" "));
    }
}
