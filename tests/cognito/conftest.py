"""Fixtures for tests/cognito: Amazon Cognito user pools in moto, the basket configured for them.

Run by scripts/cognito-tests.sh, which starts moto_server and sets
  MOTO_URL      http://127.0.0.1:PORT of moto_server
  MOTO_PYTHON   the python of moto's venv (boto3, joserfc): tests/cognito/cognito_pool.py runs there
  BASKET_BIN    the basket binary
  COGNITO_LOGS  a folder for each basket's stdout/stderr
The tests themselves run in the clients' venv (pytest, the Python mcp client).
"""

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid

import pytest

HERE = pathlib.Path(__file__).parent
VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def moto(*args, stdin=None):
    """tests/cognito/cognito_pool.py in moto's venv; its JSON answer."""
    done = subprocess.run([os.environ["MOTO_PYTHON"], str(HERE / "cognito_pool.py"), *args],
                          input=stdin, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"cognito_pool.py {args[0]} failed:\n{done.stderr}")
    return json.loads(done.stdout)


class Basket:
    """One basket process on loopback; `url` is its MCP endpoint, also its MCP_AUTH_AUDIENCE."""

    def __init__(self, name: str, port: int):
        self.name, self.port = name, port
        self.origin = f"http://127.0.0.1:{port}"
        self.url = f"{self.origin}/mcp"
        self.log = pathlib.Path(os.environ["COGNITO_LOGS"]) / f"basket-{name}.log"
        self.proc = None

    def scope(self, name: str) -> str:
        """The full Cognito scope name: `<resource server identifier>/<scope>`."""
        return f"{self.url}/{name}"

    def start(self, **env):
        # Only the MCP_ variables given here: an inherited one (scripts/test.sh exports MCP_WORK)
        # would be an unknown MCP_ variable to the server.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("MCP_")}
        env = dict(inherited, MCP_BIND=f"127.0.0.1:{self.port}", MCP_LOG="warn", **env)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen([os.environ["BASKET_BIN"]], env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"{self.origin}/healthz", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"basket {self.name} did not start:\n{self.log.read_text()[-3000:]}")
                time.sleep(0.05)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


class Answer:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    @property
    def challenge(self) -> str:
        return self.headers.get("WWW-Authenticate", "")

    def param(self, name: str) -> str:
        """A parameter of the WWW-Authenticate challenge (our values never contain a quote)."""
        marker = f'{name}="'
        start = self.challenge.find(marker)
        if start < 0:
            return ""
        start += len(marker)
        return self.challenge[start:self.challenge.index('"', start)]

    def json(self):
        text = self.body.decode()
        if text.lstrip().startswith("{"):
            return json.loads(text)
        # An SSE answer: the last data line carries the JSON-RPC response.
        data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        return json.loads(data[-1])


def rpc(url: str, token: str | None, method: str, params: dict | None = None, name: str | None = None) -> Answer:
    """One stateless MCP 2026-07-28 POST (README's curl example), standard library only."""
    params = dict(params or {}, _meta=META)
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name:
        headers["Mcp-Name"] = name
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, headers)
    try:
        with urllib.request.urlopen(request, timeout=20) as r:
            return Answer(r.status, r.headers, r.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read())


def call_tool(url, token, tool, arguments=None) -> Answer:
    return rpc(url, token, "tools/call", {"name": tool, "arguments": arguments or {}}, name=tool)


def get(url: str) -> Answer:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return Answer(r.status, r.headers, r.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.headers, error.read())


def access_token_claims(pool: dict, client_id: str, scopes: list[str], *, user: dict | None = None,
                        expires_in: int = 3600, issued_ago: int = 0) -> dict:
    """An access token's claims as Amazon Cognito writes them. Sources: AWS's "Understanding
    the access token" page (its sample: sub, token_use, scope, auth_time, iss, exp, iat,
    origin_jti, jti, client_id, username; cognito:groups and device_key only when the user has
    groups / a remembered device), and decoded tokens of Cognito's /oauth2/token published in
    public repositories, which add version 2 and, for a user, event_id:
      client_credentials (no user): sub = the app client id, no username, no origin_jti;
      a user's token (authorization code grant): sub = the user's sub, username, origin_jti,
        event_id.
    Both: token_use "access", scope = space-separated `<resource server identifier>/<scope>`,
    auth_time, iss = the pool, exp, iat, jti, version 2, client_id. No aud: Cognito access
    tokens have none. The header is {"kid", "alg": "RS256"} (cognito_pool.py sign)."""
    now = int(time.time()) - issued_ago
    claims = {
        "sub": user["sub"] if user else client_id,
        "token_use": "access",
        "scope": " ".join(scopes),
        "auth_time": now,
        "iss": pool["issuer"],
        "exp": now + expires_in,
        "iat": now,
        "version": 2,
        "jti": str(uuid.uuid4()),
        "client_id": client_id,
    }
    if user:
        claims.update(origin_jti=str(uuid.uuid4()), event_id=str(uuid.uuid4()), username=user["username"])
    return claims


def sign(*claim_sets: dict) -> list[str]:
    """Signed with moto's own key (kid "dummy"), the key moto's JWKS serves for every pool."""
    return moto("sign", stdin=json.dumps(claim_sets))


@pytest.fixture(scope="session")
def baskets():
    """The baskets' ports, picked first: each one's URL is a resource server's identifier."""
    return {"main": Basket("main", free_port()), "clients": Basket("clients", free_port())}


@pytest.fixture(scope="session")
def cognito(baskets):
    """Two user pools in moto (see cognito_pool.py); pool["user"] holds moto's tokens for alice."""
    return moto("setup", os.environ["MOTO_URL"], baskets["main"].url, baskets["clients"].url)


def auth_env(pool: dict, basket: Basket) -> dict:
    return {
        "MCP_AUTH_ISSUER": pool["issuer"],
        "MCP_AUTH_JWKS_URL": pool["jwks_url"],
        "MCP_AUTH_AUDIENCE": basket.url,
    }


@pytest.fixture(scope="session")
def main_basket(baskets, cognito):
    """The basket for the pool "mcp-basket": checkout needs basket:write, every other tool
    basket:read, both by their full Cognito names."""
    basket = baskets["main"]
    basket.start(
        **auth_env(cognito["pool"], basket),
        MCP_AUTH_TOOL_SCOPES=f"checkout={basket.scope('basket:write')},*={basket.scope('basket:read')}",
    )
    yield basket
    basket.stop()


@pytest.fixture(scope="session")
def clients_basket(baskets, cognito):
    """The basket that accepts only the app clients mcp-agent and mcp-web (MCP_AUTH_CLIENT_IDS),
    with scopes_supported given by MCP_AUTH_SCOPES_SUPPORTED (no scope maps)."""
    basket = baskets["clients"]
    ids = cognito["pool"]["clients"]
    basket.start(
        **auth_env(cognito["pool"], basket),
        MCP_AUTH_CLIENT_IDS=f"{ids['mcp-agent']},{ids['mcp-web']}",
        MCP_AUTH_SCOPES_SUPPORTED=f"{basket.scope('basket:read')} {basket.scope('basket:write')}",
    )
    yield basket
    basket.stop()


@contextlib.contextmanager
def started(basket: Basket, **env):
    try:
        yield basket.start(**env)
    finally:
        basket.stop()


@pytest.fixture
def anyio_backend():
    return "asyncio"
