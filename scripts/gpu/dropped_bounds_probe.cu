// What the driver says of kernels whose launch bounds ptxas did not apply as written
// (scripts/gpu-dropped-bounds.sh, docs/verification.md section 8): the kernels of
// tests/kernels/unreachable_bounds.cu (a minimum ptxas ignored, one shared memory keeps out of
// reach, one it honours) and tests/kernels/register_caps.cu (a `__maxnreg__(8)` ptxas raised to
// 24, one above 255 it ignored, one it applied, none), compiled into this program the way
// `cargo occupancy check` compiles them (compute_80 PTX, -lineinfo).
//
// For each kernel: cudaFuncGetAttributes (numRegs, localSizeBytes, sharedSizeBytes,
// maxThreadsPerBlock), cudaOccupancyMaxActiveBlocksPerMultiprocessor at the block the tool's row
// was evaluated at (`NAME=BLOCK` arguments; else the kernel's compiled block) and at its
// compiled block, and a real launch of a full wave (blocks per SM x SMs) at its compiled block,
// synchronised, its error status printed. One JSON line per kernel.
//
// Build: nvcc -O3 -gencode arch=compute_80,code=sm_90 -lineinfo -Xptxas -v -o probe dropped_bounds_probe.cu
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "../../tests/kernels/unreachable_bounds.cu"
#include "../../tests/kernels/register_caps.cu"

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    cudaError_t error_ = (call);                                                           \
    if (error_ != cudaSuccess) {                                                           \
      fprintf(stderr, "dropped_bounds_probe: %s: %s\n", #call, cudaGetErrorString(error_)); \
      exit(2);                                                                             \
    }                                                                                      \
  } while (0)

struct Probed {
  const char* name;
  const void* function;
  // The block the kernel is compiled for (`__launch_bounds__` maximum; 256 without one).
  int compiled_block;
};

static const Probed KERNELS[] = {
    {"ignored_minimum", (const void*)ignored_minimum, 1024},
    {"slot_bound", (const void*)slot_bound, 64},
    {"shared_capped", (const void*)shared_capped, 256},
    {"reachable_minimum", (const void*)reachable_minimum, 256},
    {"raised_cap", (const void*)raised_cap, 256},
    {"above_max", (const void*)above_max, 256},
    {"applied_cap", (const void*)applied_cap, 256},
    {"uncapped", (const void*)uncapped, 256},
};

// Loop trips of the register_caps kernels; their input holds in[i * 256 + t] and in[t + j].
static const int TRIPS = 4;
// Enough floats for every kernel's reads: in[threadIdx.x + 15 * 1024] (ignored_minimum),
// in[12287] (shared_capped), in[(TRIPS - 1) * 256 + 255], in[255 + 47].
static const size_t INPUT_FLOATS = 16 * 1024;

static int block_asked(const char* name, int argc, char** argv, int fallback) {
  size_t length = strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], name, length) == 0 && argv[i][length] == '=') {
      return atoi(argv[i] + length + 1);
    }
  }
  return fallback;
}

int main(int argc, char** argv) {
  int device = 0;
  CUDA_CHECK(cudaSetDevice(device));
  cudaDeviceProp properties;
  CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  int driver = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  printf("{\"device\": \"%s\", \"arch\": \"sm_%d%d\", \"sms\": %d, \"driver\": %d}\n",
         properties.name, properties.major, properties.minor, properties.multiProcessorCount,
         driver);
  float* in = nullptr;
  float* out = nullptr;
  CUDA_CHECK(cudaMalloc(&in, INPUT_FLOATS * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&out, 1024 * sizeof(float)));
  CUDA_CHECK(cudaMemset(in, 0, INPUT_FLOATS * sizeof(float)));
  int trips = TRIPS;
  for (const Probed& kernel : KERNELS) {
    cudaFuncAttributes attributes;
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel.function));
    int row_block = block_asked(kernel.name, argc, argv, kernel.compiled_block);
    int at_row_block = 0;
    int at_compiled_block = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&at_row_block, kernel.function,
                                                             row_block, 0));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &at_compiled_block, kernel.function, kernel.compiled_block, 0));
    int grid = (at_compiled_block > 0 ? at_compiled_block : 1) * properties.multiProcessorCount;
    void* args[] = {&out, &in, &trips};
    cudaError_t launched = cudaLaunchKernel(kernel.function, dim3(grid), dim3(kernel.compiled_block),
                                            args, 0, 0);
    cudaError_t finished = launched == cudaSuccess ? cudaDeviceSynchronize() : launched;
    printf(
        "{\"kernel\": \"%s\", \"num_regs\": %d, \"local_size_bytes\": %zu, "
        "\"shared_size_bytes\": %zu, \"max_threads_per_block\": %d, \"binary_version\": %d, "
        "\"row_block\": %d, \"blocks_per_sm_at_row_block\": %d, \"compiled_block\": %d, "
        "\"blocks_per_sm_at_compiled_block\": %d, \"launch_grid\": %d, \"launch\": \"%s\"}\n",
        kernel.name, attributes.numRegs, attributes.localSizeBytes, attributes.sharedSizeBytes,
        attributes.maxThreadsPerBlock, attributes.binaryVersion, row_block, at_row_block,
        kernel.compiled_block, at_compiled_block, grid, cudaGetErrorName(finished));
    if (finished != cudaSuccess) {
      cudaGetLastError();
    }
  }
  CUDA_CHECK(cudaFree(in));
  CUDA_CHECK(cudaFree(out));
  return 0;
}
