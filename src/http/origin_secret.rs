//! The secret origin header: serve only requests that came through the CDN.
//!
//! CloudFront cannot sign POSTs to a Lambda Function URL with origin access
//! control (OAC wants an `x-amz-content-sha256` payload hash that MCP clients
//! never send), so the distribution adds a custom origin header carrying a
//! secret ([`OriginSecret`], `MCP_ORIGIN_SECRET`) and the function
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
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_ORIGIN_SECRET` | none | a secret the CDN in front (CloudFront) adds to every request as a header; when set, requests without it get 403 |
//! | `MCP_ORIGIN_SECRET_HEADER` | `x-origin-secret` | the header that carries `MCP_ORIGIN_SECRET` |

use http::{HeaderMap, HeaderName};
use ring::hmac;

use super::refusal::Rejection;
use crate::env::{ConfigError, Env};

/// A secret header that a CDN in front of the function adds to every request
/// it forwards (a CloudFront custom origin header), so the function serves only
/// requests that came through the CDN. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct OriginSecret {
    header: HeaderName,
    secret: Vec<u8>,
}

impl std::fmt::Debug for OriginSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OriginSecret")
            .field("header", &self.header)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl OriginSecret {
    /// The header used when `MCP_ORIGIN_SECRET_HEADER` is not set.
    pub const DEFAULT_HEADER: &'static str = "x-origin-secret";
    /// Minimum secret length in bytes.
    pub const MIN_LEN: usize = 16;

    /// A secret carried in `header`.
    ///
    /// ```
    /// use mcp_lambda::http::OriginSecret;
    /// let secret = OriginSecret::new("x-origin-secret", "0123456789abcdef0123").unwrap();
    /// assert_eq!(secret.header().as_str(), "x-origin-secret");
    /// assert!(OriginSecret::new("authorization", "0123456789abcdef0123").is_err());
    /// assert!(OriginSecret::new("x-origin-secret", "short").is_err());
    /// ```
    pub fn new(header: &str, secret: &str) -> Result<Self, &'static str> {
        let header = Self::parse_header(header)?;
        if secret.len() < Self::MIN_LEN {
            return Err("the secret must be at least 16 characters");
        }
        Ok(Self {
            header,
            secret: secret.as_bytes().to_vec(),
        })
    }

    /// Reads `MCP_ORIGIN_SECRET` and `MCP_ORIGIN_SECRET_HEADER`; `None` = no check.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        match (
            env.get("MCP_ORIGIN_SECRET"),
            env.get("MCP_ORIGIN_SECRET_HEADER"),
        ) {
            (None, None) => Ok(None),
            (None, Some(_)) => Err(ConfigError::new(
                "MCP_ORIGIN_SECRET",
                "",
                "must be set when MCP_ORIGIN_SECRET_HEADER is: the value the CDN adds in that \
                 header, at least 16 characters (e.g. `openssl rand -hex 32`)",
            )),
            (Some(secret), header) => {
                let header = header.unwrap_or_else(|| Self::DEFAULT_HEADER.into());
                if let Err(reason) = Self::parse_header(&header) {
                    return Err(ConfigError::new(
                        "MCP_ORIGIN_SECRET_HEADER",
                        header,
                        format!("{reason}; expected a header of your own, e.g. x-origin-secret"),
                    ));
                }
                Self::new(&header, secret.trim()).map(Some).map_err(|_| {
                    ConfigError::redacted(
                        "MCP_ORIGIN_SECRET",
                        "expected at least 16 characters, e.g. the output of `openssl rand -hex 32`",
                    )
                })
            }
        }
    }

    fn parse_header(header: &str) -> Result<HeaderName, &'static str> {
        let header = HeaderName::from_bytes(header.trim().as_bytes())
            .map_err(|_| "not a valid HTTP header name")?;
        let name = header.as_str();
        let reserved = [
            "host",
            "authorization",
            "content-type",
            "content-length",
            "accept",
            "origin",
            "cookie",
            "connection",
            "transfer-encoding",
            "via",
            "user-agent",
        ];
        if reserved.contains(&name)
            || ["mcp-", "x-amz", "x-edge-", "x-forwarded-", "cloudfront-"]
                .iter()
                .any(|prefix| name.starts_with(prefix))
        {
            return Err("a header that HTTP, MCP or AWS already uses");
        }
        Ok(header)
    }

    /// The header the CDN sets.
    pub fn header(&self) -> &HeaderName {
        &self.header
    }

    /// The expected header value.
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

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

/// Checks the header when a secret is configured and removes it, so handlers
/// and logs never see it. A missing, repeated or wrong header is refused with 403.
pub(crate) fn check(
    check: Option<&OriginSecretCheck>,
    headers: &mut HeaderMap,
) -> Result<(), Rejection> {
    let Some(check) = check else {
        return Ok(());
    };
    let mut values = headers.get_all(&check.header).iter();
    let accepted = match (values.next(), values.next()) {
        (Some(value), None) => check.accepts(value.as_bytes()),
        _ => false,
    };
    headers.remove(&check.header);
    if accepted {
        return Ok(());
    }
    tracing::debug!(
        status = 403,
        rejection_type = "OriginSecret",
        header = %check.header,
        "request did not come through the CDN"
    );
    Err(Rejection::NotThroughCdn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret_check() -> OriginSecretCheck {
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
        assert!(check(Some(&secret_check()), &mut h).is_ok());
        assert!(!h.contains_key("x-origin-secret"));
        assert!(h.contains_key("content-type"));
    }

    #[test]
    fn a_missing_wrong_or_repeated_secret_gets_403() {
        let secret = secret_check();
        for values in [
            &[][..],
            &["s3cret-from-cloudfronT"],
            &["s3cret-from-cloudfront-and-more"],
            &["s3cret"],
            &[""],
            &["s3cret-from-cloudfront", "s3cret-from-cloudfront"],
        ] {
            let refusal = check(Some(&secret), &mut headers(values)).unwrap_err();
            assert_eq!(refusal, Rejection::NotThroughCdn, "{values:?}");
        }
    }

    #[test]
    fn no_configured_secret_means_no_check() {
        let mut h = headers(&["anything"]);
        assert!(check(None, &mut h).is_ok());
        assert!(h.contains_key("x-origin-secret"));
    }

    #[test]
    fn debug_output_never_shows_the_secret() {
        let shown = format!("{:?}", secret_check());
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}
