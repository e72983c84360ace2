// `enable_smem_spilling` in a kernel that uses dynamic shared memory: ptxas refuses it
// (`Pragma 'enable_smem_spilling' is not allowed for dynamic SMEM`, naming no kernel); the
// compile error names `dynamic_tile` and the fix (`cargo-occupancy/tests/cli_check.rs`). The
// other kernel has the pragma and no dynamic shared memory of its own, which ptxas accepts.
extern __shared__ float dynamic_smem[];

extern "C" __global__ void dynamic_tile(float* out, const float* in) {
    asm volatile(".pragma \"enable_smem_spilling\";");
    dynamic_smem[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = dynamic_smem[blockDim.x - 1 - threadIdx.x];
}

extern "C" __global__ void static_only(float* out, const float* in) {
    asm volatile(".pragma \"enable_smem_spilling\";");
    out[threadIdx.x] = in[threadIdx.x] * 2.0f;
}
