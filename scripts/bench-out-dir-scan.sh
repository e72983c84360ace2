#!/usr/bin/env bash
# The OUT_DIR walk of `cargo occupancy build` at scale (issue #42, class 8): a scratch crate whose
# build script leaves FILES files in OUT_DIR (default 10,000: one PTX module, FILES/2 `.rs` texts
# of TEXT_MIB MiB in all, and FILES/2 small `.json` texts), then `cargo occupancy build` on it twice, with and without the text's bytes.
# The walk reads each byte of text once, so the two differ by the reading of the text, not by
# the file count times the text (13-20 s against 0.2 s before the fix).
#
#   cargo build --release -p cargo-occupancy
#   RUNS=3 FILES=10000 TEXT_MIB=32 scripts/bench-out-dir-scan.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
source scripts/bench-common.sh
find_nvcc
runs=${RUNS:-3}
files=${FILES:-10000}
text_mib=${TEXT_MIB:-32}
tool="$root/target/release/cargo-occupancy"
test -x "$tool" || { echo "build it first: cargo build --release -p cargo-occupancy" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

make_crate() { # dir, bytes of text in all
  mkdir -p "$1/src"
  cat >"$1/Cargo.toml" <<EOF
[package]
name = "scan"
version = "0.1.0"
edition = "2021"
[workspace]
EOF
  echo "" >"$1/src/lib.rs"
  cat >"$1/build.rs" <<EOF
fn main() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let ptx = "//\n.version 9.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\nret;\n}\n";
    std::fs::write(out.join("k.ptx"), ptx).unwrap();
    let texts = $files / 2;
    let each = $2 / texts.max(1);
    let line = "// a line of generated text that names nothing of the build at all, padding\n";
    let body: String = line.repeat(each / line.len() + 1)[..each].to_string();
    for i in 0..texts {
        std::fs::write(out.join(format!("t{i}.rs")), &body).unwrap();
        std::fs::write(out.join(format!("m{i}.json")), "{}").unwrap();
    }
}
EOF
}

make_crate "$work/text" $((text_mib << 20))
make_crate "$work/bare" 0
for dir in text bare; do # cargo's own build once, so each timed run only walks and checks
  (cd "$work/$dir" && "$tool" occupancy build >/dev/null 2>&1) || true
done
echo "OUT_DIR of $files files, $text_mib MiB of text ($runs runs):"
for i in $(seq "$runs"); do
  record text "$(cd "$work/text" && measure "$tool" occupancy build)"
  record bare "$(cd "$work/bare" && measure "$tool" occupancy build)"
done
report "build: with the text / without it" text bare
(cd "$work/text" && "$tool" occupancy build 2>&1 | grep -m1 "text file(s)") || true
