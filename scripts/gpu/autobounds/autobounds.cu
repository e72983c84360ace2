// The auto-bounds proof (issue #27; run by scripts/gpu-autobounds.sh): every kernel of
// kernels.cuh built without launch bounds (`bare`), with `__launch_bounds__(BLOCK)` (`lb`, what
// the build's "no minimum" compiles to) and with `__launch_bounds__(BLOCK, B)` for every B the
// SM's threads and block slots allow (`b1` ... `b32`), each variant timed with CUDA events
// (warm-up launches, then the median of --reps launches), on fixed inputs, with a grid of
// several waves. One CSV line per variant, written as it is measured (partial results survive a
// time limit): the variant's registers, local memory and resident blocks (the driver's), its
// time, and whether its output matches the `bare` variant's.
//
// Build: nvcc -O3 -arch=sm_90 -lineinfo -o autobounds autobounds.cu
//        (with -DAUTOBOUNDS_HELDOUT: the held-out corpus of heldout.cuh instead; with
//        -DAUTOBOUNDS_PUBLIC: the 25 kernels of public.cuh)
// Run:   ./autobounds --out raw.csv [--reps 30] [--only NAME] [--list]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels.cuh"

#define CUDA_CHECK(call)                                                              \
  do {                                                                                \
    cudaError_t error_ = (call);                                                      \
    if (error_ != cudaSuccess) {                                                      \
      fprintf(stderr, "autobounds: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,       \
              cudaGetErrorString(error_));                                            \
      exit(2);                                                                        \
    }                                                                                 \
  } while (0)

// ---- The variants: one __global__ per kernel and bound, registered in definition order. ----

struct Variant {
  const char* kernel;
  const char* label;  // bare, lb, b1 ... b32
  int min_blocks;     // -1: bare, 0: lb, B: __launch_bounds__(BLOCK, B)
  const void* function;
};

static std::vector<Variant>& registry() {
  static std::vector<Variant> variants;
  return variants;
}

struct Register {
  Register(const char* kernel, const char* label, int min_blocks, const void* function) {
    registry().push_back({kernel, label, min_blocks, function});
  }
};

#define VARIANT_BARE(NAME)                                                    \
  extern "C" __global__ void NAME##_bare(Args a) { NAME##_body(a); }          \
  static Register register_##NAME##_bare(#NAME, "bare", -1, (const void*)NAME##_bare);
#define VARIANT_LB(NAME, BLOCK)                                               \
  extern "C" __global__ void __launch_bounds__(BLOCK) NAME##_lb(Args a) { NAME##_body(a); } \
  static Register register_##NAME##_lb(#NAME, "lb", 0, (const void*)NAME##_lb);
#define VARIANT_B(NAME, BLOCK, B)                                             \
  extern "C" __global__ void __launch_bounds__(BLOCK, B) NAME##_b##B(Args a) { NAME##_body(a); } \
  static Register register_##NAME##_b##B(#NAME, "b" #B, B, (const void*)NAME##_b##B);

#define B_UP_TO_2(N, T) VARIANT_B(N, T, 1) VARIANT_B(N, T, 2)
#define B_UP_TO_8(N, T) B_UP_TO_2(N, T) VARIANT_B(N, T, 3) VARIANT_B(N, T, 4) \
  VARIANT_B(N, T, 5) VARIANT_B(N, T, 6) VARIANT_B(N, T, 7) VARIANT_B(N, T, 8)
#define B_UP_TO_16(N, T) B_UP_TO_8(N, T) VARIANT_B(N, T, 9) VARIANT_B(N, T, 10) \
  VARIANT_B(N, T, 11) VARIANT_B(N, T, 12) VARIANT_B(N, T, 13) VARIANT_B(N, T, 14) \
  VARIANT_B(N, T, 15) VARIANT_B(N, T, 16)
#define B_UP_TO_32(N, T) B_UP_TO_16(N, T) VARIANT_B(N, T, 17) VARIANT_B(N, T, 18) \
  VARIANT_B(N, T, 19) VARIANT_B(N, T, 20) VARIANT_B(N, T, 21) VARIANT_B(N, T, 22) \
  VARIANT_B(N, T, 23) VARIANT_B(N, T, 24) VARIANT_B(N, T, 25) VARIANT_B(N, T, 26) \
  VARIANT_B(N, T, 27) VARIANT_B(N, T, 28) VARIANT_B(N, T, 29) VARIANT_B(N, T, 30) \
  VARIANT_B(N, T, 31) VARIANT_B(N, T, 32)

// Every B up to the 2048 threads and 32 block slots an SM of sm_80/sm_90 holds.
#define KERNEL_256(N) VARIANT_BARE(N) VARIANT_LB(N, 256) B_UP_TO_8(N, 256)
#define KERNEL_128(N) VARIANT_BARE(N) VARIANT_LB(N, 128) B_UP_TO_16(N, 128)
#define KERNEL_64(N) VARIANT_BARE(N) VARIANT_LB(N, 64) B_UP_TO_32(N, 64)

#ifdef AUTOBOUNDS_HELDOUT
// The held-out corpus (scripts/gpu-autobounds.sh with OCCUPANCY_AUTOBOUNDS_SET=heldout).
#include "heldout.cuh"
#elif defined(AUTOBOUNDS_PUBLIC)
// The public-code corpus of issue #34 (OCCUPANCY_AUTOBOUNDS_SET=public).
#include "public.cuh"
#elif defined(AUTOBOUNDS_HELDOUT2)
// Issue #34's second held-out corpus (OCCUPANCY_AUTOBOUNDS_SET=heldout2).
#include "heldout2.cuh"
#elif defined(AUTOBOUNDS_HELDOUT3)
// Issue #34's third held-out corpus (OCCUPANCY_AUTOBOUNDS_SET=heldout3).
#include "heldout3.cuh"
#elif defined(AUTOBOUNDS_HELDOUT4)
// Issue #34's fourth held-out corpus (OCCUPANCY_AUTOBOUNDS_SET=heldout4).
#include "heldout4.cuh"
#elif defined(AUTOBOUNDS_HELDOUT5)
// Issue #34's fifth held-out corpus (OCCUPANCY_AUTOBOUNDS_SET=heldout5).
#include "heldout5.cuh"
#else
KERNEL_256(stream_triad)
KERNEL_256(gather_chase)
KERNEL_256(fma_ilp)
KERNEL_256(smem_gemm)
KERNEL_256(reduce_sum)
KERNEL_256(stencil25)
KERNEL_128(attention)
KERNEL_256(chain40)
KERNEL_256(chain96)
KERNEL_256(histogram)
KERNEL_256(transpose)
KERNEL_64(small_block)
KERNEL_256(dyn_conv)
KERNEL_256(sgemm128)
KERNEL_128(layernorm)
#endif

// ---- Inputs: filled on the device from a hash of the index, the same for every run. ----

__global__ void fill_floats(float* p, long long n, unsigned seed, float low, float high) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = low + (high - low) * (float)(h & 0xffffffu) / 16777216.0f;
  }
}

// A permutation of 0..m-1 (m a power of two) whose walk j -> p[j] is one cycle of all m
// (Hull-Dobell: an odd increment and a multiplier of 1 mod 4) and jumps far each step.
__global__ void fill_chase(int* p, int m) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m;
       i += (long long)gridDim.x * blockDim.x)
    p[i] = (int)((1664525u * (unsigned)i + 1013904223u) & (unsigned)(m - 1));
}

__global__ void fill_bytes(int* p, long long words) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u;
    h ^= h >> 16;
    p[i] = (int)(h * 2246822519u);
  }
}

// ---- One problem per kernel: its launch, inputs and what its output is. ----

struct Device {
  cudaDeviceProp props;
  int sms;
};

struct Problem {
  const char* kernel;
  int block;
  size_t dynamic_smem;
  std::function<dim3(const Device&)> grid;
  // Allocates and fills the inputs; returns the output to check and its length in floats.
  std::function<void(Args&, std::vector<void*>&)> setup;
  // Bytes of `args.out` / `args.counts` to zero before each launch (accumulating kernels).
  size_t reset_bytes;
  bool counts_output;  // the output is `args.counts` (unsigned), else `args.out`
  size_t check_len;    // floats (or counts) of the output compared across variants
};

static void* device_alloc(size_t bytes, std::vector<void*>& owned) {
  void* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, bytes));
  owned.push_back(p);
  return p;
}

static float* floats(long long n, unsigned seed, float low, float high, std::vector<void*>& owned) {
  float* p = (float*)device_alloc(sizeof(float) * n, owned);
  fill_floats<<<4096, 256>>>(p, n, seed, low, high);
  CUDA_CHECK(cudaGetLastError());
  return p;
}

static float* output(long long n, std::vector<void*>& owned) {
  float* p = (float*)device_alloc(sizeof(float) * n, owned);
  CUDA_CHECK(cudaMemset(p, 0, sizeof(float) * n));
  return p;
}

// A grid of `waves` full waves of the most blocks of `block` threads an SM holds.
static dim3 waves(const Device& device, int block, int count) {
  const int per_sm = std::min(device.props.maxThreadsPerMultiProcessor / block,
                              device.props.maxBlocksPerMultiProcessor);
  return dim3(device.sms * per_sm * count);
}

static std::vector<Problem> problems() {
  std::vector<Problem> list;
#ifdef AUTOBOUNDS_HELDOUT
#include "heldout_problems.inc"
#elif defined(AUTOBOUNDS_PUBLIC)
#include "public_problems.inc"
#elif defined(AUTOBOUNDS_HELDOUT2)
#include "heldout2_problems.inc"
#elif defined(AUTOBOUNDS_HELDOUT3)
#include "heldout3_problems.inc"
#elif defined(AUTOBOUNDS_HELDOUT4)
#include "heldout4_problems.inc"
#elif defined(AUTOBOUNDS_HELDOUT5)
#include "heldout5_problems.inc"
#else
  list.push_back({"stream_triad", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 28;
                    a.x = floats(a.n, 1, -1, 1, o);
                    a.y = floats(a.n, 2, -1, 1, o);
                    a.out = output(a.n, o);
                    a.alpha = 0.5f;
                  },
                  0, false, 1 << 20});
  list.push_back({"gather_chase", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.m = 1 << 24;
                    int* table = (int*)device_alloc(sizeof(int) * a.m, o);
                    fill_chase<<<4096, 256>>>(table, a.m);
                    a.idx = table;
                    a.k = 48;
                    a.out = output(1 << 22, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"fma_ilp", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.k = 4096;
                    a.alpha = 0.9999f;
                    a.out = output(1 << 22, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"smem_gemm", 256, 0, [](const Device&) { return dim3(3072 / 64, 3072 / 64); },
                  [](Args& a, std::vector<void*>& o) {
                    a.m = 3072;
                    a.x = floats(3072ll * 3072, 3, -1, 1, o);
                    a.y = floats(3072ll * 3072, 4, -1, 1, o);
                    a.out = output(3072ll * 3072, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"reduce_sum", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 29;
                    a.x = floats(a.n, 5, 0, 1, o);
                    a.out = output(1, o);
                  },
                  sizeof(float), false, 1});
  list.push_back({"stencil25", 256, 0,
                  [](const Device&) { return dim3(16384 / 32, 16384 / 32); },
                  [](Args& a, std::vector<void*>& o) {
                    a.m = 16384;
                    a.n = 16384ll * 16384;
                    a.x = floats(a.n, 6, -1, 1, o);
                    a.out = output(a.n, o);
                    float weights[25];
                    for (int i = 0; i < 25; ++i) weights[i] = 0.04f * (1.0f + 0.01f * i);
                    CUDA_CHECK(cudaMemcpyToSymbol(c_stencil, weights, sizeof(weights)));
                  },
                  0, false, 1 << 20});
  list.push_back({"attention", 128, 0, [](const Device&) { return dim3((1 << 18) / 128); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 18;
                    a.k = 256;
                    a.alpha = 0.125f;
                    a.x = floats(a.n * 64, 7, -1, 1, o);
                    a.y = floats(2ll * a.k * 64, 8, -1, 1, o);
                    a.out = output(a.n * 64, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"chain40", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 29;
                    a.x = floats(a.n + 1024, 9, 0.5f, 1.0f, o);
                    a.out = output(1 << 22, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"chain96", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 28;
                    a.x = floats(a.n + 1024, 10, 0.5f, 1.0f, o);
                    a.out = output(1 << 22, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"histogram", 256, 0, [](const Device& d) { return waves(d, 256, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 30;
                    int* bytes = (int*)device_alloc(a.n, o);
                    fill_bytes<<<4096, 256>>>(bytes, a.n / 4);
                    a.idx = bytes;
                    a.counts = (unsigned*)device_alloc(256 * sizeof(unsigned), o);
                  },
                  256 * sizeof(unsigned), true, 256});
  list.push_back({"transpose", 256, 0, [](const Device&) { return dim3(16384 / 32, 16384 / 32); },
                  [](Args& a, std::vector<void*>& o) {
                    a.m = 16384;
                    a.x = floats(16384ll * 16384, 11, -1, 1, o);
                    a.out = output(16384ll * 16384, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"small_block", 64, 0, [](const Device& d) { return waves(d, 64, 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 28;
                    a.x = floats(a.n, 12, -2, 2, o);
                    a.out = output(a.n, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"dyn_conv", 256, (8192 + 64) * sizeof(float),
                  [](const Device&) { return dim3((1 << 27) / 8192); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 27;
                    a.x = floats(a.n, 13, -1, 1, o);
                    a.out = output(a.n, o);
                    float taps[65];
                    for (int i = 0; i < 65; ++i) taps[i] = 1.0f / 65.0f;
                    CUDA_CHECK(cudaMemcpyToSymbol(c_taps, taps, sizeof(taps)));
                  },
                  0, false, 1 << 20});
  list.push_back({"sgemm128", 256, 0, [](const Device&) { return dim3(4096 / 128, 4096 / 128); },
                  [](Args& a, std::vector<void*>& o) {
                    a.m = 4096;
                    a.x = floats(4096ll * 4096, 14, -1, 1, o);
                    a.y = floats(4096ll * 4096, 15, -1, 1, o);
                    a.out = output(4096ll * 4096, o);
                  },
                  0, false, 1 << 20});
  list.push_back({"layernorm", 128, 0, [](const Device&) { return dim3((1 << 18) / 4); },
                  [](Args& a, std::vector<void*>& o) {
                    a.n = 1ll << 28;
                    a.x = floats(a.n, 16, -1, 1, o);
                    a.out = output(a.n, o);
                  },
                  0, false, 1 << 20});
#endif
  return list;
}

// ---- Measuring one variant. ----

struct Measurement {
  float median_ms, min_ms, max_ms;
  double checksum;
};

static void launch(const Problem& problem, const Variant& variant, const Args& args, dim3 grid,
                   cudaStream_t stream) {
  if (problem.reset_bytes) {
    void* target = problem.counts_output ? (void*)args.counts : (void*)args.out;
    CUDA_CHECK(cudaMemsetAsync(target, 0, problem.reset_bytes, stream));
  }
  void* params[] = {(void*)&args};
  CUDA_CHECK(cudaLaunchKernel(variant.function, grid, dim3(problem.block), params,
                              problem.dynamic_smem, stream));
}

static double checksum(const Problem& problem, const Args& args) {
  std::vector<float> host(problem.check_len);
  if (problem.counts_output) {
    std::vector<unsigned> counts(problem.check_len);
    CUDA_CHECK(cudaMemcpy(counts.data(), args.counts, sizeof(unsigned) * counts.size(),
                          cudaMemcpyDeviceToHost));
    double sum = 0;
    for (size_t i = 0; i < counts.size(); ++i) sum += (double)counts[i] * (double)(i + 1);
    return sum;
  }
  CUDA_CHECK(cudaMemcpy(host.data(), args.out, sizeof(float) * host.size(), cudaMemcpyDeviceToHost));
  // Values that overflowed (the register-heavy chains grow without bound) count by their number.
  double sum = 0, not_finite = 0;
  for (size_t i = 0; i < host.size(); ++i) {
    if (std::isfinite(host[i])) sum += (double)host[i] * (double)((i % 7) + 1);
    else not_finite += 1;
  }
  return sum + 1e9 * not_finite;
}

static Measurement measure(const Problem& problem, const Variant& variant, const Args& args,
                           dim3 grid, int reps, cudaStream_t stream) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int warm = 0; warm < 3; ++warm) launch(problem, variant, args, grid, stream);
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> times;
  for (int rep = 0; rep < reps; ++rep) {
    if (problem.reset_bytes) {
      void* target = problem.counts_output ? (void*)args.counts : (void*)args.out;
      CUDA_CHECK(cudaMemsetAsync(target, 0, problem.reset_bytes, stream));
    }
    CUDA_CHECK(cudaEventRecord(start, stream));
    void* params[] = {(void*)&args};
    CUDA_CHECK(cudaLaunchKernel(variant.function, grid, dim3(problem.block), params,
                                problem.dynamic_smem, stream));
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  const size_t middle = times.size() / 2;
  const float median = times.size() % 2 ? times[middle] : 0.5f * (times[middle - 1] + times[middle]);
  return {median, times.front(), times.back(), checksum(problem, args)};
}

// The most blocks of the problem an SM holds when registers do not bind: its threads (whole
// warps), block slots and shared memory (static + dynamic + the driver's reserve per block).
static int blocks_without_registers(const Device& device, const Problem& problem,
                                    const cudaFuncAttributes& attributes) {
  const cudaDeviceProp& p = device.props;
  const int warps = (problem.block + p.warpSize - 1) / p.warpSize;
  int limit = std::min(p.maxThreadsPerMultiProcessor / (warps * p.warpSize), p.maxBlocksPerMultiProcessor);
  const size_t smem = attributes.sharedSizeBytes + problem.dynamic_smem + p.reservedSharedMemPerBlock;
  if (smem > 0) limit = std::min<int>(limit, (int)(p.sharedMemPerMultiprocessor / smem));
  return limit;
}

struct Options {
  std::string out = "autobounds.csv";
  int reps = 30;
  std::string only;
  bool list = false;
};

static Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) options.out = argv[++i];
    else if (arg == "--reps" && i + 1 < argc) options.reps = std::max(1, atoi(argv[++i]));
    else if (arg == "--only" && i + 1 < argc) options.only = argv[++i];
    else if (arg == "--list") options.list = true;
    else {
      fprintf(stderr, "usage: autobounds [--out FILE] [--reps N] [--only KERNEL] [--list]\n");
      exit(2);
    }
  }
  return options;
}

static void run_problem(const Device& device, const Problem& problem, const Options& options,
                        FILE* csv, cudaStream_t stream) {
  std::vector<void*> owned;
  Args args{};
  problem.setup(args, owned);
  CUDA_CHECK(cudaDeviceSynchronize());
  const dim3 grid = problem.grid(device);
  std::vector<const Variant*> variants;
  for (const Variant& variant : registry())
    if (problem.kernel == std::string(variant.kernel)) variants.push_back(&variant);
  double bare_checksum = NAN;
  int feasible_max = 0;
  for (const Variant* variant : variants) {
    cudaFuncAttributes attributes;
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, variant->function));
    if (variant->min_blocks < 0) feasible_max = blocks_without_registers(device, problem, attributes);
    int resident = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, variant->function,
                                                             problem.block, problem.dynamic_smem));
    const Measurement m = measure(problem, *variant, args, grid, options.reps, stream);
    if (variant->min_blocks < 0) bare_checksum = m.checksum;
    const double tolerance = 1e-3 * std::max(1.0, std::fabs(bare_checksum));
    const bool matches = std::fabs(m.checksum - bare_checksum) <= tolerance;
    const double occupancy = (double)resident * ((problem.block + 31) / 32) /
                             (device.props.maxThreadsPerMultiProcessor / 32);
    fprintf(csv, "%s,sm_%d%d,%d,%s,%s,%d,%d,%zu,%d,%d,%zu,%zu,%d,%.4f,%u,%d,%.5f,%.5f,%.5f,%s\n",
            device.props.name, device.props.major, device.props.minor, device.sms, problem.kernel,
            variant->label, std::max(variant->min_blocks, 0), problem.block, problem.dynamic_smem,
            variant->min_blocks <= feasible_max ? 1 : 0, attributes.numRegs,
            attributes.localSizeBytes, attributes.sharedSizeBytes, resident, occupancy,
            grid.x * grid.y * grid.z, options.reps, m.median_ms, m.min_ms, m.max_ms,
            matches ? "ok" : "MISMATCH");
    fflush(csv);
    fprintf(stderr, "  %-6s %3d registers %5zu B local %2d blocks/SM  %8.4f ms%s\n",
            variant->label, attributes.numRegs, attributes.localSizeBytes, resident, m.median_ms,
            matches ? "" : "  OUTPUT DIFFERS FROM bare");
  }
  for (void* p : owned) CUDA_CHECK(cudaFree(p));
}

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  std::vector<Problem> list = problems();
  if (options.list) {
    for (const Problem& problem : list)
      printf("%s %d %zu\n", problem.kernel, problem.block, problem.dynamic_smem);
    return 0;
  }
  Device device;
  CUDA_CHECK(cudaGetDeviceProperties(&device.props, 0));
  device.sms = device.props.multiProcessorCount;
  FILE* csv = fopen(options.out.c_str(), "w");
  if (!csv) {
    fprintf(stderr, "autobounds: cannot write %s\n", options.out.c_str());
    return 2;
  }
  fprintf(csv, "gpu,arch,sms,kernel,variant,min_blocks,block,dynamic_smem,feasible,registers,"
               "local_bytes,static_smem,blocks_per_sm,occupancy,grid,reps,median_ms,min_ms,"
               "max_ms,check\n");
  fflush(csv);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  fprintf(stderr, "autobounds: %s (sm_%d%d, %d SMs), %d reps per variant\n", device.props.name,
          device.props.major, device.props.minor, device.sms, options.reps);
  int index = 0;
  for (const Problem& problem : list) {
    ++index;
    if (!options.only.empty() && options.only != problem.kernel) continue;
    fprintf(stderr, "[%d/%zu] %s (block %d, %zu B dynamic shared memory)\n", index, list.size(),
            problem.kernel, problem.block, problem.dynamic_smem);
    run_problem(device, problem, options, csv, stream);
  }
  fclose(csv);
  fprintf(stderr, "autobounds: wrote %s\n", options.out.c_str());
  return 0;
}
