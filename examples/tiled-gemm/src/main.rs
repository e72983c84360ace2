//! Multiplies two small matrices on the GPU when one is present; linking this binary is itself
//! the check that the static library and the CUDA runtime were linked correctly.
fn main() {
    if !tiled_gemm::gpu_available() {
        println!("tiled-gemm: linked; no CUDA device here, nothing to run");
        return;
    }
    let (m, n, k) = (256, 256, 256);
    let a = vec![1.0f32; m * k];
    let b = vec![2.0f32; k * n];
    let c = tiled_gemm::sgemm(&a, &b, m, n, k).expect("sgemm runs");
    println!("tiled-gemm: c[0] = {} (expected {})", c[0], 2.0 * k as f32);
}
