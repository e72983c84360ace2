#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the CUDA compiler wheels (cached in .cache/),
# then runs every test of the workspace with the real nvcc/ptxas and NVIDIA's cuda_occupancy.h.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
scripts/setup-cuda.sh
scripts/setup-test-deps.sh
source <(scripts/setup-cuda.sh --env)
# Every package of Cargo.lock, for every platform: tests/tests/ci_recipe.rs runs `cargo metadata`
# offline on a fixture, which resolves target-specific packages (r-efi) no build here downloads.
cargo fetch --locked
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
cargo test --workspace --locked "$@" 2>&1 | tee "$log" || status=$?
# The binary readers' fuzz corpus (issue #35), longer than the suite's 256 cases and bounded in
# time: OCCUPANCY_FUZZ_CASES cases of each property (20,000: about 80 s on 2 cores), killed at
# OCCUPANCY_FUZZ_SECONDS (a timeout fails the run, as a hang in a reader would).
# The readers are the binary front end's (occupancy-binary) and the cubin reader the build shares.
PROPTEST_CASES="${OCCUPANCY_FUZZ_CASES:-20000}" timeout "${OCCUPANCY_FUZZ_SECONDS:-900}" sh -c '
  cargo test --locked -p occupancy-binary --lib -- fuzz:: fatbin:: archive:: &&
  cargo test --locked -p occupancy-build --lib -- cubin::nv_info' 2>&1 | tee -a "$log" || status=$?
# cargo's last line is the last crate's doc-test count (often 0): close with the whole run's totals.
awk '/^test result:/ { passed += $4; failed += $6; ignored += $8 }
     END { printf "summary: %d passed, %d failed, %d skipped\n", passed, failed, ignored }' "$log"
exit "$status"
