#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the CUDA compiler wheels (cached in .cache/),
# then runs every test of the workspace with the real nvcc/ptxas and NVIDIA's cuda_occupancy.h.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup-cuda.sh
scripts/setup-test-deps.sh
source <(scripts/setup-cuda.sh --env)
cargo test --workspace --locked "$@"
