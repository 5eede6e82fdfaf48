"""The MCP Python SDK's OAuth client (mcp.client.auth.OAuthClientProvider) against toolport's
built-in authorization server, driven by tests/it/oauth_builtin.rs.

    python sdk_client.py MCP_URL FILE

The flow is the SDK's own: the 401 from /mcp, protected-resource and authorization-server
discovery, dynamic client registration, PKCE, the authorization request. Its redirect handler
plays the operator's browser: it fetches the consent page, asks the test for the secret (a line
`{"need": "secret"}` on stdout; the test answers with the one-time code toolport printed on its
stderr, one line on stdin), submits the form and reads the redirect toolport answers with
(code, state, and the RFC 9207 iss, which must be the issuer). Then it calls read_file, waits
until the access token has expired, and calls read_file again: the SDK refreshes the token.
Each step is a JSON line on stdout; any failure is an exception (exit status 1).
"""

import asyncio
import html.parser
import json
import sys
import time
from urllib.parse import parse_qs, urljoin, urlparse

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT_URI = "http://127.0.0.1:9/callback"
# Every step is bounded: the test has its own timeout too.
STEP_TIMEOUT = 30


def say(**fields):
    print(json.dumps(fields), flush=True)


class Memory:
    """Token storage in memory (the SDK's protocol)."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info: OAuthClientInformationFull):
        self.client = info


class Form(html.parser.HTMLParser):
    """The consent page's form: its action and hidden fields."""

    def __init__(self):
        super().__init__()
        self.action = None
        self.fields = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs.get("action")
        elif tag == "input" and attrs.get("type") == "hidden":
            self.fields[attrs["name"]] = attrs.get("value", "")


async def main(mcp_url: str, path: str):
    issuer = "{0.scheme}://{0.netloc}".format(urlparse(mcp_url))
    callback = {}

    async def redirect_handler(authorization_url: str):
        async with httpx.AsyncClient(timeout=STEP_TIMEOUT) as http:
            page = await http.get(authorization_url)
            assert page.status_code == 200, (page.status_code, page.text)
            assert page.headers["x-frame-options"] == "DENY"
            assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
            form = Form()
            form.feed(page.text)
            say(need="secret", page=page.text)
            secret = (await asyncio.to_thread(sys.stdin.readline)).strip()
            answer = await http.post(
                urljoin(authorization_url, form.action),
                data={**form.fields, "secret": secret, "decision": "approve"},
            )
            assert answer.status_code == 303, (answer.status_code, answer.text)
            location = answer.headers["location"]
            assert location.startswith(REDIRECT_URI + "?"), location
            query = parse_qs(urlparse(location).query)
            assert query["iss"] == [issuer], (query["iss"], issuer)
            callback["code"] = query["code"][0]
            callback["state"] = query.get("state", [None])[0]
            say(approved=True)

    async def callback_handler():
        return callback["code"], callback["state"]

    storage = Memory()
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="MCP Python SDK (toolport test)",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
        timeout=STEP_TIMEOUT,
    )
    async with httpx.AsyncClient(auth=provider, timeout=STEP_TIMEOUT) as http:
        async with streamable_http_client(mcp_url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await asyncio.wait_for(session.initialize(), STEP_TIMEOUT)
                tools = await asyncio.wait_for(session.list_tools(), STEP_TIMEOUT)
                first = await asyncio.wait_for(
                    session.call_tool("read_file", {"path": path}), STEP_TIMEOUT
                )
                say(
                    tools=sorted(t.name for t in tools.tools),
                    read=first.content[0].text,
                    error=first.isError,
                    scope=storage.tokens.scope,
                )
                before = (storage.tokens.access_token, storage.tokens.refresh_token)
                # Past the access token's lifetime (the test sets a few seconds): waiting for
                # time itself, not for another process.
                await asyncio.sleep(storage.tokens.expires_in + 1)
                second = await asyncio.wait_for(
                    session.call_tool("read_file", {"path": path}), STEP_TIMEOUT
                )
                after = (storage.tokens.access_token, storage.tokens.refresh_token)
                say(
                    read_after_expiry=second.content[0].text,
                    error=second.isError,
                    access_token_changed=before[0] != after[0],
                    refresh_token_rotated=before[1] != after[1],
                )
    say(done=True, at=time.time())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
