// Module-wide constant and global memory: `N bytes gmem, N bytes cmem[3]` on ptxas's module
// line and cuobjdump's `Common:` line.
__constant__ float coefficients[256];
__device__ float accumulator[100];
__device__ int counter;

extern "C" __global__ void scale(float* out, const float* in) {
    out[threadIdx.x] = in[threadIdx.x] * coefficients[threadIdx.x & 255];
    atomicAdd(&accumulator[threadIdx.x % 100], out[threadIdx.x]);
    atomicAdd(&counter, 1);
}

extern "C" __global__ void plain_copy(float* out, const float* in) { out[threadIdx.x] = in[threadIdx.x]; }
