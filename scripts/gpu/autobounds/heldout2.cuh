// The second held-out corpus of the auto-bounds proof (`OCCUPANCY_AUTOBOUNDS_SET=heldout2`,
// issue #34): 10 kernels of kinds public training and inference code carries, written fresh
// for this repository after the objective of commit 3e53881 was fixed (the most warps the
// latency model does not predict slower, its 20% override) and timed once, so that objective
// is judged on code it was not chosen on. Same Args and variants as kernels.cuh; the problems
// are heldout2_problems.inc.
#pragma once

__device__ __forceinline__ float h2_warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// 1. Group norm over NCHW activations: a block per (sample, group) of 8 channels x 1024
//    pixels, mean and variance by a block reduction, then the normalized values.
__device__ __forceinline__ void groupnorm_body(const Args& a) {
  __shared__ float partial[2][32];
  const long long base = (long long)blockIdx.x * 8192;
  float s = 0.0f, q = 0.0f;
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) {
    const float v = a.x[base + i];
    s += v;
    q += v * v;
  }
  s = h2_warp_sum(s);
  q = h2_warp_sum(q);
  if (threadIdx.x % 32 == 0) { partial[0][threadIdx.x / 32] = s; partial[1][threadIdx.x / 32] = q; }
  __syncthreads();
  s = 0.0f; q = 0.0f;
  for (int w = 0; w < (int)blockDim.x / 32; ++w) { s += partial[0][w]; q += partial[1][w]; }
  const float mean = s / 8192.0f, rstd = rsqrtf(q / 8192.0f - mean * mean + 1e-5f);
  const int group = blockIdx.x % 32;
  for (int i = threadIdx.x; i < 8192; i += blockDim.x) {
    const int channel = group * 8 + i / 1024;
    a.out[base + i] = (a.x[base + i] - mean) * rstd * a.y[channel] + a.y[256 + channel];
  }
}

// 2. Softmax backward, a warp per row of 1024: dx = y * (dy - sum(y * dy)).
__device__ __forceinline__ void softmax_bwd_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float* y = a.x + (long long)warp * 1024;
  const float* dy = a.y + (long long)warp * 1024;
  float dot = 0.0f;
  for (int i = lane; i < 1024; i += 32) dot += y[i] * dy[i];
  dot = h2_warp_sum(dot);
  float* dx = a.out + (long long)warp * 1024;
  for (int i = lane; i < 1024; i += 32) dx[i] = y[i] * (dy[i] - dot);
}

// 3. Layer norm backward for the input, a warp per row of 512, the row's x and dy in
//    registers (16 values each per lane), two reductions.
__device__ __forceinline__ void ln_bwd_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const float* x = a.x + (long long)warp * 512;
  const float* dy = a.y + (long long)warp * 512;
  float xv[16], gv[16], s = 0.0f, q = 0.0f;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    xv[j] = x[lane + 32 * j];
    gv[j] = dy[lane + 32 * j];
    s += xv[j];
    q += xv[j] * xv[j];
  }
  s = h2_warp_sum(s);
  q = h2_warp_sum(q);
  const float mean = s / 512.0f, rstd = rsqrtf(q / 512.0f - mean * mean + 1e-5f);
  float d1 = 0.0f, d2 = 0.0f;
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float xhat = (xv[j] - mean) * rstd;
    d1 += gv[j];
    d2 += gv[j] * xhat;
  }
  d1 = h2_warp_sum(d1) / 512.0f;
  d2 = h2_warp_sum(d2) / 512.0f;
  float* dx = a.out + (long long)warp * 512;
#pragma unroll
  for (int j = 0; j < 16; ++j) dx[lane + 32 * j] = rstd * (gv[j] - d1 - (xv[j] - mean) * rstd * d2);
}

// 4. Embedding bag: a warp per bag sums 16 gathered rows of 128 floats (float4 per lane).
__device__ __forceinline__ void embedding_bag_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  float4 acc = make_float4(0, 0, 0, 0);
  for (int j = 0; j < 16; ++j) {
    const long long row = a.idx[(long long)warp * 16 + j];
    const float4 v = reinterpret_cast<const float4*>(a.x + row * 128)[lane];
    acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
  }
  reinterpret_cast<float4*>(a.out + (long long)warp * 128)[lane] = acc;
}

// 5. Depthwise 3x3 convolution over NHWC with 64 channels: a thread per output value.
__device__ __forceinline__ void depthwise_body(const Args& a) {
  const int H = a.m, W = a.m, C = 64;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const int c = (int)(i % C);
    const int x = (int)((i / C) % W), y = (int)((i / C / W) % H);
    const long long image = i / ((long long)C * W * H);
    float s = 0.0f;
#pragma unroll
    for (int dy = -1; dy <= 1; ++dy)
#pragma unroll
      for (int dx = -1; dx <= 1; ++dx) {
        const int yy = y + dy, xx = x + dx;
        if (yy >= 0 && yy < H && xx >= 0 && xx < W)
          s += a.x[((image * H + yy) * W + xx) * C + c] * a.y[((dy + 1) * 3 + dx + 1) * C + c];
      }
    a.out[i] = s;
  }
}

// 6. Batched 16x16x16 matrix products: a thread per output row of one product, the row of A
//    and the 16 outputs in registers, B read through the cache.
__device__ __forceinline__ void batched16_body(const Args& a) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long batch = t / 16;
  const int row = (int)(t % 16);
  if (batch >= a.n) return;
  const float* A = a.x + batch * 256 + row * 16;
  const float* B = a.y + batch * 256;
  float ar[16], o[16];
#pragma unroll
  for (int k = 0; k < 16; ++k) { ar[k] = A[k]; o[k] = 0.0f; }
#pragma unroll
  for (int k = 0; k < 16; ++k)
#pragma unroll
    for (int j = 0; j < 16; ++j) o[j] += ar[k] * __ldg(B + k * 16 + j);
#pragma unroll
  for (int j = 0; j < 16; ++j) a.out[batch * 256 + row * 16 + j] = o[j];
}

// 7. Top 8 of each row of 256 scores, a thread per row, kept sorted in registers.
__device__ __forceinline__ void topk_body(const Args& a) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= a.n) return;
  float best[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) best[j] = -CUDART_INF_F;
  const float* x = a.x + row * 256;
  for (int i = 0; i < 256; ++i) {
    float v = x[i];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float hi = fmaxf(best[j], v), lo = fminf(best[j], v);
      best[j] = hi;
      v = lo;
    }
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) a.out[row * 8 + j] = best[j];
}

// 8. k-means assignment: each point of 16 dimensions to the nearest of 64 centroids held in
//    shared memory; the index and distance out.
__device__ __forceinline__ void kmeans_body(const Args& a) {
  __shared__ float centroids[64 * 16];
  for (int i = threadIdx.x; i < 64 * 16; i += blockDim.x) centroids[i] = a.y[i];
  __syncthreads();
  const long long point = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (point >= a.n) return;
  float p[16];
#pragma unroll
  for (int d = 0; d < 16; ++d) p[d] = a.x[point * 16 + d];
  float best = CUDART_INF_F;
  int at = 0;
  for (int c = 0; c < 64; ++c) {
    float dist = 0.0f;
#pragma unroll
    for (int d = 0; d < 16; ++d) {
      const float e = p[d] - centroids[c * 16 + d];
      dist += e * e;
    }
    if (dist < best) { best = dist; at = c; }
  }
  a.out[2 * point] = (float)at;
  a.out[2 * point + 1] = best;
}

// 9. Row sums of a CSR matrix with rows of varying length (4 to 64), a warp per row.
__device__ __forceinline__ void csr_rows_body(const Args& a) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (warp >= a.n) return;
  const int begin = a.idx[warp], end = a.idx[warp + 1];
  float s = 0.0f;
  for (int e = begin + lane; e < end; e += 32) s += a.x[e] * a.y[(e * 2654435761u) & ((1 << 22) - 1)];
  s = h2_warp_sum(s);
  if (lane == 0) a.out[warp] = s;
}

// 10. Bilinear 2x upsampling of 64-channel NCHW images: a thread per output pixel.
__device__ __forceinline__ void upsample_body(const Args& a) {
  const int H = a.m, W = a.m, OH = 2 * a.m, OW = 2 * a.m;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n;
       i += (long long)gridDim.x * blockDim.x) {
    const int ox = (int)(i % OW), oy = (int)((i / OW) % OH);
    const long long plane = i / ((long long)OW * OH);
    const float fy = fmaxf(0.0f, (oy + 0.5f) * 0.5f - 0.5f), fx = fmaxf(0.0f, (ox + 0.5f) * 0.5f - 0.5f);
    const int y0 = (int)fy, x0 = (int)fx;
    const int y1 = min(y0 + 1, H - 1), x1 = min(x0 + 1, W - 1);
    const float wy = fy - y0, wx = fx - x0;
    const float* p = a.x + plane * H * W;
    a.out[i] = (1 - wy) * ((1 - wx) * p[y0 * W + x0] + wx * p[y0 * W + x1]) +
               wy * ((1 - wx) * p[y1 * W + x0] + wx * p[y1 * W + x1]);
  }
}

// Row offsets of the CSR matrix: row r has 4 + (hash(r) % 61) entries.
__global__ void fill_offsets(int* offsets, int rows) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  int at = 0;
  for (int r = 0; r < rows; ++r) {
    offsets[r] = at;
    unsigned h = (unsigned)r * 2654435761u;
    h ^= h >> 13;
    at += 4 + (int)(h % 61u);
  }
  offsets[rows] = at;
}

// Row indices for the embedding bags.
__global__ void fill_bag_rows(int* p, long long count, int range) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2246822519u ^ 0x27d4eb2fu;
    h ^= h >> 15;
    h *= 2654435761u;
    h ^= h >> 13;
    p[i] = (int)(h % (unsigned)range);
  }
}

KERNEL_256(groupnorm)
KERNEL_256(softmax_bwd)
KERNEL_128(ln_bwd)
KERNEL_256(embedding_bag)
KERNEL_256(depthwise)
KERNEL_256(batched16)
KERNEL_128(topk)
KERNEL_256(kmeans)
KERNEL_256(csr_rows)
KERNEL_256(upsample)
