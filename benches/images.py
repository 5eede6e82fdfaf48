#!/usr/bin/env python3
"""read_file on large images through the real binary (issue 40): time and peak memory.

    python3 benches/images.py ROOT RUNS BINARY [BINARY ...]

ROOT holds the images (every *.png, *.jpg, *.gif, *.webp in it); each BINARY is a toolport
release build (say, the commit before a change and the change). Every run starts a fresh
server (`--root ROOT`, no config file, no TOOLPORT_* variables), sends `initialize`, then one
`read_file` of one image, and reads:
- the call's time, from writing the request to reading the whole answer (decode, downscale,
  encode, base64 and the JSON on the pipe: what a client waits for);
- the server's CPU time for the call (utime + stime from /proc/PID/stat, after minus before);
- its peak RSS (VmHWM from /proc/PID/status) after the call, and its VmRSS before it;
- the answer's size and what it says was sent.
Runs interleave: each round runs every (binary, image) pair once, the order rotating, so load
on the machine falls on all of them alike. Prints the median of each figure per pair, and the
load average at the start and the end.
"""

import json
import os
import statistics
import subprocess
import sys
import time

INITIALIZE = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "1"},
}
TICKS = os.sysconf("SC_CLK_TCK")


def status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024  # MiB
    raise KeyError(key)


def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Server:
    def __init__(self, binary, root):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLPORT_", "OTEL_"))}
        env["XDG_CONFIG_HOME"] = os.path.join(root, ".no-config")
        env.pop("RUST_LOG", None)
        self.proc = subprocess.Popen(
            [binary, "--root", root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.next_id = 0
        self.request("initialize", INITIALIZE)
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            answer = self.proc.stdout.readline()
            if not answer:
                raise RuntimeError(f"{method}: the server closed its output")
            message = json.loads(answer)
            if message.get("id") == self.next_id:
                return message, len(answer)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def run(binary, root, image):
    server = Server(binary, root)
    pid = server.proc.pid
    rss_before = status(pid, "VmRSS")
    cpu_before = cpu(pid)
    started = time.perf_counter()
    answer, size = server.request("tools/call", {"name": "read_file", "arguments": {"path": image}})
    seconds = time.perf_counter() - started
    cpu_seconds = cpu(pid) - cpu_before
    peak = status(pid, "VmHWM")
    server.close()
    result = answer.get("result", {})
    if result.get("isError") or "error" in answer:
        raise RuntimeError(f"{binary} {image}: {json.dumps(answer)[:400]}")
    sent = (result.get("structuredContent") or {}).get("sent")
    return {"s": seconds, "cpu": cpu_seconds, "peak": peak, "idle": rss_before, "bytes": size, "sent": sent}


def main():
    root, runs, binaries = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    images = sorted(
        name for name in os.listdir(root) if name.rsplit(".", 1)[-1] in ("png", "jpg", "gif", "webp")
    )
    pairs = [(b, i) for b in binaries for i in images]
    results = {pair: [] for pair in pairs}
    print(f"load at start: {os.getloadavg()}")
    for round_ in range(runs):
        for k in range(len(pairs)):
            pair = pairs[(round_ + k) % len(pairs)]
            results[pair].append(run(pair[0], root, pair[1]))
    print(f"load at end: {os.getloadavg()}")
    for (binary, image), figures in results.items():
        med = lambda key: statistics.median(f[key] for f in figures)  # noqa: E731
        each = ", ".join("%.0f" % (f["s"] * 1000) for f in figures)
        print(
            f"{binary} {image}: p50 {med('s') * 1000:.0f} ms (runs {each}), "
            f"CPU {med('cpu') * 1000:.0f} ms, peak RSS {med('peak'):.1f} MiB, idle RSS {med('idle'):.1f} MiB, "
            f"answer {med('bytes') / 1e6:.2f} MB, sent {figures[0]['sent']}"
        )


if __name__ == "__main__":
    main()
