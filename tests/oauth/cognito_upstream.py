"""The built-in authorization server in front of an emulated Amazon Cognito user pool (MiniStack,
scripts/tools.sh's install_ministack), run by test_builtin_cognito.py in a network namespace of
its own (`unshare`), where it prints one JSON line of what happened.

MiniStack issues tokens as Cognito does: `iss` is `https://cognito-idp.<region>.amazonaws.com/<pool
id>`, and so is the discovery document's `issuer`, while the emulator serves that document on its
own gateway. A client that finds the provider by its issuer (this server: `<issuer>/.well-known/
openid-configuration`, OpenID Connect Discovery 1.0 §4) must reach the emulator at that name,
which is MiniStack's own way to run it: its TLS certificate (USE_SSL=1) names
cognito-idp.<region>.amazonaws.com, and its users point that name at it. Here the namespace does
that and nothing outside sees it: its /etc/hosts names 127.0.0.1, its loopback is the only
interface, MiniStack listens on 127.0.0.1:443 (a namespace's root may bind it; USE_SSL adds that
port to its gateway's, 4566, which is never used here: GATEWAY_PORT=443 would bind 443 twice
and fail), and the basket
trusts MiniStack's certificate (MCP_AUTH_CA_FILE). The issuer, the callback, the login and every
token are Cognito's own shape; nothing of the server is changed for the emulator.

`python cognito_upstream.py setup <endpoint> <ca> <callback>` (MiniStack's Python, which has
botocore): the pool, its user and the app client, as docs/auth.md's "Setting the provider up"
asks of Cognito, printed as JSON.
"""

import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REGION = "us-east-1"
HOST = f"cognito-idp.{REGION}.amazonaws.com"
USER, PASSWORD = "alice", "Correct-horse-7-battery"


def setup(endpoint: str, ca: str, callback: str) -> None:
    import botocore.session

    idp = botocore.session.get_session().create_client(
        "cognito-idp", region_name=REGION, endpoint_url=endpoint, verify=ca,
        aws_access_key_id="test", aws_secret_access_key="test",
    )
    pool = idp.create_user_pool(PoolName="mcp")["UserPool"]["Id"]
    idp.create_user_pool_domain(Domain="mcp-login", UserPoolId=pool)
    idp.admin_create_user(UserPoolId=pool, Username=USER, MessageAction="SUPPRESS",
                          UserAttributes=[{"Name": "email", "Value": "alice@example.com"}])
    idp.admin_set_user_password(UserPoolId=pool, Username=USER, Password=PASSWORD, Permanent=True)
    attributes = idp.admin_get_user(UserPoolId=pool, Username=USER)["UserAttributes"]
    client = idp.create_user_pool_client(
        UserPoolId=pool, ClientName="mcp-facade", GenerateSecret=True, CallbackURLs=[callback],
        AllowedOAuthFlows=["code"], AllowedOAuthScopes=["openid"], AllowedOAuthFlowsUserPoolClient=True,
        SupportedIdentityProviders=["COGNITO"],
    )["UserPoolClient"]
    print(json.dumps({
        "pool": pool, "client_id": client["ClientId"], "client_secret": client["ClientSecret"],
        "sub": next(a["Value"] for a in attributes if a["Name"] == "sub"),
    }))


def listening() -> list[str]:
    """Every listening TCP socket of this namespace, as `address:port`."""
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state != "0A":
                continue
            address, port = local.split(":")
            if width == 8:
                address = ".".join(str(b) for b in reversed(bytes.fromhex(address)))
            found.append(f"{address}:{int(port, 16)}")
    return found


def scenario() -> dict:
    import anyio
    import httpx2

    import oauth_support as s
    from test_oauth_python import Browser, Connection, structured

    # The namespace: loopback up, and the pool's issuer host resolving to it.
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    work = Path(tempfile.mkdtemp(prefix="cognito-"))
    hosts = work / "hosts"
    hosts.write_text(f"127.0.0.1 localhost {HOST}\n::1 localhost\n")
    subprocess.run(["mount", "--bind", str(hosts), "/etc/hosts"], check=True)

    logs = Path(os.environ.get("OAUTH_LOGS", "/tmp"))
    out = open(logs / "ministack.out", "wb")
    (work / "tmp").mkdir()
    env = {
        "PATH": os.environ["PATH"], "HOME": str(work), "TMPDIR": str(work / "tmp"),
        "STATE_DIR": str(work / "state"), "BIND_HOST": "127.0.0.1", "GATEWAY_PORT": "4566",
        "USE_SSL": "1", "SERVICES": "cognito-idp", "IOT_MTLS_ENABLED": "0",
    }
    ministack = subprocess.Popen([os.environ["MINISTACK"]], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        ca = work / "tmp" / "ministack-tls" / "server.crt"
        deadline = time.monotonic() + 30
        while True:
            try:
                if ca.exists() and httpx2.get(f"https://{HOST}/_ministack/health", timeout=1,
                                              verify=ssl.create_default_context(cafile=ca)).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if ministack.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"MiniStack did not start: {(logs / 'ministack.out').read_text()[-2000:]}")
            time.sleep(0.2)
        trust = ssl.create_default_context(cafile=ca)

        port = s.free_port()
        callback = f"http://127.0.0.1:{port}/oauth/callback"
        made = subprocess.run([os.environ["MINISTACK_PYTHON"], __file__, "setup", f"https://{HOST}", str(ca), callback],
                              capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr[-2000:]
        cognito = json.loads(made.stdout)
        issuer = f"https://{HOST}/{cognito['pool']}"
        discovery = httpx2.get(f"{issuer}/.well-known/openid-configuration", timeout=5, verify=trust).json()

        class CognitoBrowser(Browser):
            async def redirect(self, url: str) -> None:
                self.authorization_urls.append(url)
                self.back = await anyio.to_thread.run_sync(
                    lambda: s.sign_in(url, self.login, password=PASSWORD, verify=trust))

        with s.basket(
            port=port, MCP_AUTH_ISSUER=None, MCP_AUTH_CA_FILE=str(ca), MCP_LOG="info",
            MCP_OAUTH_UPSTREAM_ISSUER=issuer, MCP_OAUTH_UPSTREAM_CLIENT_ID=cognito["client_id"],
            MCP_OAUTH_UPSTREAM_CLIENT_SECRET=cognito["client_secret"],
        ) as url:
            storage, browser = s.MemoryStorage(), CognitoBrowser(USER)

            async def run():
                async with Connection(url, storage, browser) as conn:
                    created = structured(await conn.client.call_tool("create_basket", {}))
                    return conn.requests, created

            requests, created = anyio.run(run)
            return {
                "url": url, "issuer": issuer, "discovery": discovery, "cognito_sub": cognito["sub"],
                "client_secret_chars": sorted(set(cognito["client_secret"]) & set("+/=")),
                "listening": listening(),
                "requests": [(m, u.split("?")[0], st) for m, u, st, _ in requests],
                "authorization_urls": browser.authorization_urls,
                "client_id": storage.client_info.client_id,
                "access_token": storage.tokens.access_token,
                "refresh_token": bool(storage.tokens.refresh_token),
                "created": created,
            }
    finally:
        ministack.terminate()
        ministack.wait(timeout=10)
        out.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["setup"]:
        setup(*sys.argv[2:5])
    else:
        print(json.dumps(scenario()))
