// Shared-memory register spilling (CUDA 13's `enable_smem_spilling`, issue #26): ptxas puts
// spills in shared memory and prints that area inside the kernel's `N bytes smem`. Each kernel
// runs the loop of 48 accumulators of sass_evidence.cu's `loop_spill` under bounds that cap its
// registers; `cargo-occupancy/tests/cli_check.rs` checks them on sm_80, sm_86, sm_89, sm_90,
// sm_100 and sm_120.

#define ACCUMULATE(first)                                                      \
    float acc[48];                                                             \
    _Pragma("unroll") for (int j = 0; j < 48; ++j) acc[j] = (first);           \
    for (int i = 0; i < n; ++i) {                                              \
        float x = in[i * 256 + threadIdx.x];                                   \
        _Pragma("unroll") for (int j = 0; j < 48; ++j)                         \
            acc[j] = acc[j] * x + acc[(j + 1) % 48];                           \
    }                                                                          \
    float sum = 0.0f;                                                          \
    _Pragma("unroll") for (int j = 0; j < 48; ++j) sum += acc[j];              \
    out[threadIdx.x] = sum;

#define SMEM_SPILLING asm volatile(".pragma \"enable_smem_spilling\";")

// 8 blocks of 256 threads leave 32 registers: with the pragma, the spill area is all of the
// static shared memory (sm_80: 20480 bytes, 7 blocks fit with the driver's 1 KiB per block
// where the registers allow 8; sm_90: 19456; sm_100: 27648). sm_86, sm_89 and sm_120 hold 1536
// threads: ptxas ignores the minimum and nothing spills.
extern "C" __global__ void __launch_bounds__(256, 8)
    smem_spill_all(float* out, const float* in, int n) {
    SMEM_SPILLING;
    ACCUMULATE(in[threadIdx.x + j])
}

// The same beside 4096 bytes of the kernel's own shared memory: only the rest is spill area.
extern "C" __global__ void __launch_bounds__(256, 8)
    smem_spill_tile(float* out, const float* in, int n) {
    SMEM_SPILLING;
    __shared__ float tile[1024];
    tile[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    ACCUMULATE(in[threadIdx.x + j] + tile[(threadIdx.x + j) & 1023])
}

// No pragma, 6 blocks: 40 registers and a loop spill whose stack frame (104-128 bytes per
// thread) x 256 threads fits the shared memory the launch can add on sm_80, sm_90 and sm_100:
// `spill_in_loop` suggests the pragma there.
extern "C" __global__ void __launch_bounds__(256, 6)
    loop_spill_room(float* out, const float* in, int n) {
    ACCUMULATE(in[threadIdx.x + j])
}

// No pragma, 8 blocks: 160-176 bytes x 256 threads, more than the launch can add: no suggestion.
extern "C" __global__ void __launch_bounds__(256, 8)
    loop_spill_no_room(float* out, const float* in, int n) {
    ACCUMULATE(in[threadIdx.x + j])
}
