#!/usr/bin/env python3
"""Fails when a crate's modules import each other in a circle (issue 29: "no import circles").

A module's edges are the modules its `use` items and `crate::`/`super::`/`self::` paths name. A file's
own test module (`#[cfg(test)] mod ... {` to the end of the file, and indented `use super::...` lines,
where `super` is the file itself) is left out: a test reaching into the code it tests is not a circle.
A circle is a strongly connected group of two or more modules (Tarjan). The parse is textual, which is
enough for this workspace's style (one `use` per item or one braced group per line range).

Usage: module-circles.py CRATE_SRC_DIR...
"""
import os
import re
import sys


def modules(root):
    """Module path (a tuple) -> file, for every .rs file under `root`."""
    found = {}
    for d, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            parts = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
            if parts[-1] in ("lib", "main", "mod"):
                parts = parts[:-1]
            found[tuple(parts)] = os.path.join(d, f)
    return found


def resolve(mods, cur, path):
    """The deepest known module a `crate::`/`super::`/`self::` path names from module `cur`."""
    parts = path.split("::")
    if parts[0] == "crate":
        base, parts = (), parts[1:]
    elif parts[0] == "self":
        base, parts = cur, parts[1:]
    elif parts[0] == "super":
        base = cur
        while parts and parts[0] == "super":
            base, parts = base[:-1], parts[1:]
    else:
        return None
    for p in parts:
        if base + (p,) not in mods:
            break
        base = base + (p,)
    return base


def production_text(path):
    src = open(path, encoding="utf-8").read()
    src = re.sub(r"//.*", "", src)
    src = re.sub(r"(?m)^[ \t]+use\s+super::[^;]*;", "", src)
    return re.sub(r"(?s)#\[cfg\(test\)\]\s*mod\s+\w+\s*\{.*", "", src)


def edges_of(mods, cur, src):
    out = set()
    for item in re.findall(r"\buse\s+([^;]+);", src):
        head = item.split("{")[0].strip().rstrip(":")
        names = [""]
        if "{" in item and "}" in item:
            inner = item[item.index("{") + 1 : item.rindex("}")]
            names = [n.strip().split(" as ")[0].split("{")[0].rstrip(":") for n in inner.split(",")]
        for n in names:
            target = head if n in ("", "self") else head + "::" + n
            r = resolve(mods, cur, target)
            if r is not None:
                out.add(r)
    for p in re.findall(r"\b((?:crate|super|self)(?:::\w+)+)", src):
        r = resolve(mods, cur, p)
        if r is not None:
            out.add(r)
    out.discard(cur)
    return out


def circles(edges):
    index, low, stack, on, groups, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in edges:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in edges:
        if v not in index:
            visit(v)
    return groups


def main(roots):
    failed = False
    for root in roots:
        mods = modules(root)
        edges = {m: edges_of(mods, m, production_text(f)) for m, f in mods.items()}
        for group in circles(edges):
            failed = True
            names = sorted("::".join(m) or "crate" for m in group)
            print(f"module-circles: {root}: {', '.join(names)} import each other")
    if not failed:
        print(f"module-circles: no import circle in {len(roots)} crates")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
