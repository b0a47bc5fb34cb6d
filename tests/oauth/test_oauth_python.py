"""The Python `mcp` 2.3.0 client's own OAuth (`mcp.client.auth.OAuthClientProvider`, an
httpx2 Auth) against the basket with auth on and a real authorization server (oidc-provider):
discovery from the 401, dynamic registration, PKCE authorization with `resource`, the token,
a second connection on the stored token, a refresh after expiry, and a scope step-up after a
403 `insufficient_scope`. The browser is scripted (oauth_support.sign_in)."""

import time

import anyio
import httpx2
import pytest
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

import oauth_support as s


class Browser:
    """The provider's redirect and callback handlers: the redirect is followed by the scripted
    user agent, the callback returns what the AS redirected back with."""

    def __init__(self, login: str):
        self.login = login
        self.authorization_urls = []
        self.back = None

    async def redirect(self, url: str) -> None:
        self.authorization_urls.append(url)
        self.back = await anyio.to_thread.run_sync(s.sign_in, url, self.login)

    async def callback(self) -> AuthorizationCodeResult:
        back, self.back = self.back, None
        assert back and "code" in back, f"the AS redirected back with {back}"
        return AuthorizationCodeResult(code=back["code"], state=back.get("state"), iss=back.get("iss"))


class Connection:
    """One client connection: its own httpx2 client (every request logged) and provider, on a
    storage that may be shared with an earlier connection."""

    def __init__(self, url: str, storage: s.MemoryStorage, browser: Browser, name: str = "mcp-lambda oauth tests"):
        self.requests = []  # (method, url, status, WWW-Authenticate)
        self.provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name=name,
                redirect_uris=[s.REDIRECT_URI],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
            ),
            storage=storage,
            redirect_handler=browser.redirect,
            callback_handler=browser.callback,
        )
        self.http = httpx2.AsyncClient(auth=self.provider, event_hooks={"response": [self._log]}, timeout=30)
        self.client = Client(streamable_http_client(url, http_client=self.http), mode="auto")

    async def _log(self, response: httpx2.Response) -> None:
        self.requests.append((response.request.method, str(response.request.url), response.status_code,
                              response.headers.get("www-authenticate")))

    async def __aenter__(self):
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc):
        await self.client.__aexit__(*exc)
        await self.http.aclose()

    def statuses(self, url: str) -> list[int]:
        return [status for method, u, status, _ in self.requests if u == url]


def structured(result):
    assert not result.is_error, result
    return result.structured_content


@pytest.fixture(scope="module")
def server():
    with s.basket() as url:
        yield url


@pytest.fixture(scope="module")
def first_connection(server):
    """Case 1 runs once; case 2 reuses its storage. Returns what case 1 observed."""
    storage, browser = s.MemoryStorage(), Browser("alice")
    seen = s.Events()

    async def run():
        async with Connection(server, storage, browser) as conn:
            created = structured(await conn.client.call_tool("create_basket", {}))
            return conn.requests, created

    requests, created = anyio.run(run)
    return {"storage": storage, "browser": browser, "events": seen, "requests": requests, "created": created}


def test_python_first_call_discovers_registers_authorizes_and_succeeds(server, first_connection):
    c = first_connection
    requests, storage, browser = c["requests"], c["storage"], c["browser"]
    origin = server.removesuffix("/mcp")
    # (a) the first tools/call was refused with the RFC 9728 pointer …
    mcp = [(st, wa) for m, u, st, wa in requests if u == server and m == "POST"]
    refused = [wa for st, wa in mcp if st == 401]
    assert refused, f"no 401 from the server: {requests}"
    assert f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in refused[0]
    # (b) … then the protected-resource document, the AS metadata, registration, token, and
    # the retried call, in that order
    urls = [(m, u.split("?")[0], st) for m, u, st, _ in requests]
    meta = s.metadata()
    want = [
        ("GET", f"{origin}/.well-known/oauth-protected-resource/mcp", 200),
        ("GET", f"{s.issuer()}/.well-known/oauth-authorization-server", 200),
        ("POST", meta["registration_endpoint"], 201),
        ("POST", meta["token_endpoint"], 200),
        ("POST", server, 200),
    ]
    at = urls.index(("POST", server, 401))
    assert [u for u in urls[at + 1 :] if u in want][: len(want)] == want, urls
    # (c) the AS saw one registration, one authorization with the resource and PKCE S256,
    # one authorization_code grant, all for the registered client
    client_id = storage.client_info.client_id
    events = c["events"]
    assert [e["client_id"] for e in events.new("registration")] == [client_id]
    auths = events.new("authorization", client_id=client_id)
    assert len(auths) == 1 and auths[0]["resource"] == server, auths
    assert "basket:read" in auths[0]["scope"].split()
    assert len(browser.authorization_urls) == 1
    asked = browser.authorization_urls[0]
    assert "code_challenge_method=S256" in asked and "code_challenge=" in asked
    assert [e["grant_type"] for e in events.new("token", client_id=client_id)] == ["authorization_code"]
    # (d) the token is an RFC 9068 JWT for this server, issued by the AS to alice
    header, claims = s.jws_parts(storage.tokens.access_token)
    assert header["typ"] == "at+jwt", header
    assert claims["aud"] == server and claims["iss"] == s.issuer() and claims["sub"] == "alice", claims
    assert claims["client_id"] == client_id and "basket:read" in claims["scope"].split()
    # (e) and the tool ran
    assert isinstance(c["created"]["basket_id"], str)


def test_python_second_connection_reuses_the_stored_token(server, first_connection):
    storage, browser = first_connection["storage"], first_connection["browser"]
    token_before = storage.tokens.access_token
    basket_id = first_connection["created"]["basket_id"]
    seen = s.Events()

    async def run():
        async with Connection(server, storage, browser) as conn:
            viewed = structured(await conn.client.call_tool("view_basket", {"basket_id": basket_id}))
            return conn, viewed

    conn, viewed = anyio.run(run)
    assert viewed["basket_id"] == basket_id, "the same caller sees the basket it made"
    assert 401 not in conn.statuses(server), conn.requests
    assert seen.new("registration") == [] and seen.new("authorization") == [] and seen.new("token") == []
    assert len(browser.authorization_urls) == 1, "no new authorization"
    assert storage.tokens.access_token == token_before
    assert all(s.metadata()["token_endpoint"] != u for _, u, _, _ in conn.requests)


def test_python_refreshes_an_expired_token():
    # The AS gives clients named short-ttl* 3-second access tokens; the server allows no leeway.
    # One connection: the provider knows when its token expires (it is not told after a
    # restart: a new provider on stored tokens sends the expired one, and on the 401
    # re-authorizes instead of refreshing).
    with s.basket(MCP_AUTH_LEEWAY_SECS="0") as url:
        storage, browser = s.MemoryStorage(), Browser("bob")
        seen = {}

        async def run():
            async with Connection(url, storage, browser, name="short-ttl python") as conn:
                basket_id = structured(await conn.client.call_tool("create_basket", {}))["basket_id"]
                old = storage.tokens
                _, claims = s.jws_parts(old.access_token)
                await anyio.sleep(max(0.0, claims["exp"] - time.time()) + 1.2)
                # The server now refuses the old token …
                stale = await anyio.to_thread.run_sync(
                    lambda: s.call(url, old.access_token, "view_basket", {"basket_id": basket_id}))
                seen["events"], seen["sent"] = s.Events(), len(conn.requests)
                viewed = structured(await conn.client.call_tool("view_basket", {"basket_id": basket_id}))
                return conn, old, stale, basket_id, viewed

        conn, old, stale, basket_id, viewed = anyio.run(run)
        assert old.refresh_token, "the AS issued a refresh token"
        assert old.expires_in is not None and old.expires_in <= 5, old
        assert stale.status_code == 401 and s.challenge(stale).get("error") == "invalid_token", stale.text
        # … and the client refreshed before sending: a refresh_token grant, no new authorization
        client_id = storage.client_info.client_id
        events = seen["events"]
        assert [e["grant_type"] for e in events.new("token", client_id=client_id)] == ["refresh_token"]
        assert events.new("authorization") == [] and len(browser.authorization_urls) == 1
        assert storage.tokens.access_token != old.access_token
        assert viewed["basket_id"] == basket_id, "the refreshed token is the same caller"
        after = [st for _, u, st, _ in conn.requests[seen["sent"] :] if u == url]
        assert 401 not in after, conn.requests


def test_python_steps_up_after_insufficient_scope():
    with s.basket() as url:
        storage, browser = s.MemoryStorage(), Browser("carol")

        async def read_only():
            async with Connection(url, storage, browser) as conn:
                basket_id = structured(await conn.client.call_tool("create_basket", {}))["basket_id"]
                structured(await conn.client.call_tool("add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 1}))
                return basket_id

        basket_id = anyio.run(read_only)
        # The first challenge named basket:read only (what create_basket needs), so that is
        # what the client asked for and got.
        granted = s.jws_parts(storage.tokens.access_token)[1]["scope"].split()
        assert "basket:read" in granted and "basket:write" not in granted, granted
        # (a) the read-only token on checkout: 403 insufficient_scope naming basket:write
        refused = s.call(url, storage.tokens.access_token, "checkout", {"basket_id": basket_id})
        assert refused.status_code == 403, (refused.status_code, refused.text)
        params = s.challenge(refused)
        assert params.get("error") == "insufficient_scope", params
        assert "basket:write" in params.get("scope", "").split(), params
        # (b) the client steps up by itself: it re-authorizes with the union of the scopes
        # (SEP-2350), without registering again, and the retried checkout succeeds
        seen = s.Events()

        async def step_up():
            async with Connection(url, storage, browser) as conn:
                return conn, structured(await conn.client.call_tool("checkout", {"basket_id": basket_id}))

        conn, done = anyio.run(step_up)
        assert done["basket_id"] == basket_id
        assert 403 in conn.statuses(url), conn.requests
        assert seen.new("registration") == []
        auths = seen.new("authorization", client_id=storage.client_info.client_id)
        assert len(auths) == 1 and {"basket:read", "basket:write"} <= set(auths[0]["scope"].split()), auths
        assert {"basket:read", "basket:write"} <= set(s.jws_parts(storage.tokens.access_token)[1]["scope"].split())
