#!/usr/bin/env python3
"""The linker of toolport's Linux release binary: links it, runs it, and links it again with the
functions its start-up ran placed together.

Why: an MCP server is started once per client session, often several at once, and what a
started server keeps resident is mostly the pages of its own code that start-up touched. The
kernel maps a file-backed page together with its neighbours (fault-around, 64 KiB), so a few
thousand start-up functions scattered through ~30 MB of code keep most of the code resident.
Laid out together they fit in a few hundred KiB (BENCHMARKS.md, "Lean again").

How: rustc calls this script as the linker (`-C linker=dist/link_order.py`, given to the final
binary only: see dist/release.py and .github/workflows/release.yml) with the real linker's
arguments. It

 1. links the binary as asked with the real linker (`CARGO_TARGET_<TRIPLE>_LINKER`, TRIPLE
    from `TOOLPORT_LINK_TARGET`: maturin --zig sets it to its `zig cc` wrapper), and again
    keeping its symbol table (rustc has zig strip it);
 2. runs that binary under valgrind's callgrind for stdio sessions in a throwaway home with no
    TOOLPORT_* settings: start-up (initialize, tools/list), then start-up and the first calls
    (a read_file and a list_directory on a scratch root), each paced and all at once;
 3. links again with lld's `--symbol-ordering-file` listing those functions, start-up's
    first: lld then places their sections (rustc and clang emit one per function) at the start
    of `.text` in that order and everything else as before. `zig cc` refuses that flag, so
    the first link is made with `-v`, which prints the `ld.lld` command zig runs, and the last
    link runs that command through zig's own lld (`ZIG_COMMAND`, which maturin --zig sets)
    with the flag added;
 4. checks the final binary answers the session natively.

The order is recorded from the very objects it is applied to, in the same link, so it can never
go stale: nothing is kept in the repository, nothing needs re-recording after a change. A
function the session did not run only stays where the linker puts it; the order changes
layout, never behaviour. The functions, in order, are written beside what the linker wrote
(`target/.../deps/toolport-HASH.startup-order`) for inspection.

Needs valgrind (`apt-get install valgrind`) and a binary this machine can run; otherwise the
link fails and says so. `TOOLPORT_LINK_ORDER=off` links once, unordered (a build for another
architecture, or a machine without valgrind: the binary then keeps more of its code resident).
`TOOLPORT_LINK_ORDER_KEEP_UNORDERED=1` also writes the binary linked as it would be without the
order, from the same objects, beside it (`….unordered`): what the order buys, measured
(BENCHMARKS.md, "Lean again").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

# How long one recording session under callgrind may take (it takes about 2 s here; valgrind is
# ~50x slower than native, and CI machines are shared).
RECORD_TIMEOUT_S = 300
# How long the final binary may take to answer `initialize` natively.
CHECK_TIMEOUT_S = 60
# The arguments by which rustc has the linker strip the binary (`strip` in the profile, and
# `--strip-debug`, which `zig cc` takes as stripping the symbol table too).
STRIP_ARGS = {"-s", "-Wl,-s", "-Wl,--strip-all", "-Wl,--strip-debug", "-Wl,-S"}
# A linker symbol as callgrind names it with `--demangle=no`: mangled Rust (legacy or v0) or a C
# name. callgrind's own names (`f'2` for a recursion level, `0x…` for code without a symbol,
# `(below main)`) are no linker symbols.
SYMBOL = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")


def fail(message: str) -> None:
    sys.exit(f"dist/link_order.py: {message}")


def real_linker() -> list[str]:
    target = os.environ.get("TOOLPORT_LINK_TARGET", "")
    if not target:
        fail("TOOLPORT_LINK_TARGET (the Rust target triple being linked) is not set; "
             "dist/release.py sets it")
    var = "CARGO_TARGET_" + target.upper().replace("-", "_") + "_LINKER"
    linker = os.environ.get(var, "cc")
    if Path(linker).resolve() == Path(__file__).resolve():
        fail(f"{var} names this script: it must name the real linker")
    return [linker]


def output_of(args: list[str]) -> Path:
    """The `-o` argument, also inside an @response file (rustc writes one, an argument a line,
    when the command line is too long)."""
    flat: list[str] = []
    for arg in args:
        if arg.startswith("@") and Path(arg[1:]).is_file():
            flat += Path(arg[1:]).read_text().splitlines()
        else:
            flat.append(arg)
    for i, arg in enumerate(flat):
        if arg == "-o" and i + 1 < len(flat):
            return Path(flat[i + 1])
    fail(f"no -o OUTPUT among the linker arguments: {args}")
    raise AssertionError


def link(linker: list[str], args: list[str]) -> None:
    done = subprocess.run([*linker, *args])
    if done.returncode != 0:
        sys.exit(done.returncode)


def session(root: Path, calls: bool) -> list[tuple[dict, bool]]:
    """The stdio session the order is recorded from: messages, and whether each is answered;
    start-up alone (initialize, tools/list: what a server waiting for its first call has run),
    or with the first calls after it."""
    start = [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                     "clientInfo": {"name": "link-order", "version": "1"}}}, True),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
        ({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, True),
    ]
    first_calls = [
        ({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "read_file", "arguments": {"path": str(root / "small.txt")}}}, True),
        ({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
          "params": {"name": "list_directory", "arguments": {"path": str(root)}}}, True),
    ]
    return start + first_calls if calls else start


def hermetic_env(home: Path) -> dict:
    """No TOOLPORT_* settings of whoever builds, and a home of its own (no user config)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPORT_")}
    env.update({"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_STATE_HOME": str(home / ".state"), "XDG_CACHE_HOME": str(home / ".cache")})
    return env


def run_session(command: list[str], work: Path, calls: bool, paced: bool, timeout: float) -> None:
    """Run one session of `command` (the binary, maybe under valgrind) and check its answers:
    each message after the answer to the one before (`paced`), or all at once; the input ends
    once every answer is in (a server whose input ends stops waiting for calls in flight)."""
    root = work / "root"
    messages = session(root, calls)
    want = [m["id"] for m, answered in messages if answered]
    proc = subprocess.Popen([*command, "--root", str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=hermetic_env(work / "home"))
    # A hung session is killed: its missing answers then fail the check below.
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        answers = []
        for message, answered in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            if paced:
                proc.stdin.flush()
                if answered:
                    answers.append(proc.stdout.readline())
        if not paced:
            proc.stdin.flush()
            answers += [proc.stdout.readline() for _ in want]
        out, err = proc.communicate()
    finally:
        watchdog.cancel()
    answers = [json.loads(a) for a in [*answers, *out.splitlines()] if a.strip()]
    ids = sorted(a["id"] for a in answers if "id" in a)
    if proc.returncode != 0 or ids != want or any("error" in a or a.get("result", {}).get("isError")
                                                  for a in answers):
        late = f" (killed after {timeout} s)" if not watchdog.is_alive() and proc.returncode < 0 else ""
        fail(f"the session with {command[-1]} did not get its {len(want)} answers{late} "
             f"(exit {proc.returncode}): {str(answers)[:3000]}\n{err[-3000:]}")


def functions(callgrind_out: Path, binary: str) -> list[str]:
    """Functions of `binary`'s own object in a callgrind output, first appearance first."""
    objects: dict[str, str] = {}
    names: dict[str, str] = {}
    seen: set[str] = set()
    order: list[str] = []
    current = None
    for line in callgrind_out.read_text(encoding="utf-8", errors="replace").splitlines():
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
            fn = names.get(key, "")
            if kind == "fn" and current == binary and SYMBOL.match(fn) and fn not in seen:
                seen.add(fn)
                order.append(fn)
    return order


def record(binary: Path, work: Path) -> list[str]:
    """The functions start-up runs, then those the first calls add: each session paced and all
    at once (which runtime paths run — a read that finds its line waiting, or parks and is
    woken — depends on that). Start-up's come first so that a server waiting for its first call
    keeps only them resident."""
    valgrind = shutil.which("valgrind")
    if not valgrind:
        fail("valgrind is not installed (apt-get install valgrind): it records the start-up "
             "functions to lay out together; TOOLPORT_LINK_ORDER=off links without")
    runs = []
    for calls in (False, True):
        for paced in (True, False):
            out = work / f"callgrind.{calls}.{paced}.out"
            run_session([valgrind, "--quiet", "--tool=callgrind", "--demangle=no",
                         f"--callgrind-out-file={out}", str(binary)], work, calls, paced,
                        RECORD_TIMEOUT_S)
            runs.append(functions(out, str(binary)))
    return list(dict.fromkeys(fn for run in runs for fn in run))


def lld_command(linker: list[str], args: list[str]) -> list[str]:
    """Link as asked, with `-v`: the `ld.lld` command `zig cc` ran, to be run through zig's
    own lld."""
    if any(" " in arg for arg in args):
        fail("a linker argument holds a space, which zig's printed ld.lld command cannot "
             "carry; build from a path without spaces, or TOOLPORT_LINK_ORDER=off")
    done = subprocess.run([*linker, *args, "-v"], capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        sys.exit(done.returncode)
    commands = [line for line in done.stderr.splitlines() if line.startswith("ld.lld ")]
    if not commands:
        fail(f"{linker[0]} -v printed no ld.lld command: the real linker must be zig's "
             "(maturin --zig); TOOLPORT_LINK_ORDER=off links without the order")
    zig = os.environ.get("ZIG_COMMAND", "").split()
    if zig:
        lld = [*zig, "ld.lld"]
    elif shutil.which("ld.lld"):
        lld = ["ld.lld"]
    else:
        fail("neither ZIG_COMMAND (set by maturin --zig) nor ld.lld on PATH names an lld")
    return [*lld, *commands[-1].split(" ")[1:]]


def run_lld(command: list[str]) -> None:
    done = subprocess.run(command)
    if done.returncode != 0:
        fail(f"ld.lld failed (exit {done.returncode}): {' '.join(command)[:2000]}")


def with_output(command: list[str], out: Path) -> list[str]:
    """`command` with its `-o` argument replaced by `out`."""
    i = command.index("-o")
    return [*command[:i + 1], str(out), *command[i + 2:]]


def main() -> None:
    args = sys.argv[1:]
    linker = real_linker()
    if os.environ.get("TOOLPORT_LINK_ORDER", "on") == "off":
        link(linker, args)
        return
    out = output_of(args)
    with tempfile.TemporaryDirectory(prefix="toolport-link-order.") as tmp:
        work = Path(tmp)
        (work / "root").mkdir()
        (work / "home").mkdir()
        (work / "root" / "small.txt").write_text("a small file\n" * 40)
        lld = lld_command(linker, args)
        # The recording link keeps the symbol table (callgrind names functions by it; rustc asks
        # zig to strip, which drops it too): what is stripped is no part of the layout.
        link(linker, [a for a in args if a not in STRIP_ARGS])
        order = record(out.resolve(), work)
        if not order:
            fail(f"callgrind recorded no function of {out}")
        if os.environ.get("TOOLPORT_LINK_ORDER_KEEP_UNORDERED") == "1":
            # What the order buys, measured on the same objects: the binary without it.
            run_lld(with_output(lld, Path(f"{out}.unordered")))
        order_file = work / "startup.order"
        order_file.write_text("".join(fn + "\n" for fn in order))
        run_lld([*lld, f"--symbol-ordering-file={order_file}", "--no-warn-symbol-ordering"])
        run_session([str(out.resolve())], work, True, True, CHECK_TIMEOUT_S)
    Path(f"{out}.startup-order").write_text("".join(fn + "\n" for fn in order))


if __name__ == "__main__":
    main()
