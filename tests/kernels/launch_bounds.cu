// Launch bounds as PTX directives: .maxntid/.minnctapersm/.maxclusterrank, .reqnctapercluster,
// .maxnreg. Compiled for sm_90 (clusters need it).
extern "C" __global__ void __launch_bounds__(256) bound_threads(float* out) { out[threadIdx.x] = 1.0f; }
extern "C" __global__ void __launch_bounds__(256, 4) bound_threads_blocks(float* out) { out[threadIdx.x] = 2.0f; }
extern "C" __global__ void __launch_bounds__(128, 2, 4) bound_cluster_rank(float* out) { out[threadIdx.x] = 3.0f; }
extern "C" __global__ void __cluster_dims__(2, 1, 1) fixed_cluster(float* out) { out[threadIdx.x] = 4.0f; }
extern "C" __global__ void __maxnreg__(40) capped_registers(float* out) { out[threadIdx.x] = 5.0f; }
template <int Threads>
__global__ void __launch_bounds__(Threads) templated_bound(float* out) { out[threadIdx.x] = Threads; }
template __global__ void templated_bound<64>(float*);
