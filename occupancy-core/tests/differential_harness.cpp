// Test-only bridge to NVIDIA's cuda_occupancy.h (the oracle of tests/differential.rs).
// Compiled at test time with `g++ -O2 -include <path to cuda_occupancy.h>`; the header is never
// copied into this repository.
//
// Protocol (whitespace-separated integers, one query per line):
//   first: N, then N device lines:
//     major minor maxThreadsPerBlock maxThreadsPerSM regsPerBlock regsPerSM warpSize
//     smemPerBlock smemPerSM smemPerBlockOptin reservedSmemPerBlock
//   then queries, each starting with a kind letter, all sharing the function and state fields
//     arch numRegs staticSmem maxThreadsPerBlock maxDynamicSmem numBarriers carveout(-1 default)
//   o ... blockSize dynamicSmem   -> status blocks limitingFactors regs smem warps blocks barriers allocRegs allocSmem
//   p ... dynamicSmem             -> status minGridSize blockSize        (numSms = 1)
//   a ... blockSize numBlocks     -> status bytes
#include <cstdio>
#include <cstdlib>
#include <vector>

static char in_buffer[1 << 16];
static size_t in_len = 0, in_pos = 0;

static int next_char() {
    if (in_pos == in_len) {
        in_len = fread(in_buffer, 1, sizeof in_buffer, stdin);
        in_pos = 0;
        if (in_len == 0) return -1;
    }
    return in_buffer[in_pos++];
}

// Returns false at end of input.
static bool next_token(char *kind, long long *value) {
    int c = next_char();
    while (c == ' ' || c == '\n' || c == '\r' || c == '\t') c = next_char();
    if (c < 0) return false;
    if (kind && c >= 'a' && c <= 'z') { *kind = (char)c; return true; }
    bool negative = false;
    if (c == '-') { negative = true; c = next_char(); }
    long long number = 0;
    while (c >= '0' && c <= '9') { number = number * 10 + (c - '0'); c = next_char(); }
    *value = negative ? -number : number;
    return true;
}

static long long read_number() {
    long long value = 0;
    if (!next_token(nullptr, &value)) { fprintf(stderr, "harness: truncated input\n"); exit(3); }
    return value;
}

int main() {
    static char out_buffer[1 << 20];
    setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
    int device_count = (int)read_number();
    std::vector<cudaOccDeviceProp> devices(device_count);
    for (auto &device : devices) {
        device.computeMajor = (int)read_number();
        device.computeMinor = (int)read_number();
        device.maxThreadsPerBlock = (int)read_number();
        device.maxThreadsPerMultiprocessor = (int)read_number();
        device.regsPerBlock = (int)read_number();
        device.regsPerMultiprocessor = (int)read_number();
        device.warpSize = (int)read_number();
        device.sharedMemPerBlock = (size_t)read_number();
        device.sharedMemPerMultiprocessor = (size_t)read_number();
        device.sharedMemPerBlockOptin = (size_t)read_number();
        device.reservedSharedMemPerBlock = (size_t)read_number();
        device.numSms = 1;
    }
    char kind = 0;
    long long ignored = 0;
    while (next_token(&kind, &ignored)) {
        int arch = (int)read_number();
        cudaOccFuncAttributes attributes;  // C++ constructor: every field zero / default
        attributes.numRegs = (int)read_number();
        attributes.sharedSizeBytes = (size_t)read_number();
        attributes.maxThreadsPerBlock = (int)read_number();
        attributes.maxDynamicSharedSizeBytes = (size_t)read_number();
        attributes.numBlockBarriers = (int)read_number();
        // What the runtime's cudaFuncAttributes conversion sets: opt-in limits, no partitioned GC.
        attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        attributes.partitionedGCConfig = PARTITIONED_GC_OFF;
        cudaOccDeviceState state;
        state.carveoutConfig = (int)read_number();
        const cudaOccDeviceProp &device = devices.at(arch);
        if (kind == 'o') {
            int block_size = (int)read_number();
            size_t dynamic_smem = (size_t)read_number();
            cudaOccResult result = {};
            cudaOccError status = cudaOccMaxActiveBlocksPerMultiprocessor(
                &result, &device, &attributes, &state, block_size, dynamic_smem);
            printf("%d %d %u %d %d %d %d %d %d %zu\n", (int)status, result.activeBlocksPerMultiprocessor,
                   result.limitingFactors, result.blockLimitRegs, result.blockLimitSharedMem,
                   result.blockLimitWarps, result.blockLimitBlocks, result.blockLimitBarriers,
                   result.allocatedRegistersPerBlock, result.allocatedSharedMemPerBlock);
        } else if (kind == 'p') {
            size_t dynamic_smem = (size_t)read_number();
            int min_grid = 0, block_size = 0;
            cudaOccError status = cudaOccMaxPotentialOccupancyBlockSize(
                &min_grid, &block_size, &device, &attributes, &state, dynamic_smem);
            printf("%d %d %d\n", (int)status, min_grid, block_size);
        } else if (kind == 'a') {
            int block_size = (int)read_number();
            int num_blocks = (int)read_number();
            size_t bytes = 0;
            cudaOccError status = cudaOccAvailableDynamicSMemPerBlock(
                &bytes, &device, &attributes, &state, num_blocks, block_size);
            printf("%d %zu\n", (int)status, bytes);
        } else {
            fprintf(stderr, "harness: unknown query kind '%c'\n", kind);
            return 3;
        }
    }
    fflush(stdout);
    return 0;
}
