// Calls the `call` lint names (occupancy-core/src/sass/call_target.rs): in whole-program code the
// device library's functions are called through a register loaded from constant bank 4, whose
// slot a relocation of the cubin names; a function pointer is a call through a register that
// holds no one function.
#include <cassert>
#include <cstdio>

// `assert` calls `__assertfail` when the assertion fails.
extern "C" __global__ void asserts(float* x, int n) {
    int i = threadIdx.x;
    assert(i < n);
    x[i] = 2 * x[i];
}

// `printf` calls `vprintf`, in a loop here: the slot's offset is set once for every call.
extern "C" __global__ void prints(const float* x, int n) {
    for (int i = 0; i < n; ++i) printf("x[%d] = %f\n", i, x[i]);
}

// `new` and `delete` call `malloc` and `free`.
extern "C" __global__ void heap(float* x, int n) {
    float* scratch = new float[n];
    for (int i = 0; i < n; ++i) scratch[i] = x[i];
    x[threadIdx.x] = scratch[n - 1];
    delete[] scratch;
}

__device__ float twice(float v) { return 2 * v; }
__device__ float thrice(float v) { return 3 * v; }
typedef float (*op_t)(float);
__device__ op_t operations[2] = {twice, thrice};

// A function pointer from a global table: an indirect call.
extern "C" __global__ void through_pointer(float* x, int which) {
    x[threadIdx.x] = operations[which & 1](x[threadIdx.x]);
}
