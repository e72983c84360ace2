#!/usr/bin/env bash
# What `min_blocks_per_sm = "auto"` costs a build (issue #34): a crate of 25 "auto" kernels (the
# kinds of scripts/gpu/autobounds/public.cuh: layer norms, softmaxes, reductions, attention-like
# loops, GEMM tiles, elementwise ops, optimisers, scans), each a `<kernel>_auto` that takes
# OCCUPANCY_BOUNDS_<kernel>_auto and is declared `min_blocks_per_sm = "auto"` with its block.
#
#   scripts/bench-auto-bounds.sh        # ARCHS=sm_90 RUNS=1 KERNELS=25 WORK=target/bench-auto-bounds
#
# Prints, for the build script from an empty OUT_DIR (the crate's Rust dependencies built
# before): its wall time and the nvcc processes it ran, by kind (compiles of the source: the one
# the build ships and those of the candidates' front end, one per bound tried; candidate
# assemblies, one per arch and bound); then the same after a Rust-only edit (an unchanged
# rebuild: no nvcc at all is the promise); then the same crate with `block` alone (no "auto"),
# the compile the tuning is added to. Needs nvcc, ptxas and nvdisasm (scripts/setup-cuda.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ARCHS=${ARCHS:-sm_90}
RUNS=${RUNS:-1}
work=${WORK:-$root/target/bench-auto-bounds}
real_nvcc=${NVCC:-$(command -v nvcc)}
mkdir -p "$work"
crate="$work/crate"
rm -rf "$crate" && mkdir -p "$crate/src" "$crate/kernels"
here="$root/scripts/gpu/autobounds"
kernels=$(sed -n 's/^ *list.push_back({"\([a-z0-9_]*\)", \([0-9]*\),.*/\1 \2/p' "$here/public_problems.inc" |
  head -n "${KERNELS:-25}")
archs_toml=$(echo "$ARCHS" | sed 's/\([^,]*\)/"\1"/g; s/,/, /g')
cat > "$crate/Cargo.toml" <<TOML
[package]
name = "bench-auto-bounds"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
occupancy = { path = "$root/occupancy" }

[build-dependencies]
occupancy-build = { path = "$root/occupancy-build" }

[package.metadata.occupancy]
archs = [$archs_toml]

[workspace]
TOML
echo 'fn main() { occupancy_build::Build::new().file("kernels/auto.cu").compile_ptx(); }' > "$crate/build.rs"
write_sources() { # $1: the declaration's bound ("auto" or nothing)
  {
    echo '#include "occupancy_bounds.h"'
    echo '#define KERNEL_256(N)'; echo '#define KERNEL_128(N)'; echo '#define KERNEL_64(N)'
    echo "#include \"$here/kernels.cuh\""; echo "#include \"$here/public.cuh\""
    while read -r name block; do
      echo "extern \"C\" __global__ void OCCUPANCY_BOUNDS_${name}_auto ${name}_auto(Args a) { ${name}_body(a); }"
    done <<< "$kernels"
  } > "$crate/kernels/auto.cu"
  {
    echo '//! Kernels whose bounds the build chooses (scripts/bench-auto-bounds.sh).'
    echo '#[occupancy::kernel]'; echo 'extern "C" {'
    while read -r name block; do
      echo "    #[occupancy::kernel(block = $block$1)]"
      echo "    pub fn ${name}_auto(args: *const u8);"
    done <<< "$kernels"
    echo '}'
  } > "$crate/src/lib.rs"
}
log="$work/nvcc.log"
build() { # the crate's build, nvcc logged
  : > "$log"
  local start=$(date +%s.%N)
  (cd "$crate" && NVCC="$root/tests/fixtures/nvcc-logger.sh" OCCUPANCY_TEST_REAL_NVCC="$real_nvcc" \
     OCCUPANCY_TEST_NVCC_LOG="$log" CARGO_TARGET_DIR="$work/target" cargo build -q 2>&1 | tail -n 5)
  local end=$(date +%s.%N)
  local compiles front assemblies
  compiles=$(grep -c 'auto.cu$' "$log" || true)
  front=$(grep 'auto.cu$' "$log" | grep -c '/occupancy/front-end/' || true)
  assemblies=$(grep -c '/occupancy/auto-work/' "$log" || true)
  printf '  %-44s %6.1f s  nvcc: %3d compiles of the source (%d for candidates), %3d candidate assemblies, %3d in all\n' \
    "$1" "$(echo "$end - $start" | bc)" "$compiles" "$front" "$assemblies" "$(wc -l < "$log")"
}
fresh() { rm -rf "$work"/target/debug/build/bench-auto-bounds-*/out; touch "$crate/kernels/auto.cu"; }
echo "== $(echo "$kernels" | wc -l) kernels, archs $ARCHS, $(nproc) cores, nvcc $("$real_nvcc" --version | tail -n 1)"
write_sources ', min_blocks_per_sm = "auto"'
(cd "$crate" && CARGO_TARGET_DIR="$work/target" OCCUPANCY_SKIP=1 cargo build -q 2>&1 | tail -n 3) # Rust dependencies
for run in $(seq "$RUNS"); do
  fresh; build "\"auto\", empty OUT_DIR (run $run)"
  touch "$crate/src/lib.rs"; build "\"auto\", Rust-only edit (unchanged kernels)"
done
write_sources ''
for run in $(seq "$RUNS"); do
  fresh; build "block alone, empty OUT_DIR (run $run)"
done
