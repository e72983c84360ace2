// The kernels of the auto-bounds proof (scripts/gpu-autobounds.sh): one body per kind of kernel,
// each a device function that autobounds.cu wraps in __global__ variants that differ only in
// their launch bounds (none, `__launch_bounds__(BLOCK)`, `__launch_bounds__(BLOCK, B)` for every
// B). Every kernel takes the same Args, so every variant has one signature.
#pragma once

#include <cuda_runtime.h>
#include <math_constants.h>

struct Args {
  const float* x;
  const float* y;
  float* out;
  const int* idx;
  unsigned* counts;
  long long n;  // elements (or rows, for attention)
  int m;        // a second size: a table, a square side, a row length
  int k;        // steps, depth, sequence length
  float alpha;
};

// 1. Bandwidth-bound: out = x + alpha * y, float4, grid-stride, 4 float4 of each input in
//    flight per thread (bytes in flight are what hides DRAM latency).
__device__ __forceinline__ void stream_triad_body(const Args& a) {
  const float4* x = reinterpret_cast<const float4*>(a.x);
  const float4* y = reinterpret_cast<const float4*>(a.y);
  float4* out = reinterpret_cast<float4*>(a.out);
  const long long n4 = a.n / 4;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += 4 * stride) {
    float4 u[4], v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const long long at = i + q * stride;
      u[q] = at < n4 ? x[at] : make_float4(0, 0, 0, 0);
      v[q] = at < n4 ? y[at] : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const long long at = i + q * stride;
      if (at < n4)
        out[at] = make_float4(u[q].x + a.alpha * v[q].x, u[q].y + a.alpha * v[q].y,
                              u[q].z + a.alpha * v[q].z, u[q].w + a.alpha * v[q].w);
    }
  }
}

// 2. Latency-bound: eight dependent pointer chases per thread through a table larger than L2.
__device__ __forceinline__ void gather_chase_body(const Args& a) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned mask = (unsigned)a.m - 1;
  int j[8];
#pragma unroll
  for (int c = 0; c < 8; ++c) j[c] = (int)((t * 2654435761u + c * 2246822519u + c) & mask);
  unsigned s = 0;
  for (int step = 0; step < a.k; ++step) {
#pragma unroll
    for (int c = 0; c < 8; ++c) j[c] = a.idx[j[c]];
#pragma unroll
    for (int c = 0; c < 8; ++c) s += (unsigned)j[c] * (unsigned)(2 * c + 1);
  }
  a.out[t] = (float)(s & 0xffffu);
}

// 3. Compute-bound with high ILP: 32 independent FMA chains per thread.
__device__ __forceinline__ void fma_ilp_body(const Args& a) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float v[32];
#pragma unroll
  for (int j = 0; j < 32; ++j) v[j] = (float)((t + j) & 1023) * 1e-3f;
  for (int it = 0; it < a.k; ++it) {
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = fmaf(v[j], a.alpha, 1e-3f * (float)j);
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < 32; ++j) s += v[j];
  a.out[t] = s;
}

// 4. Shared-memory GEMM tile: C = A * B, square n = a.m, 64x64 tile per block of 256 threads,
//    4x4 outputs per thread, 16 values of K per step.
__device__ __forceinline__ void smem_gemm_body(const Args& a) {
  __shared__ float as[16][64 + 4];
  __shared__ float bs[16][64];
  const int n = a.m;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += 16) {
    for (int l = threadIdx.x; l < 16 * 64; l += 256) {
      const int mm = l / 16, kk = l % 16;
      as[kk][mm] = a.x[(long long)(row0 + mm) * n + k0 + kk];
      const int kb = l / 64, nn = l % 64;
      bs[kb][nn] = a.y[(long long)(k0 + kb) * n + col0 + nn];
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      float af[4], bf[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) af[i] = as[kk][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bf[j] = bs[kk][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += af[i] * bf[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) a.out[(long long)(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}

// 5. Reduction: grid-stride sums of 4 float4 in flight per thread, warp shuffles, one atomic
//    per block.
__device__ __forceinline__ void reduce_sum_body(const Args& a) {
  __shared__ float partial[32];
  const float4* x = reinterpret_cast<const float4*>(a.x);
  const long long n4 = a.n / 4;
  const long long stride = (long long)gridDim.x * blockDim.x;
  float s = 0.0f;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += 4 * stride) {
    float4 v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) v[q] = i + q * stride < n4 ? x[i + q * stride] : make_float4(0, 0, 0, 0);
#pragma unroll
    for (int q = 0; q < 4; ++q) s += (v[q].x + v[q].y) + (v[q].z + v[q].w);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
    if (threadIdx.x == 0) atomicAdd(a.out, s);
  }
}

// 6. Stencil: a 5x5 weighted stencil on a W x H grid (W = a.m), 4 outputs per thread along y
//    (register blocking: 8 input rows serve them), blocks of 32 x 8 threads (256, launched 1-D
//    and folded here) covering 32 x 32 outputs. The border stays as the output was (zero).
__constant__ float c_stencil[25];
__device__ __forceinline__ void stencil25_body(const Args& a) {
  const int w = a.m;
  const int h = (int)(a.n / a.m);
  const int x = blockIdx.x * 32 + threadIdx.x % 32;
  const int y0 = blockIdx.y * 32 + (threadIdx.x / 32) * 4;
  if (x < 2 || x >= w - 2 || y0 < 2 || y0 + 3 >= h - 2) return;
  float rows[8][5];
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int dx = 0; dx < 5; ++dx) rows[r][dx] = a.x[(long long)(y0 - 2 + r) * w + x - 2 + dx];
#pragma unroll
  for (int o = 0; o < 4; ++o) {
    float s = 0.0f;
#pragma unroll
    for (int dy = 0; dy < 5; ++dy)
#pragma unroll
      for (int dx = 0; dx < 5; ++dx) s += c_stencil[dy * 5 + dx] * rows[o + dy][dx];
    a.out[(long long)(y0 + o) * w + x] = s;
  }
}

// 7. Attention-like: each thread one query row of 64, an online softmax over a.k keys and values
//    (read by every thread at once, from L1), its 64 outputs kept in registers.
__device__ __forceinline__ void attention_body(const Args& a) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= a.n) return;
  const float4* q4 = reinterpret_cast<const float4*>(a.x + r * 64);
  const float4* keys = reinterpret_cast<const float4*>(a.y);
  const float4* values = reinterpret_cast<const float4*>(a.y + (long long)a.k * 64);
  float q[64], acc[64];
#pragma unroll
  for (int d = 0; d < 16; ++d) {
    const float4 v = q4[d];
    q[4 * d] = v.x;
    q[4 * d + 1] = v.y;
    q[4 * d + 2] = v.z;
    q[4 * d + 3] = v.w;
  }
#pragma unroll
  for (int d = 0; d < 64; ++d) acc[d] = 0.0f;
  float running_max = -CUDART_INF_F, sum = 0.0f;
  for (int j = 0; j < a.k; ++j) {
    float score = 0.0f;
#pragma unroll
    for (int d = 0; d < 16; ++d) {
      const float4 kv = keys[j * 16 + d];
      score += q[4 * d] * kv.x + q[4 * d + 1] * kv.y + q[4 * d + 2] * kv.z + q[4 * d + 3] * kv.w;
    }
    score *= a.alpha;
    const float next_max = fmaxf(running_max, score);
    const float correction = __expf(running_max - next_max);
    const float p = __expf(score - next_max);
    sum = sum * correction + p;
#pragma unroll
    for (int d = 0; d < 16; ++d) {
      const float4 vv = values[j * 16 + d];
      acc[4 * d] = acc[4 * d] * correction + p * vv.x;
      acc[4 * d + 1] = acc[4 * d + 1] * correction + p * vv.y;
      acc[4 * d + 2] = acc[4 * d + 2] * correction + p * vv.z;
      acc[4 * d + 3] = acc[4 * d + 3] * correction + p * vv.w;
    }
    running_max = next_max;
  }
  const float inverse = 1.0f / sum;
#pragma unroll
  for (int d = 0; d < 64; ++d) a.out[r * 64 + d] = acc[d] * inverse;
}

// 8, 9. Register-heavy: LIVE values carried around a grid-stride loop, each updated from
//    another; spills under tight bounds (chain40 the build's fixture, chain96 far over).
template <int LIVE>
__device__ __forceinline__ void chain_body(const Args& a) {
  float acc[LIVE];
#pragma unroll
  for (int j = 0; j < LIVE; ++j) acc[j] = a.x[threadIdx.x + j];
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const float xi = a.x[i];
#pragma unroll
    for (int j = 0; j < LIVE; ++j) acc[j] = acc[j] * xi + acc[(j + 5) % LIVE];
  }
  float s = 0.0f;
#pragma unroll
  for (int j = 0; j < LIVE; ++j) s += acc[j];
  a.out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
__device__ __forceinline__ void chain40_body(const Args& a) { chain_body<40>(a); }
__device__ __forceinline__ void chain96_body(const Args& a) { chain_body<96>(a); }

// 10. Histogram with atomics: 256 bins in shared memory, one global atomic per bin and block.
__device__ __forceinline__ void histogram_body(const Args& a) {
  __shared__ unsigned bins[256];
  bins[threadIdx.x] = 0;
  __syncthreads();
  const unsigned* words = reinterpret_cast<const unsigned*>(a.idx);
  const long long n_words = a.n / 4;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n_words;
       i += (long long)gridDim.x * blockDim.x) {
    const unsigned w = words[i];
    atomicAdd(&bins[w & 0xffu], 1u);
    atomicAdd(&bins[(w >> 8) & 0xffu], 1u);
    atomicAdd(&bins[(w >> 16) & 0xffu], 1u);
    atomicAdd(&bins[w >> 24], 1u);
  }
  __syncthreads();
  atomicAdd(&a.counts[threadIdx.x], bins[threadIdx.x]);
}

// 11. Transpose through a padded 32x32 shared-memory tile, blocks of 32 x 8 threads (256).
__device__ __forceinline__ void transpose_body(const Args& a) {
  __shared__ float tile[32][33];
  const int w = a.m;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  int x = blockIdx.x * 32 + tx, y = blockIdx.y * 32 + ty;
#pragma unroll
  for (int j = 0; j < 32; j += 8) tile[ty + j][tx] = a.x[(long long)(y + j) * w + x];
  __syncthreads();
  x = blockIdx.y * 32 + tx;
  y = blockIdx.x * 32 + ty;
#pragma unroll
  for (int j = 0; j < 32; j += 8) a.out[(long long)(y + j) * w + x] = tile[tx][ty + j];
}

// 12. Small blocks (64 threads): element-wise transcendental math, grid-stride.
__device__ __forceinline__ void small_block_body(const Args& a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const float v = a.x[i];
    a.out[i] = sinf(v) * expf(-v * v) + cosf(2.0f * v) * logf(1.0f + v * v);
  }
}

// 13. Dynamic shared memory: a 65-tap 1-D convolution of a tile of 8192 values (and its halo)
//    staged in `extern __shared__` (33 KB per block, which limits the blocks per SM).
__constant__ float c_taps[65];
__device__ __forceinline__ void dyn_conv_body(const Args& a) {
  extern __shared__ float staged[];
  constexpr int kTile = 8192, kRadius = 32;
  const long long base = (long long)blockIdx.x * kTile;
  for (int l = threadIdx.x; l < kTile + 2 * kRadius; l += blockDim.x) {
    const long long at = base + l - kRadius;
    staged[l] = (at >= 0 && at < a.n) ? a.x[at] : 0.0f;
  }
  __syncthreads();
  for (int o = threadIdx.x; o < kTile; o += blockDim.x) {
    float s = 0.0f;
#pragma unroll
    for (int t = 0; t <= 2 * kRadius; ++t) s += c_taps[t] * staged[o + t];
    if (base + o < a.n) a.out[base + o] = s;
  }
}

// 14. Register-tiled SGEMM (128x128 tile, 8x8 outputs per thread, 256 threads; square n = a.m):
//    the Volkov regime, which spills as soon as a minimum caps its registers.
__device__ __forceinline__ void sgemm128_body(const Args& a) {
  __shared__ float a_tile[8][128];
  __shared__ float b_tile[8][128];
  const int n = a.m;
  const int thread = threadIdx.x;
  const int row0 = blockIdx.y * 128 + (thread / 16) * 8;
  const int col0 = blockIdx.x * 128 + (thread % 16) * 8;
  float acc[8][8] = {};
  for (int k0 = 0; k0 < n; k0 += 8) {
    for (int i = thread; i < 8 * 128; i += 256) {
      const int k = i / 128, m = i % 128;
      a_tile[k][m] = a.x[(long long)(blockIdx.y * 128 + m) * n + k0 + k];
      b_tile[k][m] = a.y[(long long)(k0 + k) * n + blockIdx.x * 128 + m];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float af[8], bf[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) af[i] = a_tile[k][(thread / 16) * 8 + i];
#pragma unroll
      for (int j = 0; j < 8; ++j) bf[j] = b_tile[k][(thread % 16) * 8 + j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += af[i] * bf[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) a.out[(long long)(row0 + i) * n + col0 + j] = acc[i][j];
}

// 15. Row normalization: one warp per row of 1024 values held in registers (32 per lane), mean
//    and variance by shuffles; blocks of 128 threads (4 rows).
__device__ __forceinline__ void layernorm_body(const Args& a) {
  const int lane = threadIdx.x % 32;
  const long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (row * 1024 >= a.n) return;
  const float4* in = reinterpret_cast<const float4*>(a.x + row * 1024);
  float4* out = reinterpret_cast<float4*>(a.out + row * 1024);
  float4 v[8];
  float s = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    v[c] = in[c * 32 + lane];
    s += (v[c].x + v[c].y) + (v[c].z + v[c].w);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  const float mean = s * (1.0f / 1024.0f);
  float q = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    const float dx = v[c].x - mean, dy = v[c].y - mean, dz = v[c].z - mean, dw = v[c].w - mean;
    q += (dx * dx + dy * dy) + (dz * dz + dw * dw);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) q += __shfl_xor_sync(0xffffffffu, q, offset);
  const float inverse = rsqrtf(q * (1.0f / 1024.0f) + 1e-5f);
#pragma unroll
  for (int c = 0; c < 8; ++c)
    out[c * 32 + lane] = make_float4((v[c].x - mean) * inverse, (v[c].y - mean) * inverse,
                                     (v[c].z - mean) * inverse, (v[c].w - mean) * inverse);
}
