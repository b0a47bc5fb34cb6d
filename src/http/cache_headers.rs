//! `ttlMs`/`cacheScope` mirrored into `Cache-Control`.
//!
//! The body's hints are the source of truth (the [`Hosted`](crate::handler::Hosted)
//! wrapper sets them from configuration); HTTP caches get the same answer:
//! `public|private, max-age=<seconds>` for a complete cacheable result,
//! `Vary: Authorization` when private, and `no-store` for everything else
//! (tool calls, errors, `input_required` rounds and SSE streams).

use bytes::Bytes;
use http::{HeaderValue, header};
use http_body_util::{BodyExt, Full};
use serde::Deserialize;
use serde::de::IgnoredAny;

use super::errors::HttpResponse;

#[derive(Deserialize)]
struct Peek {
    result: Option<PeekResult>,
    #[allow(dead_code)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PeekResult {
    result_type: Option<String>,
    ttl_ms: Option<u64>,
    cache_scope: Option<String>,
}

/// The `Cache-Control` value for a JSON-RPC response body.
pub(crate) fn cache_control(body: &[u8]) -> HeaderValue {
    let Ok(Peek {
        result: Some(result),
        ..
    }) = serde_json::from_slice::<Peek>(body)
    else {
        return HeaderValue::from_static("no-store");
    };
    let complete = result
        .result_type
        .as_deref()
        .is_none_or(|t| t == "complete");
    match (complete, result.ttl_ms, result.cache_scope.as_deref()) {
        (true, Some(ttl), Some(scope @ ("public" | "private"))) => {
            HeaderValue::from_str(&format!("{scope}, max-age={}", ttl / 1000))
                .expect("ASCII digits and letters")
        }
        _ => HeaderValue::from_static("no-store"),
    }
}

/// Sets `Cache-Control` (and `Vary`) on an rmcp response.
pub(crate) async fn apply(response: HttpResponse) -> HttpResponse {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !is_json {
        let mut response = response;
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return response;
    }
    let (mut parts, body) = response.into_parts();
    // JSON answers are already whole in memory, so this collect does not wait.
    let bytes: Bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let value = cache_control(&bytes);
    if value.as_bytes().starts_with(b"private") {
        parts
            .headers
            .append(header::VARY, HeaderValue::from_static("Authorization"));
    }
    parts.headers.insert(header::CACHE_CONTROL, value);
    HttpResponse::from_parts(parts, Full::new(bytes).boxed())
}

#[cfg(test)]
mod tests {
    use super::cache_control;

    #[test]
    fn cacheable_results_mirror_their_hints() {
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":300000,"cacheScope":"public","tools":[]}}"#;
        assert_eq!(cache_control(body), "public, max-age=300");
        let body = br#"{"jsonrpc":"2.0","id":1,"result":{"ttlMs":1500,"cacheScope":"private"}}"#;
        assert_eq!(cache_control(body), "private, max-age=1");
    }

    #[test]
    fn calls_errors_and_input_required_are_not_stored() {
        for body in [
            &br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","ttlMs":5,"cacheScope":"public"}}"#,
            b"not json",
        ] {
            assert_eq!(cache_control(body), "no-store");
        }
    }
}
