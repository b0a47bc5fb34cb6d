//! CORS for browser MCP clients: an allowed `Origin` is echoed, and
//! `WWW-Authenticate` is exposed so a browser can start the OAuth flow.

use http::{HeaderMap, HeaderValue, header};

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
pub(crate) fn allow(headers: &mut HeaderMap, origin: HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("WWW-Authenticate, Mcp-Session-Id"),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}
