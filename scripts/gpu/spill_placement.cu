// Where a spill sits decides what it costs, timed: the kernels of
// tests/fixtures/gpu/spill_placement.cu (one hot loop; the spill forced into the loop, put on a
// cold error path, or absent), each timed with CUDA events (warm-up, median of many runs).
//
// Every kernel runs the same number of blocks (SMs x 120, whole waves at 4, 5, 6 and 8 blocks
// per SM), twice: at the occupancy its registers give (`natural`), and with dynamic shared memory
// that holds every kernel to the reference's 4 blocks per SM (`pinned`), so that occupancy cannot
// explain a difference. Before timing, each kernel's output is checked bit for bit against the
// reference kernel and against a CPU computation of sampled threads, every output element having
// been poisoned first; the cold error path is taken by exactly one thread (its error flag set),
// and that thread's error output must be the one written.
//
// Prints one JSON line per kernel and mode. `--once`: one launch per kernel (for Nsight Compute).
// Build: nvcc -O3 -arch=sm_90 -lineinfo -Xptxas -v -o spill_placement spill_placement.cu
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../tests/fixtures/gpu/spill_placement.cu"

#define CUDA_CHECK(call)                                                                     \
  do {                                                                                       \
    cudaError_t error_ = (call);                                                             \
    if (error_ != cudaSuccess) {                                                             \
      fprintf(stderr, "spill_placement: %s: %s\n", #call, cudaGetErrorString(error_));       \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

using Kernel = void (*)(float*, const float*, const int*, float*, int);

struct Variant {
  const char* name;
  Kernel kernel;
};

// The reference comes first and last: the second timing of the same kernel shows the noise.
static const Variant kVariants[] = {
    {"placement_reference", placement_reference},
    {"placement_loop_spill_m5", placement_loop_spill_m5},
    {"placement_loop_spill_m6", placement_loop_spill_m6},
    {"placement_loop_spill_m8", placement_loop_spill_m8},
    {"placement_cold_check_k16", placement_cold_check_k16},
    {"placement_cold_spill_k48", placement_cold_spill_k48},
    {"placement_cold_spill_k64", placement_cold_spill_k64},
    {"placement_cold_spill_k96", placement_cold_spill_k96},
    {"placement_reference", placement_reference},
};

constexpr int kIterations = 512;     // trips of the hot loop per thread
constexpr int kBlocksPerSmWaves = 120;  // blocks per SM in the grid: lcm(4, 5, 6, 8)
constexpr int kWarmup = 5, kRuns = 31;
constexpr int kPinnedBlocksPerSm = 4;

struct Buffers {
  int threads = 0;
  float* out = nullptr;
  float* reference_out = nullptr;
  float* table = nullptr;
  int* error_flags = nullptr;
  float* error_out = nullptr;
  int flagged_thread = 0;
};

/// What the hot loop computes for one thread, on the CPU (the same fmaf/fminf/fmaxf sequence).
static float cpu_hot_loop(const std::vector<float>& table, int thread_in_block, int n) {
  float acc[kPlacementWidth];
  for (int j = 0; j < kPlacementWidth; ++j) acc[j] = table[(thread_in_block + 7 * j) & kPlacementTableMask];
  for (int i = 0; i < n; ++i) {
    float x = table[(i * kPlacementThreads + thread_in_block) & kPlacementTableMask];
    for (int j = 0; j < kPlacementWidth; ++j)
      acc[j] = std::fmin(std::fmax(std::fmaf(acc[j], x, acc[(j + 1) % kPlacementWidth]), -1.0f), 1.0f);
  }
  float sum = 0.0f;
  for (int j = 0; j < kPlacementWidth; ++j) sum += acc[j];
  return sum;
}

static void launch(const Variant& variant, const Buffers& buffers, int grid, size_t dynamic_smem) {
  variant.kernel<<<grid, kPlacementThreads, dynamic_smem>>>(buffers.out, buffers.table, buffers.error_flags,
                                                             buffers.error_out, kIterations);
}

/// Poisons the outputs, runs once, and checks every element (bitwise) and the one error output.
static bool check_outputs(const Variant& variant, const Buffers& buffers, int grid, size_t dynamic_smem,
                          const std::vector<float>& expected) {
  CUDA_CHECK(cudaMemset(buffers.out, 0xff, sizeof(float) * buffers.threads));  // NaN
  CUDA_CHECK(cudaMemset(buffers.error_out, 0xff, sizeof(float) * buffers.threads));
  launch(variant, buffers, grid, dynamic_smem);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> out(buffers.threads), error_out(buffers.threads);
  CUDA_CHECK(cudaMemcpy(out.data(), buffers.out, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
  CUDA_CHECK(cudaMemcpy(error_out.data(), buffers.error_out, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
  long wrong = 0;
  for (int thread = 0; thread < buffers.threads; ++thread)
    wrong += std::memcmp(&out[thread], &expected[thread], sizeof(float)) != 0;
  bool cold = std::strstr(variant.name, "_cold_") != nullptr;
  long errors_written = 0;
  for (int thread = 0; thread < buffers.threads; ++thread) errors_written += !std::isnan(error_out[thread]);
  bool error_path_ok = cold ? errors_written == 1 && std::isfinite(error_out[buffers.flagged_thread])
                            : errors_written == 0;
  if (wrong != 0 || !error_path_ok)
    fprintf(stderr, "spill_placement: %s: %ld of %d outputs differ from the reference; %ld error outputs written\n",
            variant.name, wrong, buffers.threads, errors_written);
  return wrong == 0 && error_path_ok;
}

static float percentile(std::vector<float> times, double fraction) {
  std::sort(times.begin(), times.end());
  return times[(size_t)(fraction * (times.size() - 1) + 0.5)];
}

static std::vector<float> time_runs(const Variant& variant, const Buffers& buffers, int grid, size_t dynamic_smem) {
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < kWarmup; ++i) launch(variant, buffers, grid, dynamic_smem);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> times;
  for (int i = 0; i < kRuns; ++i) {
    CUDA_CHECK(cudaEventRecord(start));
    launch(variant, buffers, grid, dynamic_smem);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  return times;
}

/// Dynamic shared memory that lets 4 blocks per SM fit and 5 not: every kernel then runs at the
/// reference's occupancy.
static size_t pinning_smem_bytes() {
  int per_sm = 0, reserved = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
  return (size_t)per_sm / (kPinnedBlocksPerSm + 1) - reserved + 1;
}

static bool measure(const Variant& variant, const Buffers& buffers, int grid, const char* mode,
                    size_t dynamic_smem, const std::vector<float>& expected, bool profile_once) {
  if (dynamic_smem > 48 * 1024)
    CUDA_CHECK(cudaFuncSetAttribute(variant.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dynamic_smem));
  int blocks_per_sm = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, variant.kernel, kPlacementThreads,
                                                           dynamic_smem));
  cudaFuncAttributes attributes;
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, variant.kernel));
  if (profile_once) {
    launch(variant, buffers, grid, dynamic_smem);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    return true;
  }
  bool correct = check_outputs(variant, buffers, grid, dynamic_smem, expected);
  std::vector<float> times = time_runs(variant, buffers, grid, dynamic_smem);
  printf("{\"kernel\":\"%s\",\"mode\":\"%s\",\"registers\":%d,\"local_bytes\":%zu,\"dynamic_smem\":%zu,"
         "\"driver_blocks_per_sm\":%d,\"grid\":%d,\"iterations\":%d,\"runs\":%d,\"median_ms\":%.4f,"
         "\"p10_ms\":%.4f,\"p90_ms\":%.4f,\"correct\":%s}\n",
         variant.name, mode, attributes.numRegs, attributes.localSizeBytes, dynamic_smem, blocks_per_sm, grid,
         kIterations, kRuns, percentile(times, 0.5), percentile(times, 0.1), percentile(times, 0.9),
         correct ? "true" : "false");
  fflush(stdout);
  return correct;
}

int main(int argc, char** argv) {
  bool profile_once = argc > 1 && std::string(argv[1]) == "--once";
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int grid = sms * kBlocksPerSmWaves;
  Buffers buffers;
  buffers.threads = grid * kPlacementThreads;
  buffers.flagged_thread = buffers.threads / 3 + 17;
  std::vector<float> table(kPlacementTableMask + 1);
  srand(20261123);
  for (auto& value : table) value = 2.0f * (float)rand() / RAND_MAX - 1.0f;
  std::vector<int> flags(buffers.threads, 0);
  flags[buffers.flagged_thread] = 1;
  CUDA_CHECK(cudaMalloc(&buffers.out, sizeof(float) * buffers.threads));
  CUDA_CHECK(cudaMalloc(&buffers.reference_out, sizeof(float) * buffers.threads));
  CUDA_CHECK(cudaMalloc(&buffers.table, sizeof(float) * table.size()));
  CUDA_CHECK(cudaMalloc(&buffers.error_flags, sizeof(int) * buffers.threads));
  CUDA_CHECK(cudaMalloc(&buffers.error_out, sizeof(float) * buffers.threads));
  CUDA_CHECK(cudaMemcpy(buffers.table, table.data(), sizeof(float) * table.size(), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(buffers.error_flags, flags.data(), sizeof(int) * flags.size(), cudaMemcpyHostToDevice));

  // The expected output: the hot loop depends only on the thread's index in its block.
  std::vector<float> expected(buffers.threads);
  for (int thread = 0; thread < kPlacementThreads; ++thread) {
    float value = cpu_hot_loop(table, thread, kIterations);
    for (int block = 0; block < grid; ++block) expected[block * kPlacementThreads + thread] = value;
  }
  bool all_correct = true;
  size_t pinned_smem = pinning_smem_bytes();
  for (const Variant& variant : kVariants)
    all_correct &= measure(variant, buffers, grid, "natural", 0, expected, profile_once);
  if (!profile_once)
    for (const Variant& variant : kVariants)
      all_correct &= measure(variant, buffers, grid, "pinned", pinned_smem, expected, false);
  if (!all_correct) {
    fprintf(stderr, "spill_placement: some kernel computed a wrong result (see above)\n");
    return 1;
  }
  return 0;
}
