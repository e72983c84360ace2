// The held-out corpus of the auto-bounds proof (`OCCUPANCY_AUTOBOUNDS_SET=heldout`): kernels
// written after the latency model of the objective was (docs/verification.md, section 9), to
// check it on code it was not designed against. Same Args and variants as kernels.cuh; their
// problems are heldout_problems.inc. Included by autobounds.cu in place of its kernel list.
#pragma once

// 1. Sparse matrix-vector product, ELLPACK (k non-zeros per row, column-major for coalescing):
//    a gather from a 64 MB vector per non-zero, a thread per row.
__device__ __forceinline__ void spmv_ell_body(const Args& a) {
  const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= a.n) return;
  float sum = 0.0f;
#pragma unroll 8
  for (int j = 0; j < a.k; ++j) {
    const long long e = (long long)j * a.n + row;
    sum += a.x[e] * a.y[a.idx[e]];
  }
  a.out[row] = sum;
}

// 2. A 7-point 3D stencil marching up z, two planes in registers (examples/auto-bounds' README
//    kind of kernel): a 32 x 8 block per (x, y) tile.
__device__ __forceinline__ void stencil7_body(const Args& a) {
  const int nx = a.m, ny = a.m, nz = a.k;
  const int x = blockIdx.x * 32 + threadIdx.x % 32, y = blockIdx.y * 8 + threadIdx.x / 32;
  if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
  const long long plane = (long long)nx * ny;
  const float* column = a.x + (long long)y * nx + x;
  float below = column[0], here = column[plane];
  for (int z = 1; z < nz - 1; ++z) {
    const float above = column[(z + 1) * plane];
    const float* at = column + z * plane;
    a.out[z * plane + (long long)y * nx + x] =
        0.4f * here + 0.1f * (below + above + at[-1] + at[1] + at[-nx] + at[nx]);
    below = here;
    here = above;
  }
}

// 3. All-pairs gravity: bodies staged through shared memory 256 at a time, rsqrtf per pair.
__device__ __forceinline__ void nbody_body(const Args& a) {
  __shared__ float4 tile[256];
  const float4* bodies = reinterpret_cast<const float4*>(a.x);
  const int n = (int)a.n;
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 p = bodies[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (int base = 0; base < n; base += 256) {
    tile[threadIdx.x] = bodies[base + threadIdx.x];
    __syncthreads();
#pragma unroll 8
    for (int j = 0; j < 256; ++j) {
      const float4 q = tile[j];
      const float dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
      const float inverse = rsqrtf(dx * dx + dy * dy + dz * dz + 1e-3f);
      const float scale = q.w * inverse * inverse * inverse;
      ax += dx * scale;
      ay += dy * scale;
      az += dz * scale;
    }
    __syncthreads();
  }
  a.out[i] = ax;
  a.out[n + i] = ay;
  a.out[2 * n + i] = az;
}

// 4. Row softmax, 2048 values per row, a 256-thread block per row, 8 values per thread in
//    registers; maximum and sum by warp shuffles and shared memory.
__device__ __forceinline__ float block_reduce(float value, bool maximum) {
  __shared__ float partial[8];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = maximum ? fmaxf(value, other) : value + other;
  }
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
  __syncthreads();
  float total = partial[0];
#pragma unroll
  for (int w = 1; w < 8; ++w) total = maximum ? fmaxf(total, partial[w]) : total + partial[w];
  __syncthreads();
  return total;
}

__device__ __forceinline__ void softmax_row_body(const Args& a) {
  const float* in = a.x + (long long)blockIdx.x * 2048;
  float* out = a.out + (long long)blockIdx.x * 2048;
  float v[8];
  float largest = -CUDART_INF_F;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    v[c] = in[c * 256 + threadIdx.x];
    largest = fmaxf(largest, v[c]);
  }
  largest = block_reduce(largest, true);
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    v[c] = __expf(v[c] - largest);
    sum += v[c];
  }
  const float inverse = 1.0f / block_reduce(sum, false);
#pragma unroll
  for (int c = 0; c < 8; ++c) out[c * 256 + threadIdx.x] = v[c] * inverse;
}

// 5. Dense matrix-vector product, a warp per row of 8192, float4 loads, 4 in flight per lane.
__device__ __forceinline__ void gemv_body(const Args& a) {
  const int m = a.m;
  const long long row = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const float4* matrix = reinterpret_cast<const float4*>(a.x + row * m);
  const float4* vector = reinterpret_cast<const float4*>(a.y);
  float sum = 0.0f;
  for (int c = lane; c < m / 4; c += 128) {
    float4 w[4], u[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      w[q] = matrix[c + q * 32];
      u[q] = __ldg(&vector[c + q * 32]);
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) sum += w[q].x * u[q].x + w[q].y * u[q].y + w[q].z * u[q].z + w[q].w * u[q].w;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) a.out[row] = sum;
}

// 6. Mandelbrot escape counts: compute-bound, divergent, few registers.
__device__ __forceinline__ void mandel_body(const Args& a) {
  const int side = a.m;
  const long long pixel = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (pixel >= (long long)side * side) return;
  const float cx = -2.0f + 2.5f * (float)(pixel % side) / side;
  const float cy = -1.25f + 2.5f * (float)(pixel / side) / side;
  float zx = 0.0f, zy = 0.0f;
  int steps = 0;
  while (steps < a.k && zx * zx + zy * zy < 4.0f) {
    const float t = zx * zx - zy * zy + cx;
    zy = 2.0f * zx * zy + cy;
    zx = t;
    ++steps;
  }
  a.out[pixel] = (float)steps;
}

// 7. Bitonic sort of 512 keys per block in shared memory, two per thread.
__device__ __forceinline__ void bitonic_body(const Args& a) {
  __shared__ float keys[512];
  const float* in = a.x + (long long)blockIdx.x * 512;
  keys[threadIdx.x] = in[threadIdx.x];
  keys[threadIdx.x + 256] = in[threadIdx.x + 256];
  __syncthreads();
  for (int size = 2; size <= 512; size *= 2) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      const int i = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
      const int j = i + stride;
      const bool ascending = (i & size) == 0;
      const float left = keys[i], right = keys[j];
      if ((left > right) == ascending) {
        keys[i] = right;
        keys[j] = left;
      }
      __syncthreads();
    }
  }
  float* out = a.out + (long long)blockIdx.x * 512;
  out[threadIdx.x] = keys[threadIdx.x];
  out[threadIdx.x + 256] = keys[threadIdx.x + 256];
}

// 8. examples/auto-bounds' kernel: a 64 x 64 tile of C per 256-thread block, 4 x 4 per thread,
//    K staged through shared memory 8 at a time.
__device__ __forceinline__ void tile_gemm_body(const Args& a) {
  __shared__ float a_tile[8][64 + 4];
  __shared__ float b_tile[8][64];
  const int n = a.m;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < n; k0 += 8) {
    for (int load = threadIdx.x; load < 8 * 64; load += 256) {
      const int m = load / 8, k = load % 8;
      a_tile[k][m] = a.x[(long long)(row0 + m) * n + k0 + k];
      const int kb = load / 64, col = load % 64;
      b_tile[kb][col] = a.y[(long long)(k0 + kb) * n + col0 + col];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 8; ++k) {
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
    for (int j = 0; j < 4; ++j) a.out[(long long)(row0 + ty * 4 + i) * n + col0 + tx * 4 + j] = acc[i][j];
}

// Column indices below `range` for the sparse matrix, from a hash of the position.
__global__ void fill_indices(int* p, long long count, int range) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ 0x9e3779b9u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = (int)(h % (unsigned)range);
  }
}

KERNEL_256(spmv_ell)
KERNEL_256(stencil7)
KERNEL_256(nbody)
KERNEL_256(softmax_row)
KERNEL_256(gemv)
KERNEL_256(mandel)
KERNEL_256(bitonic)
KERNEL_256(tile_gemm)
