"""The MCP Python SDK's Streamable HTTP client through a load balancer in front of stateful
toolport replicas, driven by tests/it/replicas.rs.

    python sdk_session.py MCP_URL FILE      (the bearer token in TOOLPORT_TOKEN)

It opens a session (protocol 2025-11-25: initialize, then Mcp-Session-Id on every request),
calls read_file on FILE three times and says its session id; then waits for a line on stdin,
while the test stops the replica that holds the session. Its next call reaches another replica,
which answers 404: the SDK turns that into an McpError ("Session terminated") for the call, and
leaves starting again to the application, as here: a new session, read_file again, its id said.
Each step is a JSON line on stdout; any other failure is an exception (exit status 1).
"""

import asyncio
import json
import os
import sys

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

# Every step is bounded: the test has its own timeout too.
STEP_TIMEOUT = 30


def say(**fields):
    print(json.dumps(fields), flush=True)


def http_client():
    token = os.environ["TOOLPORT_TOKEN"]
    return httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx.Timeout(STEP_TIMEOUT, read=300),
    )


async def read(session, path):
    result = await asyncio.wait_for(
        session.call_tool("read_file", {"path": path}), STEP_TIMEOUT
    )
    if result.isError:
        raise RuntimeError(f"read_file failed: {result.content}")
    return result.content[0].text


async def main(url, path):
    async with http_client() as client:
        async with streamable_http_client(url, http_client=client) as (rx, tx, session_id):
            async with ClientSession(rx, tx) as session:
                await asyncio.wait_for(session.initialize(), STEP_TIMEOUT)
                texts = [await read(session, path) for _ in range(3)]
                say(session=session_id(), texts=texts)
                # The test stops this session's replica, then answers.
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
                try:
                    await read(session, path)
                    raise RuntimeError("a call on a session whose replica is gone succeeded")
                except McpError as error:
                    say(terminated=error.error.message)
    async with http_client() as client:
        async with streamable_http_client(url, http_client=client) as (rx, tx, session_id):
            async with ClientSession(rx, tx) as session:
                await asyncio.wait_for(session.initialize(), STEP_TIMEOUT)
                say(session=session_id(), texts=[await read(session, path)])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
