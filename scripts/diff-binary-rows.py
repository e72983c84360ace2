#!/usr/bin/env python3
"""Compare the kernel rows of two `cargo occupancy check --json` reports, kernel x arch.

    scripts/diff-binary-rows.py REFERENCE.json OTHER.json --label NAME [--fields a,b] [--unmarked]

Entry rows only, keyed by (symbol, arch). Prints one line: the rows of each side, the kernels x
archs on one side only, and the rows that differ in any of the fields (default: the columns a
binary must reproduce, as tests/cli_check_binary.rs compares them), then up to 10 differences.

--unmarked: OTHER was read from cubins that do not name their compiler (no .note.nv.tkinfo, CUDA
12), REFERENCE is that ptxas's -v log. A kernel with a stack frame and no spill marks is then
read as an upper bound (SpillEvidence::Unmarked: every local store and load counted as a spill).
Since ptxas 12.6 marks every spill, those are the rows with a stack frame and no spills in the
log: they are counted, and the ones whose spill columns differ (a local array's accesses
counted) are reported apart from any other difference.

--log-reference: REFERENCE was read from a ptxas -v log, which carries no launch bounds: the
rows' max_threads_per_block is not compared, and where the binary's is below the block the
reference evaluated (check then evaluates the binary's row at its bound), only the resources
(registers to spill loads) are; those rows are counted.

Exit status 1 when a row differs (other than as --unmarked allows) or is on one side only.
Python 3 standard library only.
"""

import argparse
import json
import sys

FIELDS = ["registers", "barriers", "static_smem_bytes", "stack_frame_bytes", "spill_store_bytes",
          "spill_load_bytes", "max_threads_per_block", "block", "blocks_per_sm", "occupancy",
          "limiters"]
SPILLS = {"spill_store_bytes", "spill_load_bytes"}
LAUNCH = ["max_threads_per_block", "block", "blocks_per_sm", "occupancy", "limiters"]


def rows(path):
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    found = {}
    for row in report["kernels"]:
        if row.get("entry"):
            key = (row["name"], row["arch"])
            if key in found:
                sys.exit(f"diff-binary-rows: {path}: {key} twice")
            found[key] = row
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference")
    parser.add_argument("other")
    parser.add_argument("--label", default="rows")
    parser.add_argument("--fields", default=",".join(FIELDS))
    parser.add_argument("--unmarked", action="store_true")
    parser.add_argument("--log-reference", action="store_true")
    args = parser.parse_args()
    fields = args.fields.split(",")
    want, got = rows(args.reference), rows(args.other)
    only_want = sorted(set(want) - set(got))
    only_got = sorted(set(got) - set(want))
    differing, upper_bound, unmarked, bounded = [], [], 0, 0
    for key in sorted(set(want) & set(got)):
        compared = fields
        if args.log_reference:
            compared = [f for f in fields if f != "max_threads_per_block"]
            bound = got[key].get("max_threads_per_block")
            if bound is not None and bound < want[key]["block"]:
                bounded += 1
                compared = [f for f in fields if f not in LAUNCH]
        fields_differing = [f for f in compared if want[key].get(f) != got[key].get(f)]
        marked = want[key]["spill_store_bytes"] or want[key]["spill_load_bytes"]
        if args.unmarked and want[key]["stack_frame_bytes"] and not marked:
            unmarked += 1
            if fields_differing and set(fields_differing) <= SPILLS:
                upper_bound.append(key)
                continue
        if fields_differing:
            differing.append((key, fields_differing))
    line = (f"{args.label}: {len(want)} rows vs {len(got)}; {len(only_want)} only in the reference, "
            f"{len(only_got)} only in the other; {len(differing)} rows differ")
    if args.log_reference:
        line += f"; {bounded} rows with launch bounds below the log's block: resources compared only"
    if args.unmarked:
        line += (f"; {unmarked} rows read as an upper bound (stack frame, no spill marks), "
                 f"{len(upper_bound)} of them with other spill figures than the log")
    print(line)
    for key, fields_differing in differing[:10]:
        print(f"  {key[0]} {key[1]}: " + ", ".join(
            f"{f} {want[key].get(f)!r} vs {got[key].get(f)!r}" for f in fields_differing))
    for key in upper_bound[:10]:
        print(f"  upper bound: {key[0]} {key[1]}: stack frame {want[key]['stack_frame_bytes']} B, spill stores "
              f"{want[key]['spill_store_bytes']} vs {got[key]['spill_store_bytes']} B, loads "
              f"{want[key]['spill_load_bytes']} vs {got[key]['spill_load_bytes']} B")
    for key in (only_want + only_got)[:10]:
        print(f"  {key[0]} {key[1]}: on one side only")
    sys.exit(1 if differing or only_want or only_got else 0)


if __name__ == "__main__":
    main()
