"""Python `mcp` 2.3.0 against the basket with auth on: a real issuer on
loopback (P-256 key, JWKS over HTTP), tokens signed by PyJWT."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import basket, free_port

pytestmark = pytest.mark.anyio

AUDIENCE = "https://basket.test/mcp"


@pytest.fixture(scope="module")
def issuer():
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    jwk["kid"] = "py-1"
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            docs = {
                "/.well-known/oauth-authorization-server": {"issuer": url, "jwks_uri": f"{url}/jwks"},
                "/jwks": {"keys": [jwk]},
            }
            body = json.dumps(docs.get(self.path, {})).encode()
            self.send_response(200 if self.path in docs else 404)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def token(sub: str, scope: str = "basket:read basket:write") -> str:
        now = int(time.time())
        claims = {"iss": url, "aud": AUDIENCE, "sub": sub, "scope": scope, "exp": now + 300, "iat": now}
        return jwt.encode(claims, key, algorithm="ES256", headers={"kid": "py-1"})

    yield url, token
    server.shutdown()


@pytest.fixture(scope="module")
def secured_basket(issuer):
    url, _ = issuer
    with basket(
        MCP_AUTH_ISSUER=url,
        MCP_AUTH_AUDIENCE=AUDIENCE,
        MCP_AUTH_TOOL_SCOPES="checkout=basket:write,*=basket:read",
    ) as mcp_url:
        yield mcp_url


def _client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), mode="auto")


async def test_a_bearer_token_runs_the_basket_flow(secured_basket, issuer):
    _, token = issuer
    async with _client(secured_basket, token("alice")) as client:
        assert client.protocol_version == "2026-07-28"
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"create_basket", "checkout"} <= names
        created = await client.call_tool("create_basket", {})
        basket_id = created.structured_content["basket_id"]
        added = await client.call_tool("add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 2})
        assert not added.is_error
        viewed = await client.call_tool("view_basket", {"basket_id": basket_id})
        assert viewed.structured_content["items"] == [{"sku": "tea", "quantity": 2}]
        done = await client.call_tool("checkout", {"basket_id": basket_id})
        assert not done.is_error


async def test_read_only_tokens_do_not_see_checkout(secured_basket, issuer):
    _, token = issuer
    async with _client(secured_basket, token("carol", "basket:read")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "checkout" not in names and "create_basket" in names


async def test_no_token_gets_401_and_the_metadata_url(secured_basket):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}}
    async with httpx2.AsyncClient() as http:
        r = await http.post(secured_basket, json=body, headers={
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list",
            "Accept": "application/json, text/event-stream"})
        assert r.status_code == 401
        challenge = r.headers["www-authenticate"]
        assert 'resource_metadata="https://basket.test/.well-known/oauth-protected-resource/mcp"' in challenge
        meta = await http.get(secured_basket.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"))
        assert meta.json()["resource"] == AUDIENCE
    with pytest.raises(Exception):
        async with Client(secured_basket, mode="2026-07-28") as client:
            await client.list_tools()
