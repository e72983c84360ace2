#!/usr/bin/env bash
# Exactness of the binary front end (issue 25): `cargo occupancy check` on compiled code gives,
# kernel x arch, the rows ptxas's -v report gives, for the generated kernel crate
# (scripts/gen-kernel-crate.py) and the kernel corpus of tests/cli_check_binary.rs.
#
#   scripts/diff-binary-rows.sh            # SCALE=full JOBS=$(nproc) SETS="crate corpus"
#
# For each set of sources, compared row by row by scripts/diff-binary-rows.py (entry rows;
# registers, barriers, static shared memory, stack frame, spill stores and loads, launch bounds,
# block, blocks per SM, occupancy, limiters):
#   `check <sources> --arch sm_80 --arch sm_90` (nvcc 13 with ptxas's -v report) against
#   `check` on the fatbins and on one static library of the objects that plain nvcc makes of
#   them (`-gencode arch=compute_80,code=[sm_80,sm_90] -lineinfo -O3`, no -Xptxas -v);
#   with OCCUPANCY_PTXAS_LEGACY (ptxas 12.9, scripts/setup-cuda.sh): the sources' PTX
#   (`nvcc -ptx -arch=compute_80`, `.version` lowered to 8.8, the newest 12.9 reads) assembled
#   by that ptxas for sm_80: `check` on its -v log against `check` on the cubins it wrote. A
#   12.9 cubin does not name its compiler (no .note.nv.tkinfo), so a kernel with a stack frame
#   and no spill marks is read as an upper bound; the script counts those rows (--unmarked). A
#   log carries no launch bounds: those columns are compared where they can be (--log-reference).
# CHECK_BIN names a prebuilt cargo-occupancy; otherwise it is built here as `cargo install`
# does (release). Exit status 1 when any comparison differs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [[ -z "${NVCC:-}" ]] && ! command -v nvcc >/dev/null; then source <(scripts/setup-cuda.sh --env); fi
NVCC=${NVCC:-$(command -v nvcc)}
JOBS=${JOBS:-$(nproc)}
SCALE=${SCALE:-full}
SETS=${SETS:-crate corpus}
work=${WORK:-$root/target/diff-binary-rows}
nvcc_flags=(-gencode "arch=compute_80,code=[sm_80,sm_90]" -lineinfo -O3)
corpus=(constants spills shared_memory device_frames calls sass_evidence)
rm -rf "$work" && mkdir -p "$work"
if [[ -z "${CHECK_BIN:-}" ]]; then
  cargo build -q --release -p cargo-occupancy
  CHECK_BIN=$root/target/release/cargo-occupancy
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $("$NVCC" --version | tail -2 | head -1)"

check() { # output json, then check's arguments
  local out=$1 && shift
  "$CHECK_BIN" occupancy check --json "$@" >"$out" 2>"${out%.json}.stderr" || [[ $? == 1 ]] ||
    { cat "${out%.json}.stderr" >&2; return 2; }
}
each() { # command template ({} the source, {stem} its stem) run JOBS at a time over the set's files
  printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c "stem=\$(basename {} .cu); $1"
}
failed=0
diff_rows() { python3 scripts/diff-binary-rows.py "$@" || failed=1; }

for set in $SETS; do
  dir="$work/$set" && mkdir -p "$dir"
  case $set in
    crate)
      python3 scripts/gen-kernel-crate.py "$dir/crate" --scale "$SCALE" --repo "$root"
      files=("$dir"/crate/kernels/*.cu) ;;
    corpus) files=() && for stem in "${corpus[@]}"; do files+=("$root/tests/kernels/$stem.cu"); done ;;
    *) echo "unknown set $set (crate, corpus)" >&2; exit 2 ;;
  esac
  flags=$(printf '%q ' "${nvcc_flags[@]}")
  check "$dir/sources.json" "${files[@]}" --arch sm_80 --arch sm_90 --cache-dir "$dir/cache" -- -O3
  mkdir -p "$dir/fatbin" "$dir/obj"
  each "'$NVCC' -fatbin $flags -o '$dir/fatbin/'\$stem.fatbin {}"
  each "'$NVCC' -c $flags -o '$dir/obj/'\$stem.o {}"
  ar rcs "$dir/lib$set.a" "$dir"/obj/*.o
  check "$dir/fatbins.json" "$dir"/fatbin/*.fatbin --arch sm_80 --arch sm_90
  check "$dir/library.json" "$dir/lib$set.a" --arch sm_80 --arch sm_90
  diff_rows "$dir/sources.json" "$dir/fatbins.json" --label "$set: sources vs fatbins"
  diff_rows "$dir/sources.json" "$dir/library.json" --label "$set: sources vs lib$set.a"
  if [[ -n "${OCCUPANCY_PTXAS_LEGACY:-}" ]]; then
    legacy="$dir/legacy" && mkdir -p "$legacy"
    "$OCCUPANCY_PTXAS_LEGACY" --version | tail -2 | head -1 | sed "s/^/$set: legacy ptxas: /"
    each "'$NVCC' -ptx -arch=compute_80 -O3 -o '$legacy/'\$stem.ptx {} &&
      sed -i 's/^\.version 9\.[0-9]*\$/.version 8.8/' '$legacy/'\$stem.ptx &&
      '$OCCUPANCY_PTXAS_LEGACY' -arch=sm_80 -v -o '$legacy/'\$stem.sm_80.cubin '$legacy/'\$stem.ptx >'$legacy/'\$stem.log 2>&1"
    cat "$legacy"/*.log >"$legacy/ptxas-12.9.log"
    check "$dir/legacy-log.json" "$legacy/ptxas-12.9.log" --arch sm_80
    check "$dir/legacy-cubins.json" "$legacy"/*.cubin --arch sm_80
    diff_rows "$dir/legacy-log.json" "$dir/legacy-cubins.json" --log-reference --unmarked --label "$set: ptxas 12.9 -v log vs its cubins (sm_80)"
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
