//! RFC 9728 Protected Resource Metadata: where clients learn which
//! authorization server issues tokens for this server.

use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::json;

use super::AuthSettings;
use crate::http::errors::HttpResponse;

/// How long CloudFront and clients may cache the document.
const MAX_AGE_SECS: u32 = 3600;

/// The paths the document is served at: the root form and the one with the
/// MCP path inserted (clients try the latter first).
pub(crate) fn is_metadata_path(path: &str, mcp_path: &str) -> bool {
    path.strip_prefix("/.well-known/oauth-protected-resource")
        .is_some_and(|rest| rest.is_empty() || rest == mcp_path)
}

/// The metadata document as a cacheable GET response.
pub(crate) fn document(settings: &AuthSettings) -> HttpResponse {
    let body = json!({
        "resource": settings.audience,
        "authorization_servers": [settings.issuer],
        "scopes_supported": settings.scopes_supported,
        "bearer_methods_supported": ["header"],
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::CACHE_CONTROL,
            format!("public, max-age={MAX_AGE_SECS}"),
        )
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Full::new(bytes::Bytes::from(body.to_string())).boxed())
        .expect("valid response parts")
}
