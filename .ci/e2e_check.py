#!/usr/bin/env python3
"""Check the MCP Inspector CLI's `--format json` output for the .ci/run end-to-end step.

Each check reads one JSON file the Inspector wrote on stdout ({"result": ...}) and
exits non-zero with a clear message when the result is not what toolport must answer.

  e2e_check.py tools-list   OUT.json                  tools/list has read_file, list_directory, path_info, execute_command, web_search
  e2e_check.py read-file    OUT.json EXPECTED_FILE    read_file returned EXPECTED_FILE's exact text in the text block and in structuredContent (an unknown client gets both)
  e2e_check.py read-file-structured OUT.json EXPECTED_FILE  ... once, in structuredContent.content (--payload structured)
  e2e_check.py list-dir     OUT.json NAME             list_directory listed an entry NAME in its text, not isError
  e2e_check.py tool-error   OUT.json                  the tool call was refused (isError: true)
  e2e_check.py exec         OUT.json EXPECTED_FILE    execute_command `cat FILE` exited 0 with the exact text (in the text block and structuredContent.stdout)
  e2e_check.py tools-list-plugins OUT.json            tools/list has the built-ins and the example plugin tools
  e2e_check.py plugin-text  OUT.json TEXT             a text plugin tool succeeded and its text contains TEXT
  e2e_check.py call-text    OUT.json TEXT             the same for any tool (an upstream server's)
  e2e_check.py plugin-json  OUT.json                  system_info succeeded with structuredContent (uptime, memory)
  e2e_check.py metrics-resource OUT.json              resources/read toolport://metrics gave JSON samples
  e2e_check.py structured   OUT.json KEY JSON         a call succeeded and structuredContent[KEY] == JSON
  e2e_check.py file-is      OUT.json FILE TEXT        a call succeeded and FILE now holds exactly TEXT
  e2e_check.py text-has     OUT.json KEY TEXT         a call succeeded, its text block contains TEXT and structuredContent has KEY (the payload in both halves)
  e2e_check.py image        OUT.json MIME FILE        read_file returned FILE as one MIME image block, with a text line
  e2e_check.py downscaled   OUT.json MIME W H         read_file of a W x H image returned one MIME image block that Pillow decodes whole within the default bounds (.ci/images.py; run with the frameworks venv's python)
  e2e_check.py refused-with OUT.json TEXT             the call was refused (isError) saying TEXT, with no image block
  e2e_check.py surface-list OUT.json                  the search surface: <= 15 tools, search_tools and call_tool, no upstream tool
  e2e_check.py search-finds OUT.json NAME             search_tools found NAME first, with its input schema
"""

import json
import sys

REQUIRED_TOOLS = (
    "read_file",
    "list_directory",
    "path_info",
    "grep",
    "glob",
    "read_many_files",
    "write_file",
    "edit_file",
    "apply_patch",
    "create_directory",
    "move_path",
    "copy_path",
    "delete_path",
    "undo_last_change",
    "execute_command",
    "job_output",
    "job_input",
    "job_kill",
    "job_list",
    "web_search",
)
EXAMPLE_PLUGIN_TOOLS = ("git_status", "git_log", "git_diff", "git_show", "system_info")


def fail(msg: str) -> None:
    print(f"E2E FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def load_result(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except OSError as e:
        fail(f"cannot read the Inspector's output {path}: {e}")
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError as e:
        fail(f"the Inspector's output {path} is not JSON ({e}): {raw[:500]!r}")
    if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict):
        fail(f"the Inspector's output {path} has no 'result' object: {raw[:500]!r}")
    return doc["result"]


def tools_list(out: str, required: tuple = REQUIRED_TOOLS) -> None:
    result = load_result(out)
    tools = result.get("tools")
    if not isinstance(tools, list):
        fail(f"tools/list result has no 'tools' array: {json.dumps(result)[:500]}")
    names = [t.get("name") for t in tools if isinstance(t, dict)]
    missing = [n for n in required if n not in names]
    if missing:
        fail(f"tools/list is missing {missing}; it listed {names}")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        fail(f"tools/list lists some tools more than once: {dupes}")
    for t in tools:
        schema = t.get("inputSchema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            fail(f"tool {t.get('name')!r} has no object inputSchema: {schema!r}")
    print(f"ok: tools/list -> {names}")


def text_of(result: dict) -> str:
    """The text blocks of a result, joined."""
    return "".join(b.get("text", "") for b in result.get("content", []) if isinstance(b, dict) and b.get("type") == "text")


def read_file(out: str, expected_file: str) -> None:
    """The Inspector is a client toolport does not single out: the file comes in both halves."""
    with open(expected_file, encoding="utf-8", newline="") as f:
        expected = f.read()
    sc = succeeded(out)
    got = text_of(load_result(out))
    if got != expected:
        fail(f"read_file's text block differs from the file.\n  expected: {expected!r}\n  got:      {got!r}")
    if sc.get("content") != expected:
        fail(f"read_file's structuredContent.content differs from the file (an unknown client gets both).\n  expected: {expected!r}\n  got:      {sc.get('content')!r}")
    if len(sc.get("sha256", "")) != 64:
        fail(f"read_file's structuredContent has no sha256: {json.dumps(sc)[:300]}")
    print(f"ok: read_file -> {len(expected.encode('utf-8'))} bytes, exact content, in the text block and structuredContent")


def read_file_structured(out: str, expected_file: str) -> None:
    with open(expected_file, encoding="utf-8", newline="") as f:
        expected = f.read()
    sc = succeeded(out)
    if sc.get("content") != expected:
        fail(f"read_file structuredContent.content differs from the file.\n  expected: {expected!r}\n  got:      {sc.get('content')!r}")
    text = text_of(load_result(out))
    if expected.strip() and expected.strip() in text:
        fail(f"read_file sent the file twice (in the text block too): {text[:300]!r}")
    print(f"ok: read_file --payload structured -> {len(expected.encode('utf-8'))} bytes, exact content, once, in structuredContent")


def exec_cat(out: str, expected_file: str) -> None:
    result = load_result(out)
    with open(expected_file, encoding="utf-8", newline="") as f:
        expected = f.read()
    if result.get("isError") is not False:
        fail(f"execute_command returned isError={result.get('isError')!r}: {json.dumps(result)[:500]}")
    sc = result.get("structuredContent")
    if not isinstance(sc, dict):
        fail(f"execute_command returned no structuredContent: {json.dumps(result)[:500]}")
    if sc.get("return_code") != 0 or sc.get("timed_out") is not False:
        fail(f"execute_command did not exit 0: {json.dumps(sc)[:500]}")
    text = text_of(result)
    if f"--- stdout ({len(expected.encode('utf-8'))} bytes) ---\n{expected}" not in text + "\n":
        fail(f"execute_command's text block does not hold the file as stdout.\n  expected: {expected!r}\n  got:      {text!r}")
    if sc.get("stdout") != expected:
        fail(f"execute_command's structuredContent.stdout is not the file (an unknown client gets both): {json.dumps(sc)[:300]}")
    print(f"ok: execute_command cat -> exit 0, {len(expected.encode('utf-8'))} bytes of stdout")


def list_dir(out: str, name: str) -> None:
    result = load_result(out)
    if result.get("isError") is not False:
        fail(f"list_directory returned isError={result.get('isError')!r}: {json.dumps(result)[:500]}")
    text = text_of(result)
    paths = [line.split(" (")[0].rstrip("/") for line in text.splitlines()[1:]]
    if name not in paths:
        fail(f"list_directory did not list {name!r}; its text is {text!r}")
    print(f"ok: list_directory -> {paths}")


def tool_error(out: str) -> None:
    result = load_result(out)
    if result.get("isError") is not True:
        fail(f"expected the tool call to be refused (isError: true), got: {json.dumps(result)[:500]}")
    print("ok: refused with isError=true")


def tools_list_plugins(out: str) -> None:
    tools_list(out, REQUIRED_TOOLS + EXAMPLE_PLUGIN_TOOLS)


def call_text(out: str, expected: str) -> None:
    result = load_result(out)
    if result.get("isError") is not False:
        fail(f"the tool returned isError={result.get('isError')!r}: {json.dumps(result)[:500]}")
    content = result.get("content")
    text = content[0].get("text") if isinstance(content, list) and content and isinstance(content[0], dict) else None
    if not isinstance(text, str) or expected not in text:
        fail(f"the tool's text does not contain {expected!r}: {json.dumps(result)[:500]}")
    print(f"ok: tool call -> text containing {expected!r}")


def surface_list(out: str) -> None:
    """The search surface with three upstreams: at most 15 tools, the two search tools, and
    no upstream tool (they are found with search_tools)."""
    result = load_result(out)
    names = [t.get("name") for t in result.get("tools", []) if isinstance(t, dict)]
    if len(names) > 15 or "search_tools" not in names or "call_tool" not in names:
        fail(f"the search surface lists {len(names)} tools: {names}")
    upstream = [n for n in names if "__" in n or n in ("fetch", "read_text_file")]
    if upstream:
        fail(f"the search surface lists upstream tools {upstream}: {names}")
    print(f"ok: the search surface lists {len(names)} tools: {names}")


def search_finds(out: str, name: str) -> None:
    """search_tools answered with `name` first, with its input schema."""
    result = load_result(out)
    if result.get("isError") is not False:
        fail(f"search_tools returned isError={result.get('isError')!r}: {json.dumps(result)[:500]}")
    try:
        found = json.loads(text_of(result))["tools"]
    except (ValueError, KeyError, TypeError) as e:
        fail(f"search_tools' text is not its JSON answer ({e}): {json.dumps(result)[:500]}")
    if not found or found[0].get("name") != name or not isinstance(found[0].get("inputSchema"), dict):
        fail(f"search_tools did not find {name} first with its schema: {[t.get('name') for t in found]}")
    print(f"ok: search_tools -> {name} first, with its input schema")


def plugin_json(out: str) -> None:
    result = load_result(out)
    if result.get("isError") is not False:
        fail(f"system_info returned isError={result.get('isError')!r}: {json.dumps(result)[:500]}")
    sc = result.get("structuredContent")
    if not isinstance(sc, dict) or not isinstance(sc.get("uptime_seconds"), (int, float)):
        fail(f"system_info returned no structuredContent.uptime_seconds: {json.dumps(result)[:500]}")
    memory = sc.get("memory")
    if not isinstance(memory, dict) or not memory.get("total_bytes"):
        fail(f"system_info returned no memory.total_bytes: {json.dumps(sc)[:500]}")
    print(f"ok: system_info -> uptime {sc['uptime_seconds']} s, {memory['total_bytes']} bytes of memory")


def metrics_resource(out: str) -> None:
    result = load_result(out)
    contents = result.get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[0], dict):
        fail(f"resources/read returned no contents: {json.dumps(result)[:500]}")
    try:
        doc = json.loads(contents[0].get("text", ""))
    except json.JSONDecodeError as e:
        fail(f"the metrics resource is not JSON ({e}): {json.dumps(result)[:500]}")
    samples = doc.get("metrics") if isinstance(doc, dict) else None
    if not isinstance(samples, list):
        fail(f"the metrics resource has no 'metrics' array: {json.dumps(doc)[:500]}")
    names = sorted({s.get("name") for s in samples if isinstance(s, dict)})
    if "toolport_calls_in_flight" not in names:
        fail(f"the metrics resource lacks toolport_calls_in_flight; it has {names}")
    print(f"ok: toolport://metrics -> {len(samples)} samples")


def succeeded(out: str) -> dict:
    result = load_result(out)
    if result.get("isError") is not False:
        fail(f"the call returned isError={result.get('isError')!r}: {json.dumps(result)[:500]}")
    sc = result.get("structuredContent")
    if not isinstance(sc, dict):
        fail(f"the call returned no structuredContent: {json.dumps(result)[:500]}")
    return sc


def structured(out: str, key: str, expected: str) -> None:
    sc = succeeded(out)
    want = json.loads(expected)
    if sc.get(key) != want:
        fail(f"structuredContent.{key} is {json.dumps(sc.get(key))[:500]}, expected {expected}")
    print(f"ok: structuredContent.{key} == {expected}")


def text_has(out: str, key: str, text: str) -> None:
    sc = succeeded(out)
    got = text_of(load_result(out))
    if text not in got:
        fail(f"the text block does not contain {text!r}: {got[:500]!r}")
    if key not in sc:
        fail(f"structuredContent has no {key} (an unknown client gets the payload in both halves): {json.dumps(sc)[:300]}")
    print(f"ok: the text block has {text!r}, structuredContent has {key}")


def file_is(out: str, path: str, text: str) -> None:
    succeeded(out)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            got = f.read()
    except OSError as e:
        fail(f"cannot read {path} after the call: {e}")
    if got != text:
        fail(f"{path} holds {got!r}, expected {text!r}")
    print(f"ok: {path} holds the expected {len(text)} characters")


def image(out: str, mime: str, expected_file: str) -> None:
    """read_file of an image: an `image` block with that mimeType whose data is the file."""
    import base64
    facts = succeeded(out)
    if facts.get("kind") != "image" or facts.get("mime_type") != mime:
        fail(f"{out}: structuredContent is not an image's facts: {json.dumps(facts)[:500]}")
    result = load_result(out)
    with open(expected_file, "rb") as f:
        want = f.read()
    blocks = [c for c in result.get("content", []) if c.get("type") == "image"]
    if len(blocks) != 1:
        fail(f"{out}: expected one image block, got {[c.get('type') for c in result.get('content', [])]}")
    if blocks[0].get("mimeType") != mime or base64.b64decode(blocks[0].get("data", "")) != want:
        fail(f"{out}: the image block is not {expected_file} as {mime}: mimeType {blocks[0].get('mimeType')!r}")
    texts = [c for c in result.get("content", []) if c.get("type") == "text"]
    if not texts:
        fail(f"{out}: no text line beside the image (clients that cannot show images get one)")
    print(f"ok: read_file -> an image block ({mime}, {len(want)} bytes) and a text line: {texts[0].get('text', '')[:80]!r}")


def downscaled(out: str, mime: str, width: str, height: str) -> None:
    """read_file of a large image: one `image` block, in the file's format, that Pillow decodes
    whole within the default bounds (.ci/images.py), and the file's own size in the facts."""
    import base64

    import images

    facts = succeeded(out)
    size = (int(width), int(height))
    if facts.get("kind") != "image" or facts.get("mime_type") != mime:
        fail(f"{out}: structuredContent is not an image's facts: {json.dumps(facts)[:500]}")
    if (facts.get("width"), facts.get("height")) != size or facts.get("resized") is not True:
        fail(f"{out}: the facts do not state the original {size} and resized: {json.dumps(facts)[:500]}")
    result = load_result(out)
    blocks = [c for c in result.get("content", []) if c.get("type") == "image"]
    if len(blocks) != 1 or blocks[0].get("mimeType") != mime:
        fail(f"{out}: expected one {mime} image block, got {[(c.get('type'), c.get('mimeType')) for c in result.get('content', [])]}")
    data = base64.b64decode(blocks[0].get("data", ""))
    try:
        sent = images.check_sent(data, mime)
    except Exception as e:  # noqa: BLE001: Pillow's refusal is the finding
        fail(f"{out}: the image sent is not one a model API takes: {type(e).__name__}: {e}")
    said = facts.get("sent", {})
    if sent != images.SENT or (said.get("width"), said.get("height")) != sent:
        fail(f"{out}: the image sent is {sent}, expected {images.SENT}, said {said}")
    texts = " ".join(c.get("text", "") for c in result.get("content", []) if c.get("type") == "text")
    if f"{size[0]}x{size[1]}" not in texts or f"{sent[0]}x{sent[1]}" not in texts:
        fail(f"{out}: the text line does not say both sizes: {texts[:300]!r}")
    print(f"ok: read_file -> {mime} {size[0]}x{size[1]} sent as {sent[0]}x{sent[1]} ({len(data)} bytes), decoded whole by Pillow")


def refused_with(out: str, text: str) -> None:
    """An isError result whose text says `text`, and no image block."""
    result = load_result(out)
    said = " ".join(c.get("text", "") for c in result.get("content", []))
    if result.get("isError") is not True or text not in said:
        fail(f"{out}: expected isError with {text!r}, got: {json.dumps(result)[:800]}")
    if any(c.get("type") == "image" for c in result.get("content", [])):
        fail(f"{out}: a refusal carries an image block")
    print(f"ok: refused, naming {text!r}")


def main(argv: list[str]) -> None:
    checks = {
        "tools-list": (tools_list, 1),
        "read-file": (read_file, 2),
        "read-file-structured": (read_file_structured, 2),
        "exec": (exec_cat, 2),
        "list-dir": (list_dir, 2),
        "tool-error": (tool_error, 1),
        "tools-list-plugins": (tools_list_plugins, 1),
        "plugin-text": (call_text, 2),
        "call-text": (call_text, 2),
        "plugin-json": (plugin_json, 1),
        "metrics-resource": (metrics_resource, 1),
        "structured": (structured, 3),
        "file-is": (file_is, 3),
        "text-has": (text_has, 3),
        "image": (image, 3),
        "downscaled": (downscaled, 4),
        "refused-with": (refused_with, 2),
        "surface-list": (surface_list, 1),
        "search-finds": (search_finds, 2),
    }
    if len(argv) < 2 or argv[1] not in checks or len(argv) - 2 != checks[argv[1]][1]:
        fail(f"usage: see the docstring of {argv[0]}; got {argv[1:]}")
    fn, _ = checks[argv[1]]
    fn(*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
