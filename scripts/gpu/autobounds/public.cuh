// The public-code corpus of the auto-bounds proof (`OCCUPANCY_AUTOBOUNDS_SET=public`, issue #34):
// 25 kernels of the kinds that public training and inference code carries (layer norms,
// softmaxes, reductions, attention-like loops, GEMM tiles, elementwise ops, optimisers, scans),
// written fresh for this repository in the style of that code (a warp or a block per row,
// float4 loads, shuffle reductions, shared-memory tiles, grid-stride loops); no third-party
// source is copied. Written after the objective of issue #34 was fixed, to judge it on code it
// was not designed against. Same Args and variants as kernels.cuh; the problems are
// public_problems.inc. Included by autobounds.cu in place of its kernel list.
#pragma once

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// A block-wide sum (any block of whole warps up to 1024 threads), every thread gets it.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  v = warp_sum(v);
  const int warps = blockDim.x / 32;
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = threadIdx.x % 32 < warps ? partial[threadIdx.x % 32] : 0.0f;
  return warp_sum(total);
}

__device__ __forceinline__ float block_max(float v) {
  __shared__ float partial[32];
  v = warp_max(v);
  const int warps = blockDim.x / 32;
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float total = threadIdx.x % 32 < warps ? partial[threadIdx.x % 32] : -CUDART_INF_F;
  return warp_max(total);
}

// ---- Layer norms ----

// 1. A warp per row of C = m channels, mean then variance then the normalized row with weight
//    and bias (the shape of a GPT training loop's layernorm forward): strided loads, 3 passes.
__device__ __forceinline__ void ln_warp_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const int C = a.m;
  const float* x = a.x + (long long)warp * C;
  float s = 0.0f;
  for (int i = lane; i < C; i += 32) s += x[i];
  const float mean = warp_sum(s) / C;
  float v = 0.0f;
  for (int i = lane; i < C; i += 32) {
    const float d = x[i] - mean;
    v += d * d;
  }
  const float rstd = rsqrtf(warp_sum(v) / C + 1e-5f);
  float* o = a.out + (long long)warp * C;
  for (int i = lane; i < C; i += 32) o[i] = (x[i] - mean) * rstd * a.y[i] + a.y[C + i];
}

// 2. A block of 256 per row of 4096, 16 values per thread kept in registers across the two
//    block reductions (the "row in registers" layer norm of fused inference kernels).
__device__ __forceinline__ void ln_block_body(const Args& a) {
  const float4* x = reinterpret_cast<const float4*>(a.x + (long long)blockIdx.x * 4096);
  float4 r[4];
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    r[q] = x[threadIdx.x + q * 256];
    s += r[q].x + r[q].y + r[q].z + r[q].w;
  }
  const float mean = block_sum(s) / 4096.0f;
  float v = 0.0f;
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    r[q].x -= mean; r[q].y -= mean; r[q].z -= mean; r[q].w -= mean;
    v += r[q].x * r[q].x + r[q].y * r[q].y + r[q].z * r[q].z + r[q].w * r[q].w;
  }
  const float rstd = rsqrtf(block_sum(v) / 4096.0f + 1e-5f);
  const float4* w = reinterpret_cast<const float4*>(a.y);
  float4* o = reinterpret_cast<float4*>(a.out + (long long)blockIdx.x * 4096);
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const float4 g = w[threadIdx.x + q * 256];
    o[threadIdx.x + q * 256] = make_float4(r[q].x * rstd * g.x, r[q].y * rstd * g.y,
                                           r[q].z * rstd * g.z, r[q].w * rstd * g.w);
  }
}

// 3. RMS norm, a warp per row of 1024, float4, the row in registers (8 float4 per lane).
__device__ __forceinline__ void rmsnorm_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float4* x = reinterpret_cast<const float4*>(a.x + (long long)warp * 1024);
  float4 r[8];
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    r[q] = x[lane + q * 32];
    s += r[q].x * r[q].x + r[q].y * r[q].y + r[q].z * r[q].z + r[q].w * r[q].w;
  }
  const float scale = rsqrtf(warp_sum(s) / 1024.0f + 1e-6f);
  const float4* w = reinterpret_cast<const float4*>(a.y);
  float4* o = reinterpret_cast<float4*>(a.out + (long long)warp * 1024);
#pragma unroll
  for (int q = 0; q < 8; ++q) {
    const float4 g = w[lane + q * 32];
    o[lane + q * 32] = make_float4(r[q].x * scale * g.x, r[q].y * scale * g.y,
                                   r[q].z * scale * g.z, r[q].w * scale * g.w);
  }
}

// ---- Softmaxes ----

// 4. A warp per row of m, online maximum and sum in one pass, then the normalized row.
__device__ __forceinline__ void softmax_online_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float* x = a.x + (long long)warp * a.m;
  float mx = -CUDART_INF_F, sum = 0.0f;
  for (int i = lane; i < a.m; i += 32) {
    const float v = x[i];
    const float next = fmaxf(mx, v);
    sum = sum * __expf(mx - next) + __expf(v - next);
    mx = next;
  }
  const float row_max = warp_max(mx);
  sum = warp_sum(sum * __expf(mx - row_max));
  const float inverse = 1.0f / sum;
  float* o = a.out + (long long)warp * a.m;
  for (int i = lane; i < a.m; i += 32) o[i] = __expf(x[i] - row_max) * inverse;
}

// 5. A block per row of 8192, three passes over global memory (max, sum, write), scaled by a
//    temperature: the plain softmax of frameworks' fallbacks.
__device__ __forceinline__ void softmax_block_body(const Args& a) {
  const float* x = a.x + (long long)blockIdx.x * a.m;
  float mx = -CUDART_INF_F;
  for (int i = threadIdx.x; i < a.m; i += blockDim.x) mx = fmaxf(mx, x[i] * a.alpha);
  mx = block_max(mx);
  float s = 0.0f;
  for (int i = threadIdx.x; i < a.m; i += blockDim.x) s += __expf(x[i] * a.alpha - mx);
  const float inverse = 1.0f / block_sum(s);
  float* o = a.out + (long long)blockIdx.x * a.m;
  for (int i = threadIdx.x; i < a.m; i += blockDim.x) o[i] = __expf(x[i] * a.alpha - mx) * inverse;
}

// 6. Cross-entropy forward and the logits' gradient, a block of 128 per row of V = m logits
//    with a target index per row (the fused classifier of training loops).
__device__ __forceinline__ void xent_body(const Args& a) {
  const long long row = blockIdx.x;
  const float* x = a.x + row * a.m;
  float mx = -CUDART_INF_F;
  for (int i = threadIdx.x; i < a.m; i += blockDim.x) mx = fmaxf(mx, x[i]);
  mx = block_max(mx);
  float s = 0.0f;
  for (int i = threadIdx.x; i < a.m; i += blockDim.x) s += __expf(x[i] - mx);
  s = block_sum(s);
  const int target = a.idx[row];
  const float inverse = 1.0f / s;
  float* grad = a.out + row * a.m;
  for (int i = threadIdx.x; i < a.m; i += blockDim.x)
    grad[i] = (__expf(x[i] - mx) * inverse - (i == target ? 1.0f : 0.0f)) * a.alpha;
  if (threadIdx.x == 0) a.out[(long long)a.n * a.m + row] = logf(s) + mx - x[target];
}

// ---- Reductions ----

// 7. The sum of every row of m floats, a warp per row, float4 (a bias gradient's shape).
__device__ __forceinline__ void reduce_rows_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float4* x = reinterpret_cast<const float4*>(a.x + (long long)warp * a.m);
  float s = 0.0f;
  for (int i = lane; i < a.m / 4; i += 32) {
    const float4 v = x[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  s = warp_sum(s);
  if (lane == 0) a.out[warp] = s;
}

// 8. The sum of every column of an n x m matrix: a thread per column, 8 rows in flight, a
//    block slice of k rows, partial sums to out[slice][column] (no atomics).
__device__ __forceinline__ void reduce_cols_body(const Args& a) {
  const int column = blockIdx.x * blockDim.x + threadIdx.x;
  const long long first = (long long)blockIdx.y * a.k;
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int r = 0; r < a.k; r += 8) {
#pragma unroll
    for (int q = 0; q < 8; ++q) s[q] += a.x[(first + r + q) * a.m + column];
  }
  a.out[(long long)blockIdx.y * a.m + column] =
      ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// 9. The maximum and its index of each block's slice of 16 Ki floats (an argmax's first pass).
__device__ __forceinline__ void argmax_body(const Args& a) {
  const float* x = a.x + (long long)blockIdx.x * 16384;
  float best = -CUDART_INF_F;
  int at = 0;
  for (int i = threadIdx.x; i < 16384; i += blockDim.x) {
    const float v = x[i];
    if (v > best) { best = v; at = i; }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, best, o);
    const int other_at = __shfl_xor_sync(0xffffffffu, at, o);
    if (other > best || (other == best && other_at < at)) { best = other; at = other_at; }
  }
  __shared__ float bests[32];
  __shared__ int ats[32];
  if (threadIdx.x % 32 == 0) { bests[threadIdx.x / 32] = best; ats[threadIdx.x / 32] = at; }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < (int)blockDim.x / 32; ++w)
      if (bests[w] > best || (bests[w] == best && ats[w] < at)) { best = bests[w]; at = ats[w]; }
    a.out[2 * blockIdx.x] = best;
    a.out[2 * blockIdx.x + 1] = (float)at;
  }
}

// ---- Attention-like loops ----

// 10. Decoding attention: a warp per query (head 64, two values per lane), online softmax over
//     k keys of its sequence, keys and values read from global memory.
__device__ __forceinline__ void attn_decode_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float2 q = reinterpret_cast<const float2*>(a.x + (long long)warp * 64)[lane];
  const int sequence = warp % 64;
  const float2* K = reinterpret_cast<const float2*>(a.y + (long long)sequence * a.k * 128);
  const float2* V = K + a.k * 32;
  float mx = -CUDART_INF_F, sum = 0.0f;
  float2 acc = make_float2(0, 0);
  for (int j = 0; j < a.k; ++j) {
    const float2 kj = K[j * 32 + lane];
    const float score = warp_sum(q.x * kj.x + q.y * kj.y) * a.alpha;
    const float next = fmaxf(mx, score);
    const float scale = __expf(mx - next), p = __expf(score - next);
    const float2 vj = V[j * 32 + lane];
    acc.x = acc.x * scale + p * vj.x;
    acc.y = acc.y * scale + p * vj.y;
    sum = sum * scale + p;
    mx = next;
  }
  reinterpret_cast<float2*>(a.out + (long long)warp * 64)[lane] = make_float2(acc.x / sum, acc.y / sum);
}

// 11. Flash-attention-like tile: a thread per query row (head 32 in registers, output too),
//     keys and values staged through shared memory 64 at a time.
__device__ __forceinline__ void attn_tile_body(const Args& a) {
  __shared__ float ks[64][32], vs[64][32];
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int head = blockIdx.x % 16;
  const float* K = a.y + (long long)head * a.k * 64;
  const float* V = K + a.k * 32;
  float q[32], o[32];
#pragma unroll
  for (int d = 0; d < 32; ++d) { q[d] = a.x[row * 32 + d] * a.alpha; o[d] = 0.0f; }
  float mx = -CUDART_INF_F, sum = 0.0f;
  for (int base = 0; base < a.k; base += 64) {
    for (int e = threadIdx.x; e < 64 * 32; e += blockDim.x) {
      ks[e / 32][e % 32] = K[(long long)base * 32 + e];
      vs[e / 32][e % 32] = V[(long long)base * 32 + e];
    }
    __syncthreads();
    for (int j = 0; j < 64; ++j) {
      float s = 0.0f;
#pragma unroll
      for (int d = 0; d < 32; ++d) s += q[d] * ks[j][d];
      const float next = fmaxf(mx, s);
      const float scale = __expf(mx - next), p = __expf(s - next);
#pragma unroll
      for (int d = 0; d < 32; ++d) o[d] = o[d] * scale + p * vs[j][d];
      sum = sum * scale + p;
      mx = next;
    }
    __syncthreads();
  }
#pragma unroll
  for (int d = 0; d < 32; ++d) a.out[row * 32 + d] = o[d] / sum;
}

// 12. Causal attention scores over a short window: a thread per query of head 16, keys read
//     from global memory (cached), only the keys at or before the query, the running softmax.
__device__ __forceinline__ void attn_causal_body(const Args& a) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int position = (int)(row % a.k);
  const long long start = row - position;
  float q[16], o[16];
#pragma unroll
  for (int d = 0; d < 16; ++d) { q[d] = a.x[row * 16 + d] * a.alpha; o[d] = 0.0f; }
  float mx = -CUDART_INF_F, sum = 0.0f;
  for (int j = 0; j <= position; ++j) {
    const float4* kj = reinterpret_cast<const float4*>(a.y + (start + j) * 32);
    float s = 0.0f;
#pragma unroll
    for (int d4 = 0; d4 < 4; ++d4) {
      const float4 k4 = kj[d4];
      s += q[4 * d4] * k4.x + q[4 * d4 + 1] * k4.y + q[4 * d4 + 2] * k4.z + q[4 * d4 + 3] * k4.w;
    }
    const float next = fmaxf(mx, s);
    const float scale = __expf(mx - next), p = __expf(s - next);
#pragma unroll
    for (int d4 = 0; d4 < 4; ++d4) {
      const float4 v4 = kj[4 + d4];
      o[4 * d4] = o[4 * d4] * scale + p * v4.x;
      o[4 * d4 + 1] = o[4 * d4 + 1] * scale + p * v4.y;
      o[4 * d4 + 2] = o[4 * d4 + 2] * scale + p * v4.z;
      o[4 * d4 + 3] = o[4 * d4 + 3] * scale + p * v4.w;
    }
    sum = sum * scale + p;
    mx = next;
  }
#pragma unroll
  for (int d = 0; d < 16; ++d) a.out[row * 16 + d] = o[d] / sum;
}

// ---- GEMM tiles (C = A * B, square m x m, row-major) ----

// 13. The textbook 16 x 16 shared-memory tile, one output per thread.
__device__ __forceinline__ void gemm16_body(const Args& a) {
  __shared__ float As[16][16], Bs[16][16];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx, n = a.m;
  float acc = 0.0f;
  for (int t = 0; t < n; t += 16) {
    As[ty][tx] = a.x[(long long)row * n + t + tx];
    Bs[ty][tx] = a.y[(long long)(t + ty) * n + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  a.out[(long long)row * n + col] = acc;
}

// 14. A 32 x 32 tile, 2 x 2 outputs per thread, K by 32.
__device__ __forceinline__ void gemm2x2_body(const Args& a) {
  __shared__ float As[32][33], Bs[32][33];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, n = a.m;
  const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
  float acc[2][2] = {{0, 0}, {0, 0}};
  for (int t = 0; t < n; t += 32) {
    for (int e = threadIdx.x; e < 32 * 32; e += 256) {
      As[e / 32][e % 32] = a.x[(long long)(row0 + e / 32) * n + t + e % 32];
      Bs[e / 32][e % 32] = a.y[(long long)(t + e / 32) * n + col0 + e % 32];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 32; ++k) {
      const float a0 = As[ty * 2][k], a1 = As[ty * 2 + 1][k];
      const float b0 = Bs[k][tx * 2], b1 = Bs[k][tx * 2 + 1];
      acc[0][0] += a0 * b0; acc[0][1] += a0 * b1;
      acc[1][0] += a1 * b0; acc[1][1] += a1 * b1;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 2; ++j) a.out[(long long)(row0 + ty * 2 + i) * n + col0 + tx * 2 + j] = acc[i][j];
}

// 15. A 128 x 64 tile, 8 x 4 outputs per thread, K by 16, A stored transposed in shared memory.
__device__ __forceinline__ void gemm8x4_body(const Args& a) {
  __shared__ float As[16][128], Bs[16][64];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16, n = a.m;
  const int row0 = blockIdx.y * 128, col0 = blockIdx.x * 64;
  float acc[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  for (int t = 0; t < n; t += 16) {
    for (int e = threadIdx.x; e < 128 * 16; e += 256)
      As[e % 16][e / 16] = a.x[(long long)(row0 + e / 16) * n + t + e % 16];
    for (int e = threadIdx.x; e < 16 * 64; e += 256)
      Bs[e / 64][e % 64] = a.y[(long long)(t + e / 64) * n + col0 + e % 64];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      float af[8], bf[4];
#pragma unroll
      for (int i = 0; i < 8; ++i) af[i] = As[k][ty * 8 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) bf[j] = Bs[k][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += af[i] * bf[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) a.out[(long long)(row0 + ty * 8 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}

// ---- Elementwise ----

// 16. GELU (tanh form), float4, grid-stride.
__device__ __forceinline__ void gelu_body(const Args& a) {
  const float4* x = reinterpret_cast<const float4*>(a.x);
  float4* o = reinterpret_cast<float4*>(a.out);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n / 4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    float* e = reinterpret_cast<float*>(&v);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float u = e[c];
      e[c] = 0.5f * u * (1.0f + tanhf(0.7978845608f * (u + 0.044715f * u * u * u)));
    }
    o[i] = v;
  }
}

// 17. Bias add, residual add and a hashed dropout mask, fused (a transformer block's epilogue).
__device__ __forceinline__ void bias_dropout_body(const Args& a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ 0x51ed270bu;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    const float keep = (h & 0xffffu) < 58982u ? 1.0f / 0.9f : 0.0f;
    a.out[i] = a.y[i] + keep * (a.x[i] + a.y[a.n + i % a.m]);
  }
}

// 18. SwiGLU: silu(gate) * up, the two halves of each row of 2m, float4.
__device__ __forceinline__ void swiglu_body(const Args& a) {
  const long long quads = a.n * a.m / 4;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < quads;
       i += (long long)gridDim.x * blockDim.x) {
    const long long row = i / (a.m / 4), at = i % (a.m / 4);
    const float4 g = reinterpret_cast<const float4*>(a.x + row * 2 * a.m)[at];
    const float4 u = reinterpret_cast<const float4*>(a.x + row * 2 * a.m + a.m)[at];
    reinterpret_cast<float4*>(a.out)[i] =
        make_float4(g.x / (1.0f + __expf(-g.x)) * u.x, g.y / (1.0f + __expf(-g.y)) * u.y,
                    g.z / (1.0f + __expf(-g.z)) * u.z, g.w / (1.0f + __expf(-g.w)) * u.w);
  }
}

// 19. Rotary position embedding of queries (head 128, pairs rotated by a position-dependent
//     angle computed with sincosf), a thread per pair.
__device__ __forceinline__ void rope_body(const Args& a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n / 2;
       i += (long long)gridDim.x * blockDim.x) {
    const int pair = (int)(i % 64);
    const int position = (int)((i / 64) % a.k);
    const float frequency = __powf(10000.0f, -(float)pair / 64.0f);
    float s, c;
    sincosf(position * frequency, &s, &c);
    const float2 v = reinterpret_cast<const float2*>(a.x)[i];
    reinterpret_cast<float2*>(a.out)[i] = make_float2(v.x * c - v.y * s, v.x * s + v.y * c);
  }
}

// ---- Optimisers (parameters, moments in x; gradients in y; the new state to out) ----

// 20. Adam with bias correction and decoupled weight decay (AdamW), float4.
__device__ __forceinline__ void adam_body(const Args& a) {
  const long long quads = a.n / 4;
  const float4* p = reinterpret_cast<const float4*>(a.x);
  const float4* m = p + quads;
  const float4* v = m + quads;
  const float4* g = reinterpret_cast<const float4*>(a.y);
  float4* out = reinterpret_cast<float4*>(a.out);
  const float b1 = 0.9f, b2 = 0.999f, c1 = 1.0f / (1.0f - 0.59f), c2 = 1.0f / (1.0f - 0.01f);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < quads;
       i += (long long)gridDim.x * blockDim.x) {
    float4 pi = p[i], mi = m[i], vi = v[i];
    const float4 gi = g[i];
    float* pe = reinterpret_cast<float*>(&pi);
    float* me = reinterpret_cast<float*>(&mi);
    float* ve = reinterpret_cast<float*>(&vi);
    const float* ge = reinterpret_cast<const float*>(&gi);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      me[c] = b1 * me[c] + (1.0f - b1) * ge[c];
      ve[c] = b2 * ve[c] + (1.0f - b2) * ge[c] * ge[c];
      pe[c] -= a.alpha * (me[c] * c1 / (sqrtf(ve[c] * c2) + 1e-8f) + 0.01f * pe[c]);
    }
    out[i] = pi;
    out[quads + i] = mi;
    out[2 * quads + i] = vi;
  }
}

// 21. SGD with Nesterov momentum and gradient clipping by a global scale.
__device__ __forceinline__ void sgd_nesterov_body(const Args& a) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const float g = fminf(fmaxf(a.y[i], -1.0f), 1.0f) + 1e-4f * a.x[i];
    const float velocity = 0.9f * a.x[a.n + i] + g;
    a.out[i] = a.x[i] - a.alpha * (g + 0.9f * velocity);
    a.out[a.n + i] = velocity;
  }
}

// 22. Adagrad with a per-row learning rate (an embedding table's sparse-ish update): a warp per
//     row of m, rows picked by idx.
__device__ __forceinline__ void adagrad_rows_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.k) return;
  const long long row = a.idx[warp];
  const float* p = a.x + row * a.m;
  const float* h = a.x + a.n * a.m + row * a.m;
  const float* g = a.y + (long long)warp * a.m;
  float* out = a.out + (long long)warp * 2 * a.m;
  for (int i = lane; i < a.m; i += 32) {
    const float hi = h[i] + g[i] * g[i];
    out[i] = p[i] - a.alpha * g[i] * rsqrtf(hi + 1e-10f);
    out[a.m + i] = hi;
  }
}

// ---- Scans ----

// 23. An inclusive scan of each block's tile of 256 x 8 floats: 8 per thread in registers, a
//     warp-shuffle scan of the threads' totals, the warps' totals through shared memory.
__device__ __forceinline__ void scan_tile_body(const Args& a) {
  __shared__ float warp_totals[32];
  const long long base = (long long)blockIdx.x * blockDim.x * 8 + threadIdx.x * 8;
  float v[8];
  const float4* x = reinterpret_cast<const float4*>(a.x + base);
  const float4 v0 = x[0], v1 = x[1];
  v[0] = v0.x; v[1] = v0.y; v[2] = v0.z; v[3] = v0.w;
  v[4] = v1.x; v[5] = v1.y; v[6] = v1.z; v[7] = v1.w;
#pragma unroll
  for (int i = 1; i < 8; ++i) v[i] += v[i - 1];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float carry = v[7];
#pragma unroll
  for (int o = 1; o < 32; o *= 2) {
    const float other = __shfl_up_sync(0xffffffffu, carry, o);
    if (lane >= o) carry += other;
  }
  if (lane == 31) warp_totals[warp] = carry;
  __syncthreads();
  if (warp == 0) {
    float t = lane < (int)blockDim.x / 32 ? warp_totals[lane] : 0.0f;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
      const float other = __shfl_up_sync(0xffffffffu, t, o);
      if (lane >= o) t += other;
    }
    warp_totals[lane] = t;
  }
  __syncthreads();
  const float offset = carry - v[7] + (warp > 0 ? warp_totals[warp - 1] : 0.0f);
  float4* o = reinterpret_cast<float4*>(a.out + base);
  o[0] = make_float4(v[0] + offset, v[1] + offset, v[2] + offset, v[3] + offset);
  o[1] = make_float4(v[4] + offset, v[5] + offset, v[6] + offset, v[7] + offset);
}

// 24. A warp scans a row of m floats 32 at a time, carrying the running total (a cumulative
//     sum along the last dimension).
__device__ __forceinline__ void scan_rows_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float* x = a.x + (long long)warp * a.m;
  float* o = a.out + (long long)warp * a.m;
  float running = 0.0f;
  for (int base = 0; base < a.m; base += 32) {
    float v = x[base + lane];
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const float other = __shfl_up_sync(0xffffffffu, v, d);
      if (lane >= d) v += other;
    }
    o[base + lane] = running + v;
    running += __shfl_sync(0xffffffffu, v, 31);
  }
}

// 25. A work-efficient (up-sweep, down-sweep) exclusive scan of 512 floats per block in shared
//     memory, two per thread.
__device__ __forceinline__ void scan_blelloch_body(const Args& a) {
  __shared__ float s[512];
  const long long base = (long long)blockIdx.x * 512;
  const int t = threadIdx.x;
  s[2 * t] = a.x[base + 2 * t];
  s[2 * t + 1] = a.x[base + 2 * t + 1];
  int offset = 1;
  for (int d = 256; d > 0; d /= 2) {
    __syncthreads();
    if (t < d) s[offset * (2 * t + 2) - 1] += s[offset * (2 * t + 1) - 1];
    offset *= 2;
  }
  if (t == 0) s[511] = 0.0f;
  for (int d = 1; d < 512; d *= 2) {
    offset /= 2;
    __syncthreads();
    if (t < d) {
      const int ai = offset * (2 * t + 1) - 1, bi = offset * (2 * t + 2) - 1;
      const float held = s[ai];
      s[ai] = s[bi];
      s[bi] += held;
    }
  }
  __syncthreads();
  a.out[base + 2 * t] = s[2 * t];
  a.out[base + 2 * t + 1] = s[2 * t + 1];
}

// Row indices for adagrad_rows and targets for xent, from a hash of the position.
__global__ void fill_rows(int* p, long long count, int range) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ 0x7f4a7c15u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = (int)(h % (unsigned)range);
  }
}

KERNEL_128(ln_warp)
KERNEL_256(ln_block)
KERNEL_128(rmsnorm)
KERNEL_256(softmax_online)
KERNEL_256(softmax_block)
KERNEL_128(xent)
KERNEL_256(reduce_rows)
KERNEL_256(reduce_cols)
KERNEL_256(argmax)
KERNEL_128(attn_decode)
KERNEL_128(attn_tile)
KERNEL_128(attn_causal)
KERNEL_256(gemm16)
KERNEL_256(gemm2x2)
KERNEL_256(gemm8x4)
KERNEL_256(gelu)
KERNEL_256(bias_dropout)
KERNEL_256(swiglu)
KERNEL_256(rope)
KERNEL_256(adam)
KERNEL_256(sgd_nesterov)
KERNEL_128(adagrad_rows)
KERNEL_256(scan_tile)
KERNEL_256(scan_rows)
KERNEL_256(scan_blelloch)
