#!/usr/bin/env bash
# Builds the bench_corpus example as cargo builds a crate's build script and its dependencies in
# the dev profile: opt-level 0 throughout (this workspace's own profile optimizes occupancy-core
# and the dependencies for its tests, which would flatter the build script's own time), in a
# target directory of its own. Prints the binary's path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="$root/target/bench-build-script"
CARGO_TARGET_DIR="$target" cargo build -q --manifest-path "$root/Cargo.toml" -p occupancy-build \
  --example bench_corpus \
  --config 'profile.dev.package."*".opt-level=0' \
  --config 'profile.dev.package.occupancy-core.opt-level=0' >&2
echo "$target/debug/examples/bench_corpus"
