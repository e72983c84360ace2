#!/usr/bin/env python3
"""Compares `occupancy`'s answers with the CUDA driver's, as observed by occupancy_probe.

Inputs: the probe's JSON Lines, the tool's `parse --json` of the same build's ptxas logs, the PTX of
the same sources (for the kernels' __launch_bounds__), and the tool's binary (for `calc --batch`).
Every comparison is listed; any mismatch makes the exit status 1. Nothing here computes occupancy:
the numbers on one side come from the driver, on the other from `cargo occupancy`.
"""
import argparse, json, re, subprocess, sys
from collections import Counter


def ptx_max_threads(ptx_paths):
    """Kernel name -> product of its .maxntid / .reqntid dimensions, from PTX text."""
    bounds = {}
    for path in ptx_paths:
        current = None
        for line in open(path, encoding="utf-8", errors="replace"):
            entry = re.match(r"\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z0-9_$.]+)", line)
            if entry:
                current = entry.group(1)
                continue
            directive = re.match(r"\s*\.(maxntid|reqntid)\s+([0-9,\s]+)", line)
            if current and directive:
                product = 1
                for value in directive.group(2).split(","):
                    if value.strip():
                        product *= int(value)
                bounds[current] = min(bounds.get(current, 1 << 30), product)
            if line.strip() == "{":
                pass
    return bounds


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--probe", required=True)
    parser.add_argument("--parsed", required=True, help="output of `cargo occupancy parse --json`")
    parser.add_argument("--ptx", nargs="*", default=[])
    parser.add_argument("--bin", required=True, help="the cargo-occupancy binary")
    parser.add_argument("--summary", required=True, help="where to write the JSON summary")
    parser.add_argument("--replay", help="where to write the driver's answers as calc --batch requests "
                        "(JSON Lines: {\"request\": ..., \"driver_blocks_per_sm\": N}) for the offline replay test")
    args = parser.parse_args()

    device, functions, configs, launch_checks, module_errors = None, {}, [], [], []
    for line in open(args.probe):
        record = json.loads(line)
        kind = record.pop("type")
        if kind == "device":
            device = record
        elif kind == "function":
            functions[record["name"]] = record
        elif kind == "config":
            configs.append(record)
        elif kind == "launch_check":
            launch_checks.append(record)
        elif kind == "module_error":
            module_errors.append(record)
    arch = device["arch"]
    parsed = {}
    for kernel in json.load(open(args.parsed))["kernels"]:
        if kernel.get("arch") == arch and kernel.get("entry", True):
            parsed[kernel["name"]] = kernel
    launch_bounds = ptx_max_threads(args.ptx)

    mismatches = []
    fact_comparisons = 0
    for name, driver in functions.items():
        ours = parsed.get(name)
        if ours is None:
            mismatches.append({"kernel": name, "what": "not in the tool's parse of the ptxas log"})
            continue
        for our_key, driver_key in [("registers", "registers"), ("static_smem_bytes", "static_smem_bytes"),
                                    ("stack_frame_bytes", "local_bytes")]:
            fact_comparisons += 1
            if ours.get(our_key) != driver[driver_key]:
                mismatches.append({"kernel": name, "what": our_key, "tool": ours.get(our_key),
                                   "driver": driver[driver_key]})

    def batch_line(name, block, dynamic_smem, carveout, max_dynamic_smem, with_bounds):
        ours = parsed[name]
        line = {"arch": arch, "block": block, "registers": ours["registers"],
                "static_smem": ours["static_smem_bytes"], "dynamic_smem": dynamic_smem,
                "barriers": ours.get("barriers") if ours.get("barriers") is not None else 1,
                "carveout": "default" if carveout < 0 else carveout,
                "max_dynamic_smem": max_dynamic_smem}
        if with_bounds and name in launch_bounds:
            line["max_threads"] = launch_bounds[name]
        return line

    comparable = [c for c in configs if c["name"] in parsed]
    requests = [batch_line(c["name"], c["block"], c["dynamic_smem"], c["carveout"], c["max_dynamic_smem"], True)
                for c in comparable]
    checks = [c for c in launch_checks if c["name"] in parsed]
    requests += [batch_line(c["name"], c["block"], 0, -1, functions[c["name"]]["default_max_dynamic_smem"], True)
                 for c in checks]
    result = subprocess.run([args.bin, "occupancy", "calc", "--batch", "-"], capture_output=True, text=True,
                            input="".join(json.dumps(r) + "\n" for r in requests))
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    if len(answers) != len(requests):
        print(f"calc --batch answered {len(answers)} lines for {len(requests)} requests; stderr:\n{result.stderr}")
        return 2
    limiters = Counter()
    for config, request, answer in zip(comparable, requests, answers):
        driver_blocks = config["driver_blocks"] if config["status"] == 0 else 0
        tool_blocks = answer.get("blocks_per_sm")
        for limiter in answer.get("limiters", []):
            limiters[limiter] += 1
        if tool_blocks != driver_blocks:
            mismatches.append({"kernel": config["name"], "what": "blocks_per_sm", "request": request,
                               "tool": answer, "driver": config})
    if args.replay:
        with open(args.replay, "w") as replay:
            replay.write(json.dumps({"device": device}) + "\n")
            for config, request in zip(comparable, requests):
                driver_blocks = config["driver_blocks"] if config["status"] == 0 else 0
                replay.write(json.dumps({"request": request, "driver_blocks_per_sm": driver_blocks}) + "\n")
            for check, request in zip(checks, requests[len(comparable):]):
                replay.write(json.dumps({"request": request, "driver_blocks_per_sm": 0,
                                         "launch_refused": check["launch_status"] != 0}) + "\n")
    launch_results = []
    for check, answer in zip(checks, answers[len(comparable):]):
        refused = check["launch_status"] != 0
        ok = refused and answer.get("blocks_per_sm") == 0
        launch_results.append({"kernel": check["name"], "block": check["block"],
                               "driver_occupancy_call": check["occupancy_call_blocks"],
                               "launch_refused": refused, "tool_blocks": answer.get("blocks_per_sm"),
                               "tool_limiters": answer.get("limiters")})
        if not ok:
            mismatches.append({"kernel": check["name"], "what": "launch above max threads",
                               "tool": answer, "driver": check})

    summary = {"device": device, "kernels": len(functions), "kernels_compared": len(parsed.keys() & functions.keys()),
               "fact_comparisons": fact_comparisons, "configurations": len(comparable),
               "launch_checks": launch_results, "modules_the_driver_refused": module_errors, "limiters_seen": dict(limiters),
               "mismatches": len(mismatches), "first_mismatches": mismatches[:50]}
    json.dump(summary, open(args.summary, "w"), indent=1)
    print(f"device: {device['name']} ({arch}, {device['sm_count']} SMs, driver {device['driver_version']})")
    print(f"kernels: {summary['kernels_compared']} of {len(functions)} compared; "
          f"facts compared: {fact_comparisons}; configurations compared: {len(comparable)}; "
          f"launch checks: {len(launch_results)}")
    print(f"limiters seen: {dict(limiters)}")
    for error in module_errors:
        print(f"not compared: the driver refused to load {error['file']}: {error['message']}")
    print(f"mismatches: {len(mismatches)}")
    for mismatch in mismatches[:20]:
        print("  " + json.dumps(mismatch)[:400])
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
