#!/usr/bin/env bash
# Benchmark: `cargo occupancy calc --batch` against a minimal C++ program driving NVIDIA's
# cuda_occupancy.h (g++ -O2) on the same configurations, whole processes, back to back.
#
# N random configurations (default 1,000,000) over every architecture of the table, one JSON
# object per line with every key (arch, block, registers, static_smem, dynamic_smem, barriers,
# carveout). The C++ program reads the same file, calls cudaOccMaxActiveBlocksPerMultiprocessor
# per line and prints {"blocks_per_sm":B,"limiters":[...]}: the answer `--fields
# blocks_per_sm,limiters` gives. Both sums of blocks must agree (the checksum), then each command
# runs RUNS times (default 5) and the median and the best whole-process times are printed:
#   header            the C++ program
#   ours (fields)     calc --batch FILE --fields blocks_per_sm,limiters     target <= 1.0x header
#   ours (full)       calc --batch FILE (every field, headroom included)     target <= 2.0x header
# Usage: scripts/bench-batch.sh [N]     (needs g++, python3, and scripts/setup-cuda.sh)
#   RUNS=K      runs per command (default 5)
#   OURS=PATH   a cargo-occupancy binary built elsewhere (no cargo build here), e.g. to measure
#               on a quieter machine with OCCUPANCY_CUDA_OCCUPANCY_H pointing at the header
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
configs="${1:-1000000}"
RUNS="${RUNS:-5}"
if [[ -z "${OCCUPANCY_CUDA_OCCUPANCY_H:-}" ]]; then
    source <(scripts/setup-cuda.sh --env)
fi
header="${OCCUPANCY_CUDA_OCCUPANCY_H:?cuda_occupancy.h not found: run scripts/setup-cuda.sh first}"
work="$root/target/bench-batch"
mkdir -p "$work"
if [[ -n "${OURS:-}" ]]; then
    ours="$OURS"
else
    cargo build --release -q -p cargo-occupancy
    ours=target/release/cargo-occupancy
fi

# Devices (from the tool's own table) and the configurations.
"$ours" occupancy arch --json > "$work/archs.json"
python3 - "$work" "$configs" <<'PY'
import json, random, sys
work, count = sys.argv[1], int(sys.argv[2])
archs = json.load(open(f"{work}/archs.json"))
with open(f"{work}/devices.txt", "w") as out:
    out.write(f"{len(archs)}\n")
    for a in archs:
        out.write(" ".join(str(a[k]) for k in ("name", "major", "minor", "max_threads_per_block",
            "max_threads_per_sm", "regs_per_block", "regs_per_sm", "warp_size", "smem_per_block",
            "smem_per_sm", "smem_per_block_optin", "reserved_smem_per_block")) + "\n")
rng = random.Random(20261123)
with open(f"{work}/configs.jsonl", "w") as out:
    for _ in range(count):
        a = rng.choice(archs)
        block = rng.choice((rng.randrange(32, 1025, 32), rng.randint(1, 1024)))
        static = rng.choice((0, rng.randint(0, 49152), rng.randint(0, a["smem_per_block_optin"])))
        dynamic = rng.choice((0, rng.randint(0, 49152)))
        carveout = rng.choice(('"default"', str(rng.randint(0, 100))))
        out.write(f'{{"arch":"{a["name"]}","block":{block},"registers":{rng.randint(0, 255)},'
                  f'"static_smem":{static},"dynamic_smem":{dynamic},"barriers":{rng.randint(0, 16)},'
                  f'"carveout":{carveout}}}\n')
PY

cat > "$work/header_batch.cpp" <<'CPP'
// Minimal driver of cuda_occupancy.h: the same JSON lines in (keys in the generator's order),
// {"blocks_per_sm":B,"limiters":[...]} out, the sum of blocks on stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
int main(int argc, char **argv) {
    std::map<std::string, cudaOccDeviceProp> devices;
    FILE *device_file = fopen(argv[1], "r");
    int count = 0;
    if (!device_file || fscanf(device_file, "%d", &count) != 1) return 3;
    for (int i = 0; i < count; ++i) {
        char name[32]; cudaOccDeviceProp d; long long smem_block, smem_sm, optin, reserved;
        if (fscanf(device_file, "%31s %d %d %d %d %d %d %d %lld %lld %lld %lld", name, &d.computeMajor,
                   &d.computeMinor, &d.maxThreadsPerBlock, &d.maxThreadsPerMultiprocessor, &d.regsPerBlock,
                   &d.regsPerMultiprocessor, &d.warpSize, &smem_block, &smem_sm, &optin, &reserved) != 12) return 3;
        d.sharedMemPerBlock = smem_block; d.sharedMemPerMultiprocessor = smem_sm;
        d.sharedMemPerBlockOptin = optin; d.reservedSharedMemPerBlock = reserved; d.numSms = 1;
        devices[name] = d;
    }
    static char out_buffer[1 << 20];
    setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
    char line[512];
    unsigned long long sum_blocks = 0;
    static const char *names[] = {"warps", "registers", "shared_memory", "blocks", "barriers"};
    while (fgets(line, sizeof line, stdin)) {
        char arch[32], carveout[16];
        int block, registers, barriers; long long static_smem, dynamic_smem;
        if (sscanf(line, "{\"arch\":\"%31[^\"]\",\"block\":%d,\"registers\":%d,\"static_smem\":%lld,"
                   "\"dynamic_smem\":%lld,\"barriers\":%d,\"carveout\":%15[^}]}", arch, &block, &registers,
                   &static_smem, &dynamic_smem, &barriers, carveout) != 7) { fprintf(stderr, "bad line\n"); return 3; }
        const cudaOccDeviceProp &device = devices.at(arch);
        cudaOccFuncAttributes attributes;
        attributes.maxThreadsPerBlock = device.maxThreadsPerBlock;
        attributes.numRegs = registers;
        attributes.sharedSizeBytes = static_smem;
        attributes.numBlockBarriers = barriers;
        attributes.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;
        long long default_opt_in = (long long)device.sharedMemPerBlock - static_smem;
        attributes.maxDynamicSharedSizeBytes = dynamic_smem > default_opt_in ? dynamic_smem
                                             : (default_opt_in > 0 ? default_opt_in : 0);
        cudaOccDeviceState state;
        state.carveoutConfig = carveout[0] == '"' ? -1 : atoi(carveout);
        cudaOccResult result = {};
        cudaOccMaxActiveBlocksPerMultiprocessor(&result, &device, &attributes, &state, block, dynamic_smem);
        sum_blocks += result.activeBlocksPerMultiprocessor;
        printf("{\"blocks_per_sm\":%d,\"limiters\":[", result.activeBlocksPerMultiprocessor);
        bool first = true;
        for (int bit = 0; bit < 5; ++bit) {
            if (result.limitingFactors & (1u << bit)) { printf(first ? "\"%s\"" : ",\"%s\"", names[bit]); first = false; }
        }
        printf("]}\n");
    }
    fflush(stdout);
    fprintf(stderr, "%llu\n", sum_blocks);
    return 0;
}
CPP
g++ -O2 -include "$header" "$work/header_batch.cpp" -o "$work/header_batch"

header_cmd=("$work/header_batch" "$work/devices.txt")
fields_cmd=("$ours" occupancy calc --batch - --fields blocks_per_sm,limiters)
full_cmd=("$ours" occupancy calc --batch -)

header_sum=$("${header_cmd[@]}" < "$work/configs.jsonl" 2>&1 >/dev/null)
ours_sum=$("${fields_cmd[@]}" < "$work/configs.jsonl" | python3 -c '
import json, sys
print(sum(json.loads(line)["blocks_per_sm"] for line in sys.stdin))')
echo "checksum (sum of blocks per SM over $configs configurations): header $header_sum, ours $ours_sum"
if [[ "$header_sum" != "$ours_sum" ]]; then
    echo "CHECKSUM MISMATCH" >&2
    exit 1
fi

# Prints "MEDIAN BEST" over RUNS whole-process runs of the command.
median_and_best_seconds() {
    local times=()
    for _ in $(seq "$RUNS"); do
        local start end
        start=$(date +%s.%N)
        "$@" < "$work/configs.jsonl" > "$work/out.jsonl" 2> /dev/null
        end=$(date +%s.%N)
        times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')")
    done
    printf '%s\n' "${times[@]}" | sort -n | awk '{ t[NR] = $1 } END {
        median = (NR % 2) ? t[(NR + 1) / 2] : (t[NR / 2] + t[NR / 2 + 1]) / 2
        printf "%.3f %.3f\n", median, t[1] }'
}
read -r header_median header_best <<< "$(median_and_best_seconds "${header_cmd[@]}")"
read -r fields_median fields_best <<< "$(median_and_best_seconds "${fields_cmd[@]}")"
read -r full_median full_best <<< "$(median_and_best_seconds "${full_cmd[@]}")"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "median (best) of $RUNS whole-process runs, $configs configurations:"
echo "header (g++ -O2):                      ${header_median} s (${header_best} s)"
echo "ours --fields blocks_per_sm,limiters:  ${fields_median} s (${fields_best} s)  ratio $(ratio "$fields_median" "$header_median") ($(ratio "$fields_best" "$header_best")) (target <= 1.0)"
echo "ours, full answer:                     ${full_median} s (${full_best} s)  ratio $(ratio "$full_median" "$header_median") ($(ratio "$full_best" "$header_best")) (target <= 2.0)"
