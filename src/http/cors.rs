//! CORS for browser MCP clients: the origin the *host* step admitted (`host.rs`, which alone
//! reads the allow-list) is echoed, and `WWW-Authenticate` is exposed so a browser can start
//! the OAuth flow.

use http::{HeaderMap, HeaderValue, StatusCode, header};

use super::refusal::{HttpResponse, text_response};

/// The request headers a browser client may always send.
const ALLOWED_HEADERS: &str = "authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id";

/// Adds the CORS response headers for an allowed origin.
fn allow(headers: &mut HeaderMap, origin: HeaderValue) {
    headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.insert(
        header::ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static("WWW-Authenticate, Mcp-Session-Id"),
    );
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
}

/// Echoes `cors_origin`, the `Origin` the *host* step admitted, on the response; a request
/// without one gets no CORS headers (a disallowed `Origin` was refused with 403 there, or, on a
/// preflight, gets none: the browser's refusal).
pub(crate) fn apply(mut response: HttpResponse, cors_origin: Option<HeaderValue>) -> HttpResponse {
    if let Some(origin) = cors_origin {
        allow(response.headers_mut(), origin);
    }
    response
}

/// The CORS preflight for browser clients, admitting the fixed headers and the
/// `Mcp-Param-*` headers the browser asks to send (`Access-Control-Request-Headers`).
///
/// The `Mcp-Param-*` names are echoed rather than read off the tools' `x-mcp-header`
/// annotations: the tool list is the handler's, may depend on the caller, whom a preflight does
/// not name (it carries no credentials), and would cost a handler call per preflight. Echoing
/// grants nothing more: the header is only a name the browser may send, and every
/// `Mcp-Param-*` is checked against the called tool's schema and arguments when the POST comes
/// (MCP 2026-07-28 §3, rmcp's header validation).
pub(crate) fn preflight(request: &HeaderMap) -> HttpResponse {
    let mut response = text_response(StatusCode::NO_CONTENT, "");
    let headers = response.headers_mut();
    headers.insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        allowed_headers(request),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// [`ALLOWED_HEADERS`] and the `Mcp-Param-*` names of `Access-Control-Request-Headers`, each a
/// valid header name, lower case.
fn allowed_headers(request: &HeaderMap) -> HeaderValue {
    let mut allowed = String::from(ALLOWED_HEADERS);
    let asked = request
        .get_all(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter_map(|name| http::HeaderName::from_bytes(name.as_bytes()).ok())
        .filter(|name| {
            name.as_str().len() > PARAM_PREFIX.len() && name.as_str().starts_with(PARAM_PREFIX)
        });
    for name in asked {
        allowed.push_str(", ");
        allowed.push_str(name.as_str());
    }
    // Built from header names and a constant: always a valid value.
    HeaderValue::try_from(allowed).unwrap_or_else(|_| HeaderValue::from_static(ALLOWED_HEADERS))
}

/// The prefix of the headers that carry a tool's parameters (`x-mcp-header`).
const PARAM_PREFIX: &str = "mcp-param-";

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed_for(asked: &[&str]) -> String {
        let mut request = HeaderMap::new();
        for value in asked {
            request.append(
                header::ACCESS_CONTROL_REQUEST_HEADERS,
                HeaderValue::from_str(value).unwrap(),
            );
        }
        let response = preflight(&request);
        response.headers()[header::ACCESS_CONTROL_ALLOW_HEADERS]
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn the_preflight_echoes_only_mcp_param_names() {
        assert_eq!(allowed_for(&[]), ALLOWED_HEADERS);
        assert_eq!(
            allowed_for(&["Content-Type, Mcp-Param-Region ,x-other", "mcp-param-a"]),
            format!("{ALLOWED_HEADERS}, mcp-param-region, mcp-param-a")
        );
        // No name, or no valid one: nothing echoed.
        assert_eq!(
            allowed_for(&["mcp-param-, mcp-param-a b, mcp-paramx"]),
            ALLOWED_HEADERS
        );
    }
}
