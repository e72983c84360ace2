// Large static and dynamic shared memory and named barriers (bar.sync with ids above 0).
// The module declares `extern __shared__`, which matters for cuobjdump's SHARED on sm_90+.

// 48000 bytes of static shared memory: just under the 48 KiB static limit.
extern "C" __global__ void static_tile(float* out, const float* in) {
    __shared__ float tile[12000];
    for (int i = threadIdx.x; i < 12000; i += blockDim.x) tile[i] = in[i];
    __syncthreads();
    out[threadIdx.x] = tile[11999 - threadIdx.x];
}

// Dynamic shared memory only: ptxas reports 0 bytes smem.
extern "C" __global__ void dynamic_tile(float* out, const float* in) {
    extern __shared__ float dynamic[];
    dynamic[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = dynamic[blockDim.x - 1 - threadIdx.x];
}

// Producer/consumer warps synchronising on named barriers 1 and 5: ptxas counts 6 barriers.
extern "C" __global__ void named_barriers(float* out, const float* in) {
    __shared__ float stage[256];
    const unsigned warp = threadIdx.x / 32;
    if (warp < 4) {
        stage[threadIdx.x] = in[threadIdx.x] * 2.0f;
        asm volatile("bar.arrive 1, 256;" ::: "memory");
        asm volatile("bar.sync 5, 256;" ::: "memory");
    } else {
        asm volatile("bar.sync 1, 256;" ::: "memory");
        out[threadIdx.x] = stage[threadIdx.x - 128];
        asm volatile("bar.arrive 5, 256;" ::: "memory");
    }
}

namespace corpus {
// Static and dynamic together in a template.
template <typename T>
__global__ void mixed_tile(T* out, const T* in) {
    __shared__ T fixed[1024];
    extern __shared__ float dynamic_words[];
    T* extra = reinterpret_cast<T*>(dynamic_words);
    fixed[threadIdx.x] = in[threadIdx.x];
    extra[threadIdx.x] = in[threadIdx.x + 1024];
    __syncthreads();
    out[threadIdx.x] = fixed[1023 - threadIdx.x] + extra[threadIdx.x ^ 1];
}
template __global__ void mixed_tile<double>(double*, const double*);
template __global__ void mixed_tile<int>(int*, const int*);
}  // namespace corpus
