#!/usr/bin/env bash
# Launch bounds ptxas did not apply as written, recorded per arch and checked on a GPU
# (docs/verification.md, section 8). Needs nvcc; the last step needs a CUDA GPU and its driver.
#
#   scripts/gpu-dropped-bounds.sh [RESULTS_DIR]
#
# 1. Compiles tests/kernels/unreachable_bounds.cu (a minimum ptxas ignores, one shared memory keeps
#    out of reach, one it honours) and tests/kernels/register_caps.cu (a `__maxnreg__(8)` ptxas
#    raises to 24, one above 255 it ignores, one it applies, none) for sm_80, sm_86, sm_89, sm_90,
#    sm_100 and sm_120, each as `cargo occupancy check` compiles it (compute_80 PTX, -lineinfo),
#    keeping ptxas's -v report per arch (ptxas-sm_XX.log, parsed-sm_XX.json: registers, spills,
#    stack, the warnings each record carries).
# 2. `cargo occupancy check --json` of both sources on the six archs (check.json, check.txt): the
#    rows and the unreachable_bound / register_cap_ignored findings.
# 3. On the GPU: scripts/gpu/dropped_bounds_probe.cu, built the same way for the GPU's arch
#    (probe-ptxas.log, probe-parsed.json), reads cudaFuncGetAttributes (numRegs, localSizeBytes,
#    sharedSizeBytes) and cudaOccupancyMaxActiveBlocksPerMultiprocessor at the block of the tool's
#    row, and launches a full wave of each kernel (probe.jsonl).
# 4. scripts/gpu/dropped_bounds_table.py writes dropped-bounds.md and dropped-bounds.json: the tool's
#    rows against ptxas's report per arch, and against the driver on the GPU; any mismatch, or a
#    launch that fails, exits 1.
#
# Environment: OCCUPANCY_BIN (a prebuilt cargo-occupancy; else built with cargo), NVCC (else nvcc
# on PATH), OCCUPANCY_GPU_ARCH (else read from nvidia-smi), OCCUPANCY_SKIP_GPU=1 to stop before
# step 3 (on a machine without a GPU). Takes well under a minute on the H100 machine.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
results="${1:-$root/target/gpu-dropped-bounds}"
mkdir -p "$results"
results="$(cd "$results" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
nvcc="${NVCC:-nvcc}"
command -v "$nvcc" >/dev/null || { echo "gpu-dropped-bounds: nvcc not found (set NVCC or PATH)" >&2; exit 2; }
archs=(sm_80 sm_86 sm_89 sm_90 sm_100 sm_120)
sources=("$root/tests/kernels/unreachable_bounds.cu" "$root/tests/kernels/register_caps.cu")
start=$(date +%s)

bin="${OCCUPANCY_BIN:-}"
if [[ -z "$bin" ]]; then
  (cd "$root" && cargo build -q --release -p cargo-occupancy)
  bin="$root/target/release/cargo-occupancy"
fi
"$nvcc" --version | tail -n 2 | tee "$results/nvcc-version.txt"

echo "== 1. ptxas's report per arch (compute_80 PTX, -lineinfo, as check compiles)"
for arch in "${archs[@]}"; do
  (
    : > "$work/ptxas-$arch.log"
    for source in "${sources[@]}"; do
      "$nvcc" -cubin -gencode "arch=compute_80,code=$arch" -lineinfo -Xptxas -v \
        -o "$work/$(basename "${source%.cu}")-$arch.cubin" "$source" >> "$work/ptxas-$arch.log" 2>&1
    done
  ) &
done
wait
for arch in "${archs[@]}"; do
  cp "$work/ptxas-$arch.log" "$results/ptxas-$arch.log"
  "$bin" occupancy parse --json "$results/ptxas-$arch.log" > "$results/parsed-$arch.json"
done

echo "== 2. cargo occupancy check --json on ${archs[*]}"
arch_args=()
for arch in "${archs[@]}"; do arch_args+=(--arch "$arch"); done
# Exit 1 is expected (register_caps.cu's kernels spill: deny); 2 is a failure.
check_status=0
"$bin" occupancy check "${sources[@]}" "${arch_args[@]}" --json --cache-dir "$work/cache" \
  > "$results/check.json" || check_status=$?
[[ $check_status -le 1 ]] || { echo "gpu-dropped-bounds: check failed ($check_status)" >&2; exit 2; }
"$bin" occupancy check "${sources[@]}" "${arch_args[@]}" --cache-dir "$work/cache" \
  > "$results/check.txt" 2>&1 || true

table_args=("$results" "${archs[@]}")
if [[ "${OCCUPANCY_SKIP_GPU:-0}" != 1 ]]; then
  gpu_arch="${OCCUPANCY_GPU_ARCH:-}"
  if [[ -z "$gpu_arch" ]]; then
    compute_cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
    gpu_arch="sm_${compute_cap/./}"
  fi
  echo "== 3. on the GPU ($gpu_arch): the driver's attributes, occupancy and a launch"
  nvidia-smi --query-gpu=name,driver_version --format=csv > "$results/gpu.txt" || true
  "$nvcc" -O3 -gencode "arch=compute_80,code=$gpu_arch" -lineinfo -Xptxas -v \
    -o "$work/dropped_bounds_probe" "$root/scripts/gpu/dropped_bounds_probe.cu" \
    > "$results/probe-ptxas.log" 2>&1 || { cat "$results/probe-ptxas.log"; exit 1; }
  "$bin" occupancy parse --json "$results/probe-ptxas.log" > "$results/probe-parsed.json"
  # The block each row of the GPU's arch was evaluated at, as NAME=BLOCK.
  row_blocks=$(python3 -c 'import json,sys; print(" ".join("%s=%s" % (r["name"], r["block"]) for r in json.load(open(sys.argv[1]))["kernels"] if r["arch"] == sys.argv[2]))' \
    "$results/check.json" "$gpu_arch")
  # shellcheck disable=SC2086
  "$work/dropped_bounds_probe" $row_blocks | tee "$results/probe.jsonl"
  table_args+=(--gpu-arch "$gpu_arch")
fi

echo "== 4. the record"
status=0
python3 "$root/scripts/gpu/dropped_bounds_table.py" "${table_args[@]}" || status=$?
echo "== done in $(( $(date +%s) - start )) s: $results"
exit $status
