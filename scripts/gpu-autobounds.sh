#!/usr/bin/env bash
# The auto-bounds proof on a real GPU (issue #27; docs/verification.md, "Bounds chosen by the
# build"). Needs a CUDA GPU, its driver and nvcc; no Rust toolchain.
#
#   scripts/gpu-autobounds.sh [OUT_DIR]        (default: target/gpu-autobounds)
#
# Builds scripts/gpu/autobounds/autobounds.cu for the local GPU (15 kernels of different kinds,
# each without launch bounds, with __launch_bounds__(BLOCK) and with __launch_bounds__(BLOCK, B)
# for every B its SM allows), runs it (every variant timed with CUDA events: 3 warm-up launches,
# the median of 30), and writes into OUT_DIR:
#   raw.csv        one line per kernel and variant (written as it is measured)
#   ptxas.log      ptxas's -v report of the binary that ran
#   run.log        the program's progress
#   env.txt        the GPU, driver and nvcc
# About 2 minutes on an H100 (the compile about 1, the timings under 1); the run stops after
# OCCUPANCY_AUTOBOUNDS_TIMEOUT seconds (default 420), keeping what it measured.
#
# Then, on any machine with this repository (no GPU needed), the table of docs/verification.md:
#   python3 scripts/gpu/autobounds/combine.py OUT_DIR/raw.csv --arch sm_90 [--bin path/to/cargo-occupancy]
# which runs `cargo occupancy tune --format json` on the same kernels and sets its choices beside
# the measured times.
#
# Environment: NVCC (else nvcc on PATH), OCCUPANCY_GPU_ARCH (else read from nvidia-smi),
# OCCUPANCY_AUTOBOUNDS_REPS (default 30), OCCUPANCY_AUTOBOUNDS_ONLY (one kernel),
# OCCUPANCY_AUTOBOUNDS_STEPS (default build,run; `build` alone compiles, so several sets can
# compile at once, then `run` times each on its own), OCCUPANCY_AUTOBOUNDS_SET=heldout (the 8 kernels of scripts/gpu/autobounds/heldout.cuh, written
# after the objective's latency model, instead of the 15; then pass `--set heldout` to
# combine.py), OCCUPANCY_AUTOBOUNDS_SET=public (the 25 kernels of public.cuh, of the kinds public
# training code carries, issue #34; `--set public`), OCCUPANCY_AUTOBOUNDS_SET=heldout2 (10 more,
# written after issue #34's objective was fixed; `--set heldout2`), heldout3 (10 more, written
# after its final objective, 9d456dd; `--set heldout3`), heldout4 (18 more, written after
# branch auto-bounds-5's objective, 37c2d64; `--set heldout4`), heldout5 (12 more, written after
# branch auto-bounds-6 froze that objective, 2534e6f; `--set heldout5`).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/target/gpu-autobounds}"
mkdir -p "$out"
nvcc="${NVCC:-nvcc}"
command -v "$nvcc" >/dev/null || { echo "gpu-autobounds: nvcc not found (set NVCC or PATH)" >&2; exit 2; }
command -v nvidia-smi >/dev/null || { echo "gpu-autobounds: nvidia-smi not found: this needs a GPU" >&2; exit 2; }

arch="${OCCUPANCY_GPU_ARCH:-}"
if [[ -z "$arch" ]]; then
  compute_cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
  arch="sm_${compute_cap/./}"
fi
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | head -n 1)"
  echo "arch: $arch"
  "$nvcc" --version | tail -n 2
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)"
} > "$out/env.txt"
cat "$out/env.txt"

steps="${OCCUPANCY_AUTOBOUNDS_STEPS:-build,run}"
defines=()
case "${OCCUPANCY_AUTOBOUNDS_SET:-corpus}" in
  corpus) ;;
  heldout) defines+=(-DAUTOBOUNDS_HELDOUT) ;;
  public) defines+=(-DAUTOBOUNDS_PUBLIC) ;;
  heldout2) defines+=(-DAUTOBOUNDS_HELDOUT2) ;;
  heldout3) defines+=(-DAUTOBOUNDS_HELDOUT3) ;;
  heldout4) defines+=(-DAUTOBOUNDS_HELDOUT4) ;;
  heldout5) defines+=(-DAUTOBOUNDS_HELDOUT5) ;;
  *) echo "gpu-autobounds: OCCUPANCY_AUTOBOUNDS_SET is corpus, heldout, public, heldout2, heldout3, heldout4 or heldout5" >&2; exit 2 ;;
esac
echo "set: ${OCCUPANCY_AUTOBOUNDS_SET:-corpus}" >> "$out/env.txt"
if [[ ",$steps," == *",build,"* ]]; then
echo "== 1. build autobounds.cu for $arch ($(date +%T))"
start=$SECONDS
"$nvcc" -O3 -arch="$arch" -lineinfo -Xptxas -v ${defines[@]+"${defines[@]}"} -o "$out/autobounds" \
  "$root/scripts/gpu/autobounds/autobounds.cu" > "$out/ptxas.log" 2>&1 || {
  tail -n 30 "$out/ptxas.log" >&2
  echo "gpu-autobounds: the build failed (the whole log: $out/ptxas.log)" >&2
  exit 1
}
echo "   built in $((SECONDS - start)) s; $(grep -c 'Compiling entry' "$out/ptxas.log") entries assembled"
fi
[[ ",$steps," == *",run,"* ]] || exit 0
[[ -x "$out/autobounds" ]] || { echo "gpu-autobounds: $out/autobounds is not built (the build step)" >&2; exit 2; }

echo "== 2. time every variant ($(date +%T))"
args=(--out "$out/raw.csv" --reps "${OCCUPANCY_AUTOBOUNDS_REPS:-30}")
[[ -n "${OCCUPANCY_AUTOBOUNDS_ONLY:-}" ]] && args+=(--only "$OCCUPANCY_AUTOBOUNDS_ONLY")
start=$SECONDS
status=0
timeout "${OCCUPANCY_AUTOBOUNDS_TIMEOUT:-420}" "$out/autobounds" "${args[@]}" 2>&1 | tee "$out/run.log" || status=$?
echo "   ran in $((SECONDS - start)) s (exit $status); $(($(wc -l < "$out/raw.csv") - 1)) variants in $out/raw.csv"
if grep -q MISMATCH "$out/raw.csv"; then
  echo "gpu-autobounds: some variants' outputs differ from their kernel's unbounded one:" >&2
  grep MISMATCH "$out/raw.csv" >&2
  status=1
fi
echo "== next, on any machine with this repository: python3 scripts/gpu/autobounds/combine.py $out/raw.csv --arch $arch"
exit "$status"
