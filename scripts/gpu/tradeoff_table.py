#!/usr/bin/env python3
"""Joins the trade-off run into one Markdown table: per kernel and min blocks per SM, the tool's
registers, spills and occupancy (from `parse --json --arch --block 256` of the same build's ptxas
log), the median time and throughput (tradeoff.jsonl) and Nsight Compute's achieved occupancy.

usage: tradeoff_table.py RESULTS_DIR   (reads tradeoff-parsed.json, tradeoff.jsonl, tradeoff-ncu.csv)
"""
import csv, json, re, sys
from pathlib import Path

results = Path(sys.argv[1])
tool = {}
for kernel in json.load(open(results / "tradeoff-parsed.json"))["kernels"]:
    match = re.match(r"void (\w+)<(\d+)>", kernel.get("demangled") or "")
    if match and kernel.get("entry"):
        tool[(match.group(1), int(match.group(2)))] = kernel
achieved = {}
ncu_path = results / "tradeoff-ncu.csv"
if ncu_path.exists():
    rows = [line for line in open(ncu_path) if line.startswith('"')]
    for row in csv.DictReader(rows):
        match = re.match(r"void (\w+)<(\d+)>", row["Kernel Name"])
        if match and row["Metric Name"] == "sm__warps_active.avg.pct_of_peak_sustained_active":
            achieved[(match.group(1), int(match.group(2)))] = float(row["Metric Value"])

print("| kernel | min blocks/SM | registers | spill stores/loads (B) | tool: blocks/SM | tool: occupancy "
      "| ncu: achieved occupancy | median time | throughput |")
print("|---|---|---|---|---|---|---|---|---|")
for line in open(results / "tradeoff.jsonl"):
    run = json.loads(line)
    key = (run["kernel"], run["min_blocks_per_sm"])
    kernel = tool.get(key, {})
    occupancy = kernel.get("occupancy") or {}
    throughput = f"{run['tflops']:.2f} TFLOP/s" if "tflops" in run else f"{run['gbps']:.0f} GB/s"
    ncu = f"{achieved[key]:.1f}%" if key in achieved else "-"
    tool_blocks = occupancy.get("blocks_per_sm", "?")
    agrees = "" if tool_blocks == run["driver_blocks_per_sm"] else f" (driver {run['driver_blocks_per_sm']})"
    print(f"| {run['kernel']} | {run['min_blocks_per_sm']} | {kernel.get('registers', '?')} | "
          f"{kernel.get('spill_store_bytes', '?')}/{kernel.get('spill_load_bytes', '?')} | {tool_blocks}{agrees} | "
          f"{100 * occupancy.get('occupancy', 0):.1f}% | {ncu} | {run['median_ms']:.3f} ms | {throughput} |")
