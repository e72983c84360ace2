#!/usr/bin/env bash
# Build speed on a real crate nobody here wrote: candle's `candle-kernels` as it is today (PTX for
# run-time loading plus a static library of MoE and quantized matrix kernels), against the plain
# compiler work with the same outputs, side by side in one run.
#
#   CANDLE_DIR=/path/to/candle scripts/bench-real-crate.sh   # RUNS=3 JOBS=$(nproc) ARCHS=sm_80,sm_90
#   LIB=0 ...   # leave the library out (its plain compile alone takes minutes of CPU per run)
#
# CANDLE_DIR is a checkout of https://github.com/huggingface/candle (any commit with
# candle-kernels/src); its sources are copied into a scratch directory and never committed.
# The products follow candle's build.rs: PTX from src/**/*.cu but moe_*.cu, mmvq_gguf.cu and
# mmq_*.cu, which go into the library (`--expt-relaxed-constexpr -std=c++17 -O3`, the library
# with `-Xcompiler -fPIC`). Prints, per comparison, wall and CPU (user + sys of every process)
# medians and their ratio:
#   PTX product: compile_ptx (the build script's code built as cargo builds it, opt-level 0) vs
#     the work a checked PTX build needs: `nvcc -ptx` per file, then `ptxas -v` per file and arch,
#     scheduled by `make -j JOBS` (each arch assembled as soon as its PTX exists, in parallel);
#   library: compile_lib vs `nvcc -c` per file with every arch (make -j JOBS);
#   check: `cargo occupancy check` (fresh cache, release CLI) on the PTX product's files vs
#     `nvcc -fatbin -Xptxas -v` per file (make -j JOBS);
#   rerun: both products again with no CUDA source changed, what the build script does after a
#     Rust-only edit (absolute wall seconds; target <= 0.3 s).
# Targets (issue 22): CPU <= 1.03x, wall <= 1.05x the plain schedule.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/bench-common.sh
: "${CANDLE_DIR:?set CANDLE_DIR to a checkout of huggingface/candle}"
find_nvcc
PTXAS=${PTXAS:-$(dirname "$NVCC")/ptxas}
JOBS=${JOBS:-$(nproc)}
RUNS=${RUNS:-3}
ARCHS=${ARCHS:-sm_80,sm_90}
FLAGS=(--expt-relaxed-constexpr -std=c++17 -O3)
work=${WORK:-$root/target/bench-real-crate}
rm -rf "$work" && mkdir -p "$work/src"
cp -r "$CANDLE_DIR/candle-kernels/src/." "$work/src/"
BENCH_BIN=${BENCH_BIN:-$(scripts/build-bench-corpus.sh)}
if [[ -z "${CHECK_BIN:-}" ]]; then
  cargo build -q --release -p cargo-occupancy
  CHECK_BIN=$root/target/release/cargo-occupancy
fi
lowest=${ARCHS%%,*}; lowest=${lowest#sm_}
# candle's split: the library's files by name, the rest of src/**/*.cu is PTX.
find "$work/src" -name '*.cu' | sort >"$work/all.list"
grep -E '/(moe_[^/]*|mmvq_gguf|mmq_[^/]*)\.cu$' "$work/all.list" >"$work/lib.list"
grep -v -x -F -f "$work/lib.list" "$work/all.list" >"$work/ptx.list"
echo "candle-kernels at $(git -C "$CANDLE_DIR" rev-parse --short HEAD 2>/dev/null || echo '?'): $(wc -l <"$work/ptx.list") PTX files, $(wc -l <"$work/lib.list") library files; archs $ARCHS; $JOBS jobs; $RUNS runs; $("$NVCC" --version | tail -2 | head -1)"

# Makefiles for the plain schedules: every arch of a file assembled in parallel once its PTX exists.
write_makefiles() {
  local flags="${FLAGS[*]}" code archs=${ARCHS//,/ }
  code=$(echo "$ARCHS" | sed 's/sm_/sm_/g'),compute_$lowest
  {
    echo "all:"
    while read -r file; do
      stem=$(basename "$file" .cu); dir=$(dirname "$file"); key=$(echo "$file" | md5sum | cut -c1-8)
      echo "plain/$key.ptx: $file"
      echo "	@mkdir -p plain && cd $dir && \"$NVCC\" -ptx -arch=compute_$lowest $flags -o $work/plain/$key.ptx $file"
      for arch in $archs; do
        echo "all: plain/$key.$arch.cubin"
        echo "plain/$key.$arch.cubin: plain/$key.ptx"
        echo "	@\"$PTXAS\" -v -arch=$arch -o \$@ \$< 2>/dev/null"
      done
    done <"$work/ptx.list"
  } >"$work/ptx.mk"
  {
    echo "all:"
    while read -r file; do
      key=$(echo "$file" | md5sum | cut -c1-8)
      echo "all: lib/$key.o"
      echo "lib/$key.o: $file"
      echo "	@mkdir -p lib && \"$NVCC\" -c -arch=compute_$lowest -code=$code $flags -Xcompiler -fPIC -Xptxas -v -o \$@ \$< 2>/dev/null"
    done <"$work/lib.list"
  } >"$work/lib.mk"
  {
    echo "all:"
    while read -r file; do
      key=$(echo "$file" | md5sum | cut -c1-8)
      echo "all: fatbin/$key.fatbin"
      echo "fatbin/$key.fatbin: $file"
      echo "	@mkdir -p fatbin/$key && \"$NVCC\" -fatbin -arch=compute_$lowest -code=$ARCHS $flags -Xptxas -v --keep --keep-dir fatbin/$key -o \$@ \$< 2>/dev/null"
    done <"$work/ptx.list"
  } >"$work/fatbin.mk"
}
write_makefiles

plain() { rm -rf "$work/plain" "$work/lib" "$work/fatbin"; make -s -C "$work" -f "$1" -j "$JOBS"; }
ours() { # product, out dir
  rm -rf "$work/$2"
  NUM_JOBS=$JOBS "$BENCH_BIN" "$1" "@$work/$1.list" "$work/$2" "$ARCHS" "$work/decl" "${FLAGS[@]}" \
    $([[ $1 == lib ]] && echo -Xcompiler -fPIC) 2>"$work/$2.stderr" || [[ $? == 0 ]]
}
ours_again() { # both products, caches warm
  for product in ptx lib; do
    NUM_JOBS=$JOBS "$BENCH_BIN" "$product" "@$work/$product.list" "$work/ours-$product" "$ARCHS" "$work/decl" \
      "${FLAGS[@]}" $([[ $product == lib ]] && echo -Xcompiler -fPIC) >/dev/null 2>&1
  done
}
check_cold() {
  rm -rf "$work/check-cache"
  local archs=() && for arch in ${ARCHS//,/ }; do archs+=(--arch "$arch"); done
  mapfile -t files <"$work/ptx.list"
  "$CHECK_BIN" occupancy check "${files[@]}" "${archs[@]}" --cache-dir "$work/check-cache" --json -- "${FLAGS[@]}" || [[ $? == 1 ]]
}
mkdir -p "$work/decl"

for run in $(seq "$RUNS"); do
  echo "run $run"
  record plain_ptx "$(measure plain ptx.mk)"
  record ours_ptx "$(measure ours ptx ours-ptx)"
  if [[ "${LIB:-1}" != 0 ]]; then
    record plain_lib "$(measure plain lib.mk)"
    record ours_lib "$(measure ours lib ours-lib)"
    record rerun "$(measure ours_again)"
  fi
  record plain_fatbin "$(measure plain fatbin.mk)"
  record check_cold "$(measure check_cold)"
done
echo "medians (ratio = occupancy / plain; targets: cpu <= 1.03, wall <= 1.05)"
report "PTX product vs nvcc -ptx + ptxas -v" ours_ptx plain_ptx
[[ "${LIB:-1}" != 0 ]] && report "library vs nvcc -c" ours_lib plain_lib
report "check cold vs nvcc -fatbin -Xptxas -v" check_cold plain_fatbin
[[ "${LIB:-1}" != 0 ]] && printf '%-40s wall %7.3fs | cpu %7.3fs (target <= 0.3 s wall)\n' "rerun, no CUDA change (both products)" "$(med "${wall[rerun]}")" "$(med "${cpu[rerun]}")"
