#!/usr/bin/env python3
"""The record of scripts/gpu-dropped-bounds.sh (docs/verification.md, section 8).

Reads, from RESULTS_DIR: `parsed-sm_XX.json` (`cargo occupancy parse --json` of each arch's ptxas
report), `check.json` (`cargo occupancy check --json` of the same sources on every arch), and,
when the GPU step ran, `probe.jsonl` (the driver's attributes, occupancy and launch of each
kernel) and `probe-parsed.json` (the probe build's ptxas report). Writes `dropped-bounds.md`
(the tables) and `dropped-bounds.json` (every row, every comparison, the mismatches), and exits 1
on any mismatch:

* per arch and kernel, the tool's row (`check`) against ptxas's report of the same compile:
  registers, spill stores and loads, stack frame, static shared memory;
* on the GPU, the driver (`cudaFuncGetAttributes`: numRegs, localSizeBytes, sharedSizeBytes;
  `cudaOccupancyMaxActiveBlocksPerMultiprocessor` at the row's block) against the tool's row of
  the GPU's arch, the probe build's ptxas report against it too, and every launch succeeded.

Usage: dropped_bounds_table.py RESULTS_DIR ARCH... [--gpu-arch sm_90]
"""

import json
import re
import sys
from pathlib import Path

BOUND_LINTS = ("unreachable_bound", "register_cap_ignored")
LARGEST = re.compile(
    r"the largest (?:it honours there|minimum that can take effect) is (\d+)|no minimum can take effect"
)
RAISED = re.compile(r"from (\d+) to (\d+)")


def load(path):
    return json.loads(Path(path).read_text())


def ptxas_records(parsed):
    return {(k["name"], k["arch"]): k for k in parsed["kernels"]}


def compiled_bound(row):
    parts = []
    if row.get("max_threads_per_block") is not None:
        bound = f"{row['max_threads_per_block']}"
        if row.get("min_blocks_per_sm") is not None:
            bound += f", {row['min_blocks_per_sm']}"
        parts.append(f"`__launch_bounds__({bound})`")
    if row.get("max_registers") is not None:
        parts.append(f"`__maxnreg__({row['max_registers']})`")
    return " ".join(parts) or "none"


def what_the_tool_said(findings):
    """(lints, the largest minimum that takes effect or the cap ptxas applied, messages)."""
    lints, effect, messages = [], "", []
    for finding in findings:
        lints.append(finding["lint"])
        messages.append(finding["message"])
        largest = LARGEST.search(finding["message"])
        raised = RAISED.search(finding["message"])
        if finding["lint"] == "unreachable_bound" and largest:
            effect = f"largest minimum {largest.group(1) or 0}"
        elif finding["lint"] == "register_cap_ignored" and raised:
            effect = f"cap {raised.group(1)} applied as {raised.group(2)}"
    return lints, effect, messages


def compare(mismatches, what, tool, other):
    if tool != other:
        mismatches.append(f"{what}: tool {tool}, other {other}")
    return tool == other


def per_arch_rows(results, archs, report, mismatches):
    rows = []
    for arch in archs:
        records = ptxas_records(load(results / f"parsed-{arch}.json"))
        for row in (r for r in report["kernels"] if r["arch"] == arch and r.get("entry", True)):
            # ptxas names the arch it compiled for; the tool's row, the table's (the same here).
            record = records.get((row["name"], arch))
            if record is None:
                mismatches.append(f"{row['name']} on {arch}: no ptxas record in parsed-{arch}.json")
                continue
            for field in ("registers", "spill_store_bytes", "spill_load_bytes", "stack_frame_bytes", "static_smem_bytes"):
                compare(mismatches, f"{row['name']} on {arch}: {field}", row[field], record.get(field) or 0)
            findings = [
                f for f in report["findings"]
                if f["lint"] in BOUND_LINTS and f.get("kernel") == row["name"] and f.get("arch") == arch
            ]
            lints, effect, messages = what_the_tool_said(findings)
            warnings = [w for w in record.get("warnings", []) if "ignored" in w or "adjusting" in w]
            rows.append({
                "kernel": row["name"], "arch": arch, "bound": compiled_bound(row),
                "ptxas_warnings": warnings, "registers": row["registers"],
                "spill_stores": row["spill_store_bytes"], "spill_loads": row["spill_load_bytes"],
                "stack": row["stack_frame_bytes"], "block": row["block"],
                "blocks_per_sm": row["blocks_per_sm"], "lints": lints, "effect": effect,
                "messages": messages,
            })
    return rows


def gpu_rows(results, report, gpu_arch, mismatches):
    probe = [json.loads(line) for line in (results / "probe.jsonl").read_text().splitlines() if line.strip()]
    device = probe[0]
    if device.get("arch") != gpu_arch:
        mismatches.append(f"the GPU is {device.get('arch')}, the rows compared are {gpu_arch}'s")
    built = ptxas_records(load(results / "probe-parsed.json"))
    rows = []
    for entry in probe[1:]:
        name = entry["kernel"]
        row = next((r for r in report["kernels"] if r["name"] == name and r["arch"] == gpu_arch), None)
        if row is None:
            mismatches.append(f"{name}: no row of the tool on {gpu_arch}")
            continue
        record = next((r for (k, _), r in built.items() if k == name), {})
        checks = [
            compare(mismatches, f"{name}: numRegs", row["registers"], entry["num_regs"]),
            compare(mismatches, f"{name}: localSizeBytes", row["stack_frame_bytes"], entry["local_size_bytes"]),
            compare(mismatches, f"{name}: sharedSizeBytes", row["static_smem_bytes"], entry["shared_size_bytes"]),
            compare(mismatches, f"{name}: blocks per SM at {row['block']} threads", row["blocks_per_sm"], entry["blocks_per_sm_at_row_block"]),
            compare(mismatches, f"{name}: the probe build's registers", row["registers"], record.get("registers")),
            compare(mismatches, f"{name}: launch", "cudaSuccess", entry["launch"]),
        ]
        rows.append({**entry, "tool_registers": row["registers"], "tool_stack": row["stack_frame_bytes"],
                     "tool_static_smem": row["static_smem_bytes"], "tool_block": row["block"],
                     "tool_blocks_per_sm": row["blocks_per_sm"], "agrees": all(checks)})
    return device, rows


def markdown(per_arch, device, on_gpu, mismatches):
    lines = ["| kernel | arch | compiled bound | ptxas warned | registers | spill st/ld (B) | stack (B) | tool: blocks/SM (block) | tool: finding | what takes effect |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in per_arch:
        warned = "yes" if r["ptxas_warnings"] else "no"
        lines.append(f"| `{r['kernel']}` | {r['arch']} | {r['bound']} | {warned} | {r['registers']} | "
                     f"{r['spill_stores']}/{r['spill_loads']} | {r['stack']} | {r['blocks_per_sm']} ({r['block']}) | "
                     f"{', '.join(r['lints']) or '-'} | {r['effect'] or '-'} |")
    if device is not None:
        lines += ["", f"GPU: {device['device']} ({device['arch']}, {device['sms']} SMs), driver {device['driver']}", "",
                  "| kernel | registers: tool / driver | local bytes: tool / driver | static smem: tool / driver | blocks/SM at the row's block: tool / driver | launch (grid x block) | agrees |",
                  "|---|---|---|---|---|---|---|"]
        for r in on_gpu:
            lines.append(f"| `{r['kernel']}` | {r['tool_registers']} / {r['num_regs']} | {r['tool_stack']} / {r['local_size_bytes']} | "
                         f"{r['tool_static_smem']} / {r['shared_size_bytes']} | {r['tool_blocks_per_sm']} / {r['blocks_per_sm_at_row_block']} ({r['tool_block']}) | "
                         f"{r['launch']} ({r['launch_grid']} x {r['compiled_block']}) | {'yes' if r['agrees'] else 'NO'} |")
    lines += ["", f"mismatches: {len(mismatches)}"] + [f"- {m}" for m in mismatches]
    return "\n".join(lines) + "\n"


def main():
    args = sys.argv[1:]
    gpu_arch = None
    if "--gpu-arch" in args:
        at = args.index("--gpu-arch")
        gpu_arch = args[at + 1]
        del args[at:at + 2]
    results, archs = Path(args[0]), args[1:]
    report = load(results / "check.json")
    mismatches = []
    per_arch = per_arch_rows(results, archs, report, mismatches)
    device, on_gpu = (None, [])
    if gpu_arch is not None:
        device, on_gpu = gpu_rows(results, report, gpu_arch, mismatches)
    (results / "dropped-bounds.md").write_text(markdown(per_arch, device, on_gpu, mismatches))
    (results / "dropped-bounds.json").write_text(json.dumps(
        {"per_arch": per_arch, "device": device, "on_gpu": on_gpu, "mismatches": mismatches}, indent=1) + "\n")
    print((results / "dropped-bounds.md").read_text())
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
