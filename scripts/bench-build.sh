#!/usr/bin/env bash
# Wall time of compiling the project's own kernel corpus through occupancy-build versus plain
# nvcc with the same flags, architectures and parallelism; prints the ratio (target <= 1.05).
#
#   scripts/bench-build.sh            # JOBS=$(nproc) RUNS=5 ARCHS=sm_90,sm_100 (the corpus uses clusters: sm_90+)
#
# Corpus: tests/kernels/*.cu (except fails_to_compile.cu and smem_spilling_dynamic.cu, which fail on purpose) and the saxpy and tiled-gemm kernels
# (spill-gate's fails the checks by design), copied to one directory. Each run starts cold (fresh output dir: no occupancy-build cache, no nvcc reuse).
# Three comparisons, each plain nvcc with the same flags, archs and parallelism (xargs -P JOBS):
#   compile_lib vs `nvcc -c` (the same work: cicc + ptxas per arch + host code);
#   compile_ptx vs `nvcc -fatbin` (the same device work: cicc once + ptxas per arch);
#   compile_ptx vs `nvcc -ptx`, which runs no ptxas: that ratio is what knowing the registers costs.
# Wall-clock medians and best runs, and CPU time (user + sys of every process): on a loaded,
# shared machine wall time is noisy and CPU time is the steadier measure of the work added.
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
  case "$(basename "$file")" in fails_to_compile.cu | smem_spilling_dynamic.cu) continue ;; esac
  cp "$file" "$work/corpus/$(basename "$(dirname "$(dirname "$file")")")-$(basename "$file")"
done
# The examples' kernels include the generated occupancy_bounds.h: occupancy-build generates it
# from the examples' declarations (copied to decls/); plain nvcc gets a copy of that same header.
mkdir -p "$work/decls" "$work/include"
for lib in examples/tiled-gemm/src/lib.rs examples/saxpy/src/main.rs; do
  cp "$lib" "$work/decls/$(basename "$(dirname "$(dirname "$lib")")")-$(basename "$lib")"
done
# The build script as cargo builds it: opt-level 0 throughout.
bench="$(scripts/build-bench-corpus.sh)"
lowest=${ARCHS%%,*}; lowest=${lowest#sm_}
codes=$(echo "$ARCHS" | tr -d ' ')
files=("$work"/corpus/*.cu)
NUM_JOBS=$JOBS "$bench" lib "$work/corpus" "$work/warmup" "$ARCHS" "$work/decls" -O3 >/dev/null
cp "$work/warmup/occupancy_bounds.h" "$work/include/"
echo "corpus: ${#files[@]} files; archs $ARCHS; $JOBS jobs; median of $RUNS cold runs"

# Each measurement prints "wall_seconds cpu_seconds" (cpu = user + sys of every process it ran).
measure() {
  local TIMEFORMAT='%R %U %S'
  { time "$@" >/dev/null 2>&1 ; } 2>&1 | awk '{printf "%.3f %.3f\n", $1, $2 + $3}'
}

plain_build() { # mode: lib | ptx | fatbin
  local out="$work/plain" && rm -rf "$out" && mkdir -p "$out"
  local flags
  case $1 in
    lib) flags="-c -arch=compute_$lowest -code=$codes,compute_$lowest" ;;
    ptx) flags="-ptx -arch=compute_$lowest" ;;
    fatbin) flags="-fatbin -arch=compute_$lowest -code=$codes" ;;
  esac
  printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c 'nvcc '"$flags"' -I '"$work/include"' -O3 -o '"$out"'/$(basename {}).out {}'
}

our_build() { # mode
  local out="$work/ours" && rm -rf "$out"
  NUM_JOBS=$JOBS "$bench" "$1" "$work/corpus" "$out" "$ARCHS" "$work/decls" -O3
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { sort -n | head -1; }

# Interleaved runs (plain, ours, plain, ours, ...) so load from other processes hits both alike.
compare() { # label, our mode, plain mode
  local plain_wall=() plain_cpu=() our_wall=() our_cpu=() result
  for _ in $(seq "$RUNS"); do
    result=$(measure plain_build "$3"); plain_wall+=("${result% *}"); plain_cpu+=("${result#* }")
    result=$(measure our_build "$2"); our_wall+=("${result% *}"); our_cpu+=("${result#* }")
  done
  local pw ow pb ob pc oc
  pw=$(printf '%s\n' "${plain_wall[@]}" | median); ow=$(printf '%s\n' "${our_wall[@]}" | median)
  pb=$(printf '%s\n' "${plain_wall[@]}" | minimum); ob=$(printf '%s\n' "${our_wall[@]}" | minimum)
  pc=$(printf '%s\n' "${plain_cpu[@]}" | median); oc=$(printf '%s\n' "${our_cpu[@]}" | median)
  printf '%-32s wall median %6.2fs vs %6.2fs = %.3f | wall best %6.2fs vs %6.2fs = %.3f | cpu median %6.2fs vs %6.2fs = %.3f\n' \
    "$1" "$pw" "$ow" "$(echo "$ow / $pw" | bc -l)" "$pb" "$ob" "$(echo "$ob / $pb" | bc -l)" "$pc" "$oc" "$(echo "$oc / $pc" | bc -l)"
}

echo "plain nvcc vs occupancy-build (compile + checks); ratio = occupancy-build / plain"
compare "compile_lib vs nvcc -c" lib lib
compare "compile_ptx vs nvcc -fatbin" ptx fatbin
compare "compile_ptx vs nvcc -ptx" ptx ptx
