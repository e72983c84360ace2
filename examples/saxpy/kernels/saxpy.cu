// y = a * x + y. The launch bounds come from the Rust declaration (occupancy_bounds.h), so the
// block size the crate launches with and the one ptxas compiled for cannot drift apart.
#include "occupancy_bounds.h"

extern "C" __global__ void OCCUPANCY_BOUNDS_saxpy saxpy(unsigned int n, float a, const float* x, float* y) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
