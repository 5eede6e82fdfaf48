"""`toolport-mcp` (and `python -m toolport_mcp`): run the toolport binary this wheel installed.

The wheel puts the binary into the environment's scripts directory as `toolport`. This launcher
exists so that `uvx toolport-mcp` and `pipx run toolport-mcp` find a command named after the
package. On POSIX it replaces itself with the binary (stdio, signals and the exit status are
the binary's own); Windows has no exec, so it runs the binary with stdio inherited and exits
with its status. It never writes to stdout, which carries the MCP protocol.
"""

import os
import subprocess
import sys
import sysconfig


def binary() -> str:
    exe = "toolport.exe" if os.name == "nt" else "toolport"
    candidates = [os.path.join(sysconfig.get_path("scripts"), exe)]
    user = sysconfig.get_path("scripts", f"{os.name}_user")
    if user:
        candidates.append(os.path.join(user, exe))
    # Beside this launcher's own script (a venv whose scripts dir sysconfig does not report).
    candidates.append(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), exe))
    for path in candidates:
        if os.path.isfile(path):
            return path
    sys.stderr.write(f"toolport-mcp: the toolport binary is not installed (looked in: {', '.join(candidates)})\n")
    sys.exit(1)


def main() -> None:
    path = binary()
    args = [path, *sys.argv[1:]]
    if os.name == "nt":
        try:
            sys.exit(subprocess.call(args))
        except KeyboardInterrupt:
            sys.exit(130)
    os.execv(path, args)


if __name__ == "__main__":
    main()
