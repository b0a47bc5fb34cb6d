"""Opaque access tokens checked by RFC 7662 introspection at the real AS (oidc-provider),
through a forwarding proxy that counts the introspection requests and can be switched down
(introspection_proxy.py). The basket introspects as the confidential client `mcp-server`
(client_secret_basic):

    MCP_AUTH_INTROSPECTION_URL            the proxy (default: the AS metadata's introspection_endpoint)
    MCP_AUTH_INTROSPECTION_CLIENT_ID      mcp-server
    MCP_AUTH_INTROSPECTION_CLIENT_SECRET  mcp-server-secret
    MCP_AUTH_INTROSPECTION_CACHE_SECS     how long an answer is reused (default 60)

Opaque tokens come from the AS's clients registered for them: `opaque-app` (authorization
code, a user), `opaque-machine-a`/`-b` (client_credentials, no `sub`); JWTs from `jwt-app`."""

import base64
import secrets
import time
from urllib.parse import parse_qs

import pytest

import oauth_support as s
from introspection_proxy import IntrospectionProxy

SERVER_CLIENT = ("mcp-server", "mcp-server-secret")


@pytest.fixture(scope="module")
def proxy():
    meta = s.metadata()
    p = IntrospectionProxy(s.issuer(), meta["introspection_endpoint"].removeprefix(s.issuer()))
    yield p
    p.stop()


def introspecting(proxy, **env):
    """A basket that introspects through the proxy (or as `env` says)."""
    settings = {
        "MCP_AUTH_INTROSPECTION_URL": proxy.introspection_url,
        "MCP_AUTH_INTROSPECTION_CLIENT_ID": SERVER_CLIENT[0],
        "MCP_AUTH_INTROSPECTION_CLIENT_SECRET": SERVER_CLIENT[1],
        **env,
    }
    return s.basket(**{k: v for k, v in settings.items() if v is not None})


@pytest.fixture(scope="module")
def server(proxy):
    with introspecting(proxy) as url:
        yield url


def ok(response) -> dict:
    r = s.result(response)
    assert not r.get("isError"), r
    return r["structuredContent"]


def refused_401(response) -> None:
    assert response.status_code == 401, (response.status_code, response.text[:500])
    assert s.challenge(response).get("error") == "invalid_token", response.headers.get("www-authenticate")


def opaque_user_token(server: str, login: str) -> str:
    token = s.authorize("opaque-app", server, login=login)["access_token"]
    assert not s.is_jws(token), "the AS issued a JWT where an opaque token was asked for"
    return token


def test_an_opaque_token_is_introspected_and_the_call_succeeds(server, proxy):
    token = opaque_user_token(server, "olivia")
    said = s.introspect(token)
    assert said["active"] is True and said["aud"] == server and said["sub"] == "olivia", said
    before = proxy.count
    created = ok(s.call(server, token, "create_basket"))
    assert isinstance(created["basket_id"], str)
    assert proxy.count - before == 1, f"{proxy.count - before} introspection requests"
    # The basket authenticated as its own client, client_secret_basic, and sent the token.
    headers, body = proxy.bodies[-1]
    auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
    assert auth == "Basic " + base64.b64encode(b"mcp-server:mcp-server-secret").decode(), auth
    assert parse_qs(body.decode()).get("token") == [token]


def test_calls_within_the_window_make_one_introspection_per_token(server, proxy):
    first = opaque_user_token(server, "paul")
    before = proxy.count
    basket_id = ok(s.call(server, first, "create_basket"))["basket_id"]
    for _ in range(4):
        assert ok(s.call(server, first, "view_basket", {"basket_id": basket_id}))["basket_id"] == basket_id
    assert proxy.count - before == 1, f"5 calls made {proxy.count - before} introspection requests"
    second = opaque_user_token(server, "paul")
    assert ok(s.call(server, second, "view_basket", {"basket_id": basket_id}))["basket_id"] == basket_id
    assert proxy.count - before == 2, f"a second token made {proxy.count - before - 1} more"


def test_concurrent_first_calls_with_one_token_share_one_introspection(server, proxy):
    from concurrent.futures import ThreadPoolExecutor

    token = opaque_user_token(server, "quinn")
    before = proxy.count
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: s.call(server, token, "create_basket"), range(8)))
    for answer in answers:
        assert isinstance(ok(answer)["basket_id"], str)
    assert proxy.count - before == 1, f"8 concurrent first calls made {proxy.count - before} introspection requests"


def test_a_token_the_as_does_not_know_is_401_invalid_token(server, proxy):
    unknown = secrets.token_urlsafe(32)
    assert s.introspect(unknown) == {"active": False}
    before = proxy.count
    refused_401(s.call(server, unknown, "create_basket"))
    assert proxy.count - before == 1, "the AS was not asked"


def test_a_revoked_token_is_401_invalid_token(server, proxy):
    token = opaque_user_token(server, "quinn")
    s.revoke(token, "opaque-app")
    assert s.introspect(token)["active"] is False
    refused_401(s.call(server, token, "create_basket"))


def test_an_active_token_for_another_resource_is_401_invalid_token(server, proxy):
    other = server.removesuffix("/mcp") + "/other-mcp"
    token = s.client_credentials("opaque-machine-a", other)["access_token"]
    said = s.introspect(token)
    assert said["active"] is True and said["aud"] == other, said
    before = proxy.count
    refused_401(s.call(server, token, "create_basket"))
    assert proxy.count - before == 1


def test_a_revoked_token_works_until_its_answer_expires(proxy):
    with introspecting(proxy, MCP_AUTH_INTROSPECTION_CACHE_SECS="2") as url:
        token = opaque_user_token(url, "rita")
        before = proxy.count
        t0 = time.monotonic()
        basket_id = ok(s.call(url, token, "create_basket"))["basket_id"]
        s.revoke(token, "opaque-app")
        assert s.introspect(token)["active"] is False, "the AS still calls it active"
        # Inside the window the kept answer is used: still accepted, no new introspection.
        assert ok(s.call(url, token, "view_basket", {"basket_id": basket_id}))["basket_id"] == basket_id
        assert time.monotonic() - t0 < 1.8, "too slow to be inside the window"
        assert proxy.count - before == 1
        time.sleep(max(0.0, t0 + 2.5 - time.monotonic()))
        refused_401(s.call(url, token, "view_basket", {"basket_id": basket_id}))
        assert proxy.count - before == 2, "the AS was not asked again after the window"


@pytest.mark.parametrize("outage", ["refuse", "error"])
def test_an_introspection_outage_is_503_with_retry_after(server, proxy, outage):
    token = opaque_user_token(server, f"sam-{outage}")  # never seen by the basket: uncached
    try:
        getattr(proxy, outage)()
        down = s.call(server, token, "create_basket")
        assert down.status_code == 503, (down.status_code, down.text[:500])
        assert down.headers.get("retry-after", "").strip().isdigit(), dict(down.headers)
    finally:
        proxy.up()
    # The outage was not remembered as an answer: once the AS can be asked, the token works.
    assert isinstance(ok(s.call(server, token, "create_basket"))["basket_id"], str)


def test_a_jwt_is_verified_locally_without_introspection(server, proxy):
    token = s.authorize("jwt-app", server, login="tess")["access_token"]
    header, claims = s.jws_parts(token)
    assert header["typ"] == "at+jwt" and claims["aud"] == server
    before = proxy.count
    basket_id = ok(s.call(server, token, "create_basket"))["basket_id"]
    ok(s.call(server, token, "view_basket", {"basket_id": basket_id}))
    assert proxy.count == before, f"{proxy.count - before} introspection requests for a JWT"


def test_client_credentials_tokens_are_the_clients_own(server, proxy):
    a1 = s.client_credentials("opaque-machine-a", server)["access_token"]
    said = s.introspect(a1)
    assert said["active"] is True and "sub" not in said and said["client_id"] == "opaque-machine-a", said
    basket_id = ok(s.call(server, a1, "create_basket"))["basket_id"]
    # Another token of the same client is the same owner (client:opaque-machine-a) …
    a2 = s.client_credentials("opaque-machine-a", server)["access_token"]
    assert ok(s.call(server, a2, "view_basket", {"basket_id": basket_id}))["basket_id"] == basket_id
    # … another client's is not: it gets what a missing basket gets.
    b = s.client_credentials("opaque-machine-b", server)["access_token"]
    theirs = s.result(s.call(server, b, "view_basket", {"basket_id": basket_id}))
    missing = s.result(s.call(server, b, "view_basket", {"basket_id": "00000000-0000-4000-8000-000000000000"}))
    assert theirs.get("isError") and missing.get("isError"), (theirs, missing)
    assert theirs["content"] == missing["content"], (theirs, missing)


def test_without_an_introspection_url_the_metadata_endpoint_is_used(proxy):
    with introspecting(proxy, MCP_AUTH_INTROSPECTION_URL=None) as url:
        token = opaque_user_token(url, "uma")
        before = proxy.count
        assert isinstance(ok(s.call(url, token, "create_basket"))["basket_id"], str)
        assert proxy.count == before, "the proxy was asked, not the AS"


def test_start_up_makes_no_introspection_request(proxy):
    before = proxy.count
    with introspecting(proxy) as url:
        time.sleep(0.5)  # what start-up fetches meanwhile (the JWKS) has been fetched
        assert proxy.count == before, "start-up asked the introspection endpoint"
        token = opaque_user_token(url, "vera")
        assert isinstance(ok(s.call(url, token, "create_basket"))["basket_id"], str)
        assert proxy.count == before + 1
