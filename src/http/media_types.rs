//! `Content-Type` must be JSON (415) and `Accept` must allow JSON and SSE (406).
//!
//! A missing `Accept` (curl, many scripts) counts as `*/*`; `q=0` removes an
//! entry. One `Content-Type` only (RFC 9110 §8.3): a second could disagree.

use http::{HeaderMap, header};

use super::refusal::Rejection;
use crate::rmcp_gaps;

/// Checks both headers; on success the `Accept` rmcp will see names both types.
pub(crate) fn check(headers: &mut HeaderMap) -> Result<(), Rejection> {
    let mut content_types = headers.get_all(header::CONTENT_TYPE).iter();
    let json_body = content_types
        .next()
        .filter(|_| content_types.next().is_none())
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"));
    if !json_body {
        return Err(Rejection::UnsupportedMediaType);
    }
    let (mut json, mut sse, mut any) = (false, false, false);
    // Whether both types are named exactly, as rmcp wants to see them.
    let (mut named_json, mut named_sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        for entry in value.to_str().unwrap_or("").split(',') {
            let mut params = entry.split(';');
            let essence = params.next().unwrap_or("").trim();
            let refused = params.any(|p| {
                let p = p.trim();
                p.eq_ignore_ascii_case("q=0")
                    || p.starts_with("q=0.0") && p.trim_end_matches('0') == "q=0."
            });
            if refused {
                continue;
            }
            let is = |name: &str| essence.eq_ignore_ascii_case(name);
            named_json |= is("application/json");
            named_sse |= is("text/event-stream");
            json |= named_json || is("application/*");
            sse |= named_sse || is("text/*");
            any |= is("*/*");
        }
    }
    let listed = headers.contains_key(header::ACCEPT);
    if listed && !any && !(json && sse) {
        return Err(Rejection::NotAcceptable);
    }
    rmcp_gaps::name_both_accept_types(headers, named_json && named_sse);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(content_type: &str, accept: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, content_type.parse().unwrap());
        if let Some(accept) = accept {
            h.insert(header::ACCEPT, accept.parse().unwrap());
        }
        h
    }

    #[test]
    fn json_bodies_with_an_accept_that_allows_both_pass() {
        for accept in [
            None,
            Some("*/*"),
            Some("application/json, text/event-stream"),
            Some("application/*, text/*"),
        ] {
            let mut h = headers("application/json; charset=utf-8", accept);
            assert_eq!(check(&mut h), Ok(()), "{accept:?}");
        }
    }

    #[test]
    fn other_bodies_are_415_and_narrow_accepts_406() {
        assert_eq!(
            check(&mut headers("text/plain", None)),
            Err(Rejection::UnsupportedMediaType)
        );
        for accept in ["application/json", "text/event-stream", "*/*;q=0"] {
            assert_eq!(
                check(&mut headers("application/json", Some(accept))),
                Err(Rejection::NotAcceptable),
                "{accept}"
            );
        }
    }
}
