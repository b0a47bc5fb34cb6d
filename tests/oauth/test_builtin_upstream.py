"""The identity provider's tokens, for tools that call its API as the person
(MCP_OAUTH_UPSTREAM_TOKENS): examples/upstream_profile.rs's tool fetches the person's profile
from the upstream oidc-provider's userinfo endpoint with the provider's own access token.

  - the tool gets the person's profile, the MCP client never sees the provider's tokens;
  - an expired provider token is refreshed at the provider before the tool gets it;
  - without the setting none are kept, and the tool is told so.
"""

import os

import anyio
import httpx2

import oauth_support as s
from test_builtin_as import upstream, upstream_events  # noqa: F401
from test_oauth_python import Browser, Connection


def profile_server(upstream_issuer: str, client_id: str = "mcp-facade", **env):
    return s.basket(
        binary=os.environ["PROFILE_BIN"],
        MCP_AUTH_ISSUER=None,
        MCP_AUTH_TOOL_SCOPES=None,
        MCP_OAUTH_UPSTREAM_ISSUER=upstream_issuer,
        MCP_OAUTH_UPSTREAM_CLIENT_ID=client_id,
        MCP_OAUTH_UPSTREAM_CLIENT_SECRET=f"{client_id}-secret",
        PROFILE_URL=f"{upstream_issuer}/me",
        **env,
    )


def call_profile(url: str, login: str, calls: int = 1):
    """Logs in with the Python client and calls the tool `calls` times: (results, storage,
    every token answer the client received)."""
    storage, browser = s.MemoryStorage(), Browser(login)
    token_answers = []

    async def run():
        async with Connection(url, storage, browser) as conn:
            conn.http.event_hooks["response"].append(keep_token_answers)
            results = []
            for _ in range(calls):
                results.append(await conn.client.call_tool("upstream_profile", {}))
                if calls > 1:
                    await anyio.sleep(3.5)
            return results

    async def keep_token_answers(response):
        if response.request.url.path == "/oauth/token":
            await response.aread()
            token_answers.append(response.text)

    return anyio.run(run), storage, token_answers


def text_of(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def test_a_tool_calls_the_provider_as_the_person(upstream):  # noqa: F811
    with profile_server(upstream, MCP_OAUTH_UPSTREAM_TOKENS="true") as url:
        results, storage, token_answers = call_profile(url, "grace")
    assert not results[0].is_error, text_of(results[0])
    assert '"sub":"grace"' in text_of(results[0]).replace(" ", ""), text_of(results[0])
    # The MCP client got this server's tokens only: the provider's never leave the server.
    _, claims = s.jws_parts(storage.tokens.access_token)
    assert claims["iss"] == url.removesuffix("/mcp") and "upt" in claims
    assert token_answers and all("id_token" not in a for a in token_answers), token_answers
    assert set(claims) <= {"iss", "sub", "aud", "client_id", "scope", "iat", "nbf", "exp", "jti", "upt"}


def test_an_expired_provider_token_is_refreshed_first(upstream):  # noqa: F811
    # mcp-facade-short's access tokens live 3 s at the provider.
    before = len(upstream_events(upstream))
    with profile_server(upstream, "mcp-facade-short", MCP_OAUTH_UPSTREAM_TOKENS="true") as url:
        results, _, _ = call_profile(url, "heidi", calls=2)
    assert all(not r.is_error for r in results), [text_of(r) for r in results]
    assert all('"sub":"heidi"' in text_of(r).replace(" ", "") for r in results)
    grants = [e.get("grant_type") for e in upstream_events(upstream)[before:]
              if e["event"] == "token" and e.get("client_id") == "mcp-facade-short"]
    assert "refresh_token" in grants, grants


def test_without_the_setting_none_are_kept(upstream):  # noqa: F811
    with profile_server(upstream) as url:
        results, storage, _ = call_profile(url, "ivan")
    assert results[0].is_error
    assert "MCP_OAUTH_UPSTREAM_TOKENS" in text_of(results[0]), text_of(results[0])
    _, claims = s.jws_parts(storage.tokens.access_token)
    assert "upt" not in claims


def test_userinfo_refuses_without_the_providers_token(upstream):  # noqa: F811
    """The tool's call is the provider's check, not a formality: without a token it fails."""
    assert httpx2.get(f"{upstream}/me", timeout=5).status_code in (400, 401)
