// Warp-specialised register budgets (sm_90a): `setmaxnreg` with launch bounds ptxas honours, and
// one without bounds, which ptxas ignores (warning C7508) and leaves out of the SASS. On targets
// without the instruction (plain sm_90, which the build benchmark uses) the kernels compile
// without it.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(__CUDA_ARCH_FEAT_SM100_ALL)
#define SETMAXNREG(text) asm volatile(text)
#else
#define SETMAXNREG(text)
#endif
__device__ __forceinline__ float square_chain(float x, int n) {
    for (int i = 0; i < n; ++i) x = x * x + 1.0f;
    return x;
}

// One producer warpgroup at 40 registers, two consumers at 232: 128 x (40 + 2 x 232) = 64512
// registers, the block's 384 threads x 168 registers.
extern "C" __global__ void __launch_bounds__(384, 1) warp_specialized(float* out, int n) {
    if (threadIdx.x / 128 == 0) {
        SETMAXNREG("setmaxnreg.dec.sync.aligned.u32 40;\n");
        out[threadIdx.x] = 1.0f;
    } else {
        SETMAXNREG("setmaxnreg.inc.sync.aligned.u32 232;\n");
        out[threadIdx.x] = square_chain(out[threadIdx.x], n);
    }
}

// No launch bounds: ptxas cannot know the register count at entry and drops the setmaxnreg.
extern "C" __global__ void unbounded_setmaxnreg(float* out) {
    SETMAXNREG("setmaxnreg.inc.sync.aligned.u32 240;\n");
    out[threadIdx.x] = 2.0f;
}
