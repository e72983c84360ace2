// A cooperative sum: every block stages its share of the input in 32 KiB of dynamic shared
// memory, writes a partial sum, waits for the whole grid (this_grid().sync()), and block 0 adds
// the partials. The grid must be resident at once: launched with cudaLaunchCooperativeKernel,
// a grid larger than what fits fails (cudaErrorCooperativeLaunchTooLarge). How many blocks fit
// is decided by the 32 KiB per block: 4 on an sm_80 SM, 6 on sm_90, 3 on sm_86/sm_89/sm_120.
// The grid is sized by the C++ launcher (launcher/grid_sum.cpp) from occupancy_facts.h.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include "occupancy_bounds.h"

namespace cg = cooperative_groups;

#define STAGED_PER_THREAD 32

extern "C" __global__ void OCCUPANCY_BOUNDS_grid_sum
grid_sum(const float* __restrict__ x, unsigned n, float* __restrict__ partial, float* __restrict__ out) {
  extern __shared__ float staged[];  // STAGED_PER_THREAD floats per thread
  cg::grid_group grid = cg::this_grid();
  const unsigned threads = gridDim.x * blockDim.x;
  float sum = 0.0f;
  for (unsigned base = blockIdx.x * blockDim.x * STAGED_PER_THREAD; base < n;
       base += threads * STAGED_PER_THREAD) {
    // Coalesced loads into the block's tile, then each thread sums its own row of it (unrolled
    // by 4: 32 registers, so shared memory alone decides how many blocks fit).
#pragma unroll 4
    for (unsigned k = 0; k < STAGED_PER_THREAD; ++k) {
      unsigned index = base + k * blockDim.x + threadIdx.x;
      staged[k * blockDim.x + threadIdx.x] = index < n ? x[index] : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (unsigned k = 0; k < STAGED_PER_THREAD; ++k) sum += staged[threadIdx.x * STAGED_PER_THREAD + k];
    __syncthreads();
  }
  staged[threadIdx.x] = sum;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) staged[threadIdx.x] += staged[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = staged[0];
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    float total = 0.0f;
    for (unsigned block = 0; block < gridDim.x; ++block) total += partial[block];
    *out = total;
  }
}

// The launch primitives the C++ launcher builds on; it decides the grid.
extern "C" int grid_sum_launch(unsigned grid, unsigned block, unsigned dynamic_smem, const float* x,
                               unsigned n, float* partial, float* out) {
  void* arguments[] = {(void*)&x, (void*)&n, (void*)&partial, (void*)&out};
  cudaError_t launched = cudaLaunchCooperativeKernel((const void*)grid_sum, dim3(grid), dim3(block),
                                                     arguments, dynamic_smem, 0);
  if (launched != cudaSuccess) return (int)launched;
  return (int)cudaDeviceSynchronize();
}

// The device's compute capability as major * 10 + minor, and its SM count.
extern "C" int grid_sum_device(unsigned* arch, unsigned* sm_count) {
  int device = 0, major = 0, minor = 0, sms = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  if (error == cudaSuccess) error = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  *arch = (unsigned)(major * 10 + minor);
  *sm_count = (unsigned)sms;
  return (int)error;
}

extern "C" int grid_sum_device_count(void) {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}
extern "C" int grid_sum_malloc(void** pointer, size_t bytes) { return (int)cudaMalloc(pointer, bytes); }
extern "C" int grid_sum_free(void* pointer) { return (int)cudaFree(pointer); }
extern "C" int grid_sum_upload(void* device, const void* host, size_t bytes) {
  return (int)cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}
extern "C" int grid_sum_download(void* host, const void* device, size_t bytes) {
  return (int)cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
}
