// A recursive device function called from a kernel (issue #42, class 9). Compiled with `-G`,
// ptxas warns "Stack size for entry function 'recursive_rec' cannot be statically determined"
// and cuobjdump prints `STACK:UNKNOWN` (EIATTR_MIN_STACK_SIZE 0xffffffff): the driver sizes the
// stack at launch from cudaLimitStackSize. Without `-G`, nvcc 13.0 sizes it (64 bytes).
__device__ __noinline__ float rec(float x, int n) {
  if (n <= 0) return x;
  float a[8];
  for (int i = 0; i < 8; i++) a[i] = x * i;
  return a[n & 7] + rec(x * 0.5f, n - 1) * rec(x + 1.0f, n - 2);
}

extern "C" __global__ void recursive_rec(float *out, int n) {
  float b[16];
  for (int i = 0; i < 16; i++) b[i] = out[i * n];
  out[threadIdx.x] = rec(b[n & 15], n);
}
