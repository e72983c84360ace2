// Minimum blocks per SM that cannot take effect (issue #26). Compiled for sm_80, sm_86, sm_89,
// sm_90, sm_100 and sm_120 by cargo-occupancy/tests/cli_check.rs, and checked against the driver
// by scripts/gpu-dropped-bounds.sh.
//
// 4 blocks of 1024 threads are more threads than any SM holds: ptxas warns "Value of threads per
// SM ... is out of range. .minnctapersm will be ignored" and caps registers by the block alone
// (64 per thread), not the 16 the minimum would give.
extern "C" __global__ void __launch_bounds__(1024, 4) ignored_minimum(float* out, const float* in) {
    float acc[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) acc[i] = in[threadIdx.x + i * 1024];
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 16; ++i) sum += acc[i] * acc[(i + 5) & 15];
    out[threadIdx.x] = sum;
}

// 24 blocks of 64 threads fit every SM's threads, but sm_86 has 16 block slots: ptxas warns
// "Value of minnctapersm ... is out of range. minnctapersm will be ignored" there only.
extern "C" __global__ void __launch_bounds__(64, 24) slot_bound(float* out, const float* in) {
    out[threadIdx.x] = in[threadIdx.x] * 2.0f;
}

// 5 blocks of 256 threads fit every SM's threads and block slots, so ptxas caps registers for 5
// (48 per thread); but 48 KiB of static shared memory per block (plus the driver's 1 KiB) lets
// only 2 (sm_86, sm_89, sm_120), 3 (sm_80) or 4 (sm_90, sm_100) blocks reside.
extern "C" __global__ void __launch_bounds__(256, 5) shared_capped(float* out, const float* in) {
    __shared__ float tile[12288];
    for (int i = threadIdx.x; i < 12288; i += 256) tile[i] = in[i];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x * 7) % 12288] + tile[12287 - threadIdx.x];
}

// A minimum every architecture honours: no finding.
extern "C" __global__ void __launch_bounds__(256, 2) reachable_minimum(float* out, const float* in) {
    out[threadIdx.x] = in[threadIdx.x] + 1.0f;
}
