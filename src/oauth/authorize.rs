//! The browser's way through: the authorization request checked and the consent page shown
//! (`GET /oauth/authorize`), the consent's answer (`POST /oauth/authorize`) sending the browser
//! to the upstream provider, and the provider's answer (`GET /oauth/callback`) sending it back
//! to the client with a code.
//!
//! Each step's record is single use and expires in ten minutes: the consent under way
//! (`consent#<id>`, its CSRF token kept as a hash and also set as a cookie, so only the
//! browser that loaded the page can answer it), the login under way (`login#<hash of the
//! upstream state>`, bound to the approving browser by a cookie that the callback requires:
//! consent given in one browser cannot complete a login in another), the grant made at the
//! callback (`grant#<id>`) and its code (`code#<hash>`, sixty seconds).
//!
//! Consent is asked every time: an approval is never remembered, so no one can ride an earlier
//! approval of the same client (a client id from a metadata document is public, and a
//! registration's id may be too).

use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header, request::Parts};
use serde::{Deserialize, Serialize};

use super::{
    AUTHORIZE_PATH, AuthorizationServer, cimd, cookie, error_page, html, keys, page, parameters,
    redirect,
    register::{self, Client, ClientError},
};

const FLOW_TTL: Duration = Duration::from_secs(600);
pub(crate) const CODE_TTL: Duration = Duration::from_secs(60);
/// The consent's CSRF cookie, one per consent page (`mcp-oauth-csrf-<request id's start>`), so
/// that a second tab does not overwrite the first's.
fn csrf_cookie(request_id: &str) -> String {
    let start: String = request_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .take(16)
        .collect();
    format!("mcp-oauth-csrf-{start}")
}
const LOGIN_COOKIE: &str = "mcp-oauth-login";
const MAX_STATE_BYTES: usize = 1024;

/// The authorization request, checked, while the person decides.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Pending {
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    /// The request named its redirect URI (then the token request must name it too).
    #[serde(default = "named")]
    pub(crate) redirect_uri_given: bool,
    pub(crate) state: Option<String>,
    pub(crate) code_challenge: String,
    pub(crate) scopes: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ConsentRecord {
    #[serde(flatten)]
    pending: Pending,
    csrf_hash: String,
}

#[derive(Debug, Serialize, Deserialize)]
struct LoginRecord {
    #[serde(flatten)]
    pending: Pending,
    verifier: String,
    nonce: String,
    binding_hash: String,
}

/// A grant: one person's authorization of one client, for as long as its refresh tokens are
/// used. Its refresh token is `<grant id>.<secret>`; only hashes of secrets are kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Grant {
    pub(crate) client_id: String,
    pub(crate) subject: String,
    pub(crate) scopes: Vec<String>,
    /// The hash of the refresh secret in force.
    pub(crate) current: String,
    /// Where the provider's tokens are kept (`MCP_OAUTH_UPSTREAM_TOKENS`).
    #[serde(default)]
    pub(crate) upstream: Option<String>,
    /// The one it replaced, honoured until `previous_until_ms` (an answer lost on the way).
    pub(crate) previous: Option<String>,
    pub(crate) previous_until_ms: u64,
}

fn named() -> bool {
    true
}

/// What a code stands for, until the token endpoint takes it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CodeRecord {
    pub(crate) grant_id: String,
    pub(crate) client_id: String,
    pub(crate) redirect_uri: String,
    #[serde(default = "named")]
    pub(crate) redirect_uri_given: bool,
    pub(crate) code_challenge: String,
    pub(crate) subject: String,
    pub(crate) scopes: Vec<String>,
    /// The grant's first refresh secret, sealed under a key derived from the code.
    pub(crate) refresh_sealed: String,
    /// Where the provider's tokens are kept.
    #[serde(default)]
    pub(crate) upstream: Option<String>,
}

pub(crate) fn grant_key(grant_id: &str) -> String {
    format!("grant#{grant_id}")
}

pub(crate) fn code_key(code: &str) -> String {
    format!("code#{}", keys::hash(code))
}

pub(crate) const REFRESH_PURPOSE: &[u8] = b"refresh token";

/// The client's redirect URI with `pairs` and RFC 9207 `iss` added to its query.
fn back_to_client(
    server: &AuthorizationServer,
    redirect_uri: &str,
    pairs: &[(&str, &str)],
    state: Option<&str>,
) -> Response<Bytes> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for (name, value) in pairs {
        query.append_pair(name, value);
    }
    if let Some(state) = state {
        query.append_pair("state", state);
    }
    query.append_pair("iss", &server.issuer);
    let separator = if redirect_uri.contains('?') { '&' } else { '?' };
    super::redirect(&format!("{redirect_uri}{separator}{}", query.finish()))
}

fn refuse_to_client(
    server: &AuthorizationServer,
    pending: &Pending,
    error: &str,
    description: &str,
) -> Response<Bytes> {
    back_to_client(
        server,
        &pending.redirect_uri,
        &[("error", error), ("error_description", description)],
        pending.state.as_deref(),
    )
}

fn store_error_page(error: &super::store::StoreError) -> Response<Bytes> {
    tracing::warn!(%error, "authorization server store unavailable");
    error_page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again shortly",
        "The server could not reach its store to record this authorization.",
    )
}

/// `GET /oauth/authorize`.
pub(crate) async fn authorize(server: &AuthorizationServer, parts: &Parts) -> Response<Bytes> {
    let query = parts.uri.query().unwrap_or("");
    let params = match parameters(query.as_bytes()) {
        Ok(params) => params,
        Err(why) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Invalid authorization request",
                &why,
            );
        }
    };
    let Some(client_id) = params.get("client_id") else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid authorization request",
            "The request names no client (client_id).",
        );
    };
    let client = match server.client(client_id).await {
        Ok(client) => client,
        Err(ClientError::Unknown) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Unknown application",
                "This application is not registered here, or its registration expired. Connect it again so that it registers anew.",
            );
        }
        Err(ClientError::Document(error)) => {
            tracing::info!(%error, "a client metadata document was refused");
            return error_page(
                StatusCode::BAD_REQUEST,
                "This application cannot be identified",
                &error.to_string(),
            );
        }
        Err(ClientError::Store(error)) => return store_error_page(&error),
    };
    let redirect_uri = match params.get("redirect_uri") {
        Some(uri) if redirect::matches(uri, &client.redirect_uris) => uri.clone(),
        Some(_) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Unregistered redirect address",
                "The application asked to send you back to an address it did not register.",
            );
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Invalid authorization request",
                "The request names no redirect_uri, and the application registered several.",
            );
        }
    };
    let state = params.get("state").cloned();
    if state.as_ref().is_some_and(|s| s.len() > MAX_STATE_BYTES) {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid authorization request",
            "The state parameter is too long.",
        );
    }
    // From here on the redirect URI is validated: refusals go back to the client.
    let mut pending = Pending {
        client_id: client.client_id.clone(),
        redirect_uri_given: params.contains_key("redirect_uri"),
        redirect_uri,
        state,
        code_challenge: String::new(),
        scopes: Vec::new(),
    };
    if params.get("response_type").map(String::as_str) != Some("code") {
        return refuse_to_client(
            server,
            &pending,
            "unsupported_response_type",
            "response_type must be code",
        );
    }
    match (
        params.get("code_challenge"),
        params.get("code_challenge_method").map(String::as_str),
    ) {
        (Some(challenge), Some("S256")) if is_challenge(challenge) => {
            pending.code_challenge = challenge.clone();
        }
        (Some(_), Some("S256")) => {
            return refuse_to_client(
                server,
                &pending,
                "invalid_request",
                "code_challenge must be the 43-character base64url SHA-256 of the verifier",
            );
        }
        (None, _) => {
            return refuse_to_client(
                server,
                &pending,
                "invalid_request",
                "PKCE is required: send code_challenge and code_challenge_method=S256",
            );
        }
        (Some(_), _) => {
            return refuse_to_client(
                server,
                &pending,
                "invalid_request",
                "code_challenge_method must be S256 (plain is refused)",
            );
        }
    }
    if let Err(why) = check_resource(server, params.get("resource")) {
        return refuse_to_client(server, &pending, "invalid_target", &why);
    }
    pending.scopes = match params.get("scope") {
        None => server.scopes.clone(),
        Some(scope) => {
            let asked: Vec<String> = scope.split_whitespace().map(str::to_string).collect();
            if let Some(unknown) = asked.iter().find(|s| !server.scopes.contains(s)) {
                let description = format!(
                    "scope {:?} is not one of this server's",
                    unknown.chars().take(60).collect::<String>()
                );
                return refuse_to_client(server, &pending, "invalid_scope", &description);
            }
            let mut asked = asked;
            asked.dedup();
            asked
        }
    };
    let request_id = keys::random_token(24);
    let csrf = keys::random_token(24);
    let record = ConsentRecord {
        pending,
        csrf_hash: keys::hash(&csrf),
    };
    let stored = server
        .store
        .create(
            format!("consent#{request_id}"),
            serde_json::to_value(&record).expect("a consent serializes"),
            FLOW_TTL,
        )
        .await;
    match stored {
        Ok(true) => {}
        Ok(false) => {
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "Reload this page.",
            );
        }
        Err(error) => return store_error_page(&error),
    }
    let page = page::consent(&page::Consent {
        client_name: client.shown_name(),
        client_id: &client.client_id,
        verified_domain: cimd::is_document_id(&client.client_id)
            .then(|| redirect::shown_host(&client.client_id))
            .as_deref(),
        redirect_host: &redirect::shown_host(&record.pending.redirect_uri),
        redirect_local_only: redirect::is_local_only(&record.pending.redirect_uri),
        scopes: &record.pending.scopes,
        server_name: server.issuer.split("://").nth(1).unwrap_or(&server.issuer),
        upstream_host: server
            .upstream
            .issuer()
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .unwrap_or(server.upstream.issuer()),
        action: AUTHORIZE_PATH,
        request: &request_id,
        csrf: &csrf,
    });
    let mut response = html(StatusCode::OK, page);
    response.headers_mut().append(
        header::SET_COOKIE,
        server.set_cookie(&csrf_cookie(&request_id), &csrf, FLOW_TTL.as_secs()),
    );
    response
}

/// 43 to 128 characters of the PKCE alphabet; an S256 challenge is exactly 43.
fn is_challenge(value: &str) -> bool {
    value.len() == 43
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// RFC 8707: the resource must be this server (required at the authorization endpoint).
pub(crate) fn check_resource(
    server: &AuthorizationServer,
    resource: Option<&String>,
) -> Result<(), String> {
    match resource {
        None => Err(format!(
            "name this server as the resource (RFC 8707): resource={}",
            server.resource
        )),
        Some(asked)
            if super::settings::canonical_resource(asked).as_deref()
                == Some(server.resource.as_str()) =>
        {
            Ok(())
        }
        Some(_) => Err(format!(
            "this authorization server issues tokens only for {}",
            server.resource
        )),
    }
}

/// `POST /oauth/authorize`: the consent page's answer.
pub(crate) async fn consent(
    server: &AuthorizationServer,
    parts: &Parts,
    body: &[u8],
) -> Response<Bytes> {
    let form = match parameters(body) {
        Ok(form) => form,
        Err(why) => return error_page(StatusCode::BAD_REQUEST, "Invalid answer", &why),
    };
    let (Some(request_id), Some(csrf)) = (form.get("request"), form.get("csrf")) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid answer",
            "The form was incomplete.",
        );
    };
    if request_id.len() > 64 {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid answer",
            "The form was altered.",
        );
    }
    // Single use: a second answer (a double click, a replay) finds nothing.
    let record = match server.store.take(format!("consent#{request_id}")).await {
        Ok(Some(record)) => record,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "This request has expired",
                "This authorization request was already answered, or it is more than ten minutes old.",
            );
        }
        Err(error) => return store_error_page(&error),
    };
    let Ok(record) = serde_json::from_value::<ConsentRecord>(record.value) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "This request has expired",
            "Start again.",
        );
    };
    let cookie_csrf = cookie(parts, &server.cookie_name(&csrf_cookie(request_id))).unwrap_or("");
    if !keys::same(cookie_csrf, csrf) || !keys::same(&keys::hash(csrf), &record.csrf_hash) {
        return error_page(
            StatusCode::FORBIDDEN,
            "This answer did not come from the consent page",
            "The approval was not sent by the browser that showed the consent page (its cookie is missing or differs). Start the connection again from the application.",
        );
    }
    let pending = record.pending;
    if form.get("decision").map(String::as_str) != Some("approve") {
        return refuse_to_client(
            server,
            &pending,
            "access_denied",
            "the person denied the authorization",
        );
    }
    let state = keys::random_token(32);
    let verifier = keys::random_token(48);
    let nonce = keys::random_token(24);
    let binding = keys::random_token(32);
    let url = match server
        .upstream
        .authorization_url(&state, &nonce, &keys::s256(&verifier))
        .await
    {
        Ok(url) => url,
        Err(error) => {
            tracing::warn!(%error, "cannot start a login at the identity provider");
            return refuse_to_client(
                server,
                &pending,
                "temporarily_unavailable",
                "the identity provider cannot be reached; try again shortly",
            );
        }
    };
    let login = LoginRecord {
        pending,
        verifier,
        nonce,
        binding_hash: keys::hash(&binding),
    };
    let stored = server
        .store
        .create(
            format!("login#{}", keys::hash(&state)),
            serde_json::to_value(&login).expect("a login serializes"),
            FLOW_TTL,
        )
        .await;
    match stored {
        Ok(true) => {}
        Ok(false) => {
            return error_page(StatusCode::SERVICE_UNAVAILABLE, "Try again", "Start again.");
        }
        Err(error) => return store_error_page(&error),
    }
    let mut response = super::redirect(&url);
    let headers = response.headers_mut();
    headers.append(
        header::SET_COOKIE,
        server.set_cookie(LOGIN_COOKIE, &binding, FLOW_TTL.as_secs()),
    );
    headers.append(
        header::SET_COOKIE,
        server.set_cookie(&csrf_cookie(request_id), "", 0),
    );
    response
}

/// `GET /oauth/callback`: the upstream provider's answer.
pub(crate) async fn callback(server: &AuthorizationServer, parts: &Parts) -> Response<Bytes> {
    let params = match parameters(parts.uri.query().unwrap_or("").as_bytes()) {
        Ok(params) => params,
        Err(why) => return error_page(StatusCode::BAD_REQUEST, "Invalid login answer", &why),
    };
    let Some(state) = params.get("state").filter(|s| s.len() <= 256) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid login answer",
            "The identity provider's answer has no usable state.",
        );
    };
    let record = match server
        .store
        .take(format!("login#{}", keys::hash(state)))
        .await
    {
        Ok(Some(record)) => record,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "This login has expired",
                "This login was already completed, its state was altered, or it is more than ten minutes old.",
            );
        }
        Err(error) => return store_error_page(&error),
    };
    let Ok(login) = serde_json::from_value::<LoginRecord>(record.value) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "This login has expired",
            "Start again.",
        );
    };
    let binding = cookie(parts, &server.cookie_name(LOGIN_COOKIE)).unwrap_or("");
    if !keys::same(&keys::hash(binding), &login.binding_hash) {
        return error_page(
            StatusCode::FORBIDDEN,
            "This login was approved in another browser",
            "The consent for this login was given in a different browser than the one that came back from the identity provider, so nothing is sent to the application. If you started this connection, start it again in this browser.",
        );
    }
    let pending = &login.pending;
    let Some(code) = params.get("code").filter(|c| c.len() <= 4096) else {
        let refused = params.get("error").map_or("no code", String::as_str);
        tracing::info!(
            error = %refused.chars().take(60).collect::<String>(),
            "the identity provider did not authorize the login"
        );
        return refuse_to_client(
            server,
            pending,
            "access_denied",
            "the login at the identity provider did not complete",
        );
    };
    let identity = match server
        .upstream
        .exchange(code, &login.verifier, &login.nonce)
        .await
    {
        Ok(identity) => identity,
        Err(error) => {
            tracing::warn!(%error, "login through the identity provider failed");
            let kind = match error {
                super::upstream::UpstreamError::Unavailable(_) => "temporarily_unavailable",
                _ => "access_denied",
            };
            return refuse_to_client(
                server,
                pending,
                kind,
                "the login at the identity provider could not be verified",
            );
        }
    };
    let upstream = if server.settings.keep_upstream_tokens {
        match server.keep_upstream_tokens(&identity.tokens).await {
            Ok(reference) => Some(reference),
            Err(error) => return store_error_page(&error),
        }
    } else {
        None
    };
    let grant_id = keys::random_token(18);
    let refresh_secret = keys::random_token(32);
    let code = keys::random_token(32);
    let grant = Grant {
        client_id: pending.client_id.clone(),
        subject: identity.subject.clone(),
        scopes: pending.scopes.clone(),
        current: keys::hash(&refresh_secret),
        upstream: upstream.clone(),
        previous: None,
        previous_until_ms: 0,
    };
    let code_record = CodeRecord {
        grant_id: grant_id.clone(),
        client_id: pending.client_id.clone(),
        redirect_uri: pending.redirect_uri.clone(),
        redirect_uri_given: pending.redirect_uri_given,
        code_challenge: pending.code_challenge.clone(),
        subject: identity.subject,
        scopes: pending.scopes.clone(),
        refresh_sealed: keys::seal(&code, REFRESH_PURPOSE, refresh_secret.as_bytes()),
        upstream,
    };
    let store = &server.store;
    let written = async {
        store
            .create(
                grant_key(&grant_id),
                serde_json::to_value(&grant).expect("a grant serializes"),
                server.settings.grant_ttl,
            )
            .await?;
        store
            .create(
                code_key(&code),
                serde_json::to_value(&code_record).expect("a code serializes"),
                CODE_TTL,
            )
            .await?;
        // Only a registration expires when unused: a document's or a configured client's id is
        // not looked up again (a document would be fetched again for nothing).
        if register::is_registered_id(&pending.client_id)
            && let Ok(client) = server.client(&pending.client_id).await
        {
            keep_client_quietly(server, &client).await;
        }
        Ok::<_, super::store::StoreError>(())
    }
    .await;
    if let Err(error) = written {
        return store_error_page(&error);
    }
    tracing::info!(client_id = %pending.client_id, "authorization granted");
    let mut response = back_to_client(
        server,
        &pending.redirect_uri,
        &[("code", &code)],
        pending.state.as_deref(),
    );
    response
        .headers_mut()
        .append(header::SET_COOKIE, server.set_cookie(LOGIN_COOKIE, "", 0));
    response
}

async fn keep_client_quietly(server: &AuthorizationServer, client: &Client) {
    if let Err(error) = server.keep_client(client).await {
        tracing::warn!(%error, "could not extend a client's registration");
    }
}
