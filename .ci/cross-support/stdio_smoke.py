#!/usr/bin/env python3
"""Speak MCP over stdio to a toolport binary run through an emulator, and check the answers.

    stdio_smoke.py [--emulator CMD] --binary PATH --work DIR

For binaries this machine cannot run natively (the linux-arm64 release binary under Debian's
qemu-user-static): initialize, tools/list (read_file among the tools), read_file of a known
file (its exact text), read_file outside the root (refused), then stdin closed: the server
must exit 0. Each step has a timeout; the server's stderr goes to DIR/toolport.stderr.
"""

import argparse
import json
import subprocess
import sys
import threading
from pathlib import Path

STEP_TIMEOUT = 120  # s: an emulated start is slow
TEXT = "hello from the emulated binary\nline 2: ünïcødé ✓\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--emulator", default="")
    ap.add_argument("--binary", required=True)
    ap.add_argument("--work", type=Path, required=True)
    a = ap.parse_args()
    ws = a.work / "workspace"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "hello.txt").write_text(TEXT, encoding="utf-8")
    (a.work / "outside.txt").write_text("outside\n")
    cmd = [*a.emulator.split(), a.binary, "--root", str(ws)]
    stderr = open(a.work / "toolport.stderr", "w")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    lines: list[bytes] = []
    ready = threading.Condition()

    def reader() -> None:
        for line in proc.stdout:
            with ready:
                lines.append(line)
                ready.notify_all()

    threading.Thread(target=reader, daemon=True).start()

    def send(msg: dict) -> None:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()

    def answer(id_: int) -> dict:
        with ready:
            def found():
                for line in lines:
                    msg = json.loads(line)
                    if msg.get("id") == id_:
                        return msg
                return None
            if not ready.wait_for(lambda: found() is not None, timeout=STEP_TIMEOUT):
                raise SystemExit(f"FAIL: no answer to request {id_} within {STEP_TIMEOUT} s")
            return found()

    def call(id_: int, name: str, args: dict) -> dict:
        send({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": args}})
        return answer(id_)["result"]

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stdio-smoke", "version": "1"}}})
    info = answer(1)["result"]["serverInfo"]
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    print(f"ok: initialize -> {info.get('name')} {info.get('version')}")
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    names = [t["name"] for t in answer(2)["result"]["tools"]]
    assert "read_file" in names, names
    print(f"ok: tools/list -> {len(names)} tools")
    result = call(3, "read_file", {"path": "hello.txt"})
    texts = [c.get("text", "") for c in result.get("content", [])]
    structured = (result.get("structuredContent") or {}).get("content")
    assert not result.get("isError") and (structured == TEXT or any(TEXT in t for t in texts)), result
    print("ok: read_file -> the exact text")
    result = call(4, "read_file", {"path": "../outside.txt"})
    assert result.get("isError"), result
    print("ok: read_file outside the root -> refused")
    proc.stdin.close()
    code = proc.wait(timeout=STEP_TIMEOUT)
    assert code == 0, f"exit {code} after stdin closed"
    print("ok: stdin closed -> exit 0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
