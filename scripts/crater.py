#!/usr/bin/env python3
"""The crater of `cargo occupancy build`: public crates with CUDA kernels built as they are.

    source <(scripts/setup-cuda.sh --env)
    cargo build --release -p cargo-occupancy
    scripts/crater.py [--only NAME,...] [--work DIR] [--arch sm_90] [--tap]

Per crate (pinned from crates.io; their code is downloaded by cargo into the work directory,
never committed): a harness package depending on it, with the crate's features, is built
twice side by side into one fresh target directory:

1. `cargo build --release` (the plain build; its wall time);
2. `cargo occupancy build --json --arch ARCH -- --release` on the same target (cargo finds
   everything fresh, so its wall time is what the tool adds: reading OUT_DIRs and checking).

With `--tap`, a third build runs under `cargo occupancy build --tap` (the nvcc tap keeps
ptxas's text of each compile), and gets a row of its own, its binary rows also compared with
that text. `--embedded-ptx HARNESS:CRATE` compares a built crate's binary rows with a hand-run
`ptxas -v` on the PTX its library embeds (registers and spills).

Then every row is compared with an independent reading of the same file: a hand-run
`ptxas -arch=... -v` on a PTX module, `cuobjdump -res-usage` on a binary (registers, and the
spill columns where cuobjdump prints them). Prints one Markdown table row per crate (what
docs/crater.md keeps) and writes the JSON reports under the work directory. Nothing here runs
in CI: it downloads crates and takes its own time (see docs/crater.md for how long).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name, version, features, extra environment, what it exercises[, harness dependency lines
# [, (package, version) set in the harness's lockfile with `cargo update --precise`]].
CUDARC_12080 = 'cudarc = { version = "0.13", default-features = false, features = ["cuda-12080"] }'

CRATES = [
    ("cudarc", "=0.19.10", ["cuda-version-from-build-system"], {}, "negative control: CUDA bindings, no kernels"),
    ("candle-kernels", "=0.9.1", [], {}, "bindgen_cuda: PTX modules into OUT_DIR"),
    ("sppark", "=0.1.16", ["cuda"], {}, "cc CUDA mode, host-only code (0 kernels expected)"),
    ("risc0-sys", "=1.5.0", ["cuda"], {"NVCC_APPEND_FLAGS": "-arch=sm_90", "CUDA_LIBRARY_PATH": "{lib64_root}"}, "cc CUDA mode (--device-c, dlink) into a static library"),
    ("risc0-circuit-recursion-sys", "=4.0.3", ["cuda"], {"NVCC_APPEND_FLAGS": "-arch=sm_90", "CUDA_LIBRARY_PATH": "{lib64_root}"}, "risc0-build-kernel over cc: generated circuit kernels into a static library"),
    ("dfdx", "=0.13.0", ["cuda"], {}, "direct nvcc --ptx Command; asks nvidia-smi always"),
    ("candle-kernels", "=0.10.2", [], {}, "cudaforge: sm_90a PTX and a static library"),
    # Its build script is linked against the CUDA driver (cust, under rust-gpu-tools): a stub
    # libcuda.so whose every entry point answers an error stands in for the driver the wheels lack.
    ("bellperson", "=0.26.0", ["cuda"], {"EC_GPU_CUDA_NVCC_ARGS": "--fatbin --gpu-architecture=sm_90 --generate-code=arch=compute_90,code=sm_90", "LIBRARY_PATH": "{libcuda_stub}", "LD_LIBRARY_PATH": "{libcuda_stub}"}, "ec-gpu-gen: a generated fatbin"),
    ("openvm-cuda-backend", "=2.0.1", [], {}, "openvm-cuda-builder over cc (CUDA_ARCH)"),
    ("openvm-circuit-primitives", "=2.0.2", ["cuda"], {}, "openvm-cuda-builder over cc (CUDA_ARCH), with openvm-cuda-backend and openvm-cuda-common under it"),
    ("mistralrs-paged-attn", "=0.8.1", ["cuda"], {}, "cudaforge static library, sm_90a"),
    ("pasta-msm", "=0.1.5", [], {}, "sppark-based prover crate (cc, fixed archs)"),
    # cudaforge static library of quantized matmuls (Marlin, GPTQ, HQQ, FP8, ...), with
    # candle-kernels 0.10.2 under it; it lists CUDA 13.0 since 0.8.
    ("mistralrs-quant", "=0.8.1", ["cuda"], {}, "cudaforge static library, sm_90a (Marlin and other quantized kernels)"),
    # Its kernels include curand_kernel.h: the cuRAND wheel of CUDA 13.0, installed into the work
    # directory, is named to nvcc through NVCC_PREPEND_FLAGS (an include path, harmless to --ptx).
    # Both ask `candle-core = "0.*"`, which resolves to a candle their code no longer compiles
    # against (0.9 and later: cudarc's `device_ptr` takes a stream, `WrapErr` is gone): the
    # lockfile is set to candle-core 0.8.4 (`cargo update --precise`), the last before that.
    # Its cudarc 0.13 asks `nvcc --version` and knows no CUDA 13: the harness names its
    # `cuda-12080` feature, which cudarc's build script takes before asking nvcc. Host bindings
    # only (loaded at run time); no kernel is built by cudarc.
    ("candle-layer-norm", "=0.0.1", [], {"NVCC_PREPEND_FLAGS": "-I{curand_include}"}, "direct nvcc Command into a static library", [CUDARC_12080], [("candle-core", "0.8.4")]),
    ("candle-rotary", "=0.0.1", [], {}, "bindgen_cuda build_lib: a static library", [CUDARC_12080], [("candle-core", "0.8.4")]),
    # FlashAttention v1's forward kernels over the CUTLASS its package carries; same author, age
    # and candle pin as candle-layer-norm.
    ("candle-flash-attn-v1", "=0.0.1", [], {}, "direct nvcc Command (CUTLASS, `--ptxas-options=-v` thrown away) into a static library", [CUDARC_12080], [("candle-core", "0.8.4")]),
    # ec-gpu-gen's generated Poseidon kernels (the BLS12-381 and Pasta fields), one fatbin.
    # Its GPU code needs an arity: Filecoin's 2, 8 and 11.
    ("neptune", "=13.0.0", ["cuda", "arity2", "arity8", "arity11"], {"EC_GPU_CUDA_NVCC_ARGS": "--fatbin --gpu-architecture=sm_90 --generate-code=arch=compute_90,code=sm_90", "LIBRARY_PATH": "{libcuda_stub}", "LD_LIBRARY_PATH": "{libcuda_stub}"}, "ec-gpu-gen: a generated fatbin"),
    ("openvm-rv32im-circuit", "=2.0.2", ["cuda"], {}, "openvm-cuda-builder over cc (CUDA_ARCH): the RISC-V circuit's trace kernels"),
    ("whisper-rs-sys", "=0.15.0", ["cuda"], {"CMAKE_CUDA_ARCHITECTURES": "90-real", "WHISPER_DONT_GENERATE_BINDINGS": "1"}, "cmake-rs (ggml-cuda)"),
    ("llama-cpp-sys-2", "=0.1.161", ["cuda"], {"CMAKE_CUDA_ARCHITECTURES": "90-real", "GGML_CUDA_FA": "OFF"}, "cmake-rs (ggml-cuda)"),
]


def lib64_root(work):
    """A directory whose `lib64` is the toolkit's libraries: what find_cuda_helper (cust_raw,
    under risc0) looks for under CUDA_LIBRARY_PATH; the wheels install them in `lib`."""
    root = Path(work) / "cuda-lib64-root"
    root.mkdir(exist_ok=True)
    link = root / "lib64"
    if not link.exists():
        link.symlink_to(Path(os.environ["CUDA_HOME"]) / "lib")
    return str(root)


def libcuda_stub(work):
    """A directory holding a `libcuda.so` (and `.so.1`) that defines every driver entry point
    of the toolkit's `cuda.h` as a function answering CUDA_ERROR_UNKNOWN (999): enough to link
    and start a build script that never talks to a GPU. A full toolkit ships one in lib64/stubs;
    the wheels do not."""
    root = Path(work) / "libcuda-stub"
    if (root / "libcuda.so").exists():
        return str(root)
    root.mkdir(exist_ok=True)
    header = Path(os.environ["CUDA_HOME"]) / "include" / "cuda.h"
    expanded = subprocess.run(["gcc", "-E", "-P", "-x", "c", str(header)], capture_output=True, text=True, check=True).stdout
    names = sorted(set(re.findall(r"\b(cu[A-Z][A-Za-z0-9_]*)\s*\(", expanded)))
    (root / "stub.c").write_text("".join(f"int {n}(void) {{ return 999; }}\n" for n in names))
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(root / "libcuda.so.1"), str(root / "stub.c")], check=True)
    (root / "libcuda.so").symlink_to("libcuda.so.1")
    return str(root)


def curand_include(work):
    """cuRAND's headers for CUDA 13.0 (the toolkit's own wheels do not carry them)."""
    root = Path(work) / "curand"
    include = root / "nvidia" / "cu13" / "include"
    if not (include / "curand_kernel.h").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(root), "nvidia-curand==10.4.0.35"], check=True)
    return str(include)


PREPARED = {"{lib64_root}": lib64_root, "{libcuda_stub}": libcuda_stub, "{curand_include}": curand_include}


def prepared(value, work):
    for placeholder, make in PREPARED.items():
        if placeholder in value:
            value = value.replace(placeholder, make(work))
    return value


def run(command, env, cwd, log):
    started = time.monotonic()
    with open(log, "wb") as out:
        status = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=out)
    return status, time.monotonic() - started


def harness(work, name, version, features, pins=()):
    package = work / f"harness-{name}-{version.strip('=')}"
    (package / "src").mkdir(parents=True, exist_ok=True)
    feats = ", ".join(f'"{f}"' for f in features)
    (package / "Cargo.toml").write_text(
        f'[package]\nname = "harness"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
        f'[workspace]\n\n[dependencies]\n"{name}" = {{ version = "{version}", features = [{feats}] }}\n'
        + "".join(f"{pin}\n" for pin in pins)
    )
    (package / "src" / "lib.rs").write_text("")
    return package


def assembled_facts(row):
    """What ptxas's text says of a row's kernel, as the report gives it."""
    return {k: row[k] for k in ("registers", "spill_store_bytes", "spill_load_bytes")}


def ptxas_facts(ptx, arch):
    ptxas = Path(os.environ["CUDA_HOME"]) / "bin" / "ptxas"
    out = subprocess.run([str(ptxas), f"-arch={arch}", "-v", str(ptx), "-o", "/dev/null"],
                         capture_output=True, text=True)
    return {name: facts for (name, _), facts in ptxas_text_facts(out.stderr).items()}


def ptxas_text_facts(text):
    """Registers and spills per (entry, arch) of a `ptxas -v` text."""
    facts, key, properties_of = {}, None, None
    for line in text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(\w+)'", line)
        if m:
            key = (m.group(1), m.group(2))
            facts[key] = {"spill_store_bytes": 0, "spill_load_bytes": 0}
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            properties_of = m.group(1)
        # A callee's properties (printed among an entry's lines with -rdc) are not the entry's.
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and key and properties_of == key[0]:
            facts[key]["spill_store_bytes"] = int(m.group(1))
            facts[key]["spill_load_bytes"] = int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and key:
            facts[key]["registers"] = int(m.group(1))
    return facts


def tap_differences(report, package):
    """Binary rows against the ptxas text the nvcc tap kept beside the objects (`*.ptxas` in
    each OUT_DIR): registers and spills, where a report names the row's kernel on its arch."""
    said = {}
    for text in sorted((package / "target").glob("release/build/*/out/**/*.ptxas")):
        said.update(ptxas_text_facts(text.read_text(errors="replace")))
    diffs, compared = [], 0
    for row in report.get("kernels", []):
        path = row.get("source", {}).get("path", "")
        if not row.get("entry") or path.endswith(".ptx") or "assembled for" in path:
            continue
        want = said.get((row["name"], row["arch"]))
        if want is None:
            continue
        got = assembled_facts(row)
        compared += 1
        if want != got:
            diffs.append((row["name"], row["arch"], want, got))
    return compared, diffs


def cuobjdump_facts(binary):
    cuobjdump = Path(os.environ["CUDA_HOME"]) / "bin" / "cuobjdump"
    out = subprocess.run([str(cuobjdump), "-res-usage", str(binary)], capture_output=True, text=True)
    facts, name = {}, None
    for line in out.stdout.splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+)", line)
        if m and name:
            facts.setdefault(name, set()).add(int(m.group(1)))
    return facts


def embedded_ptx_facts(binary, arch):
    """ptxas's facts for `arch` of every PTX module `cuobjdump -xptx all` takes out of `binary`."""
    import tempfile
    cuobjdump = Path(os.environ["CUDA_HOME"]) / "bin" / "cuobjdump"
    facts = {}
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([str(cuobjdump), "-xptx", "all", str(Path(binary).resolve())], cwd=work,
                       capture_output=True)
        for ptx in sorted(Path(work).glob("*.ptx")):
            facts.update(ptxas_facts(ptx, arch))
    return facts


def differences(report, cwd, arch):
    """Rows whose registers (and spills, for PTX) differ from the independent reading."""
    diffs, compared, cache = [], 0, {}
    for row in report.get("kernels", []):
        if not row.get("entry"):
            continue
        path = row.get("source", {}).get("path", "")
        file = path.split("(")[0].split(" ")[0]
        file = Path(file) if Path(file).is_absolute() else Path(cwd) / file
        if path.endswith(".ptx") or file.suffix == ".ptx":
            target = row.get("ptx_target") or arch
            key = (file, row["arch"])
            if key not in cache:
                text = file.read_text(errors="replace")
                m = re.search(r"^\s*\.target\s+(\w+)", text, re.M)
                assemble = m.group(1) if m and m.group(1).endswith("a") else row["arch"]
                cache[key] = ptxas_facts(file, assemble)
            want = cache[key].get(row["name"])
            got = assembled_facts(row)
            compared += 1
            if want != got:
                diffs.append((row["name"], row["arch"], want, got))
        elif "assembled for" in path and file.exists():
            # Embedded PTX the driver would JIT for this arch: the PTX taken out with
            # `cuobjdump -xptx`, assembled by hand for the row's arch.
            key = (file, "ptx", row["arch"])
            if key not in cache:
                cache[key] = embedded_ptx_facts(file, row["arch"])
            want = cache[key].get(row["name"])
            got = assembled_facts(row)
            compared += 1
            if want != got:
                diffs.append((row["name"], row["arch"], want, got))
        elif file.exists():
            if file not in cache:
                cache[file] = cuobjdump_facts(file)
            want = cache[file].get(row["name"], set())
            compared += 1
            if row["registers"] not in want:
                diffs.append((row["name"], row["arch"], sorted(want), row["registers"]))
    return compared, diffs


def crater_one(args, entry, tool):
    name, version, features, extra, what = entry[:5]
    pins = entry[5] if len(entry) > 5 else ()
    package = harness(Path(args.work), name, version, features, pins)
    for locked, precise in (entry[6] if len(entry) > 6 else ()):
        subprocess.run(["cargo", "generate-lockfile"], cwd=package, check=True, capture_output=True)
        subprocess.run(["cargo", "update", "-p", locked, "--precise", precise], cwd=package, check=True, capture_output=True)
    target = package / "target"
    shutil.rmtree(target, ignore_errors=True)
    extra = {k: prepared(v, args.work) for k, v in extra.items()}
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), **extra)
    # The tool runs as a user would run it: it sets what the builders need itself.
    tool_env = dict(env)
    # The plain build gets what `cargo occupancy build --arch` gives the builders (the same
    # code is built twice): the arch variables, CUDA_PATH for a wheel-installed toolkit, and
    # an nvidia-smi that answers the compute capability on a machine without a GPU.
    number = args.arch.removeprefix("sm_").rstrip("a")
    env.setdefault("CUDA_COMPUTE_CAP", number)
    env.setdefault("CUDA_ARCH", number)
    env.setdefault("CUDAARCHS", number)
    env.setdefault("CMAKE_CUDA_ARCHITECTURES", number)
    if "CUDA_HOME" in env and not any(k in env for k in ("CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR")):
        env["CUDA_PATH"] = env["CUDA_HOME"]
    if shutil.which("nvidia-smi") is None:
        shim = Path(args.work) / "nvidia-smi-shim"
        shim.mkdir(exist_ok=True)
        cap = f"{int(number) // 10}.{int(number) % 10}"
        (shim / "nvidia-smi").write_text(
            "#!/bin/sh\ncase \"$*\" in *compute_cap*) case \"$*\" in *noheader*) ;; *) echo compute_cap;; esac\n"
            f"echo {cap}; exit 0;; esac\nexit 9\n")
        (shim / "nvidia-smi").chmod(0o755)
        env["PATH"] = f"{shim}:{env['PATH']}"
    plain_env = env
    plain, plain_s = run(["cargo", "build", "--release"], plain_env, package, package / "plain.log")
    if plain.returncode != 0:
        return f"| {name} {version} | {what} | not built: plain `cargo build --release` failed (see {package}/plain.log) | | | | |"
    line = checked_row(name, version, what, tool, ["--json"], tool_env, package, args.arch, "", plain_s)
    if args.tap:
        # A third build under the nvcc tap: cc's `rerun-if-env-changed=NVCC` reruns the build
        # scripts, so the time is a rebuild of the CUDA crates with each compile done twice.
        line += "\n" + checked_row(name, version, what + " (under `--tap`)", tool, ["--tap", "--json"], tool_env, package, args.arch, "-tap", plain_s)
    return line


def checked_row(name, version, what, tool, flags, tool_env, package, arch, suffix, plain_s):
    """`cargo occupancy build FLAGS` on the built harness, its rows compared, as a table row."""
    checked, tool_s = run([str(tool), "occupancy", "build", *flags, "--arch", arch, "--", "--release"],
                          tool_env, package, package / f"occupancy{suffix}.log")
    (package / f"report{suffix}.json").write_bytes(checked.stdout)
    try:
        report = json.loads(checked.stdout or b"{}")
    except json.JSONDecodeError:
        report = {}
    rows = [r for r in report.get("kernels", []) if r.get("entry")]
    kernels = {r["name"] for r in rows}
    archs = sorted({r["arch"] for r in rows})
    findings = {}
    for f in report.get("findings", []):
        findings[f"{f['lint']}:{f['level']}"] = findings.get(f"{f['lint']}:{f['level']}", 0) + 1
    compared, diffs = differences(report, package, arch)
    if diffs:
        (package / f"diffs{suffix}.json").write_text(json.dumps(diffs, indent=1, default=list))
    differing = f"{len(diffs)} of {compared}"
    if "--tap" in flags:
        tap_compared, tap_diffs = tap_differences(report, package)
        if tap_diffs:
            (package / "diffs-tap-text.json").write_text(json.dumps(tap_diffs, indent=1, default=list))
        differing += f"; registers and spills against the tap's ptxas text: {len(tap_diffs)} of {tap_compared}"
    said = " ".join(f"{k}×{v}" for k, v in sorted(findings.items())) or "none"
    return (f"| {name} {version} | {what} | exit {checked.returncode} | {len(kernels)} × {', '.join(archs) or '-'} "
            f"| {differing} | {said} | {plain_s:.0f} s + {tool_s:.1f} s ({100 * tool_s / plain_s:.1f}%) |")


def embedded_ptx_check(harness, crate, arch):
    """The binary rows of `crate` in a built harness's report against a hand-run `ptxas -v` on
    the PTX its library embeds: registers and spills, where `cuobjdump -res-usage` gives only
    registers. For a library built with PTX beside its SASS (`-arch=sm_XY`)."""
    package = Path(harness)
    report = json.loads((package / "report.json").read_text())
    rows = [r for r in report["kernels"] if r.get("entry") and r.get("crate") == crate]
    libraries = sorted({r["source"]["path"].split("(")[0] for r in rows})
    said = {}
    for library in libraries:
        said.update(embedded_ptx_facts(package / library, arch))
    diffs = [r["name"] for r in rows
             if said.get(r["name"]) != assembled_facts(r)]
    spilling = sum(1 for r in rows if r["spill_store_bytes"] or r["spill_load_bytes"])
    print(f"{crate}: {len(diffs)} of {len(rows)} rows ({spilling} that spill) differ from a hand-run "
          f"`ptxas -arch={arch} -v` on the PTX embedded in {', '.join(libraries)}")
    for name in diffs[:10]:
        print(f"  {name}: {said.get(name)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated crate names")
    parser.add_argument("--work", default=str(ROOT / "target" / "crater"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--tap", action="store_true",
                        help="also build each crate again under `cargo occupancy build --tap`")
    parser.add_argument("--tool", default=str(ROOT / "target" / "release" / "cargo-occupancy"),
                        help="the cargo-occupancy binary (default: the release build)")
    parser.add_argument("--embedded-ptx", metavar="HARNESS:CRATE",
                        help="compare a built harness's binary rows of CRATE with its embedded PTX, hand-assembled")
    args = parser.parse_args()
    if args.embedded_ptx:
        harness, crate = args.embedded_ptx.rsplit(":", 1)
        return embedded_ptx_check(harness, crate, args.arch)
    tool = Path(args.tool)
    if not tool.exists():
        sys.exit(f"{tool} does not exist: cargo build --release -p cargo-occupancy")
    Path(args.work).mkdir(parents=True, exist_ok=True)
    print("| crate | builder | `cargo occupancy build` | kernels × archs | rows ≠ independent reading | findings | plain build + tool (added) |")
    print("|---|---|---|---|---|---|---|")
    only = set(args.only.split(",")) if args.only else None
    for entry in CRATES:
        if only is None or entry[0] in only or f"{entry[0]}{entry[1]}" in only:
            print(crater_one(args, entry, tool), flush=True)


if __name__ == "__main__":
    main()
