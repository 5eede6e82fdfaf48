#!/usr/bin/env python3
"""Install toolport the ways its users do, offline, and serve MCP to the Inspector from each.

    check.py --node NODE --inspector INSPECTOR_JS --out DIR --binary TOOLPORT

DIR is what `dist/release.py package` wrote (from the linux-x64 binary that `.ci/run` built
and ran its end-to-end checks on); nothing is rebuilt. Checks, each counted pass/fail:

- the registry entry: DIR/server.json and the committed server.json validate against the
  2025-12-11 schema (dist/schema/), and the ownership marks the registry checks agree with
  its name (npm `mcpName`, the PyPI README's `mcp-name:`, the image label, "mcp" in the
  bundle's URL);
- the Linux binary is static (no interpreter, no shared library) and runs in an empty root;
- the wheel: installed with pip into a fresh venv (`toolport` and the `toolport-mcp`
  launcher) and run by `uvx --from <wheel>` with an empty uv cache, no index, no downloads;
- npm: the wrapper and this platform's package published to a loopback registry (verdaccio,
  started here with no uplink: nothing reaches the internet) and `npx -y toolport` run from
  an empty npm cache;
- the Claude Desktop bundle: unpacked, its manifest's command line for Linux built the way
  the host builds it (`${__dirname}`, the folder list expanded into arguments, the optional API
  keys the user left empty passed as their literal placeholders) and started.

Every server is driven by the MCP Inspector CLI: tools/list, then read_file of a known file
(its exact text), as in .ci/run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMA = ROOT / "dist" / "schema" / "server.schema.2025-12-11.json"
INSPECTOR_TIMEOUT = 180  # s; npx and uvx unpack a 10+ MB binary on first start
VERDACCIO_START = 60  # s
TEXT = "hello from the packaging check\nline 2: ünïcødé ✓\n"

PASSED: list[str] = []
FAILED: list[str] = []


def ok(name: str, detail: str = "") -> None:
    PASSED.append(name)
    print(f"ok: {name}{': ' + detail if detail else ''}", flush=True)


def bad(name: str, detail: str) -> None:
    FAILED.append(name)
    print(f"PACKAGING FAIL: {name}: {detail}", file=sys.stderr, flush=True)


class Inspector:
    def __init__(self, node: str, js: str, work: Path):
        self.node, self.js, self.work = node, js, work

    def run(self, name: str, method: list[str], command: list[str], env: dict[str, str]) -> dict | None:
        """The Inspector CLI against `command`; its JSON output, or None (reported)."""
        args = [self.node, self.js, "--cli", "--format", "json", *method]
        for key, value in env.items():
            args += ["-e", f"{key}={value}"]
        args += ["--", *command]
        home = self.work / "inspector-home"
        home.mkdir(exist_ok=True)
        proc_env = {"PATH": os.environ["PATH"], "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "memory"}
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=INSPECTOR_TIMEOUT,
                               stdin=subprocess.DEVNULL, env=proc_env)
        except subprocess.TimeoutExpired:
            bad(name, f"the Inspector timed out after {INSPECTOR_TIMEOUT} s: {' '.join(command)}")
            return None
        if p.returncode != 0:
            bad(name, f"the Inspector exited {p.returncode} for {' '.join(command)}\n"
                      f"stdout: {p.stdout[-2000:]}\nstderr: {p.stderr[-3000:]}")
            return None
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict):
            bad(name, f"the Inspector printed no JSON with a 'result' object: {p.stdout[-2000:]}")
            return None
        return doc["result"]

    def serve_check(self, name: str, command: list[str], ws: Path, env: dict[str, str] | None = None) -> None:
        """tools/list has read_file; read_file gives the known file's exact text."""
        env = env or {}
        listed = self.run(f"{name}: tools/list", ["--method", "tools/list"], command, env)
        if listed is None:
            return
        names = [t.get("name") for t in listed.get("tools", [])]
        if "read_file" not in names:
            bad(f"{name}: tools/list", f"no read_file among {names}")
            return
        result = self.run(f"{name}: read_file",
                          ["--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=hello.txt"],
                          command, env)
        if result is None:
            return
        texts = [c.get("text", "") for c in result.get("content", []) if c.get("type") == "text"]
        structured = (result.get("structuredContent") or {}).get("content")
        if result.get("isError") or not (structured == TEXT or any(TEXT in t for t in texts)):
            bad(f"{name}: read_file", f"not the file's text: {json.dumps(result)[:1500]}")
            return
        ok(name, f"{len(names)} tools listed, read_file exact ({' '.join(command[:3])} …)")


# ------------------------------------------------------------------ registry entry
def check_registry(out: Path) -> None:
    try:
        import jsonschema
    except ImportError:
        bad("server.json", "the jsonschema module is missing (run with .ci/venv's python)")
        return
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    for path in (ROOT / "server.json", out / "server.json"):
        errors = sorted(validator.iter_errors(json.loads(path.read_text())), key=lambda e: list(e.path))
        if errors:
            bad(f"server.json schema ({path})", "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5]))
        else:
            ok("server.json schema", str(path))
    server = json.loads((out / "server.json").read_text())
    name = server["name"]
    marks = {
        "npm mcpName": json.loads((ROOT / "dist/npm/toolport/package.json").read_text()).get("mcpName") == name,
        "PyPI README mcp-name": re.search(rf"mcp-name: {re.escape(name)}(\s|-->)",
                                          (ROOT / "dist/pypi/README.md").read_text()) is not None,
        "image label": f'io.modelcontextprotocol.server.name="{name}"' in (ROOT / "Dockerfile").read_text(),
    }
    for package in server["packages"]:
        if package["registryType"] == "mcpb":
            marks["bundle URL has 'mcp'"] = "mcp" in package["identifier"].lower()
            bundle = next(out.glob("*.mcpb"), None)
            marks["bundle sha256"] = bundle is not None and package["fileSha256"] == sha256(bundle)
    for mark, good in marks.items():
        (ok if good else bad)(f"registry mark: {mark}", name if good else f"does not match {name}")


def client_config(kind: str, ws: Path) -> list[str]:
    """The command line of mcp-config/claude-desktop/claude_desktop_config.<kind>.json (the
    form the README gives users), with the project placeholder replaced by `ws`."""
    path = ROOT / "mcp-config" / "claude-desktop" / f"claude_desktop_config.{kind}.json"
    entry = json.loads(path.read_text())["mcpServers"]["toolport"]
    return [entry["command"], *(str(ws) if a == "/path/to/your/project" else a for a in entry["args"])]


def sha256(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ static binary
def check_static(binary: Path, work: Path) -> None:
    headers = subprocess.run(["readelf", "-lW", "-d", str(binary)], capture_output=True, text=True).stdout
    if "INTERP" in headers or "(NEEDED)" in headers:
        bad("static binary", f"{binary} has an interpreter or shared libraries:\n"
                             + "\n".join(l for l in headers.splitlines() if "INTERP" in l or "NEEDED" in l))
        return
    # An empty root: no libc, no loader, no /etc, no /proc. `--version` must still run.
    jail = work / "empty-root"
    jail.mkdir()
    shutil.copy2(binary, jail / "toolport")
    for launcher in (["chroot"], ["unshare", "--user", "--map-root-user", "chroot"]):
        p = subprocess.run([*launcher, str(jail), "/toolport", "--version"], capture_output=True, text=True)
        if p.returncode == 0 and p.stdout.startswith("toolport "):
            ok("static binary", f"no interpreter, no shared library; `{p.stdout.strip()}` in an empty root")
            return
    bad("static binary", f"did not run in an empty root: {p.stderr[-1000:]}")


# ------------------------------------------------------------------ wheel
def check_wheel(inspector: Inspector, out: Path, ws: Path, work: Path) -> None:
    wheels = sorted(out.glob("toolport_mcp-*manylinux*x86_64*.whl"))
    if not wheels:
        bad("wheel", f"no Linux x86_64 wheel in {out}")
        return
    wheel = wheels[0]
    venv = work / "wheel-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                          "--quiet", "--no-index", "--no-deps", "--disable-pip-version-check", str(wheel)],
                         capture_output=True, text=True)
    if pip.returncode != 0:
        # pip < 22.3 has no --python: use the venv's own pip.
        subprocess.run([str(venv / "bin" / "python"), "-m", "ensurepip", "--default-pip"], check=True,
                       capture_output=True)
        pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--no-index", "--no-deps",
                              "--disable-pip-version-check", str(wheel)], capture_output=True, text=True)
    if pip.returncode != 0:
        bad("wheel: pip install", pip.stderr[-2000:])
        return
    inspector.serve_check("wheel in a fresh venv: toolport", [str(venv / "bin" / "toolport"), "--root", str(ws)], ws)
    inspector.serve_check("wheel in a fresh venv: toolport-mcp",
                          [str(venv / "bin" / "toolport-mcp"), "serve", str(ws)], ws)

    uv = ROOT / ".ci" / "packaging" / "venv" / "bin" / "uvx"
    cache = work / "uv-cache"
    uv_env = {"UV_CACHE_DIR": str(cache), "UV_OFFLINE": "1", "UV_NO_CONFIG": "1",
              "UV_PYTHON_DOWNLOADS": "never", "UV_PYTHON": sys.executable, "UV_TOOL_DIR": str(work / "uv-tools")}
    inspector.serve_check("uvx --from <wheel> toolport",
                          [str(uv), "--from", str(wheel), "toolport", "--root", str(ws)], ws, uv_env)
    # The README's form (`uvx toolport-mcp serve DIR`), the package taken from the wheel.
    command, package, *rest = client_config("uvx", ws)
    inspector.serve_check("uvx toolport-mcp (the README's config, from the wheel)",
                          [str(uv), "--from", str(wheel), package, *rest], ws, uv_env)


# ------------------------------------------------------------------ npm
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_npm(inspector: Inspector, out: Path, ws: Path, work: Path) -> None:
    node = inspector.node
    verdaccio = ROOT / ".ci" / "packaging" / "node_modules" / "verdaccio" / "bin" / "verdaccio"
    port = free_port()
    registry = f"http://127.0.0.1:{port}/"
    vdir = work / "verdaccio"
    vdir.mkdir()
    (vdir / "config.yaml").write_text(
        f"storage: {vdir / 'storage'}\n"
        f"auth:\n  htpasswd:\n    file: {vdir / 'htpasswd'}\n    max_users: 10\n"
        "uplinks: {}\n"
        "packages:\n  '**':\n    access: $all\n    publish: $authenticated\n"
        "log: { type: stdout, format: pretty, level: warn }\n"
        # The platform package holds the whole binary (the default cap is 10 MB).
        "max_body_size: 500mb\n"
        "publish:\n  allow_offline: true\n")
    log = open(vdir / "verdaccio.log", "w")
    server = subprocess.Popen([node, str(verdaccio), "--config", str(vdir / "config.yaml"),
                               "--listen", f"127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + VERDACCIO_START
        while True:
            try:
                urllib.request.urlopen(registry + "-/ping", timeout=2).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    bad("npm: verdaccio", f"did not start on {registry}: {(vdir / 'verdaccio.log').read_text()[-2000:]}")
                    return
                time.sleep(0.2)
        # A user for publishing (verdaccio's CouchDB-style user API): its token goes into a
        # throwaway npmrc.
        body = json.dumps({"name": "ci", "password": "ci-password-not-secret"}).encode()
        req = urllib.request.Request(registry + "-/user/org.couchdb.user:ci", data=body, method="PUT",
                                     headers={"content-type": "application/json"})
        token = json.loads(urllib.request.urlopen(req, timeout=10).read())["token"]
        npmrc = work / "npmrc"
        npmrc.write_text(f"registry={registry}\n//127.0.0.1:{port}/:_authToken={token}\n")
        npm_env = dict(os.environ, npm_config_userconfig=str(npmrc), npm_config_cache=str(work / "npm-publish-cache"),
                       npm_config_registry=registry, npm_config_update_notifier="false")
        tarballs = sorted((out / "npm").glob("toolport-linux-x64-*.tgz")) + sorted((out / "npm").glob("toolport-[0-9]*.tgz"))
        if len(tarballs) != 2:
            bad("npm: tarballs", f"expected toolport-linux-x64 and toolport in {out / 'npm'}, found {tarballs}")
            return
        for tgz in tarballs:
            p = subprocess.run(["npm", "publish", str(tgz), "--registry", registry, "--access", "public"],
                               env=npm_env, capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                bad("npm: publish", f"{tgz.name}: {p.stderr[-2000:]}")
                return
        ok("npm: publish to the loopback registry", ", ".join(t.name for t in tarballs))
        # The client's view: an empty npm cache, the loopback registry, nothing else.
        env = {"npm_config_registry": registry, "npm_config_cache": str(work / "npm-cache"),
               "npm_config_userconfig": str(work / "no-npmrc"), "npm_config_update_notifier": "false",
               "npm_config_audit": "false", "npm_config_fund": "false"}
        # The README's form (mcp-config/…/*.npx.json): `npx -y toolport serve DIR`.
        inspector.serve_check("npx -y toolport (the README's config)", client_config("npx", ws), ws, env)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


# ------------------------------------------------------------------ bundle
def check_bundle(inspector: Inspector, out: Path, ws: Path, work: Path) -> None:
    bundles = sorted(out.glob("*.mcpb"))
    if len(bundles) != 1:
        bad("mcpb", f"expected one .mcpb in {out}, found {bundles}")
        return
    unpacked = work / "mcpb"
    with zipfile.ZipFile(bundles[0]) as z:
        z.extractall(unpacked)
    manifest = json.loads((unpacked / "manifest.json").read_text())
    config = manifest["server"]["mcp_config"]
    linux = {**config, **config.get("platform_overrides", {}).get("linux", {})}
    user_config = {"dirs": [str(ws)]}  # the optional keys are left empty, as most users do

    def expand(value: str) -> list[str]:
        value = value.replace("${__dirname}", str(unpacked))
        m = re.fullmatch(r"\$\{user_config\.(\w+)\}", value)
        if m and m.group(1) in user_config:
            v = user_config[m.group(1)]
            return v if isinstance(v, list) else [v]
        return [value]  # what the host passes for an empty optional setting: the placeholder

    command = expand(linux["command"])
    if len(command) != 1 or not Path(command[0]).is_file():
        bad("mcpb: command", f"{linux['command']} -> {command}: no such file in the bundle")
        return
    # The zip keeps the mode bits mcpb pack stored; extractall does not apply them.
    Path(command[0]).chmod(0o755)
    args = [a for arg in linux.get("args", []) for a in expand(arg)]
    env = {k: expand(v)[0] for k, v in linux.get("env", {}).items()}
    if not any("${user_config." in v for v in env.values()):
        bad("mcpb: env", f"expected the empty optional keys as placeholders, got {env}")
        return
    inspector.serve_check("mcpb bundle's command line", [*command, *args], ws, env)


# ------------------------------------------------------------------ main
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--node", required=True)
    ap.add_argument("--inspector", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--binary", type=Path, required=True)
    a = ap.parse_args()
    a.out, a.binary = a.out.resolve(), a.binary.resolve()
    with tempfile.TemporaryDirectory(prefix="toolport-packaging.") as tmp:
        work = Path(tmp)
        ws = work / "workspace"
        ws.mkdir()
        (ws / "hello.txt").write_text(TEXT, encoding="utf-8")
        inspector = Inspector(a.node, a.inspector, work)
        check_registry(a.out)
        check_static(a.binary, work)
        check_wheel(inspector, a.out, ws, work)
        check_npm(inspector, a.out, ws, work)
        check_bundle(inspector, a.out, ws, work)
    print(f"\npackaging: {len(PASSED)} passed, {len(FAILED)} failed")
    for name in FAILED:
        print(f"  failed: {name}", file=sys.stderr)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
