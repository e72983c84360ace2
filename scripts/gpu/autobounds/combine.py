#!/usr/bin/env python3
"""The auto-bounds table (docs/verification.md, "Bounds chosen by the build"): the times
scripts/gpu-autobounds.sh measured on a GPU, set beside what `cargo occupancy tune` chooses for
the same kernels (run here, no GPU needed), and beside two simple policies.

    python3 scripts/gpu/autobounds/combine.py RAW.csv [--arch sm_90] [--set corpus|heldout|public]
        [--bin CARGO_OCCUPANCY] [--tune-dir DIR] [--markdown OUT.md] [--json OUT.json]

For each kernel of RAW.csv, a source of that kernel alone (DIR/<kernel>.cu: the set's kernel
bodies, and `<kernel>_auto`, which takes its bound from `OCCUPANCY_BOUNDS_<kernel>_auto` as a
crate's kernel does) and `tune --format json` on it, saved as DIR/<kernel>.json and reused when
present. tune compiles that source once per bound (issue #34), so each candidate is the code
the bound ships: `min_blocks_per_sm = B` is the run's `bB` variant, no bounds its `lb`
(`__launch_bounds__(BLOCK)`), no `__launch_bounds__` at all (a candidate since branch
auto-bounds-5 of issue #34) its `bare`. Per kernel, over its variants that fit (`feasible`)
and computed what `bare` did (`check` ok), three policies against the fastest variant:
  auto         tune's choice (the build's);
  never bound  `bare`, the kernel as written without `__launch_bounds__`;
  most warps   the most resident blocks the driver reports among the run's real compiles of
               `lb` and every `bB` whose ptxas report has no spill (ptxas.log beside RAW.csv),
               the fewest blocks asked for among equals (`lb` first).
The goal (issue #34): auto within 3% of the fastest on at least 95% of the kernels, never more
than 2% slower than never bounding, and a lower geometric mean (relative to the fastest) than
both simple policies.
"""

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
from collections import OrderedDict

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.join(ROOT, "scripts", "gpu", "autobounds")
TOLERANCE = 1.03
SHARE = 0.95
AGAINST_BARE = 1.02

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
    # The public-code corpus (public.cuh), kernels of the kinds public training code carries.
    "ln_warp": "layer norm, a warp per row of 768, three passes",
    "ln_block": "layer norm, a block per row of 4096 in registers",
    "rmsnorm": "RMS norm, a warp per row of 1024 in registers",
    "softmax_online": "softmax, a warp per row, online max and sum",
    "softmax_block": "softmax, a block per row of 8192, three passes",
    "xent": "cross-entropy forward and logits gradient, a block per row",
    "reduce_rows": "row sums, a warp per row, float4",
    "reduce_cols": "column sums, a thread per column, 8 rows in flight",
    "argmax": "block argmax over 16 Ki floats",
    "attn_decode": "decoding attention, a warp per query, online softmax",
    "attn_tile": "flash-attention-like tile, head 32 in registers, K/V in shared memory",
    "attn_causal": "causal attention over windows of 256, head 16",
    "gemm16": "GEMM, 16x16 shared-memory tile, 1 output per thread",
    "gemm2x2": "GEMM, 32x32 tile, 2x2 outputs per thread",
    "gemm8x4": "GEMM, 128x64 tile, 8x4 outputs per thread",
    "gelu": "GELU (tanh), float4, grid-stride",
    "bias_dropout": "bias + residual + hashed dropout",
    "swiglu": "SwiGLU, float4",
    "rope": "rotary position embedding (sincosf)",
    "adam": "AdamW step, float4",
    "sgd_nesterov": "SGD with Nesterov momentum and clipping",
    "adagrad_rows": "Adagrad on gathered embedding rows, a warp per row",
    "scan_tile": "inclusive scan of 2048-float tiles (shuffles + shared memory)",
    "scan_rows": "row cumulative sums, a warp per row",
    "scan_blelloch": "work-efficient exclusive scan of 512 per block",
    # The second held-out corpus (heldout2.cuh), written after issue #34's objective.
    "groupnorm": "group norm, a block per (sample, group) of 8192",
    "softmax_bwd": "softmax backward, a warp per row of 1024",
    "ln_bwd": "layer norm backward, a warp per row of 512 in registers",
    "embedding_bag": "embedding bag, 16 gathered rows of 128 per warp",
    "depthwise": "depthwise 3x3 convolution, NHWC, 64 channels",
    "batched16": "batched 16x16x16 matrix products, a row per thread",
    "topk": "top 8 of 256 per row, sorted in registers",
    "kmeans": "k-means assignment, 64 centroids in shared memory",
    "csr_rows": "CSR row sums with gathers, a warp per row",
    "upsample": "bilinear 2x upsampling, NCHW",
    # The third held-out corpus (heldout3.cuh), written after issue #34's final objective.
    "rms_bwd": "RMS norm backward, a warp per row of 1024",
    "gelu_bwd": "bias + GELU backward, float4",
    "qk_scores": "attention scores, a query of 64 in registers, keys in shared memory",
    "conv3x3": "3x3 convolution through an 18x18 shared-memory tile",
    "hist64": "64-bin histogram, a private histogram per warp",
    "lstm_cell": "LSTM cell, elementwise gates",
    "add_transpose": "A + B^T through a padded shared-memory tile",
    "dot_batched": "batched dot products, a warp per pair of 4096",
    "logcumsumexp": "running log-sum-exp along rows, a warp per row",
    "permute_rows": "MoE-style row gather and scale, a warp per row",
    # The fourth held-out corpus (heldout4.cuh), written after branch auto-bounds-5's objective.
    "ln_welford": "layer norm, Welford statistics, a warp per row of 512 (Apex)",
    "softmax_causal": "scaled causal-masked softmax, a warp per row of 512 (Megatron-LM)",
    "amax_cast": "FP8-style scale, saturate and round, block amax to one atomic (Transformer Engine)",
    "seg_scan": "segmented inclusive scan by head flags, 8 per lane (CUB)",
    "paged_attn": "paged attention decode through a block table, head 64 (vLLM)",
    "gemm_db": "GEMM, 64x64 double-buffered shared tile, 4x4 per thread",
    "gemm_skinny": "tall-skinny GEMM, 16 outputs per row, B in shared memory",
    "add_rms": "fused residual add and RMS norm, a block per row of 4096 (vLLM)",
    "lamb": "LAMB stage 1, float4 (Apex)",
    "hist_weighted": "weighted 128-bin histogram, shared float atomics (PyTorch histc)",
    "causal_conv1d": "causal depthwise conv1d width 4 + SiLU, channels-last (Mamba)",
    "radix_count": "radix sort upsweep, 4-bit digit counts per tile (CUB onesweep)",
    "warp_bitonic": "warp bitonic sort of 256 keys, 8 per lane in registers",
    "im2col": "im2col for a 3x3 convolution, NCHW (Caffe)",
    "rope_cache": "rotary embedding from a cos/sin cache, NeoX style (vLLM)",
    "selective_scan": "selective scan, a state of 16 per channel over 256 steps (Mamba)",
    "grid_sample": "bilinear grid sampling, 16 channels (PyTorch grid_sampler_2d)",
    "quant_rows": "row-wise int8 absmax quantization, a warp per row of 1024 (bitsandbytes)",
    # The fifth held-out corpus (heldout5.cuh), written after branch auto-bounds-6 froze the objective.
    "ln_rows2k": "layer norm, a block of 128 per row of 2048 in registers (PyTorch)",
    "softmax_uncached": "softmax, a block per row of 16384, online stats then a second read (OneFlow)",
    "bn_stats_nhwc": "batch-norm statistics over NHWC, Welford per channel (PyTorch)",
    "scan_hillis": "inclusive scan of 1024-float tiles, Hillis-Steele in shared memory",
    "attn_alibi": "attention with ALiBi biases, a query of 32 per thread, K/V tiles in shared memory",
    "gemm_nt": "GEMM A B^T, 128x64 tile, 8x4 per thread, register prefetch (CUTLASS-style)",
    "drop_path": "residual + layer scale + drop path, float4 (timm)",
    "lion": "Lion optimizer step, float4",
    "bincount": "bincount into 1024 bins, a shared-memory histogram per block (PyTorch)",
    "jacobi9": "9-point Jacobi stencil, 32x32 shared tile with halo, 4 outputs per thread",
    "nms_mask": "NMS IoU mask, 64 boxes per block (torchvision)",
    "moe_top2": "MoE top-2 gating over 64 experts, a warp per token (vLLM)",
}

# The kernel bodies of each `--set` (scripts/gpu-autobounds.sh's OCCUPANCY_AUTOBOUNDS_SET), after
# kernels.cuh (which every set needs for Args).
SETS = {"corpus": [], "heldout": ["heldout.cuh"], "public": ["public.cuh"],
        "heldout2": ["heldout2.cuh"], "heldout3": ["heldout3.cuh"], "heldout4": ["heldout4.cuh"],
        "heldout5": ["heldout5.cuh"]}


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


def wrapper(kernel, kernel_set, tune_dir):
    """DIR/<kernel>.cu: the set's bodies and `<kernel>_auto`, bounded by the header tune writes."""
    path = os.path.join(tune_dir, f"{kernel}.cu")
    includes = "".join(f'#include "{os.path.join(HERE, name)}"\n'
                       for name in ["kernels.cuh"] + SETS[kernel_set])
    text = (f"// Generated by combine.py: `{kernel}` alone, its bound from the header `tune` writes.\n"
            '#include "occupancy_bounds.h"\n'
            "#define KERNEL_256(N)\n#define KERNEL_128(N)\n#define KERNEL_64(N)\n"
            f"{includes}"
            f'extern "C" __global__ void OCCUPANCY_BOUNDS_{kernel}_auto {kernel}_auto(Args a) '
            f"{{ {kernel}_body(a); }}\n")
    with open(path, "w") as handle:
        handle.write(text)
    return path


def tune(kernel, block, dynamic_smem, arch, command, tune_dir, cache_dir, kernel_set):
    """tune's JSON for `kernel` (each candidate compiled from its source at the bound)."""
    path = os.path.join(tune_dir, f"{kernel}.json")
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    source = wrapper(kernel, kernel_set, tune_dir)
    arguments = command + ["occupancy", "tune", source, "--kernel", f"{kernel}_auto", "--arch", arch,
                           "--block", str(block), "--dynamic-smem", str(dynamic_smem),
                           "--format", "json", "--cache-dir", cache_dir]
    print(f"combine: tune {kernel} ...", file=sys.stderr, flush=True)
    done = subprocess.run(arguments, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"combine: {' '.join(arguments)} failed:\n{done.stderr}")
    tuned = json.loads(done.stdout)
    if not tuned.get("compiled_per_bound"):
        sys.exit(f"combine: tune did not compile {kernel} at each bound: {source}")
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


def variant_of(chosen):
    """The variant a choice compiles to: `bB` for a minimum, `lb` for no bounds (`__launch_bounds__
    (BLOCK)`), `bare` for no `__launch_bounds__` at all."""
    if chosen == "none":
        return "lb"
    if chosen == "no_launch_bounds":
        return "bare"
    if isinstance(chosen, dict) and "min_blocks_per_sm" in chosen:
        return f"b{chosen['min_blocks_per_sm']}"
    sys.exit(f"combine: a choice autobounds.cu has no variant for: {chosen}")


def most_warps(kernel, usable, spills):
    """The most resident blocks among `lb` and the `bB` whose compile has no spill (fewest B)."""
    spill_free = [label for label in usable
                  if label != "bare" and spills.get(f"{kernel}_{label}", 0) == 0]
    return max(spill_free, key=lambda label: (int(usable[label]["blocks_per_sm"]),
                                               -int(usable[label]["min_blocks"])))


def judge(kernel, variants, tuned, spills):
    usable = {label: row for label, row in variants.items()
              if row["feasible"] == "1" and row["check"] == "ok"}
    time = {label: float(row["median_ms"]) for label, row in usable.items()}
    fastest = min(time, key=time.get)
    arch = tuned["archs"][0]
    auto = variant_of(arch["chosen"])
    warps = most_warps(kernel, usable, spills)
    result = OrderedDict(
        kernel=kernel,
        kind=KINDS.get(kernel, ""),
        block=int(usable["bare"]["block"]),
        fastest=fastest,
        fastest_ms=time[fastest],
        auto=auto,
        decided_by=arch["tuning"].get("decided_by", ""),
        auto_ms=time.get(auto),
        bare_ms=time["bare"],
        most_warps=warps,
        most_warps_ms=time[warps],
        variants={label: {"registers": int(row["registers"]),
                          "local_bytes": int(row["local_bytes"]),
                          "spill_bytes": spills.get(f"{kernel}_{label}", 0),
                          "blocks_per_sm": int(row["blocks_per_sm"]),
                          "median_ms": float(row["median_ms"])}
                  for label, row in usable.items()},
    )
    if result["auto_ms"] is None:
        sys.exit(f"combine: {kernel}: auto's choice {auto} was not measured (or not feasible, or its output differed)")
    chosen = next(c for c in arch["tuning"]["candidates"] if c["bound"] == arch["chosen"])
    shipped = usable[auto]
    if chosen.get("measured", {}).get("registers") != int(shipped["registers"]):
        print(f"combine: {kernel}: tune measured {chosen.get('measured', {}).get('registers')} registers "
              f"for {auto}, the run's compile has {shipped['registers']}", file=sys.stderr)
    result["auto_vs_fastest"] = result["auto_ms"] / result["fastest_ms"]
    result["auto_vs_bare"] = result["auto_ms"] / result["bare_ms"]
    result["bare_vs_fastest"] = result["bare_ms"] / result["fastest_ms"]
    result["most_warps_vs_fastest"] = result["most_warps_ms"] / result["fastest_ms"]
    return result


def label(variant, block):
    if variant == "bare":
        return "none"
    if variant == "lb":
        return f"({block})"
    return f"({block}, {variant[1:]})"


POLICIES = [("auto", "auto_vs_fastest"), ("never bound", "bare_vs_fastest"),
            ("most warps without spills", "most_warps_vs_fastest")]


def markdown(results, gpu):
    lines = [
        f"Measured on {gpu}; `(T, B)` is `__launch_bounds__(T, B)`, `(T)` `__launch_bounds__(T)`, "
        "`none` no launch bounds; times are medians, each column relative to the fastest variant. "
        "`rule`: what decided auto's choice.",
        "",
        "| kernel | kind | fastest | auto | rule | auto vs fastest | never bound vs fastest | "
        "most warps without spills | its time vs fastest | auto vs never bound |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        b = r["block"]
        lines.append(
            f"| `{r['kernel']}` | {r['kind']} | {label(r['fastest'], b)} {r['fastest_ms']:.3f} ms | "
            f"{label(r['auto'], b)} | {r['decided_by'].replace('_', ' ')} | {r['auto_vs_fastest']:.3f}x | "
            f"{r['bare_vs_fastest']:.3f}x | {label(r['most_warps'], b)} | "
            f"{r['most_warps_vs_fastest']:.3f}x | {r['auto_vs_bare']:.3f}x |")
    return "\n".join(lines)


def scores(results):
    """Per policy: kernels within 3% of the fastest, the worst and the geometric mean."""
    rows = []
    for name, key in POLICIES:
        ratios = [r[key] for r in results]
        near = sum(1 for ratio in ratios if ratio <= TOLERANCE)
        mean = math.exp(sum(math.log(ratio) for ratio in ratios) / len(ratios))
        rows.append((name, near, len(ratios), max(ratios), mean))
    return rows


def scores_markdown(results):
    lines = ["| policy | within 3% of the fastest | worst | geometric mean vs fastest |",
             "|---|---|---|---|"]
    for name, near, count, worst, mean in scores(results):
        lines.append(f"| {name} | {near} of {count} | {worst:.3f}x | {mean:.4f}x |")
    return "\n".join(lines)


def goal(results):
    near = [r for r in results if r["auto_vs_fastest"] <= TOLERANCE]
    slower = [r for r in results if r["auto_vs_bare"] > AGAINST_BARE]
    share = len(near) / len(results)
    means = {name: mean for name, _, _, _, mean in scores(results)}
    ahead = means["auto"] < min(means["never bound"], means["most warps without spills"])
    met = share >= SHARE and not slower and ahead
    text = (f"auto within {TOLERANCE - 1:.0%} of the fastest on {len(near)} of {len(results)} kernels "
            f"({share:.0%}; goal {SHARE:.0%}); more than {AGAINST_BARE - 1:.0%} slower than never "
            f"bounding on {len(slower)}{': ' + ', '.join(r['kernel'] for r in slower) if slower else ''} "
            f"(goal 0; worst {max(r['auto_vs_bare'] for r in results):.3f}x); geometric mean "
            f"{means['auto']:.4f}x against {means['never bound']:.4f}x (never bound) and "
            f"{means['most warps without spills']:.4f}x (most warps without spills): "
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
        bare = variants["bare"]
        tuned = tune(kernel, int(bare["block"]), int(bare["dynamic_smem"]), args.arch, command,
                     tune_dir, cache_dir, args.set)
        results.append(judge(kernel, variants, tuned, spills))
    first = next(iter(next(iter(kernels.values())).values()))
    table = markdown(results, f"{first['gpu']} ({first['arch']}, {first['sms']} SMs)")
    met, summary = goal(results)
    text = table + "\n\n" + scores_markdown(results) + "\n\n" + summary
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as handle:
            handle.write(text + "\n")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"kernels": results, "goal_met": met, "summary": summary}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
