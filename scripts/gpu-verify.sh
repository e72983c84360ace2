#!/usr/bin/env bash
# Proof on a real GPU (see docs/verification.md). Needs a CUDA GPU, its driver and nvcc.
#
#   scripts/gpu-verify.sh [RESULTS_DIR]
#
# 1. Builds the kernel corpus (tests/kernels) and scripts/gpu/tradeoff.cu for the local GPU, keeping
#    ptxas's -v report of exactly the code that is loaded.
# 2. scripts/gpu/occupancy_probe asks the driver (cuOccupancyMaxActiveBlocksPerMultiprocessor,
#    cuFuncGetAttribute) about every kernel over a grid of block sizes, dynamic shared memory, carveouts
#    and opt-in limits; scripts/gpu/compare.py sets the tool's answers (`parse --json`, `calc --batch`)
#    beside them. Any mismatch is listed and fails the script.
# 3. The trade-off: tradeoff.cu's SGEMM and bandwidth-bound kernels at several min blocks per SM,
#    timed, with the tool's occupancy and spills, and Nsight Compute's achieved occupancy if ncu exists.
# 4. The examples' binaries, run for real.
# 5. Where a spill sits: scripts/gpu/spill_placement.cu times the kernels of
#    tests/fixtures/gpu/spill_placement.cu (one hot loop; the spill in the loop, on a cold error
#    path, or absent) at natural and pinned occupancy, checks their results bit for bit, and joins
#    the times with the tool's spill bytes, its SASS reading and Nsight Compute's executed local
#    loads and stores.
# 6. Launch bounds ptxas did not apply as written: scripts/gpu-dropped-bounds.sh (also run alone)
#    records per arch the registers and spills ptxas reports and the tool's findings for
#    tests/kernels/unreachable_bounds.cu and register_caps.cu, and checks the tool's rows against
#    the driver's attributes on this GPU (RESULTS_DIR/dropped-bounds/).
#
# Environment: OCCUPANCY_BIN (a prebuilt cargo-occupancy; else built with cargo), NVCC (else nvcc on PATH),
# OCCUPANCY_GPU_ARCH (else read from nvidia-smi), OCCUPANCY_SKIP_NCU=1 to skip Nsight Compute,
# OCCUPANCY_GPU_STEPS (the steps to run, e.g. "5" or "3 5"; default all: 1 2 3 4 5 6; step 2 runs 1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
results="${1:-$root/target/gpu-verify}"
mkdir -p "$results"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
nvcc="${NVCC:-nvcc}"
steps=" ${OCCUPANCY_GPU_STEPS:-1 2 3 4 5 6} "
steps="${steps//,/ }"
for step in $steps; do
  [[ "$step" =~ ^[1-6]$ ]] || { echo "gpu-verify: OCCUPANCY_GPU_STEPS: unknown step '$step' (steps are 1 to 6)" >&2; exit 2; }
done
[[ "$steps" == *" 2 "* ]] && steps="$steps 1 "
wants() { [[ "$steps" == *" $1 "* ]]; }
command -v "$nvcc" >/dev/null || { echo "gpu-verify: nvcc not found (set NVCC or PATH)" >&2; exit 2; }

bin="${OCCUPANCY_BIN:-}"
if [[ -z "$bin" ]]; then
  (cd "$root" && cargo build -q --release -p cargo-occupancy)
  bin="$root/target/release/cargo-occupancy"
fi

arch="${OCCUPANCY_GPU_ARCH:-}"
if [[ -z "$arch" ]]; then
  compute_cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
  arch="sm_${compute_cap/./}"
fi
echo "== GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1), arch $arch"
"$nvcc" --version | tail -n 2

status=0
if wants 1; then
echo "== 1. build the corpus for $arch"
: > "$results/build.txt"
cubins=() ptx_files=() logs=()
ptxas="$(dirname "$(command -v "$nvcc")")/ptxas"
for source in $(find "$root/tests/kernels" -name '*.ptx' | sort); do
  stem=$(basename "${source%.ptx}")
  if "$ptxas" -arch="$arch" -v -o "$work/$stem.cubin" "$source" > "$work/$stem.log" 2>&1; then
    cp "$source" "$work/$stem.ptx"
    cubins+=("$work/$stem.cubin"); ptx_files+=("$work/$stem.ptx"); logs+=("$work/$stem.log")
    echo "built   $stem (ptxas)" >> "$results/build.txt"
  else
    echo "skipped $stem (ptxas does not assemble it for $arch; see its log)" >> "$results/build.txt"
    cp "$work/$stem.log" "$results/skipped-$stem.log" 2>/dev/null || true
  fi
done
sources=$(find "$root/tests/kernels" -name '*.cu' | sort; echo "$root/scripts/gpu/tradeoff.cu")
for source in $sources; do
  stem=$(basename "${source%.cu}")
  # A corpus file may name extra nvcc flags on a line `// nvcc-flags: ...` (e.g. -G).
  extra_flags=$(sed -n 's|^// nvcc-flags: *||p' "$source" | head -n 1)
  if "$nvcc" -cubin -arch="$arch" -Xptxas -v $extra_flags -o "$work/$stem.cubin" "$source" \
       > "$work/$stem.log" 2>&1 \
     && "$nvcc" -ptx -arch="$arch" $extra_flags -o "$work/$stem.ptx" "$source" >/dev/null 2>&1; then
    cubins+=("$work/$stem.cubin"); ptx_files+=("$work/$stem.ptx"); logs+=("$work/$stem.log")
    echo "built   $stem" >> "$results/build.txt"
  else
    echo "skipped $stem (does not build as a loadable cubin alone; see its log)" >> "$results/build.txt"
    cp "$work/$stem.log" "$results/skipped-$stem.log" 2>/dev/null || true
  fi
done
cat "$results/build.txt"
fi

if wants 2; then
echo "== 2. driver versus tool"
"$nvcc" -O2 -o "$work/occupancy_probe" "$root/scripts/gpu/occupancy_probe.cpp" -lcuda
"$work/occupancy_probe" "${cubins[@]}" > "$results/probe.jsonl"
cat "${logs[@]}" > "$results/ptxas.log"
"$bin" occupancy parse --json "$results/ptxas.log" > "$results/parsed.json"
python3 "$root/scripts/gpu/compare.py" --probe "$results/probe.jsonl" --parsed "$results/parsed.json" \
  --ptx "${ptx_files[@]}" --bin "$bin" --summary "$results/summary.json" --replay "$results/driver-replay.jsonl" || status=$?
fi

if wants 3; then
echo "== 3. the trade-off"
"$nvcc" -O3 -arch="$arch" -Xptxas -v -o "$work/tradeoff" "$root/scripts/gpu/tradeoff.cu" > "$results/tradeoff-ptxas.log" 2>&1
"$work/tradeoff" | tee "$results/tradeoff.jsonl"
if [[ "${OCCUPANCY_SKIP_NCU:-0}" != 1 ]] && command -v ncu >/dev/null; then
  ncu --csv --metrics sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,sm__maximum_warps_per_active_cycle_pct \
    "$work/tradeoff" --once > "$results/tradeoff-ncu.csv" 2> "$results/tradeoff-ncu.err" || echo "ncu failed: see tradeoff-ncu.err"
fi
"$bin" occupancy parse --json --arch "$arch" --block 256 "$results/tradeoff-ptxas.log" > "$results/tradeoff-parsed.json" || true
python3 "$root/scripts/gpu/tradeoff_table.py" "$results" | tee "$results/tradeoff.md"
fi

if wants 4; then
echo "== 4. the examples, run for real"
# Their binaries are built where cargo is (OCCUPANCY_EXAMPLE_BINS: a folder holding saxpy, tiled-gemm
# and persistent-grid),
# else here with cargo. OCCUPANCY_REQUIRE_GPU=1 makes "no GPU" a failure instead of a skip.
example_bins="${OCCUPANCY_EXAMPLE_BINS:-}"
if [[ -z "$example_bins" ]] && command -v cargo >/dev/null; then
  example_bins="$work/examples"; mkdir -p "$example_bins"
  for example in saxpy tiled-gemm persistent-grid; do
    (cd "$root/examples/$example" && CUDA_COMPUTE_CAP="${arch#sm_}" cargo build -q --release)
    cp "$root/examples/$example/target/release/$example" "$example_bins/"
  done
fi
for example in saxpy tiled-gemm persistent-grid; do
  if [[ -x "$example_bins/$example" ]]; then
    OCCUPANCY_REQUIRE_GPU=1 "$example_bins/$example" 2>&1 | tee "$results/example-$example.txt" || status=1
  else
    echo "example $example: no binary (set OCCUPANCY_EXAMPLE_BINS or install cargo)"; status=1
  fi
done
fi

if wants 5; then
echo "== 5. where the spill sits: in the hot loop, on a cold path, timed"
placement_source="$root/tests/fixtures/gpu/spill_placement.cu"
"$nvcc" -O3 -arch="$arch" -lineinfo -Xptxas -v -o "$work/spill_placement" "$root/scripts/gpu/spill_placement.cu" \
  > "$results/spill-placement-ptxas.log" 2>&1 || { cat "$results/spill-placement-ptxas.log"; exit 1; }
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  > "$results/spill-placement-clocks.csv" || true
"$work/spill_placement" | tee "$results/spill-placement.jsonl" || status=1
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader \
  >> "$results/spill-placement-clocks.csv" || true
if [[ "${OCCUPANCY_SKIP_NCU:-0}" != 1 ]] && command -v ncu >/dev/null; then
  ncu --csv --metrics smsp__inst_executed_op_local_ld.sum,smsp__inst_executed_op_local_st.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld_lookup_hit.sum \
    "$work/spill_placement" --once > "$results/spill-placement-ncu.csv" 2> "$results/spill-placement-ncu.err" \
    || echo "ncu failed: see spill-placement-ncu.err"
fi
"$bin" occupancy parse --json --arch "$arch" --block 256 "$results/spill-placement-ptxas.log" > "$results/spill-placement-parsed.json"
# Where the spills sit, as the tool reads the SASS of the same source with the same nvcc: its JSON
# rows carry `sass` facts. Exit code 1 is expected (the kernels spill on purpose); 2 is a failure.
check_status=0
OCCUPANCY_SASS=all "$bin" occupancy check --json --arch "$arch" "$placement_source" > "$results/spill-placement-check.json" \
  2> "$results/spill-placement-check.err" || check_status=$?
if [[ $check_status -gt 1 ]]; then
  echo "cargo occupancy check failed (exit $check_status):"; cat "$results/spill-placement-check.err"; status=1
fi
python3 "$root/scripts/gpu/spill_placement_table.py" "$results" | tee "$results/spill-placement.md" || status=1
fi

if wants 6; then
echo "== 6. launch bounds ptxas did not apply as written, against the driver"
OCCUPANCY_BIN="$bin" NVCC="$nvcc" OCCUPANCY_GPU_ARCH="$arch" \
  "$root/scripts/gpu-dropped-bounds.sh" "$results/dropped-bounds" || status=1
fi
echo "results in $results"
exit $status
