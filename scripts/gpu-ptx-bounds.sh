#!/usr/bin/env bash
# A PTX input's "auto" bound, as the GPU's driver compiles it (docs/verification.md, section 9):
# the PTX as written (no minimum) and the copy the build shipped with its choice written into the
# kernel's `.entry` (the directives on one line, as the copy keeps every line where it was), each
# loaded through the driver (which JIT-compiles it, as it does a crate's PTX at run time) and
# assembled offline by ptxas for comparison. Needs a CUDA GPU, its driver and nvcc.
#
#   scripts/gpu-ptx-bounds.sh OUT_DIR INPUT.ptx SHIPPED.ptx KERNEL BLOCK
#
# Writes OUT_DIR/jit.txt (driver: registers, local bytes, blocks per SM) and OUT_DIR/ptxas.txt.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$1" input="$2" shipped="$3" kernel="$4" block="$5"
mkdir -p "$out"
nvcc="${NVCC:-nvcc}"
arch="sm_$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d .)"
"$nvcc" -o "$out/jit" "$root/scripts/gpu/ptx_bounds/jit.cpp" -lcuda
"$out/jit" "$block" "$input" "$kernel" "$shipped" "$kernel" | tee "$out/jit.txt"
for ptx in "$input" "$shipped"; do
  echo "== $ptx ($arch)"
  "$nvcc" -cubin -arch="$arch" -Xptxas -v -o /dev/null "$ptx" 2>&1 | grep -A3 "entry function '$kernel'"
done | tee "$out/ptxas.txt"
rm -f "$out/jit"
