//! The token endpoint (`authorization_code` with PKCE S256, `refresh_token` rotated on every
//! use) and RFC 7009 revocation.
//!
//! A refresh token is `<grant id>.<secret>`. Using the one in force rotates it; the one it
//! replaced still works for [`GRACE`] (an answer lost on the way can be asked again). Any other
//! secret for a live grant is a reuse of a rotated token, or a guess by someone who learnt the
//! grant id from one: the whole grant is revoked.
//!
//! Access tokens are JWTs verified without a network call, so revoking a grant ends its
//! refresh tokens at once and its access tokens when they expire (`MCP_OAUTH_ACCESS_TOKEN_SECS`).

use std::time::Duration;

use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header, request::Parts};
use serde_json::{Value, json};

use super::{
    AuthorizationServer,
    authorize::{CodeRecord, Grant, REFRESH_PURPOSE, check_resource, code_key, grant_key},
    keys, oauth_error, parameters, private_json,
    register::{ClientError, store_unavailable},
};

/// How long a replaced refresh token still works.
const GRACE: Duration = Duration::from_secs(60);

fn invalid_grant(description: &str) -> Response<Bytes> {
    oauth_error(StatusCode::BAD_REQUEST, "invalid_grant", description)
}

fn invalid_client(description: &str) -> Response<Bytes> {
    // 401: MCP clients register again on `invalid_client` from the token endpoint.
    let mut response = oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", description);
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"oauth\""),
    );
    response
}

/// The client id a request names: the form's `client_id`, or HTTP Basic's user (a public
/// client may send an empty password). Both, differing, is refused.
fn client_id(
    parts: &Parts,
    form: &std::collections::HashMap<String, String>,
) -> Result<Option<String>, &'static str> {
    let basic = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Basic ")
                .or_else(|| v.strip_prefix("basic "))
        })
        .and_then(|b64| STANDARD.decode(b64.trim()).ok())
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|pair| {
            pair.split_once(':').map(|(user, _)| {
                form_urlencoded::parse(format!("u={user}").as_bytes())
                    .next()
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default()
            })
        });
    match (form.get("client_id"), basic) {
        (Some(a), Some(b)) if *a != b => {
            Err("the form and the Authorization header name different clients")
        }
        (Some(a), _) => Ok(Some(a.clone())),
        (None, b) => Ok(b),
    }
}

fn access_token(
    server: &AuthorizationServer,
    client_id: &str,
    subject: &str,
    scopes: &[String],
    upstream: Option<&str>,
) -> Value {
    let now = crate::env::now_ms() / 1000;
    let ttl = server.settings.access_token_ttl.as_secs();
    let mut claims = json!({
        "iss": server.issuer,
        "sub": subject,
        "aud": server.resource,
        "client_id": client_id,
        "scope": scopes.join(" "),
        "iat": now,
        "nbf": now,
        "exp": now + ttl,
        "jti": keys::random_token(16),
    });
    if let Some(reference) = upstream {
        claims[super::upstream_token::CLAIM] = json!(reference);
    }
    json!({
        "access_token": server.keys.sign("at+jwt", &claims),
        "token_type": "Bearer",
        "expires_in": ttl,
        "scope": scopes.join(" "),
    })
}

/// `POST /oauth/token`.
pub(crate) async fn token(
    server: &AuthorizationServer,
    parts: &Parts,
    body: &[u8],
) -> Response<Bytes> {
    let form = match parameters(body) {
        Ok(form) => form,
        Err(why) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &why),
    };
    let client_id = match client_id(parts, &form) {
        Ok(Some(id)) => id,
        Ok(None) => return invalid_client("name the client: client_id"),
        Err(why) => return invalid_client(why),
    };
    if let Some(resource) = form.get("resource")
        && let Err(why) = check_resource(server, Some(resource))
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_target", &why);
    }
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => authorization_code(server, &client_id, &form).await,
        Some("refresh_token") => refresh(server, &client_id, &form).await,
        Some(_) => oauth_error(
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "this server offers authorization_code and refresh_token",
        ),
        None => oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "grant_type is missing",
        ),
    }
}

async fn authorization_code(
    server: &AuthorizationServer,
    client_id: &str,
    form: &std::collections::HashMap<String, String>,
) -> Response<Bytes> {
    let (Some(code), Some(verifier)) = (form.get("code"), form.get("code_verifier")) else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "send code and code_verifier (PKCE is required)",
        );
    };
    if !(43..=128).contains(&verifier.len())
        || !verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
    {
        return invalid_grant("code_verifier must be 43 to 128 characters of [A-Za-z0-9-._~]");
    }
    if code.len() > 256 {
        return invalid_grant("the code is not valid");
    }
    match server.client(client_id).await {
        Ok(_) => {}
        Err(ClientError::Store(error)) => return store_unavailable(&error),
        Err(refused) => return invalid_client(&refused.to_string()),
    }
    // Single use: whoever takes it first, right or wrong, ends it (a replayed or stolen code
    // cannot be tried twice).
    let record = match server.store.take(code_key(code)).await {
        Ok(Some(record)) => record,
        Ok(None) => return replayed_or_unknown(server, code).await,
        Err(error) => return store_unavailable(&error),
    };
    let Ok(record) = serde_json::from_value::<CodeRecord>(record.value) else {
        return invalid_grant("the code is not valid");
    };
    // A second use of this code (a replay) finds this and ends the grant the first made
    // (RFC 9700 §4.5; OAuth 2.1 §4.1.3).
    if let Err(error) = server
        .store
        .create(
            spent_key(code),
            json!({ "grant": record.grant_id }),
            super::authorize::CODE_TTL,
        )
        .await
    {
        return store_unavailable(&error);
    }
    if record.client_id != client_id {
        return invalid_grant("the code was issued to another client");
    }
    // Required, and equal, when the authorization request named one (OAuth 2.1 §4.1.3).
    match form.get("redirect_uri") {
        Some(given) if *given == record.redirect_uri => {}
        None if !record.redirect_uri_given => {}
        _ => return invalid_grant("redirect_uri differs from the authorization request's"),
    }
    if !keys::same(&keys::s256(verifier), &record.code_challenge) {
        return invalid_grant("code_verifier does not match the code_challenge");
    }
    let Some(secret) = keys::open(code, REFRESH_PURPOSE, &record.refresh_sealed)
        .and_then(|s| String::from_utf8(s).ok())
    else {
        return invalid_grant("the code is not valid");
    };
    let mut answer = access_token(
        server,
        client_id,
        &record.subject,
        &record.scopes,
        record.upstream.as_deref(),
    );
    answer["refresh_token"] = json!(format!("{}.{secret}", record.grant_id));
    private_json(StatusCode::OK, &answer)
}

async fn refresh(
    server: &AuthorizationServer,
    client_id: &str,
    form: &std::collections::HashMap<String, String>,
) -> Response<Bytes> {
    let Some((grant_id, secret)) = form
        .get("refresh_token")
        .filter(|t| t.len() <= 256)
        .and_then(|t| t.split_once('.'))
    else {
        return invalid_grant("the refresh token is not valid");
    };
    let narrowed: Option<Vec<String>> = form
        .get("scope")
        .map(|s| s.split_whitespace().map(str::to_string).collect());
    // An expired registration's client must register again (MCP clients do on invalid_client);
    // a live one is kept another idle period below: it is in use.
    let client = match server.client(client_id).await {
        Ok(client) => client,
        Err(ClientError::Store(error)) => return store_unavailable(&error),
        Err(refused) => return invalid_client(&refused.to_string()),
    };
    let presented = keys::hash(secret);
    // A concurrent rotation of the same grant: read again (a few times at most).
    for _ in 0..4 {
        let record = match server.store.get(grant_key(grant_id)).await {
            Ok(Some(record)) => record,
            Ok(None) => {
                return invalid_grant(
                    "the refresh token is not valid: unknown, revoked or expired",
                );
            }
            Err(error) => return store_unavailable(&error),
        };
        let Ok(mut grant) = serde_json::from_value::<Grant>(record.value) else {
            return invalid_grant("the refresh token is not valid");
        };
        if grant.client_id != client_id {
            return invalid_grant("the refresh token was issued to another client");
        }
        let now = crate::env::now_ms();
        let in_force = keys::same(&presented, &grant.current);
        let in_grace = grant
            .previous
            .as_ref()
            .is_some_and(|previous| keys::same(&presented, previous))
            && now < grant.previous_until_ms;
        if !in_force && !in_grace {
            tracing::warn!(
                client_id,
                "a rotated refresh token was used again: its grant is revoked"
            );
            if let Err(error) = end_grant(server, grant_id, &grant).await {
                return store_unavailable(&error);
            }
            return invalid_grant(
                "the refresh token was already used; the authorization is revoked, log in again",
            );
        }
        let scopes = match &narrowed {
            None => grant.scopes.clone(),
            Some(asked) if asked.iter().all(|s| grant.scopes.contains(s)) => asked.clone(),
            Some(_) => {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_scope",
                    "a refresh may only narrow the scopes granted",
                );
            }
        };
        let secret = keys::random_token(32);
        if in_force {
            grant.previous = Some(grant.current.clone());
            grant.previous_until_ms = now + GRACE.as_millis() as u64;
        }
        grant.current = keys::hash(&secret);
        let replaced = server
            .store
            .replace(
                grant_key(grant_id),
                record.version,
                serde_json::to_value(&grant).expect("a grant serializes"),
                server.settings.grant_ttl,
            )
            .await;
        match replaced {
            Ok(true) => {
                if let Err(error) = server.keep_client(&client).await {
                    tracing::warn!(%error, "could not extend a client's registration");
                }
                let mut answer = access_token(
                    server,
                    client_id,
                    &grant.subject,
                    &scopes,
                    grant.upstream.as_deref(),
                );
                answer["refresh_token"] = json!(format!("{grant_id}.{secret}"));
                return private_json(StatusCode::OK, &answer);
            }
            Ok(false) => continue,
            Err(error) => return store_unavailable(&error),
        }
    }
    oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the grant is being refreshed concurrently; try again",
    )
}

fn spent_key(code: &str) -> String {
    format!("spent#{}", keys::hash(code))
}

/// A code the store does not hold: never issued, expired, or used already; used already, the
/// grant it made is ended, for whoever used it first may not have been its client.
async fn replayed_or_unknown(server: &AuthorizationServer, code: &str) -> Response<Bytes> {
    let spent = match server.store.get(spent_key(code)).await {
        Ok(spent) => spent,
        Err(error) => return store_unavailable(&error),
    };
    if let Some(grant_id) = spent
        .as_ref()
        .and_then(|s| s.value.get("grant"))
        .and_then(Value::as_str)
    {
        tracing::warn!("an authorization code was used twice: its grant is revoked");
        if let Ok(Some(record)) = server.store.get(grant_key(grant_id)).await
            && let Ok(grant) = serde_json::from_value::<Grant>(record.value)
            && let Err(error) = end_grant(server, grant_id, &grant).await
        {
            return store_unavailable(&error);
        }
        return invalid_grant("the code was used already; the authorization it made is revoked");
    }
    invalid_grant("the code is not valid: unknown, used already or expired")
}

/// `POST /oauth/revoke` (RFC 7009): a refresh token ends its grant; anything else is answered
/// 200 and changes nothing (an access token expires on its own).
pub(crate) async fn revoke(
    server: &AuthorizationServer,
    parts: &Parts,
    body: &[u8],
) -> Response<Bytes> {
    let form = match parameters(body) {
        Ok(form) => form,
        Err(why) => return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &why),
    };
    let Some(token) = form.get("token") else {
        return oauth_error(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "token is missing",
        );
    };
    let client_id = match client_id(parts, &form) {
        Ok(id) => id,
        Err(why) => return invalid_client(why),
    };
    let ok = || {
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CACHE_CONTROL, "no-store")
            .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
            .body(Bytes::new())
            .expect("static parts are valid")
    };
    let Some((grant_id, secret)) = token.split_once('.').filter(|_| token.len() <= 256) else {
        return ok();
    };
    if grant_id.contains('.') || secret.contains('.') {
        return ok();
    }
    let record = match server.store.get(grant_key(grant_id)).await {
        Ok(Some(record)) => record,
        Ok(None) => return ok(),
        Err(error) => return store_unavailable(&error),
    };
    let Ok(grant) = serde_json::from_value::<Grant>(record.value) else {
        return ok();
    };
    let presented = keys::hash(secret);
    let owns = keys::same(&presented, &grant.current)
        || grant
            .previous
            .as_ref()
            .is_some_and(|p| keys::same(&presented, p));
    if owns && client_id.as_deref().is_none_or(|id| id == grant.client_id) {
        if let Err(error) = end_grant(server, grant_id, &grant).await {
            return store_unavailable(&error);
        }
        tracing::info!(client_id = %grant.client_id, "grant revoked");
    }
    ok()
}

/// Ends a grant: its record, and the provider's tokens kept with it.
async fn end_grant(
    server: &AuthorizationServer,
    grant_id: &str,
    grant: &Grant,
) -> Result<(), super::store::StoreError> {
    server.store.delete(grant_key(grant_id)).await?;
    if let Some(reference) = &grant.upstream {
        server
            .store
            .delete(super::upstream_token::record_key(reference))
            .await?;
    }
    Ok(())
}
