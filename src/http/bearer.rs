//! The auth step: the bearer token checked by [`Authenticator`] (which decides)
//! and its refusal worded for HTTP here: an [`AuthChallenge`], 401 or 403 with the
//! RFC 6750 `WWW-Authenticate` challenge pointing at the RFC 9728 metadata.

use std::time::Duration;

use http::{HeaderValue, Response, StatusCode, header, request::Parts};
use http_body_util::{BodyExt, Full};
use serde_json::json;

use super::refusal::{AuthChallenge, HttpResponse, Rejection};
use crate::auth::{Authenticator, Challenge, Principal, Refusal, metadata};
use crate::logging::Sampled;

/// Authenticates the request for `method`/`name`: its principal, `None` for a method that
/// needs no token.
pub(crate) async fn authorize(
    auth: &Authenticator,
    parts: &Parts,
    method: &str,
    name: Option<&str>,
) -> Result<Option<Principal>, Rejection> {
    match auth
        .authorize(&parts.headers, &parts.uri, method, name)
        .await
    {
        Ok(principal) => Ok(principal),
        Err(refusal) => {
            // Anyone can cause this: one line per 10 s at most (metrics count them all).
            static REFUSALS: Sampled = Sampled::per(Duration::from_secs(10));
            if let Some(held_back) = REFUSALS.allow() {
                tracing::info!(challenge = ?refusal.challenge, held_back, "request refused by auth");
            }
            if refusal.challenge == Challenge::Unavailable {
                return Err(Rejection::Unavailable(
                    "the authorization server could not check the token; try again shortly".into(),
                ));
            }
            Err(Rejection::Unauthorized(challenge(auth, &refusal)))
        }
    }
}

/// The refusal as the client is told it: status, `WWW-Authenticate` challenge, error body.
fn challenge(auth: &Authenticator, refusal: &Refusal) -> AuthChallenge {
    let settings = auth.settings();
    let scope = if refusal.required_scopes.is_empty() {
        settings.scopes_supported.join(" ")
    } else {
        refusal.required_scopes.join(" ")
    };
    let (status, error, description) = match &refusal.challenge {
        Challenge::Missing => (
            StatusCode::UNAUTHORIZED,
            None,
            "a bearer token is required".to_string(),
        ),
        Challenge::InvalidRequest(why) => (
            StatusCode::UNAUTHORIZED,
            Some("invalid_request"),
            why.to_string(),
        ),
        Challenge::InvalidToken(why) => (
            StatusCode::UNAUTHORIZED,
            Some("invalid_token"),
            why.to_string(),
        ),
        // Answered as 503 by `authorize`, before a challenge is built.
        Challenge::Unavailable => (
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "the authorization server could not check the token".to_string(),
        ),
        Challenge::InsufficientScope => (
            StatusCode::FORBIDDEN,
            Some("insufficient_scope"),
            format!("this operation needs the scopes: {scope}"),
        ),
    };
    let metadata_url = auth.metadata_url();
    let mut value = String::from("Bearer ");
    if let Some(error) = error {
        value.push_str(&format!("error=\"{error}\", "));
    }
    if !scope.is_empty() {
        value.push_str(&format!("scope=\"{scope}\", "));
    }
    value.push_str(&format!("resource_metadata=\"{metadata_url}\""));
    if error.is_some() {
        // Quotes and backslashes cannot appear: descriptions are our own text.
        value.push_str(&format!(
            ", error_description=\"{}\"",
            description.replace(['"', '\\'], "'")
        ));
    }
    let body = json!({
        "error": error.unwrap_or("unauthorized"),
        "error_description": description,
        "resource_metadata": metadata_url,
    });
    AuthChallenge {
        status,
        www_authenticate: HeaderValue::from_str(&value)
            .unwrap_or_else(|_| HeaderValue::from_static("Bearer")),
        body,
    }
}

/// The RFC 9728 metadata document as a cacheable GET response.
pub(crate) fn metadata_response(auth: &Authenticator) -> HttpResponse {
    let body = metadata::document(auth.settings());
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(
            header::CACHE_CONTROL,
            format!("public, max-age={}", metadata::MAX_AGE_SECS),
        )
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Full::new(bytes::Bytes::from(body.to_string())).boxed())
        .expect("valid response parts")
}
