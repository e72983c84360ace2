// The host launcher of grid_sum, in plain C++ (compiled by the cc crate after occupancy-build,
// see build.rs). It writes down no blocks per SM and no SM count for one GPU: the grid comes from
// occupancy_facts.h, the facts the build compiled and checked, and what the launcher does assume
// is a static_assert on those facts, so a kernel that grows past it stops the build instead of
// failing the launch on the next GPU.
#include <cstddef>

#include "occupancy_facts.h"

namespace facts = occupancy::facts::grid_sum;

// The launcher's block (the declaration's `block`) and the tile each thread stages.
constexpr unsigned kBlockThreads = 256;
constexpr unsigned kStagedPerThread = 32;
// The partial sums go to a workspace of kMaxGrid floats, sized at compile time as persistent
// kernels' workspaces and semaphores usually are: the grid may never exceed it on a GPU the crate
// launches on (the declaration's `gpus`).
constexpr unsigned kMaxGrid = 1024;

#if OCCUPANCY_FACTS_CHECKED
static_assert(facts::cooperative, "grid_sum is launched with cudaLaunchCooperativeKernel: declare launch = \"cooperative\"");
static_assert(facts::block_threads == kBlockThreads, "the launcher's block is the declared one");
static_assert(facts::dynamic_smem_bytes == kBlockThreads * kStagedPerThread * sizeof(float),
              "the declared dynamic_smem is the tile the kernel stages");
static_assert(facts::a100::resident_blocks <= kMaxGrid, "the grid on an A100 does not fit the workspace");
static_assert(facts::h100::resident_blocks <= kMaxGrid, "the grid on an H100 does not fit the workspace");
static_assert(facts::h20::resident_blocks <= kMaxGrid, "the grid on an H20 does not fit the workspace");
#endif

extern "C" {
int grid_sum_launch(unsigned grid, unsigned block, unsigned dynamic_smem, const float* x, unsigned n,
                    float* partial, float* out);
int grid_sum_device(unsigned* arch, unsigned* sm_count);
int grid_sum_malloc(void** pointer, size_t bytes);
int grid_sum_free(void* pointer);
int grid_sum_upload(void* device, const void* host, size_t bytes);
int grid_sum_download(void* host, const void* device, size_t bytes);

// Blocks per SM the build compiled for `arch` (major * 10 + minor); 0 for an arch it did not
// compile. The Rust side compares it with the attribute's const.
unsigned grid_sum_facts_blocks_per_sm(unsigned arch) { return facts::blocks_per_sm(arch); }

// The cooperative grid on a device of `arch` with `sm_count` SMs: every block resident at once
// (blocks per SM x SMs, from the facts), no more than the input needs nor the workspace holds.
// 0: the build did not compile grid_sum for this arch (the driver would JIT the PTX, whose
// numbers the build never saw).
unsigned grid_sum_grid(unsigned arch, unsigned sm_count, unsigned n) {
  unsigned long long resident = facts::persistent_grid(arch, sm_count);
  if (resident == 0) return 0;
  unsigned long long per_block = static_cast<unsigned long long>(kBlockThreads) * kStagedPerThread;
  unsigned long long grid = (n + per_block - 1) / per_block;
  if (grid > resident) grid = resident;
  if (grid > kMaxGrid) grid = kMaxGrid;
  return grid == 0 ? 1u : static_cast<unsigned>(grid);
}

// Sums `n` floats at `x` (host memory) into `*sum` with a cooperative grid of `grid` blocks (at
// most kMaxGrid). Returns a cudaError_t: cudaErrorCooperativeLaunchTooLarge (720) when the grid is
// larger than what is resident.
int grid_sum_run_with_grid(const float* x, unsigned n, unsigned grid, float* sum) {
  if (grid == 0 || grid > kMaxGrid) return -2;
  void *x_device = nullptr, *partial = nullptr, *out = nullptr;
  int error = grid_sum_malloc(&x_device, n * sizeof(float));
  if (error == 0) error = grid_sum_malloc(&partial, kMaxGrid * sizeof(float));
  if (error == 0) error = grid_sum_malloc(&out, sizeof(float));
  if (error == 0) error = grid_sum_upload(x_device, x, n * sizeof(float));
  if (error == 0)
    error = grid_sum_launch(grid, kBlockThreads, facts::dynamic_smem_bytes, static_cast<const float*>(x_device),
                            n, static_cast<float*>(partial), static_cast<float*>(out));
  if (error == 0) error = grid_sum_download(sum, out, sizeof(float));
  grid_sum_free(out);
  grid_sum_free(partial);
  grid_sum_free(x_device);
  return error;
}

// Sums `n` floats at `x` (host memory) into `*sum`, the grid sized from the facts for this
// device. Returns a cudaError_t, or -1 when the build did not compile grid_sum for its arch.
int grid_sum_run(const float* x, unsigned n, float* sum) {
  unsigned arch = 0, sm_count = 0;
  int error = grid_sum_device(&arch, &sm_count);
  if (error != 0) return error;
  unsigned grid = grid_sum_grid(arch, sm_count, n);
  if (grid == 0) return -1;
  return grid_sum_run_with_grid(x, n, grid, sum);
}
}
