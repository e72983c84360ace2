// Machine-code evidence for the SASS lints (occupancy-core/src/sass): where spills sit, what a
// stack frame is made of, and which instructions a kernel runs. Each kernel is one shape.

// A spill inside a loop: 64 live accumulators under a 32-register cap, updated every iteration.
extern "C" __global__ void __launch_bounds__(256, 8) loop_spill(float* out, const float* in, int n) {
    float acc[48];
#pragma unroll
    for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x + j];
    for (int i = 0; i < n; ++i) {
        float x = in[i * 256 + threadIdx.x];
#pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = acc[j] * x + acc[(j + 1) % 48];
    }
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < 48; ++j) sum += acc[j];
    out[threadIdx.x] = sum;
}

// A spill outside loops: the same pressure once, on a cold path, then a cheap loop.
extern "C" __global__ void __launch_bounds__(256, 8) cold_spill(float* out, const float* in, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += in[i * 256 + threadIdx.x];
    if (sum < 0.0f) {
        float acc[48];
#pragma unroll
        for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x * 48 + j];
#pragma unroll
        for (int j = 0; j < 48; ++j) sum += acc[j] * acc[(j * 7) % 48] * acc[(j * 13) % 48];
    }
    out[threadIdx.x] = sum;
}

// A local array indexed at run time: local memory that is not a spill.
extern "C" __global__ void local_array(float* out, const int* index, int n) {
    float table[32];
    for (int i = 0; i < 32; ++i) table[i] = out[i * 32 + threadIdx.x];
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += table[index[i * 32 + threadIdx.x] & 31];
    out[threadIdx.x] = sum;
}

// Double-precision sin: DFMA/DMUL, and ptxas's out-of-line slow path for large arguments.
extern "C" __global__ void fp64_sin(double* out, const double* in) {
    out[threadIdx.x] = sin(in[threadIdx.x]);
}
