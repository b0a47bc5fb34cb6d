//! CORS for browser MCP clients: an allowed `Origin` is echoed, and
//! `WWW-Authenticate` is exposed so a browser can start the OAuth flow.

use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::refusal::{HttpResponse, text_response};

/// Whether `origin` matches an allow-list entry: `scheme://host:port`
/// exactly, `scheme://host:*` on any port, or `null`.
pub(crate) fn origin_allowed(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    allowed.iter().any(|entry| {
        if let Some(prefix) = entry.strip_suffix(":*") {
            origin == prefix
                || origin
                    .strip_prefix(prefix)
                    .and_then(|rest| rest.strip_prefix(':'))
                    .is_some_and(|port| {
                        !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit())
                    })
        } else {
            origin.eq_ignore_ascii_case(entry)
        }
    })
}

/// Adds the CORS response headers for an allowed origin.
fn allow(headers: &mut HeaderMap, origin: HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("WWW-Authenticate, Mcp-Session-Id"),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

/// Echoes an allowed `origin` on the response; others get no CORS headers
/// (rmcp has already refused a disallowed `Origin` on POST with 403).
pub(crate) fn apply(
    mut response: HttpResponse,
    origin: Option<HeaderValue>,
    allowed: &[String],
) -> HttpResponse {
    if let Some(origin) = origin
        && origin_allowed(&origin, allowed)
    {
        allow(response.headers_mut(), origin);
    }
    response
}

/// The CORS preflight for browser clients.
pub(crate) fn preflight() -> HttpResponse {
    let mut response = text_response(StatusCode::NO_CONTENT, "");
    let headers = response.headers_mut();
    headers.insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id",
        ),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}
