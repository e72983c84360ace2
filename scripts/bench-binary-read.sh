#!/usr/bin/env bash
# Reading facts from compiled binaries (issue 25 item 5), on the generated kernel crate
# (scripts/gen-kernel-crate.py --scale full: 11 .cu files, 935 kernels):
#
#   scripts/bench-binary-read.sh        # RUNS=3 JOBS=$(nproc) SCALE=full LIB_MB=500
#   MEMORY=0 scripts/bench-binary-read.sh   # the speed part only
#
# Speed: `cargo occupancy check <the 11 fatbins> --arch sm_80 --arch sm_90 --json` against the
#   compile that made them, plain nvcc with the flags the crate's build compiles with
#   (`nvcc -fatbin -gencode arch=compute_80,code=[sm_80,sm_90] -lineinfo -O3`, JOBS files at a
#   time). Per run and median, CPU (user + sys of every process, the tools check runs included)
#   and wall; the target is read / compile <= 0.05 in CPU. Wall is printed too, but the compile
#   runs JOBS files at once and check reads one binary after another.
# Memory: a static library of about LIB_MB MB (copies of the crate's objects, `nvcc -c` with the
#   same flags, under distinct member names) and one of a single copy: max RSS of `check` on each
#   (`/usr/bin/time -f %M`: the largest of check and the cuobjdump it runs), check's own peak
#   (VmHWM, read from /proc while it runs), and, through a wrapper named by OCCUPANCY_CUOBJDUMP,
#   cuobjdump's own max RSS and the scratch directory's size after each extraction (the disk
#   check uses). Bounded: the same for both sizes.
# Load averages before and after are printed: the machine may be shared. CHECK_BIN names a
# prebuilt cargo-occupancy; otherwise it is built here as `cargo install` does (release).
# The libraries are removed at the end unless KEEP=1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/bench-common.sh
find_nvcc
CUOBJDUMP=${OCCUPANCY_CUOBJDUMP:-$(dirname "$NVCC")/cuobjdump}
JOBS=${JOBS:-$(nproc)}
RUNS=${RUNS:-3}
SCALE=${SCALE:-full}
LIB_MB=${LIB_MB:-500}
work=${WORK:-$root/target/bench-binary-read}
# The form `check` compiles sources in; -lineinfo as the crate's build (occupancy-build) adds it.
nvcc_flags=(-gencode "arch=compute_80,code=[sm_80,sm_90]" -lineinfo -O3)
archs=(--arch sm_80 --arch sm_90)
rm -rf "$work" && mkdir -p "$work"
python3 scripts/gen-kernel-crate.py "$work/crate" --scale "$SCALE" --repo "$root"
if [[ -z "${CHECK_BIN:-}" ]]; then
  cargo build -q --release -p cargo-occupancy
  CHECK_BIN=$root/target/release/cargo-occupancy
fi
files=("$work"/crate/kernels/*.cu)
echo "crate: ${#files[@]} files ($SCALE); $JOBS jobs; $RUNS runs; $("$NVCC" --version | tail -2 | head -1); $(nproc) cores"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

compile() { # form (-fatbin or -c), output directory, extension
  local out="$work/$2" && rm -rf "$out" && mkdir -p "$out"
  printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c \
    'nvcc=$0 form=$1 out=$2 extension=$3 && shift 3 &&
     "$nvcc" "$form" "$@" -o "$out/$(basename {} .cu).$extension" {}' "$NVCC" "$1" "$out" "$3" "${nvcc_flags[@]}"
}
compile_fatbins() { compile -fatbin fatbin fatbin; }
read_fatbins() {
  "$CHECK_BIN" occupancy check "$work"/fatbin/*.fatbin "${archs[@]}" --json >"$work/fatbins.json" || [[ $? == 1 ]]
}
rows() { python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["kernels"]))' "$1"; }

ratio_runs=""
for run in $(seq "$RUNS"); do
  echo "run $run"
  made=$(measure compile_fatbins); record compile_fatbins "$made"
  read=$(measure read_fatbins); record read_fatbins "$read"
  ratio_runs+="$(printf %.4f "$(ratio "${read#* }" "${made#* }")") "
  echo "  this run: read / compile cpu $(printf %.4f "$(ratio "${read#* }" "${made#* }")"), wall $(printf %.4f "$(ratio "${read% *}" "${made% *}")")"
done
echo "fatbins: $(du -cb "$work"/fatbin/*.fatbin | tail -1 | cut -f1) bytes; $(rows "$work/fatbins.json") rows (kernel x arch)"
echo "medians (ratio = read / compile)"
report "check <fatbins> vs nvcc -fatbin" read_fatbins compile_fatbins
printf '%-44s %.4f (runs: %s) (target <= 0.05)\n' "read/compile cpu ratio, median of the runs'" "$(med "$ratio_runs")" "$ratio_runs"

if [[ "${MEMORY:-1}" != 0 ]]; then
  echo "memory: objects ($(printf '%q ' "${nvcc_flags[@]}")-c)"
  record compile_objects "$(measure compile -c obj o)"
  objects=("$work"/obj/*.o)
  copy_bytes=$(du -cb "${objects[@]}" | tail -1 | cut -f1)
  copies=$(( (LIB_MB * 1000000 + copy_bytes - 1) / copy_bytes ))
  cat >"$work/cuobjdump-wrap.sh" <<'EOF'
#!/bin/sh
# cuobjdump's own max RSS, then the size of the directory it extracted into (check's scratch).
/usr/bin/time -a -o "$WRAP_LOG" -f "rss_kb %M" "$REAL_CUOBJDUMP" "$@"
status=$?
echo "scratch_kb $(du -sk . | cut -f1)" >>"$WRAP_LOG"
exit $status
EOF
  chmod +x "$work/cuobjdump-wrap.sh"
  check_library() { # copies: check on lib<copies>.a, through the wrapper; its JSON, stderr, max RSS
    # kept, and check's own peak RSS (VmHWM, read from /proc until it exits)
    WRAP_LOG=$work/wrap$1.log REAL_CUOBJDUMP=$CUOBJDUMP OCCUPANCY_CUOBJDUMP=$work/cuobjdump-wrap.sh \
      /usr/bin/time -o "$work/rss$1" -f %M "$CHECK_BIN" occupancy check "$work/lib$1.a" "${archs[@]}" --json \
      >"$work/lib$1.json" 2>"$work/lib$1.stderr" &
    local timer=$! check="" peak=0 now
    while kill -0 "$timer" 2>/dev/null; do
      [[ -n "$check" ]] || check=$(pgrep -P "$timer" | head -1 || true)
      now=$(awk '/^VmHWM/ {print $2}' "/proc/$check/status" 2>/dev/null || true)
      [[ -n "$check" && -n "$now" ]] && peak=$now
      sleep 0.02
    done
    wait "$timer" || true
    echo "$peak" >"$work/own$1"
  }
  for n in 1 "$copies"; do
    lib="$work/lib$n.a" members="$work/members$n"
    mkdir -p "$members"
    for i in $(seq -w 1 "$n"); do
      for object in "${objects[@]}"; do ln "$object" "$members/c${i}_$(basename "$object")"; done
    done
    ar rcs "$lib" "$members"/*.o && rm -rf "$members"
    log="$work/wrap$n.log" && rm -f "$log"
    times=$(measure check_library "$n")
    if [[ ! -s "$work/lib$n.json" ]]; then cat "$work/lib$n.stderr" >&2; exit 2; fi
    max() { awk -v key="$1" '$1 == key && $2 > m {m = $2} END {print m + 0}' "$log"; }
    printf '%-44s %4d MB, %6d rows: max RSS %4d MB (check itself %4d MB, cuobjdump %4d MB, %d runs), scratch %4d MB, wall %.2f s, cpu %.2f s\n' \
      "static library, $n copies of the objects" "$(( $(stat -c %s "$lib") / 1000000 ))" "$(rows "$work/lib$n.json")" \
      "$(( $(tail -1 "$work/rss$n") / 1024 ))" "$(( $(cat "$work/own$n") / 1024 ))" "$(( $(max rss_kb) / 1024 ))" "$(grep -c rss_kb "$log")" \
      "$(( $(max scratch_kb) / 1024 ))" "${times% *}" "${times#* }"
  done
  [[ "${KEEP:-0}" == 1 ]] || rm -f "$work"/lib*.a
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
