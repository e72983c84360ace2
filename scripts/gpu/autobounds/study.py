#!/usr/bin/env python3
"""What other objectives would have chosen on the timed sets (branch auto-bounds-6, issue #34).

    python3 scripts/gpu/autobounds/study.py [--sets corpus,heldout,...] [--kernels]

No GPU and no compile: it reads each set's recorded timings (raw.csv, ptxas.log) and the ladder
`tune` measured for each kernel (the tune JSON under `rescored-37c2d64/tune`, else `tune/`), replays
the objective of occupancy-core/src/tune/objective.rs on those facts in Python, and scores the
choice of each variant below against the timings with combine.py's three policies. The replay of
the current objective must choose what tune chose for every kernel (it stops otherwise), so a
variant's score differs from the current one by its rule alone.

The H100 sets (docs/verification/h100-sm90/autobounds{,-heldout}) ran the same compiles as the
H200's `corpus` and `heldout` (every variant's registers and local memory equal), so their
timings are scored with those sets' ladders.

Variants (each one change to the current objective):
  current            the objective as committed;
  spills_outside     a bound whose spills add no spill instruction inside a loop is not refused
                     for its spill bytes: its spill instructions count as instructions where they
                     sit (the loop-growth rule prices them), as if the declaration accepted them;
  loopless_1pct      the same, but only in a kernel without loops and only while its spill
                     instructions are at most 1% of its instructions;
  loop_spill_1/3     a bound with at most 1 (3) more spill instructions in loops than without
                     bounds, and at most 64 spill bytes, is not refused for its spills;
  no_latency_model   the latency model never overrides the warps;
  no_shorter_loop    the same-warps-shorter-loop rule is off.
"""

import argparse
import json
import math
import os
import sys
from collections import OrderedDict

sys.dont_write_bytecode = True  # no __pycache__ beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import combine  # noqa: E402

DOCS = os.path.join(combine.ROOT, "docs", "verification")
# (name shown, timings directory, the set its kernels and ladders come from)
SETS = [
    ("corpus", "h200-sm90/autobounds-corpus", "corpus"),
    ("heldout", "h200-sm90/autobounds-heldout", "heldout"),
    ("public", "h200-sm90/autobounds-public", "public"),
    ("heldout2", "h200-sm90/autobounds-heldout2", "heldout2"),
    ("heldout3", "h200-sm90/autobounds-heldout3", "heldout3"),
    ("heldout4", "h200-sm90/autobounds-heldout4", "heldout4"),
    ("heldout5", "h200-sm90/autobounds-heldout5", "heldout5"),
    ("corpus-h100", "h100-sm90/autobounds", "corpus"),
    ("heldout-h100", "h100-sm90/autobounds-heldout", "heldout"),
]
LADDERS = {name: path for name, path, _ in SETS[:7]}

LOOP_GROWTH_PERCENT = 5
PREDICTED_GAIN_PERCENT = 20
MEMORY_LATENCY_CYCLES, SHORT_LATENCY_CYCLES, ISSUE_PER_CYCLE = 500, 30, 4
PASSES = {"admissible", "no_gain", "fewer_warps", "predicted_slower"}


def weighed(m):
    return m["loops"]["instructions"] if m["loops"]["loops"] == 0 else m["loops"]["loop_instructions"]


def predicted(m):
    loops = m["loops"]
    if not loops["control_known"] or m["warps_per_sm"] == 0 or loops["loops"] == 0:
        return None
    wait = (loops["stall_cycles"] + MEMORY_LATENCY_CYCLES * loops["memory_waits"]
            + SHORT_LATENCY_CYCLES * loops["short_waits"])
    return max(wait / m["warps_per_sm"], weighed(m) / ISSUE_PER_CYCLE)


def spill_bytes(m):
    return m["spill_load_bytes"] + m["spill_store_bytes"]


def grew(after, before, percent):
    return after * 100 > before * (100 + percent)


def verdict(candidate, base, variant):
    if candidate["bound"] == "none":
        return "baseline"
    m = candidate.get("measured")
    if not m:
        return "failed"
    if candidate.get("refused_spill_bytes") is not None:
        return "compiled_differently"
    accept = variant.get("accept_spills")
    if not (accept and accept(m, base)):
        if m["spill_instructions_in_loops"] > base["spill_instructions_in_loops"]:
            return "spills_in_loops"
        if spill_bytes(m) > spill_bytes(base):
            return "spill_bytes"
    if grew(weighed(m), weighed(base), LOOP_GROWTH_PERCENT):
        return "loop_growth"
    if base["loops"]["loops"] > 0 and grew(m["loops"]["loop_memory_instructions"],
                                           base["loops"]["loop_memory_instructions"], LOOP_GROWTH_PERCENT):
        return "memory_growth"
    if m["warps_per_sm"] > base["warps_per_sm"]:
        cycles, without = predicted(m), predicted(base)
        if variant.get("model", True) and cycles is not None and without and cycles > without:
            return "predicted_slower"
        return "admissible"
    return "no_gain" if m["warps_per_sm"] == base["warps_per_sm"] else "fewer_warps"


def choose(candidates, variant):
    """objective::choose for one arch: (bound, rule)."""
    base = candidates[0]["measured"]
    verdicts = [verdict(candidate, base, variant) for candidate in candidates]
    within = [v == "baseline" or v in PASSES for v in verdicts]
    best = None
    for rung in range(1, len(candidates)):
        if verdicts[rung] == "admissible":
            m = candidates[rung]["measured"]
            if best is None or (m["occupancy"], m["warps_per_sm"]) > best[1]:
                best = (rung, (m["occupancy"], m["warps_per_sm"]))
    chosen, rule = (best[0], "most_warps") if best else (0, "no_bound")
    against = predicted(candidates[chosen]["measured"])
    if variant.get("model", True) and against is not None:
        ratios = [(predicted(candidates[rung]["measured"]) / against, rung)
                  for rung in range(len(candidates))
                  if rung != chosen and within[rung] and predicted(candidates[rung]["measured"]) is not None]
        if ratios and min(ratios)[0] <= 1 - PREDICTED_GAIN_PERCENT / 100:
            chosen, rule = min(ratios)[1], "latency_model"
    if variant.get("shorter", True):
        that = candidates[chosen]["measured"]
        shorter = []
        for rung in range(len(candidates)):
            m = candidates[rung].get("measured")
            if rung == chosen or not within[rung] or not m:
                continue
            if (weighed(m) < weighed(that) and weighed(m) * 100 <= weighed(that) * (100 - LOOP_GROWTH_PERCENT)
                    and m["warps_per_sm"] == that["warps_per_sm"]
                    and m["loops"]["loop_memory_instructions"] <= that["loops"]["loop_memory_instructions"]):
                shorter.append((weighed(m), rung))
        if shorter:
            chosen, rule = min(shorter)[1], "shorter_loop"
    return candidates[chosen]["bound"], rule


def no_loop_spill(m, base):
    return m["spill_instructions_in_loops"] <= base["spill_instructions_in_loops"]


VARIANTS = OrderedDict([
    ("current", {}),
    ("spills_outside", {"accept_spills": no_loop_spill}),
    ("loopless_1pct", {"accept_spills": lambda m, b: no_loop_spill(m, b) and m["loops"]["loops"] == 0
                       and m["spill_instructions"] * 100 <= m["loops"]["instructions"]}),
    ("loop_spill_1", {"accept_spills": lambda m, b: m["spill_instructions_in_loops"]
                      - b["spill_instructions_in_loops"] <= 1 and spill_bytes(m) <= 64}),
    ("loop_spill_3", {"accept_spills": lambda m, b: m["spill_instructions_in_loops"]
                      - b["spill_instructions_in_loops"] <= 3 and spill_bytes(m) <= 64}),
    ("no_latency_model", {"model": False}),
    ("no_shorter_loop", {"shorter": False}),
])


def ladders_dir(kernel_set):
    base = os.path.join(DOCS, LADDERS[kernel_set])
    rescored = os.path.join(base, "rescored-37c2d64", "tune")
    return rescored if os.path.isdir(rescored) else os.path.join(base, "tune")


def load(names):
    sets = OrderedDict()
    for name, path, kernel_set in SETS:
        if name not in names:
            continue
        raw = combine.read_raw(os.path.join(DOCS, path, "raw.csv"))
        spills = combine.read_spills(os.path.join(DOCS, path, "ptxas.log"))
        kernels = []
        for kernel, variants in raw.items():
            with open(os.path.join(ladders_dir(kernel_set), f"{kernel}.json")) as handle:
                tuned = json.load(handle)
            kernels.append((kernel, variants, tuned))
        sets[name] = (kernels, spills)
    return sets


def score(sets, variant):
    scored = OrderedDict()
    for name, (kernels, spills) in sets.items():
        rows = []
        for kernel, variants, tuned in kernels:
            arch = tuned["archs"][0]
            bound, rule = choose(arch["tuning"]["candidates"], variant)
            if variant is VARIANTS["current"] and bound != arch["chosen"]:
                sys.exit(f"study: the replay chose {bound} for {name}/{kernel}, tune chose {arch['chosen']}")
            usable = {label: row for label, row in variants.items()
                      if row["feasible"] == "1" and row["check"] == "ok"}
            time = {label: float(row["median_ms"]) for label, row in usable.items()}
            fastest = min(time.values())
            auto = combine.variant_of(bound)
            warps = combine.most_warps(kernel, usable, spills)
            rows.append(dict(kernel=kernel, auto=auto, rule=rule, auto_vs_fastest=time[auto] / fastest,
                             bare_vs_fastest=time["bare"] / fastest,
                             most_warps_vs_fastest=time[warps] / fastest, auto_vs_bare=time[auto] / time["bare"]))
        scored[name] = rows
    return scored


def mean(values):
    return math.exp(sum(math.log(value) for value in values) / len(values))


def line(name, rows):
    near = sum(r["auto_vs_fastest"] <= combine.TOLERANCE for r in rows)
    slower = [r["kernel"] for r in rows if r["auto_vs_bare"] > combine.AGAINST_BARE]
    return (f"| {name} | {len(rows)} | {near} | {sum(r['bare_vs_fastest'] <= combine.TOLERANCE for r in rows)} | "
            f"{sum(r['most_warps_vs_fastest'] <= combine.TOLERANCE for r in rows)} | "
            f"{mean([r['auto_vs_fastest'] for r in rows]):.4f} / {mean([r['bare_vs_fastest'] for r in rows]):.4f} / "
            f"{mean([r['most_warps_vs_fastest'] for r in rows]):.4f} | "
            f"{max(r['auto_vs_bare'] for r in rows):.3f}x{' (' + ', '.join(slower) + ')' if slower else ''} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(name for name, _, _ in SETS))
    parser.add_argument("--kernels", action="store_true", help="list each choice that differs from the current one")
    args = parser.parse_args()
    sets = load(args.sets.split(","))
    current = score(sets, VARIANTS["current"])
    for name, variant in VARIANTS.items():
        scored = current if name == "current" else score(sets, variant)
        print(f"\n{name}\n")
        print("| set | kernels | auto within 3% | never bound within 3% | most warps within 3% | "
              "geometric mean: auto / never bound / most warps | auto vs never bound, worst (over 2%) |")
        print("|---|---|---|---|---|---|---|")
        everything = []
        for set_name, rows in scored.items():
            print(line(set_name, rows))
            if not set_name.endswith("-h100"):
                everything += rows
        print(line("all H200", everything))
        if args.kernels and name != "current":
            for set_name, rows in scored.items():
                for row, was in zip(rows, current[set_name]):
                    if row["auto"] != was["auto"]:
                        print(f"  {set_name}/{row['kernel']}: {was['auto']} {was['auto_vs_fastest']:.3f}x -> "
                              f"{row['auto']} {row['auto_vs_fastest']:.3f}x ({row['rule']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
