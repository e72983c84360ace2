#!/usr/bin/env bash
# Thread-block clusters on a real GPU (docs/verification.md, section 7). Needs a GPU of compute
# capability 9.0 or newer, its driver and nvcc.
#
#   scripts/gpu-cluster-occupancy.sh [RESULTS_DIR]
#
# Builds scripts/gpu/cluster_probe.cu for the local GPU (keeping ptxas's -v report of the kernels
# it queries) and runs it once: the device's facts, cudaOccupancyMaxActiveClusters over kernels of
# 10 to 247 registers x block sizes x dynamic shared memory x cluster sizes 1..16 (with and without
# the non-portable opt-in, and other shapes of the same sizes), and which SMs share a GPC (blocks of
# one cluster always run in one GPC: joining every cluster's SMs gives the groups). Writes:
#   cluster-probe.csv.gz   what the probe printed but its placement lines (sections: the .cu's header)
#   cluster-placement.csv.gz  the placement lines: where each block of the GPC-discovery launches ran
#   cluster-ptxas.log      ptxas -v of the probe's kernels (registers, barriers, shared memory)
#   cluster-device.txt     nvidia-smi's name, driver, and the probe's device and gpc lines
# tests/fixtures/gpu/clusters/ keeps the recorded runs; cargo-occupancy/tests/cluster_replay.rs
# replays them without a GPU.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
results="${1:-$here/../target/gpu-cluster}"
mkdir -p "$results"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
nvcc="${NVCC:-nvcc}"
compute_cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
arch="sm_${compute_cap/./}"
echo "== GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1), arch $arch"
"$nvcc" --version | tail -n 2
"$nvcc" -O2 -arch="$arch" -Xptxas -v -o "$work/cluster_probe" "$here/gpu/cluster_probe.cu" \
  > "$results/cluster-ptxas.log" 2>&1 || { cat "$results/cluster-ptxas.log"; exit 1; }
start=$(date +%s.%N)
"$work/cluster_probe" > "$work/cluster-probe.csv"
end=$(date +%s.%N)
grep -v '^placement,' "$work/cluster-probe.csv" | gzip -9 -n > "$results/cluster-probe.csv.gz"
grep '^placement,' "$work/cluster-probe.csv" | gzip -9 -n > "$results/cluster-placement.csv.gz"
{
  nvidia-smi --query-gpu=name,driver_version,pci.device_id,vbios_version --format=csv
  "$nvcc" --version | tail -n 2
  grep -E '^(device|kernel|gpc|coresident),' "$work/cluster-probe.csv"
} > "$results/cluster-device.txt"
cat "$results/cluster-device.txt"
echo "== probe ran $(awk -v a="$start" -v b="$end" 'BEGIN{printf "%.1f", b-a}') s"
for section in blocks clusters placement coresident; do
  echo "$section lines: $(grep -c "^$section," "$work/cluster-probe.csv")"
done
echo "cluster queries by status: $(grep '^clusters,' "$work/cluster-probe.csv" | awk -F, '{print $9}' | sort | uniq -c | tr '\n' ' ')"
