#!/usr/bin/env bash
# The build helper's compile time in a user's crate (issue #36 item 2): what every crate that
# calls occupancy-build from its build.rs pays once per clean build.
#
#   scripts/bench-build-helper.sh            # BASE=85dd2c2 (before occupancy-binary) RUNS=1
#
# A scratch crate, outside the workspace, whose one build-dependency is occupancy-build by path
# and whose build.rs calls it: `cargo build --offline` from clean (its own target directory), timed
# (wall, and user + sys of every process), then again after `cargo clean -p occupancy-build` (the
# helper alone, its dependencies built), for BASE's tree (`git archive`) and this one, one after
# the other, alternating when RUNS > 1; each side with its own Cargo.lock (the versions the
# workspace pins). The machine may be shared: load averages before and after are printed, and
# only the ratio of two runs side by side means anything.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE=${BASE:-85dd2c2}
RUNS=${RUNS:-1}
work=${WORK:-$root/target/bench-build-helper}
rm -rf "$work" && mkdir -p "$work/base"
git -C "$root" archive "$BASE" | tar -x -C "$work/base"

user_crate() { # $1: name, $2: the workspace whose occupancy-build it uses
  local dir="$work/$1"
  mkdir -p "$dir/src"
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "user-crate"
version = "0.1.0"
edition = "2021"

[build-dependencies]
occupancy-build = { path = "$2/occupancy-build" }

[workspace]
TOML
  echo 'fn main() { let _ = occupancy_build::Build::new(); }' > "$dir/build.rs"
  echo '' > "$dir/src/lib.rs"
  cp "$2/Cargo.lock" "$dir/Cargo.lock"
}
user_crate before "$work/base"
user_crate after "$root"

build() { # $1: side; prints "wall_s cpu_s" of one `cargo build`
  local dir="$work/$1" out
  out=$( { /usr/bin/time -f '%e %U %S' cargo build --offline -q --manifest-path "$dir/Cargo.toml" \
           --target-dir "$dir/target" 2>&1 >/dev/null; } 2>&1 | tail -1)
  read -r wall user sys <<<"$out"
  printf '%s %.2f' "$wall" "$(echo "$user + $sys" | bc)"
}

timed() { # $1: side; prints "side wall_s cpu_s alone_wall_s alone_cpu_s": from clean, then
  # occupancy-build alone (`cargo clean -p occupancy-build`, its dependencies kept)
  local dir="$work/$1" whole alone
  rm -rf "$dir/target"
  whole=$(build "$1")
  cargo clean --offline -q -p occupancy-build --manifest-path "$dir/Cargo.toml" --target-dir "$dir/target"
  alone=$(build "$1")
  echo "$1 $whole $alone"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "base $BASE, after $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo '+dirty')"
echo "side wall_s cpu_s alone_wall_s alone_cpu_s"
results=()
for _ in $(seq "$RUNS"); do
  results+=("$(timed before)") && echo "${results[-1]}"
  results+=("$(timed after)") && echo "${results[-1]}"
done
printf '%s\n' "${results[@]}" | awk '
  { wall[$1] += $2; cpu[$1] += $3; awall[$1] += $4; acpu[$1] += $5; n[$1]++ }
  END { printf "after/before, from clean: wall %.2f, cpu %.2f; occupancy-build alone: wall %.2f, cpu %.2f (%d runs each)\n",
        wall["after"] / wall["before"], cpu["after"] / cpu["before"],
        awall["after"] / awall["before"], acpu["after"] / acpu["before"], n["after"] }'
for side in before after; do
  echo "$side: $(cargo tree --offline -q --manifest-path "$work/$side/Cargo.toml" -e build,normal --prefix none | sort -u | wc -l) crates in the build helper's tree"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[[ "${KEEP:-0}" == 1 ]] || rm -rf "$work"
