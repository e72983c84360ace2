// The third held-out corpus of the auto-bounds proof (`OCCUPANCY_AUTOBOUNDS_SET=heldout3`,
// issue #34): 10 kernels of kinds public training and inference code carries, written fresh
// for this repository after the final objective of issue #34 (commit 9d456dd) was fixed, and
// timed once, so that objective is judged on code it was not chosen on. Same Args and variants
// as kernels.cuh; the problems are heldout3_problems.inc.
#pragma once

__device__ __forceinline__ float h3_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// 1. RMS norm backward, a warp per row of 1024: dx = r * (g*dy - x * r^2 * mean(x*g*dy)).
__device__ __forceinline__ void rms_bwd_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float* x = a.x + (long long)warp * 1024;
  const float* dy = a.y + (long long)warp * 1024;
  float ss = 0.0f, dot = 0.0f;
  for (int i = lane; i < 1024; i += 32) {
    const float xi = x[i], gi = dy[i] * (1.0f + 0.001f * (i % 7));
    ss += xi * xi;
    dot += xi * gi;
  }
  const float r = rsqrtf(h3_warp_sum(ss) / 1024.0f + 1e-6f);
  const float m = h3_warp_sum(dot) / 1024.0f;
  float* dx = a.out + (long long)warp * 1024;
  for (int i = lane; i < 1024; i += 32)
    dx[i] = r * (dy[i] * (1.0f + 0.001f * (i % 7)) - x[i] * r * r * m);
}

// 2. Bias + GELU backward, elementwise: dx = dy * gelu'(x + b), float4, grid-stride.
__device__ __forceinline__ void gelu_bwd_body(const Args& a) {
  const float4* x = reinterpret_cast<const float4*>(a.x);
  const float4* dy = reinterpret_cast<const float4*>(a.y);
  float4* o = reinterpret_cast<float4*>(a.out);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n / 4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    const float4 g = dy[i];
    float* e = reinterpret_cast<float*>(&v);
    const float* ge = reinterpret_cast<const float*>(&g);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float u = e[c] + 0.01f * (c + 1);
      const float t = tanhf(0.7978845608f * (u + 0.044715f * u * u * u));
      const float d = 0.5f * (1.0f + t) +
                      0.5f * u * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * u * u);
      e[c] = ge[c] * d;
    }
    o[i] = v;
  }
}

// 3. Attention scores: a thread per query (head 64 in registers) against 32 keys of its
//    block's key tile (staged in shared memory), scaled scores out.
__device__ __forceinline__ void qk_scores_body(const Args& a) {
  __shared__ float keys[32][65];
  const long long query = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const float* K = a.y + (long long)(blockIdx.x % 256) * 32 * 64;
  for (int e = threadIdx.x; e < 32 * 64; e += blockDim.x) keys[e / 64][e % 64] = K[e];
  __syncthreads();
  float q[64];
#pragma unroll
  for (int d = 0; d < 64; ++d) q[d] = a.x[query * 64 + d];
  for (int j = 0; j < 32; ++j) {
    float s = 0.0f;
#pragma unroll
    for (int d = 0; d < 64; ++d) s += q[d] * keys[j][d];
    a.out[query * 32 + j] = s * a.alpha;
  }
}

// 4. A 3x3 convolution of one channel through an 18x18 shared-memory tile (16x16 outputs).
__device__ __forceinline__ void conv3x3_body(const Args& a) {
  __shared__ float tile[18][18];
  const int W = a.m;
  const int x0 = blockIdx.x * 16, y0 = blockIdx.y * 16;
  for (int e = threadIdx.x; e < 18 * 18; e += blockDim.x) {
    const int ty = e / 18, tx = e % 18;
    const int gy = min(max(y0 + ty - 1, 0), W - 1), gx = min(max(x0 + tx - 1, 0), W - 1);
    tile[ty][tx] = a.x[(long long)gy * W + gx];
  }
  __syncthreads();
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float s = 0.0f;
#pragma unroll
  for (int dy = 0; dy < 3; ++dy)
#pragma unroll
    for (int dx = 0; dx < 3; ++dx) s += tile[ty + dy][tx + dx] * a.y[dy * 3 + dx];
  a.out[(long long)(y0 + ty) * W + x0 + tx] = s;
}

// 5. A 64-bin histogram of bytes, one private histogram per warp in shared memory, merged
//    into the block's slice of the output (no atomics across blocks).
__device__ __forceinline__ void hist64_body(const Args& a) {
  __shared__ unsigned bins[8][64];
  for (int e = threadIdx.x; e < 8 * 64; e += blockDim.x) bins[e / 64][e % 64] = 0;
  __syncthreads();
  const int warp = threadIdx.x / 32;
  const long long per_block = a.n / gridDim.x;
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(a.idx) + blockIdx.x * per_block;
  for (long long i = threadIdx.x; i < per_block; i += blockDim.x) atomicAdd(&bins[warp][bytes[i] & 63], 1u);
  __syncthreads();
  if (threadIdx.x < 64) {
    unsigned total = 0;
    for (int w = 0; w < 8; ++w) total += bins[w][threadIdx.x];
    a.counts[blockIdx.x * 64 + threadIdx.x] = total;
  }
}

// 6. LSTM cell, elementwise over 4 gate pre-activations: c' = f*c + i*g, h = o*tanh(c').
__device__ __forceinline__ void lstm_cell_body(const Args& a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const float ig = 1.0f / (1.0f + __expf(-a.x[i]));
    const float fg = 1.0f / (1.0f + __expf(-a.x[a.n + i]));
    const float gg = tanhf(a.x[2 * a.n + i]);
    const float og = 1.0f / (1.0f + __expf(-a.x[3 * a.n + i]));
    const float c = fg * a.y[i] + ig * gg;
    a.out[i] = c;
    a.out[a.n + i] = og * tanhf(c);
  }
}

// 7. C = A + B^T through a padded 32x33 shared-memory tile, 32x8 threads, 4 rows each.
__device__ __forceinline__ void add_transpose_body(const Args& a) {
  __shared__ float tile[32][33];
  const int n = a.m;
  const int bx = blockIdx.x * 32, by = blockIdx.y * 32;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
#pragma unroll
  for (int r = 0; r < 32; r += 8) tile[ty + r][tx] = a.y[(long long)(bx + ty + r) * n + by + tx];
  __syncthreads();
#pragma unroll
  for (int r = 0; r < 32; r += 8) {
    const long long at = (long long)(by + ty + r) * n + bx + tx;
    a.out[at] = a.x[at] + tile[tx][ty + r];
  }
}

// 8. Batched dot products: a warp per pair of 4096-float vectors, float4, 4 in flight.
__device__ __forceinline__ void dot_batched_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float4* x = reinterpret_cast<const float4*>(a.x + (long long)warp * 4096);
  const float4* y = reinterpret_cast<const float4*>(a.y + (long long)warp * 4096);
  float s = 0.0f;
  for (int i = lane; i < 1024; i += 128) {
    float4 u[4], v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) { u[q] = x[i + 32 * q]; v[q] = y[i + 32 * q]; }
#pragma unroll
    for (int q = 0; q < 4; ++q) s += u[q].x * v[q].x + u[q].y * v[q].y + u[q].z * v[q].z + u[q].w * v[q].w;
  }
  s = h3_warp_sum(s);
  if (lane == 0) a.out[warp] = s;
}

// 9. Running log-sum-exp along rows of 2048, a warp per row, 32 at a time with a carry.
__device__ __forceinline__ void logcumsumexp_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float* x = a.x + (long long)warp * 2048;
  float* o = a.out + (long long)warp * 2048;
  float carry = -CUDART_INF_F;
  for (int base = 0; base < 2048; base += 32) {
    float v = x[base + lane];
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const float other = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) {
        const float hi = fmaxf(v, other), lo = fminf(v, other);
        v = hi + log1pf(__expf(lo - hi));
      }
    }
    const float hi = fmaxf(v, carry), lo = fminf(v, carry);
    const float total = lo == -CUDART_INF_F ? hi : hi + log1pf(__expf(lo - hi));
    o[base + lane] = total;
    carry = __shfl_sync(0xffffffffu, total, 31);
  }
}

// 10. Gather-scale-scatter of rows (a MoE-style token permutation): a warp moves one row of 512
//     floats from idx[row] to row, scaled by a per-row gate.
__device__ __forceinline__ void permute_rows_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const long long from = a.idx[warp];
  const float gate = a.y[warp];
  const float4* src = reinterpret_cast<const float4*>(a.x + from * 512);
  float4* dst = reinterpret_cast<float4*>(a.out + (long long)warp * 512);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 v = src[lane + 32 * q];
    dst[lane + 32 * q] = make_float4(v.x * gate, v.y * gate, v.z * gate, v.w * gate);
  }
}

// A permutation-like row map for permute_rows, from a hash of the position.
__global__ void fill_row_map(int* p, long long count, int range) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ 0x1b873593u;
    h ^= h >> 16;
    h *= 2246822519u;
    p[i] = (int)(h % (unsigned)range);
  }
}

KERNEL_128(rms_bwd)
KERNEL_256(gelu_bwd)
KERNEL_128(qk_scores)
KERNEL_256(conv3x3)
KERNEL_256(hist64)
KERNEL_256(lstm_cell)
KERNEL_256(add_transpose)
KERNEL_256(dot_batched)
KERNEL_256(logcumsumexp)
KERNEL_256(permute_rows)
