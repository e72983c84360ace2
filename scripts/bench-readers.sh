#!/usr/bin/env bash
# occupancy-binary's hand-written readers against `object` (ar archives, ELF section tables) and
# `zip` (wheels), issue #36 item 5: the same items read, max RSS, and wall time, side by side in
# one run, one reader per process, alternating (RUNS times each).
#
#   AR=lib.a ELF=lib.so WHEEL=x.whl scripts/bench-readers.sh     # any of the three; RUNS=3
#   HOSTILE=1 scripts/bench-readers.sh    # and two files made here: a wheel of 500,000 members,
#                                         # an ar archive whose name table declares 300 MB
#
# The program is scripts/bench-readers.rs, built (release) in a scratch crate under target/
# with the readers' own files copied beside it. Each mode prints one line per item read (member
# name, bytes, checksum; or fatbin offset and length); the two readers' lines must be equal.
# Wheels are extracted under the scratch directory (removed after each run). The machine may be
# shared: load averages before and after are printed, and only the ratios mean anything.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS=${RUNS:-3}
work=${WORK:-$root/target/bench-readers}
crate="$work/crate"
rm -rf "$work" && mkdir -p "$crate/src"
# Built once, kept between runs (cargo clean removes it).
target="$root/target/bench-readers-build"
cat > "$crate/Cargo.toml" <<TOML
[package]
name = "bench-readers"
version = "0.1.0"
edition = "2021"

[dependencies]
miniz_oxide = "0.8"
thiserror = "2"
crc32fast = "1"
object = { version = "0.37", default-features = false, features = ["read_core", "elf", "archive", "std"] }
zip = { version = "9", default-features = false, features = ["deflate-flate2"] }
# The inflater of wheel.rs (miniz_oxide), so that the readers are compared, not two inflaters.
flate2 = { version = "1", default-features = false, features = ["rust_backend"] }

[profile.release]
debug = 1

[workspace]
TOML
cp "$root/Cargo.lock" "$crate/Cargo.lock"
cp "$root/scripts/bench-readers.rs" "$crate/src/main.rs"
cp "$root/occupancy-binary/src/archive.rs" "$root/occupancy-binary/src/wheel.rs" "$crate/src/"
{ sed 's#^use super::read_full;#use crate::read_full;#' "$root/occupancy-binary/src/fatbin.rs"
  cat <<'RS'

/// The fatbins of the section `offset..offset + size` of the file at `path` (for the bench).
pub fn blobs_in(path: &Path, offset: u64, size: u64) -> io::Result<Option<Vec<Blob>>> {
    walk(&mut BufReader::new(File::open(path)?), offset, offset + size)
}
RS
} > "$crate/src/fatbin.rs"
sed -i 's#^use super::read_full;#use crate::read_full;#' "$crate/src/archive.rs"
sed -i 's#^mod tests;##; s#^\#\[cfg(test)\]$##; s#^use occupancy_build::cli::shown_path;#use crate::shown_path;#' "$crate/src/wheel.rs"
cat >> "$crate/src/wheel.rs" <<'RS'

/// The members this reader takes, by name and by first bytes (for the bench's other reader).
pub fn candidate(name: &str) -> bool {
    is_candidate_name(name)
}
pub fn cuda_content(name: &str, head: &[u8]) -> bool {
    is_cuda_content(name, head)
}
RS
cargo build -q --release --manifest-path "$crate/Cargo.toml" --target-dir "$target"
bin="$target/release/bench-readers"

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
# $1 mode, $2 file: "wall_s max_rss_kb cpu_s", the items read into $work/$1.out
run() {
  local dir="$work/extract-$1"
  rm -rf "$dir"
  local t
  t=$( { /usr/bin/time -f '%e %M %U %S' "$bin" "$1" "$2" "$dir" > "$work/$1.out"; } 2>&1 | tail -1)
  rm -rf "$dir"
  read -r wall rss user sys <<<"$t"
  echo "$wall $rss $(echo "$user + $sys" | bc)"
}
compare() { # $1 what, $2 hand mode, $3 crate mode, $4 file
  [[ -n "$4" ]] || return 0
  local hand_wall=0 crate_wall=0 hand_rss=0 crate_rss=0 hand_cpu=0 crate_cpu=0
  for _ in $(seq "$RUNS"); do
    read -r w m c <<<"$(run "$2" "$4")"
    hand_wall=$(echo "$hand_wall + $w" | bc); hand_cpu=$(echo "$hand_cpu + $c" | bc); ((m > hand_rss)) && hand_rss=$m
    read -r w m c <<<"$(run "$3" "$4")"
    crate_wall=$(echo "$crate_wall + $w" | bc); crate_cpu=$(echo "$crate_cpu + $c" | bc); ((m > crate_rss)) && crate_rss=$m
  done
  local same=equal
  cmp -s "$work/$2.out" "$work/$3.out" || same="DIFFERENT (diff $work/$2.out $work/$3.out)"
  printf '%s (%s, %s MB): %s items, %s\n' "$1" "$(basename "$4")" "$(( $(stat -c %s "$4") / 1000000 ))" \
    "$(wc -l < "$work/$2.out")" "$same"
  printf '  %-10s wall %6.2f s, CPU %6.2f s (sums of %d)  max RSS %6.1f MB\n' "$2" "$hand_wall" "$hand_cpu" "$RUNS" "$(echo "$hand_rss / 1000" | bc -l)"
  printf '  %-10s wall %6.2f s, CPU %6.2f s (sums of %d)  max RSS %6.1f MB\n' "$3" "$crate_wall" "$crate_cpu" "$RUNS" "$(echo "$crate_rss / 1000" | bc -l)"
  printf '  crate / hand-written: wall %.2f, CPU %.2f, max RSS %.2f\n' "$(echo "$crate_wall / $hand_wall" | bc -l)" \
    "$(echo "$crate_cpu / $hand_cpu" | bc -l)" "$(echo "$crate_rss / $hand_rss" | bc -l)"
}
compare "ar archive" ar-hand ar-object "${AR:-}"
compare "ELF fatbin sections" elf-hand elf-object "${ELF:-}"
compare "wheel" wheel-hand wheel-zip "${WHEEL:-}"
hostile() { # $1 what, $2 hand mode, $3 crate mode, $4 file: each once, with its exit status
  echo "$1 ($(( $(stat -c %s "$4") / 1000000 )) MB):"
  for mode in "$2" "$3"; do
    rm -rf "$work/extract-$mode"
    # time's line and the reader's own error, if any (both on the same standard error)
    /usr/bin/time -f "$mode: exit %x, wall %e s, max RSS %M KB" "$bin" "$mode" "$4" "$work/extract-$mode" \
      > /dev/null 2> "$work/$mode.err" || true
    grep -v '^Command exited' "$work/$mode.err" | sed 's/^/  /'
    rm -rf "$work/extract-$mode"
  done
}
if [[ "${HOSTILE:-0}" == 1 ]]; then
  python3 - "$work" "$root/occupancy-binary/src/fuzz_corpus/k.o" <<'PY'
import sys, zipfile
work, member = sys.argv[1], open(sys.argv[2], 'rb').read()
with zipfile.ZipFile(f'{work}/many-members.whl', 'w', zipfile.ZIP_STORED) as z:
    for i in range(500_000):
        z.writestr(f'pkg/m/{i:07d}.py', b'')
    z.writestr('pkg/lib/k.o', member)
with open(f'{work}/long-names.a', 'wb') as f:
    size = 300_000_000
    f.write(b'!<arch>\n' + f'{"//":<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n'.encode())
    f.write(b'x' * (size - 1) + b'\n')
    f.write(f'{"k.o/":<16}{0:<12}{0:<6}{0:<6}{644:<8}{len(member):<10}`\n'.encode() + member)
    f.write(b'\n' * (len(member) % 2))
PY
  hostile "a wheel of 500,000 members and one object" wheel-hand wheel-zip "$work/many-members.whl"
  hostile "an ar archive whose GNU name table declares 300 MB" ar-hand ar-object "$work/long-names.a"
  rm -f "$work/many-members.whl" "$work/long-names.a"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[[ "${KEEP:-0}" == 1 ]] || rm -rf "$work/extract-"* "$work"/*.out
