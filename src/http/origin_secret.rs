//! The secret origin header: serve only requests that came through the CDN.
//!
//! CloudFront cannot sign POSTs to a Lambda Function URL with origin access
//! control (OAC wants an `x-amz-content-sha256` payload hash that MCP clients
//! never send), so the distribution adds a custom origin header carrying a
//! secret ([`MCP_ORIGIN_SECRET`](crate::config::OriginSecret)) and the function
//! refuses every request without it — 403, before routing, auth or body
//! reading — so the URL behind the CDN is useless to a caller who found it.
//! CloudFront overwrites a viewer's header of the same name, so a client
//! cannot smuggle a guess through the distribution either.
//!
//! The comparison takes the same time whatever the presented value: both
//! sides are run through HMAC-SHA256 under a key drawn at start-up and
//! compared with `ring::hmac::verify`, so neither the secret's bytes nor its
//! length leak through timing. The header is removed once checked, so
//! handlers and logs never see it.
//!
//! With no secret configured there is no check (local runs, a Function URL
//! without a CDN).

use http::{HeaderMap, HeaderName, StatusCode};
use ring::hmac;

use super::errors::{HttpResponse, text_response};
use crate::config::OriginSecret;

/// The check built once from [`OriginSecret`]: the header and an HMAC tag of
/// the secret (the secret itself is not kept).
pub(crate) struct OriginSecretCheck {
    header: HeaderName,
    key: hmac::Key,
    tag: hmac::Tag,
}

impl std::fmt::Debug for OriginSecretCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginSecretCheck")
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

impl OriginSecretCheck {
    /// Draws a fresh HMAC key and tags the configured secret with it.
    ///
    /// # Panics
    ///
    /// If the operating system's random source fails.
    pub(crate) fn new(secret: &OriginSecret) -> Self {
        let rng = ring::rand::SystemRandom::new();
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
            .expect("the operating system's random source failed");
        let tag = hmac::sign(&key, secret.secret());
        Self {
            header: secret.header().clone(),
            key,
            tag,
        }
    }

    fn accepts(&self, presented: &[u8]) -> bool {
        hmac::verify(&self.key, presented, self.tag.as_ref()).is_ok()
    }
}

/// Checks the header when a secret is configured and removes it. A missing,
/// repeated or wrong header gets the 403 returned here; `None` = serve on.
pub(crate) fn verify(
    check: Option<&OriginSecretCheck>,
    headers: &mut HeaderMap,
) -> Option<HttpResponse> {
    let check = check?;
    let mut values = headers.get_all(&check.header).iter();
    let accepted = match (values.next(), values.next()) {
        (Some(value), None) => check.accepts(value.as_bytes()),
        _ => false,
    };
    headers.remove(&check.header);
    if accepted {
        None
    } else {
        tracing::debug!(
            status = 403,
            rejection_type = "OriginSecret",
            header = %check.header,
            "request did not come through the CDN"
        );
        Some(text_response(
            StatusCode::FORBIDDEN,
            "Forbidden: this server is reached through its CDN\n",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check() -> OriginSecretCheck {
        OriginSecretCheck::new(
            &OriginSecret::new("x-origin-secret", "s3cret-from-cloudfront").unwrap(),
        )
    }

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-origin-secret", value.parse().unwrap());
        }
        headers.insert("content-type", "application/json".parse().unwrap());
        headers
    }

    #[test]
    fn the_right_secret_is_served_and_the_header_removed() {
        let mut h = headers(&["s3cret-from-cloudfront"]);
        assert!(verify(Some(&check()), &mut h).is_none());
        assert!(!h.contains_key("x-origin-secret"));
        assert!(h.contains_key("content-type"));
    }

    #[test]
    fn a_missing_wrong_or_repeated_secret_gets_403() {
        let check = check();
        for values in [
            &[][..],
            &["s3cret-from-cloudfronT"],
            &["s3cret-from-cloudfront-and-more"],
            &["s3cret"],
            &[""],
            &["s3cret-from-cloudfront", "s3cret-from-cloudfront"],
        ] {
            let refusal = verify(Some(&check), &mut headers(values)).unwrap();
            assert_eq!(refusal.status(), StatusCode::FORBIDDEN, "{values:?}");
        }
    }

    #[test]
    fn no_configured_secret_means_no_check() {
        let mut h = headers(&["anything"]);
        assert!(verify(None, &mut h).is_none());
        assert!(h.contains_key("x-origin-secret"));
    }

    #[test]
    fn debug_output_never_shows_the_secret() {
        let shown = format!("{:?}", check());
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
