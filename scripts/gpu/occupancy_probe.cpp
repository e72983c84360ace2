// occupancy_probe: asks the CUDA driver itself what `occupancy` predicts.
//
// For every kernel in the given cubins it prints, as JSON Lines on stdout:
//   {"type":"function", ...}  the driver's cuFuncGetAttribute facts (registers, static/local smem, ...)
//   {"type":"config",   ...}  one cuOccupancyMaxActiveBlocksPerMultiprocessor answer per launch
//                             (block size x dynamic smem x carveout x max-dynamic-smem opt-in)
//   {"type":"launch_check", ...} for a block size above the kernel's max threads per block: whether a
//                             real launch is refused (it must be: `occupancy` reports 0 blocks there).
// The comparison with the tool's own answers is done by compare.py; this program only observes.
//
// Build: nvcc -O2 -o occupancy_probe occupancy_probe.cpp -lcuda
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                     \
  do {                                                                                  \
    CUresult status_ = (call);                                                          \
    if (status_ != CUDA_SUCCESS) {                                                      \
      const char* message_ = nullptr;                                                   \
      cuGetErrorString(status_, &message_);                                             \
      fprintf(stderr, "occupancy_probe: %s failed: %s (%d) at line %d\n", #call,       \
              message_ ? message_ : "?", (int)status_, __LINE__);                       \
      exit(2);                                                                          \
    }                                                                                   \
  } while (0)

static int attribute(CUfunction function, CUfunction_attribute which) {
  int value = 0;
  CHECK(cuFuncGetAttribute(&value, which, function));
  return value;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: occupancy_probe FILE.cubin...\n");
    return 2;
  }
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;  // the primary context: what the runtime API and cudarc use
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));
  int major = 0, minor = 0, optin_smem_per_block = 0, sm_count = 0, driver_version = 0;
  char device_name[256] = {0};
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  CHECK(cuDeviceGetAttribute(&optin_smem_per_block,
                             CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device));
  CHECK(cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device));
  CHECK(cuDeviceGetName(device_name, sizeof device_name, device));
  CHECK(cuDriverGetVersion(&driver_version));
  printf("{\"type\":\"device\",\"name\":\"%s\",\"arch\":\"sm_%d%d\",\"sm_count\":%d,"
         "\"driver_version\":%d,\"smem_per_block_optin\":%d}\n",
         device_name, major, minor, sm_count, driver_version, optin_smem_per_block);

  const int carveouts[] = {-1, 0, 10, 25, 50, 60, 75, 90, 100};
  for (int file_index = 1; file_index < argc; ++file_index) {
    CUmodule module;
    CUresult load_status = cuModuleLoad(&module, argv[file_index]);
    if (load_status != CUDA_SUCCESS) {
      // e.g. texture references, which the CUDA 12+ driver no longer loads: say so, go on.
      const char* message = nullptr;
      cuGetErrorString(load_status, &message);
      printf("{\"type\":\"module_error\",\"file\":\"%s\",\"status\":%d,\"message\":\"%s\"}\n",
             argv[file_index], (int)load_status, message ? message : "?");
      continue;
    }
    unsigned int function_count = 0;
    CHECK(cuModuleGetFunctionCount(&function_count, module));
    std::vector<CUfunction> functions(function_count);
    CHECK(cuModuleEnumerateFunctions(functions.data(), function_count, module));
    for (CUfunction function : functions) {
      // Modules load lazily by default (CUDA_MODULE_LOADING=LAZY): load each function first.
      CHECK(cuFuncLoad(function));
      const char* name = nullptr;
      CHECK(cuFuncGetName(&name, function));
      int registers = attribute(function, CU_FUNC_ATTRIBUTE_NUM_REGS);
      int static_smem = attribute(function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
      int local_bytes = attribute(function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
      int const_bytes = attribute(function, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
      int max_threads = attribute(function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
      int default_max_dynamic = attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
      printf("{\"type\":\"function\",\"file\":\"%s\",\"name\":\"%s\",\"registers\":%d,"
             "\"static_smem_bytes\":%d,\"local_bytes\":%d,\"const_bytes\":%d,"
             "\"max_threads_per_block\":%d,\"default_max_dynamic_smem\":%d}\n",
             argv[file_index], name, registers, static_smem, local_bytes, const_bytes, max_threads,
             default_max_dynamic);

      // The dynamic shared memory the kernel may opt into: the default, or everything it can.
      std::vector<int> max_dynamic_choices = {default_max_dynamic};
      if (optin_smem_per_block - static_smem > default_max_dynamic)
        max_dynamic_choices.push_back(optin_smem_per_block - static_smem);
      for (int max_dynamic : max_dynamic_choices) {
        CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 max_dynamic));
        std::vector<int> dynamic_sizes = {0, 1, 1000, 1024, 4096, 8192, 16384, 24576, 32768};
        for (int extra : {40000, 65536, 100000, 131072, 163840, 200000})
          if (extra <= max_dynamic) dynamic_sizes.push_back(extra);
        dynamic_sizes.push_back(max_dynamic);
        for (int carveout : carveouts) {
          CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                   carveout));
          for (int block = 32; block <= max_threads; block += 32) {
            for (int dynamic_smem : dynamic_sizes) {
              if (dynamic_smem > max_dynamic) continue;
              int blocks = -1;
              CUresult status = cuOccupancyMaxActiveBlocksPerMultiprocessor(
                  &blocks, function, block, (size_t)dynamic_smem);
              printf("{\"type\":\"config\",\"name\":\"%s\",\"block\":%d,\"dynamic_smem\":%d,"
                     "\"carveout\":%d,\"max_dynamic_smem\":%d,\"status\":%d,\"driver_blocks\":%d}\n",
                     name, block, dynamic_smem, carveout, max_dynamic, (int)status, blocks);
            }
          }
        }
      }
      CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, -1));
      CHECK(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               default_max_dynamic));

      // Above the kernel's own limit the occupancy call still answers, but a launch must be refused.
      if (max_threads < 1024) {
        int block = ((max_threads / 32) + 1) * 32;
        int occupancy_answer = -1;
        cuOccupancyMaxActiveBlocksPerMultiprocessor(&occupancy_answer, function, block, 0);
        static unsigned char parameter_buffer[4096];
        size_t parameter_size = sizeof parameter_buffer;
        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, parameter_buffer,
                         CU_LAUNCH_PARAM_BUFFER_SIZE, &parameter_size, CU_LAUNCH_PARAM_END};
        // Zero-sized grid is invalid on its own; use one block so only the block size is at fault.
        CUresult launch = cuLaunchKernel(function, 1, 1, 1, block, 1, 1, 0, nullptr, nullptr, extra);
        printf("{\"type\":\"launch_check\",\"name\":\"%s\",\"block\":%d,\"max_threads_per_block\":%d,"
               "\"occupancy_call_blocks\":%d,\"launch_status\":%d}\n",
               name, block, max_threads, occupancy_answer, (int)launch);
        if (launch == CUDA_SUCCESS) {
          // Must not happen; surface any fault from the unexpected launch.
          CUresult sync = cuCtxSynchronize();
          fprintf(stderr, "occupancy_probe: launch of %s with %d threads was accepted (sync %d)\n",
                  name, block, (int)sync);
        }
      }
    }
    CHECK(cuModuleUnload(module));
  }
  CHECK(cuDevicePrimaryCtxRelease(device));
  return 0;
}
