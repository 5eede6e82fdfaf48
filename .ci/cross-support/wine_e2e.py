#!/usr/bin/env python3
"""toolport.exe's stdio end-to-end check under Wine (`.ci/cross wine`; Python stdlib only).

  wine_e2e.py --wine WINE64 --exe TOOLPORT_EXE --work DIR

Starts TOOLPORT_EXE under WINE64 (the environment — WINEPREFIX, WINEDLLPATH … — comes from
the caller) with a fresh root in DIR, and speaks newline-delimited JSON-RPC over its stdin and
stdout, as an MCP client that launches a server does:

  1. initialize (+ notifications/initialized): the server answers as toolport;
  2. tools/list: the file, command and job tools are listed;
  3. read_file inside the root: the exact UTF-8 text back (non-ASCII included: the stream
     is never translated to a code page);
  4. read_file outside the root (`..\\outside.txt`, and the absolute path of that file):
     refused with isError as outside the allowed roots, the file's content nowhere in the
     answer;
  4b. paths come back as Windows users write them (`Z:\\…\\hello.txt` from path_info),
     never in the verbatim form of real paths (`\\\\?\\Z:\\…`), in path_info, write_file,
     copy_path (a folder), grep, list_directory and a refusal; grep's walk and the listing
     honour the root's .gitignore, and the copy lands;
  5. execute_command `cmd /c echo hi`: exit 0, stdout "hi"; and `greet "a b"` where the
     call's PATH holds `greet.cmd`: found through PATHEXT, run through cmd.exe with its
     argument intact;
  6. execute_command of a cmd that would write a marker file after a few seconds, with a
     1-second timeout: the call reports timed_out, the marker never appears, and Wine's
     process list (`winedbg --command "info proc"`) shows no process of that command left;
  7. stdin closed: the server exits 0 within a timeout, and nothing it started is left;
  8. a second server starts a background job (`ping`) and is killed (SIGKILL of its Wine
     process: no code of it runs): the job's process is gone within a deadline (its
     kill-on-close Job Object ends with the server's handles);
  9. upstreams: a third server has toolport.exe itself as an `[[upstreams]]` entry (a stdio
     MCP server it starts in a Job Object of its own): `inner__read_file` is listed and
     answers with the exact text, through both servers; an `execute_command` of the inner
     one starts a background `ping`; then the outer server is killed (SIGKILL): the inner
     toolport.exe and its ping are gone within a deadline.

Every line on stdout must be a JSON-RPC message (stdout is the protocol channel only). Every
wait has a timeout. On failure it prints what failed, then the server's stderr, and exits 1.
"""

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time

# Wine starts its wineserver and services on the first program of a prefix: the first answer
# can take tens of seconds on a busy 2-core machine.
START_TIMEOUT = 180.0
# Any other answer.
CALL_TIMEOUT = 60.0
# How long the server may take to exit once its stdin is closed.
EXIT_TIMEOUT = 30.0
# The killed command would write its marker this many seconds after it starts; the check
# waits past that before it says the marker never came.
MARKER_AFTER = 4
MARKER_GRACE = 4.0
# The tools that must be listed.
REQUIRED_TOOLS = ("read_file", "list_directory", "write_file", "execute_command", "job_output", "job_kill")
# Text with characters outside every single-byte code page: a code-page translation of the
# stream would mangle it.
HELLO_TEXT = "hello from Wine: h\u00e9llo \u2713 \u65e5\u672c \U0001f600\n"
OUTSIDE_TEXT = "outside-secret-7f3a\n"
# How long a killed server's commands may take to go (Wine ends a job's processes once the
# dead process's handles are closed by its wineserver).
GONE_TIMEOUT = 30.0
# The programs the killed command runs, as Wine's process list names them.
COMMAND_IMAGES = ("cmd.exe", "ping.exe")
# The upstream server (toolport.exe itself) and what it runs.
UPSTREAM_IMAGES = ("toolport.exe", "ping.exe")


class CheckFailed(Exception):
    pass


def winpath(path: str) -> str:
    """A Linux path as Wine's programs see it: the Z: drive maps /."""
    return "Z:" + os.path.abspath(path).replace("/", "\\")


class Server:
    """toolport.exe under Wine, with a reader thread turning its stdout into messages."""

    def __init__(self, argv: list, stderr_path: str):
        self.stderr_path = stderr_path
        self.stderr_file = open(stderr_path, "wb")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file
        )
        self.messages: "queue.Queue" = queue.Queue()
        self.non_json: list = []
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            line = raw.rstrip(b"\n")
            if line.endswith(b"\r"):
                self.non_json.append(repr(line[-80:]) + " (a CR before the newline: the stream was translated)")
                line = line[:-1]
            if not line.strip():
                continue
            try:
                self.messages.put(json.loads(line.decode("utf-8")))
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                self.non_json.append(f"{line[:200]!r} ({e})")
        self.messages.put(None)  # EOF

    def send(self, message: dict) -> None:
        try:
            self.proc.stdin.write(json.dumps(message).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except OSError as e:
            raise CheckFailed(f"cannot write to toolport's stdin ({e}); it exited {self.proc.poll()}")

    def request(self, method: str, params: dict, timeout: float = CALL_TIMEOUT) -> dict:
        """Send a request and wait for its answer (notifications and requests in between
        are skipped); the answer's `result`, or CheckFailed with its `error`."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CheckFailed(f"no answer to {method} within {timeout:.0f} s")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                raise CheckFailed(f"no answer to {method} within {timeout:.0f} s") from None
            if message is None:
                raise CheckFailed(f"toolport's stdout closed before it answered {method} (exit {self.proc.poll()})")
            if self.non_json:
                raise CheckFailed(f"toolport wrote non-JSON-RPC lines on stdout: {self.non_json}")
            if message.get("id") != rid or "method" in message:
                continue
            if "error" in message:
                raise CheckFailed(f"{method} failed: {json.dumps(message['error'])[:800]}")
            return message.get("result") or {}

    def call(self, tool: str, arguments: dict, timeout: float = CALL_TIMEOUT) -> dict:
        return self.request("tools/call", {"name": tool, "arguments": arguments}, timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        self.stderr_file.close()


def strings_of(value) -> list:
    """Every string in a result (its texts, its structured values), decoded."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_of(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return []


def text_of(result: dict) -> str:
    return "".join(
        block.get("text", "") for block in result.get("content", []) if isinstance(block, dict)
    )


def expect(cond: bool, what: str, result=None) -> None:
    if not cond:
        shown = "" if result is None else f": {json.dumps(result, ensure_ascii=False)[:1200]}"
        raise CheckFailed(what + shown)


def ok(msg: str) -> None:
    print(f"ok: {msg}", flush=True)


def leftovers(wine: str, images=COMMAND_IMAGES) -> list:
    """The `images` (by default the commands': cmd.exe, ping.exe) Wine's process list still
    shows. Wine 8's tasklist is a stub that lists nothing; `winedbg --command "info proc"`
    lists every process of the prefix (as 'name.exe', children indented under their
    parent)."""
    try:
        out = subprocess.run(
            [wine, "winedbg", "--command", "info proc"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=CALL_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"`winedbg --command 'info proc'` did not answer within {CALL_TIMEOUT:.0f} s") from None
    text = out.stdout.decode("utf-8", errors="replace")
    names = [name.lower() for name in re.findall(r"'([^']+)'", text)]
    if out.returncode != 0 or "winedbg.exe" not in names:
        raise CheckFailed(
            f"`winedbg --command 'info proc'` failed (exit {out.returncode}): {text[:400]} {out.stderr.decode(errors='replace')[:400]}"
        )
    return [name for name in names if name in images]


def run_checks(server: Server, args, root: str, outside: str) -> None:
    init = server.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "wine-e2e", "version": "1"},
        },
        timeout=START_TIMEOUT,
    )
    name = init.get("serverInfo", {}).get("name", "")
    expect("toolport" in name, "initialize did not answer as toolport", init)
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ok(f"initialize: {name} {init.get('serverInfo', {}).get('version', '')}, protocol {init.get('protocolVersion')}")

    listed = server.request("tools/list", {})
    names = [t.get("name") for t in listed.get("tools", [])]
    missing = [t for t in REQUIRED_TOOLS if t not in names]
    expect(not missing, f"tools/list is missing {missing}; it listed {names}")
    ok(f"tools/list: {len(names)} tools, {', '.join(REQUIRED_TOOLS)} among them")

    got = server.call("read_file", {"path": "hello.txt"})
    expect(not got.get("isError"), "read_file hello.txt failed", got)
    expect(HELLO_TEXT.strip() in text_of(got), "read_file hello.txt did not return the file's exact UTF-8 text", got)
    ok("read_file inside the root: the exact UTF-8 text (non-ASCII included)")

    for path in ("..\\outside.txt", winpath(outside)):
        got = server.call("read_file", {"path": path})
        expect(got.get("isError") is True, f"read_file {path} (outside the root) was not refused", got)
        expect("outside the allowed roots" in text_of(got), f"read_file {path} was not refused as outside the roots", got)
        expect(OUTSIDE_TEXT.strip() not in json.dumps(got), f"read_file {path} leaked the file's content", got)
        ok(f"read_file {path}: refused ({text_of(got).strip()[:140]})")

    check_shown_paths(server, root, outside)

    got = server.call("execute_command", {"command": "cmd", "args": ["/c", "echo hi"]})
    sc = got.get("structuredContent") or {}
    expect(not got.get("isError") and sc.get("return_code") == 0, "execute_command cmd /c echo hi did not exit 0", got)
    expect((sc.get("stdout") or "").strip() == "hi", "execute_command cmd /c echo hi did not print hi", got)
    ok("execute_command cmd /c echo hi: exit 0, stdout 'hi'")

    with open(os.path.join(root, "greet.cmd"), "w", encoding="ascii", newline="") as f:
        f.write("@echo greet [%~1]\r\n")
    got = server.call(
        "execute_command",
        {"command": "greet", "args": ["a b"], "env": {"PATH": winpath(root) + ";C:\\windows\\system32"}},
    )
    sc = got.get("structuredContent") or {}
    expect(not got.get("isError") and sc.get("return_code") == 0, "execute_command greet (greet.cmd through PATHEXT) failed", got)
    expect((sc.get("stdout") or "").strip() == "greet [a b]", "greet.cmd did not get its argument intact", got)
    ok("execute_command greet: greet.cmd found through PATHEXT, its argument intact")

    marker = os.path.join(root, "late-marker.txt")
    # ping waits about a second between echoes: the marker would come MARKER_AFTER s later.
    script = f"ping -n {MARKER_AFTER + 1} 127.0.0.1 >nul & echo late>late-marker.txt"
    started = time.monotonic()
    got = server.call("execute_command", {"command": "cmd", "args": ["/c", script], "timeout": 1})
    sc = got.get("structuredContent") or {}
    expect(sc.get("timed_out") is True, "the command was not reported timed out at its 1 s timeout", got)
    took = time.monotonic() - started
    ok(f"execute_command with timeout 1: timed_out after {took:.1f} s")
    left = leftovers(args.wine)
    expect(not left, f"processes of the timed-out command are still running: {left}")
    ok("no process of the timed-out command is left (winedbg info proc)")
    remaining = started + MARKER_AFTER + MARKER_GRACE - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)  # waiting for something that must NOT happen: no event to wait on
    expect(not os.path.exists(marker), "the timed-out command went on and wrote its marker file")
    ok(f"the timed-out command's marker never appeared ({MARKER_AFTER + MARKER_GRACE:.0f} s later)")

    server.proc.stdin.close()
    try:
        code = server.proc.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"toolport did not exit within {EXIT_TIMEOUT:.0f} s of its stdin closing") from None
    expect(code == 0, f"toolport exited {code} after its stdin closed")
    expect(not server.non_json, f"toolport wrote non-JSON-RPC lines on stdout: {server.non_json}")
    left = leftovers(args.wine)
    expect(not left, f"processes are left after toolport exited: {left}")
    ok("stdin closed: toolport exited 0, nothing left running")


def check_shown_paths(server: Server, root: str, outside: str) -> None:
    """Paths come back as Windows users write them (Z:\\…), never in the verbatim form of
    real paths (\\\\?\\Z:\\…), and the tools that compare them still work: a walk (grep), a
    listing under an ancestor's .gitignore, a write and a folder copy (checked by real path)."""
    os.makedirs(os.path.join(root, "sub"))
    with open(os.path.join(root, "sub", "notes.txt"), "w", encoding="utf-8") as f:
        f.write("a needle here\n")
    with open(os.path.join(root, "sub", "skip.log"), "w", encoding="utf-8") as f:
        f.write("a needle in a log\n")
    with open(os.path.join(root, ".gitignore"), "w", encoding="utf-8") as f:
        f.write("*.log\n")
    shown = winpath(root)
    calls = {
        "path_info": ("path_info", {"path": "hello.txt"}),
        "write_file": ("write_file", {"path": "sub\\new.txt", "content": "new needle\n"}),
        "copy_path": ("copy_path", {"source": "sub", "destination": "sub2"}),
        "grep": ("grep", {"pattern": "needle"}),
        "list_directory": ("list_directory", {"path": "sub"}),
        "refusal": ("read_file", {"path": winpath(outside)}),
    }
    got = {}
    for what, (tool, arguments) in calls.items():
        got[what] = server.call(tool, arguments)
        expect(what == "refusal" or not got[what].get("isError"), f"{tool} {arguments} failed", got[what])
        verbatim = [s for s in strings_of(got[what]) if "\\\\?\\" in s]
        expect(not verbatim, f"{tool} showed a verbatim path: {verbatim[:2]}", got[what])
    info = strings_of(got["path_info"])
    expect(shown + "\\hello.txt" in info, f"path_info did not show {shown}\\hello.txt", got["path_info"])
    found = "\n".join(strings_of(got["grep"]))
    for name in ("sub\\notes.txt", "sub\\new.txt", "sub2\\notes.txt"):
        expect(shown + "\\" + name in found, f"grep did not find the needle in {name}", got["grep"])
    expect("skip.log" not in found, "grep searched a file the root's .gitignore ignores", got["grep"])
    listed = "\n".join(strings_of(got["list_directory"]))
    expect("notes.txt" in listed and "skip.log" not in listed,
           "list_directory sub did not list notes.txt without skip.log (the root's .gitignore)", got["list_directory"])
    expect(os.path.exists(os.path.join(root, "sub2", "notes.txt")), "copy_path sub sub2 did not copy the folder")
    ok(f"paths shown as written ({shown}\\hello.txt), no \\\\?\\ in path_info, write_file, copy_path, grep, "
       "list_directory or a refusal; grep and the listing honour the root's .gitignore")


def initialize(server: Server) -> None:
    server.request(
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "wine-e2e", "version": "1"}},
        timeout=START_TIMEOUT,
    )
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


def check_server_killed(argv: list, work: str, wine: str) -> None:
    """A background job of a server killed with SIGKILL dies with it."""
    server = Server(argv, os.path.join(work, "toolport-killed.stderr"))
    try:
        initialize(server)
        got = server.call(
            "execute_command",
            {"command": "ping", "args": ["-n", "300", "127.0.0.1"], "background": True},
        )
        expect((got.get("structuredContent") or {}).get("job_id"), "the background job did not start", got)
        expect(leftovers(wine), "the background job's ping.exe is not in Wine's process list")
        server.proc.kill()
        server.proc.wait(timeout=EXIT_TIMEOUT)
        deadline = time.monotonic() + GONE_TIMEOUT
        while (left := leftovers(wine)) and time.monotonic() < deadline:
            time.sleep(0.5)  # polling the process list: there is no event for another's death
        expect(not left, f"the killed server's job is still running after {GONE_TIMEOUT:.0f} s: {left}")
        ok("server killed (SIGKILL): its background job's process is gone (kill-on-close)")
    finally:
        server.stop()


def check_upstream(argv: list, work: str, wine: str) -> None:
    """toolport.exe serving another toolport.exe's tools, and killed with it."""
    server = Server(argv, os.path.join(work, "toolport-upstream.stderr"))
    try:
        initialize(server)
        # The upstream starts in the background (a Wine process start takes seconds):
        # listed once it is ready.
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            names = [t.get("name") for t in server.request("tools/list", {}).get("tools", [])]
            if "inner__read_file" in names:
                break
            expect(time.monotonic() < deadline, f"the upstream's tools were not listed within {START_TIMEOUT:.0f} s: {names}")
            time.sleep(1)  # polling the listing: tools/list_changed is not awaited here
        got = server.call("inner__read_file", {"path": "hello.txt"})
        expect(not got.get("isError"), "inner__read_file hello.txt failed", got)
        expect(HELLO_TEXT.strip() in text_of(got), "inner__read_file did not return the file's UTF-8 text intact", got)
        ok("upstream: toolport.exe behind toolport.exe, inner__read_file answers with the file's text intact")
        got = server.call(
            "inner__execute_command",
            {"command": "ping", "args": ["-n", "300", "127.0.0.1"], "background": True},
        )
        expect((got.get("structuredContent") or {}).get("job_id"), "the upstream's background job did not start", got)
        running = leftovers(wine, UPSTREAM_IMAGES)
        expect(running.count("toolport.exe") >= 2 and "ping.exe" in running, f"the upstream or its job is not running: {running}")
        server.proc.kill()
        server.proc.wait(timeout=EXIT_TIMEOUT)
        deadline = time.monotonic() + GONE_TIMEOUT
        while (left := leftovers(wine, UPSTREAM_IMAGES)) and time.monotonic() < deadline:
            time.sleep(0.5)  # polling the process list: there is no event for another's death
        expect(not left, f"the killed server's upstream is still running after {GONE_TIMEOUT:.0f} s: {left}")
        ok("server killed (SIGKILL): its upstream toolport.exe and that one's job are gone")
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wine", required=True, help="the wine64 loader")
    parser.add_argument("--exe", required=True, help="toolport.exe (the cross build)")
    parser.add_argument("--work", required=True, help="a scratch directory (emptied first)")
    args = parser.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    root = os.path.join(args.work, "root")
    os.makedirs(root)
    with open(os.path.join(root, "hello.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(HELLO_TEXT)
    outside = os.path.join(args.work, "outside.txt")
    with open(outside, "w", encoding="utf-8") as f:
        f.write(OUTSIDE_TEXT)
    config = os.path.join(args.work, "toolport.toml")
    with open(config, "w", encoding="utf-8") as f:
        # `cmd /c …` is a shell command: allowed without confirmation (no user to ask here).
        f.write("[exec]\nallow_shells = true\n")

    # The same server with itself as an upstream (serving the same root, no shells allowed).
    inner_config = os.path.join(args.work, "inner.toml")
    with open(inner_config, "w", encoding="utf-8") as f:
        f.write("")
    upstream_config = os.path.join(args.work, "upstream.toml")
    with open(upstream_config, "w", encoding="utf-8") as f:
        f.write(
            # The whole list: with the inner server's tools it has 42, past `auto`'s search
            # surface threshold for a client toolport does not know (this one), and the check
            # is that the upstream's tools are listed.
            "[tools]\nsurface = \"full\"\n\n"
            "[[upstreams]]\nname = \"inner\"\n"
            f"command = '{winpath(args.exe)}'\n"
            f"args = ['--root', '{winpath(root)}', '--config', '{winpath(inner_config)}']\n"
        )

    argv = [args.wine, args.exe, "--root", winpath(root), "--config", winpath(config)]
    print("+ " + " ".join(argv), flush=True)
    server = Server(argv, os.path.join(args.work, "toolport.stderr"))
    try:
        run_checks(server, args, root, outside)
        check_server_killed(argv, args.work, args.wine)
        upstream_argv = [args.wine, args.exe, "--root", winpath(root), "--config", winpath(upstream_config)]
        check_upstream(upstream_argv, args.work, args.wine)
    except CheckFailed as e:
        print(f"WINE E2E FAIL: {e}", file=sys.stderr)
        # Each server's stderr (the first one's, then those of the later checks that ran).
        for name in ("toolport.stderr", "toolport-killed.stderr", "toolport-upstream.stderr"):
            path = os.path.join(args.work, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8", errors="replace") as f:
                    tail = "".join(f.readlines()[-60:])
                print(f"--- {name} (last 60 lines):\n{tail}", file=sys.stderr)
        return 1
    finally:
        server.stop()
    print("wine e2e: all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
