#!/usr/bin/env python3
"""List import circles between the modules (files) of a crate.

Usage: scripts/module-cycles.py [CRATE_SRC_DIR]   (default: occupancy-core/src)

A file imports another when it names it in a path: `use crate::a::b::Item`, `use super::x`,
`super::x::f()`, `crate::a::f()`, a `pub use` re-export included. A path names the deepest module
file it reaches (`crate::lint::LintId` names `lint.rs`, `crate::lint::sass::f` names
`lint/sass.rs`). An item a module re-exports counts as the module it comes from: `crate::Error`,
re-exported by lib.rs with `pub use error::Error;`, names `error.rs`, not the crate root (a
re-export of the root hid circles). Two kinds of edge are left out, being the module tree rather than an import:
a module and its ancestors (`mod.rs` re-exporting its children, a child reading its parent), and
test code: every item under `#[cfg(test)]` (or `#[cfg(all(test, ...))]`) wherever it is in a
file, and every module file declared so (`#[cfg(test)] mod tests;`) with the modules below it.
Every `.rs` file under the directory is a module, in every folder (`a/b.rs` is `a::b`,
`a/mod.rs` is `a`).

Prints every strongly connected component of more than one file (a circle: each of its files
reaches every other and back) with one shortest circle through it; then the same between the
crate's top-level modules, a folder and its `.rs` counted as one node (`spec <-> lint` is a
circle even when the files that import each other differ). Exits 1 when there is any circle of
either kind, 0 with "0 circles" otherwise.
"""

import os
import re
import sys


def module_files(src):
    """Module path (tuple) -> file, for every .rs file under src."""
    mods = {}
    for root, _dirs, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
            if rel in (["lib"], ["main"]):
                parts = ()
            elif rel[-1] == "mod":
                parts = tuple(rel[:-1])
            else:
                parts = tuple(rel)
            mods[parts] = path
    return mods


def strip_literals(text):
    """Drop comments, and string and char literals (kept as `""` and `' '`)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), m.end())
            i = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""')
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            out.append('""')
        elif m := CHAR.match(text, i):
            i = m.end()
            out.append("' '")
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


RAW_STRING = re.compile(r'\b(?:b?r)(#*)"')
CHAR = re.compile(r"'(?:\\.[^']*|[^'\\])'")
# `#[cfg(test)]`, `#[cfg(all(test, unix))]`: the item under it exists in test builds only.
# (`#[cfg(any(test, ...))]` is not test-only and stays.)
TEST_CFG = re.compile(r"#\[cfg\((?:all\((?:[^()]*,\s*)?)?test\b[^\]]*\]")
ATTRIBUTE = re.compile(r"\s*#!?\[")
MOD_DECLARATION = re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_]\w*)\s*;")


def balanced_end(text, i):
    """The index just past the bracket group opening at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] in "([{":
            depth += 1
        elif text[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(text)


def item_end(text, i):
    """The index just past the item starting at text[i]: its first `;` or `{...}` outside
    parentheses and brackets (`fn f(a: [u8; 4]) {...}`, `mod tests;`, `impl X {...}`)."""
    j = i
    while j < len(text):
        if text[j] in "([":
            j = balanced_end(text, j)
        elif text[j] == ";":
            return j + 1
        elif text[j] == "{":
            return balanced_end(text, j)
        else:
            j += 1
    return len(text)


def strip_tests(text):
    """Drop comments and literals, and every item under a test-only `#[cfg(...)]` (a test
    module, a test helper function or impl, a `use` for tests), wherever it is in the file.

    Returns (the text left, the names of child modules declared test-only: `#[cfg(test)] mod
    tests;`, whose files are test code)."""
    text = strip_literals(text)
    out, test_modules, i = [], set(), 0
    while m := TEST_CFG.search(text, i):
        out.append(text[i : m.start()])
        j = m.end()
        while a := ATTRIBUTE.match(text, j):  # more attributes on the same item
            j = balanced_end(text, a.end() - 1)
        if d := MOD_DECLARATION.match(text, j):
            test_modules.add(d.group(1))
        i = item_end(text, j)
    out.append(text[i:])
    return "".join(out), test_modules


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", "", tree)
    depth, start = 0, None
    for i, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                prefix, inner, rest = tree[:start], tree[start + 1 : i], tree[i + 1 :]
                out, part, d = [], "", 0
                for c in inner + ",":
                    if c == "," and d == 0:
                        if part:
                            out += [prefix + p for p in expand_use(part + rest)]
                        part = ""
                        continue
                    d += c == "{"
                    d -= c == "}"
                    part += c
                return out
    return [tree]


PATH = re.compile(r"\b((?:crate|super|self)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)")


def paths_in(text):
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        paths += expand_use(m.group(1))
    paths += PATH.findall(text)
    return paths


def reexports_of(text, mod, mods):
    """Name -> the path it re-exports, for every `pub use` of a module's text (`pub use
    error::{Error, FamilyDeclaration};` in lib.rs: `Error` -> `crate::error::Error`), so that an
    import of the crate root (`crate::Error`) counts as an import of what it names."""
    names = {}
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", text):
        for path in expand_use(m.group(1)):
            original, _, alias = path.partition(" as ")
            name = alias or original.split("::")[-1]
            if name in ("*", "self") or not name.isidentifier():
                continue
            first = original.split("::")[0]
            if first not in ("crate", "super", "self") and mod + (first,) not in mods:
                continue  # another crate's item
            names[name] = original
    return names


REEXPORTS = {}


def resolve(path, here, mods, depth=0):
    """The deepest module file a path names, from module `here`; None for extern paths. An item
    a module re-exports (`crate::Error`, re-exported by lib.rs from `error.rs`) names the module
    it comes from."""
    parts = [p for p in path.split("::") if p]
    if not parts:
        return None
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    elif parts[0] in ("super", "self"):
        base = list(here)
        while parts and parts[0] in ("super", "self"):
            if parts.pop(0) == "super":
                base.pop()
        base, rest = tuple(base), parts
    else:
        # `use name::...` where `name` is a child module of `here`.
        if here + (parts[0],) not in mods:
            return None
        base, rest = here, parts
    best = base
    for part in rest:
        part = part.split(" as ")[0]
        if best + (part,) in mods:
            best = best + (part,)
        else:
            reexported = REEXPORTS.get(best, {}).get(part)
            if reexported and depth < 8:
                return resolve(reexported, best, mods, depth + 1) or best
            break
    return best


def graph(src):
    mods = module_files(src)
    texts, test_children = {}, {}
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as f:
            texts[mod], test_children[mod] = strip_tests(f.read())
    # A module declared under `#[cfg(test)]` (`mod tests;`, `mod fuzz;`) is test code, and so
    # is every module below it.
    test_only = {
        mod
        for mod in mods
        if any(mod[: k - 1] in mods and mod[k - 1] in test_children[mod[: k - 1]] for k in range(1, len(mod) + 1))
    }
    REEXPORTS.clear()
    for mod in mods:
        REEXPORTS[mod] = reexports_of(texts[mod], mod, mods)
    edges = {m: set() for m in mods if m not in test_only}
    for mod in edges:
        text = texts[mod]
        paths = paths_in(text)
        # `use crate::sass;` then `sass::facts::f()`: a module imported by name, used as a path.
        for p in list(paths):
            last = p.split("::")[-1]
            alias = last.split(" as ")[-1]
            target = resolve(p.split(" as ")[0], mod, mods)
            if target and target[-1] == last.split(" as ")[0] and alias.isidentifier():
                bare = re.compile(r"(?<![:\w])" + alias + r"((?:::[A-Za-z_]\w*)+)")
                paths += ["crate::" + "::".join(target) + m for m in bare.findall(text)]
        for p in paths:
            target = resolve(p, mod, mods)
            if target is None or target == mod or target in test_only:
                continue
            if mod[: len(target)] == target or target[: len(mod)] == mod:
                continue  # ancestor or descendant: the module tree, not an import
            edges[mod].add(target)
    return mods, edges


def sccs(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def shortest_circle(comp, edges):
    members = set(comp)
    best = None
    for start in sorted(comp):
        prev, frontier = {start: None}, [start]
        while frontier and best is None or (frontier and len(prev) < len(members)):
            nxt = []
            for v in frontier:
                for w in sorted(edges[v] & members):
                    if w == start:
                        cyc = [v]
                        while prev[cyc[-1]] is not None:
                            cyc.append(prev[cyc[-1]])
                        cyc.reverse()
                        if best is None or len(cyc) < len(best):
                            best = cyc
                    elif w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
    return best


def folder_edges(edges):
    """The same graph between a crate's top-level modules: a folder (`lint/`, with `lint.rs`)
    and a top-level file are one node each, so `spec/grammar.rs -> lint/id.rs` and
    `lint/launch.rs -> spec/mod.rs` are the circle `spec <-> lint` even when no file of one
    reaches a file of the other and back."""
    top = lambda m: m[:1] if m else ()
    folded = {}
    for mod, targets in edges.items():
        folded.setdefault(top(mod), set())
        for target in targets:
            if top(target) != top(mod):
                folded[top(mod)].add(top(target))
    for targets in list(folded.values()):
        for target in targets:
            folded.setdefault(target, set())
    return folded


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "occupancy-core/src"
    mods, edges = graph(src)
    name = lambda m: os.path.relpath(mods[m], src)
    comps = sccs(edges)
    for comp in comps:
        files = ", ".join(sorted(name(m) for m in comp))
        cyc = shortest_circle(comp, edges)
        print(f"circle of {len(comp)} files: {files}")
        print("  e.g. " + " -> ".join(name(m) for m in cyc + [cyc[0]]))
    folded = folder_edges(edges)
    top_name = lambda m: "::".join(m) or "lib"
    folder_comps = sccs(folded)
    for comp in folder_comps:
        cyc = shortest_circle(comp, folded)
        print(f"circle of {len(comp)} top-level modules: {', '.join(sorted(top_name(m) for m in comp))}")
        print("  e.g. " + " -> ".join(top_name(m) for m in cyc + [cyc[0]]))
    total = len(comps) + len(folder_comps)
    print(f"{total} circles ({len(comps)} between files, {len(folder_comps)} between top-level modules)")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
