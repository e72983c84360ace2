// Spills forced by __launch_bounds__: 128 threads x 8 blocks caps registers at 64, and the
// unrolled 64-float window does not fit. Templates in nested namespaces give mangled names.
namespace corpus {
namespace spills {

template <int Stride>
__global__ void __launch_bounds__(128, 8) window_sum(float* out, const float* in) {
    float window[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) window[i] = in[threadIdx.x + i * Stride];
    float sum = 0.0f;
#pragma unroll
    for (int shift = 0; shift < 64; ++shift)
#pragma unroll
        for (int i = 0; i < 64; ++i) sum += window[i] * window[(i + shift) & 63];
    out[threadIdx.x] = sum;
}

template __global__ void window_sum<3>(float*, const float*);
template __global__ void window_sum<7>(float*, const float*);

}  // namespace spills
}  // namespace corpus

// The same work without the bound: no spills, many registers.
extern "C" __global__ void unbounded_window_sum(float* out, const float* in) {
    float window[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) window[i] = in[threadIdx.x + i * 5];
    float sum = 0.0f;
#pragma unroll
    for (int shift = 0; shift < 64; ++shift)
#pragma unroll
        for (int i = 0; i < 64; ++i) sum += window[i] * window[(i + shift) & 63];
    out[threadIdx.x] = sum;
}
