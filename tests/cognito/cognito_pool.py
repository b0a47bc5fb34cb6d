"""Amazon Cognito user pools in moto's `cognito-idp` emulator, for tests/cognito.

Runs in moto's own venv ($MCP_WORK/venv-moto: moto[server], boto3, joserfc), not in the
clients' venv the tests run in; the tests call it as a subprocess and read JSON from stdout.

    cognito_pool.py setup MOTO_URL AUDIENCE [AUDIENCE...]
        Creates, through boto3 against moto (region us-east-1, dummy credentials):
          pool "mcp-basket": a resource server per AUDIENCE (Identifier = the AUDIENCE, the
            basket's canonical URL; scopes basket:read, basket:write); app clients "mcp-web"
            (a user's app: ADMIN_USER_PASSWORD_AUTH, no secret), "mcp-agent" (machine to
            machine: a secret, client_credentials) and "other-app" (client_credentials); the
            user alice with a permanent password, signed in on mcp-web.
          pool "elsewhere": a resource server with the first AUDIENCE as identifier (another
            pool may use the same identifier), an app client "elsewhere-app", the user bob
            signed in on it.
        Prints the pools (id, issuer, jwks_url), the app client ids, alice's sub and the ID
        and access tokens moto issued to alice and bob (ADMIN_USER_PASSWORD_AUTH).

    cognito_pool.py sign < CLAIMS_JSON_LIST
        Signs each claim set with moto's own private key (the one key moto signs every pool
        with, kid "dummy", shipped in moto's package as cognitoidp/resources/jwks-private.json),
        with Cognito's header {"kid", "alg": "RS256"} and nothing else; prints the tokens as a
        JSON list. For what moto cannot issue: access tokens with resource-server scopes.
"""

import gzip
import json
import pathlib
import sys

REGION = "us-east-1"
SCOPES = ("basket:read", "basket:write")
PASSWORD = "Correct-Horse-9-battery"


def private_key():
    """moto's signing key: the JWK moto.cognitoidp loads for every user pool."""
    import moto.cognitoidp
    from joserfc.jwk import RSAKey

    resources = pathlib.Path(moto.cognitoidp.__file__).parent / "resources"
    plain, packed = resources / "jwks-private.json", resources / "jwks-private.json.gz"
    # moto 5.2.x ships it gzipped; older releases as plain JSON.
    text = plain.read_text() if plain.exists() else gzip.decompress(packed.read_bytes()).decode()
    jwk = json.loads(text)
    assert jwk.get("kid") == "dummy", "moto's private key is not the one its JWKS serves as kid 'dummy'"
    return RSAKey.import_key(jwk)


def sign(claim_sets):
    from joserfc import jws

    key = private_key()
    # Cognito's header is exactly {"kid": ..., "alg": "RS256"}: no "typ". joserfc's jwt.encode
    # adds "typ": "JWT" (moto's own tokens have it), so sign at the JWS layer, which adds nothing.
    header = {"kid": "dummy", "alg": "RS256"}
    return [jws.serialize_compact(header, json.dumps(claims).encode(), key) for claims in claim_sets]


def setup(moto_url, audiences):
    import boto3

    idp = boto3.client(
        "cognito-idp",
        endpoint_url=moto_url,
        region_name=REGION,
        aws_access_key_id="dummy",
        aws_secret_access_key="dummy",
    )

    def resource_server(pool_id, identifier):
        idp.create_resource_server(
            UserPoolId=pool_id,
            Identifier=identifier,
            Name="basket",
            Scopes=[{"ScopeName": s, "ScopeDescription": f"the basket's {s}"} for s in SCOPES],
        )
        return [f"{identifier}/{s}" for s in SCOPES]

    def client(pool_id, name, scopes, *, machine):
        if machine:
            # What Cognito requires of a client_credentials client: a secret, the flow, its scopes.
            extra = {"GenerateSecret": True, "AllowedOAuthFlows": ["client_credentials"]}
        else:
            extra = {
                "ExplicitAuthFlows": ["ALLOW_ADMIN_USER_PASSWORD_AUTH", "ALLOW_REFRESH_TOKEN_AUTH"],
                "AllowedOAuthFlows": ["code"],
                "CallbackURLs": ["http://127.0.0.1/callback"],
            }
            scopes = ["openid", *scopes]
        made = idp.create_user_pool_client(
            UserPoolId=pool_id,
            ClientName=name,
            AllowedOAuthFlowsUserPoolClient=True,
            AllowedOAuthScopes=scopes,
            **extra,
        )
        return made["UserPoolClient"]["ClientId"]

    def user(pool_id, client_id, username):
        idp.admin_create_user(UserPoolId=pool_id, Username=username, MessageAction="SUPPRESS")
        idp.admin_set_user_password(UserPoolId=pool_id, Username=username, Password=PASSWORD, Permanent=True)
        sub = next(a["Value"] for a in idp.admin_get_user(UserPoolId=pool_id, Username=username)["UserAttributes"]
                   if a["Name"] == "sub")
        tokens = idp.admin_initiate_auth(
            UserPoolId=pool_id,
            ClientId=client_id,
            AuthFlow="ADMIN_USER_PASSWORD_AUTH",
            AuthParameters={"USERNAME": username, "PASSWORD": PASSWORD},
        )["AuthenticationResult"]
        return {"username": username, "sub": sub, "id_token": tokens["IdToken"],
                "access_token": tokens["AccessToken"]}

    def pool(name):
        pool_id = idp.create_user_pool(PoolName=name)["UserPool"]["Id"]
        return {
            "id": pool_id,
            "issuer": f"https://cognito-idp.{REGION}.amazonaws.com/{pool_id}",
            "jwks_url": f"{moto_url}/{pool_id}/.well-known/jwks.json",
        }

    main = pool("mcp-basket")
    scopes = [s for audience in audiences for s in resource_server(main["id"], audience)]
    main["clients"] = {
        "mcp-web": client(main["id"], "mcp-web", scopes, machine=False),
        "mcp-agent": client(main["id"], "mcp-agent", scopes, machine=True),
        "other-app": client(main["id"], "other-app", scopes, machine=True),
    }
    main["user"] = user(main["id"], main["clients"]["mcp-web"], "alice")

    other = pool("elsewhere")
    other_scopes = resource_server(other["id"], audiences[0])
    other["clients"] = {"elsewhere-app": client(other["id"], "elsewhere-app", other_scopes, machine=False)}
    other["user"] = user(other["id"], other["clients"]["elsewhere-app"], "bob")
    return {"region": REGION, "pool": main, "other_pool": other}


if __name__ == "__main__":
    if sys.argv[1:2] == ["setup"] and len(sys.argv) >= 4:
        print(json.dumps(setup(sys.argv[2], sys.argv[3:])))
    elif sys.argv[1:] == ["sign"]:
        print(json.dumps(sign(json.load(sys.stdin))))
    else:
        sys.exit(__doc__)
