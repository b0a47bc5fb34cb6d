//! Bearer-token authentication and scope decisions for each MCP request.
//!
//! Runs after the envelope checks, so the method and tool name it decides on
//! are the body's own — the `Mcp-Method`/`Mcp-Name` headers were already
//! required to equal them, and cannot be used to dodge a scope check.

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Uri, header};

use super::{
    AuthSettings, Principal,
    introspection::{Failure, Introspector},
    jwks::Jwks,
    jwt::{self, TokenError},
    token_cache::VerifiedTokens,
};

/// Verifies bearer tokens locally and decides scopes.
#[derive(Debug)]
pub struct Authenticator {
    settings: Arc<AuthSettings>,
    jwks: Jwks,
    verified: VerifiedTokens,
    /// Opaque tokens' introspection, when configured.
    introspector: Option<Introspector>,
    metadata_url: String,
}

/// A refused request: why, and the scopes the operation needs (for the challenge).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Why.
    pub challenge: Challenge,
    /// The scopes the operation needs; empty when a valid token is enough.
    pub required_scopes: Vec<String>,
}

/// Why a request was refused: 401 or 403 with `WWW-Authenticate`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Challenge {
    /// No token (401, no `error`).
    Missing,
    /// A token in the query string, repeated headers or a non-Bearer scheme (401, `invalid_request`).
    InvalidRequest(&'static str),
    /// The token failed verification (401, `invalid_token`).
    InvalidToken(TokenError),
    /// Valid token, missing scopes (403, `insufficient_scope`).
    InsufficientScope,
    /// The token could not be checked: the issuer's introspection endpoint is down or
    /// answered something unreadable (503 with `Retry-After`; never a pass).
    Unavailable,
}

impl Authenticator {
    /// Builds the authenticator; no I/O until [`warm`](Self::warm) or the first token.
    pub fn new(settings: Arc<AuthSettings>) -> Self {
        let jwks = Jwks::new(&settings);
        let metadata_url = settings.metadata_url();
        let introspector = settings
            .introspection
            .as_ref()
            .map(|introspection| Introspector::new(introspection, &settings.extra_roots));
        Self {
            settings,
            jwks,
            verified: VerifiedTokens::default(),
            introspector,
            metadata_url,
        }
    }

    /// Loads the JWKS now, so the TLS handshake and the fetch land in Lambda
    /// INIT rather than in the first request.
    pub async fn warm(&self) {
        self.jwks.warm().await;
    }

    /// The settings in force.
    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Authenticates one request for `method` (and `name` for `tools/call`).
    /// `Ok(None)`: no token needed and none sent (`server/discover` by default).
    pub async fn authorize(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        method: &str,
        name: Option<&str>,
    ) -> Result<Option<Principal>, Refusal> {
        let required = self.settings.required_scopes(method, name);
        let refuse = |challenge| Refusal {
            challenge,
            required_scopes: required.clone(),
        };
        if uri
            .query()
            .is_some_and(|q| q.split('&').any(|pair| pair.starts_with("access_token=")))
        {
            return Err(refuse(Challenge::InvalidRequest(
                "tokens are accepted only in the Authorization header",
            )));
        }
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let token = match (values.next(), values.next()) {
            (None, _) => {
                if method == "server/discover" && !self.settings.discover_requires_token {
                    return Ok(None);
                }
                return Err(refuse(Challenge::Missing));
            }
            (Some(_), Some(_)) => {
                return Err(refuse(Challenge::InvalidRequest(
                    "send one Authorization header",
                )));
            }
            (Some(value), None) => {
                bearer_token(value, self.settings.max_token_bytes).map_err(&refuse)?
            }
        };
        let (now, leeway) = (jwt::now_secs(), self.settings.leeway.as_secs_f64());
        if let Some(introspector) = &self.introspector
            && !jwt::looks_like_jws(token)
        {
            let principal = introspector
                .principal(token, &self.jwks, &self.settings, now)
                .await
                .map_err(|failure| match failure {
                    Failure::Refused(why) => refuse(Challenge::InvalidToken(why)),
                    Failure::Unavailable(why) => {
                        // The issuer's words (URL, status) are for the operator; one line per
                        // 10 s at most, as any client can send opaque tokens.
                        static DOWN: crate::logging::Sampled =
                            crate::logging::Sampled::per(std::time::Duration::from_secs(10));
                        if let Some(held_back) = DOWN.allow() {
                            tracing::warn!(error = %why, held_back, "token introspection failed; answering 503");
                        }
                        refuse(Challenge::Unavailable)
                    }
                })?;
            return self.decide_scopes(principal, &required, &refuse);
        }
        let principal = match self
            .verified
            .get(token, self.jwks.generation(), now, leeway)
        {
            Some(verified) => verified.principal,
            None => {
                // The generation before verifying: a refresh during it starts the cache over.
                let generation = self.jwks.generation();
                let verified = self
                    .verify(token)
                    .await
                    .map_err(|e| refuse(Challenge::InvalidToken(e)))?;
                let principal = verified.principal.clone();
                self.verified
                    .insert(token, verified, generation, now, leeway);
                principal
            }
        };
        self.decide_scopes(principal, &required, &refuse)
    }

    /// The principal, if it holds every scope the operation needs.
    fn decide_scopes(
        &self,
        principal: Principal,
        required: &[String],
        refuse: &impl Fn(Challenge) -> Refusal,
    ) -> Result<Option<Principal>, Refusal> {
        if !required.iter().all(|s| principal.has_scope(s)) {
            return Err(refuse(Challenge::InsufficientScope));
        }
        Ok(Some(principal))
    }

    /// Full verification: parse, find the key (refreshing the JWKS for an
    /// unknown `kid`, rate-limited), check the signature and the claims.
    async fn verify(&self, token: &str) -> Result<jwt::Verified, TokenError> {
        let parsed = jwt::parse(token, self.settings.max_token_bytes)?;
        let mut keys = self.jwks.current();
        if !jwt::has_key(&parsed, &keys) {
            // Any token can name any key: one line per 10 s at most.
            static UNKNOWN_KEYS: crate::logging::Sampled =
                crate::logging::Sampled::per(std::time::Duration::from_secs(10));
            if let Some(held_back) = UNKNOWN_KEYS.allow() {
                tracing::warn!(kid = ?parsed.kid.as_deref().map(|k| k.chars().take(64).collect::<String>()), held_back, "unknown signing key; refreshing JWKS");
            }
            keys = self.jwks.refresh().await;
        }
        jwt::verify(&parsed, &keys, &self.settings)
    }

    /// The RFC 9728 metadata URL that challenges point clients to.
    pub fn metadata_url(&self) -> &str {
        &self.metadata_url
    }
}

/// The token of an `Authorization: Bearer <token>` value (scheme case-insensitive).
fn bearer_token(value: &HeaderValue, max_bytes: usize) -> Result<&str, Challenge> {
    // Checked before anything else reads it: a 10 MB header costs nothing more.
    if value.len() > max_bytes + 16 {
        return Err(Challenge::InvalidToken(TokenError::TooLarge(max_bytes)));
    }
    let value = value
        .to_str()
        .map_err(|_| Challenge::InvalidToken(TokenError::Malformed))?;
    let (scheme, token) = value.split_once(' ').ok_or(Challenge::InvalidRequest(
        "use the Bearer scheme: Authorization: Bearer <token>",
    ))?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Challenge::InvalidRequest(
            "use the Bearer scheme: Authorization: Bearer <token>",
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(Challenge::InvalidToken(TokenError::Malformed));
    }
    Ok(token)
}
