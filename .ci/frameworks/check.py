"""What an agent framework's model is handed when it calls toolport's tools.

Run by `.ci/run` with the pinned frameworks in `.ci/frameworks/requirements.txt`:

    python check.py TOOLPORT_BINARY

For each framework below, over stdio and over Streamable HTTP, an agent calls `read_file`,
`grep`, `list_directory` and `execute_command` on the release binary, and the check reads
what the framework passes to its model as the tool's result. That must hold the payload: the
file's text, the matching line, the listing's entries, the command's output. No LLM and no
network: each framework's own test model (Pydantic AI's `FunctionModel`, an OpenAI Agents
SDK `Model`) asks for the tool call and records the answer; LangChain's tools are invoked
with a tool call, as LangGraph's `ToolNode` does, and the `ToolMessage` is what its model reads.

- Pydantic AI (`MCPToolset`, over FastMCP's client): prefers `structuredContent` when every
  content block is text (`_map_mcp_call_tool_result`), so a payload left out of it is lost.
- langchain-mcp-adapters: the content blocks become the `ToolMessage`; `structuredContent`
  goes to the artifact, which the model does not see.
- OpenAI Agents SDK (default `use_structured_content=False`): the content blocks.
- The MCP Python SDK's `ClientSession`, as itself (the name it sends, `mcp`, is no client
  toolport knows: both forms carry the payload) and as Claude Code (`claude-code`: the payload
  once, in `structuredContent`); and through it, read_file of a PNG after tools/list arrives as
  one `ImageContent` (image/png, the file's bytes) that passes the SDK's output-schema check,
  a 4000x3000 PNG screenshot and a 12-megapixel JPEG arrive downscaled to at most 1568 px, in
  their format, decoded whole by Pillow, with their original size in `structuredContent`, and
  a truncated PNG and a JPEG signature over garbage are refused with no image (.ci/images.py).

With a second argument, a config file of `[[upstreams]]` (`.ci/run` passes the three
reference servers'), each framework also drives toolport's search surface over stdio
(`--surface search`): the agent is not listed `everything__get-sum`, finds it with
`search_tools` from plain words, and calls it with `call_tool`; its model must be handed the
sum.

Every check prints `ok: …` or `FAIL: …`; the exit code is the number of failures (capped).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# .ci/images.py: the image files and the Pillow check of what comes back, shared with .ci/run.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import images  # noqa: E402

#: How long one framework run (connect, one or two model turns, one tool call) may take.
#: A run takes well under a second here; the margin is for a loaded 2-core CI machine.
RUN_TIMEOUT_S = 60
#: How long the HTTP server may take to print its address.
SERVER_START_TIMEOUT_S = 30


@dataclass(frozen=True)
class Case:
    """One tool call and what its model-visible result must contain."""

    tool: str
    args: dict[str, Any]
    #: Text that only the payload holds (not the arguments, not the metadata).
    payload: str
    what: str


FILE_TEXT = "first line of the framework check\nthe payload line: quartz-walrus-42\n"
CASES = [
    Case("read_file", {"path": "notes.txt"}, "quartz-walrus-42", "the file's text"),
    Case("grep", {"pattern": "walrus-4"}, "the payload line: quartz-walrus-42", "the matching line"),
    Case("list_directory", {"path": "."}, "only-in-the-listing.md", "the listing's entries"),
    # printf joins its arguments: "framework-output" is in the output, not in the argv.
    Case(
        "execute_command",
        {"command": "printf", "args": ["%s-%s\n", "framework", "output"]},
        "framework-output",
        "the command's output",
    ),
]


@dataclass(frozen=True)
class Server:
    """How to reach toolport: a stdio command, or an HTTP URL with its token."""

    transport: str  # "stdio" | "http"
    binary: str
    root: str
    url: str = ""
    token: str = ""

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    @property
    def stdio_args(self) -> list[str]:
        return ["--root", self.root]


def stdio_env() -> dict[str, str]:
    """The environment a server gets: the caller's without toolport's own settings, logging
    warnings only (the SDKs pass a stdio server's stderr through to ours)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOOLPORT_")}
    return env | {"RUST_LOG": "warn"}


def visible(value: Any) -> str:
    """A model-visible value as the text a model reads."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# ------------------------------------------------------------------ Pydantic AI


async def pydantic_ai(server: Server, case: Case) -> str:
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            part
            for message in messages
            for part in getattr(message, "parts", [])
            if isinstance(part, ToolReturnPart) and part.tool_name == case.tool
        ]
        if not returns:
            if case.tool not in {t.name for t in info.function_tools}:
                raise AssertionError(f"{case.tool} is not among the agent's tools")
            return ModelResponse(parts=[ToolCallPart(case.tool, case.args)])
        # What Pydantic AI renders for the model from the tool's return.
        seen.append(returns[-1].model_response_str())
        return ModelResponse(parts=[TextPart("done")])

    if server.transport == "stdio":
        toolset = MCPToolset(
            Client(StdioTransport(server.binary, server.stdio_args, env=stdio_env())),
            tool_error_behavior="error",
        )
    else:
        toolset = MCPToolset(server.url, headers=server.headers, tool_error_behavior="error")
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    async with agent:
        await agent.run("call the tool")
    if not seen:
        raise AssertionError("the model was never handed the tool's result")
    return seen[-1]


# ------------------------------------------------------------------ LangChain


async def langchain(server: Server, case: Case) -> str:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    if server.transport == "stdio":
        connection = {
            "transport": "stdio",
            "command": server.binary,
            "args": server.stdio_args,
            "env": stdio_env(),
        }
    else:
        connection = {"transport": "streamable_http", "url": server.url, "headers": server.headers}
    client = MultiServerMCPClient({"toolport": connection})
    tools = {tool.name: tool for tool in await client.get_tools()}
    tool = tools[case.tool]
    # A tool call, as LangGraph's ToolNode makes it: the answer is the ToolMessage the model reads.
    message = await tool.ainvoke(
        {"type": "tool_call", "name": case.tool, "args": case.args, "id": "call-1"}
    )
    return visible(message.content)


# ------------------------------------------------------------------ OpenAI Agents SDK


async def openai_agents(server: Server, case: Case) -> str:
    from agents import Agent, ModelSettings, Runner, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    seen: list[str] = []

    class RecordingModel(Model):
        """Calls the tool once, then records the tool output it is handed."""

        async def get_response(self, system_instructions, input, model_settings, tools, *args, **kwargs):
            outputs = [
                item
                for item in (input if isinstance(input, list) else [])
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            ]
            if not outputs:
                if case.tool not in {getattr(t, "name", None) for t in tools}:
                    raise AssertionError(f"{case.tool} is not among the agent's tools")
                call = ResponseFunctionToolCall(
                    id="fc-1",
                    call_id="call-1",
                    name=case.tool,
                    arguments=json.dumps(case.args),
                    type="function_call",
                    status="completed",
                )
                return ModelResponse(output=[call], usage=Usage(), response_id=None)
            seen.append(visible(outputs[-1]["output"]))
            text = ResponseOutputText(text="done", type="output_text", annotations=[])
            message = ResponseOutputMessage(
                id="msg-1", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the check runs the agent without streaming")

    if server.transport == "stdio":
        mcp = MCPServerStdio(
            params={"command": server.binary, "args": server.stdio_args, "env": stdio_env()},
            client_session_timeout_seconds=RUN_TIMEOUT_S,
        )
    else:
        mcp = MCPServerStreamableHttp(
            params={"url": server.url, "headers": server.headers},
            client_session_timeout_seconds=RUN_TIMEOUT_S,
        )
    async with mcp:
        agent = Agent(
            name="check",
            model=RecordingModel(),
            mcp_servers=[mcp],
            model_settings=ModelSettings(),
        )
        await Runner.run(agent, "call the tool", max_turns=3)
    if not seen:
        raise AssertionError("the model was never handed the tool's result")
    return seen[-1]


# ------------------------------------------------------------------ the MCP Python SDK


async def sdk_call(server: Server, client_name: str | None, tool: str, args: dict,
                   list_first: bool = False) -> Any:
    """The raw `CallToolResult` from the SDK's `ClientSession` (its own name, or
    `client_name`); with `list_first`, after tools/list, so the SDK checks the result against
    the tool's output schema."""
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    async with AsyncExitStack() as stack:
        if server.transport == "stdio":
            params = StdioServerParameters(command=server.binary, args=server.stdio_args, env=stdio_env())
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            read, write, _ = await stack.enter_async_context(
                streamablehttp_client(server.url, headers=server.headers)
            )
        info = types.Implementation(name=client_name, version="1.0.0") if client_name else None
        session = await stack.enter_async_context(ClientSession(read, write, client_info=info))
        await session.initialize()
        if list_first:
            await session.list_tools()
        return await session.call_tool(tool, args)


async def sdk_session(server: Server, case: Case, client_name: str | None) -> Any:
    return await sdk_call(server, client_name, case.tool, case.args)


def texts(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def sdk_unknown(server: Server, case: Case) -> str:
    result = await sdk_session(server, case, None)
    text, structured = texts(result), visible(result.structuredContent)
    if case.payload not in structured:
        raise AssertionError(f"structuredContent lacks the payload: {structured[:2000]}")
    return text


async def sdk_claude_code(server: Server, case: Case) -> str:
    result = await sdk_session(server, case, "claude-code")
    text, structured = texts(result), visible(result.structuredContent)
    if case.payload in text:
        raise AssertionError(f"the payload is sent twice (text block too): {text[:2000]}")
    return structured


# A 1x1 PNG: read_file returns it as an MCP image block, which the SDK must parse as one.
# (Until issue 40 this file's IDAT chunk was a byte short, and it was sent as an image anyway:
# Pillow refuses it, and toolport now does too.)
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8cfc0f01f00050001ff56c72f0d0000000049454e44ae426082"
)


async def sdk_image(server: Server) -> str:
    """read_file of an image through the SDK's ClientSession, after tools/list (so the SDK
    checks the result against the tool's output schema): one `ImageContent` with the file."""
    import base64

    result = await sdk_call(server, None, "read_file", {"path": "dot.png"}, list_first=True)
    images = [b for b in result.content if getattr(b, "type", "") == "image"]
    if result.isError or len(images) != 1:
        raise AssertionError(f"expected one image block, got {[getattr(b, 'type', '?') for b in result.content]}")
    if images[0].mimeType != "image/png" or base64.b64decode(images[0].data) != PNG_1X1:
        raise AssertionError(f"the image block is not the file as image/png: {images[0].mimeType}")
    return f"an image block (image/png, {len(PNG_1X1)} bytes)"


async def sdk_large_images(server: Server) -> str:
    """read_file of the large images through the SDK's ClientSession (after tools/list, so the
    SDK checks each result against the output schema): one `ImageContent` each, downscaled
    within the bounds, that Pillow decodes whole; the original size in structuredContent."""
    import base64

    seen = []
    for path, mime in [("shot.png", "image/png"), ("photo.jpg", "image/jpeg")]:
        result = await sdk_call(server, None, "read_file", {"path": path}, list_first=True)
        blocks = [b for b in result.content if getattr(b, "type", "") == "image"]
        if result.isError or len(blocks) != 1 or blocks[0].mimeType != mime:
            raise AssertionError(f"{path}: expected one {mime} image block, got {result.content!r:.800}")
        sent = images.check_sent(base64.b64decode(blocks[0].data), mime)
        facts = result.structuredContent or {}
        if sent != images.SENT or (facts.get("width"), facts.get("height")) != (images.WIDTH, images.HEIGHT):
            raise AssertionError(f"{path}: sent {sent}, facts {json.dumps(facts)[:400]}")
        seen.append(f"{path} {images.WIDTH}x{images.HEIGHT} as {sent[0]}x{sent[1]}")
    for path, format_name in [("cut.png", "PNG"), ("garbage.jpg", "JPEG")]:
        result = await sdk_call(server, None, "read_file", {"path": path}, list_first=True)
        if not result.isError or any(getattr(b, "type", "") == "image" for b in result.content):
            raise AssertionError(f"{path}: expected a refusal with no image, got {result.content!r:.800}")
        said = texts(result)
        if f"starts like a {format_name} image" not in said:
            raise AssertionError(f"{path}: the refusal does not say what was found: {said[:400]}")
        seen.append(f"{path} refused")
    return ", ".join(seen)


FRAMEWORKS: list[tuple[str, Callable[[Server, Case], Awaitable[str]]]] = [
    ("pydantic-ai", pydantic_ai),
    ("langchain-mcp-adapters", langchain),
    ("openai-agents", openai_agents),
    ("mcp-python-sdk (unknown client: both halves)", sdk_unknown),
    ("mcp-python-sdk as claude-code (structuredContent only)", sdk_claude_code),
]


#: The image reads through the MCP Python SDK, over each transport.
IMAGE_CHECKS: list[tuple[str, Callable[[Server], Awaitable[str]]]] = [
    ("read_file of an image", sdk_image),
    ("read_file of large, truncated and garbage images", sdk_large_images),
]


# ------------------------------------------------------------------ the search surface

#: What the search-surface agents ask for, the tool that should be found, its arguments and
#: what only its answer holds.
SEARCH_QUERY = "add two numbers together"
SEARCH_WANTED = "everything__get-sum"
SEARCH_ARGS = {"a": 2, "b": 40}
SEARCH_ANSWER = "42"


def found_first(seen: Any) -> str:
    """The first tool name in a search_tools answer as a framework handed it to its model:
    the answer's JSON text, or that text inside the framework's own JSON of a content block."""
    value = seen
    for _ in range(4):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                break
            continue
        if isinstance(value, list) and value:
            value = value[0]
            continue
        if isinstance(value, dict) and "tools" in value:
            tools = value["tools"]
            if not tools:
                raise AssertionError(f"search_tools found nothing: {value}")
            return tools[0]["name"]
        if isinstance(value, dict) and "text" in value:
            value = value["text"]
            continue
        break
    raise AssertionError(f"not a search_tools answer: {visible(seen)[:800]}")


def listed_for_search(names: set[str]) -> None:
    """The search surface's listing: the two tools, not the upstream tool."""
    if "search_tools" not in names or "call_tool" not in names:
        raise AssertionError(f"search_tools/call_tool are not listed: {sorted(names)}")
    if SEARCH_WANTED in names or len(names) > 15:
        raise AssertionError(f"the search surface lists {len(names)} tools: {sorted(names)}")


def call_found(name: str) -> dict[str, Any]:
    if name != SEARCH_WANTED:
        raise AssertionError(f"search_tools found {name} first, not {SEARCH_WANTED}")
    return {"name": name, "arguments": SEARCH_ARGS}


async def search_pydantic_ai(server: Server) -> str:
    from fastmcp.client import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            part
            for message in messages
            for part in getattr(message, "parts", [])
            if isinstance(part, ToolReturnPart)
        ]
        if not returns:
            listed_for_search({t.name for t in info.function_tools})
            return ModelResponse(parts=[ToolCallPart("search_tools", {"query": SEARCH_QUERY})])
        if returns[-1].tool_name == "search_tools":
            name = found_first(returns[-1].model_response_str())
            return ModelResponse(parts=[ToolCallPart("call_tool", call_found(name))])
        seen.append(returns[-1].model_response_str())
        return ModelResponse(parts=[TextPart("done")])

    toolset = MCPToolset(
        Client(StdioTransport(server.binary, server.stdio_args, env=stdio_env())),
        tool_error_behavior="error",
    )
    agent = Agent(FunctionModel(model), toolsets=[toolset])
    async with agent:
        await agent.run("add 2 and 40")
    if not seen:
        raise AssertionError("the model was never handed call_tool's result")
    return seen[-1]


async def search_langchain(server: Server) -> str:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connection = {
        "transport": "stdio",
        "command": server.binary,
        "args": server.stdio_args,
        "env": stdio_env(),
    }
    client = MultiServerMCPClient({"toolport": connection})
    tools = {tool.name: tool for tool in await client.get_tools()}
    listed_for_search(set(tools))
    found = await tools["search_tools"].ainvoke(
        {"type": "tool_call", "name": "search_tools", "args": {"query": SEARCH_QUERY}, "id": "call-1"}
    )
    name = found_first(found.content)
    message = await tools["call_tool"].ainvoke(
        {"type": "tool_call", "name": "call_tool", "args": call_found(name), "id": "call-2"}
    )
    return visible(message.content)


async def search_openai_agents(server: Server) -> str:
    from agents import Agent, ModelSettings, Runner, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.mcp import MCPServerStdio
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    set_tracing_disabled(True)
    seen: list[str] = []

    def call(call_id: str, name: str, args: dict) -> ModelResponse:
        item = ResponseFunctionToolCall(
            id=f"fc-{call_id}",
            call_id=call_id,
            name=name,
            arguments=json.dumps(args),
            type="function_call",
            status="completed",
        )
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    class SearchingModel(Model):
        """Searches, calls what it found, then records the answer it is handed."""

        async def get_response(self, system_instructions, input, model_settings, tools, *args, **kwargs):
            outputs = {
                item.get("call_id"): item.get("output")
                for item in (input if isinstance(input, list) else [])
                if isinstance(item, dict) and item.get("type") == "function_call_output"
            }
            if "search" not in outputs:
                listed_for_search({getattr(t, "name", None) for t in tools})
                return call("search", "search_tools", {"query": SEARCH_QUERY})
            if "call" not in outputs:
                return call("call", "call_tool", call_found(found_first(outputs["search"])))
            seen.append(visible(outputs["call"]))
            text = ResponseOutputText(text="done", type="output_text", annotations=[])
            message = ResponseOutputMessage(
                id="msg-1", content=[text], role="assistant", status="completed", type="message"
            )
            return ModelResponse(output=[message], usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):
            raise NotImplementedError("the check runs the agent without streaming")

    mcp = MCPServerStdio(
        params={"command": server.binary, "args": server.stdio_args, "env": stdio_env()},
        client_session_timeout_seconds=RUN_TIMEOUT_S,
    )
    async with mcp:
        agent = Agent(name="check", model=SearchingModel(), mcp_servers=[mcp], model_settings=ModelSettings())
        await Runner.run(agent, "add 2 and 40", max_turns=4)
    if not seen:
        raise AssertionError("the model was never handed call_tool's result")
    return seen[-1]


async def search_sdk(server: Server) -> str:
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with AsyncExitStack() as stack:
        params = StdioServerParameters(command=server.binary, args=server.stdio_args, env=stdio_env())
        read, write = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        listed_for_search({t.name for t in (await session.list_tools()).tools})
        found = await session.call_tool("search_tools", {"query": SEARCH_QUERY})
        result = await session.call_tool("call_tool", call_found(found_first(texts(found))))
        if result.isError:
            raise AssertionError(f"call_tool failed: {texts(result)[:800]}")
        return texts(result)


SEARCH_CHECKS: list[tuple[str, Callable[[Server], Awaitable[str]]]] = [
    ("pydantic-ai", search_pydantic_ai),
    ("langchain-mcp-adapters", search_langchain),
    ("openai-agents", search_openai_agents),
    ("mcp-python-sdk", search_sdk),
]


@dataclass(frozen=True)
class SearchServer(Server):
    """toolport over stdio in the search surface, with the upstreams of `config`."""

    config: str = ""

    @property
    def stdio_args(self) -> list[str]:
        return ["--root", self.root, "--config", self.config, "--surface", "search"]


# ------------------------------------------------------------------ running it


def workspace(base: Path) -> Path:
    root = base / "workspace"
    root.mkdir()
    (root / "notes.txt").write_text(FILE_TEXT, encoding="utf-8")
    (root / "only-in-the-listing.md").write_text("# listed\n", encoding="utf-8")
    (root / "dot.png").write_bytes(PNG_1X1)
    images.make(root)
    return root


def start_http(binary: str, root: Path, log: Path) -> tuple[subprocess.Popen, str, str]:
    """`toolport serve --http` on a free loopback port; its /mcp URL and token."""
    token = "fw-" + secrets.token_hex(16)
    env = stdio_env() | {"TOOLPORT_TOKEN": token}
    stderr = log.open("wb")
    proc = subprocess.Popen(
        [binary, "serve", "--http", "127.0.0.1:0", "--root", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=env,
    )
    pattern = re.compile(r"^toolport: listening on (http://\S+)", re.M)
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        found = pattern.search(log.read_text(errors="replace"))
        if found:
            return proc, found.group(1) + "/mcp", token
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"toolport serve --http did not start:\n{log.read_text(errors='replace')}")


def reason(error: BaseException) -> str:
    """An exception as a failure line: a task group's (anyio's, the MCP SDK's) with the
    exceptions inside it, which its own message only counts."""
    if isinstance(error, BaseExceptionGroup):
        inner = "; ".join(reason(e) for e in error.exceptions)
        return f"{type(error).__name__}: {error} [{inner}]"
    return f"{type(error).__name__}: {error}"


async def run_search(binary: str, root: Path, config: str) -> int:
    """Each framework finds and calls an upstream tool it was not listed."""
    failures = 0
    server = SearchServer("stdio", binary, str(root), config=config)
    for name, check in SEARCH_CHECKS:
        label = f"{name} over stdio, search surface: finds and calls {SEARCH_WANTED}"
        try:
            seen = await asyncio.wait_for(check(server), RUN_TIMEOUT_S)
        except Exception as e:  # noqa: BLE001: reported, then counted
            failures += 1
            print(f"FAIL: {label}: {reason(e)}", flush=True)
            continue
        if SEARCH_ANSWER in seen:
            print(f"ok: {label}: the model sees the sum", flush=True)
        else:
            failures += 1
            print(f"FAIL: {label}: the model is not handed the sum; it sees: {seen[:1500]!r}", flush=True)
    return failures


async def run_all(binary: str, base: Path, upstreams: str | None) -> int:
    root = workspace(base)
    if upstreams:
        searched = await run_search(binary, root, upstreams)
    else:
        searched = 0
    http, url, token = start_http(binary, root, base / "http.stderr")
    failures = 0
    try:
        servers = [
            Server("stdio", binary, str(root)),
            Server("http", binary, str(root), url=url, token=token),
        ]
        for name, run in FRAMEWORKS:
            for server in servers:
                for case in CASES:
                    label = f"{name} over {server.transport}: {case.tool}"
                    try:
                        seen = await asyncio.wait_for(run(server, case), RUN_TIMEOUT_S)
                    except Exception as e:  # noqa: BLE001: every failure is reported, then counted
                        failures += 1
                        print(f"FAIL: {label}: {reason(e)}", flush=True)
                        continue
                    if case.payload in seen:
                        print(f"ok: {label}: the model sees {case.what}", flush=True)
                    else:
                        failures += 1
                        print(
                            f"FAIL: {label}: the model is not handed {case.what} "
                            f"({case.payload!r}); it sees: {seen[:1500]!r}",
                            flush=True,
                        )
        for server in servers:
            for what, check in IMAGE_CHECKS:
                label = f"mcp-python-sdk over {server.transport}: {what}"
                try:
                    seen = await asyncio.wait_for(check(server), RUN_TIMEOUT_S)
                    print(f"ok: {label}: {seen}", flush=True)
                except Exception as e:  # noqa: BLE001: reported, then counted
                    failures += 1
                    print(f"FAIL: {label}: {reason(e)}", flush=True)
    finally:
        http.terminate()
        try:
            http.wait(timeout=15)
        except subprocess.TimeoutExpired:
            http.kill()
    if token in (base / "http.stderr").read_text(errors="replace"):
        failures += 1
        print("FAIL: the token appears in the HTTP server's stderr", flush=True)
    return failures + searched


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(f"usage: {sys.argv[0]} TOOLPORT_BINARY [UPSTREAMS_CONFIG]", file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    upstreams = os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else None
    with tempfile.TemporaryDirectory(prefix="toolport-frameworks.") as base:
        failures = asyncio.run(run_all(binary, Path(base), upstreams))
    total = len(FRAMEWORKS) * 2 * len(CASES) + 2 * len(IMAGE_CHECKS)  # + the images, each transport
    total += len(SEARCH_CHECKS) if upstreams else 0
    print(f"frameworks: {total - failures} of {total} passed")
    return min(failures, 100)


if __name__ == "__main__":
    sys.exit(main())
