#!/usr/bin/env python3
"""Joins the spill-placement run (gpu-verify.sh step 5) into one Markdown table: per kernel, the
tool's registers and spill bytes (`parse --json` of the same build's ptxas log), where the tool's
SASS reading puts the spill and whether `spill_in_loop` fires (`check --json` of the fixture), the executed
local loads and stores Nsight Compute counted and the share of local-load bytes that hit L1, the
median time at natural and pinned occupancy,
and each time's ratio to the reference kernel's.

usage: spill_placement_table.py RESULTS_DIR
  reads spill-placement.jsonl, spill-placement-parsed.json, spill-placement-check.json, and
  spill-placement-ncu.csv when present. Exits 1 when a kernel computed a wrong result, or a kernel
  is missing from the ptxas report or has no SASS reading (fail closed: the table is printed anyway).
"""
import csv
import json
import sys
from pathlib import Path

REFERENCE = "placement_reference"
NCU_LOADS = "smsp__inst_executed_op_local_ld.sum"
NCU_STORES = "smsp__inst_executed_op_local_st.sum"
NCU_LOCAL_LOAD_BYTES = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"
NCU_LOCAL_LOAD_HIT_BYTES = "l1tex__t_bytes_pipe_lsu_mem_local_op_ld_lookup_hit.sum"


def load_runs(results):
    """mode -> its runs in the harness's order (the reference first and again last)."""
    runs = {"natural": [], "pinned": []}
    for line in open(results / "spill-placement.jsonl"):
        run = json.loads(line)
        runs[run["mode"]].append(run)
    return runs


def load_parsed(results):
    parsed = {}
    for kernel in json.load(open(results / "spill-placement-parsed.json"))["kernels"]:
        if kernel.get("entry"):
            parsed[kernel["name"]] = kernel
    return parsed


def load_where(results):
    """kernel -> ('loop' / 'outside loops' / 'none', whether spill_in_loop fired), for the kernels
    whose SASS the tool read."""
    path = results / "spill-placement-check.json"
    try:
        report = json.load(open(path))
    except (OSError, json.JSONDecodeError) as error:
        print(f"spill_placement_table: {path}: {error}", file=sys.stderr)
        return {}
    where = {}
    for row in report.get("kernels", []):
        sass = row.get("sass")
        if not sass:
            continue
        in_loops = sass.get("spill_loads_in_loops", 0) + sass.get("spill_stores_in_loops", 0)
        spills = sass.get("spill_loads", 0) + sass.get("spill_stores", 0)
        where[row["name"]] = "loop" if in_loops else ("outside loops" if spills else "none")
    lints = {}
    for finding in report.get("findings", []):
        lints.setdefault(finding.get("kernel"), set()).add(finding["lint"])
    return {name: (place, "spill_in_loop" in lints.get(name, set())) for name, place in where.items()}


def load_ncu(results):
    """kernel -> {metric: value} for the one profiled launch per kernel (--once)."""
    path = results / "spill-placement-ncu.csv"
    if not path.exists():
        return {}
    rows = [line for line in open(path) if line.startswith('"')]
    counts = {}
    for row in csv.DictReader(rows):
        value = row["Metric Value"].replace(",", "")
        try:
            counts.setdefault(row["Kernel Name"], {})[row["Metric Name"]] = float(value)
        except ValueError:
            pass
    return counts


def per_warp(count, warps):
    value = count / warps
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def timing(run):
    return (f"{run['driver_blocks_per_sm']}, {run['median_ms']:.3f} ms "
            f"({run['p10_ms']:.3f}–{run['p90_ms']:.3f})")


def main():
    results = Path(sys.argv[1])
    runs = load_runs(results)
    parsed = load_parsed(results)
    where = load_where(results)
    ncu = load_ncu(results)
    status = 0
    order = [(run["kernel"], pinned["kernel"]) for run, pinned in zip(runs["natural"], runs["pinned"])]
    if not order or order[0] != (REFERENCE, REFERENCE) or any(a != b for a, b in order):
        print(f"spill_placement_table: {results / 'spill-placement.jsonl'} does not time {REFERENCE} first and "
              "the same kernels at natural and pinned occupancy: did the harness run? (see its output above)",
              file=sys.stderr)
        return 1
    reference = {mode: runs[mode][0]["median_ms"] for mode in ("natural", "pinned")}
    print("| kernel | registers | spill stores/loads (B) | SASS: spills sit | `spill_in_loop` "
          "| executed local loads/stores per warp (ncu) | local loads hitting L1 (ncu) | natural: blocks/SM, median (p10–p90) | × reference "
          "| pinned: blocks/SM, median (p10–p90) | × reference |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    seen = set()
    unread = []
    for natural, pinned in zip(runs["natural"], runs["pinned"]):
        kernel = natural["kernel"]
        if not (natural["correct"] and pinned["correct"]):
            status = 1
        tool = parsed.get(kernel)
        if tool is None:
            print(f"spill_placement_table: {kernel} is not in the ptxas report", file=sys.stderr)
            status = 1
            tool = {}
        label = kernel if kernel not in seen else f"{kernel} (again, last)"
        seen.add(kernel)
        place, fires = where.get(kernel, ("not read", None))
        if fires is None and kernel not in unread:
            unread.append(kernel)
        lint = "-" if fires is None else ("yes" if fires else "no")
        warps = natural["grid"] * 256 // 32
        counts = ncu.get(kernel, {})
        executed = (f"{per_warp(counts[NCU_LOADS], warps)} / {per_warp(counts[NCU_STORES], warps)}"
                    if NCU_LOADS in counts and NCU_STORES in counts else "-")
        load_bytes = counts.get(NCU_LOCAL_LOAD_BYTES)
        hits = (f"{100 * counts[NCU_LOCAL_LOAD_HIT_BYTES] / load_bytes:.0f}%"
                if load_bytes and NCU_LOCAL_LOAD_HIT_BYTES in counts else "-")
        print(f"| `{label}` | {tool.get('registers', '?')} | "
              f"{tool.get('spill_store_bytes', '?')}/{tool.get('spill_load_bytes', '?')} | {place} | {lint} | "
              f"{executed} | {hits} | {timing(natural)} | {natural['median_ms'] / reference['natural']:.2f} | "
              f"{timing(pinned)} | {pinned['median_ms'] / reference['pinned']:.2f} |")
    if unread:
        print(f"spill_placement_table: no SASS reading of {', '.join(unread)} in spill-placement-check.json: "
              "run step 5 with a cargo-occupancy whose `check` reads SASS (OCCUPANCY_BIN), with nvdisasm and "
              "cuobjdump beside nvcc (see spill-placement-check.err)", file=sys.stderr)
        status = 1
    if status:
        print("spill_placement_table: a kernel computed a wrong result, is missing or was not read (see above)",
              file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
