// The fuzz corpus's kernels (occupancy-binary/src/fuzz.rs): a cluster, a launch bound, a
// local array that spills under a register cap, and a device call. Regenerate with
// regenerate.sh (needs nvcc, ar and python3).
__device__ __noinline__ float twice(float x) { return 2.0f * x; }

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 4)
window(float *out, const float *in, int n) {
    float window[32];
    for (int i = 0; i < 32; ++i) window[i] = in[(threadIdx.x + i * 7) % n];
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += window[(i * 13) & 31];
    out[threadIdx.x] = twice(sum);
}
