#!/usr/bin/env python3
"""Write link/startup.order: the functions of the release binary that run from `exec` to the
first answers of a stdio session, for lld's --symbol-ordering-file (see build.rs).

    python3 link/order.py [path/to/toolport]     (default: target/release/toolport)

It runs the binary under valgrind's callgrind (`apt-get install valgrind`) for one session:
initialize, tools/list, read_file and list_directory on a scratch root, then end of input.
Every function of the binary's own object that ran is listed once, in callgrind's order,
by its mangled name. Re-run it after a change that moves start-up code (the peers bench's
idle RSS row shows when: BENCHMARKS.md); names that no longer exist are skipped by the
linker, so a stale list costs memory, never correctness.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "link", "startup.order")


def session(root):
    """The stdio session the order is recorded from, as newline-delimited JSON-RPC."""
    small = os.path.join(root, "small.txt")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "order", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "read_file", "arguments": {"path": small}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "list_directory", "arguments": {"path": root}}},
    ]
    return "".join(json.dumps(m) + "\n" for m in messages)


def functions(callgrind_out, binary):
    """Functions of `binary`'s object in the callgrind output, first appearance first."""
    objects, names, seen, order = {}, {}, set(), []
    current = None
    with open(callgrind_out, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, key, name = m.groups()
                if name:
                    objects[key] = name
                if kind == "ob":
                    current = objects.get(key)
                continue
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line)
            if m:
                kind, key, name = m.groups()
                if name:
                    names[key] = name
                if kind == "fn" and current == binary:
                    fn = names[key]
                    if fn not in seen:
                        seen.add(fn)
                        order.append(fn)
    return order


def main():
    binary = os.path.realpath(sys.argv[1] if len(sys.argv) > 1
                              else os.path.join(ROOT, "target", "release", "toolport"))
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "small.txt"), "w") as f:
            f.write("a small file\n" * 40)
        out = os.path.join(root, "callgrind.out")
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
             binary, "--root", root],
            input=session(root), capture_output=True, text=True, timeout=300)
        answers = [json.loads(l) for l in run.stdout.splitlines() if l.strip()]
        ids = sorted(a.get("id") for a in answers if "id" in a)
        if ids != [1, 2, 3, 4] or any("error" in a for a in answers):
            sys.exit(f"the session did not get its four answers: {run.stdout[-2000:]}\n{run.stderr[-2000:]}")
        order = functions(out, binary)
    with open(OUT, "w") as f:
        f.write("".join(name + "\n" for name in order))
    print(f"{len(order)} functions -> {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
