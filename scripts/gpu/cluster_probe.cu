// cluster_probe: asks the CUDA runtime how many thread-block clusters fit on this GPU, and finds
// which SMs share a GPC. Only observes; scripts/gpu/cluster_table.py and
// occupancy-core/tests/cluster_replay.rs compare the tool with what it records.
//
// Output, CSV sections on stdout, each line starting with its section name:
//   device,...        the device's facts (cudaDeviceProp, attributes)
//   kernel,...        each probe kernel's cudaFuncGetAttributes (registers, static smem, max threads)
//   blocks,...        cudaOccupancyMaxActiveBlocksPerMultiprocessor and
//                     cudaOccupancyMaxPotentialClusterSize (portable and non-portable) per
//                     kernel x block size x dynamic shared memory
//   clusters,...      cudaOccupancyMaxActiveClusters per kernel x block x dynamic smem x cluster
//                     shape x non-portable opt-in (status: the cudaError_t, 0 = success)
//   placement,...     one line per block of the GPC-discovery launches: cluster size, launch,
//                     cluster index, rank in cluster, %smid, dynamic smem
//   gpc,...           the SMs that clusters joined together (union-find over every placement
//                     launch): one line per group, its SM count and SM ids
//   coresident,...    real launches of the driver's answer and of one cluster more, each block
//                     waiting (5 ms at most) until every block of the grid has arrived: blocks per
//                     SM, cluster size, the driver's clusters, clusters launched, launch status,
//                     dynamic smem, blocks that gave up waiting (0: every cluster was resident)
//
// Build: nvcc -O2 -arch=sm_90 -o cluster_probe cluster_probe.cu
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t status_ = (call);                                                          \
    if (status_ != cudaSuccess) {                                                          \
      fprintf(stderr, "cluster_probe: %s failed: %s (%d) at line %d\n", #call,            \
              cudaGetErrorString(status_), (int)status_, __LINE__);                        \
      exit(2);                                                                             \
    }                                                                                      \
  } while (0)

// Register-hungry body: N accumulators live across a loop; __maxnreg__ caps what ptxas may use, so
// each variant lands on a different register count (the driver's numRegs is recorded, not assumed).
template <int N>
__device__ __forceinline__ void pressure(const float* in, float* out, int iterations) {
  float acc[N];
#pragma unroll
  for (int i = 0; i < N; ++i) acc[i] = in[threadIdx.x + i * 1024];
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int i = 0; i < N; ++i) acc[i] = fmaf(acc[i], acc[(i + 7) % N], 1.0f);
  }
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < N; ++i) sum += acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

#define REG_KERNEL(R) \
  __global__ void __maxnreg__(R) reg_##R(const float* in, float* out, int n) { pressure<240>(in, out, n); }
REG_KERNEL(24)
REG_KERNEL(32)
REG_KERNEL(40)
REG_KERNEL(48)
REG_KERNEL(56)
REG_KERNEL(64)
REG_KERNEL(72)
REG_KERNEL(80)
REG_KERNEL(96)
REG_KERNEL(128)
REG_KERNEL(168)
REG_KERNEL(200)
REG_KERNEL(255)

__global__ void tiny(float* out) {
  if (out) out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

__global__ void __maxnreg__(32) static_16k(float* out) {
  __shared__ float tile[4096];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (out) out[threadIdx.x] = tile[(threadIdx.x + 1) % 4096];
}

__global__ void __maxnreg__(64) static_40k(float* out) {
  __shared__ float tile[10240];
  tile[threadIdx.x] = threadIdx.x;
  __syncthreads();
  if (out) out[threadIdx.x] = tile[(threadIdx.x + 1) % 10240];
}

// A kernel that names its cluster at compile time (`.reqnctapercluster 2, 1, 1`).
__global__ void __cluster_dims__(2, 1, 1) compiled_cluster_2(float* out) {
  if (out) out[threadIdx.x] = 1.0f;
}

// GPC discovery: every block writes the SM it runs on, then waits a little so that many clusters
// are resident at once and spread over the GPU.
__global__ void where_am_i(unsigned* smids, long long spin_ns) {
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  if (threadIdx.x == 0) smids[blockIdx.x] = smid;
  long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  long long now = start;
  while (now - start < spin_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

struct Kernel {
  const char* name;
  const void* function;
};

static int device_attribute(cudaDeviceAttr which) {
  int value = 0;
  CHECK(cudaDeviceGetAttribute(&value, which, 0));
  return value;
}

static void print_device() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  printf("device,name,%s\n", prop.name);
  printf("device,arch,sm_%d%d\n", prop.major, prop.minor);
  printf("device,sm_count,%d\n", prop.multiProcessorCount);
  printf("device,attr_multiprocessor_count,%d\n", device_attribute(cudaDevAttrMultiProcessorCount));
  printf("device,max_blocks_per_sm,%d\n", prop.maxBlocksPerMultiProcessor);
  printf("device,max_threads_per_sm,%d\n", prop.maxThreadsPerMultiProcessor);
  printf("device,regs_per_sm,%d\n", prop.regsPerMultiprocessor);
  printf("device,smem_per_sm,%zu\n", prop.sharedMemPerMultiprocessor);
  printf("device,smem_per_block_optin,%zu\n", prop.sharedMemPerBlockOptin);
  printf("device,reserved_smem_per_block,%zu\n", prop.reservedSharedMemPerBlock);
  printf("device,cluster_launch,%d\n", device_attribute(cudaDevAttrClusterLaunch));
  printf("device,pci_device_id,%d\n", prop.pciDeviceID);
  printf("device,driver_version,%d\n", driver);
  printf("device,runtime_version,%d\n", runtime);
}

static void print_kernel(const Kernel& kernel) {
  cudaFuncAttributes attributes;
  CHECK(cudaFuncGetAttributes(&attributes, kernel.function));
  printf("kernel,%s,%d,%zu,%zu,%d,%d,%d,%d,%d\n", kernel.name, attributes.numRegs,
         attributes.sharedSizeBytes, attributes.localSizeBytes, attributes.maxThreadsPerBlock,
         attributes.maxDynamicSharedSizeBytes, attributes.requiredClusterWidth,
         attributes.requiredClusterHeight, attributes.requiredClusterDepth);
}

static int query_clusters(const Kernel& kernel, int block, int dynamic_smem, dim3 cluster,
                          int* clusters) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(cluster.x * 4, cluster.y * 2, cluster.z);
  config.blockDim = dim3(block, 1, 1);
  config.dynamicSmemBytes = dynamic_smem;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = cluster.x;
  attribute[0].val.clusterDim.y = cluster.y;
  attribute[0].val.clusterDim.z = cluster.z;
  config.attrs = attribute;
  config.numAttrs = 1;
  *clusters = -1;
  cudaError_t status = cudaOccupancyMaxActiveClusters(clusters, kernel.function, &config);
  if (status != cudaSuccess) cudaGetLastError();  // clear the sticky-free error for the next call
  return (int)status;
}

static int potential_cluster_size(const Kernel& kernel, int block, int dynamic_smem, int* size) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(64, 1, 1);
  config.blockDim = dim3(block, 1, 1);
  config.dynamicSmemBytes = dynamic_smem;
  *size = -1;
  cudaError_t status = cudaOccupancyMaxPotentialClusterSize(size, kernel.function, &config);
  if (status != cudaSuccess) cudaGetLastError();
  return (int)status;
}

static void print_clusters(const Kernel& kernel, int block, int dynamic_smem, dim3 cluster,
                           int non_portable) {
  int clusters = -1;
  int status = query_clusters(kernel, block, dynamic_smem, cluster, &clusters);
  printf("clusters,%s,%d,%d,%u,%u,%u,%d,%d,%d\n", kernel.name, block, dynamic_smem, cluster.x,
         cluster.y, cluster.z, non_portable, status, clusters);
}

static void set_non_portable(const Kernel& kernel, int allowed) {
  CHECK(cudaFuncSetAttribute(kernel.function, cudaFuncAttributeNonPortableClusterSizeAllowed,
                             allowed));
}

// One kernel x block x dynamic shared memory: the per-SM answer, the potential cluster sizes, every
// cluster size 1..16 as (c,1,1), and for a few configurations other shapes of the same sizes.
static void sweep_config(const Kernel& kernel, int block, int dynamic_smem, bool shapes) {
  int blocks = -1, portable = -1, non_portable = -1;
  cudaError_t blocks_status =
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel.function, block, dynamic_smem);
  if (blocks_status != cudaSuccess) cudaGetLastError();
  set_non_portable(kernel, 0);
  int portable_status = potential_cluster_size(kernel, block, dynamic_smem, &portable);
  set_non_portable(kernel, 1);
  int non_portable_status = potential_cluster_size(kernel, block, dynamic_smem, &non_portable);
  printf("blocks,%s,%d,%d,%d,%d,%d,%d,%d,%d\n", kernel.name, block, dynamic_smem,
         (int)blocks_status, blocks, portable_status, portable, non_portable_status, non_portable);
  for (unsigned size = 1; size <= 16; ++size) print_clusters(kernel, block, dynamic_smem, dim3(size, 1, 1), 1);
  if (!shapes) return;
  const unsigned other_shapes[][3] = {{1, 2, 1}, {1, 1, 2}, {1, 4, 1}, {2, 2, 1}, {1, 3, 1},
                                      {3, 2, 1}, {2, 2, 2}, {4, 2, 1}, {1, 8, 1}, {3, 3, 1},
                                      {5, 2, 1}, {2, 3, 2}, {4, 4, 1}, {2, 2, 4}, {1, 16, 1}};
  for (const auto& s : other_shapes) print_clusters(kernel, block, dynamic_smem, dim3(s[0], s[1], s[2]), 1);
  // Without the opt-in: sizes 1..16 again (above 8 the driver must refuse).
  set_non_portable(kernel, 0);
  for (unsigned size = 1; size <= 16; ++size) print_clusters(kernel, block, dynamic_smem, dim3(size, 1, 1), 0);
  set_non_portable(kernel, 1);
}

static void sweep_kernel(const Kernel& kernel, int optin) {
  cudaFuncAttributes attributes;
  CHECK(cudaFuncGetAttributes(&attributes, kernel.function));
  int max_dynamic = optin - (int)attributes.sharedSizeBytes;
  CHECK(cudaFuncSetAttribute(kernel.function, cudaFuncAttributeMaxDynamicSharedMemorySize, max_dynamic));
  const int block_sizes[] = {32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 896, 1024};
  const int dynamic_sizes[] = {0, 1024, 4096, 12288, 24576, 40960, 49152, 65536, 81920, 102400,
                               116736, 151552, 200704, 1 << 30};
  for (int block : block_sizes) {
    if (block > attributes.maxThreadsPerBlock) continue;
    for (int dynamic_smem : dynamic_sizes) {
      int smem = std::min(dynamic_smem, max_dynamic);
      if (dynamic_smem > max_dynamic && dynamic_smem != (1 << 30)) continue;
      bool shapes = (block == 128 || block == 256) && (smem == 0 || smem == 65536);
      sweep_config(kernel, block, smem, shapes);
    }
  }
}

// Every blocks-per-SM value the tiny kernel can reach: block 32 and 1024 threads, dynamic shared
// memory in 1 KiB steps.
static void dial(const Kernel& kernel, int optin) {
  CHECK(cudaFuncSetAttribute(kernel.function, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  for (int block : {32, 1024})
    for (int smem = 0; smem <= optin; smem += 1024) sweep_config(kernel, block, smem, false);
}

static int find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

// Launches clusters of 2 to 16 blocks, one block per SM (dynamic shared memory fills the SM) and
// also two and four per SM, records where each block ran, and joins the SMs of every cluster: the
// groups are the GPCs as the cluster scheduler sees them.
static void discover_gpcs(int optin, int nsm_ids) {
  const Kernel kernel = {"where_am_i", (const void*)where_am_i};
  CHECK(cudaFuncSetAttribute(where_am_i, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CHECK(cudaFuncSetAttribute(where_am_i, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::vector<int> parent(nsm_ids);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> seen(nsm_ids, 0);
  const int total_blocks = 2048;
  unsigned* device_smids = nullptr;
  CHECK(cudaMalloc(&device_smids, total_blocks * sizeof(unsigned)));
  std::vector<unsigned> smids(total_blocks);
  struct Plan { int smem; std::vector<unsigned> sizes; };
  // 1, 2 and 4 blocks per SM of the 1 KiB-reserved 228 KiB (sm_90): 227 KiB, 100 KiB, 50 KiB.
  const Plan plans[] = {{optin, {2, 4, 8, 16, 3, 6, 12}}, {102400, {3, 4, 5, 16}}, {51200, {3, 5, 9, 16}}};
  int launch = 0;
  for (const Plan& plan : plans) {
    for (unsigned size : plan.sizes) {
      for (int repeat = 0; repeat < 3; ++repeat, ++launch) {
        int clusters = 0;
        query_clusters(kernel, 32, plan.smem, dim3(size, 1, 1), &clusters);
        if (clusters <= 0) continue;
        unsigned blocks = (total_blocks / size) * size;
        CHECK(cudaMemset(device_smids, 0xff, total_blocks * sizeof(unsigned)));
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(blocks, 1, 1);
        config.blockDim = dim3(32, 1, 1);
        config.dynamicSmemBytes = plan.smem;
        cudaLaunchAttribute attribute[1];
        attribute[0].id = cudaLaunchAttributeClusterDimension;
        attribute[0].val.clusterDim.x = size;
        attribute[0].val.clusterDim.y = 1;
        attribute[0].val.clusterDim.z = 1;
        config.attrs = attribute;
        config.numAttrs = 1;
        CHECK(cudaLaunchKernelEx(&config, where_am_i, device_smids, (long long)(20000 + 10000 * repeat)));
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(smids.data(), device_smids, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (unsigned b = 0; b < blocks; ++b) {
          unsigned sm = smids[b];
          if ((int)sm >= nsm_ids) {
            fprintf(stderr, "cluster_probe: block %u wrote SM id %u (nsmid %d)\n", b, sm, nsm_ids);
            exit(3);
          }
          printf("placement,%u,%d,%u,%u,%u,%d\n", size, launch, b / size, b % size, sm, plan.smem);
          seen[sm] = 1;
          unsigned first = smids[(b / size) * size];
          parent[find(parent, (int)sm)] = find(parent, (int)first);
        }
      }
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int sm = 0; sm < nsm_ids; ++sm)
    if (seen[sm]) groups[find(parent, sm)].push_back(sm);
  std::vector<std::vector<int>> ordered;
  for (auto& entry : groups) ordered.push_back(entry.second);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.size() != b.size() ? a.size() > b.size() : a < b; });
  for (const auto& group : ordered) {
    printf("gpc,%zu", group.size());
    for (int sm : group) printf(",%d", sm);
    printf("\n");
  }
  CHECK(cudaFree(device_smids));
}

// Every block counts itself in, then waits until the whole grid has: all blocks resident at once
// arrive within microseconds; a block that gives up after `timeout_ns` is counted in `gave_up`.
__global__ void coresident(unsigned* arrived, unsigned expected, long long timeout_ns,
                           unsigned* gave_up) {
  if (threadIdx.x == 0) {
    atomicAdd(arrived, 1u);
    long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (*(volatile unsigned*)arrived < expected) {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
      if (now - start > timeout_ns) {
        atomicAdd(gave_up, 1u);
        break;
      }
    }
  }
  __syncthreads();
}

// Launches `clusters` clusters of `size` blocks of 32 threads with `smem` bytes of dynamic shared
// memory; returns the launch status and sets `gave_up`.
static int launch_coresident(unsigned size, int smem, int clusters, unsigned* counters,
                             unsigned* gave_up) {
  CHECK(cudaMemset(counters, 0, 2 * sizeof(unsigned)));
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(size * clusters, 1, 1);
  config.blockDim = dim3(32, 1, 1);
  config.dynamicSmemBytes = smem;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeClusterDimension;
  attribute[0].val.clusterDim.x = size;
  attribute[0].val.clusterDim.y = 1;
  attribute[0].val.clusterDim.z = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  cudaError_t status = cudaLaunchKernelEx(&config, coresident, counters, size * clusters,
                                          (long long)5000000, counters + 1);
  *gave_up = 0;
  if (status != cudaSuccess) {
    cudaGetLastError();
    return (int)status;
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(gave_up, counters + 1, sizeof(unsigned), cudaMemcpyDeviceToHost));
  return 0;
}

// Is the driver's answer what the hardware holds at once? For blocks per SM 1..32 (set by dynamic
// shared memory) and several cluster sizes: launch its answer and one cluster more.
static void check_coresidency(int optin) {
  const Kernel kernel = {"coresident", (const void*)coresident};
  CHECK(cudaFuncSetAttribute(coresident, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
  CHECK(cudaFuncSetAttribute(coresident, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  std::map<int, int> smem_for_blocks;  // blocks per SM -> the largest dynamic smem that gives it
  for (int smem = 0; smem <= optin; smem += 128) {
    int blocks = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, coresident, 32, smem));
    smem_for_blocks[blocks] = smem;
  }
  unsigned* counters = nullptr;
  CHECK(cudaMalloc(&counters, 2 * sizeof(unsigned)));
  for (int blocks : {1, 2, 3, 4, 6, 8, 9, 12, 16, 32}) {
    if (!smem_for_blocks.count(blocks)) continue;
    int smem = smem_for_blocks[blocks];
    for (unsigned size : {1u, 2u, 3u, 4u, 7u, 8u, 9u, 16u}) {
      int driver = 0;
      int status = query_clusters(kernel, 32, smem, dim3(size, 1, 1), &driver);
      for (int extra : {0, 1}) {
        int clusters = std::max(driver, 0) + extra;
        if (clusters == 0) continue;
        unsigned gave_up = 0;
        int launch = launch_coresident(size, smem, clusters, counters, &gave_up);
        printf("coresident,%d,%u,%d,%d,%d,%d,%u\n", blocks, size, status == 0 ? driver : -status,
               clusters, launch, smem, gave_up);
      }
    }
  }
  CHECK(cudaFree(counters));
}

__global__ void read_nsmid(int* out) {
  unsigned n;
  asm volatile("mov.u32 %0, %%nsmid;" : "=r"(n));
  *out = (int)n;
}

int main() {
  CHECK(cudaSetDevice(0));
  print_device();
  int optin = device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  int* device_nsmid = nullptr;
  CHECK(cudaMalloc(&device_nsmid, sizeof(int)));
  read_nsmid<<<1, 1>>>(device_nsmid);
  CHECK(cudaGetLastError());
  int nsmid = 0;
  CHECK(cudaMemcpy(&nsmid, device_nsmid, sizeof(int), cudaMemcpyDeviceToHost));
  printf("device,nsmid,%d\n", nsmid);

  const Kernel kernels[] = {
      {"reg_24", (const void*)reg_24},   {"reg_32", (const void*)reg_32},
      {"reg_40", (const void*)reg_40},   {"reg_48", (const void*)reg_48},
      {"reg_56", (const void*)reg_56},   {"reg_64", (const void*)reg_64},
      {"reg_72", (const void*)reg_72},   {"reg_80", (const void*)reg_80},
      {"reg_96", (const void*)reg_96},   {"reg_128", (const void*)reg_128},
      {"reg_168", (const void*)reg_168}, {"reg_200", (const void*)reg_200},
      {"reg_255", (const void*)reg_255}, {"tiny", (const void*)tiny},
      {"static_16k", (const void*)static_16k}, {"static_40k", (const void*)static_40k},
      {"compiled_cluster_2", (const void*)compiled_cluster_2},
  };
  for (const Kernel& kernel : kernels) print_kernel(kernel);
  for (const Kernel& kernel : kernels) {
    if (kernel.function == (const void*)compiled_cluster_2) continue;
    sweep_kernel(kernel, optin);
  }
  dial(kernels[13], optin);
  // The kernel with __cluster_dims__(2,1,1): its own cluster, queried with no launch attribute.
  {
    const Kernel& kernel = kernels[16];
    CHECK(cudaFuncSetAttribute(kernel.function, cudaFuncAttributeMaxDynamicSharedMemorySize, optin));
    for (int block : {32, 128, 1024})
      for (int smem : {0, 65536, optin}) {
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3(8, 1, 1);
        config.blockDim = dim3(block, 1, 1);
        config.dynamicSmemBytes = smem;
        int clusters = -1;
        cudaError_t status = cudaOccupancyMaxActiveClusters(&clusters, kernel.function, &config);
        if (status != cudaSuccess) cudaGetLastError();
        printf("clusters,%s,%d,%d,2,1,1,compiled,%d,%d\n", kernel.name, block, smem, (int)status, clusters);
      }
  }
  discover_gpcs(optin, nsmid);
  check_coresidency(optin);
  fflush(stdout);
  return 0;
}
