#!/usr/bin/env bash
# Throughput of the ptxas log parser, release build, over a 64 MiB log made by repeating real
# nvcc 13 output (occupancy-core/tests/fixtures/ptxas/nvcc13_multiarch.log).
# Prints MB/s by wall clock and by CPU time (the machine may be shared), against 300 MB/s.
#   scripts/bench-parse.sh          # the figure
#   scripts/bench-parse.sh --divan  # also the divan benches (log, streaming, cuobjdump)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cargo bench -q -p occupancy-core --bench ptxas_throughput
if [[ "${1:-}" == "--divan" ]]; then
  cargo bench -q -p occupancy-core --bench ptxas_parse
fi
