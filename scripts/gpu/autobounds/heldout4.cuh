// The fourth held-out corpus of the auto-bounds proof (`OCCUPANCY_AUTOBOUNDS_SET=heldout4`,
// issue #34): 18 kernels adapted from the shapes of public code (Apex, Megatron-LM, Transformer
// Engine, vLLM, Mamba, Caffe, PyTorch, CUB, bitsandbytes), written for this repository after the
// objective of branch auto-bounds-5 (commit 37c2d64: a candidate without `__launch_bounds__`,
// the same warps with a loop 5% shorter) was fixed and committed, and timed once, so that
// objective is judged on code it was not chosen on. Same Args and variants as kernels.cuh; the
// problems are heldout4_problems.inc.
#pragma once

#define H4_FULL 0xffffffffu

__device__ __forceinline__ float h4_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(H4_FULL, v, o);
  return v;
}

__device__ __forceinline__ float h4_warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(H4_FULL, v, o));
  return v;
}

// A table of `count` entries into a pool of `pool` (a power of two), far apart: block tables,
// positions, gathered rows.
__global__ void h4_fill_table(int* table, long long count, int pool) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x)
    table[i] = (int)(((unsigned)i * 2654435761u + 12345u) & (unsigned)(pool - 1));
}

// 1. Layer norm forward with Welford statistics (Apex's cuWelfordOnlineSum / cuWelfordMuSigma2):
//    a warp per row of 512, 16 values per lane in registers, the lanes' (mean, M2, count)
//    merged by shuffles.
__device__ __forceinline__ void ln_welford_body(const Args& a) {
  const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= a.n) return;
  const float* x = a.x + row * 512;
  float v[16], mean = 0.0f, m2 = 0.0f, count = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    v[i] = x[lane + 32 * i];
    count += 1.0f;
    const float d = v[i] - mean;
    mean += d / count;
    m2 += d * (v[i] - mean);
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    const float mean_b = __shfl_xor_sync(H4_FULL, mean, o);
    const float m2_b = __shfl_xor_sync(H4_FULL, m2, o);
    const float count_b = __shfl_xor_sync(H4_FULL, count, o);
    const float total = count + count_b;
    const float d = mean_b - mean;
    mean += d * count_b / total;
    m2 += m2_b + d * d * count * count_b / total;
    count = total;
  }
  const float rstd = rsqrtf(m2 / 512.0f + 1e-5f);
  float* out = a.out + row * 512;
#pragma unroll
  for (int i = 0; i < 16; ++i)
    out[lane + 32 * i] = (v[i] - mean) * rstd * a.y[lane + 32 * i] + a.y[512 + lane + 32 * i];
}

// 2. Scaled, causally masked softmax (Megatron-LM's scaled_upper_triang_masked_softmax): a warp
//    per row of 512, 16 values per lane, masked above the row's position.
__device__ __forceinline__ void softmax_causal_body(const Args& a) {
  const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= a.n) return;
  const int position = (int)(row % 512);
  const float* x = a.x + row * 512;
  float v[16], m = -CUDART_INF_F;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int j = lane + 32 * i;
    v[i] = j <= position ? x[j] * a.alpha : -CUDART_INF_F;
    m = fmaxf(m, v[i]);
  }
  m = h4_warp_max(m);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    v[i] = v[i] == -CUDART_INF_F ? 0.0f : __expf(v[i] - m);
    s += v[i];
  }
  const float inv = 1.0f / h4_warp_sum(s);
  float* out = a.out + row * 512;
#pragma unroll
  for (int i = 0; i < 16; ++i) out[lane + 32 * i] = v[i] * inv;
}

// 3. FP8-style scaling (Transformer Engine's amax and cast): grid-stride float4, each value
//    scaled, saturated to +-448 and rounded; the block's absolute maximum to one atomic.
__device__ __forceinline__ void amax_cast_body(const Args& a) {
  __shared__ float block_max[32];
  const float4* x = reinterpret_cast<const float4*>(a.x);
  float4* out = reinterpret_cast<float4*>(a.out);
  float amax = 0.0f;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n / 4;
       i += (long long)gridDim.x * blockDim.x) {
    float4 v = x[i];
    amax = fmaxf(amax, fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w))));
    v.x = rintf(fminf(fmaxf(v.x * a.alpha, -448.0f), 448.0f));
    v.y = rintf(fminf(fmaxf(v.y * a.alpha, -448.0f), 448.0f));
    v.z = rintf(fminf(fmaxf(v.z * a.alpha, -448.0f), 448.0f));
    v.w = rintf(fminf(fmaxf(v.w * a.alpha, -448.0f), 448.0f));
    out[i] = v;
  }
  amax = h4_warp_max(amax);
  if (threadIdx.x % 32 == 0) block_max[threadIdx.x / 32] = amax;
  __syncthreads();
  if (threadIdx.x < 32) {
    float v = threadIdx.x < blockDim.x / 32 ? block_max[threadIdx.x] : 0.0f;
    v = h4_warp_max(v);
    if (threadIdx.x == 0) atomicMax(a.counts, __float_as_uint(v));
  }
}

// 4. Segmented inclusive scan (CUB's segmented scan by head flags): each lane scans 8
//    consecutive values in registers, the warp combines the lanes' (flag, sum) pairs by
//    shuffles; grid-stride over tiles of 256.
__device__ __forceinline__ void seg_scan_body(const Args& a) {
  const int lane = threadIdx.x % 32;
  const long long warps = (long long)gridDim.x * blockDim.x / 32;
  for (long long tile = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; tile < a.n / 256;
       tile += warps) {
    const long long base = tile * 256 + lane * 8;
    float v[8];
    bool head[8];
    bool any = false;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      v[r] = a.x[base + r];
      head[r] = (((unsigned)(base + r) * 2654435761u) >> 27) == 0;
      if (r > 0 && !head[r]) v[r] += v[r - 1];
      any = any || head[r];
    }
    // The lane's carry-in: the inclusive sum of the lanes before it back to a head.
    float sum = v[7];
    bool flag = any;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
      const float other = __shfl_up_sync(H4_FULL, sum, o);
      const bool other_flag = __shfl_up_sync(H4_FULL, flag, o);
      if (lane >= o && !flag) sum += other;
      if (lane >= o) flag = flag || other_flag;
    }
    float carry = __shfl_up_sync(H4_FULL, sum, 1);
    if (lane == 0) carry = 0.0f;
    bool open = true;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
      open = open && !head[r];
      a.out[base + r] = v[r] + (open ? carry : 0.0f);
    }
  }
}

// 5. Paged attention for decoding (vLLM's paged_attention_v1, one warp per sequence): the
//    keys and values of 512 tokens gathered through a block table of 16-token blocks, head 64
//    (2 per lane), online softmax.
__device__ __forceinline__ void paged_attn_body(const Args& a) {
  const long long seq = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (seq >= a.n) return;
  const float2 q = reinterpret_cast<const float2*>(a.x + seq * 64)[lane];
  const int* table = a.idx + seq * (a.k / 16);
  const float* keys = a.y;
  const float* values = a.y + (long long)a.m * 16 * 64;
  float m = -CUDART_INF_F, l = 0.0f, o0 = 0.0f, o1 = 0.0f;
  for (int t = 0; t < a.k; ++t) {
    const long long slot = (long long)table[t / 16] * 16 + t % 16;
    const float2 key = reinterpret_cast<const float2*>(keys + slot * 64)[lane];
    const float s = h4_warp_sum(q.x * key.x + q.y * key.y) * a.alpha;
    const float m_new = fmaxf(m, s);
    const float correction = __expf(m - m_new), p = __expf(s - m_new);
    const float2 value = reinterpret_cast<const float2*>(values + slot * 64)[lane];
    l = l * correction + p;
    o0 = o0 * correction + p * value.x;
    o1 = o1 * correction + p * value.y;
    m = m_new;
  }
  reinterpret_cast<float2*>(a.out + seq * 64)[lane] = make_float2(o0 / l, o1 / l);
}

// 6. GEMM with a double-buffered shared-memory tile (the "prefetch the next tile into
//    registers" SGEMM of public tutorials): 64x64 tile, K by 16, 4x4 outputs per thread.
__device__ __forceinline__ void gemm_db_body(const Args& a) {
  __shared__ float As[2][16][64];
  __shared__ float Bs[2][16][64];
  const int N = a.m, tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  // Each thread loads 4 of A's 64x16 tile and 4 of B's 16x64 tile per step.
  const int a_row = threadIdx.x / 4, a_col = (threadIdx.x % 4) * 4;
  const int b_row = threadIdx.x / 16, b_col = (threadIdx.x % 16) * 4;
  float4 a_next = *reinterpret_cast<const float4*>(a.x + (long long)(row0 + a_row) * N + a_col);
  float4 b_next = *reinterpret_cast<const float4*>(a.y + (long long)b_row * N + col0 + b_col);
  float acc[4][4] = {};
  int buffer = 0;
  for (int k0 = 0; k0 < N; k0 += 16) {
    As[buffer][a_col + 0][a_row] = a_next.x;
    As[buffer][a_col + 1][a_row] = a_next.y;
    As[buffer][a_col + 2][a_row] = a_next.z;
    As[buffer][a_col + 3][a_row] = a_next.w;
    *reinterpret_cast<float4*>(&Bs[buffer][b_row][b_col]) = b_next;
    __syncthreads();
    if (k0 + 16 < N) {
      a_next = *reinterpret_cast<const float4*>(a.x + (long long)(row0 + a_row) * N + k0 + 16 + a_col);
      b_next = *reinterpret_cast<const float4*>(a.y + (long long)(k0 + 16 + b_row) * N + col0 + b_col);
    }
#pragma unroll
    for (int k = 0; k < 16; ++k) {
      float ar[4], br[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) ar[i] = As[buffer][k][ty * 4 + i];
#pragma unroll
      for (int j = 0; j < 4; ++j) br[j] = Bs[buffer][k][tx * 4 + j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += ar[i] * br[j];
    }
    buffer ^= 1;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      a.out[(long long)(row0 + ty * 4 + i) * N + col0 + tx * 4 + j] = acc[i][j];
}

// 7. Tall-skinny GEMM, C (M x 16) = A (M x 256) * B (256 x 16), A stored K-major so a thread
//    per row reads coalesced; B in shared memory, 16 accumulators per thread (the projection
//    to a few outputs of public MoE routers and LoRA down-projections).
__device__ __forceinline__ void gemm_skinny_body(const Args& a) {
  __shared__ float Bs[256][16];
  for (int e = threadIdx.x; e < 256 * 16; e += blockDim.x) Bs[e / 16][e % 16] = a.y[e];
  __syncthreads();
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= a.n) return;
  float acc[16] = {};
  for (int k = 0; k < 256; ++k) {
    const float v = a.x[(long long)k * a.n + row];
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] += v * Bs[k][j];
  }
#pragma unroll
  for (int j = 0; j < 16; ++j) a.out[row * 16 + j] = acc[j];
}

// 8. Fused residual add and RMS norm (vLLM's fused_add_rms_norm): a block of 256 per row of
//    4096, 16 values per thread in registers, the sum of squares reduced through shared memory;
//    the new residual and the normalized row both written.
__device__ __forceinline__ void add_rms_body(const Args& a) {
  __shared__ float partial[8];
  const long long row = blockIdx.x;
  const float* x = a.x + row * 4096;
  const float* residual = a.x + (a.n + row) * 4096;
  float v[16], ss = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int j = threadIdx.x + 256 * i;
    v[i] = x[j] + residual[j];
    ss += v[i] * v[i];
  }
  ss = h4_warp_sum(ss);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int w = 0; w < 8; ++w) total += partial[w];
  const float r = rsqrtf(total / 4096.0f + 1e-6f);
  float* out = a.out + row * 8192;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int j = threadIdx.x + 256 * i;
    out[j] = v[i];
    out[4096 + j] = v[i] * r * a.y[j];
  }
}

// 9. LAMB's first stage (Apex's multi_tensor_lamb stage 1): Adam moments with bias
//    correction and weight decay into the update, float4; parameters, moments and gradients
//    read, the new moments and the update written.
__device__ __forceinline__ void lamb_body(const Args& a) {
  const long long n4 = a.n / 4;
  const float4* p = reinterpret_cast<const float4*>(a.x);
  const float4* m = p + n4;
  const float4* v = p + 2 * n4;
  const float4* g = reinterpret_cast<const float4*>(a.y);
  float4* out = reinterpret_cast<float4*>(a.out);
  const float b1 = 0.9f, b2 = 0.999f, c1 = 1.0f / (1.0f - 0.9f * 0.9f), c2 = 1.0f / (1.0f - 0.999f * 0.999f);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
       i += (long long)gridDim.x * blockDim.x) {
    const float4 pi = p[i], mi = m[i], vi = v[i], gi = g[i];
    const float* pe = reinterpret_cast<const float*>(&pi);
    const float* me = reinterpret_cast<const float*>(&mi);
    const float* ve = reinterpret_cast<const float*>(&vi);
    const float* ge = reinterpret_cast<const float*>(&gi);
    float4 mo, vo, uo;
    float* mn = reinterpret_cast<float*>(&mo);
    float* vn = reinterpret_cast<float*>(&vo);
    float* un = reinterpret_cast<float*>(&uo);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const float grad = ge[c] * a.alpha;
      mn[c] = b1 * me[c] + (1.0f - b1) * grad;
      vn[c] = b2 * fabsf(ve[c]) + (1.0f - b2) * grad * grad;
      un[c] = (mn[c] * c1) / (sqrtf(vn[c] * c2) + 1e-6f) + 0.01f * pe[c];
    }
    out[i] = mo;
    out[n4 + i] = vo;
    out[2 * n4 + i] = uo;
  }
}

// 10. Weighted histogram of 128 bins (PyTorch's histc with weights, the shared-memory
//     privatised form): float atomics into the block's bins, then one atomic per bin.
__device__ __forceinline__ void hist_weighted_body(const Args& a) {
  __shared__ float bins[128];
  for (int b = threadIdx.x; b < 128; b += blockDim.x) bins[b] = 0.0f;
  __syncthreads();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const int bin = min(127, (int)(a.x[i] * 128.0f));
    atomicAdd(&bins[bin], a.y[i]);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < 128; b += blockDim.x) atomicAdd(&a.out[b], bins[b]);
}

// 11. Causal depthwise 1D convolution of width 4 with SiLU (Mamba's causal_conv1d_fwd),
//     channels-last: a thread per (batch, channel, chunk of 256 steps), the window in registers.
__device__ __forceinline__ void causal_conv1d_body(const Args& a) {
  const int C = a.m, L = a.k;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int c = (int)(t % C);
  const long long rest = t / C;
  const int chunk = (int)(rest % (L / 256));
  const long long batch = rest / (L / 256);
  if (batch >= a.n) return;
  const float w0 = a.y[c], w1 = a.y[C + c], w2 = a.y[2 * C + c], w3 = a.y[3 * C + c];
  const float bias = a.y[4 * C + c];
  const float* x = a.x + batch * L * C + c;
  float* out = a.out + batch * L * C + c;
  const int t0 = chunk * 256;
  float x0 = t0 >= 3 ? x[(long long)(t0 - 3) * C] : 0.0f;
  float x1 = t0 >= 2 ? x[(long long)(t0 - 2) * C] : 0.0f;
  float x2 = t0 >= 1 ? x[(long long)(t0 - 1) * C] : 0.0f;
  for (int s = t0; s < t0 + 256; ++s) {
    const float x3 = x[(long long)s * C];
    const float y = bias + w0 * x0 + w1 * x1 + w2 * x2 + w3 * x3;
    out[(long long)s * C] = y / (1.0f + __expf(-y));
    x0 = x1;
    x1 = x2;
    x2 = x3;
  }
}

// 12. Radix sort's upsweep (CUB's onesweep histogram pass): per block, the counts of one
//     4-bit digit over a tile of 4096 keys, per-warp counters in shared memory.
__device__ __forceinline__ void radix_count_body(const Args& a) {
  __shared__ unsigned counts[8][16];
  const int warp = threadIdx.x / 32;
  if (threadIdx.x < 128) counts[threadIdx.x / 16][threadIdx.x % 16] = 0;
  __syncthreads();
  const long long base = (long long)blockIdx.x * 4096;
#pragma unroll 4
  for (int i = 0; i < 16; ++i) {
    const unsigned key = (unsigned)a.idx[base + i * 256 + threadIdx.x];
    atomicAdd(&counts[warp][(key >> a.k) & 15u], 1u);
  }
  __syncthreads();
  if (threadIdx.x < 16) {
    unsigned total = 0;
#pragma unroll
    for (int w = 0; w < 8; ++w) total += counts[w][threadIdx.x];
    a.counts[(long long)blockIdx.x * 16 + threadIdx.x] = total;
  }
}

// 13. Warp-wide bitonic sort of 256 keys, 8 per lane in registers (the register sort of
//     CUB's WarpMergeSort and of top-k kernels): in-lane compare-exchanges for strides below 8,
//     shuffles above; grid-stride over the warp's tiles.
__device__ __forceinline__ void warp_bitonic_body(const Args& a) {
  const int lane = threadIdx.x % 32;
  const long long warps = (long long)gridDim.x * blockDim.x / 32;
  for (long long tile = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32; tile < a.n / 256;
       tile += warps) {
    float v[8];
#pragma unroll
    for (int r = 0; r < 8; ++r) v[r] = a.x[tile * 256 + lane * 8 + r];
#pragma unroll
    for (int kk = 1; kk <= 8; ++kk) {
      const int k = 1 << kk;
#pragma unroll
      for (int jj = kk - 1; jj >= 0; --jj) {
        const int j = 1 << jj;
        if (j >= 8) {
#pragma unroll
          for (int r = 0; r < 8; ++r) {
            const int i = lane * 8 + r;
            const float other = __shfl_xor_sync(H4_FULL, v[r], j / 8);
            const bool up = (i & k) == 0, lower = (i & j) == 0;
            v[r] = (lower == up) ? fminf(v[r], other) : fmaxf(v[r], other);
          }
        } else {
#pragma unroll
          for (int r = 0; r < 8; ++r) {
            const int p = r ^ j;
            if (p > r) {
              const bool up = ((lane * 8 + r) & k) == 0;
              const float lo = fminf(v[r], v[p]), hi = fmaxf(v[r], v[p]);
              v[r] = up ? lo : hi;
              v[p] = up ? hi : lo;
            }
          }
        }
      }
    }
#pragma unroll
    for (int r = 0; r < 8; ++r) a.out[tile * 256 + lane * 8 + r] = v[r];
  }
}

// 14. im2col for a 3x3 convolution with padding 1 (Caffe's im2col_gpu_kernel), NCHW: a thread
//     per (channel, output pixel), grid-stride, its 9 column entries written.
__device__ __forceinline__ void im2col_body(const Args& a) {
  const int H = a.m, W = a.m;
  const long long total = a.n * H * W;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += (long long)gridDim.x * blockDim.x) {
    const int w = (int)(index % W);
    const int h = (int)((index / W) % H);
    const long long c = index / ((long long)W * H);
    const float* image = a.x + c * H * W;
    float* column = a.out + (c * 9 * H + h) * W + w;
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
      for (int j = 0; j < 3; ++j) {
        const int y = h - 1 + i, x = w - 1 + j;
        column[(long long)(i * 3 + j) * H * W] =
            (y >= 0 && x >= 0 && y < H && x < W) ? image[y * W + x] : 0.0f;
      }
  }
}

// 15. Rotary embedding, GPT-NeoX style, from a cos/sin cache (vLLM's rotary_embedding_kernel):
//     a block per token, 32 query heads and 8 key heads of 128, the cache row of the token's
//     position.
__device__ __forceinline__ void rope_cache_body(const Args& a) {
  const long long token = blockIdx.x;
  const int position = a.idx[token];
  const float* cache = a.y + (long long)position * 128;
  const float* q = a.x + token * 40 * 128;
  float* out = a.out + token * 40 * 128;
  for (int e = threadIdx.x; e < 40 * 64; e += blockDim.x) {
    const int head = e / 64, i = e % 64;
    const float c = cache[i], s = cache[64 + i];
    const float x1 = q[head * 128 + i], x2 = q[head * 128 + 64 + i];
    out[head * 128 + i] = x1 * c - x2 * s;
    out[head * 128 + 64 + i] = x2 * c + x1 * s;
  }
}

// 16. Selective scan (Mamba's selective_scan_fwd, one channel per thread): a state of 16 in
//     registers carried over 256 steps, delta through softplus, B and C shared by the block's
//     channels.
__device__ __forceinline__ void selective_scan_body(const Args& a) {
  const int D = a.m, L = a.k;
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const int d = (int)(t % D);
  const long long batch = t / D;
  if (batch >= a.n) return;
  const float* u = a.x + batch * L * D + d;
  const float* dt = a.y + batch * L * D + d;
  const float* BC = a.x + a.n * L * D + batch * L * 32;
  float h[16] = {};
  float* out = a.out + batch * L * D + d;
  for (int s = 0; s < L; ++s) {
    const float raw = dt[(long long)s * D];
    const float delta = raw > 20.0f ? raw : log1pf(__expf(raw));
    const float x = u[(long long)s * D];
    float y = 0.0f;
#pragma unroll
    for (int n = 0; n < 16; ++n) {
      const float A = -0.25f * (n + 1);
      h[n] = __expf(delta * A) * h[n] + delta * BC[s * 32 + n] * x;
      y += BC[s * 32 + 16 + n] * h[n];
    }
    out[(long long)s * D] = y + 0.5f * x;
  }
}

// 17. Bilinear grid sampling (PyTorch's grid_sampler_2d, align_corners=false, zero padding),
//     NCHW with 16 channels: a thread per output pixel, the 4 corners gathered per channel.
__device__ __forceinline__ void grid_sample_body(const Args& a) {
  const int H = a.m, W = a.m, C = 16;
  const long long total = a.n * H * W;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < total;
       index += (long long)gridDim.x * blockDim.x) {
    const long long batch = index / ((long long)H * W);
    const long long pixel = index % ((long long)H * W);
    const float gx = a.y[index * 2], gy = a.y[index * 2 + 1];
    const float ix = ((gx + 1.0f) * W - 1.0f) * 0.5f, iy = ((gy + 1.0f) * H - 1.0f) * 0.5f;
    const int x0 = (int)floorf(ix), y0 = (int)floorf(iy);
    const float fx = ix - x0, fy = iy - y0;
    const bool in00 = x0 >= 0 && y0 >= 0 && x0 < W && y0 < H;
    const bool in01 = x0 + 1 >= 0 && y0 >= 0 && x0 + 1 < W && y0 < H;
    const bool in10 = x0 >= 0 && y0 + 1 >= 0 && x0 < W && y0 + 1 < H;
    const bool in11 = x0 + 1 >= 0 && y0 + 1 >= 0 && x0 + 1 < W && y0 + 1 < H;
    for (int c = 0; c < C; ++c) {
      const float* plane = a.x + (batch * C + c) * H * W;
      const float v00 = in00 ? plane[y0 * W + x0] : 0.0f;
      const float v01 = in01 ? plane[y0 * W + x0 + 1] : 0.0f;
      const float v10 = in10 ? plane[(y0 + 1) * W + x0] : 0.0f;
      const float v11 = in11 ? plane[(y0 + 1) * W + x0 + 1] : 0.0f;
      a.out[(batch * C + c) * H * W + pixel] =
          (v00 * (1.0f - fx) + v01 * fx) * (1.0f - fy) + (v10 * (1.0f - fx) + v11 * fx) * fy;
    }
  }
}

// 18. Row-wise int8 quantization by absolute maximum (bitsandbytes' / LLM.int8's row
//     quantization): a warp per row of 1024, 32 values per lane in registers.
__device__ __forceinline__ void quant_rows_body(const Args& a) {
  const long long row = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= a.n) return;
  const float4* x = reinterpret_cast<const float4*>(a.x + row * 1024);
  float4 v[8];
  float amax = 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    v[i] = x[lane + 32 * i];
    amax = fmaxf(amax, fmaxf(fmaxf(fabsf(v[i].x), fabsf(v[i].y)), fmaxf(fabsf(v[i].z), fabsf(v[i].w))));
  }
  amax = h4_warp_max(amax);
  const float scale = 127.0f / fmaxf(amax, 1e-8f);
  float4* out = reinterpret_cast<float4*>(a.out + row * 1024);
#pragma unroll
  for (int i = 0; i < 8; ++i)
    out[lane + 32 * i] = make_float4(rintf(v[i].x * scale), rintf(v[i].y * scale),
                                     rintf(v[i].z * scale), rintf(v[i].w * scale));
  if (lane == 0) a.out[a.n * 1024 + row] = amax / 127.0f;
}

KERNEL_128(ln_welford)
KERNEL_128(softmax_causal)
KERNEL_256(amax_cast)
KERNEL_256(seg_scan)
KERNEL_128(paged_attn)
KERNEL_256(gemm_db)
KERNEL_256(gemm_skinny)
KERNEL_256(add_rms)
KERNEL_256(lamb)
KERNEL_256(hist_weighted)
KERNEL_128(causal_conv1d)
KERNEL_256(radix_count)
KERNEL_128(warp_bitonic)
KERNEL_256(im2col)
KERNEL_128(rope_cache)
KERNEL_128(selective_scan)
KERNEL_256(grid_sample)
KERNEL_256(quant_rows)
