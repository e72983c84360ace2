#!/usr/bin/env python3
"""The hostile pass of issue #35: runs the release `cargo-occupancy` on hostile inputs and
classifies every outcome into the issue's columns.

    source <(scripts/setup-cuda.sh --env)            # nvcc, cuobjdump, nvdisasm
    cargo build --release -p cargo-occupancy
    python3 scripts/hostile-pass.py                  # all areas; -a AREA to pick, -l to list

Everything is made in a private temporary directory (mode 0700, removed at the end unless
--keep): small kernels compiled by nvcc into cubins, fatbins, objects, static and shared
libraries and wheels, then truncated, bit-flipped and given damaged headers; links, FIFOs,
private device nodes (mknod in that directory, only ever read), unreadable files, huge sparse
files, odd names; runs at once on one cache; a bad environment; packages whose build scripts
leave such files in OUT_DIR. No system path is written.

Each attempt runs with a wall-clock limit (--timeout) and an address-space limit (--mem-mb,
setrlimit(RLIMIT_AS)) and is classified:

* panic: exit 101, "panicked" on stderr, or death by a signal other than our kill;
* hang or unbounded read: past the time limit, or out of the address-space limit;
* fail-open: exit 0 on an input with a part that cannot be read or checked, or exit 0 with
  fewer kernel rows than the undamaged file (a kernel dropped without a word);
* data loss: an input file not byte-identical afterwards, a lock that lost entries;
* unclear error: an error that names the private TMPDIR's scratch paths, speaks of "the
  compiler's output" for a prebuilt binary, does not name the file at fault, is empty, or has
  the CLI's message defects (no `error:`, an empty quote, a repeated word).

Unreadable files are tested as root too: the attempt runs in a private user namespace
(`unshare -U`), where root's files are not ours to override, so mode 000 means unreadable.
The process exits 1 when any column but attempts is non-zero; `--json FILE` writes every
attempt's outcome.
"""

import argparse
import hashlib
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLUMNS = ["panics", "hangs", "fail_open", "data_loss", "unclear"]

KERNEL = open(os.path.join(ROOT, "occupancy-binary/src/fuzz_corpus/k.cu")).read()
SECOND = (
    'extern "C" __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n'
    'extern "C" __global__ void shift(float* x) { x[threadIdx.x] += 1.0f; }\n'
)
CLUSTERS = open(os.path.join(ROOT, "cargo-occupancy/tests/fixtures/clusters.cu")).read()


def sh(cmd, cwd, **kw):
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, **kw)


class Case:
    def __init__(self, area, name, args, **kw):
        self.area = area
        self.name = name
        self.args = args  # after `cargo-occupancy occupancy`
        self.cwd = kw.get("cwd")
        self.env = kw.get("env", {})
        self.unset = kw.get("unset", [])
        # "fail": must exit non-zero; "any": any exit; ("rows", N, rc_ok): exit 0/1 needs N rows
        self.expect = kw.get("expect", "fail")
        self.inputs = kw.get("inputs", [])  # paths that must be byte-identical afterwards
        self.names = kw.get("names", [])  # an error must name one of these
        self.unpriv = kw.get("unpriv", False)
        self.setup = kw.get("setup")
        self.check = kw.get("check")  # extra check: fn(case, result) -> [(column, why)]
        self.timeout = kw.get("timeout")
        self.stdin = kw.get("stdin")
        self.binary_input = kw.get("binary_input", False)
        self.scratch_ok = kw.get("scratch_ok", [])  # paths under TMPDIR the message may name
        self.parallel = kw.get("parallel", 1)
        self.serial = kw.get("serial", False)  # shares a crate's OUT_DIR: one at a time


def digest(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return ("link", os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return ("dir", tuple(sorted((n, digest(os.path.join(path, n))) for n in os.listdir(path))))
    if not stat.S_ISREG(st.st_mode):
        return ("node", stat.S_IFMT(st.st_mode))
    if st.st_size > 1 << 30:
        return ("big", st.st_size, st.st_blocks)
    if st.st_mode & 0o444 == 0:
        os.chmod(path, st.st_mode | 0o400)
        try:
            with open(path, "rb") as f:
                h = hashlib.sha256(f.read()).hexdigest()
        finally:
            os.chmod(path, st.st_mode)
        return ("file", h)
    with open(path, "rb") as f:
        return ("file", hashlib.sha256(f.read()).hexdigest())


class Pass:
    def __init__(self, args):
        self.opts = args
        self.bin = os.path.abspath(args.bin)
        self.work = tempfile.mkdtemp(prefix="occupancy-hostile-")
        os.chmod(self.work, 0o700)
        self.tmp = os.path.join(self.work, "tmp")  # the tool's TMPDIR
        self.cache = os.path.join(self.work, "cache")
        os.makedirs(self.tmp, mode=0o700)
        self.cases = []
        self.counter = 0
        self.lock = threading.Lock()
        self.serial_lock = threading.Lock()

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def fresh(self, name):
        """A directory of one attempt's own."""
        with self.lock:
            self.counter += 1
            n = self.counter
        d = self.path("cases", f"{n:04d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:60]}")
        os.makedirs(d)
        return d

    # ---- artefacts -------------------------------------------------------------------------

    def build_artefacts(self):
        a = self.path("art")
        os.makedirs(a)
        with open(os.path.join(a, "k.cu"), "w") as f:
            f.write(KERNEL)
        with open(os.path.join(a, "s.cu"), "w") as f:
            f.write(SECOND)
        with open(os.path.join(a, "clusters.cu"), "w") as f:
            f.write(CLUSTERS)
        env = dict(os.environ, TMPDIR=self.tmp)
        nv = lambda *c: sh(["nvcc", *c], a, env=env)
        nv("-cubin", "-arch=sm_90", "-maxrregcount=32", "-o", "k.sm_90.cubin", "k.cu")
        nv("-cubin", "-arch=sm_80", "-o", "s.sm_80.cubin", "s.cu")
        nv("-cubin", "-arch=sm_90", "-o", "clusters.sm_90.cubin", "clusters.cu")
        nv("-fatbin", "-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-o", "k.fatbin", "k.cu")
        nv("-fatbin", "-gencode", "arch=compute_80,code=compute_80", "-o", "s.ptxonly.fatbin", "s.cu")
        nv("-c", "-gencode", "arch=compute_90,code=sm_90", "-o", "k.o", "k.cu")
        nv("-c", "-gencode", "arch=compute_80,code=[sm_80,compute_80]", "-o", "s.o", "s.cu")
        nv("-ptx", "-arch=sm_80", "-o", "s.ptx", "s.cu")
        nv("-ptx", "-arch=sm_90", "-o", "k.ptx", "k.cu")
        nv("-shared", "-Xcompiler", "-fPIC", "-gencode", "arch=compute_80,code=sm_80", "-o", "libs.so", "s.cu")
        sh(["ar", "rcs", "libk.a", "k.o", "s.o"], a)
        sh(["ar", "rcsT", "libthin.a", "k.o"], a)
        with zipfile.ZipFile(os.path.join(a, "k-1.0-py3-none-linux_x86_64.whl"), "w", zipfile.ZIP_DEFLATED) as w:
            w.write(os.path.join(a, "libk.a"), "k/lib/libk.a")
            w.write(os.path.join(a, "k.fatbin"), "k/lib/k.fatbin")
            w.write(os.path.join(a, "s.ptx"), "k/lib/s.ptx")
            w.writestr("k/__init__.py", "")
        self.art = a
        self.binaries = [
            "k.sm_90.cubin", "s.sm_80.cubin", "clusters.sm_90.cubin", "k.fatbin",
            "s.ptxonly.fatbin", "k.o", "libk.a", "libs.so", "k-1.0-py3-none-linux_x86_64.whl",
        ]

    def run_raw(self, argv, cwd, env, timeout, stdin=None, unpriv=False):
        full = [self.bin, "occupancy", *argv]
        if unpriv:
            full = ["unshare", "-U", "--", *full]
        limit = self.opts.mem_mb << 20

        def limits():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        started = time.time()
        p = subprocess.Popen(
            full, cwd=cwd, env=env, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=limits,
        )
        try:
            out, err = p.communicate(input=stdin, timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, err = p.communicate()
            timed_out = True
        return {
            "rc": p.returncode, "stdout": out, "stderr": err.decode("utf-8", "replace"),
            "timed_out": timed_out, "seconds": round(time.time() - started, 2),
        }

    def env_for(self, case, cache=True):
        env = dict(os.environ)
        env["TMPDIR"] = self.tmp
        env["XDG_CACHE_HOME"] = self.path("xdg")
        env["RUST_BACKTRACE"] = "0"
        env["CARGO_TARGET_DIR"] = self.path("crate-target")
        env["CARGO_NET_OFFLINE"] = "true"
        env.pop("CARGO_HOME", None) if False else None
        for k in case.unset:
            env.pop(k, None)
        env.update(case.env)
        return env

    # ---- classification --------------------------------------------------------------------

    def classify(self, case, r, before):
        found = []
        err = r["stderr"]
        rc = r["rc"]
        if r["timed_out"]:
            found.append(("hangs", f"did not finish within {case.timeout or self.opts.timeout} s"))
        elif "memory allocation of" in err or (rc is not None and rc < 0 and "alloc" in err):
            found.append(("hangs", "ran out of the address-space limit (an unbounded read)"))
        elif rc == 101 or re.search(r"panicked at (cargo-occupancy|occupancy-[a-z]+)/", err):
            found.append(("panics", "panicked: " + err.strip().splitlines()[-1][:200] if err.strip() else "exit 101"))
        elif rc is not None and rc < 0:
            found.append(("panics", f"died of signal {-rc}"))
        for path, old in before.items():
            new = digest(path)
            if new != old:
                found.append(("data_loss", f"{os.path.relpath(path, self.work)} changed"))
        if r["timed_out"] or found and found[0][0] in ("panics", "hangs"):
            return found
        expect = case.expect
        if expect == "fail" and rc == 0:
            found.append(("fail_open", "exit 0 on an input with a part that cannot be read or checked"))
        if isinstance(expect, tuple) and expect[0] == "rows" and rc == 0:
            rows = count_rows(r["stdout"])
            if rows is None:
                found.append(("fail_open", f"exit {rc} without a report"))
            elif rows < expect[1]:
                found.append(("fail_open", f"exit {rc} with {rows} kernel rows where the undamaged file has {expect[1]}"))
        if rc not in (0, 1):
            found.extend(("unclear", why) for why in self.unclear(case, err))
        if case.check:
            found.extend(case.check(case, r))
        return found

    def unclear(self, case, err):
        whys = []
        if not err.strip():
            return ["exit non-zero with nothing on stderr"]
        if not any(line.startswith("error") for line in err.splitlines()):
            whys.append("no line starts with `error`")
        scratch = re.findall(re.escape(self.tmp) + r"/[^\s`'\"]+", err)
        scratch = [s for s in scratch if not any(s.startswith(ok) for ok in case.scratch_ok)]
        if scratch or "occupancy-binary-" in err:
            whys.append(f"names a scratch path: {(scratch or ['occupancy-binary-'])[0]}")
        if case.binary_input and "the compiler's output" in err:
            whys.append("speaks of the compiler's output for a prebuilt binary")
        if case.names and not any(n in err for n in case.names):
            whys.append(f"does not name {case.names[0]!r}")
        own = next((line for line in err.splitlines() if line.startswith("error")), "")
        own = own.split(" failed (exit status")[0]  # a tool's words follow
        for empty in ["``", "''", '""']:
            if empty in own:
                whys.append(f"has an empty quote {empty}")
        words = [w.strip("`'\".,:;()").lower() for w in own.split()]
        for a, b in zip(words, words[1:]):
            if a and a.isalpha() and a == b:
                whys.append(f"repeats the word {a!r}")
                break
        return whys

    def run_case(self, case):
        if case.serial:
            with self.serial_lock:
                return self.run_case_now(case)
        return self.run_case_now(case)

    def run_case_now(self, case):
        if case.setup:
            case.setup(case)
        before = {p: digest(p) for p in case.inputs}
        timeout = case.timeout or self.opts.timeout
        env = self.env_for(case)
        cwd = case.cwd or self.work
        if case.parallel > 1:
            results = [None] * case.parallel
            threads = []
            for i in range(case.parallel):
                argv = case.args(i) if callable(case.args) else case.args
                t = threading.Thread(target=lambda i=i, argv=argv: results.__setitem__(
                    i, self.run_raw(argv, cwd, env, timeout, case.stdin, case.unpriv)))
                t.start()
                threads.append(t)
            for t in threads:
                t.join()
            found = []
            for r in results:
                found.extend(self.classify(case, r, before))
            r = results[0]
            r["all"] = [(x["rc"], x["stderr"][-300:]) for x in results]
        else:
            r = self.run_raw(case.args, cwd, env, timeout, case.stdin, case.unpriv)
            found = self.classify(case, r, before)
        # one finding per column per attempt
        seen = {}
        for col, why in found:
            seen.setdefault(col, why)
        return r, seen


def count_rows(stdout):
    try:
        report = json.loads(stdout)
    except (ValueError, UnicodeDecodeError):
        return None
    return len(report.get("kernels", []))


# ---- mutations --------------------------------------------------------------------------------


def truncations(data):
    n = len(data)
    cuts = {0, 1, 3, 4, 8, 16, 19, 20, 24, 32, 52, 63, 64, 100, 200, 256, 512, 1024}
    cuts |= {n * k // 16 for k in range(1, 16)}
    cuts |= {n - 1, n - 2, n - 8, n - 64}
    return sorted(c for c in cuts if 0 <= c < n)


def flips(data, count, seed):
    rng = random.Random(seed)
    out = []
    for i in range(count):
        b = bytearray(data)
        pos = rng.randrange(min(256, len(b))) if i % 2 == 0 else rng.randrange(len(b))
        b[pos] ^= 1 << rng.randrange(8)
        out.append((f"flip{pos}", bytes(b)))
    return out


def header_damage(data):
    out = []
    b = bytearray(data)
    if b[:4] == b"\x7fELF":
        for name, off, size, value in [
            ("shoff-huge", 0x28, 8, (1 << 62)), ("shnum-max", 0x3C, 2, 0xFFFF),
            ("shentsize-0", 0x3A, 2, 0), ("shstrndx-bad", 0x3E, 2, 0xFFFE),
            ("phoff-huge", 0x20, 8, (1 << 62)), ("class-32", 4, 1, 1),
        ]:
            c = bytearray(b)
            c[off:off + size] = value.to_bytes(size, "little")
            out.append((name, bytes(c)))
    elif b[:4] == (0xBA55ED50).to_bytes(4, "little"):
        for name, off, size, value in [
            ("size-huge", 8, 8, 1 << 40), ("size-0", 8, 8, 0), ("hdr-0", 6, 2, 0),
            ("entry-kind", 16, 2, 0x77), ("entry-size-huge", 16 + 8, 8, 1 << 40),
            ("entry-hdr-huge", 16 + 4, 4, 0xFFFFFFF0),
        ]:
            c = bytearray(b)
            c[off:off + size] = value.to_bytes(size, "little")
            out.append((name, bytes(c)))
    elif b[:8] == b"!<arch>\n":
        for name, off, patch in [("member-size-huge", 8 + 48, b"9999999999"), ("member-size-text", 8 + 48, b"abcdefghij"),
                                 ("member-name-slash", 8, b"/9999999999     ")]:
            c = bytearray(b)
            c[off:off + len(patch)] = patch
            out.append((name, bytes(c)))
    elif b[:2] == b"PK":
        eocd = b.rfind(b"PK\x05\x06")
        for name, off, size, value in [("cd-count-huge", eocd + 10, 2, 0xFFFF), ("cd-offset-bad", eocd + 16, 4, 0xFFFFFFF0),
                                       ("cd-size-huge", eocd + 12, 4, 0xFFFFFFF0)]:
            c = bytearray(b)
            c[off:off + size] = value.to_bytes(size, "little")
            out.append((name, bytes(c)))
    return out


# ---- areas ------------------------------------------------------------------------------------


def area_binaries(P):
    """Each artefact undamaged, truncated, bit-flipped and with damaged headers."""
    flips_per = P.opts.flips
    for name in P.binaries:
        data = open(os.path.join(P.art, name), "rb").read()
        arch = "sm_80" if name.startswith(("s.", "libs")) else "sm_90"
        pristine = P.run_raw(["check", os.path.join(P.art, name), "--arch", arch, "--json"], P.work,
                             P.env_for(Case("", "", [])), 120)
        rows = count_rows(pristine["stdout"]) or 0
        if pristine["rc"] not in (0, 1) or rows == 0:
            print(f"warning: the undamaged {name} exits {pristine['rc']} with {rows} rows: {pristine['stderr'][-400:]}",
                  file=sys.stderr)
        variants = [("undamaged", data)]
        variants += [(f"cut{c}", data[:c]) for c in truncations(data)]
        variants += flips(data, flips_per, seed=name)
        variants += header_damage(data)
        for tag, blob in variants:
            def setup(case, blob=blob, name=name):
                d = P.fresh(case.name)
                f = os.path.join(d, name)
                with open(f, "wb") as out:
                    out.write(blob)
                case.args[1] = f
                case.inputs = [f]
            expect = ("rows", rows) if tag != "undamaged" else ("rows", rows)
            P.cases.append(Case("binaries", f"{name}:{tag}", ["check", None, "--arch", arch, "--json"],
                                expect=expect, setup=setup, names=[name], binary_input=True))


def area_directories(P):
    """`check DIR`: one good binary beside one hostile entry."""
    good = "k.sm_90.cubin"

    def entry(tag, make, expect="fail", unpriv=False, names=None):
        def setup(case):
            d = P.fresh(case.name)
            shutil.copy(os.path.join(P.art, good), d)
            shutil.copy(os.path.join(P.art, "s.cu"), d)
            culprit = make(d)
            case.args[1] = d
            case.inputs = [d]
            if culprit and not case.names:
                case.names = [culprit]
        P.cases.append(Case("directories", tag, ["check", None, "--arch", "sm_90"], setup=setup,
                            expect=expect, unpriv=unpriv, names=names or [], binary_input=True))

    for ext in [".cubin", ".fatbin", ".o", ".a", ".so", ".so.12", ".whl", ".cu", ".ptx"]:
        n = "gone" + ext
        entry(f"dangling-link{ext}", lambda d, n=n: (os.symlink("nowhere" + n, os.path.join(d, n)), n)[1])
        entry(f"fifo{ext}", lambda d, n=n: (os.mkfifo(os.path.join(d, "f" + n)), "f" + n)[1])
        entry(f"unreadable{ext}", lambda d, n=n, ext=ext: mk_unreadable(d, "u" + n, ext), unpriv=True)
        entry(f"self-link{ext}", lambda d, n=n: (os.symlink("s" + n, os.path.join(d, "s" + n)), "s" + n)[1])
        entry(f"socket{ext}", lambda d, n=n: mk_socket(d, "sock" + n))
        entry(f"zero-device{ext}", lambda d, n=n: mk_node(d, "z" + n, 1, 5))
        entry(f"empty{ext}", lambda d, n=n: (open(os.path.join(d, "e" + n), "w").close(), "e" + n)[1],
              expect="any" if ext == ".cu" else "fail")
    entry("thin-archive", lambda d: (shutil.copy(os.path.join(P.art, "libthin.a"), d), "libthin.a")[1])
    entry("unreadable-subdir", lambda d: mk_unreadable_dir(d), unpriv=True)
    entry("self-link-dirs", lambda d: (os.symlink(".", os.path.join(d, "a")), os.symlink(".", os.path.join(d, "b")), None)[2],
          expect="any")
    entry("link-up", lambda d: (os.makedirs(os.path.join(d, "x/y")), os.symlink("../..", os.path.join(d, "x/y/up")), None)[2],
          expect="any")
    entry("dir-named-cubin", lambda d: (os.makedirs(os.path.join(d, "dir.cubin")), None)[1], expect="any")
    entry("sparse-huge.fatbin", lambda d: mk_sparse(d, "huge.fatbin", (0xBA55ED50).to_bytes(4, "little") + b"\x01\x00\x10\x00", 64 << 30))
    entry("sparse-huge.cubin", lambda d: mk_sparse(d, "huge.cubin", open(os.path.join(P.art, good), "rb").read()[:64], 64 << 30))
    entry("sparse-huge.a", lambda d: mk_sparse(d, "libhuge.a", b"!<arch>\n", 64 << 30))
    entry("sparse-huge.whl", lambda d: mk_sparse(d, "huge.whl", b"PK\x03\x04", 64 << 30))
    for weird in ["new\nline.cubin", "-leading.cubin", "caf\u00e9.cubin", "sp ace.fatbin", "--arch.o"]:
        entry(f"name:{weird!r}", lambda d, w=weird: (shutil.copy(os.path.join(P.art, good), os.path.join(d, w)), None)[1],
              expect="any")
        entry(f"broken-name:{weird!r}", lambda d, w=weird: (open(os.path.join(d, w), "wb").write(b"\x7fELF\x02\x01\x01" + b"\0" * 40), w)[1],
              names=[weird.replace("\n", "\\n")])
    for i in range(8):
        # a damaged binary among good ones: the good ones are reported, the damaged one named
        def make(d, i=i):
            src = P.binaries[i % len(P.binaries)]
            data = open(os.path.join(P.art, src), "rb").read()
            with open(os.path.join(d, "bad-" + src), "wb") as f:
                f.write(data[: len(data) // (i + 2)])
            return "bad-" + src
        entry(f"cut-among-good-{i}", make)


def mk_unreadable(d, name, ext):
    src = {".cu": "s.cu", ".ptx": "s.ptx"}.get(ext, "k.o")
    p = os.path.join(d, name)
    shutil.copy(os.path.join(PASS.art, src), p)
    os.chmod(p, 0)
    return name


def mk_unreadable_dir(d):
    sub = os.path.join(d, "locked")
    os.makedirs(sub)
    shutil.copy(os.path.join(PASS.art, "k.fatbin"), sub)
    os.chmod(sub, 0)
    return "locked"


def mk_socket(d, name):
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(d, name))
    s.close()
    return name


def mk_node(d, name, major, minor):
    os.mknod(os.path.join(d, name), 0o600 | stat.S_IFCHR, os.makedev(major, minor))
    return name


def mk_sparse(d, name, head, size):
    p = os.path.join(d, name)
    with open(p, "wb") as f:
        f.write(head)
        f.truncate(size)
    return name


def area_paths(P):
    """One hostile path given to `check`, `parse`, `explain --log`, `tune`."""
    def one(tag, make, args_of, expect="fail", unpriv=False, stdin=None, names=None):
        def setup(case):
            d = P.fresh(case.name)
            p = make(d)
            case.args = args_of(p)
            case.cwd = d
            case.inputs = [d]
            if not case.names:
                case.names = [os.path.basename(p).replace("\n", "\\n")]
        P.cases.append(Case("paths", tag, [], setup=setup, expect=expect, unpriv=unpriv, stdin=stdin,
                            names=names or [], binary_input=True))

    def copy(name, dest=None):
        return lambda d: shutil.copy(os.path.join(P.art, name), os.path.join(d, dest or name))

    for cmd in ["check", "parse", "explain-log", "tune"]:
        def args_of(p, cmd=cmd):
            return {"check": ["check", p, "--arch", "sm_90"], "parse": ["parse", p],
                    "explain-log": ["explain", "window", "--log", p], "tune": ["tune", p, "--kernel", "scale", "--block", "256", "--arch", "sm_90"]}[cmd]
        one(f"{cmd}:missing", lambda d: os.path.join(d, "missing.cu"), args_of)
        one(f"{cmd}:dangling", lambda d: (os.symlink("nowhere", os.path.join(d, "l.cu")), os.path.join(d, "l.cu"))[1], args_of)
        one(f"{cmd}:directory", lambda d: (os.makedirs(os.path.join(d, "dir.cu")), os.path.join(d, "dir.cu"))[1], args_of)
        one(f"{cmd}:zero-device", lambda d: os.path.join(d, mk_node(d, "zero.cu", 1, 5)), args_of)
        one(f"{cmd}:null-device", lambda d: os.path.join(d, mk_node(d, "null.log", 1, 3)), args_of)
        one(f"{cmd}:unreadable", lambda d: os.path.join(d, mk_unreadable(d, "u.cu", ".cu")), args_of, unpriv=True)
        one(f"{cmd}:socket", lambda d: os.path.join(d, mk_socket(d, "s.cu")), args_of)
        one(f"{cmd}:self-link", lambda d: (os.symlink("loop.cu", os.path.join(d, "loop.cu")), os.path.join(d, "loop.cu"))[1], args_of)
        one(f"{cmd}:sparse-log", lambda d: os.path.join(d, mk_sparse(d, "huge.cubin", b"\x7fELF\x02\x01\x01\x00", 32 << 30)), args_of)
        one(f"{cmd}:newline-name", lambda d: (copy("s.cu", "a\nb.cu")(d), os.path.join(d, "a\nb.cu"))[1], args_of, expect="any")
        one(f"{cmd}:dash-name", lambda d: (copy("s.cu", "-x.cu")(d), "./-x.cu")[1], args_of, expect="any")
        one(f"{cmd}:binary-as-ptx", lambda d: (copy("k.fatbin", "k.ptx")(d), os.path.join(d, "k.ptx"))[1], args_of)
        one(f"{cmd}:cubin-as-cu", lambda d: (copy("k.sm_90.cubin", "k.cu")(d), os.path.join(d, "k.cu"))[1], args_of)
    # a log through a pipe, and a binary through a pipe
    for tag, data in [("failed-log", b"FAILED: k.cu.o\nptxas info    : Used 8 registers\n"),
                      ("cubin", open(os.path.join(P.art, "k.sm_90.cubin"), "rb").read())]:
        P.cases.append(Case("paths", f"stdin:{tag}", ["check", "/dev/stdin", "--arch", "sm_90"], stdin=data,
                            names=["/dev/stdin", "stdin"]))


def area_lock(P):
    """`--lock`: nodes, sizes, damage, and blesses that must keep other sources' entries."""
    base = P.fresh("lock-base")
    cubin = os.path.join(base, "k.sm_90.cubin")
    shutil.copy(os.path.join(P.art, "k.sm_90.cubin"), cubin)
    other = os.path.join(base, "s.sm_80.cubin")
    shutil.copy(os.path.join(P.art, "s.sm_80.cubin"), other)
    lock = os.path.join(base, "occupancy.lock")
    r = P.run_raw(["check", other, "--arch", "sm_80", "--lock", lock, "--bless"], base, P.env_for(Case("", "", [])), 120)
    r2 = P.run_raw(["check", cubin, "--arch", "sm_90", "--lock", lock, "--bless"], base, P.env_for(Case("", "", [])), 120)
    if r["rc"] != 0 or r2["rc"] != 0:
        print("warning: could not bless the base lock:", r["stderr"][-300:], r2["stderr"][-300:], file=sys.stderr)
    good = open(lock, "rb").read()

    def entries(path):
        try:
            return json.dumps(json.load(open(path))).count('"registers"')
        except Exception:
            return None

    full = entries(lock)

    def keeps_entries(case, r):
        if r["rc"] == 0 and "--bless" in case.args:
            n = entries(case.lockpath)
            if n is not None and full and n < full:
                return [("data_loss", f"the blessed lock holds {n} entries of {full}")]
        return []

    def one(tag, make, bless=False, expect="fail", unpriv=False, extra=()):
        def setup(case):
            d = P.fresh(case.name)
            shutil.copy(cubin, d)
            p = make(d)
            case.lockpath = p
            case.args = ["check", os.path.join(d, "k.sm_90.cubin"), "--arch", "sm_90", "--lock", p,
                         *(["--bless"] if bless else []), *extra]
            case.cwd = d
            case.inputs = [os.path.join(d, "k.sm_90.cubin")] + ([] if bless else [d])
            case.names = case.names or [os.path.basename(p)]
        P.cases.append(Case("lock", tag, [], setup=setup, expect=expect, unpriv=unpriv, check=keeps_entries))

    def write(name, data):
        def make(d):
            p = os.path.join(d, name)
            with open(p, "wb") as f:
                f.write(data)
            return p
        return make

    for bless in [False, True]:
        b = "bless:" if bless else ""
        one(b + "fifo", lambda d: (os.mkfifo(os.path.join(d, "f.lock")), os.path.join(d, "f.lock"))[1], bless)
        one(b + "zero-device", lambda d: os.path.join(d, mk_node(d, "z.lock", 1, 5)), bless)
        one(b + "directory", lambda d: (os.makedirs(os.path.join(d, "d.lock")), os.path.join(d, "d.lock"))[1], bless)
        one(b + "socket", lambda d: os.path.join(d, mk_socket(d, "s.lock")), bless)
        one(b + "sparse-huge", lambda d: os.path.join(d, mk_sparse(d, "h.lock", b"{", 8 << 30)), bless)
        one(b + "self-link", lambda d: (os.symlink("l.lock", os.path.join(d, "l.lock")), os.path.join(d, "l.lock"))[1], bless)
        one(b + "unreadable", lambda d: (write("u.lock", good)(d), os.chmod(os.path.join(d, "u.lock"), 0), os.path.join(d, "u.lock"))[2],
            bless, unpriv=True)
        one(b + "empty", write("e.lock", b""), bless)
        one(b + "not-utf8", write("n.lock", good[:20] + b"\xff\xfe" + good[20:]), bless)
        dup = good.replace(b'"schema_version": 2', b'"schema_version": 2, "schema_version": 2', 1)
        assert dup != good, "the lock's schema_version key was not found"
        one(b + "dup-key", write("dup.lock", dup), bless)
        one(b + "lock-is-the-input", lambda d: os.path.join(d, "k.sm_90.cubin"), bless)
        one(b + "html-is-the-lock", write("x.lock", good), bless, extra=("--html", "x.lock"))
        one(b + "unwritable-dir", lambda d: (os.makedirs(os.path.join(d, "ro")), shutil.copy(lock, os.path.join(d, "ro/o.lock")),
                                             os.chmod(os.path.join(d, "ro"), 0o500), os.path.join(d, "ro/o.lock"))[3],
            bless, expect="fail" if bless else "any", unpriv=True)
        for tag, data in [(f"cut{c}", good[:c]) for c in truncations(good)[::2]] + flips(good, 24, seed="lock" + b):
            # a damaged lock is refused or read; a bless never loses the other source's entries
            one(b + tag, write("occupancy.lock", data), bless, expect="any")
    one("good", write("occupancy.lock", good), expect="any")
    one("bless:good", write("occupancy.lock", good), True, expect="any")


def area_outputs(P):
    """`--html` (and --json/--sarif/--markdown on stdout) onto what must survive."""
    def one(tag, target, expect="fail", unpriv=False, fmt=None):
        def setup(case):
            d = P.fresh(case.name)
            for n in ["k.sm_90.cubin", "s.cu"]:
                shutil.copy(os.path.join(P.art, n), d)
            t = target(d)
            case.args = ["check", "k.sm_90.cubin", "--arch", "sm_90", "--html", t, *([fmt] if fmt else [])]
            case.cwd = d
            case.inputs = [os.path.join(d, "k.sm_90.cubin")]
            case.names = [os.path.basename(t.rstrip("/")).replace("\n", "\\n") or t]
        P.cases.append(Case("outputs", tag, [], setup=setup, expect=expect, unpriv=unpriv))

    for fmt in [None, "--json", "--sarif", "--markdown"]:
        f = (fmt or "--text").lstrip("-") + ":"
        one(f + "the-input", lambda d: "k.sm_90.cubin", fmt=fmt)
        one(f + "the-input-dot", lambda d: "./k.sm_90.cubin", fmt=fmt)
        one(f + "link-to-input", lambda d: (os.symlink("k.sm_90.cubin", os.path.join(d, "r.html")), "r.html")[1], fmt=fmt)
        one(f + "hardlink-to-input", lambda d: (os.link(os.path.join(d, "k.sm_90.cubin"), os.path.join(d, "h.html")), "h.html")[1], fmt=fmt)
        one(f + "other-file", lambda d: "s.cu", expect="any", fmt=fmt)
        one(f + "directory", lambda d: (os.makedirs(os.path.join(d, "out")), "out")[1], fmt=fmt)
        one(f + "missing-dir", lambda d: "no/such/r.html", fmt=fmt)
        one(f + "dangling-dir-link", lambda d: (os.symlink("/nonexistent-occupancy-dir/r.html", os.path.join(d, "r.html")), "r.html")[1], fmt=fmt)
        one(f + "self-link", lambda d: (os.symlink("r.html", os.path.join(d, "r.html")), "r.html")[1], fmt=fmt)
        one(f + "unwritable-dir", lambda d: (os.makedirs(os.path.join(d, "ro")), os.chmod(os.path.join(d, "ro"), 0o500), "ro/r.html")[2],
            fmt=fmt, unpriv=True)
        one(f + "null-node", lambda d: mk_node(d, "null.html", 1, 3), expect="any", fmt=fmt)
        one(f + "newline-name", lambda d: "r\n.html", expect="any", fmt=fmt)
        one(f + "dash-name", lambda d: "./-r.html", expect="any", fmt=fmt)
        one(f + "socket", lambda d: mk_socket(d, "s.html"), fmt=fmt)
        one(f + "fine", lambda d: "r.html", expect="any", fmt=fmt)


def area_env(P):
    """A bad environment: HOME, XDG_CACHE_HOME, TMPDIR, PATH, CUDA_HOME, NVCC, timeouts."""
    def one(tag, args_of, env=None, unset=(), expect="fail", names=(), unpriv=False, scratch_ok=False, check=None):
        def setup(case):
            d = P.fresh(case.name)
            for n in ["k.sm_90.cubin", "s.cu", "s.ptx"]:
                shutil.copy(os.path.join(P.art, n), d)
            case.cwd = d
            case.args = args_of(d)
            case.env = {k: (v(d) if callable(v) else v) for k, v in (env or {}).items()}
            case.inputs = [os.path.join(d, "k.sm_90.cubin"), os.path.join(d, "s.cu")]
            if scratch_ok:
                case.scratch_ok = [case.env.get("TMPDIR", "")]
        P.cases.append(Case("environment", tag, [], setup=setup, unset=list(unset), expect=expect, names=list(names),
                            unpriv=unpriv, check=check))

    cu = lambda d: ["check", "s.cu", "--arch", "sm_90"]
    binary = lambda d: ["check", "k.sm_90.cubin", "--arch", "sm_90"]
    ptx = lambda d: ["check", "s.ptx", "--arch", "sm_90"]
    tune = lambda d: ["tune", "s.cu", "--kernel", "scale", "--block", "256", "--arch", "sm_90"]
    for what, args_of in [("cu", cu), ("binary", binary), ("ptx", ptx), ("tune", tune)]:
        no_home_created = lambda case, r: ([("data_loss", "created the missing HOME")]
                                           if os.path.exists(case.env.get("HOME", "/nonexistent-x")) else [])
        one(f"{what}:home-missing", args_of, {"HOME": lambda d: os.path.join(d, "no-home")}, unset=["XDG_CACHE_HOME"], expect="any",
            check=no_home_created)
        one(f"{what}:home-unset", args_of, unset=["HOME", "XDG_CACHE_HOME"], expect="any")
        one(f"{what}:home-a-file", args_of, {"HOME": lambda d: os.path.join(d, "s.cu")}, unset=["XDG_CACHE_HOME"], expect="any")
        one(f"{what}:xdg-relative", args_of, {"XDG_CACHE_HOME": "rel/cache", "HOME": lambda d: d}, expect="any")
        one(f"{what}:xdg-a-file", args_of, {"XDG_CACHE_HOME": lambda d: os.path.join(d, "s.cu")}, expect="any")
        one(f"{what}:xdg-world-writable", args_of, {"XDG_CACHE_HOME": lambda d: (os.makedirs(os.path.join(d, "ww/occupancy")),
            os.chmod(os.path.join(d, "ww/occupancy"), 0o777), os.path.join(d, "ww"))[2]}, expect="any")
        one(f"{what}:tmpdir-missing", args_of, {"TMPDIR": lambda d: os.path.join(d, "no-tmp")}, expect="any" if what == "binary-never" else "fail",
            names=["TMPDIR"], scratch_ok=True)
        one(f"{what}:tmpdir-a-file", args_of, {"TMPDIR": lambda d: os.path.join(d, "s.cu")}, names=["TMPDIR"], scratch_ok=True)
        one(f"{what}:tmpdir-unwritable", args_of, {"TMPDIR": lambda d: (os.makedirs(os.path.join(d, "rotmp")),
            os.chmod(os.path.join(d, "rotmp"), 0o500), os.path.join(d, "rotmp"))[2]}, names=["TMPDIR"], unpriv=True, scratch_ok=True)
        one(f"{what}:tmpdir-newline", args_of, {"TMPDIR": lambda d: (os.makedirs(os.path.join(d, "t\nmp")), os.path.join(d, "t\nmp"))[1]},
            expect="any", scratch_ok=True)
        needs_nvcc = "fail" if what != "binary" else "any"
        one(f"{what}:path-empty", args_of, {"PATH": ""}, unset=["NVCC", "CUDA_HOME", "CUDA_PATH"],
            names=["nvcc", "cuobjdump", "nvdisasm", "CUDA_HOME"], expect=needs_nvcc)
        one(f"{what}:cuda-home-bogus", args_of, {"CUDA_HOME": "/nonexistent-cuda", "PATH": "/usr/bin:/bin"}, unset=["NVCC"],
            names=["/nonexistent-cuda", "CUDA_HOME"], expect=needs_nvcc)
        one(f"{what}:nvcc-a-directory", args_of, {"NVCC": lambda d: d}, names=["NVCC"], expect=needs_nvcc)
        one(f"{what}:timeout-zero", args_of, {"OCCUPANCY_TOOL_TIMEOUT": "0"}, names=["OCCUPANCY_TOOL_TIMEOUT"])
        one(f"{what}:timeout-nan", args_of, {"OCCUPANCY_TOOL_TIMEOUT": "NaN"}, names=["OCCUPANCY_TOOL_TIMEOUT"])
        one(f"{what}:timeout-inf", args_of, {"OCCUPANCY_TOOL_TIMEOUT": "inf"}, expect="any", names=["OCCUPANCY_TOOL_TIMEOUT"])
        one(f"{what}:timeout-huge", args_of, {"OCCUPANCY_TOOL_TIMEOUT": "1e300"}, expect="any", names=["OCCUPANCY_TOOL_TIMEOUT"])
        # --arch is given, so these are not read: any exit, a clear error
        one(f"{what}:archs-bogus", args_of, {"OCCUPANCY_ARCHS": "sm_9000"}, expect="any")
        one(f"{what}:compute-cap-bogus", args_of, {"CUDA_COMPUTE_CAP": "banana"}, expect="any")
        # a binary without --arch is read on its cubins' own archs: OCCUPANCY_ARCHS is not read
        one(f"{what}:archs-bogus-no-arch", lambda d, a=args_of: [x for x in a(d) if x not in ("--arch", "sm_90")],
            {"OCCUPANCY_ARCHS": "sm_9000"}, names=["sm_9000"], expect="any" if what == "binary" else "fail")
        one(f"{what}:lang-c", args_of, {"LANG": "C", "LC_ALL": "C"}, expect="any")
        # documented: a cache directory that cannot be used is warned about and a private one used
        one(f"{what}:cache-dir-a-file", lambda d, a=args_of: a(d) + ["--cache-dir", "s.cu"], names=["s.cu", "--cache-dir"],
            expect="any")
    # stdout closed early
    P.cases.append(Case("environment", "stdout-closed", ["check", os.path.join(P.art, "k.sm_90.cubin"), "--arch", "sm_90"],
                        expect="any"))


def tool_path(tool):
    """A tool as the CLI finds it: `OCCUPANCY_NVDISASM` for nvdisasm, else PATH."""
    if tool == "nvdisasm" and os.environ.get("OCCUPANCY_NVDISASM"):
        return os.environ["OCCUPANCY_NVDISASM"]
    return shutil.which(tool)


def fake_tool(d, name, body):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write("#!/bin/bash\n" + body + "\n")
    os.chmod(p, 0o755)
    return p


def area_tools(P):
    """Tools that fail: nvcc, cuobjdump and nvdisasm wrappers that crash, hang, lie or say nothing."""
    real = {t: tool_path(t) for t in ["nvcc", "ptxas", "cuobjdump", "nvdisasm"]}
    behaviours = {
        "segv": 'kill -SEGV $$',
        "exit0-silent": "exit 0",
        "exit1": 'echo "boom" >&2; exit 1',
        "hang": "sleep 600",
        "garbage": 'echo "\x01\x02garbage"; exit 0',
        "truncate-output": '"$REAL" "$@"; rc=$?; for a in "$@"; do case "$prev" in -o) [ -f "$a" ] && truncate -s 10 "$a";; esac; prev="$a"; done; exit $rc',
        "killed": 'kill -KILL $$',
    }
    targets = {
        "nvcc": [("cu", lambda d: ["check", "k.cu", "--arch", "sm_90"]), ("tune", lambda d: ["tune", "s.cu", "--kernel", "scale", "--block", "256", "--arch", "sm_90"]),
                 ("ptx", lambda d: ["check", "k.ptx", "--arch", "sm_90"])],
        "cuobjdump": [("fatbin", lambda d: ["check", "k.fatbin", "--arch", "sm_90"]), ("lib", lambda d: ["check", "libk.a", "--arch", "sm_90"]),
                      ("cubin", lambda d: ["check", "k.sm_90.cubin", "--arch", "sm_90"])],
        "nvdisasm": [("cubin", lambda d: ["check", "k.sm_90.cubin", "--arch", "sm_90"]), ("fatbin", lambda d: ["check", "k.fatbin", "--arch", "sm_90"])],
    }
    for tool, uses in targets.items():
        for use, args_of in uses:
            for beh, body in behaviours.items():
                def setup(case, tool=tool, body=body, args_of=args_of):
                    d = P.fresh(case.name)
                    for n in ["k.sm_90.cubin", "s.cu", "s.ptx", "k.fatbin", "libk.a", "k.cu", "k.ptx"]:
                        shutil.copy(os.path.join(P.art, n), d)
                    bindir = os.path.join(d, "bin")
                    os.makedirs(bindir)
                    real_dir = os.path.dirname(real[tool])
                    # every real tool beside the fake one: nvcc finds its own by its directory
                    for other in os.listdir(real_dir):
                        if other != tool:
                            os.symlink(os.path.join(real_dir, other), os.path.join(bindir, other))
                    fake_tool(bindir, tool, f'REAL={real[tool]}\n' + body)
                    case.cwd = d
                    case.args = args_of(d)
                    case.env = {"PATH": bindir + ":" + os.environ["PATH"], "OCCUPANCY_TOOL_TIMEOUT": "5",
                                "NVCC": os.path.join(bindir, "nvcc"), "CUDA_HOME": os.path.dirname(bindir)}
                    if tool == "nvdisasm":
                        case.env["OCCUPANCY_NVDISASM"] = os.path.join(bindir, "nvdisasm")
                        case.env.pop("CUDA_HOME")
                        case.env["NVCC"] = real["nvcc"]
                    case.unset = []
                    case.inputs = [os.path.join(d, n) for n in ["k.sm_90.cubin", "s.cu", "k.fatbin", "libk.a"]]
                    case.cache_dir = os.path.join(d, "cache")
                    case.args += ["--cache-dir", case.cache_dir]
                # cuobjdump never reads a cubin; a wrapper that damages `-o` damages nothing cuobjdump
                # or nvdisasm takes; `check k.ptx` reads ptxas's report, not the cubin nvcc writes
                vacuous = ((tool == "cuobjdump" and use == "cubin")
                           or (beh == "truncate-output" and (tool in ("nvdisasm", "cuobjdump") or use == "ptx")))
                expect = "any" if vacuous else "fail"
                names = [tool, "OCCUPANCY_TOOL_TIMEOUT"] if beh == "hang" else [tool]
                P.cases.append(Case("tools", f"{tool}:{use}:{beh}", [], setup=setup, expect=expect, names=names,
                                    binary_input=use not in ("cu", "tune", "ptx"), timeout=90))
    # The sccache step runner is not reached from the CLI: `check` and `tune` never put a compiler
    # cache in front of nvcc (only a build script does, from RUSTC_WRAPPER); it is held by
    # tests/tests/build_sccache*.rs.


def area_tune(P):
    """`tune` and "auto": hostile kernels, names and caches."""
    def one(tag, args_of, expect="fail", names=(), files=None, unpriv=False):
        def setup(case):
            d = P.fresh(case.name)
            for n, text in (files or {"s.cu": SECOND}).items():
                with open(os.path.join(d, n), "w") as f:
                    f.write(text)
            case.cwd = d
            args = args_of(d)
            case.args = args if "--cache-dir" in args else args + ["--cache-dir", os.path.join(d, "cache")]
            case.inputs = [os.path.join(d, n) for n in (files or {"s.cu": 0})]
        P.cases.append(Case("tune", tag, [], setup=setup, expect=expect, names=list(names), timeout=180, unpriv=unpriv))

    t = lambda *extra: (lambda d: ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_90", *(extra if "--block" in extra else ("--block", "256", *extra))])
    one("good", t(), expect="any")
    one("good-json", t("--format", "json"), expect="any")
    one("max-registers", t("--knob", "max-registers"), expect="any")
    one("kernel-missing", lambda d: ["tune", "s.cu", "--kernel", "nope", "--arch", "sm_90"], names=["nope"])
    one("kernel-empty", lambda d: ["tune", "s.cu", "--kernel", "", "--arch", "sm_90"])
    one("kernel-newline", lambda d: ["tune", "s.cu", "--kernel", "sca\nle", "--arch", "sm_90"], names=["sca\\nle"])
    one("kernel-dash", lambda d: ["tune", "s.cu", "--kernel=-x", "--arch", "sm_90"], names=["-x"])
    one("block-zero", t("--block", "0"), names=["--block"])
    one("block-huge", t("--block", "1025"), names=["--block"])
    one("smem-huge", t("--dynamic-smem", "99999999999"), expect="any")
    one("arch-bogus", lambda d: ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_9000"], names=["sm_9000"])
    one("arch-prehistoric", lambda d: ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_20"], names=["sm_20"])
    one("fails-to-compile", t(), files={"s.cu": 'extern "C" __global__ void scale(float* x) { oops }\n'}, names=["s.cu"])
    one("empty-file", t(), files={"s.cu": ""}, names=["scale"])
    one("ptx-damaged", lambda d: ["tune", "s.ptx", "--kernel", "scale", "--arch", "sm_90"],
        files={"s.ptx": ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry scale(\n"}, names=["s.ptx"])
    one("ptx-no-target", lambda d: ["tune", "s.ptx", "--kernel", "scale", "--arch", "sm_90"],
        files={"s.ptx": ".version 8.0\n.address_size 64\n.visible .entry scale() { ret; }\n"}, names=["s.ptx"])
    one("cache-dir-fifo", lambda d: (os.mkfifo(os.path.join(d, "cfifo")), ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_90",
                                                                          "--cache-dir", "cfifo"])[1], names=["cfifo"])
    one("cache-dir-self-link", lambda d: (os.symlink("cl", os.path.join(d, "cl")), ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_90",
                                                                                   "--cache-dir", "cl"])[1], names=["cl"])
    one("cache-dir-world-writable", lambda d: (os.makedirs(os.path.join(d, "ww")), os.chmod(os.path.join(d, "ww"), 0o777),
                                               ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_90", "--cache-dir", "ww"])[2], expect="any")
    one("cache-dir-unwritable", lambda d: (os.makedirs(os.path.join(d, "ro")), os.chmod(os.path.join(d, "ro"), 0o500),
                                           ["tune", "s.cu", "--kernel", "scale", "--arch", "sm_90", "--cache-dir", "ro/c"])[2],
        names=["ro/c", "ro"], unpriv=True)
    one("refused-bogus", t("--refused", "sm_90:x:y"), names=["--refused"])
    one("macro-named-kernel", lambda d: ["tune", "s.cu", "--kernel", "errno", "--arch", "sm_90"],
        files={"s.cu": 'extern "C" __global__ void errno_k(float* x) { x[0] = 1; }\n'}, names=["errno"])
    # a ptxas that dies on one candidate: never that candidate's verdict, never cached
    for beh in ["segv", "kill", "exit0-nothing"]:
        def setup(case, beh=beh):
            d = P.fresh(case.name)
            with open(os.path.join(d, "s.cu"), "w") as f:
                f.write(SECOND)
            real = shutil.which("nvcc")
            bindir = os.path.join(d, "bin")
            os.makedirs(bindir)
            act = {"segv": "kill -SEGV $$", "kill": "kill -KILL $$", "exit0-nothing": "exit 0"}[beh]
            fake_tool(bindir, "nvcc", f'for a in "$@"; do case "$a" in *.ptx) grep -q "minnctapersm 3" "$a" 2>/dev/null && {{ {act}; }};; esac; done\nexec {real} "$@"')
            case.cwd = d
            case.args = ["tune", "s.cu", "--kernel", "scale", "--block", "256", "--arch", "sm_90", "--cache-dir", os.path.join(d, "cache"), "--format", "json"]
            case.env = {"NVCC": os.path.join(bindir, "nvcc")}
            case.inputs = [os.path.join(d, "s.cu")]
        P.cases.append(Case("tune", f"ptxas-dies-on-a-candidate:{beh}", [], setup=setup, expect="any", timeout=180))


def area_concurrency(P):
    """Runs at once on one cache directory and one lock."""
    shared = P.fresh("concurrency-shared")
    for n in ["k.sm_90.cubin", "s.cu", "s.ptx", "k.fatbin", "libk.a"]:
        shutil.copy(os.path.join(P.art, n), shared)
    cache = os.path.join(shared, "cache")
    files = [os.path.join(shared, n) for n in ["k.sm_90.cubin", "s.cu", "s.ptx", "k.fatbin", "libk.a"]]
    for rep in range(4):
        for n in [2, 4]:
            P.cases.append(Case("concurrency", f"check-cu-x{n}-{rep}", ["check", os.path.join(shared, "s.cu"), "--arch", "sm_90", "--cache-dir", cache],
                                parallel=n, expect="any", inputs=files, timeout=180))
            P.cases.append(Case("concurrency", f"tune-x{n}-{rep}", ["tune", os.path.join(shared, "s.cu"), "--kernel", "scale", "--block", "256", "--arch", "sm_90",
                                                                    "--cache-dir", cache], parallel=n, expect="any", inputs=files, timeout=240))
            P.cases.append(Case("concurrency", f"binaries-x{n}-{rep}", lambda i: ["check", files[i % len(files)], "--arch", "sm_90", "--cache-dir", cache],
                                parallel=n, expect="any", inputs=files, timeout=180))

    # blesses at once into one lock: no entry of another run may be lost
    def lock_setup(case):
        d = P.fresh(case.name)
        for n in ["k.sm_90.cubin", "s.sm_80.cubin", "k.fatbin", "libk.a"]:
            shutil.copy(os.path.join(P.art, n), d)
        case.cwd = d
        case.lockpath = os.path.join(d, "occupancy.lock")
        case.inputs = [os.path.join(d, n) for n in ["k.sm_90.cubin", "s.sm_80.cubin", "k.fatbin", "libk.a"]]

    def lock_kept(case, r):
        try:
            lock = json.load(open(case.lockpath))
        except Exception as e:
            return [("data_loss", f"the lock cannot be read after the runs: {e}")]
        text = json.dumps(lock)
        lost = [n for n in ["k.sm_90.cubin", "s.sm_80.cubin", "k.fatbin", "libk.a"][: case.parallel] if n not in text]
        ok = [x for x in r.get("all", []) if x[0] == 0]
        if lost and len(ok) == case.parallel:
            return [("data_loss", f"{len(lost)} of {case.parallel} blesses at once lost: {lost}")]
        return []

    names = ["k.sm_90.cubin", "s.sm_80.cubin", "k.fatbin", "libk.a"]
    for rep in range(6):
        for n in [2, 4]:
            P.cases.append(Case("concurrency", f"bless-one-lock-x{n}-{rep}",
                                lambda i: ["check", names[i], "--arch", "sm_90" if i != 1 else "sm_80", "--lock", "occupancy.lock", "--bless"],
                                parallel=n, expect="any", setup=lock_setup, check=lock_kept, timeout=180))


CRATE_TOML = '[package]\nname = "hostile"\nversion = "0.1.0"\nedition = "2021"\nbuild = "build.rs"\n[workspace]\n'
BUILD_RS = r'''
fn main() {
    println!("cargo:rerun-if-env-changed=HOSTILE_OUT");
    println!("cargo:rerun-if-env-changed=HOSTILE_UNREADABLE");
    println!("cargo:rerun-if-changed=build.rs");
    let out = std::env::var("OUT_DIR").unwrap();
    let src = std::env::var("HOSTILE_OUT").unwrap();
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("find \"$1\" -mindepth 1 -delete 2>/dev/null; cp -a --no-preserve=timestamps \"$2\"/. \"$1\"/ && for f in $3; do chmod 000 \"$1/$f\"; done")
        .arg("sh").arg(&out).arg(&src).arg(std::env::var("HOSTILE_UNREADABLE").unwrap_or_default())
        .status().unwrap();
    assert!(status.success());
}
'''


def area_build(P):
    """`cargo occupancy build`: a crate whose build script leaves hostile files in OUT_DIR."""
    crate = P.path("crate")
    os.makedirs(os.path.join(crate, "src"))
    with open(os.path.join(crate, "Cargo.toml"), "w") as f:
        f.write(CRATE_TOML)
    with open(os.path.join(crate, "build.rs"), "w") as f:
        f.write(BUILD_RS)
    with open(os.path.join(crate, "src/lib.rs"), "w") as f:
        f.write("")

    def one(tag, make, expect="fail", unpriv=False, names=None, extra=(), unreadable=(), check=None):
        def setup(case):
            case.unreadable = list(unreadable)
            d = P.fresh(case.name)
            out = os.path.join(d, "out")
            os.makedirs(out)
            shutil.copy(os.path.join(P.art, "s.ptx"), out)
            culprit = make(out)
            case.cwd = crate
            case.args = ["build", "--arch", "sm_90", "--cache-dir", os.path.join(d, "cache"), *extra]
            case.env = {"HOSTILE_OUT": out, "HOSTILE_UNREADABLE": " ".join(case.unreadable)}
            case.inputs = [os.path.join(crate, "build.rs")]
            if culprit and not case.names:
                case.names = [culprit.replace("\n", "\\n")]
        P.cases.append(Case("build", tag, [], setup=setup, expect=expect, unpriv=unpriv, names=names or [], timeout=240,
                            binary_input=True, serial=True, check=check))

    one("good", lambda o: None, expect="any")
    # a wheel is no build product (`build` reads PTX, cubins, fatbins, objects and libraries)
    for name in [n for n in P.binaries if not n.endswith(".whl")]:
        data = open(os.path.join(P.art, name), "rb").read()
        one(f"good:{name}", lambda o, name=name: (shutil.copy(os.path.join(P.art, name), o), None)[1], expect="any")
        # a damaged product is an error, or read: exit 0 only with rows of it in the report
        def read_or_refused(case, r, name=name):
            if r["rc"] != 0:
                return []
            try:
                rows = json.loads(r["stdout"])["kernels"]
            except (ValueError, KeyError):
                return [("fail_open", "exit 0 without a report")]
            if not any(name in row.get("source", {}).get("path", "") for row in rows):
                return [("fail_open", f"exit 0 with no row of the damaged {name}")]
            return []
        for c in [4, 20, 64, len(data) // 3, len(data) // 2, len(data) - 16]:
            one(f"cut{c}:{name}", lambda o, name=name, c=c, data=data: (open(os.path.join(o, name), "wb").write(data[:c]), name)[1],
                expect="any", extra=("--json",), check=read_or_refused)
        for tag, blob in header_damage(data)[:3]:
            one(f"{tag}:{name}", lambda o, name=name, blob=blob: (open(os.path.join(o, name), "wb").write(blob), name)[1],
                expect="any", extra=("--json",), check=read_or_refused)
    ptx = open(os.path.join(P.art, "s.ptx"), "rb").read()
    for tag, blob in [("ptx-no-target", re.sub(rb"\.target[^\n]*\n", b"", ptx)), ("ptx-not-utf8", b"\xff\xfe" + ptx),
                      ("ptx-cut", ptx[: len(ptx) // 2]), ("ptx-empty", b""), ("ptx-utf8-at-64k", b"//" + b"a" * 65533 + "\u00e9".encode() + b"\n" + ptx),
                      ("ptx-target-bogus", ptx.replace(b".target sm_80", b".target sm_9999"))]:
        one(tag, lambda o, blob=blob: (open(os.path.join(o, "k2.ptx"), "wb").write(blob), "k2.ptx")[1])
    for ext in [".ptx", ".cubin", ".fatbin", ".o", ".a", ".so"]:
        one(f"fifo{ext}", lambda o, ext=ext: (os.mkfifo(os.path.join(o, "f" + ext)), "f" + ext)[1])
        one(f"dangling{ext}", lambda o, ext=ext: (os.symlink("nowhere" + ext, os.path.join(o, "d" + ext)), "d" + ext)[1])
        one(f"unreadable{ext}", lambda o, ext=ext: (shutil.copy(os.path.join(P.art, "s.ptx" if ext == ".ptx" else "k.o"), os.path.join(o, "u" + ext)),
                                                    "u" + ext)[1], unpriv=True, unreadable=["u" + ext])
        one(f"sparse{ext}", lambda o, ext=ext: mk_sparse(o, "h" + ext, b"\x7fELF\x02\x01\x01" if ext != ".ptx" else b".version 8.0\n.target sm_80\n", 64 << 30))
        one(f"self-link{ext}", lambda o, ext=ext: (os.symlink("l" + ext, os.path.join(o, "l" + ext)), "l" + ext)[1])
    one("link-to-dir-of-ptx", lambda o: (os.makedirs(os.path.join(o, "..", "elsewhere"), exist_ok=True),
                                         shutil.copy(os.path.join(P.art, "s.ptx"), os.path.join(o, "..", "elsewhere", "x.ptx")),
                                         os.symlink(os.path.abspath(os.path.join(o, "..", "elsewhere")), os.path.join(o, "linked")), None)[3],
        expect="any")
    one("self-link-dirs", lambda o: (os.symlink(".", os.path.join(o, "a")), os.symlink(".", os.path.join(o, "b")), None)[2], expect="any")
    one("unreadable-subdir", lambda o: (os.makedirs(os.path.join(o, "sub")), shutil.copy(os.path.join(P.art, "k.fatbin"), os.path.join(o, "sub")),
                                        "sub")[2], unpriv=True, unreadable=["sub"])
    one("thin-archive", lambda o: (shutil.copy(os.path.join(P.art, "libthin.a"), o), "libthin.a")[1])
    one("newline-name", lambda o: (shutil.copy(os.path.join(P.art, "k.fatbin"), os.path.join(o, "a\nb.fatbin")), None)[1], expect="any")
    one("lock-bless-html-same", lambda o: None, extra=("--lock", "x.lock", "--bless", "--html", "x.lock"), names=["x.lock"])


AREAS = {
    "binaries": area_binaries, "directories": area_directories, "paths": area_paths, "lock": area_lock,
    "outputs": area_outputs, "environment": area_env, "tools": area_tools, "tune": area_tune,
    "concurrency": area_concurrency, "build": area_build,
}
PASS = None


def main():
    global PASS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/release/cargo-occupancy"))
    ap.add_argument("-a", "--area", action="append", help="run only these areas (repeatable)")
    ap.add_argument("-k", "--match", help="run only attempts whose name contains this")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=60, help="seconds an attempt may run (default 60)")
    ap.add_argument("--mem-mb", type=int, default=8192, help="address-space limit of each attempt")
    ap.add_argument("--flips", type=int, default=24, help="bit flips per binary")
    ap.add_argument("--json", help="write every attempt's outcome here")
    ap.add_argument("--keep", action="store_true", help="keep the private directory")
    ap.add_argument("-l", "--list", action="store_true", help="list the attempts, run nothing")
    opts = ap.parse_args()
    if not os.access(opts.bin, os.X_OK):
        sys.exit(f"no {opts.bin}: cargo build --release -p cargo-occupancy")
    for tool in ["nvcc", "cuobjdump", "nvdisasm", "ar", "unshare"]:
        if not tool_path(tool):
            sys.exit(f"{tool} is not on PATH (source <(scripts/setup-cuda.sh --env))")
    P = PASS = Pass(opts)
    started = time.time()
    try:
        P.build_artefacts()
        for name, fn in AREAS.items():
            if not opts.area or name in opts.area:
                fn(P)
        cases = [c for c in P.cases if not opts.match or opts.match in c.name]
        if opts.list:
            for c in cases:
                print(f"{c.area}\t{c.name!r}")
            print(len(cases), "attempts")
            return 0
        table = {}
        outcomes = []

        def run(case):
            try:
                r, found = P.run_case(case)
            except Exception as e:  # a fault of this script, not of the tool: said, never counted as a pass
                r, found = {"rc": None, "stderr": f"{type(e).__name__}: {e}", "seconds": 0}, {"script_error": str(e)}
            return case, r, found

        with ThreadPoolExecutor(opts.jobs) as pool:
            for i, (case, r, found) in enumerate(pool.map(run, cases)):
                row = table.setdefault(case.area, dict.fromkeys(["attempts", *COLUMNS, "script_error"], 0))
                row["attempts"] += 1
                for col in found:
                    row[col] += 1
                outcomes.append({"area": case.area, "name": case.name, "rc": r["rc"], "seconds": r.get("seconds"),
                                 "found": found, "stderr": r["stderr"][-2000:]})
                if found:
                    print(f"[{case.area}] {case.name!r}: exit {r['rc']}: " + "; ".join(f"{k}: {v}" for k, v in found.items()))
                    print("    " + r["stderr"].strip()[-600:].replace("\n", "\n    "))
                    sys.stdout.flush()
        total = dict.fromkeys(["attempts", *COLUMNS, "script_error"], 0)
        print()
        print("| area | attempts | panics | hangs or unbounded reads | fail-open | data loss | unclear errors |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for area, row in table.items():
            for k in total:
                total[k] += row[k]
            print(f"| {area} | " + " | ".join(str(row[k]) for k in ["attempts", *COLUMNS]) + " |")
        print("| **all** | " + " | ".join(f"**{total[k]}**" for k in ["attempts", *COLUMNS]) + " |")
        if total["script_error"]:
            print(f"{total['script_error']} attempt(s) failed in this script itself (see above)")
        print(f"{time.time() - started:.0f} s")
        left = [n for n in os.listdir(P.tmp)]
        if left:
            print(f"note: {len(left)} file(s) left in the tool's TMPDIR: {left[:5]}")
        if opts.json:
            with open(opts.json, "w") as f:
                json.dump({"table": table, "outcomes": outcomes}, f, indent=1)
        return 1 if any(total[k] for k in [*COLUMNS, "script_error"]) else 0
    finally:
        if not opts.keep:
            subprocess.run(["chmod", "-R", "u+rwx", P.work], stderr=subprocess.DEVNULL)
            shutil.rmtree(P.work, ignore_errors=True)
        else:
            print("kept", P.work)


if __name__ == "__main__":
    sys.exit(main())
