// C = A * B for square row-major matrices of side n (a multiple of 64): a 256-thread block
// computes a 64 x 64 tile of C, each thread a 4 x 4 sub-tile in registers; A and B are staged
// through shared memory 8 columns of K at a time. About 64 registers per thread without bounds:
// registers decide how many blocks share an SM, and whether a tighter bound is free (the loop
// keeps its length and spills nothing) or costs spills in the loop depends on the architecture.
// The bounds come from the Rust declaration through the generated occupancy_bounds.h.
#include "occupancy_bounds.h"

#define TILE 64
#define STEP_K 8

extern "C" __global__ void OCCUPANCY_BOUNDS_tile_gemm
tile_gemm(const float* a, const float* b, float* c, int n) {
  __shared__ float a_tile[STEP_K][TILE + 4];
  __shared__ float b_tile[STEP_K][TILE];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += STEP_K) {
    for (int load = threadIdx.x; load < STEP_K * TILE; load += 256) {
      const int m = load / STEP_K, k = load % STEP_K;
      a_tile[k][m] = a[(long long)(row0 + m) * n + k0 + k];
      const int kb = load / TILE, col = load % TILE;
      b_tile[kb][col] = b[(long long)(k0 + kb) * n + col0 + col];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < STEP_K; ++k) {
      float a_frag[4], b_frag[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a_frag[i] = a_tile[k][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b_frag[j] = b_tile[k][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a_frag[i] * b_frag[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      c[(long long)(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}
