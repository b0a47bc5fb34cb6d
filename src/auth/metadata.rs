//! RFC 9728 Protected Resource Metadata: where clients learn which
//! authorization server issues tokens for this server.

use serde_json::{Value, json};

use super::AuthSettings;

/// How long CloudFront and clients may cache the document, in seconds.
pub const MAX_AGE_SECS: u32 = 3600;

/// The paths the document is served at: the root form and the one with the
/// MCP path inserted (clients try the latter first).
pub fn is_metadata_path(path: &str, mcp_path: &str) -> bool {
    path.strip_prefix("/.well-known/oauth-protected-resource")
        .is_some_and(|rest| rest.is_empty() || rest == mcp_path)
}

/// The metadata document (the HTTP front serves it with `Cache-Control` for
/// [`MAX_AGE_SECS`]).
///
/// ```
/// let config = mcp_lambda::Config::from_lookup(|n| match n {
///     "MCP_AUTH_ISSUER" => Some("https://auth.example.com".into()),
///     "MCP_AUTH_AUDIENCE" => Some("https://mcp.example.com/mcp".into()),
///     _ => None,
/// })
/// .unwrap();
/// let document = mcp_lambda::auth::metadata::document(config.auth.as_ref().unwrap());
/// assert_eq!(document["authorization_servers"][0], "https://auth.example.com");
/// ```
pub fn document(settings: &AuthSettings) -> Value {
    json!({
        "resource": settings.audience,
        "authorization_servers": [settings.issuer],
        "scopes_supported": settings.scopes_supported,
        "bearer_methods_supported": ["header"],
    })
}
