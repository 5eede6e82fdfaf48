#!/usr/bin/env python3
"""Build and package toolport's release: binaries, PyPI wheels, npm packages, the Claude
Desktop bundle (.mcpb), archives, the MCP registry's server.json and checksums.

    dist/release.py build [--profile P] [PLATFORM...]
                                            release binaries + wheels for the platforms this
                                            Linux machine builds (default: linux-x64), with
                                            Cargo.toml's `dist` profile (what users download:
                                            fat LTO) unless --profile says otherwise (CI:
                                            `ci`, `release` at opt-level 1: no fat LTO)
    dist/release.py package [--binary PLATFORM=PATH]... [--wheels DIR] [--out DIR]
                                            everything else, from binaries built anywhere
    dist/release.py versions                check that every committed package file carries
                                            Cargo.toml's version

PLATFORM is npm's name for it: linux-x64, linux-arm64, darwin-universal, win32-x64. `build`
runs maturin (dist/pypi/pyproject.toml), which builds the binary with cargo and wraps it in a
wheel, so one compile gives both; Linux binaries are static (musl, linked by zig: no glibc
version to match, and the container image can be `scratch`), Windows ones are built with
mingw. The standard library for those targets is built from source by the Debian toolchain
that `.ci/cross toolchain` installs (rustup cannot download targets here). The release workflow
(.github/workflows/release.yml) builds every platform on native runners and then runs
`package` over all of them; CI (.ci/run) runs `build linux-x64` and `package` and installs
the results through npm, uv and the MCPB CLI (.ci/packaging/check.py).

Versions come from Cargo.toml alone: `package` writes it into every package it stages, and
`versions` fails when a committed file disagrees (so what is read in the tree is what ships).
Nothing here publishes; the workflow does, with the forge's secrets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIST = ROOT / "dist"
CI = ROOT / ".ci"

# npm platform name -> (process.platform, process.arch list, Rust target for local builds,
# binary name). macOS ships one universal binary (aarch64 + x86_64, built by the workflow).
PLATFORMS = {
    "linux-x64": ("linux", ["x64"], "x86_64-unknown-linux-musl", "toolport"),
    "linux-arm64": ("linux", ["arm64"], "aarch64-unknown-linux-musl", "toolport"),
    "darwin-universal": ("darwin", ["arm64", "x64"], None, "toolport"),
    "win32-x64": ("win32", ["x64"], "x86_64-pc-windows-gnu", "toolport.exe"),
}
# Linux wheels hold a static binary: valid for glibc and musl systems alike.
LINUX_WHEEL_TAGS = ["manylinux_2_17", "musllinux_1_2"]
BUILD_STD = "build-std=std,panic_abort,panic_unwind"
# rustc flags for the final binary alone (maturin passes them to `cargo rustc --`, so no
# dependency is rebuilt for them): link through dist/link_order.py, which lays out the
# functions start-up runs together (its docstring says why and how).
LINK_ORDER_RUSTC_ARGS = ["-C", f"linker={DIST / 'link_order.py'}"]


def cargo_version() -> str:
    with open(ROOT / "Cargo.toml", "rb") as f:
        return tomllib.load(f)["package"]["version"]


def release_url(version: str, name: str) -> str:
    repo = load_json(ROOT / "server.json")["repository"]["url"]
    return f"{repo}/releases/download/v{version}/{name}"


def load_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run(cmd: list, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------ versions
def stamp_npm_wrapper(pkg: dict, version: str) -> dict:
    pkg["version"] = version
    pkg["optionalDependencies"] = {f"toolport-{p}": version for p in sorted(PLATFORMS)}
    return pkg


def stamp_server_json(server: dict, version: str, mcpb_sha256: str | None) -> dict:
    server["version"] = version
    for package in server["packages"]:
        kind = package["registryType"]
        if kind in ("npm", "pypi"):
            package["version"] = version
        elif kind == "oci":
            package["identifier"] = package["identifier"].rsplit(":", 1)[0] + f":{version}"
        elif kind == "mcpb":
            package["identifier"] = release_url(version, f"toolport-{version}.mcpb")
            if mcpb_sha256:
                package["fileSha256"] = mcpb_sha256
    return server


def versions() -> int:
    """Committed files whose version differs from Cargo.toml's (a release bump edits them all
    with `package`'s stamping rules: run `dist/release.py versions --write`)."""
    version = cargo_version()
    wrapper_path = DIST / "npm" / "toolport" / "package.json"
    manifest_path = DIST / "mcpb" / "manifest.json"
    server_path = ROOT / "server.json"
    wrapper, manifest, server = load_json(wrapper_path), load_json(manifest_path), load_json(server_path)
    stale = []
    if stamp_npm_wrapper(load_json(wrapper_path), version) != wrapper:
        stale.append(wrapper_path)
    if manifest["version"] != version:
        stale.append(manifest_path)
    stamped = stamp_server_json(load_json(server_path), version, None)
    if stamped != server:
        stale.append(server_path)
    if "--write" in sys.argv:
        write_json(wrapper_path, stamp_npm_wrapper(wrapper, version))
        manifest["version"] = version
        write_json(manifest_path, manifest)
        write_json(server_path, stamped)
        return 0
    for path in stale:
        print(f"{path.relative_to(ROOT)}: its version is not Cargo.toml's {version} "
              "(run `dist/release.py versions --write`)", file=sys.stderr)
    return 1 if stale else 0


# ------------------------------------------------------------------ build
def build(platforms: list[str], profile: str) -> int:
    """Release binaries + wheels for Linux (static musl, zig) and Windows (mingw) with maturin,
    built with the cargo profile `profile`, into target/dist/build (cargo) and
    target/dist/wheels."""
    for name in platforms:
        if name not in PLATFORMS or PLATFORMS[name][2] is None:
            local = [p for p, v in PLATFORMS.items() if v[2]]
            sys.exit(f"release.py build: cannot build {name} here; this machine builds {', '.join(local)} "
                     "(macOS is built by the release workflow)")
    # Real paths: .ci/run links these into its cache, and a venv's scripts hold the path they
    # were made at.
    toolchain = (CI / "cross-toolchain").resolve()
    need_mingw = "win32-x64" in platforms
    run([CI / "cross", "toolchain-windows" if need_mingw else "toolchain"])
    venv = (CI / "packaging" / "venv").resolve()
    ensure_packaging_venv(venv)
    env = dict(os.environ)
    env.update({
        "RUSTC": str(toolchain / "bin" / "rustc"),
        "RUSTC_BOOTSTRAP": "1",
        "PATH": os.pathsep.join([str(venv / "bin"), str(toolchain / "mingw" / "usr" / "bin"), env["PATH"]]),
        "XDG_CACHE_HOME": str(toolchain / "cache"),
        "ZIG_GLOBAL_CACHE_DIR": str(toolchain / "cache" / "zig"),
        # maturin --zig runs `<python> -m ziglang`: the zig .ci/cross installs (one copy for the
        # cross checks and this build; the packaging venv has none).
        "CARGO_ZIGBUILD_PYTHON_PATH": str(toolchain / "venv" / "bin" / "python"),
        # rustc's musl target links its own C runtime from the sysroot, which a from-source
        # standard library does not have: zig's musl supplies it instead.
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS": "-C link-self-contained=no",
        "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUSTFLAGS": "-C link-self-contained=no",
        "CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER": "x86_64-w64-mingw32-gcc",
        "CC_x86_64_pc_windows_gnu": "x86_64-w64-mingw32-gcc",
        "AR_x86_64_pc_windows_gnu": "x86_64-w64-mingw32-ar",
    })
    wheels = ROOT / "target" / "dist" / "wheels"
    for name in platforms:
        triple = PLATFORMS[name][2]
        cmd = [venv / "bin" / "maturin", "build", "--profile", profile, "--target", triple,
               "--target-dir", ROOT / "target" / "dist" / "build", "-o", wheels, "-Z", BUILD_STD]
        build_env = env
        if PLATFORMS[name][0] == "linux":
            cmd += ["--zig", "--compatibility", *LINUX_WHEEL_TAGS]
            build_env = link_order_env(env, triple)
            cmd += ["--", *LINK_ORDER_RUSTC_ARGS]
        run(cmd, cwd=DIST / "pypi", env=build_env)
        if build_env.get("TOOLPORT_LINK_ORDER", "on") != "off" and PLATFORMS[name][0] == "linux":
            check_link_order(binary_of(name, profile))
        print(f"built {name}: {binary_of(name, profile)}")
    return 0


def link_order_env(env: dict, triple: str) -> dict:
    """The environment of a build linked through dist/link_order.py: the target it links, and
    `TOOLPORT_LINK_ORDER=off` (said on stderr) when the binary cannot run here (another
    architecture): the order is recorded from a run of the binary itself."""
    env = dict(env, TOOLPORT_LINK_TARGET=triple)
    if not triple.startswith(os.uname().machine + "-"):
        print(f"{triple}: linked without a start-up order (this {os.uname().machine} machine "
              "cannot run the binary to record one)", file=sys.stderr)
        env["TOOLPORT_LINK_ORDER"] = "off"
    elif env.get("TOOLPORT_LINK_ORDER") != "off" and not shutil.which("valgrind"):
        sys.exit("release.py build: valgrind is not installed (apt-get install valgrind): "
                 "dist/link_order.py records the start-up functions of the Linux binary with it; "
                 "TOOLPORT_LINK_ORDER=off builds without that order")
    return env


def check_link_order(binary: Path) -> None:
    """Fail unless `binary` was linked with its start-up order: dist/link_order.py writes the
    functions it ordered beside what the linker wrote (`deps/toolport-HASH`, which cargo
    hard-links to `binary`). A binary that lost its order would pass every other check."""
    linked = [p for p in (binary.parent / "deps").glob(binary.name + "-*")
              if p.suffix == "" and p.stat().st_ino == binary.stat().st_ino]
    order = Path(f"{linked[0]}.startup-order") if linked else None
    if order is None or not order.is_file() or order.stat().st_mtime < binary.stat().st_mtime - 60:
        sys.exit(f"release.py build: {binary} was not linked with its start-up order "
                 "(dist/link_order.py wrote no list for it)")
    count = len(order.read_text().splitlines())
    if count == 0:
        sys.exit(f"release.py build: the start-up order of {binary} is empty ({order})")
    print(f"{binary.name}: linked with its start-up order, {count} functions ({order})")


def binary_of(platform: str, profile: str = "dist") -> Path:
    _, _, triple, exe = PLATFORMS[platform]
    return ROOT / "target" / "dist" / "build" / triple / profile / exe


def ensure_packaging_venv(venv: Path) -> None:
    reqs = CI / "packaging" / "requirements.txt"
    stamp = venv / ".stamp"
    want = hashlib.sha256(reqs.read_bytes() + sys.version.encode()).hexdigest()
    if stamp.is_file() and stamp.read_text() == want:
        return
    if venv.is_dir():  # emptied, not removed: it may be a cache entry that a link points at
        for child in venv.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    run([sys.executable, "-m", "venv", venv])
    run([venv / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
         "--require-hashes", "-r", reqs])
    stamp.write_text(want)


# ------------------------------------------------------------------ package
def package(binaries: dict[str, Path], wheels: Path | None, out: Path, mcpb_cli: list[str] | None) -> int:
    version = cargo_version()
    out = out.resolve()
    for name, path in binaries.items():
        if name not in PLATFORMS:
            sys.exit(f"release.py package: unknown platform {name}; known: {', '.join(PLATFORMS)}")
        if not path.is_file():
            sys.exit(f"release.py package: no binary at {path} for {name}")
    shutil.rmtree(out, ignore_errors=True)
    stage = out / "stage"
    (out / "npm").mkdir(parents=True)
    stage.mkdir()
    assets: list[Path] = []

    for name, path in sorted(binaries.items()):
        assets.append(archive(name, path, version, out))
        assets.append(npm_platform_package(name, path, version, stage, out / "npm"))
    assets.append(npm_wrapper(version, stage, out / "npm"))

    if wheels:
        for wheel in sorted(wheels.glob(f"toolport_mcp-{version}-*.whl")):
            shutil.copy2(wheel, out / wheel.name)
            assets.append(out / wheel.name)

    mcpb_sha = None
    if mcpb_cli:
        bundle = mcpb_bundle(binaries, version, stage, out, mcpb_cli)
        mcpb_sha = sha256(bundle)
        assets.append(bundle)

    server = stamp_server_json(load_json(ROOT / "server.json"), version, mcpb_sha)
    if not mcpb_sha:  # no bundle in this run: list only what was built
        server["packages"] = [p for p in server["packages"] if p["registryType"] != "mcpb"]
    write_json(out / "server.json", server)
    assets.append(out / "server.json")

    sums = "".join(f"{sha256(a)}  {a.relative_to(out).as_posix()}\n" for a in assets)
    (out / "SHA256SUMS").write_text(sums)
    shutil.rmtree(stage)
    print(f"packaged toolport {version} into {out}:")
    for a in assets:
        print(f"  {a.relative_to(out)}")
    return 0


def archive(platform: str, binary: Path, version: str, out: Path) -> Path:
    exe = PLATFORMS[platform][3]
    base = f"toolport-{version}-{platform}"
    docs = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    if platform.startswith("win32"):
        path = out / f"{base}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.write(binary, f"{base}/{exe}")
            for doc in docs:
                z.write(doc, f"{base}/{doc.name}")
        return path
    path = out / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as t:
        t.add(binary, f"{base}/{exe}", filter=executable)
        for doc in docs:
            t.add(doc, f"{base}/{doc.name}", filter=readable)
    return path


def executable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.mode, info.uid, info.gid, info.uname, info.gname = 0o755, 0, 0, "", ""
    return info


def readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info = executable(info)
    info.mode = 0o644
    return info


def npm_pack(directory: Path, dest: Path) -> Path:
    out = subprocess.run(["npm", "pack", "--json", "--pack-destination", str(dest)], cwd=directory,
                         check=True, capture_output=True, text=True).stdout
    return dest / json.loads(out)[0]["filename"]


def npm_platform_package(platform: str, binary: Path, version: str, stage: Path, dest: Path) -> Path:
    """`toolport-<platform>`: the binary alone, with `os`/`cpu` so npm installs it only there
    (no install script). No `libc` field: the Linux binaries are static, so one package serves
    glibc and musl systems."""
    os_name, cpus, _, exe = PLATFORMS[platform]
    directory = stage / f"toolport-{platform}"
    (directory / "bin").mkdir(parents=True)
    target = directory / "bin" / exe
    shutil.copy2(binary, target)
    target.chmod(0o755)
    wrapper = load_json(DIST / "npm" / "toolport" / "package.json")
    write_json(directory / "package.json", {
        "name": f"toolport-{platform}",
        "version": version,
        "description": f"The toolport binary for {platform} (installed by the `toolport` package).",
        "license": wrapper["license"],
        "repository": wrapper["repository"],
        "os": [os_name],
        "cpu": cpus,
        "files": [f"bin/{exe}"],
        "preferUnplugged": True,
    })
    (directory / "README.md").write_text(
        f"# toolport-{platform}\n\nThe toolport binary for {platform}. Install `toolport` instead: "
        "npm picks this package on this platform by itself.\n")
    return npm_pack(directory, dest)


def npm_wrapper(version: str, stage: Path, dest: Path) -> Path:
    directory = stage / "toolport"
    shutil.copytree(DIST / "npm" / "toolport", directory)
    write_json(directory / "package.json", stamp_npm_wrapper(load_json(directory / "package.json"), version))
    return npm_pack(directory, dest)


def mcpb_bundle(binaries: dict[str, Path], version: str, stage: Path, out: Path, mcpb_cli: list[str]) -> Path:
    """One bundle for every OS it has a binary for (Claude Desktop runs on macOS and Windows;
    Linux hosts of the format too). The manifest keeps only the systems present."""
    directory = stage / "mcpb"
    manifest = load_json(DIST / "mcpb" / "manifest.json")
    manifest["version"] = version
    systems = {}
    for name, path in binaries.items():
        os_name, _, _, exe = PLATFORMS[name]
        if os_name == "linux" and name != "linux-x64":
            continue  # one Linux binary: the format has no CPU override (x64 is the common one)
        # server/<os>/: the folders dist/mcpb/manifest.json's commands name.
        folder = directory / "server" / os_name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, folder / exe)
        (folder / exe).chmod(0o755)
        systems[os_name] = f"server/{os_name}/{exe}"
    config = manifest["server"]["mcp_config"]
    overrides = config.get("platform_overrides", {})
    first = "darwin" if "darwin" in systems else sorted(systems)[0]
    manifest["server"]["entry_point"] = systems[first]
    config["command"] = "${__dirname}/" + systems[first]
    config["platform_overrides"] = {s: o for s, o in overrides.items() if s in systems and s != first}
    manifest["compatibility"]["platforms"] = sorted(systems)
    write_json(directory / "manifest.json", manifest)
    run([*mcpb_cli, "validate", directory / "manifest.json"])
    bundle = out / f"toolport-{version}.mcpb"
    run([*mcpb_cli, "pack", directory, bundle])
    return bundle


# ------------------------------------------------------------------ command line
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--profile", default="dist",
                   help="the cargo profile (default: dist, what users download)")
    b.add_argument("platforms", nargs="*", default=["linux-x64"])
    p = sub.add_parser("package")
    p.add_argument("--binary", action="append", default=[], metavar="PLATFORM=PATH",
                   help="a built binary (default: every platform `build` left in target/dist/build)")
    p.add_argument("--wheels", type=Path, help="wheels to add (default: target/dist/wheels)")
    p.add_argument("--out", type=Path, default=ROOT / "target" / "dist" / "out")
    p.add_argument("--mcpb", help="the MCPB CLI command (default: .ci/packaging's, run by node)")
    v = sub.add_parser("versions")
    v.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.command == "build":
        return build(args.platforms, args.profile)
    if args.command == "versions":
        return versions()
    binaries = dict(b.split("=", 1) for b in args.binary) if args.binary else {
        name: binary_of(name) for name in PLATFORMS if PLATFORMS[name][2] and binary_of(name).is_file()}
    if not binaries:
        sys.exit("release.py package: no binaries (run `dist/release.py build` or pass --binary)")
    wheels = args.wheels or (ROOT / "target" / "dist" / "wheels")
    mcpb = args.mcpb.split() if args.mcpb else [
        "node", str(CI / "packaging" / "node_modules" / "@anthropic-ai" / "mcpb" / "dist" / "cli" / "cli.js")]
    return package({k: Path(v) for k, v in binaries.items()}, wheels if wheels.is_dir() else None, args.out, mcpb)


if __name__ == "__main__":
    sys.exit(main())
