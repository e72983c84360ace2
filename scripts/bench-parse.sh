#!/usr/bin/env bash
# Throughput of the ptxas log parser, release build.
#   scripts/bench-parse.sh            # parse_log over a 64 MiB log made by repeating real nvcc 13
#                                     # output (tests/fixtures/ptxas/nvcc13_multiarch.log): MB/s by
#                                     # wall clock and by CPU time, against 300 MB/s
#   scripts/bench-parse.sh --divan    # also the divan benches (log, streaming, cuobjdump, PTX scan)
#   scripts/bench-parse.sh --scale [MB...]
#                                     # the CLI end to end on generated logs (default 64 256 1024 MB):
#                                     # `parse` and `check` with wall time, MB/s and peak RSS
#                                     # (/usr/bin/time -v), each against `wc -l` and `cat` on the
#                                     # same file. Linear means flat MB/s and flat RSS across sizes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scale() {
  local sizes=("$@")
  [[ ${#sizes[@]} -gt 0 ]] || sizes=(64 256 1024)
  cargo build -q --release -p cargo-occupancy
  local bin=target/release/cargo-occupancy
  local dir="${TMPDIR:-/tmp}/occupancy-bench-parse.$$"
  mkdir -p "$dir"
  trap "rm -rf '$dir'" EXIT
  local fixture=occupancy-core/tests/fixtures/ptxas/nvcc13_multiarch.log
  # A 4 MiB block of whole copies of the real log, so that every size ends on a record boundary.
  local block="$dir/block.log"
  local copies=$(( (4 << 20) / $(wc -c < "$fixture") ))
  for _ in $(seq "$copies"); do cat "$fixture"; done > "$block"
  local block_bytes; block_bytes=$(wc -c < "$block")
  # Seconds and peak RSS (KiB) of a command, by /usr/bin/time -v.
  measure() {
    /usr/bin/time -v "$@" > /dev/null 2> "$dir/time" || true
    local wall cpu rss
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$dir/time")
    cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { print s }' "$dir/time")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$dir/time")
    echo "$wall $cpu $rss"
  }
  # CPU seconds (user + system) are the figure on a shared machine; ratios are by CPU time.
  printf '%-8s %-6s %8s %8s %9s %10s %8s %8s\n' size command wall-s cpu-s "MB/s cpu" "peak RSS" "x wc -l" "x cat"
  for mb in "${sizes[@]}"; do
    local log="$dir/log-${mb}.log"
    local blocks=$(( (mb << 20) / block_bytes ))
    for _ in $(seq "$blocks"); do cat "$block"; done > "$log"
    local bytes; bytes=$(wc -c < "$log")
    read -r _ wc_s _ <<< "$(measure wc -l "$log")"
    read -r _ cat_s _ <<< "$(measure cat "$log")"
    local commands=(parse check)
    for command in "${commands[@]}"; do
      local args=(occupancy "$command" "$log")
      [[ $command == check ]] && args+=(--arch sm_90 --cache-dir "$dir/cache")
      read -r seconds cpu rss <<< "$(measure "$bin" "${args[@]}")"
      awk -v mb="$mb" -v c="$command" -v s="$seconds" -v u="$cpu" -v b="$bytes" -v r="$rss" -v w="$wc_s" -v k="$cat_s" 'BEGIN {
        printf "%-8s %-6s %8.2f %8.2f %9.0f %7.0f MB %8.1f %8.1f\n", mb " MB", c, s, u, b / 1e6 / (u > 0 ? u : 0.01), r / 1024, u / (w > 0 ? w : 0.01), u / (k > 0 ? k : 0.01)
      }'
    done
    rm -f "$log"
  done
}

case "${1:-}" in
  --scale) shift; scale "$@" ;;
  *)
    cargo bench -q -p occupancy-core --bench ptxas_throughput
    if [[ "${1:-}" == "--divan" ]]; then
      cargo bench -q -p occupancy-core --bench ptxas_parse
    fi
    ;;
esac
