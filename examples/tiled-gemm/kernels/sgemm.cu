// Register-tiled SGEMM, C = A * B (row-major, M x K times K x N), in the style of Volkov's
// "Better performance at lower occupancy": a 16 x 16 block computes a 128 x 128 tile of C, each
// thread an 8 x 8 sub-tile kept in 64 accumulator registers. Operands are staged through shared
// memory 8 columns of K at a time. Each thread does 64 FMAs per 16 values it loads from shared
// memory, so it needs few resident warps to hide latency: occupancy is low on purpose.
#include <cuda_runtime.h>
#include "occupancy_bounds.h"

#define TILE 128
#define STEP_K 8
#define PER_THREAD 8

extern "C" __global__ void OCCUPANCY_BOUNDS_sgemm_128x128
sgemm_128x128(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int m, int n, int k) {
  __shared__ float a_tile[STEP_K][TILE];
  __shared__ float b_tile[STEP_K][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int thread = ty * 16 + tx;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  float acc[PER_THREAD][PER_THREAD] = {};
  for (int k0 = 0; k0 < k; k0 += STEP_K) {
    // 256 threads load 8 x 128 of A (transposed) and 8 x 128 of B, 4 values each.
#pragma unroll
    for (int load = 0; load < 4; ++load) {
      int index = thread + load * 256;
      int kk = index / TILE, mm = index % TILE;
      int a_row = row0 + mm, a_col = k0 + kk;
      a_tile[kk][mm] = (a_row < m && a_col < k) ? a[a_row * k + a_col] : 0.0f;
      int b_row = k0 + kk, b_col = col0 + mm;
      b_tile[kk][mm] = (b_row < k && b_col < n) ? b[b_row * n + b_col] : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < STEP_K; ++kk) {
      float a_frag[PER_THREAD], b_frag[PER_THREAD];
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) a_frag[i] = a_tile[kk][ty * PER_THREAD + i];
#pragma unroll
      for (int j = 0; j < PER_THREAD; ++j) b_frag[j] = b_tile[kk][tx * PER_THREAD + j];
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i)
#pragma unroll
        for (int j = 0; j < PER_THREAD; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < PER_THREAD; ++i)
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
      int row = row0 + ty * PER_THREAD + i, col = col0 + tx * PER_THREAD + j;
      if (row < m && col < n) c[row * n + col] = acc[i][j];
    }
}

// The launcher Rust calls: device pointers in, cudaError_t out.
extern "C" int tiled_gemm_sgemm(const float* a, const float* b, float* c, int m, int n, int k, cudaStream_t stream) {
  static_assert(OCCUPANCY_BLOCK_THREADS_sgemm_128x128 == 16 * 16, "the Rust declaration says block = (16, 16)");
  dim3 block(16, 16);
  dim3 grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
  sgemm_128x128<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
  return (int)cudaGetLastError();
}

// Device memory helpers, so the Rust side needs nothing but this library.
extern "C" int tiled_gemm_device_count(void) {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}
extern "C" int tiled_gemm_malloc(void** pointer, size_t bytes) { return (int)cudaMalloc(pointer, bytes); }
extern "C" int tiled_gemm_free(void* pointer) { return (int)cudaFree(pointer); }
extern "C" int tiled_gemm_upload(void* device, const void* host, size_t bytes) {
  return (int)cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice);
}
extern "C" int tiled_gemm_download(void* host, const void* device, size_t bytes) {
  return (int)cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost);
}
