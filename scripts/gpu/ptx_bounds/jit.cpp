// Loads PTX files through the CUDA driver (which JIT-compiles them, as it does a crate's shipped
// PTX at run time) and prints, per kernel, the registers the driver's compile gave it and the
// blocks of BLOCK threads the occupancy API keeps resident (scripts/gpu-ptx-bounds.sh).
//
// Build: nvcc -o jit jit.cpp -lcuda
// Run:   ./jit BLOCK FILE.ptx KERNEL [FILE.ptx KERNEL ...]
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

static void check(CUresult result, const char* what) {
  if (result != CUDA_SUCCESS) {
    const char* text = nullptr;
    cuGetErrorString(result, &text);
    fprintf(stderr, "jit: %s: %s\n", what, text ? text : "unknown error");
    exit(2);
  }
}

int main(int argc, char** argv) {
  if (argc < 4 || argc % 2 != 0) {
    fprintf(stderr, "usage: jit BLOCK FILE.ptx KERNEL [FILE.ptx KERNEL ...]\n");
    return 2;
  }
  const int block = atoi(argv[1]);
  check(cuInit(0), "cuInit");
  CUdevice device;
  check(cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
  int driver = 0;
  check(cuDriverGetVersion(&driver), "cuDriverGetVersion");
  printf("driver %d, block %d\n", driver, block);
  for (int arg = 2; arg + 1 < argc; arg += 2) {
    std::ifstream file(argv[arg]);
    std::stringstream text;
    text << file.rdbuf();
    const std::string ptx = text.str();
    CUmodule module;
    check(cuModuleLoadData(&module, ptx.c_str()), argv[arg]);
    CUfunction function;
    check(cuModuleGetFunction(&function, module, argv[arg + 1]), argv[arg + 1]);
    int registers = 0, local = 0, blocks = 0;
    check(cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function), "NUM_REGS");
    check(cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function), "LOCAL_SIZE");
    check(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, block, 0), "occupancy");
    printf("%s %s: %d registers, %d bytes local, %d blocks/SM\n", argv[arg], argv[arg + 1],
           registers, local, blocks);
    check(cuModuleUnload(module), "cuModuleUnload");
  }
  return 0;
}
