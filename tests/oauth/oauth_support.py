"""What the OAuth tests share: the basket on a free loopback port with auth on, the
authorization server started by scripts/oauth-tests.sh (oidc-provider, `OAUTH_ISSUER`), a
scripted user agent that signs in and consents through its devInteractions forms, and raw
MCP requests for the answers a client library would turn into exceptions (401, 403, 503)."""

import base64
import contextlib
import html
import json
import os
import re
import secrets
import socket
import subprocess
import time
import urllib.request
from hashlib import sha256
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import httpx2

PROTOCOL = "2026-07-28"
# Where the AS sends the browser back. Nothing listens there: the user agent stops at the
# redirect and hands its query to the client, as a loopback redirect listener would.
REDIRECT_URI = "http://127.0.0.1:8976/callback"
TOOL_SCOPES = "checkout=basket:write,*=basket:read"
SCOPES = "basket:read basket:write"


def issuer() -> str:
    return os.environ["OAUTH_ISSUER"]


def metadata() -> dict:
    return httpx2.get(f"{issuer()}/.well-known/oauth-authorization-server", timeout=5).json()


def events() -> list[dict]:
    """Every event the AS recorded (registrations, authorizations, token grants, …)."""
    return httpx2.get(f"{issuer()}/_test/events", timeout=5).json()


class Events:
    """The AS events after this point: `Events()` marks, `.new(kind)` lists what came since."""

    def __init__(self):
        self.mark = len(events())

    def new(self, kind: str | None = None, **match) -> list[dict]:
        found = events()[self.mark :]
        return [
            e for e in found
            if (kind is None or e["event"] == kind) and all(e.get(k) == v for k, v in match.items())
        ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def basket(binary: str | None = None, port: int | None = None, **env_overrides):
    """Runs the basket (or `binary`, another server) with auth on against the AS and
    `env_overrides`, with a clean environment, on `port` or a free one; its audience is the URL
    it serves (RFC 8707: the `resource` the clients will ask for). Yields that URL; the server
    log is in $OAUTH_LOGS."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "MCP_BIND": f"127.0.0.1:{port}",
        "MCP_LOG": "warn",
        "MCP_AUTH_ISSUER": issuer(),
        "MCP_AUTH_AUDIENCE": url,
        "MCP_AUTH_TOOL_SCOPES": TOOL_SCOPES,
        "MCP_AUTH_SCOPES_SUPPORTED": SCOPES,
        **env_overrides,
    }
    # An override of None removes the variable (the built-in authorization server's tests run
    # without MCP_AUTH_ISSUER).
    env = {k: v for k, v in env.items() if v is not None}
    logs = Path(os.environ.get("OAUTH_LOGS", "/tmp"))
    logs.mkdir(parents=True, exist_ok=True)
    log = open(logs / f"basket-{port}.log", "wb")
    proc = subprocess.Popen([binary or os.environ["BASKET_BIN"]], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    raise RuntimeError(
                        f"the basket did not start: {(logs / f'basket-{port}.log').read_text()[-3000:]}"
                    )
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@contextlib.contextmanager
def upstream():
    """oidc-provider with registration off (its static clients only, among them `mcp-facade`,
    the built-in authorization server's client there), on a free port, as the identity
    providers behind the built-in authorization server behave: yields its issuer. Its log is
    $OAUTH_LOGS/upstream.out."""
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    logs = Path(os.environ.get("OAUTH_LOGS", "/tmp"))
    logs.mkdir(parents=True, exist_ok=True)
    out = open(logs / "upstream.out", "wb")
    proc = subprocess.Popen(
        [os.environ["OAUTH_NODE"], "provider.mjs", str(port)],
        cwd=os.environ["OAUTH_NODE_DIR"],
        env={"PATH": os.environ["PATH"], "HOME": str(logs), "OAUTH_NO_REGISTRATION": "1"},
        stdout=out, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((logs / "upstream.out").read_text()[-2000:])
            time.sleep(0.1)
        yield issuer
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        out.close()


# --- The user agent -------------------------------------------------------------------

_FORM = re.compile(r"<form[^>]*action=\"([^\"]+)\"[^>]*>(.*?)</form>", re.S)
_INPUT = re.compile(r"<input([^>]*)>")
_BUTTON = re.compile(r"<button([^>]*)>")
_ATTR = re.compile(r"(\w+)=\"([^\"]*)\"")


def sign_in(authorization_url: str, login: str = "alice", redirect_uri: str = REDIRECT_URI,
            deliver: bool = False, password: str = "any password", verify=True) -> dict[str, str]:
    """Follows an authorization URL as a browser would: the AS's login form (oidc-provider's
    `login`, where any login is the subject, or Cognito's `username`, with `password`), its
    consent form, redirects; returns the query the AS redirected back with (`code`, `state`,
    `iss`, or `error`). Cookies are kept, as a browser keeps them. With `deliver`, the browser
    also loads that last redirect, as sent, for a client listening at `redirect_uri` (which
    must answer 200). `verify`: the CA file https pages are checked with."""
    with httpx2.Client(follow_redirects=False, timeout=10, verify=verify) as browser:
        response = browser.get(authorization_url)
        for _ in range(20):
            if response.status_code in (301, 302, 303, 307, 308):
                location = urljoin(str(response.url), response.headers["location"])
                if location.startswith(redirect_uri):
                    if deliver:
                        delivered = browser.get(location)
                        assert delivered.status_code == 200, (delivered.status_code, delivered.text[:500])
                    return {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
                response = browser.get(location)
                continue
            form = _FORM.search(response.text) if response.status_code == 200 else None
            if form is None:
                raise AssertionError(f"the AS answered {response.status_code}: {response.text[:2000]}")
            fields = {}
            for attrs in _INPUT.findall(form.group(2)):
                a = dict(_ATTR.findall(attrs))
                if "name" in a:
                    fields[a["name"]] = html.unescape(a.get("value", ""))
            # A browser clicking the form's first named submit button sends its name and value
            # (the built-in authorization server's consent page: approve, then deny).
            for attrs in _BUTTON.findall(form.group(2)):
                a = dict(_ATTR.findall(attrs))
                if "name" in a:
                    fields[a["name"]] = html.unescape(a.get("value", ""))
                    break
            if "login" in fields:
                fields.update(login=login, password=password)
            elif "username" in fields:
                fields.update(username=login, password=password)
            action = urljoin(str(response.url), html.unescape(form.group(1)))
            response = browser.post(action, data=fields)
        raise AssertionError("the authorization did not come back to the redirect URI")


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def authorize(client_id: str, resource: str, scope: str = SCOPES, login: str = "alice") -> dict:
    """The authorization-code grant with PKCE for a statically registered public client
    (`jwt-app`, `opaque-app`), scripted: returns the token response."""
    meta = metadata()
    verifier, challenge = pkce()
    state = secrets.token_urlsafe(16)
    query = urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT_URI,
        "scope": scope, "resource": resource, "state": state,
        "code_challenge": challenge, "code_challenge_method": "S256",
    })
    back = sign_in(f"{meta['authorization_endpoint']}?{query}", login)
    assert back.get("state") == state and "code" in back, back
    r = httpx2.post(meta["token_endpoint"], data={
        "grant_type": "authorization_code", "code": back["code"], "redirect_uri": REDIRECT_URI,
        "client_id": client_id, "code_verifier": verifier, "resource": resource,
    }, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def client_credentials(client_id: str, resource: str, scope: str = SCOPES) -> dict:
    """A client_credentials token for a statically registered machine client (its secret is
    `<client_id>-secret`, client_secret_basic)."""
    r = httpx2.post(
        metadata()["token_endpoint"],
        data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
        auth=(client_id, f"{client_id}-secret"), timeout=10,
    )
    assert r.status_code == 200, r.text
    return r.json()


def introspect(token: str) -> dict:
    """What the AS itself says of a token, asked as the basket's client `mcp-server`."""
    r = httpx2.post(metadata()["introspection_endpoint"], data={"token": token},
                    auth=("mcp-server", "mcp-server-secret"), timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def revoke(token: str, client_id: str, secret: str | None = None) -> None:
    data = {"token": token, "token_type_hint": "access_token"}
    if secret is None:
        data["client_id"] = client_id
    r = httpx2.post(metadata()["revocation_endpoint"], data=data,
                    auth=(client_id, secret) if secret else None, timeout=10)
    assert r.status_code == 200, r.text


def jws_parts(token: str) -> tuple[dict, dict]:
    """The header and claims of a JWS, unverified (the server verifies; the tests look)."""
    def part(p: str) -> dict:
        return json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)))
    header, claims, _ = token.split(".")
    return part(header), part(claims)


def is_jws(token: str) -> bool:
    return token.count(".") == 2


# --- Raw MCP over HTTP ----------------------------------------------------------------

def rpc(method: str, params: dict | None = None) -> dict:
    meta = {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**(params or {}), "_meta": meta}}


def call(url: str, token: str | None, tool: str, arguments: dict | None = None) -> httpx2.Response:
    """One `tools/call` as the 2026-07-28 transport sends it, with `token` as the bearer."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = rpc("tools/call", {"name": tool, "arguments": arguments or {}})
    return httpx2.post(url, json=body, headers=headers, timeout=15)


def result(response: httpx2.Response) -> dict:
    """The JSON-RPC result of a 200 answer (JSON or a one-event SSE stream)."""
    assert response.status_code == 200, (response.status_code, dict(response.headers), response.text[:500])
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    message = json.loads(text)
    assert "result" in message, message
    return message["result"]


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The parameters of a `WWW-Authenticate: Bearer …` challenge."""
    value = response.headers.get("www-authenticate", "")
    assert value.lower().startswith("bearer "), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


class MemoryStorage:
    """The Python client's token storage (`mcp.client.auth.TokenStorage`), in memory."""

    def __init__(self):
        self.tokens = None
        self.client_info = None
        self.saved = []  # every token response stored, in order

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info
