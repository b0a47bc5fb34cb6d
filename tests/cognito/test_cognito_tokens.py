"""The basket as an MCP resource server of an Amazon Cognito user pool (moto's cognito-idp).

Tokens are Cognito's own where moto can issue them (admin_initiate_auth: the ID token, and an
access token whose only scope is aws.cognito.signin.user.admin); moto has no /oauth2/token, so
access tokens with resource-server scopes (what Cognito's client_credentials and authorization
code grants issue) are signed here with moto's own key in Cognito's documented shape
(conftest.access_token_claims). Every refusal's error_description is printed to the log.
"""

import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from conftest import Basket, access_token_claims, auth_env, call_tool, free_port, get, rpc, sign, started


def m2m_token(pool, basket, client, *scopes, **kw):
    """A client_credentials access token of `client` (signed: moto cannot issue one)."""
    claims = access_token_claims(pool, pool["clients"][client], [basket.scope(s) for s in scopes], **kw)
    return sign(claims)[0]


def refused(answer, test):
    """The 401 invalid_token answer's error_description, printed for the log."""
    description = answer.param("error_description")
    print(f"\n  [{test}] {answer.status} WWW-Authenticate: {answer.challenge}")
    assert answer.status == 401, answer.body
    assert 'error="invalid_token"' in answer.challenge
    assert description, "the challenge has no error_description"
    return description


def result(answer):
    assert answer.status == 200, (answer.status, answer.challenge, answer.body[:500])
    message = answer.json()
    assert "result" in message, message
    return message["result"]


# --- accepted ---------------------------------------------------------------------------------

def test_client_credentials_token_with_both_scopes_creates_fills_and_checks_out(main_basket, cognito):
    # Signed with moto's key (moto has no /oauth2/token): a client_credentials access token as
    # Cognito issues it: header {kid, alg: RS256}; sub = client_id, token_use access, scope
    # "<identifier>/basket:read <identifier>/basket:write", auth_time, iss, exp, iat, jti,
    # version 2, no aud, no username.
    token = m2m_token(cognito["pool"], main_basket, "mcp-agent", "basket:read", "basket:write")
    created = result(call_tool(main_basket.url, token, "create_basket"))
    basket_id = created["structuredContent"]["basket_id"]
    added = result(call_tool(main_basket.url, token, "add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 2}))
    assert not added.get("isError"), added
    done = result(call_tool(main_basket.url, token, "checkout", {"basket_id": basket_id}))
    assert not done.get("isError"), done
    assert done["structuredContent"]["status"] == "checked_out"


def test_user_access_token_of_the_code_flow_is_accepted(main_basket, cognito):
    # Signed with moto's key: a user's access token as Cognito's authorization code grant issues
    # it: sub = the user's sub (alice's, from moto), username, origin_jti, event_id, client_id =
    # the user's app client, the resource server's scope, version 2.
    pool = cognito["pool"]
    token = m2m_token(pool, main_basket, "mcp-web", "basket:read", user=pool["user"])
    created = result(call_tool(main_basket.url, token, "create_basket"))
    assert created["structuredContent"]["basket_id"]


@pytest.mark.anyio
async def test_python_mcp_client_runs_the_basket_flow_with_a_cognito_access_token(main_basket, cognito):
    # The real Python mcp 2.3.0 client, its bearer token in the httpx client's headers; the
    # token as in the first test (client_credentials shape, signed with moto's key).
    token = m2m_token(cognito["pool"], main_basket, "mcp-agent", "basket:read", "basket:write")
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(main_basket.url, http_client=http), mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"create_basket", "add_item", "view_basket", "checkout"} <= names
        basket_id = (await client.call_tool("create_basket", {})).structured_content["basket_id"]
        added = await client.call_tool("add_item", {"basket_id": basket_id, "sku": "tea", "quantity": 1})
        assert not added.is_error
        viewed = await client.call_tool("view_basket", {"basket_id": basket_id})
        assert viewed.structured_content["items"] == [{"sku": "tea", "quantity": 1}]
        done = await client.call_tool("checkout", {"basket_id": basket_id})
        assert not done.is_error


# --- scopes: full Cognito names ---------------------------------------------------------------

def test_read_only_token_gets_403_insufficient_scope_naming_the_full_write_scope(main_basket, cognito):
    # Signed with moto's key: a client_credentials token that asked for basket:read only.
    token = m2m_token(cognito["pool"], main_basket, "mcp-agent", "basket:read")
    basket_id = result(call_tool(main_basket.url, token, "create_basket"))["structuredContent"]["basket_id"]
    answer = call_tool(main_basket.url, token, "checkout", {"basket_id": basket_id})
    print(f"\n  [checkout, read-only] {answer.status} WWW-Authenticate: {answer.challenge}")
    assert answer.status == 403, answer.body
    assert 'error="insufficient_scope"' in answer.challenge
    assert answer.param("scope") == main_basket.scope("basket:write")


def test_read_only_token_does_not_see_checkout_in_tools_list(main_basket, cognito):
    # Signed with moto's key, as above: lists show only the tools the caller's scopes allow.
    token = m2m_token(cognito["pool"], main_basket, "mcp-agent", "basket:read")
    tools = {t["name"] for t in result(rpc(main_basket.url, token, "tools/list"))["tools"]}
    assert "create_basket" in tools and "checkout" not in tools, tools


# --- refused: 401 invalid_token, a description the user can act on ----------------------------

def test_id_token_is_refused_asking_for_the_access_token(main_basket, cognito):
    # moto's own ID token for alice (token_use "id", aud = the app client id).
    answer = call_tool(main_basket.url, cognito["pool"]["user"]["id_token"], "create_basket")
    description = refused(answer, "ID token")
    assert "ID token" in description and "access token" in description


def test_access_token_without_resource_server_scope_is_refused_saying_how_to_get_one(main_basket, cognito):
    # moto's own access token for alice: scope aws.cognito.signin.user.admin only (what
    # InitiateAuth/AdminInitiateAuth give in real Cognito too).
    answer = call_tool(main_basket.url, cognito["pool"]["user"]["access_token"], "create_basket")
    description = refused(answer, "no resource-server scope")
    assert main_basket.url in description, "the description must name the resource server identifier"
    assert "resource server" in description
    assert "create" in description.lower() and "app client" in description


def test_client_credentials_token_of_another_user_pool_is_refused_by_issuer(main_basket, cognito):
    # Signed with moto's key, which signs every pool: a client_credentials token of the pool
    # "elsewhere", whose resource server has this basket's URL as identifier too. Only iss is
    # wrong, and the signature verifies: the issuer check alone must refuse it.
    other = cognito["other_pool"]
    claims = access_token_claims(other, other["clients"]["elsewhere-app"], [main_basket.scope("basket:read")])
    description = refused(call_tool(main_basket.url, sign(claims)[0], "create_basket"), "other pool, signed")
    assert "issuer" in description


def test_moto_access_token_of_another_user_pool_is_refused_by_issuer(main_basket, cognito):
    # moto's own access token for bob in the pool "elsewhere".
    answer = call_tool(main_basket.url, cognito["other_pool"]["user"]["access_token"], "create_basket")
    description = refused(answer, "other pool, moto's token")
    assert "issuer" in description


def test_expired_access_token_is_refused(main_basket, cognito):
    # Signed with moto's key: a client_credentials token issued an hour and two minutes ago,
    # expired two minutes ago (beyond the 60 s leeway).
    token = m2m_token(cognito["pool"], main_basket, "mcp-agent", "basket:read", issued_ago=3720)
    description = refused(call_tool(main_basket.url, token, "create_basket"), "expired")
    assert "expired" in description


# --- MCP_AUTH_CLIENT_IDS ----------------------------------------------------------------------

@pytest.mark.parametrize("client", ["mcp-agent", "mcp-web"])
def test_listed_app_client_is_accepted(clients_basket, cognito, client):
    # Signed with moto's key: mcp-agent's client_credentials token; mcp-web's user (code flow)
    # token for alice.
    pool = cognito["pool"]
    user = pool["user"] if client == "mcp-web" else None
    token = m2m_token(pool, clients_basket, client, "basket:read", user=user)
    assert result(call_tool(clients_basket.url, token, "create_basket"))["structuredContent"]["basket_id"]


def test_unlisted_app_client_of_the_same_pool_is_refused_naming_it(clients_basket, cognito):
    # Signed with moto's key: a client_credentials token of other-app, same pool, right scopes.
    token = m2m_token(cognito["pool"], clients_basket, "other-app", "basket:read")
    description = refused(call_tool(clients_basket.url, token, "create_basket"), "unlisted client")
    assert cognito["pool"]["clients"]["other-app"] in description
    assert "MCP_AUTH_CLIENT_IDS" in description


# --- RFC 9728 metadata --------------------------------------------------------------------------

def metadata(basket):
    answer = get(f"{basket.origin}/.well-known/oauth-protected-resource/mcp")
    assert answer.status == 200, answer.body
    document = answer.json()
    print(f"\n  [metadata {basket.name}] {document}")
    return document


def test_metadata_lists_the_full_scope_names_of_the_scope_maps(main_basket, cognito):
    document = metadata(main_basket)
    assert document["resource"] == main_basket.url
    assert document["authorization_servers"] == [cognito["pool"]["issuer"]]
    assert set(document["scopes_supported"]) == {main_basket.scope("basket:read"), main_basket.scope("basket:write")}


def test_metadata_lists_mcp_auth_scopes_supported(clients_basket, cognito):
    document = metadata(clients_basket)
    assert document["resource"] == clients_basket.url
    assert document["authorization_servers"] == [cognito["pool"]["issuer"]]
    assert document["scopes_supported"] == [clients_basket.scope("basket:read"), clients_basket.scope("basket:write")]


# --- start-up -----------------------------------------------------------------------------------

def test_misspelt_mcp_variable_is_warned_about_at_start_up(cognito):
    # MCP_AUTH_CLIENTID for MCP_AUTH_CLIENT_IDS: the server still starts, and says so (MCP_LOG=warn).
    basket = Basket("misspelt", free_port())
    with started(basket, **auth_env(cognito["pool"], basket), MCP_AUTH_CLIENTID="x"):
        assert get(f"{basket.origin}/healthz").status == 200
    log = basket.log.read_text()
    print(f"\n  [start-up log]\n{log}")
    warned = [line for line in log.splitlines() if "WARN" in line.upper() and "MCP_AUTH_CLIENTID" in line]
    assert warned, "no WARN line names MCP_AUTH_CLIENTID"
