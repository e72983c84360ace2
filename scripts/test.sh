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
# Their test binaries are the ones the suite just built (`--workspace`: the same features, so
# nothing is compiled again; `cargo test -p` would resolve other features and build both crates
# and their dependencies anew, two minutes), run from their package directories as cargo does.
lib_tests="$(cargo test --locked --workspace --lib --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("occupancy_binary", "occupancy_build"):
        print(m["target"]["name"], m["executable"])')" || true
binary_tests="$(awk '$1 == "occupancy_binary" { print $2 }' <<<"$lib_tests")"
build_tests="$(awk '$1 == "occupancy_build" { print $2 }' <<<"$lib_tests")"
if [ -z "$binary_tests" ] || [ -z "$build_tests" ]; then
  echo "error: the lib test binaries of occupancy-binary and occupancy-build were not found" | tee -a "$log"
  status=1
else
  export binary_tests build_tests
  PROPTEST_CASES="${OCCUPANCY_FUZZ_CASES:-20000}" timeout "${OCCUPANCY_FUZZ_SECONDS:-900}" sh -c '
    (cd occupancy-binary && "$binary_tests" fuzz:: fatbin:: archive::) &&
    (cd occupancy-build && "$build_tests" cubin::nv_info)' 2>&1 | tee -a "$log" || status=$?
fi
# cargo's last line is the last crate's doc-test count (often 0): close with the whole run's totals.
awk '/^test result:/ { passed += $4; failed += $6; ignored += $8 }
     END { printf "summary: %d passed, %d failed, %d skipped\n", passed, failed, ignored }' "$log"
exit "$status"
