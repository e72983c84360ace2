// y = a * x + y. The launch bounds come from the Rust declaration (occupancy_bounds.h), so the
// block size the crate launches with and the one ptxas compiled for cannot drift apart.
#include "occupancy_bounds.h"

//
// A grid-stride loop: correct for any grid, so the host can launch one block per element or a
// persistent grid sized from what the build compiled (SAXPY_OCCUPANCY.persistent_grid_on).
extern "C" __global__ void OCCUPANCY_BOUNDS_saxpy saxpy(unsigned int n, float a, const float* x, float* y) {
  for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    y[i] = a * x[i] + y[i];
  }
}
