// A 48-point weighted stencil: 48 values stay live across the weighting passes, so the kernel
// wants about 64 registers per thread. The Rust declaration asks for 8 resident blocks of 256
// threads per SM; `OCCUPANCY_BOUNDS_stencil48` turns that into __launch_bounds__(256, 8), which
// leaves ptxas 32 registers per thread (65536 / 2048 threads), so it spills to local memory.
#include "occupancy_bounds.h"

#define POINTS 48

extern "C" __global__ void OCCUPANCY_BOUNDS_stencil48 stencil48(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float window[POINTS];
#pragma unroll
  for (int k = 0; k < POINTS; ++k) window[k] = in[i + k * n];
#pragma unroll
  for (int pass = 1; pass < 6; ++pass) {
#pragma unroll
    for (int k = 0; k < POINTS; ++k) window[k] = window[k] * window[(k + pass) % POINTS] + 1.0f;
  }
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < POINTS; ++k) sum += window[k];
  out[i] = sum;
}
