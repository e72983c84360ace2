#!/usr/bin/env python3
"""The auto-bounds table (docs/verification.md, "Bounds chosen by the build"): the times
scripts/gpu-autobounds.sh measured on a GPU, set beside what `cargo occupancy tune` chooses for
the same kernels (run here, no GPU needed).

    python3 scripts/gpu/autobounds/combine.py RAW.csv [--arch sm_90] [--set corpus|heldout]
        [--bin CARGO_OCCUPANCY] [--tune-dir DIR] [--markdown OUT.md] [--json OUT.json]

For each kernel of RAW.csv: `tune --format json` on its `<kernel>_lb` variant in autobounds.cu
(`__launch_bounds__(BLOCK)`, what "no minimum" compiles to; its dynamic shared memory from
RAW.csv), saved as DIR/<kernel>.json and reused when present. A build checks the compile that
takes its choice (nvcc's front end sees the bound too and may make other code than the PTX
measured) and chooses again without a bound whose compile spills more than the kernel without
bounds: so does this script, with the spills ptxas reported for the run's own variants
(ptxas.log beside RAW.csv), by running tune again with `--refused ARCH:B:BYTES` (then saved as
DIR/<kernel>.refused-B....json): the choice is always tune's own. The build's choice maps to a
variant (`min_blocks_per_sm = B` to `bB`, no bounds to `lb`). Per kernel, over its variants that fit
(`feasible`) and computed what `bare` did (`check` ok): the fastest, auto's choice and its time
relative to the fastest, no bounds (`bare`, the kernel as written without `__launch_bounds__`)
and the choice of maximum occupancy (the most resident blocks the driver reports, the smallest B
of those). The goal: auto within 3% of the fastest on at least 80% of the kernels, and never more
than 3% slower than no bounds.
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
from collections import OrderedDict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SOURCE = os.path.join(ROOT, "scripts", "gpu", "autobounds", "autobounds.cu")
TOLERANCE = 1.03
SHARE = 0.80

KINDS = {
    "stream_triad": "bandwidth-bound stream (4 float4 in flight)",
    "gather_chase": "latency-bound pointer chase (8 chains)",
    "fma_ilp": "FMA chains, high ILP (32 per thread)",
    "smem_gemm": "shared-memory GEMM tile (64x64, 4x4 per thread)",
    "reduce_sum": "reduction (shuffles, one atomic per block)",
    "stencil25": "5x5 stencil, 4 outputs per thread",
    "attention": "online softmax over 256 keys, head 64",
    "chain40": "40 values carried around a loop",
    "chain96": "96 values carried around a loop (spills when capped)",
    "histogram": "256-bin histogram, shared-memory atomics",
    "transpose": "tiled transpose through shared memory",
    "small_block": "64-thread blocks, transcendental math",
    "dyn_conv": "65-tap convolution, 33 KB dynamic shared memory",
    "sgemm128": "register-tiled SGEMM (128x128, 8x8 per thread)",
    "layernorm": "row normalization, a warp per row in registers",
    # The held-out corpus (heldout.cuh).
    "spmv_ell": "sparse matrix-vector (ELL, 32 gathers per row)",
    "stencil7": "7-point 3D stencil marching up z",
    "nbody": "all-pairs gravity through shared memory",
    "softmax_row": "row softmax, 8 values per thread, block reductions",
    "gemv": "dense matrix-vector, a warp per row, float4",
    "mandel": "Mandelbrot escape counts (divergent, compute)",
    "bitonic": "bitonic sort of 512 keys in shared memory",
    "tile_gemm": "examples/auto-bounds' GEMM tile (64x64, 4x4, K by 8)",
}

# What `--set` compiles autobounds.cu with (scripts/gpu-autobounds.sh's OCCUPANCY_AUTOBOUNDS_SET).
SETS = {"corpus": [], "heldout": ["-DAUTOBOUNDS_HELDOUT"]}


def read_raw(path):
    kernels = OrderedDict()
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            kernels.setdefault(row["kernel"], OrderedDict())[row["variant"]] = row
    return kernels


def binary(given):
    if given:
        return [given]
    for profile in ("release", "debug"):
        candidate = os.path.join(ROOT, "target", profile, "cargo-occupancy")
        if os.path.exists(candidate):
            return [candidate]
    return ["cargo", "run", "-q", "--manifest-path", os.path.join(ROOT, "Cargo.toml"),
            "-p", "cargo-occupancy", "--"]


def tune(kernel, dynamic_smem, arch, command, tune_dir, cache_dir, refused=(), defines=()):
    """tune's JSON for `kernel`, with `refused` [(blocks, spill bytes)] refused on `arch`."""
    suffix = "".join(f".refused-{blocks}" for blocks, _ in refused)
    path = os.path.join(tune_dir, f"{kernel}{suffix}.json")
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    arguments = command + ["occupancy", "tune", SOURCE, "--kernel", f"{kernel}_lb", "--arch", arch,
                           "--dynamic-smem", str(dynamic_smem), "--format", "json",
                           "--cache-dir", cache_dir]
    for blocks, spill_bytes in refused:
        arguments += ["--refused", f"{arch}:{blocks}:{spill_bytes}"]
    if defines:
        arguments += ["--"] + list(defines)
    print(f"combine: tune {kernel} ...", file=sys.stderr, flush=True)
    done = subprocess.run(arguments, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"combine: {' '.join(arguments)} failed:\n{done.stderr}")
    tuned = json.loads(done.stdout)
    with open(path, "w") as handle:
        json.dump(tuned, handle, indent=2, sort_keys=True)
    return tuned


def read_spills(path):
    """Spill stores + loads per kernel entry of a ptxas -v log."""
    spills, current = {}, None
    with open(path) as handle:
        for line in handle:
            match = re.search(r"Compiling entry function '(\w+)'", line)
            if match:
                current = match.group(1)
                spills[current] = 0
                continue
            match = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if match and current:
                spills[current] = int(match.group(1)) + int(match.group(2))
    return spills


def build_choice(kernel, tune_with, spills):
    """What a build would ship: tune's choice, unless its compile (the run's variant) spills
    more than the kernel without bounds; then tune's choice with that bound refused, as the
    build chooses again. Returns the variant, the bounds refused on the way, and the last
    tune JSON."""
    without = spills.get(f"{kernel}_lb", 0)
    refused = []
    while True:
        tuned = tune_with(tuple(refused))
        variant = variant_of(tuned["archs"][0]["chosen"])
        spilled = spills.get(f"{kernel}_{variant}", 0)
        if variant == "lb" or spilled <= without:
            return variant, [f"b{blocks}" for blocks, _ in refused], tuned
        refused.append((int(variant[1:]), spilled))


def variant_of(chosen):
    """The variant a choice compiles to: `bB` for a minimum, `lb` for no bounds."""
    if chosen == "none":
        return "lb"
    if isinstance(chosen, dict) and "min_blocks_per_sm" in chosen:
        return f"b{chosen['min_blocks_per_sm']}"
    sys.exit(f"combine: a choice autobounds.cu has no variant for: {chosen}")


def judge(kernel, variants, tune_with, spills):
    usable = {label: row for label, row in variants.items()
              if row["feasible"] == "1" and row["check"] == "ok"}
    time = {label: float(row["median_ms"]) for label, row in usable.items()}
    fastest = min(time, key=time.get)
    tune_choice = variant_of(tune_with(())["archs"][0]["chosen"])
    auto, refused, tuned = build_choice(kernel, tune_with, spills)
    bounded = [label for label in usable if label != "bare"]
    most = max(int(usable[label]["blocks_per_sm"]) for label in bounded)
    max_occupancy = min((label for label in bounded if int(usable[label]["blocks_per_sm"]) == most),
                        key=lambda label: int(usable[label]["min_blocks"]))
    result = OrderedDict(
        kernel=kernel,
        kind=KINDS.get(kernel, ""),
        block=int(usable["bare"]["block"]),
        fastest=fastest,
        fastest_ms=time[fastest],
        auto=auto,
        tune_choice=tune_choice,
        refused_at_compile=refused,
        auto_ms=time.get(auto),
        bare_ms=time["bare"],
        max_occupancy=max_occupancy,
        max_occupancy_ms=time[max_occupancy],
        variants={label: {"registers": int(row["registers"]),
                          "local_bytes": int(row["local_bytes"]),
                          "blocks_per_sm": int(row["blocks_per_sm"]),
                          "median_ms": float(row["median_ms"])}
                  for label, row in usable.items()},
    )
    if result["auto_ms"] is None:
        sys.exit(f"combine: {kernel}: auto's choice {auto} was not measured (or not feasible, or its output differed)")
    result["auto_vs_fastest"] = result["auto_ms"] / result["fastest_ms"]
    result["auto_vs_bare"] = result["auto_ms"] / result["bare_ms"]
    result["bare_vs_fastest"] = result["bare_ms"] / result["fastest_ms"]
    result["max_occupancy_vs_fastest"] = result["max_occupancy_ms"] / result["fastest_ms"]
    return result


def label(variant, block):
    if variant == "bare":
        return "none"
    if variant == "lb":
        return f"({block})"
    return f"({block}, {variant[1:]})"


def auto_label(result):
    """The build's choice, and the bounds its compile refused on the way (`(256, 6)` refused)."""
    block = result["block"]
    text = label(result["auto"], block)
    if result["refused_at_compile"]:
        refused = ", ".join(label(variant, block) for variant in result["refused_at_compile"])
        text += f" ({refused} refused: its compile spills)"
    return text


def markdown(results, gpu):
    lines = [
        f"Measured on {gpu}; `(T, B)` is `__launch_bounds__(T, B)`, `(T)` `__launch_bounds__(T)`, "
        "`none` no launch bounds; times are medians, each column relative to the fastest variant.",
        "",
        "| kernel | kind | fastest | auto's choice | auto vs fastest | no bounds vs fastest | "
        "max occupancy | max occupancy vs fastest | auto vs no bounds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        b = r["block"]
        lines.append(
            f"| `{r['kernel']}` | {r['kind']} | {label(r['fastest'], b)} {r['fastest_ms']:.3f} ms | "
            f"{auto_label(r)} | {r['auto_vs_fastest']:.3f}x | {r['bare_vs_fastest']:.3f}x | "
            f"{label(r['max_occupancy'], b)} | {r['max_occupancy_vs_fastest']:.3f}x | "
            f"{r['auto_vs_bare']:.3f}x |")
    return "\n".join(lines)


def goal(results):
    near = [r for r in results if r["auto_vs_fastest"] <= TOLERANCE]
    slower = [r for r in results if r["auto_vs_bare"] > TOLERANCE]
    share = len(near) / len(results)
    met = share >= SHARE and not slower
    text = (f"auto within {TOLERANCE - 1:.0%} of the fastest on {len(near)} of {len(results)} kernels "
            f"({share:.0%}; goal {SHARE:.0%}); more than {TOLERANCE - 1:.0%} slower than no bounds on "
            f"{len(slower)}{': ' + ', '.join(r['kernel'] for r in slower) if slower else ''} (goal 0): "
            f"goal {'met' if met else 'NOT met'}")
    return met, text


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--set", choices=sorted(SETS), default="corpus",
                        help="the kernels the run measured (OCCUPANCY_AUTOBOUNDS_SET)")
    parser.add_argument("--bin", help="cargo-occupancy (default: target/release or target/debug, else cargo run)")
    parser.add_argument("--tune-dir", help="where tune's JSON is kept (default: beside RAW.csv, tune/)")
    parser.add_argument("--ptxas-log", help="the run's ptxas -v log (default: ptxas.log beside RAW.csv)")
    parser.add_argument("--markdown", help="write the table here too")
    parser.add_argument("--json", help="write every number here")
    args = parser.parse_args()
    kernels = read_raw(args.raw)
    if not kernels:
        sys.exit(f"combine: {args.raw} holds no measurement")
    tune_dir = args.tune_dir or os.path.join(os.path.dirname(os.path.abspath(args.raw)), "tune")
    os.makedirs(tune_dir, exist_ok=True)
    cache_dir = os.path.join(tune_dir, ".cache")
    command = binary(args.bin)
    spills = read_spills(args.ptxas_log or os.path.join(os.path.dirname(os.path.abspath(args.raw)), "ptxas.log"))
    results = []
    for kernel, variants in kernels.items():
        if "bare" not in variants:
            sys.exit(f"combine: {kernel} has no `bare` variant in {args.raw}")
        dynamic_smem = int(variants["bare"]["dynamic_smem"])
        def tune_with(refused, kernel=kernel, dynamic_smem=dynamic_smem):
            return tune(kernel, dynamic_smem, args.arch, command, tune_dir, cache_dir, refused,
                        SETS[args.set])
        results.append(judge(kernel, variants, tune_with, spills))
    first = next(iter(next(iter(kernels.values())).values()))
    table = markdown(results, f"{first['gpu']} ({first['arch']}, {first['sms']} SMs)")
    met, summary = goal(results)
    print(table)
    print()
    print(summary)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(table + "\n\n" + summary + "\n")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"kernels": results, "goal_met": met, "summary": summary}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
