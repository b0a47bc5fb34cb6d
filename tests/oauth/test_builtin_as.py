"""mcp-lambda's built-in authorization server (MCP_OAUTH_UPSTREAM_ISSUER), in front of a real
OpenID Provider (oidc-provider, started here with dynamic registration off and one static
confidential client for the façade, as Cognito, Entra and Google behave):

  - its RFC 8414 metadata and the protected-resource document naming it;
  - the Python `mcp` client's own OAuth, by dynamic registration, from the first 401 to a tool
    call, the browser scripted through the consent page and the upstream's login;
  - a person's handles are the same from two clients; warm calls never reach the upstream;
  - refresh rotation, reuse detection and revocation;
  - the attacks, each refused without a redirect to an unvalidated URI.
"""

import contextlib
import re
import secrets
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import anyio
import httpx2
import pytest

import oauth_support as s
from test_oauth_python import Browser, Connection, structured

REDIRECT = s.REDIRECT_URI


@pytest.fixture(scope="module")
def upstream():
    """oidc-provider with registration off, on a free port: yields its issuer."""
    with s.upstream() as issuer:
        yield issuer


def upstream_requests(issuer: str) -> int:
    return httpx2.get(f"{issuer}/_test/requests", timeout=5).json()["requests"]


def upstream_events(issuer: str) -> list[dict]:
    return httpx2.get(f"{issuer}/_test/events", timeout=5).json()


@contextlib.contextmanager
def facade_basket(upstream_issuer: str, **env):
    with s.basket(
        MCP_AUTH_ISSUER=None,
        MCP_OAUTH_UPSTREAM_ISSUER=upstream_issuer,
        MCP_OAUTH_UPSTREAM_CLIENT_ID="mcp-facade",
        MCP_OAUTH_UPSTREAM_CLIENT_SECRET="mcp-facade-secret",
        **env,
    ) as url:
        yield url


@pytest.fixture(scope="module")
def server(upstream):
    with facade_basket(upstream) as url:
        yield url


def origin(url: str) -> str:
    return url.removesuffix("/mcp")


def as_metadata(url: str) -> dict:
    return httpx2.get(f"{origin(url)}/.well-known/oauth-authorization-server", timeout=5).json()


def register(url: str, **metadata) -> dict:
    body = {"client_name": "raw test client", "redirect_uris": [REDIRECT], **metadata}
    r = httpx2.post(as_metadata(url)["registration_endpoint"], json=body, timeout=5)
    assert r.status_code == 201, r.text
    return r.json()


def authorization_url(url: str, client_id: str, challenge: str, **overrides) -> str:
    params = {
        "response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT,
        "scope": s.SCOPES, "resource": url, "state": "st-" + secrets.token_urlsafe(8),
        "code_challenge": challenge, "code_challenge_method": "S256", **overrides,
    }
    params = {k: v for k, v in params.items() if v is not None}
    return f"{as_metadata(url)['authorization_endpoint']}?{urlencode(params)}"


def exchange(url: str, client_id: str, code: str, verifier: str, **overrides) -> httpx2.Response:
    form = {
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
        "client_id": client_id, "code_verifier": verifier, "resource": url, **overrides,
    }
    return httpx2.post(as_metadata(url)["token_endpoint"], data=form, timeout=10)


def refresh(url: str, client_id: str, token: str) -> httpx2.Response:
    return httpx2.post(as_metadata(url)["token_endpoint"], data={
        "grant_type": "refresh_token", "refresh_token": token, "client_id": client_id, "resource": url,
    }, timeout=10)


def login(url: str, login_name: str = "carol", **register_overrides):
    """Registers a client and logs in through the consent page and the upstream: returns
    (client_id, code, verifier, the query the browser came back with)."""
    client = register(url, **register_overrides)
    verifier, challenge = s.pkce()
    back = s.sign_in(authorization_url(url, client["client_id"], challenge), login_name)
    assert "code" in back, back
    return client["client_id"], back["code"], verifier, back


def tokens(url: str, login_name: str = "carol") -> tuple[str, dict]:
    client_id, code, verifier, _ = login(url, login_name)
    r = exchange(url, client_id, code, verifier)
    assert r.status_code == 200, r.text
    return client_id, r.json()


def no_redirect(response: httpx2.Response):
    assert response.status_code in (400, 403), (response.status_code, response.text[:300])
    assert "location" not in response.headers, response.headers
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["x-frame-options"] == "DENY"


def redirected_error(response: httpx2.Response, error: str):
    assert response.status_code == 303, (response.status_code, response.text[:300])
    location = response.headers["location"]
    assert location.startswith(REDIRECT + "?"), location
    query = {k: v[0] for k, v in parse_qs(urlparse(location).query).items()}
    assert query["error"] == error, query
    assert "code" not in query
    return query


# --- Metadata -----------------------------------------------------------------------------


def test_metadata_advertises_what_mcp_clients_check(server):
    base = origin(server)
    meta = as_metadata(server)
    assert meta["issuer"] == base
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert "none" in meta["token_endpoint_auth_methods_supported"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    assert meta["response_types_supported"] == ["code"]
    assert set(meta["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert meta["registration_endpoint"] == f"{base}/oauth/register"
    assert meta["revocation_endpoint"] == f"{base}/oauth/revoke"
    assert set(meta["scopes_supported"]) == set(s.SCOPES.split())
    inserted = httpx2.get(f"{base}/.well-known/oauth-authorization-server/mcp", timeout=5).json()
    assert inserted == meta
    resource = httpx2.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=5).json()
    assert resource["authorization_servers"] == [base]
    assert resource["resource"] == server


# --- The Python client, by dynamic registration -------------------------------------------


@pytest.fixture(scope="module")
def alice(server, upstream):
    storage, browser = s.MemoryStorage(), Browser("alice")
    before = len(upstream_events(upstream))

    async def run():
        async with Connection(server, storage, browser) as conn:
            created = structured(await conn.client.call_tool("create_basket", {}))
            return conn.requests, created

    requests, created = anyio.run(run)
    return {"storage": storage, "browser": browser, "requests": requests, "created": created,
            "events": upstream_events(upstream)[before:]}


def test_python_client_registers_logs_in_upstream_and_calls_a_tool(server, alice):
    base = origin(server)
    requests, storage = alice["requests"], alice["storage"]
    statuses = [(m, u.split("?")[0], st) for m, u, st, _ in requests]
    assert ("POST", server, 401) in statuses, statuses
    assert ("POST", f"{base}/oauth/register", 201) in statuses, statuses
    assert ("POST", f"{base}/oauth/token", 200) in statuses, statuses
    assert statuses[-1] == ("POST", server, 200), statuses
    # The client registered here, and the person logged in upstream through the façade's
    # one static client.
    assert storage.client_info.client_id.startswith("mcp_")
    kinds = [(e["event"], e.get("client_id")) for e in alice["events"]]
    assert ("authorization", "mcp-facade") in kinds and ("token", "mcp-facade") in kinds, kinds
    assert not any(e["event"] == "registration" for e in alice["events"])
    # The authorization response carried RFC 9207 iss; the browser passed the consent page.
    assert len(alice["browser"].authorization_urls) == 1
    assert alice["browser"].authorization_urls[0].startswith(f"{base}/oauth/authorize?")
    # An RFC 9068 access token of this issuer for this resource, for alice.
    header, claims = s.jws_parts(storage.tokens.access_token)
    assert header["typ"] == "at+jwt" and header["alg"] == "ES256", header
    assert claims["iss"] == base and claims["aud"] == server and claims["sub"] == "alice", claims
    assert claims["client_id"] == storage.client_info.client_id
    assert storage.tokens.refresh_token
    assert isinstance(alice["created"]["basket_id"], str)


def test_a_person_has_the_same_handles_from_two_clients(server, alice):
    storage = s.MemoryStorage()

    async def run():
        async with Connection(server, storage, Browser("alice"), name="second client") as conn:
            return structured(await conn.client.call_tool("list_baskets", {}))

    listed = anyio.run(run)
    assert storage.client_info.client_id != alice["storage"].client_info.client_id
    assert alice["created"]["basket_id"] in [b["basket_id"] for b in listed["baskets"]], listed


def test_warm_authenticated_calls_never_reach_the_upstream(server, upstream, alice):
    token = alice["storage"].tokens.access_token
    s.result(s.call(server, token, "list_baskets"))
    before = upstream_requests(upstream)
    for _ in range(20):
        s.result(s.call(server, token, "list_baskets"))
    assert upstream_requests(upstream) == before


def test_another_person_sees_none_of_it(server, alice):
    _, answer = tokens(server, "mallory")
    listed = s.result(s.call(server, answer["access_token"], "list_baskets"))["structuredContent"]
    assert alice["created"]["basket_id"] not in [b["basket_id"] for b in listed["baskets"]]


# --- Tokens ---------------------------------------------------------------------------------


def test_token_answers_are_never_stored(server):
    client_id, code, verifier, back = login(server)
    assert back["iss"] == origin(server)
    r = exchange(server, client_id, code, verifier)
    assert r.status_code == 200
    assert r.headers["cache-control"] == "no-store"
    assert r.json()["token_type"] == "Bearer" and r.json()["expires_in"] > 0


def test_refresh_rotates_and_a_reused_token_revokes_the_grant(server):
    client_id, first = tokens(server)
    r1 = refresh(server, client_id, first["refresh_token"])
    assert r1.status_code == 200, r1.text
    second = r1.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert s.result(s.call(server, second["access_token"], "list_baskets"))
    r2 = refresh(server, client_id, second["refresh_token"])
    assert r2.status_code == 200, r2.text
    third = r2.json()
    # The first token is two rotations old: a reuse. The grant ends, its newest token too.
    reused = refresh(server, client_id, first["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant", reused.text
    after = refresh(server, client_id, third["refresh_token"])
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant", after.text


def test_a_lost_refresh_answer_may_be_asked_again(server):
    client_id, first = tokens(server)
    assert refresh(server, client_id, first["refresh_token"]).status_code == 200
    again = refresh(server, client_id, first["refresh_token"])
    assert again.status_code == 200, again.text


def test_refresh_by_another_client_is_refused(server):
    _, first = tokens(server)
    other = register(server)["client_id"]
    r = refresh(server, other, first["refresh_token"])
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_revocation_ends_the_grant(server):
    client_id, first = tokens(server)
    r = httpx2.post(as_metadata(server)["revocation_endpoint"],
                    data={"token": first["refresh_token"], "client_id": client_id}, timeout=5)
    assert r.status_code == 200
    after = refresh(server, client_id, first["refresh_token"])
    assert after.status_code == 400 and after.json()["error"] == "invalid_grant"


# --- Attacks, each refused without a redirect to an unvalidated URI ------------------------


def test_an_unregistered_redirect_uri_gets_an_error_page(server):
    client = register(server)
    _, challenge = s.pkce()
    r = httpx2.get(authorization_url(server, client["client_id"], challenge,
                                     redirect_uri="https://attacker.example/cb"), timeout=5)
    no_redirect(r)


def test_an_unknown_client_gets_an_error_page(server):
    _, challenge = s.pkce()
    no_redirect(httpx2.get(authorization_url(server, "mcp_unknown", challenge), timeout=5))


@pytest.mark.parametrize("overrides,error", [
    ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
    ({"code_challenge_method": "plain"}, "invalid_request"),
    ({"resource": "https://other.example.com/mcp"}, "invalid_target"),
    ({"resource": None}, "invalid_target"),
    ({"response_type": "token"}, "unsupported_response_type"),
    ({"scope": "admin"}, "invalid_scope"),
])
def test_a_bad_authorization_request_goes_back_with_an_error(server, overrides, error):
    client = register(server)
    _, challenge = s.pkce()
    r = httpx2.get(authorization_url(server, client["client_id"], challenge, **overrides), timeout=5)
    query = redirected_error(r, error)
    assert query["iss"] == origin(server)


def test_a_code_is_single_use_and_a_replay_revokes_what_it_gave(server):
    client_id, code, verifier, _ = login(server)
    first = exchange(server, client_id, code, verifier)
    assert first.status_code == 200
    again = exchange(server, client_id, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert "revoked" in again.json()["error_description"]
    # The first exchange's refresh token died with its grant (RFC 9700 §4.5).
    r = refresh(server, client_id, first.json()["refresh_token"])
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text


def test_a_crafted_loopback_redirect_uri_gets_an_error_page_not_a_5xx(server):
    client = register(server)
    _, challenge = s.pkce()
    for crafted in ["http://127.0.0.1:5/callback\n", "http://127.0.0.1:5/call\x01back",
                    "http://0x7f.1:8976/callback"]:
        r = httpx2.get(authorization_url(server, client["client_id"], challenge,
                                         redirect_uri=crafted, response_type=None), timeout=5)
        no_redirect(r)


def test_the_redirect_uri_may_be_left_out_when_the_client_registered_one(server):
    client = register(server)
    verifier, challenge = s.pkce()
    back = s.sign_in(authorization_url(server, client["client_id"], challenge, redirect_uri=None), "judy")
    assert "code" in back, back
    form = {"grant_type": "authorization_code", "code": back["code"], "client_id": client["client_id"],
            "code_verifier": verifier, "resource": server}
    r = httpx2.post(as_metadata(server)["token_endpoint"], data=form, timeout=10)
    assert r.status_code == 200, r.text


def test_browser_clients_may_ask_before_registering(server):
    r = httpx2.options(as_metadata(server)["registration_endpoint"], timeout=5, headers={
        "Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == "*", r.headers
    assert "content-type" in r.headers["access-control-allow-headers"]


def test_a_head_request_spends_nothing(server):
    client = register(server)
    _, challenge = s.pkce()
    assert httpx2.head(authorization_url(server, client["client_id"], challenge), timeout=5).status_code == 405
    assert httpx2.head(f"{origin(server)}/oauth/callback?state=x&code=y", timeout=5).status_code == 405


def test_registration_keeps_what_this_server_offers(server):
    answer = register(server, grant_types=["authorization_code", "refresh_token",
                                           "urn:ietf:params:oauth:grant-type:device_code"])
    assert answer["grant_types"] == ["authorization_code", "refresh_token"]
    r = httpx2.post(as_metadata(server)["registration_endpoint"],
                    json={"redirect_uris": [REDIRECT], "grant_types": ["client_credentials"]}, timeout=5)
    assert r.status_code == 400 and r.json()["error"] == "invalid_client_metadata", r.text


def test_a_wrong_verifier_is_refused_and_spends_the_code(server):
    client_id, code, verifier, _ = login(server)
    wrong, _ = s.pkce()
    r = exchange(server, client_id, code, wrong)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text
    assert exchange(server, client_id, code, verifier).status_code == 400


def test_a_code_used_by_another_client_is_refused(server):
    _, code, verifier, _ = login(server)
    other = register(server)["client_id"]
    r = exchange(server, other, code, verifier)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text


def test_another_resource_at_the_token_endpoint_is_refused(server):
    client_id, code, verifier, _ = login(server)
    r = exchange(server, client_id, code, verifier, resource="https://other.example.com/mcp")
    assert r.status_code == 400 and r.json()["error"] == "invalid_target", r.text


_FORM_FIELD = re.compile(r'name="(request|csrf)" value="([^"]*)"')


def consent_page(server) -> tuple[httpx2.Client, dict, str]:
    """A browser that loaded a consent page: (the browser, its hidden fields, the action URL)."""
    client = register(server)
    _, challenge = s.pkce()
    browser = httpx2.Client(follow_redirects=False, timeout=10)
    page = browser.get(authorization_url(server, client["client_id"], challenge))
    assert page.status_code == 200, page.text[:300]
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    fields = dict(_FORM_FIELD.findall(page.text))
    return browser, fields, urljoin(str(page.url), "/oauth/authorize")


def test_a_consent_post_without_the_cookie_is_refused(server):
    browser, fields, action = consent_page(server)
    browser.close()
    r = httpx2.post(action, data={**fields, "decision": "approve"}, timeout=5)
    no_redirect(r)
    assert r.status_code == 403


def test_a_denial_goes_back_with_access_denied(server):
    browser, fields, action = consent_page(server)
    try:
        redirected_error(browser.post(action, data={**fields, "decision": "deny"}), "access_denied")
    finally:
        browser.close()


def test_consent_given_in_another_browser_does_not_complete_the_login(server):
    """CVE-2026-27124: the attacker approves in their browser and sends the victim the
    upstream URL; the victim logs in, but their browser lacks the approval's cookie."""
    attacker, fields, action = consent_page(server)
    try:
        upstream_url = attacker.post(action, data={**fields, "decision": "approve"}).headers["location"]
    finally:
        attacker.close()
    with httpx2.Client(follow_redirects=False, timeout=10) as victim:
        response = victim.get(upstream_url)
        for _ in range(20):
            if response.status_code in (302, 303) and "/oauth/callback" in response.headers["location"]:
                callback = victim.get(urljoin(str(response.url), response.headers["location"]))
                no_redirect(callback)
                assert callback.status_code == 403
                return
            if response.status_code in (302, 303):
                response = victim.get(urljoin(str(response.url), response.headers["location"]))
                continue
            form = s._FORM.search(response.text)
            assert form, response.text[:500]
            data = {}
            for attrs in s._INPUT.findall(form.group(2)):
                a = dict(s._ATTR.findall(attrs))
                if "name" in a:
                    data[a["name"]] = a.get("value", "")
            if "login" in data:
                data.update(login="victim", password="x")
            response = victim.post(urljoin(str(response.url), form.group(1)), data=data)
    raise AssertionError("the login never came back to the callback")


def test_a_tampered_upstream_state_is_refused(server):
    r = httpx2.get(f"{origin(server)}/oauth/callback?state=forged&code=x", timeout=5)
    no_redirect(r)


@pytest.mark.parametrize("redirect_uri", [
    "javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,hi",
    "http://attacker.example/cb", "https://app.example/cb#frag",
])
def test_registration_refuses_dangerous_redirect_uris(server, redirect_uri):
    r = httpx2.post(as_metadata(server)["registration_endpoint"],
                    json={"redirect_uris": [redirect_uri]}, timeout=5)
    assert r.status_code == 400 and r.json()["error"] == "invalid_redirect_uri", r.text


def test_registration_is_public_only(server):
    answer = register(server, token_endpoint_auth_method="client_secret_post")
    assert answer["token_endpoint_auth_method"] == "none"
    assert "client_secret" not in answer
