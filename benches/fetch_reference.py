"""The reference fetch server's conversion on the page of benches/fetch.rs, for BENCHMARKS.md.

Times `mcp_server_fetch.server.extract_content_from_html` (readabilipy with Node's Readability.js,
then markdownify: what `mcp-server-fetch` does to every HTML page) on the same 2 MB page that
`cargo bench --bench fetch` serves, offline. Set up once (PyPI and npm):

    python3 -m venv /tmp/fetchref && /tmp/fetchref/bin/pip install mcp-server-fetch
    /tmp/fetchref/bin/python benches/fetch_reference.py 3

(the first run lets readabilipy `npm install` its Readability.js and jsdom).
"""

import resource
import statistics
import sys
import time

import readabilipy.simple_json as simple_json
from mcp_server_fetch.server import extract_content_from_html

PAGE_BYTES = 2 * 1024 * 1024


def page():
    """The page of benches/fetch.rs, byte for byte."""
    head = (
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>A very long article</title></head><body>'
        '<header><nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li></ul></nav></header>'
        '<div class="ad">Sponsored: something</div><main><article><h1>A very long article</h1>'
    )
    parts, size, section = [head], len(head), 0
    while size < PAGE_BYTES:
        section += 1
        s = f"<h2>Section {section}</h2>"
        for p in range(6):
            s += (
                f"<p>Paragraph {p} of section {section}: rivers carve valleys by carrying sand and "
                f'gravel that grind the bed; see <a href="/science/{section}/{p}">the notes on '
                f"sediment</a> and <em>the primer</em> for more. Floodplains form where the "
                f"water spreads and drops fine silt, year after year, over the land.</p>"
            )
        s += "<ul><li>Outer banks erode.</li><li>Inner banks gain bars.</li></ul>"
        parts.append(s)
        size += len(s)
    parts.append("</article></main><aside>Trending</aside><footer>All rights reserved.</footer></body></html>")
    return "".join(parts)


def main():
    html = page()
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(f"page bytes {len(html.encode())}, Node Readability: {simple_json.have_node()}")
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        markdown = extract_content_from_html(html)
        samples.append((time.perf_counter() - started) * 1000)
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    node = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"extract_content_from_html: p50 {statistics.median(samples):.0f} ms over {rounds}; "
        f"{len(markdown)} characters; peak RSS: python {own:.0f} MiB, node {node:.0f} MiB"
    )


if __name__ == "__main__":
    main()
