#!/usr/bin/env python3
"""Check that toolport's module dependencies point one way (ARCHITECTURE.md, "Direction of
dependencies").

Reads every file under src/, maps it to its module path (src/tools/web/mod.rs -> tools::web),
and collects the modules it refers to through `crate::…`, `super::…` and `self::…` paths
(in `use` items and inline paths). Then, for every module, its child modules are collapsed
into one node each (a child and everything below it), and the references between siblings must
form no cycle. A module may use its own children and its children may use it (that is what
`mod` and `super::` are for); two siblings must not use each other, directly or around a loop.
The crate root (lib.rs) and main.rs compose everything and are not checked.

Runs over both crates: the `toolport-tools` library (crates/toolport-tools/src), where the
layering rule also holds (the tool model and the workspace never reach up into the tools, the
plugins, the upstreams, the helper processes, the config file's loader or the `host` door), and
the `toolport` binary (src/), whose modules reach the library's only through the crate boundary
(which Cargo itself keeps one-way), by the library's `host` door.

Exits 1 naming every cycle and violation found; prints a one-line summary otherwise.
"""

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# (source folder, the bottom of the crate, what the bottom never imports)
CRATES = [
    (REPO / "crates" / "toolport-tools" / "src",
     {"schema", "settings", "secret", "size", "instructions", "tool", "definition", "typed",
      "registry", "workspace", "background", "validator"},
     {"hidden", "tools", "plugins", "toolbox", "upstreams", "config", "host"}),
    (REPO / "src", set(), set()),
]

PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP_RE = re.compile(r"\buse\s+(crate|super|self)::\{([^;]*)\};", re.S)


def module_of(path: Path, src: Path) -> tuple:
    rel = path.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return ()
    return tuple(parts)


def strip_comments(text: str) -> str:
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def main() -> int:
    failed = 0
    for src, lower, upper in CRATES:
        failed |= check(src, lower, upper)
    return failed


def check(root: Path, LOWER: set, UPPER: set) -> int:
    # Unit-test modules may reach anywhere (a test builds the whole config); they are not
    # part of the dependency graph.
    files = {
        module_of(p, root): p
        for p in root.rglob("*.rs")
        if p.name not in ("main.rs", "tests.rs")
    }
    modules = set(files)

    def resolve(current: tuple, is_mod_file: bool, anchor: str, rest: list) -> tuple:
        if anchor == "crate":
            base = ()
        else:
            # In a file `a/b.rs` (module a::b), `self` is a::b and `super` is a.
            base = current if anchor == "self" else current[:-1]
        target = base
        for part in rest:
            if base + (part,) in modules or target + (part,) in modules:
                target = target + (part,)
            else:
                break
        return target

    edges = {}
    for module, path in files.items():
        if module == ():
            continue
        text = strip_comments(path.read_text())
        # The `#[cfg(test)] mod tests` block closes each file, by convention.
        text = re.split(r"#\[cfg\(test\)\]\s*mod tests\b", text)[0]
        is_mod = path.name == "mod.rs"
        refs = set()
        # `use crate::{a::X, b::{Y, Z}}`: expand the first level of a group.
        for anchor, group in USE_GROUP_RE.findall(text):
            for item in re.split(r",(?![^{]*\})", group):
                item = item.strip()
                if item:
                    head = re.split(r"::|\{|\s", item)[0]
                    refs.add(resolve(module, is_mod, anchor, [head] + re.findall(r"::([A-Za-z_]\w*)", item)[:3]))
        for anchor, rest in PATH_RE.findall(text):
            refs.add(resolve(module, is_mod, anchor, rest.strip(":").split("::")))
        edges[module] = {r for r in refs if r != module}

    problems = []
    for module, targets in edges.items():
        if module[0] in LOWER:
            for t in targets:
                if t and t[0] in UPPER:
                    problems.append(f"layering: {'::'.join(module)} uses {'::'.join(t)}")

    # Sibling cycles at every level.
    parents = {m[:-1] for m in modules if m}
    cycles = 0
    for parent in sorted(parents):
        children = sorted({m[len(parent)] for m in modules if len(m) > len(parent) and m[:len(parent)] == parent})
        graph = {c: set() for c in children}
        for src, targets in edges.items():
            if len(src) <= len(parent) or src[:len(parent)] != parent:
                continue
            a = src[len(parent)]
            for t in targets:
                if len(t) > len(parent) and t[:len(parent)] == parent:
                    b = t[len(parent)]
                    if a != b:
                        graph[a].add(b)
        # Tarjan-free: DFS for back edges.
        state = {}
        stack = []

        def visit(node):
            nonlocal cycles
            state[node] = 1
            stack.append(node)
            for nxt in sorted(graph[node]):
                if state.get(nxt) == 1:
                    loop = stack[stack.index(nxt):] + [nxt]
                    prefix = "::".join(parent) + "::" if parent else ""
                    problems.append("cycle: " + " -> ".join(prefix + n for n in loop))
                    cycles += 1
                elif nxt not in state:
                    visit(nxt)
            stack.pop()
            state[node] = 2

        for c in children:
            if c not in state:
                visit(c)

    if problems:
        for p in problems:
            print(p)
        print(f"module check ({root.relative_to(REPO)}): {len(problems)} problem(s)")
        return 1
    n_edges = sum(len(t) for t in edges.values())
    print(f"module check ({root.relative_to(REPO)}): {len(modules)} modules, {n_edges} references, no cycles, layering ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
