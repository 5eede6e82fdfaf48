#!/usr/bin/env node
// toolport's npm launcher: finds the binary of the platform package npm installed beside this
// one (an optional dependency whose `os`/`cpu` fields match this machine, so npm fetched only
// that one, with no install script) and runs it with stdio inherited. Node cannot replace
// itself with another program, so this process stays as a thin parent: it forwards the signals
// a client sends to stop a server, and exits with the binary's exit code, or by the same
// signal. It never writes to stdout, which carries the MCP protocol.
"use strict";

const { spawn } = require("child_process");
const path = require("path");

// process.platform + process.arch -> the platform package. macOS ships one universal binary.
const PACKAGES = {
  "darwin arm64": "toolport-darwin-universal",
  "darwin x64": "toolport-darwin-universal",
  "linux arm64": "toolport-linux-arm64",
  "linux x64": "toolport-linux-x64",
  "win32 x64": "toolport-win32-x64",
};
// Signals a client or terminal uses to stop a server; each is passed on to the binary.
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"];

function binaryPath() {
  // An explicit binary (a local build, or a platform npm has no package for).
  if (process.env.TOOLPORT_BINARY) return process.env.TOOLPORT_BINARY;
  const key = `${process.platform} ${process.arch}`;
  const pkg = PACKAGES[key];
  const exe = process.platform === "win32" ? "toolport.exe" : "toolport";
  if (!pkg) {
    fail(
      `toolport has no prebuilt binary for ${key}; prebuilt: ${Object.keys(PACKAGES).join(", ")}.\n` +
        "Build it from source (cargo install --git https://github.com/toolport/toolport) and set " +
        "TOOLPORT_BINARY to its path.",
    );
  }
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch {
    fail(
      `toolport's binary package ${pkg} is not installed next to ${path.dirname(__dirname)}.\n` +
        "It is an optional dependency: reinstall without --omit=optional / --no-optional, " +
        `or install it directly (npm install ${pkg}).`,
    );
  }
}

function fail(message) {
  process.stderr.write(`toolport (npm launcher): ${message}\n`);
  process.exit(1);
}

const child = spawn(binaryPath(), process.argv.slice(2), { stdio: "inherit", windowsHide: true });

for (const signal of FORWARDED) {
  try {
    process.on(signal, () => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    });
  } catch {
    // A signal this platform does not have (SIGBREAK off Windows, SIGHUP on Windows).
  }
}

child.on("error", (err) => fail(`could not start ${child.spawnfile}: ${err.message}`));
child.on("exit", (code, signal) => {
  if (signal) {
    // Die the same way, so the client sees what the binary saw; default handling restored.
    for (const s of FORWARDED) process.removeAllListeners(s);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
