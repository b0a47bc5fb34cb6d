//! The identity provider's tokens, for a tool that calls the provider's API as the person
//! (Microsoft Graph behind Entra ID, Google's APIs): [`UpstreamToken`], a tool argument.
//!
//! With `MCP_OAUTH_UPSTREAM_TOKENS=true` the login's token answer is kept with the grant, in
//! its own record (`upstream#<reference>`), sealed with AES-256-GCM under a key derived from the
//! signing key: whoever reads the table alone reads nothing. The access tokens this server
//! issues name the record (claim `upt`); the front hands the reference to the tool with the
//! request, and the tool asks for the provider's access token when it needs it: one read of the
//! record, and, once the provider's token has expired, its refresh at the provider and one
//! conditional write. The provider's tokens are never sent to the MCP client and never logged.

use std::{fmt, sync::Arc, time::Duration};

use rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use serde_json::{Value, json};
use thiserror::Error;

use super::{AuthorizationServer, keys, upstream::TokenSet};
use crate::request_scope;

/// The claim of an access token that names its grant's upstream tokens.
pub(crate) const CLAIM: &str = "upt";
const PURPOSE: &[u8] = b"upstream tokens";
/// A provider token this close to its expiry is refreshed first.
const EXPIRY_MARGIN_MS: u64 = 60_000;

pub(crate) fn record_key(reference: &str) -> String {
    format!("upstream#{reference}")
}

/// Where a request's upstream tokens are: left by the front for [`UpstreamToken`].
#[derive(Clone)]
pub(crate) struct UpstreamAccess {
    pub(crate) server: Arc<AuthorizationServer>,
    pub(crate) reference: String,
}

/// The provider's access token for the person calling, as a tool argument:
///
/// ```no_run
/// use mcp_lambda::oauth::UpstreamToken;
///
/// async fn my_tool(upstream: UpstreamToken) -> Result<String, String> {
///     let token = upstream.access_token().await.map_err(|e| e.to_string())?;
///     // e.g. GET https://graph.microsoft.com/v1.0/me with `Authorization: Bearer {token}`
///     Ok(format!("{} bytes of token", token.len()))
/// }
/// ```
///
/// In an rmcp `#[tool]` method, take it as an argument next to `Caller`:
/// `async fn profile(&self, upstream: UpstreamToken) -> …`.
#[derive(Clone)]
pub struct UpstreamToken {
    access: Option<UpstreamAccess>,
}

impl fmt::Debug for UpstreamToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamToken")
            .field("available", &self.access.is_some())
            .finish()
    }
}

/// Why the provider's token cannot be had.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum UpstreamTokenError {
    /// This request's token carries none: the built-in authorization server is off, it keeps no
    /// provider tokens (`MCP_OAUTH_UPSTREAM_TOKENS`), or the login predates that setting.
    #[error(
        "no identity-provider token comes with this request: the built-in authorization server must be on with MCP_OAUTH_UPSTREAM_TOKENS=true, and the person must log in again after it was turned on"
    )]
    NotKept,
    /// The grant ended (revoked or expired), or the provider's token expired and could not be
    /// refreshed: the person must log in again.
    #[error("the identity provider's token has expired and cannot be refreshed: log in again")]
    Expired,
    /// The store or the provider could not be reached; try again shortly.
    #[error("the identity provider's token is unavailable: {0}")]
    Unavailable(String),
}

impl From<UpstreamTokenError> for rmcp::ErrorData {
    fn from(error: UpstreamTokenError) -> Self {
        rmcp::ErrorData::internal_error(error.to_string(), None)
    }
}

impl UpstreamToken {
    /// The provider's access token, refreshed at the provider first when it has expired.
    ///
    /// # Errors
    ///
    /// [`UpstreamTokenError`]: none kept for this request, expired beyond refresh, or the store
    /// or provider unavailable.
    pub async fn access_token(&self) -> Result<String, UpstreamTokenError> {
        let access = self.access.as_ref().ok_or(UpstreamTokenError::NotKept)?;
        access.server.upstream_access_token(&access.reference).await
    }

    /// Whether this request comes with the provider's tokens.
    pub fn is_available(&self) -> bool {
        self.access.is_some()
    }
}

impl<C: AsRequestContext> FromContextPart<C> for UpstreamToken {
    fn from_context_part(context: &mut C) -> Result<Self, rmcp::ErrorData> {
        Ok(Self {
            access: request_scope::extension::<UpstreamAccess>(context.as_request_context())
                .cloned(),
        })
    }
}

impl AuthorizationServer {
    /// Seals and stores a login's provider tokens; the reference the access tokens will name.
    pub(crate) async fn keep_upstream_tokens(
        &self,
        tokens: &TokenSet,
    ) -> Result<String, super::store::StoreError> {
        let reference = keys::random_token(24);
        let sealed = self.seal_tokens(&reference, tokens);
        self.store
            .create(
                record_key(&reference),
                json!({ "sealed": sealed }),
                self.settings.grant_ttl,
            )
            .await?;
        Ok(reference)
    }

    fn seal_tokens(&self, reference: &str, tokens: &TokenSet) -> String {
        let secret = self
            .keys
            .sealing_secrets()
            .next()
            .expect("there is always a signing key");
        let plain = serde_json::to_vec(tokens).expect("tokens serialize");
        keys::seal(&format!("{secret}.{reference}"), PURPOSE, &plain)
    }

    fn open_tokens(&self, reference: &str, sealed: &str) -> Option<TokenSet> {
        self.keys.sealing_secrets().find_map(|secret| {
            keys::open(&format!("{secret}.{reference}"), PURPOSE, sealed)
                .and_then(|plain| serde_json::from_slice(&plain).ok())
        })
    }

    async fn upstream_access_token(&self, reference: &str) -> Result<String, UpstreamTokenError> {
        let unavailable = |e: &dyn fmt::Display| UpstreamTokenError::Unavailable(e.to_string());
        for _ in 0..3 {
            let record = self
                .store
                .get(record_key(reference))
                .await
                .map_err(|e| unavailable(&e))?
                .ok_or(UpstreamTokenError::Expired)?;
            let tokens = record
                .value
                .get("sealed")
                .and_then(Value::as_str)
                .and_then(|sealed| self.open_tokens(reference, sealed))
                // Sealed under a key no longer configured: as good as gone.
                .ok_or(UpstreamTokenError::Expired)?;
            let now = crate::env::now_ms();
            if tokens
                .expires_at_ms
                .is_none_or(|at| now + EXPIRY_MARGIN_MS < at)
            {
                return Ok(tokens.access_token);
            }
            let refresh_token = tokens
                .refresh_token
                .as_deref()
                .ok_or(UpstreamTokenError::Expired)?;
            let fresh = match self.upstream.refresh(refresh_token).await {
                Ok(fresh) => fresh,
                Err(super::upstream::UpstreamError::Unavailable(why)) => {
                    return Err(UpstreamTokenError::Unavailable(why));
                }
                Err(error) => {
                    tracing::info!(%error, "the identity provider refused to refresh a person's token");
                    return Err(UpstreamTokenError::Expired);
                }
            };
            let sealed = self.seal_tokens(reference, &fresh);
            let replaced = self
                .store
                .replace(
                    record_key(reference),
                    record.version,
                    json!({ "sealed": sealed }),
                    self.settings.grant_ttl,
                )
                .await
                .map_err(|e| unavailable(&e))?;
            if replaced {
                return Ok(fresh.access_token);
            }
            // Another instance refreshed it meanwhile: read what it stored.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(UpstreamTokenError::Unavailable(
            "the token is being refreshed concurrently; try again".into(),
        ))
    }
}

/// The reference an access token names, from its (already verified) payload.
pub(crate) fn reference_in(bearer: &str) -> Option<String> {
    use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
    let payload = bearer.split('.').nth(1)?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    claims
        .get(CLAIM)
        .and_then(Value::as_str)
        .filter(|r| r.len() <= 64)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        env::Env,
        oauth::{MemoryOAuthStore, OAuthSettings, OAuthStore},
    };

    fn server(store: Arc<dyn OAuthStore>) -> AuthorizationServer {
        let lookup = |name: &str| {
            match name {
                "MCP_OAUTH_UPSTREAM_ISSUER" => Some("https://idp.example.com"),
                "MCP_OAUTH_UPSTREAM_CLIENT_ID" => Some("facade"),
                "MCP_OAUTH_UPSTREAM_CLIENT_SECRET" => Some("secret"),
                "MCP_AUTH_AUDIENCE" => Some("https://mcp.example.com/mcp"),
                "MCP_OAUTH_UPSTREAM_TOKENS" => Some("true"),
                _ => None,
            }
            .map(str::to_string)
        };
        let settings = OAuthSettings::from_env(&Env::new(&lookup))
            .unwrap()
            .unwrap();
        AuthorizationServer::new(&settings, "/mcp", Vec::new(), store, &[])
    }

    #[tokio::test]
    async fn the_store_alone_reveals_no_provider_token() {
        let store: Arc<dyn OAuthStore> = Arc::new(MemoryOAuthStore::default());
        let ours = server(store.clone());
        let tokens = TokenSet {
            access_token: "provider-access-token-XYZ".into(),
            refresh_token: Some("provider-refresh-token-XYZ".into()),
            expires_at_ms: Some(crate::env::now_ms() + 3_600_000),
        };
        let reference = ours.keep_upstream_tokens(&tokens).await.unwrap();
        let stored = store.get(record_key(&reference)).await.unwrap().unwrap();
        let text = stored.value.to_string();
        assert!(!text.contains("XYZ"), "{text}");
        // This server opens it; another (another signing key) does not.
        assert_eq!(
            ours.upstream_access_token(&reference).await.unwrap(),
            "provider-access-token-XYZ"
        );
        let theirs = server(store.clone());
        assert!(matches!(
            theirs.upstream_access_token(&reference).await,
            Err(UpstreamTokenError::Expired)
        ));
        assert!(matches!(
            ours.upstream_access_token("unknown").await,
            Err(UpstreamTokenError::Expired)
        ));
    }

    #[test]
    fn the_reference_is_read_from_the_tokens_payload() {
        use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
        let payload = URL_SAFE_NO_PAD.encode(json!({"sub": "ada", "upt": "ref-1"}).to_string());
        assert_eq!(
            reference_in(&format!("h.{payload}.s")).as_deref(),
            Some("ref-1")
        );
        let none = URL_SAFE_NO_PAD.encode(json!({"sub": "ada"}).to_string());
        assert_eq!(reference_in(&format!("h.{none}.s")), None);
        assert_eq!(reference_in("not a jwt"), None);
    }
}
