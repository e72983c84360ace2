// Register caps ptxas does not apply as asked, and says so in a warning (docs/ptxas-formats.md,
// "Warnings that change resources"; cargo-occupancy/tests/cli_check.rs). The loop keeps 48
// accumulators live, so a cap decides how many registers the kernel gets.
#define ACCUMULATE(out, in, n)                                                         \
    float acc[48];                                                                     \
    _Pragma("unroll") for (int j = 0; j < 48; ++j) acc[j] = in[threadIdx.x + j];       \
    for (int i = 0; i < n; ++i) {                                                      \
        float x = in[i * 256 + threadIdx.x];                                           \
        _Pragma("unroll") for (int j = 0; j < 48; ++j) acc[j] = acc[j] * x + acc[(j + 1) % 48]; \
    }                                                                                  \
    float sum = 0.0f;                                                                  \
    _Pragma("unroll") for (int j = 0; j < 48; ++j) sum += acc[j];                      \
    out[threadIdx.x] = sum;

// Below ptxas's lower bound of 24 registers per thread: `For entry raised_cap adjusting per
// thread register count of 8 to lower bound of 24`, compiled under a cap of 24.
extern "C" __global__ void __maxnreg__(8) raised_cap(float* out, const float* in, int n) {
    ACCUMULATE(out, in, n)
}

// Above 255: `Too many maxnreg specified for entry above_max, will be ignored`; ptxas compiles
// as without a cap, which is what a cap of 255 does: no resource changes.
extern "C" __global__ void __maxnreg__(300) above_max(float* out, const float* in, int n) {
    ACCUMULATE(out, in, n)
}

// A cap ptxas applies: no warning.
extern "C" __global__ void __maxnreg__(32) applied_cap(float* out, const float* in, int n) {
    ACCUMULATE(out, in, n)
}

// No cap of its own: `-maxrregcount=8` on the command line is raised for it (`For profile sm_XX
// adjusting ...`), on every arch of the compile.
extern "C" __global__ void uncapped(float* out, const float* in, int n) {
    ACCUMULATE(out, in, n)
}
