#!/usr/bin/env bash
# Wall time of compiling the project's own kernel corpus through occupancy-build versus plain
# nvcc with the same flags, architectures and parallelism; prints the ratio (target <= 1.05).
#
#   scripts/bench-build.sh            # JOBS=$(nproc) RUNS=5 ARCHS=sm_90,sm_100 (the corpus uses clusters: sm_90+)
#
# Corpus: tests/kernels/*.cu (except fails_to_compile.cu) and the saxpy and tiled-gemm kernels
# (spill-gate's fails the checks by design), copied to one directory. Each run starts cold (fresh output dir: no occupancy-build cache, no nvcc reuse).
# "lib" compares `.compile_lib()` (nvcc -c, plus -Xptxas -v --keep -MD and the checks) with plain
# `nvcc -c`; "ptx" compares `.compile_ptx()` (PTX + ptxas for every arch, plus the checks) with
# plain `nvcc -ptx`, which does not run ptxas at all, so that ratio includes ptxas's own time.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source <(scripts/setup-cuda.sh --env)
JOBS=${JOBS:-$(nproc)}
RUNS=${RUNS:-5}
ARCHS=${ARCHS:-sm_90,sm_100}
work="$root/target/bench-build"
rm -rf "$work" && mkdir -p "$work/corpus"
for file in tests/kernels/*.cu examples/{saxpy,tiled-gemm}/kernels/*.cu; do
  [[ "$(basename "$file")" == fails_to_compile.cu ]] && continue
  cp "$file" "$work/corpus/$(basename "$(dirname "$(dirname "$file")")")-$(basename "$file")"
done
# The examples' kernels include the generated occupancy_bounds.h: occupancy-build generates it
# from the examples' declarations (copied to decls/); plain nvcc gets a copy of that same header.
mkdir -p "$work/decls" "$work/include"
for lib in examples/tiled-gemm/src/lib.rs examples/saxpy/src/main.rs; do
  cp "$lib" "$work/decls/$(basename "$(dirname "$(dirname "$lib")")")-$(basename "$lib")"
done
cargo build -q -p occupancy-build --example bench_corpus
bench="$root/target/debug/examples/bench_corpus"
lowest=${ARCHS%%,*}; lowest=${lowest#sm_}
codes=$(echo "$ARCHS" | tr -d ' ')
files=("$work"/corpus/*.cu)
NUM_JOBS=$JOBS "$bench" lib "$work/corpus" "$work/warmup" "$ARCHS" "$work/decls" -O3 >/dev/null
cp "$work/warmup/occupancy_bounds.h" "$work/include/"
echo "corpus: ${#files[@]} files; archs $ARCHS; $JOBS jobs; median of $RUNS cold runs"

plain() { # mode
  local out="$work/plain" && rm -rf "$out" && mkdir -p "$out"
  local start end
  start=$(date +%s.%N)
  if [[ $1 == lib ]]; then
    printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c 'nvcc -c -arch=compute_'"$lowest"' -code='"$codes"',compute_'"$lowest"' -I '"$work/include"' -O3 -o '"$out"'/$(basename {}).o {}'
  else
    printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c 'nvcc -ptx -arch=compute_'"$lowest"' -I '"$work/include"' -O3 -o '"$out"'/$(basename {}).ptx {}'
  fi
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}

ours() { # mode
  local out="$work/ours" && rm -rf "$out"
  NUM_JOBS=$JOBS "$bench" "$1" "$work/corpus" "$out" "$ARCHS" "$work/decls" -O3 2>/dev/null
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for mode in lib ptx; do
  plain_times=(); our_times=()
  for _ in $(seq "$RUNS"); do
    plain_times+=("$(plain "$mode")")
    our_times+=("$(ours "$mode")")
  done
  p=$(printf '%s\n' "${plain_times[@]}" | median)
  o=$(printf '%s\n' "${our_times[@]}" | median)
  printf '%-4s plain nvcc %6.3fs   occupancy-build %6.3fs   ratio %.3f   (runs: plain %s; ours %s)\n' \
    "$mode" "$p" "$o" "$(echo "$o / $p" | bc -l)" "${plain_times[*]}" "${our_times[*]}"
done
