//! Multiplies two matrices on the GPU and compares with the CPU. Without a GPU it says so and
//! exits 0 (linking this binary is then the check that the static library and the CUDA runtime
//! were linked correctly); OCCUPANCY_REQUIRE_GPU=1 makes "no GPU" a failure.
fn main() {
    let require_gpu = std::env::var("OCCUPANCY_REQUIRE_GPU").is_ok_and(|value| value == "1");
    if !tiled_gemm::gpu_available() {
        println!("tiled-gemm: linked; no CUDA device here, nothing to run");
        if require_gpu {
            eprintln!("tiled-gemm: OCCUPANCY_REQUIRE_GPU=1 but no GPU could be used");
            std::process::exit(1);
        }
        return;
    }
    // Sizes that are not multiples of the 128 x 128 tile exercise the edge guards.
    let (m, n, k) = (300, 200, 129);
    // Random inputs in [-1, 1) (a fixed-seed xorshift, so a failure can be reproduced).
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    let a: Vec<f32> = (0..m * k).map(|_| random()).collect();
    let b: Vec<f32> = (0..k * n).map(|_| random()).collect();
    let c = match tiled_gemm::sgemm(&a, &b, m, n, k) {
        Ok(c) => c,
        Err(error) => {
            eprintln!("tiled-gemm: CUDA error {error:?}");
            std::process::exit(1);
        }
    };
    let mut worst = 0.0f32;
    for row in 0..m {
        for col in 0..n {
            // The reference sums in f64; the GPU's f32 sums differ by rounding only.
            let expected: f64 = (0..k)
                .map(|i| a[row * k + i] as f64 * b[i * n + col] as f64)
                .sum();
            worst = worst.max((c[row * n + col] as f64 - expected).abs() as f32);
        }
    }
    println!(
        "tiled-gemm: {m} x {n} x {k} SGEMM on the GPU, largest difference from the CPU {worst}"
    );
    if worst > 1e-3 {
        eprintln!("tiled-gemm: wrong results");
        std::process::exit(1);
    }
}
