#!/usr/bin/env python3
"""Write link/startup.order: the functions of the release binary that run from `exec` to the
first answers of a stdio session, for lld's --symbol-ordering-file (see build.rs).

    python3 link/order.py [path/to/toolport]     (default: target/release/toolport)

It runs the binary under valgrind's callgrind (`apt-get install valgrind`) for one session,
twice (each message after the answer to the one before, then all at once): initialize,
tools/list, read_file and list_directory on a scratch root, then end of input.
Every function of the binary's own object that ran is listed once, by its mangled name.

The list is exact for the build it was recorded from. Fat LTO renumbers the suffix of the
local copies it makes (`…E.34240`) and may inline differently after any change to the code,
so a list recorded before a change misses some start-up functions of the build after it,
and each one missed costs a 64 KiB window of resident text (one small change: 150 names
missed, 1.7 MB more resident; BENCHMARKS.md). Re-run it as the last step of a change to the
code, before measuring; names that no longer exist are skipped by the linker, so a stale
list costs memory and start-up time, never correctness.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "link", "startup.order")


def messages(root):
    """The stdio session the order is recorded from: JSON-RPC messages, and whether an answer
    comes back for each (notifications get none)."""
    small = os.path.join(root, "small.txt")
    return [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "order", "version": "1"}}}, True),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
        ({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "read_file", "arguments": {"path": small}}}, True),
        ({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
          "params": {"name": "list_directory", "arguments": {"path": root}}}, True),
    ]


def record(binary, root, out, paced):
    """Run the session under callgrind into `out`: all messages at once, or (`paced`) each
    after the answer to the one before, as clients and the peers bench send them. Which
    runtime paths run (a read that finds its line waiting, or parks and is woken) depends on
    that, so the order is the union of both."""
    proc = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
         binary, "--root", root],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers = []
    try:
        for message, answered in messages(root):
            proc.stdin.write(json.dumps(message) + "\n")
            if paced:
                proc.stdin.flush()
                if answered:
                    answers.append(proc.stdout.readline())
        proc.stdin.close()
        answers += proc.stdout.readlines()
        stderr = proc.stderr.read()
        proc.wait(timeout=300)
    finally:
        proc.kill()
    answers = [json.loads(a) for a in answers if a.strip()]
    ids = sorted(a.get("id") for a in answers if "id" in a)
    if ids != [1, 2, 3, 4] or any("error" in a for a in answers):
        sys.exit(f"the session did not get its four answers: {answers}\n{stderr[-2000:]}")


# A linker symbol as callgrind names it with `--demangle=no`: mangled Rust or a C name.
SYMBOL = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")


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
                # callgrind's own names (`f'2` for a recursion level, `0x…` for code without
                # a symbol, `(below main)`) are no linker symbols.
                if kind == "fn" and current == binary and SYMBOL.match(names[key]):
                    fn = names[key]
                    if fn not in seen:
                        seen.add(fn)
                        order.append(fn)
    return order


def main():
    binary = os.path.realpath(sys.argv[1] if len(sys.argv) > 1
                              else os.path.join(ROOT, "target", "release", "toolport"))
    runs = []
    with tempfile.TemporaryDirectory() as root:
        with open(os.path.join(root, "small.txt"), "w") as f:
            f.write("a small file\n" * 40)
        for paced in (True, False):
            out = os.path.join(root, "callgrind.out")
            record(binary, root, out, paced)
            runs.append(functions(out, binary))
    # The union, each function once, where it first appears.
    order = list(dict.fromkeys(fn for run in runs for fn in run))
    with open(OUT, "w") as f:
        f.write("".join(name + "\n" for name in order))
    print(f"{len(order)} functions -> {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
