"""mcp-lambda's built-in authorization server in front of an emulated Amazon Cognito user pool
(MiniStack 1.5.33, its managed login and /oauth2 endpoints), set up as docs/auth.md's "Setting
the provider up" asks of Cognito: a confidential app client with a secret, the code grant and the
`openid` scope, and the pool's issuer `https://cognito-idp.<region>.amazonaws.com/<pool id>`.

The Python `mcp` client registers here by DCR, the scripted browser passes the consent page and
Cognito's sign-in form, and the tool call succeeds as the Cognito user's `sub`. It all runs in a
network namespace of its own (cognito_upstream.py says why and how), so that the issuer's host
resolves to the emulator there and nowhere else; this test reads what it printed.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import oauth_support as s

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def run():
    """MiniStack, the basket and the client in their namespace, to the tool call: what happened."""
    # --pid --fork --kill-child: whatever the scenario leaves running ends with it.
    command = ["unshare", "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork", "--kill-child",
               sys.executable, str(HERE / "cognito_upstream.py")]
    env = {k: os.environ[k] for k in ("PATH", "HOME", "BASKET_BIN", "OAUTH_LOGS", "MINISTACK", "MINISTACK_PYTHON")
           if k in os.environ}
    env["OAUTH_ISSUER"] = "http://127.0.0.1:9"  # unused: the basket here has no external AS
    done = subprocess.run(command, cwd=HERE, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, (
        "the Cognito scenario failed (it needs util-linux's unshare with unprivileged user namespaces, "
        f"and iproute2's ip): exit {done.returncode}\n{done.stderr[-4000:]}"
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_emulated_pool_is_found_by_its_cognito_issuer(run):
    discovery = run["discovery"]
    assert run["issuer"].startswith("https://cognito-idp.us-east-1.amazonaws.com/us-east-1_")
    assert discovery["issuer"] == run["issuer"]
    assert discovery["authorization_endpoint"] == "https://cognito-idp.us-east-1.amazonaws.com/oauth2/authorize"
    assert "client_secret_basic" in discovery["token_endpoint_auth_methods_supported"]
    # MiniStack and the basket listen on loopback only, in a namespace nothing else shares.
    assert run["listening"] and all(a.startswith("127.0.0.1:") for a in run["listening"]), run["listening"]


def test_python_client_registers_logs_in_at_cognito_and_calls_a_tool(run):
    url = run["url"]
    base = url.removesuffix("/mcp")
    statuses = [tuple(r) for r in run["requests"]]
    assert ("POST", url, 401) in statuses, statuses
    assert ("POST", f"{base}/oauth/register", 201) in statuses, statuses
    assert ("POST", f"{base}/oauth/token", 200) in statuses, statuses
    assert statuses[-1] == ("POST", url, 200), statuses
    assert run["client_id"].startswith("mcp_")
    # The browser went through this server's consent page, then Cognito's login.
    assert len(run["authorization_urls"]) == 1
    assert run["authorization_urls"][0].startswith(f"{base}/oauth/authorize?")
    header, claims = s.jws_parts(run["access_token"])
    assert header["typ"] == "at+jwt" and header["alg"] == "ES256", header
    assert claims["iss"] == base and claims["aud"] == url and claims["client_id"] == run["client_id"], claims
    # The person is the Cognito user.
    assert claims["sub"] == run["cognito_sub"], (claims, run["cognito_sub"])
    assert run["refresh_token"]
    assert isinstance(run["created"]["basket_id"], str)
