//! `ttlMs`/`cacheScope` mirrored into `Cache-Control`.
//!
//! The [`Hosted`](crate::handler::Hosted) wrapper puts the hints into the result body
//! and, through the request's scope (`request_scope.rs`), hands the same
//! values to this layer, so HTTP caches get the body's answer without the
//! body being read again: `public|private, max-age=<seconds>` for a complete
//! cacheable result, `Vary: Authorization` when private, and `no-store` for
//! everything else (tool calls, errors, `input_required` rounds, SSE streams).

use http::{HeaderValue, StatusCode, header};

use super::refusal::HttpResponse;
use crate::cache::cache_control;
use crate::request_scope::RequestScope;

/// Sets `Cache-Control` (and `Vary`) on rmcp's response.
pub(crate) fn apply(mut response: HttpResponse, scope: &RequestScope) -> HttpResponse {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let hint = (response.status() == StatusCode::OK && json)
        .then(|| scope.cache_hint())
        .flatten();
    let headers = response.headers_mut();
    match hint {
        Some((ttl_ms, public)) => {
            if !public {
                headers.append(header::VARY, HeaderValue::from_static("Authorization"));
            }
            headers.insert(header::CACHE_CONTROL, cache_control(ttl_ms, public));
        }
        None => {
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    fn json_ok() -> HttpResponse {
        http::Response::builder()
            .header(header::CONTENT_TYPE, "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::new()).boxed())
            .unwrap()
    }

    #[test]
    fn recorded_hints_become_cache_control() {
        let slot = RequestScope::default();
        slot.set_cache_hint(300_000, true);
        let r = apply(json_ok(), &slot);
        assert_eq!(r.headers()[header::CACHE_CONTROL], "public, max-age=300");
        assert!(r.headers().get(header::VARY).is_none());
        let slot = RequestScope::default();
        slot.set_cache_hint(1_500, false);
        let r = apply(json_ok(), &slot);
        assert_eq!(r.headers()[header::CACHE_CONTROL], "private, max-age=1");
        assert_eq!(r.headers()[header::VARY], "Authorization");
    }

    #[test]
    fn no_hint_errors_and_streams_are_not_stored() {
        assert_eq!(
            apply(json_ok(), &RequestScope::default()).headers()[header::CACHE_CONTROL],
            "no-store"
        );
        let slot = RequestScope::default();
        slot.set_cache_hint(1_000, true);
        let mut error = json_ok();
        *error.status_mut() = StatusCode::BAD_REQUEST;
        assert_eq!(
            apply(error, &slot).headers()[header::CACHE_CONTROL],
            "no-store"
        );
        let sse = http::Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(http_body_util::Full::new(bytes::Bytes::new()).boxed())
            .unwrap();
        assert_eq!(
            apply(sse, &slot).headers()[header::CACHE_CONTROL],
            "no-store"
        );
    }
}
