#!/usr/bin/env bash
# Memory and time of the log-reading commands on big inputs (issue #23 point 2), release build.
#
#   scripts/bench-big-logs.sh                 # 100k, 1M and 4M records, and a 1 GiB mixed CMake log
#   scripts/bench-big-logs.sh 100000 1000000  # only these record counts (no CMake log)
#   MIXED_MB=256 scripts/bench-big-logs.sh 100000   # and a 256 MB mixed log
#   BIN=/path/to/cargo-occupancy scripts/bench-big-logs.sh ...   # another build (no cargo build)
#   LIMIT_S=120 LIMIT_MB=8000 ...             # per-command wall-clock and address-space limits
#
# Inputs are generated under a temporary directory ($TMPDIR, default /tmp) and deleted at exit:
#  * `N` records: N/2 distinct kernels (`_Z14kernel_0000123Pfi`), each compiled for sm_80 and
#    sm_90 (a section per arch, as nvcc prints them), with registers from 16 to 255: every tenth
#    kernel spills and the register-heavy ones are occupancy-limited, so `check` has findings on
#    a tenth of the rows. Every name is distinct: nothing keyed by kernel name can stay small.
#  * the mixed log: the same records between CMake/ninja progress lines, nvcc command lines of
#    about 600 bytes and host-compiler warnings (about half the bytes are not ptxas's).
#  * the batch: N JSON lines for `calc --batch`; and `calc --batch /dev/zero` (no newline ever).
#
# Each command runs under /usr/bin/time -v; the table gives wall and CPU seconds, peak RSS and
# the exit code (`check` exits 1: the logs hold deny findings). Output goes to /dev/null; for
# `check` text the number of lines printed is shown too. `check --json`/`--sarif` spool their
# arrays to $TMPDIR: give it room for the output (about 1 KB per record for --json).
# `check --arch ...` keeps a name and an arch bitmask per distinct kernel (for missing_kernel):
# the one figure here that grows with the distinct kernels of the log.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

counts=("$@")
if [[ ${#counts[@]} -eq 0 ]]; then
  counts=(100000 1000000 4000000)
  : "${MIXED_MB:=1024}"
fi
: "${MIXED_MB:=0}"
: "${LIMIT_S:=600}"
: "${LIMIT_MB:=12000}"

if [[ -z "${BIN:-}" ]]; then
  cargo build -q --release -p cargo-occupancy
  BIN=target/release/cargo-occupancy
fi
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/occupancy-bench-big.XXXXXX")
trap 'rm -rf "$dir"' EXIT

# Records: `gen_log N [mixed]` writes N records (N/2 kernels x 2 archs) to stdout.
gen_log() {
  awk -v n="$1" -v mixed="${2:-0}" 'BEGIN {
    kernels = int(n / 2)
    for (i = 0; i < kernels; i++) {
      name = sprintf("_Z14kernel_%07dPfi", i)
      regs = 16 + (i * 37) % 240
      spill = (i % 10 == 0) ? 96 : 0
      if (mixed) {
        printf "[%d/%d] Building CUDA object CMakeFiles/big.dir/src/kernel_%07d.cu.o\n", i + 1, kernels, i
        printf "/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -DBIG_DEFINE=1 -I/work/big/include -I/work/big/third_party/cutlass/include -I/work/big/third_party/cub -isystem /usr/local/cuda/include -O3 -DNDEBUG -std=c++17 --generate-code=arch=compute_80,code=[compute_80,sm_80] --generate-code=arch=compute_90,code=[compute_90,sm_90] -Xptxas -v -Xcompiler=-fPIC -Xcompiler=-Wall -Xcompiler=-Wextra --expt-relaxed-constexpr --expt-extended-lambda -MD -MT CMakeFiles/big.dir/src/kernel_%07d.cu.o -MF CMakeFiles/big.dir/src/kernel_%07d.cu.o.d -x cu -c /work/big/src/kernel_%07d.cu -o CMakeFiles/big.dir/src/kernel_%07d.cu.o\n", i, i, i, i, i
        if (i % 7 == 0) printf "/work/big/src/kernel_%07d.cu(12): warning #177-D: variable \"unused\" was declared but never referenced\n", i
      }
      for (a = 0; a < 2; a++) {
        arch = a ? "sm_90" : "sm_80"
        print "ptxas info    : 0 bytes gmem"
        printf "ptxas info    : Compiling entry function '\''%s'\'' for '\''%s'\''\n", name, arch
        printf "ptxas info    : Function properties for %s\n", name
        printf "    %d bytes stack frame, %d bytes spill stores, %d bytes spill loads\n", spill, spill, spill
        printf "ptxas info    : Used %d registers, used 1 barriers, %d bytes smem, 368 bytes cmem[0]\n", regs, (i % 5) * 4096
        printf "ptxas info    : Compile time = %d.%03d ms\n", 1 + i % 40, i % 1000
      }
    }
  }'
}

gen_batch() {
  awk -v n="$1" 'BEGIN {
    for (i = 0; i < n; i++)
      printf "{\"arch\":\"sm_%d\",\"block\":%d,\"registers\":%d,\"static_smem\":%d}\n", (i % 2) ? 90 : 80, 32 * (1 + i % 32), 16 + i % 240, (i % 6) * 4096
  }'
}

measure() { # measure NAME STDOUT-FILE COMMAND...: one table line
  local name=$1 out=$2; shift 2
  local code=0
  ( ulimit -v $((LIMIT_MB * 1024)); exec timeout "$LIMIT_S" /usr/bin/time -v "$@" ) \
    > "$out" 2> "$dir/time" || code=$?
  local wall cpu rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$dir/time")
  cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$dir/time")
  rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$dir/time")
  local note=""
  [[ $code == 124 ]] && note="timed out after ${LIMIT_S}s"
  [[ -z "$wall" ]] && { wall=$LIMIT_S; cpu=0; rss=0; note="killed (limit ${LIMIT_S}s / ${LIMIT_MB} MB)"; }
  if grep -q "memory allocation of" "$dir/time"; then note="out of memory at the ${LIMIT_MB} MB limit"; fi
  if [[ -z "$note" && "$name" == "check" ]]; then note="$(wc -l < "$out") lines"; fi
  printf '%-14s %-26s %8.2f %8.2f %8.0f MB %4s  %s\n' "$label" "$name" "$wall" "$cpu" "$((rss / 1024))" "$code" "$note"
}

printf '%-14s %-26s %8s %8s %11s %4s  %s\n' input command wall-s cpu-s "peak RSS" exit note
run_all() { # run_all LABEL LOG KERNEL
  label=$1
  local log=$2 kernel=$3
  measure "check" "$dir/out" "$BIN" occupancy check "$log" --cache-dir "$dir/cache"
  measure "check --json" /dev/null "$BIN" occupancy check --json "$log" --cache-dir "$dir/cache"
  measure "check --sarif" /dev/null "$BIN" occupancy check --sarif "$log" --cache-dir "$dir/cache"
  measure "check --arch 80 --arch 90" /dev/null "$BIN" occupancy check --arch sm_80 --arch sm_90 "$log" --cache-dir "$dir/cache"
  measure "explain (last kernel)" /dev/null "$BIN" occupancy explain "$kernel" --log "$log"
  measure "parse" /dev/null "$BIN" occupancy parse "$log"
}

for count in "${counts[@]}"; do
  log="$dir/records-$count.log"
  gen_log "$count" > "$log"
  run_all "$count rec" "$log" "$(printf 'kernel_%07d' $((count / 2 - 1)))"
  rm -f "$log"
  gen_batch "$count" > "$dir/batch.jsonl"
  label="$count lines"
  measure "calc --batch" /dev/null "$BIN" occupancy calc --batch "$dir/batch.jsonl"
  rm -f "$dir/batch.jsonl"
done

if (( MIXED_MB > 0 )); then
  # About 1,450 bytes per kernel (two records and the CMake lines around them).
  kernels=$(( (MIXED_MB << 20) / 1450 ))
  log="$dir/mixed.log"
  gen_log $((kernels * 2)) 1 > "$log"
  run_all "$(( $(wc -c < "$log") >> 20 )) MiB mixed" "$log" "$(printf 'kernel_%07d' $((kernels - 1)))"
  rm -f "$log"
fi

label="/dev/zero"
measure "calc --batch" /dev/null "$BIN" occupancy calc --batch /dev/zero
