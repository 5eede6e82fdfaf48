"""Checks the deployment example in docs/deploy/ with the real tools, and that its files agree.
Run by .ci/run with the frameworks venv's python (PyYAML):

    python check.py NODE HAPROXY TOOLPORT

1. compose.yaml: dclint (pinned in .ci/deploy/package.json): the Compose Specification's JSON
   schema, then dclint's rules (its three ordering rules off, .ci/deploy/dclint.json: the file
   reads in the order a person follows it).
2. haproxy.cfg: `haproxy -c` (Debian's, the one the replica tests run it with).
3. toolport.toml: `toolport --config toolport.toml config`, with the token and the Redis
   password from files as compose gives them.
4. Agreement: each replica service's TOOLPORT_REPLICA_ID is its service name, and haproxy has a
   server of that name at that service (a session id names its replica, haproxy routes on it);
   the address compose gives haproxy is toolport.toml's trusted proxy; every file compose mounts
   is in docs/deploy/.

Prints one line per check; any failure exits 1 with what was wrong.
"""

import ipaddress
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEPLOY = HERE.parent.parent / "docs" / "deploy"
# Each tool gets this long: all three answer in about a second.
TIMEOUT = 120


def fail(message):
    print(f"deploy check: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def run(argv, env=None):
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False
    )
    if done.returncode != 0:
        fail(f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def main(node, haproxy, toolport):
    compose_path = DEPLOY / "compose.yaml"
    dclint = HERE / "node_modules" / "dclint" / "bin" / "dclint.cjs"
    if not dclint.is_file():
        fail(f"{dclint} is missing: .ci/run installs it (npm ci in .ci/deploy)")
    run([node, dclint, "-c", HERE / "dclint.json", "--max-warnings", "0", compose_path])
    print("compose.yaml: the Compose Specification and dclint's rules: ok")

    run([haproxy, "-c", "-q", "-f", DEPLOY / "haproxy.cfg"])
    print("haproxy.cfg: haproxy -c: ok")

    with tempfile.TemporaryDirectory() as tmp:
        token = Path(tmp, "token")
        token.write_text("0123456789abcdef0123456789abcdef\n")
        password = Path(tmp, "redis-password")
        password.write_text("not-a-real-password\n")
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith("TOOLPORT_")
        }
        env.update(
            TOOLPORT_TOKEN_FILE=str(token),
            TOOLPORT_REDIS_PASSWORD_FILE=str(password),
            TOOLPORT_REPLICA_ID="r1",
        )
        printed = run(
            [toolport, "--http", "0.0.0.0:8787", "--config", DEPLOY / "toolport.toml", "config"],
            env=env,
        )
    if "not-a-real-password" in printed:
        fail("toolport config printed the Redis password")
    print("toolport.toml: toolport config: ok")

    compose = yaml.safe_load(compose_path.read_text())
    config = tomllib.loads((DEPLOY / "toolport.toml").read_text())
    servers = dict(
        re.findall(r"^\s*server\s+(\S+)\s+(\S+)", (DEPLOY / "haproxy.cfg").read_text(), re.M)
    )
    services = compose["services"]
    replicas = {
        name: service
        for name, service in services.items()
        if "TOOLPORT_REPLICA_ID" in (service.get("environment") or {})
    }
    if len(replicas) < 2:
        fail(f"compose.yaml has {len(replicas)} replica services; the example shows several")
    for name, service in replicas.items():
        environment = service["environment"]
        if environment["TOOLPORT_REPLICA_ID"] != name:
            fail(f"service {name}: TOOLPORT_REPLICA_ID is {environment['TOOLPORT_REPLICA_ID']}")
        port = service["command"][service["command"].index("--http") + 1].rsplit(":", 1)[1]
        if servers.get(name) != f"{name}:{port}":
            fail(f"haproxy.cfg has no `server {name} {name}:{port}` (it has {servers})")
        if environment.get("TOOLPORT_INTERNAL_URL") != f"http://{name}:{port}":
            fail(f"service {name}: TOOLPORT_INTERNAL_URL is not http://{name}:{port}")
    if set(servers) != set(replicas):
        fail(f"haproxy.cfg's servers {sorted(servers)} are not the replicas {sorted(replicas)}")
    balancer = services["haproxy"]["networks"]["replicas"]["ipv4_address"]
    trusted = [ipaddress.ip_network(p) for p in config["http"]["trusted_proxies"]]
    if not any(ipaddress.ip_address(balancer) in net for net in trusted):
        fail(f"haproxy's address {balancer} is not in toolport.toml's trusted_proxies {trusted}")
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if source.startswith("./") and not (DEPLOY / source).is_file():
                fail(f"compose.yaml mounts {source}, which is not in docs/deploy/")
    print(f"the files agree: replicas {sorted(replicas)}, haproxy at {balancer} trusted")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail("usage: check.py NODE HAPROXY TOOLPORT")
    main(*sys.argv[1:])
