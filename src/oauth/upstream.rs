//! The identity provider people log in with: its discovery document (read at the first login,
//! kept an hour), the authorization URL a consent sends the browser to (with this server's own
//! PKCE pair, `state` and `nonce`), the code exchanged at its token endpoint as a confidential
//! client, and its ID token verified (signature by its JWKS, `iss`, `aud`, `nonce`, `exp`).
//!
//! Nothing here runs at start-up or on an MCP request: only a login reaches the upstream.

use std::{
    sync::RwLock,
    time::{Duration, Instant},
};

use base64::{Engine as _, engine::general_purpose::STANDARD};
use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt as _, Full, Limited};
use serde_json::Value;
use thiserror::Error;

use super::settings::UpstreamSettings;
use crate::auth::{IssuerClient, Jwk, parse_jws, verified_claims};

const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
/// ID tokens are checked with this much clock skew.
const LEEWAY_SECS: f64 = 60.0;

/// Why a login through the upstream failed. The messages are for the log and the error page:
/// they name no secret and no token.
#[derive(Debug, Error)]
pub(crate) enum UpstreamError {
    /// The provider could not be reached or answered nonsense.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
    /// The provider refused the exchange (a wrong client secret, an expired code).
    #[error("the identity provider refused the login: {0}")]
    Refused(String),
    /// The ID token did not verify.
    #[error("the identity provider's ID token is not valid: {0}")]
    IdToken(String),
}

/// What the provider's discovery document says, as far as this server needs it.
#[derive(Debug, Clone)]
struct Discovery {
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    /// `client_secret_basic` is offered (else `client_secret_post`).
    basic_auth: bool,
}

/// The person who logged in, and what the provider gave for them.
#[derive(Debug)]
pub(crate) struct Identity {
    /// The ID token's `sub`.
    pub(crate) subject: String,
    /// The provider's tokens, for tools that call its API as the person.
    pub(crate) tokens: TokenSet,
}

/// The provider's tokens for one person. `Debug` shows none of them.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct TokenSet {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    /// When the access token expires (epoch milliseconds); `None` = the provider did not say.
    pub(crate) expires_at_ms: Option<u64>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at_ms", &self.expires_at_ms)
            .finish_non_exhaustive()
    }
}

impl TokenSet {
    /// The token answer's `access_token`, `refresh_token` and `expires_in`.
    fn from_answer(answer: &Value, previous_refresh: Option<&str>) -> Option<Self> {
        let access_token = answer.get("access_token")?.as_str()?.to_string();
        Some(Self {
            access_token,
            // A provider that does not rotate its refresh tokens answers none: keep the one used.
            refresh_token: answer
                .get("refresh_token")
                .and_then(Value::as_str)
                .or(previous_refresh)
                .map(str::to_string),
            expires_at_ms: answer
                .get("expires_in")
                .and_then(Value::as_u64)
                .map(|secs| crate::env::now_ms() + secs * 1000),
        })
    }
}

/// The upstream provider's client.
pub(crate) struct Upstream {
    settings: UpstreamSettings,
    /// Where the provider sends the browser back: `<issuer>/oauth/callback`.
    callback: String,
    /// Sends a request once more on a new connection when a pooled one was lost before any
    /// answer (a connection the network forgot while the function was frozen).
    client: IssuerClient<Full<Bytes>>,
    discovery: RwLock<Option<(Discovery, Instant)>>,
    keys: RwLock<Vec<Jwk>>,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("issuer", &self.settings.issuer)
            .field("callback", &self.callback)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    pub(crate) fn new(
        settings: UpstreamSettings,
        callback: String,
        extra_roots: &[Vec<u8>],
    ) -> Self {
        Self {
            settings,
            callback,
            client: IssuerClient::new(extra_roots),
            discovery: RwLock::new(None),
            keys: RwLock::new(Vec::new()),
        }
    }

    pub(crate) fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// The URL that starts a login at the provider.
    pub(crate) async fn authorization_url(
        &self,
        state: &str,
        nonce: &str,
        code_challenge: &str,
    ) -> Result<String, UpstreamError> {
        let discovery = self.discovery().await?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", &self.callback)
            .append_pair("scope", &self.settings.scopes.join(" "))
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", code_challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        let separator = if discovery.authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        Ok(format!(
            "{}{separator}{query}",
            discovery.authorization_endpoint
        ))
    }

    /// Exchanges the provider's code and verifies its ID token against `nonce`.
    pub(crate) async fn exchange(
        &self,
        code: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<Identity, UpstreamError> {
        let discovery = self.discovery().await?;
        // The serializer is not `Send`: it lives in this block, before any await.
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "authorization_code")
                .append_pair("code", code)
                .append_pair("redirect_uri", &self.callback)
                .append_pair("code_verifier", verifier);
            form.finish()
        };
        let request = self.token_request(&discovery, form)?;
        let (status, answer) = self.send(request, &discovery.token_endpoint).await?;
        if !status.is_success() {
            let error = answer
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no error code");
            return Err(UpstreamError::Refused(format!(
                "its token endpoint answered {status} ({})",
                error.chars().take(100).collect::<String>()
            )));
        }
        let tokens = TokenSet::from_answer(&answer, None)
            .ok_or_else(|| UpstreamError::Refused("the token answer has no access_token".into()))?;
        let id_token = answer
            .get("id_token")
            .and_then(Value::as_str)
            .ok_or_else(|| UpstreamError::IdToken("the token answer has no id_token".into()))?;
        let claims = self.verify_id_token(id_token, &discovery).await?;
        let string = |name: &str| claims.get(name).and_then(Value::as_str);
        if string("iss") != Some(self.settings.issuer.as_str()) {
            return Err(UpstreamError::IdToken(format!(
                "iss is not {}",
                self.settings.issuer
            )));
        }
        let audience_ok = match claims.get("aud") {
            Some(Value::String(aud)) => *aud == self.settings.client_id,
            Some(Value::Array(auds)) => auds
                .iter()
                .any(|a| a.as_str() == Some(self.settings.client_id.as_str())),
            _ => false,
        };
        if !audience_ok {
            return Err(UpstreamError::IdToken(
                "aud does not name this server's client".into(),
            ));
        }
        if !string("nonce").is_some_and(|n| super::keys::same(n, nonce)) {
            return Err(UpstreamError::IdToken(
                "nonce does not match this login".into(),
            ));
        }
        let now = crate::env::now_ms() as f64 / 1000.0;
        match claims.get("exp").and_then(Value::as_f64) {
            Some(exp) if now <= exp + LEEWAY_SECS => {}
            _ => return Err(UpstreamError::IdToken("expired or without exp".into())),
        }
        let subject = string("sub")
            .filter(|s| !s.is_empty() && s.len() <= 255)
            .ok_or_else(|| UpstreamError::IdToken("no usable sub".into()))?;
        Ok(Identity {
            subject: subject.to_string(),
            tokens,
        })
    }

    /// New tokens for `refresh_token` (the provider's `refresh_token` grant).
    pub(crate) async fn refresh(&self, refresh_token: &str) -> Result<TokenSet, UpstreamError> {
        let discovery = self.discovery().await?;
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "refresh_token")
                .append_pair("refresh_token", refresh_token);
            form.finish()
        };
        let request = self.token_request(&discovery, form)?;
        let (status, answer) = self.send(request, &discovery.token_endpoint).await?;
        if !status.is_success() {
            return Err(UpstreamError::Refused(format!(
                "its token endpoint answered {status} to a refresh"
            )));
        }
        TokenSet::from_answer(&answer, Some(refresh_token))
            .ok_or_else(|| UpstreamError::Refused("the refresh answer has no access_token".into()))
    }

    /// A POST of `form` to the token endpoint, authenticated as this server's client.
    fn token_request(
        &self,
        discovery: &Discovery,
        mut form: String,
    ) -> Result<Request<Full<Bytes>>, UpstreamError> {
        let mut request = Request::post(&discovery.token_endpoint)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json");
        if discovery.basic_auth {
            // RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
            let encode =
                |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let credentials = format!(
                "{}:{}",
                encode(&self.settings.client_id),
                encode(&self.settings.client_secret)
            );
            request = request.header(
                header::AUTHORIZATION,
                format!("Basic {}", STANDARD.encode(credentials)),
            );
        } else {
            let secret = form_urlencoded::Serializer::new(String::new())
                .append_pair("client_id", &self.settings.client_id)
                .append_pair("client_secret", &self.settings.client_secret)
                .finish();
            form = format!("{form}&{secret}");
        }
        request
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| UpstreamError::Unavailable(e.to_string()))
    }

    async fn verify_id_token(
        &self,
        id_token: &str,
        discovery: &Discovery,
    ) -> Result<serde_json::Map<String, Value>, UpstreamError> {
        let token =
            parse_jws(id_token, 64 * 1024).map_err(|e| UpstreamError::IdToken(e.to_string()))?;
        let known = self.keys.read().expect("keys lock").clone();
        match verified_claims(&token, &known) {
            Ok(claims) => return Ok(claims),
            Err(crate::auth::TokenError::UnknownKey) => {}
            Err(other) => return Err(UpstreamError::IdToken(other.to_string())),
        }
        // A key not seen yet: the provider rotated, or this is the first login.
        let document = self.get_json(&discovery.jwks_uri).await?;
        let keys: Vec<Jwk> = document
            .get("keys")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Jwk::from_json).collect())
            .unwrap_or_default();
        let claims =
            verified_claims(&token, &keys).map_err(|e| UpstreamError::IdToken(e.to_string()));
        *self.keys.write().expect("keys lock") = keys;
        claims
    }

    async fn discovery(&self) -> Result<Discovery, UpstreamError> {
        if let Some((discovery, at)) = &*self.discovery.read().expect("discovery lock")
            && at.elapsed() < DISCOVERY_TTL
        {
            return Ok(discovery.clone());
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            self.settings.issuer.trim_end_matches('/')
        );
        let document = self.get_json(&url).await?;
        let member = |name: &str| {
            document
                .get(name)
                .and_then(Value::as_str)
                // An https provider's endpoints are https: the client secret and the codes
                // never cross the network in the clear (http only for a provider on http, as
                // a local stand-in is).
                .filter(|v| {
                    v.starts_with("https://")
                        || (v.starts_with("http://") && self.settings.issuer.starts_with("http://"))
                })
                .map(str::to_string)
                .ok_or_else(|| UpstreamError::Unavailable(format!("{url} names no {name}")))
        };
        if document.get("issuer").and_then(Value::as_str) != Some(self.settings.issuer.as_str()) {
            return Err(UpstreamError::Unavailable(format!(
                "{url} is for another issuer than {} (check MCP_OAUTH_UPSTREAM_ISSUER: it must equal the provider's issuer exactly)",
                self.settings.issuer
            )));
        }
        let methods: Vec<&str> = document
            .get("token_endpoint_auth_methods_supported")
            .and_then(Value::as_array)
            .map(|m| m.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let discovery = Discovery {
            authorization_endpoint: member("authorization_endpoint")?,
            token_endpoint: member("token_endpoint")?,
            jwks_uri: member("jwks_uri")?,
            // OIDC Discovery: absent means client_secret_basic.
            basic_auth: methods.is_empty() || methods.contains(&"client_secret_basic"),
        };
        *self.discovery.write().expect("discovery lock") =
            Some((discovery.clone(), Instant::now()));
        Ok(discovery)
    }

    async fn get_json(&self, url: &str) -> Result<Value, UpstreamError> {
        let request = Request::get(url)
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|_| UpstreamError::Unavailable(format!("{url} is not a valid URL")))?;
        let (status, document) = self.send(request, url).await?;
        if !status.is_success() {
            return Err(UpstreamError::Unavailable(format!(
                "{url} answered {status}"
            )));
        }
        Ok(document)
    }

    /// Sends `request` and reads its JSON answer. A GET is sent again on a new connection when a
    /// pooled one was lost before any answer; a POST (the token endpoint's grants, which must
    /// not apply twice) goes once, on a new connection.
    async fn send(
        &self,
        request: Request<Full<Bytes>>,
        url: &str,
    ) -> Result<(http::StatusCode, Value), UpstreamError> {
        let unavailable = |why: String| UpstreamError::Unavailable(format!("{url}: {why}"));
        let sent = if request.method() == http::Method::POST {
            futures::future::Either::Left(self.client.send_once(request))
        } else {
            futures::future::Either::Right(self.client.send(request))
        };
        let response = tokio::time::timeout(FETCH_TIMEOUT, sent)
            .await
            .map_err(|_| unavailable(format!("no answer within {FETCH_TIMEOUT:?}")))?
            .map_err(|e| unavailable(e.to_string()))?;
        let status = response.status();
        let body = tokio::time::timeout(
            FETCH_TIMEOUT,
            Limited::new(response.into_body(), MAX_DOCUMENT_BYTES).collect(),
        )
        .await
        .map_err(|_| unavailable(format!("its body did not finish within {FETCH_TIMEOUT:?}")))?
        .map_err(|e| unavailable(e.to_string()))?
        .to_bytes();
        let document = serde_json::from_slice(&body).unwrap_or(Value::Null);
        Ok((status, document))
    }
}
