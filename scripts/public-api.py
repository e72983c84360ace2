#!/usr/bin/env python3
"""Count what each library crate promises: its public items, their inherent methods and fields.

Usage: scripts/public-api.py [--list] [--no-build] [CRATE ...]
       (default: occupancy-model occupancy-core occupancy-build occupancy-macros occupancy)

Runs `cargo doc -p CRATE ... --no-deps --all-features` (stable Rust; `--no-build` reads what
target/doc already holds) and counts, per crate, from rustdoc's pages:

- items: the entries of `target/doc/occupancy_core/all.html` (structs, enums, functions,
  constants, statics, traits, macros, type aliases), each listed once at its public path;
- methods: the inherent methods and associated constants of those structs and enums (not trait
  implementations, which the traits promise);
- fields: the public fields of structs and of enum variants;
- hidden: what rustdoc leaves out, the public items under `#[doc(hidden)]` (occupancy-build's
  `cli`, the module its command-line tool uses and no one else should), read from the source:
  each such item, and each name a hidden public module defines or re-exports.

`--list` prints every item's path too, one a line, for a diff between two commits.
"""

import html
import os
import re
import subprocess
import sys

CRATES = ["occupancy-model", "occupancy-core", "occupancy-build", "occupancy-macros", "occupancy"]


def doc_dir(crate):
    return os.path.join("target", "doc", crate.replace("-", "_"))


def build(crates):
    packages = [arg for crate in crates for arg in ("-p", crate)]
    subprocess.run(
        ["cargo", "doc", *packages, "--no-deps", "--all-features", "-q"],
        check=True,
    )


def items(doc):
    """(section, path, page) for every entry of all.html."""
    with open(os.path.join(doc, "all.html"), encoding="utf-8") as f:
        text = f.read()
    parts = re.split(r'<h3 id="([a-z-]+)">', text)
    found = []
    for section, body in zip(parts[1::2], parts[2::2]):
        for page, name in re.findall(r'<li><a href="([^"]+)">(.*?)</a></li>', body):
            found.append((section, html.unescape(re.sub(r"<[^>]+>", "", name)), page))
    return found


def members(doc, page):
    """(inherent methods and associated constants, public fields) of one struct or enum page."""
    with open(os.path.join(doc, page), encoding="utf-8") as f:
        text = f.read()
    fields = len(re.findall(r'id="structfield\.', text))
    fields += len(re.findall(r'id="variant\.[A-Za-z0-9_]+\.field\.', text))
    start = text.find('id="implementations-list"')
    methods = 0
    if start >= 0:
        end = min(
            (i for i in (text.find(marker, start) for marker in (
                'id="trait-implementations"',
                'id="synthetic-implementations"',
                'id="blanket-implementations"',
            )) if i >= 0),
            default=len(text),
        )
        inherent = text[start:end]
        methods = len(re.findall(r'<section id="(?:method|associatedconstant)\.', inherent))
    return methods, fields


HIDDEN = re.compile(r"#\[doc\(hidden\)\]\s*(?:#\[[^\]]*\]\s*)*")
HIDDEN_MOD = re.compile(r"pub\s+mod\s+(\w+)\s*\{")
PUB_NAME = re.compile(r"\bpub\s+(?:use\s+([^;]+);|(?:[a-z]+\s+)*?(?:fn|struct|enum|trait|const|static|type|mod)\s+(\w+))")


def use_names(tree):
    """The names `a::{b, c::{d as e}}` brings in: b, e."""
    tree = re.sub(r"\s+", " ", tree)
    names = []
    for part in re.split(r"[{},]", tree):
        part = part.strip()
        if part and not part.endswith("::"):
            names.append(re.split(r"\s+as\s+|::", part)[-1].strip())
    return [name for name in names if name]


def block(text, start):
    """The text of the `{...}` block opening at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "{"
        depth -= text[i] == "}"
        if depth == 0:
            return text[start + 1 : i]
    return text[start + 1 :]


def hidden(crate):
    """Paths of the public items under `#[doc(hidden)]` in a crate's source."""
    found = []
    for root, _dirs, files in os.walk(os.path.join(crate, "src")):
        for name in sorted(files):
            if not name.endswith(".rs"):
                continue
            with open(os.path.join(root, name), encoding="utf-8") as f:
                text = f.read()
            for m in HIDDEN.finditer(text):
                if module := HIDDEN_MOD.match(text, m.end()):  # everything it makes public
                    body = block(text, module.end() - 1)
                    for use, item in PUB_NAME.findall(body):
                        found += [f"{module.group(1)}::{n}" for n in (use_names(use) if use else [item])]
                elif item := PUB_NAME.match(text, m.end()):
                    found += use_names(item.group(1)) if item.group(1) else [item.group(2)]
    return found


def count(crate, listing):
    doc = doc_dir(crate)
    found = items(doc)
    sections = {}
    methods = fields = 0
    for section, _path, page in found:
        sections[section] = sections.get(section, 0) + 1
        if section in ("structs", "enums"):
            m, f = members(doc, page)
            methods += m
            fields += f
    secret = hidden(crate)
    if listing:
        for section, path, _page in sorted(found, key=lambda item: item[1]):
            print(f"{section[:-1]:<10} {path}")
        for path in secret:
            print(f"{'hidden':<10} {path}")
    summary = ", ".join(f"{count} {section}" for section, count in sections.items())
    print(f"{crate} public items: {len(found)} ({summary})")
    print(f"  inherent methods and associated constants: {methods}")
    print(f"  public fields: {fields}")
    print(f"  doc(hidden) public items: {len(secret)}" + (f" ({', '.join(secret)})" if secret else ""))


def main():
    crates = [arg for arg in sys.argv[1:] if not arg.startswith("--")] or CRATES
    if "--no-build" not in sys.argv:
        build(crates)
    for crate in crates:
        count(crate, "--list" in sys.argv)


if __name__ == "__main__":
    main()
