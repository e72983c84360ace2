// Device functions that keep their own frames (__noinline__ with local arrays), called from
// entries. Built plain, with -rdc=true (relocatable: frames reported, callees listed by
// cuobjdump) and with -G (device functions reported before the entries).
namespace corpus {
namespace frames {

__device__ __noinline__ float gather(const float* p, int stride) {
    float local[32];
    for (int i = 0; i < 32; ++i) local[i] = p[i * stride];
    float sum = 0.0f;
    for (int i = 0; i < stride; ++i) sum += local[(i * 7) % 32];
    return sum;
}

struct Accumulator {
    float values[16];
    __device__ __noinline__ float total(int n) const {
        float sum = 0.0f;
        for (int i = 0; i < n && i < 16; ++i) sum += values[i];
        return sum;
    }
};

}  // namespace frames
}  // namespace corpus

extern "C" __global__ void calls_gather(float* out, const float* in, int stride) {
    out[threadIdx.x] = corpus::frames::gather(in + threadIdx.x, stride);
}

__global__ void calls_member(float* out, const float* in, int n) {
    corpus::frames::Accumulator accumulator;
    for (int i = 0; i < 16; ++i) accumulator.values[i] = in[threadIdx.x * 16 + i];
    out[threadIdx.x] = accumulator.total(n) + corpus::frames::gather(in, n);
}
