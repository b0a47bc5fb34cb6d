//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client whose
//! id is an `https` URL is the JSON document at that URL, fetched here.
//!
//! The fetch is a request a stranger makes this server send, so it is fenced (the draft's §6,
//! and the SSRF history of other servers):
//!
//! - the URL: `https`, a host, a path other than `/`, no fragment, userinfo, dot segments or
//!   query, at most 2,000 bytes;
//! - the addresses: every address the host resolves to must be public (not loopback, private,
//!   link-local, shared, multicast, unspecified or reserved, IPv4-mapped and NAT64 forms
//!   included); the connection is made only to the addresses so checked (the resolver is this
//!   module's, so there is no gap between the check and the connect), and a literal address is
//!   checked the same way. On Lambda this keeps the Runtime API on 127.0.0.1:9001 out of reach;
//! - the answer: no redirect followed, `200` only, at most [`MAX_DOCUMENT_BYTES`], all of it
//!   within [`FETCH_TIMEOUT`]; no connection is kept (a fetch is rare: documents are cached);
//! - the document: a JSON object whose `client_id` is the URL exactly, with a `client_name` and
//!   `redirect_uris` registrable as a dynamic registration's are, for a public client.
//!
//! Documents are cached as their `Cache-Control: max-age` says, at most a day, at most
//! [`MAX_CACHED`] of them; failures are not cached.
//!
//! `MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS=true` lifts the address rule and admits `http`
//! documents on loopback: for tests and private deployments only.

use std::{
    collections::HashMap,
    future::Future,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    pin::Pin,
    sync::Mutex,
    task::{Context, Poll},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_util::{
    client::legacy::{
        Client,
        connect::{HttpConnector, dns::Name},
    },
    rt::TokioExecutor,
};
use serde::Deserialize;
use url::{Host, Url};

use super::{redirect, register::Client as OAuthClient};
use crate::auth::{client_error_reason, tls_config};

/// The largest document read.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// The whole fetch, from resolving to the last byte.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_CACHE_AGE: Duration = Duration::from_secs(86_400);
const MAX_CACHED: usize = 1000;
const MAX_URL_BYTES: usize = 2000;

/// Whether `client_id` is a URL-form client id (a metadata document), not a registered one.
pub(crate) fn is_document_id(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// Resolves a host and keeps only the addresses a document may be fetched from.
#[derive(Clone, Debug)]
struct PublicOnly {
    allow_private: bool,
}

type Resolving =
    Pin<Box<dyn Future<Output = Result<std::vec::IntoIter<SocketAddr>, std::io::Error>> + Send>>;

impl tower::Service<Name> for PublicOnly {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let allow_private = self.allow_private;
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            // One private address among public ones is refused too: DNS rebinding picks one.
            if allowed.is_empty() || allowed.len() != found.len() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the host resolves to a private, loopback or reserved address",
                ));
            }
            Ok(allowed.into_iter())
        })
    }
}

/// Whether an address is on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let segments = v6.segments();
            // NAT64 (64:ff9b::/96) carries an IPv4 address.
            if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                return is_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            // IPv4-compatible (::a.b.c.d, deprecated) carries one too.
            if segments[..6] == [0; 6] {
                return false;
            }
            // 6to4 (2002::/16) names the IPv4 address it tunnels to.
            if segments[0] == 0x2002 {
                let [a, b] = segments[1].to_be_bytes();
                let [c, d] = segments[2].to_be_bytes();
                return is_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            // Only global unicast (2000::/3) is public, less Teredo (2001::/32), documentation
            // (2001:db8::/32) and local-use NAT64 (64:ff9b:1::/48, outside 2000::/3 anyway).
            (segments[0] & 0xe000) == 0x2000
                && !(segments[0] == 0x2001 && (segments[1] == 0 || segments[1] == 0x0db8))
                && !v6.is_multicast()
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier NAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

/// Why a client id's document cannot be used. Shown on the error page.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DocumentError {
    #[error("the client id is not a usable metadata document URL: {0}")]
    Url(&'static str),
    #[error("the client's metadata document could not be fetched: {0}")]
    Fetch(String),
    #[error("the client's metadata document is not valid: {0}")]
    Invalid(String),
}

#[derive(Debug, Deserialize)]
struct Document {
    client_id: String,
    client_name: Option<String>,
    redirect_uris: Option<Vec<String>>,
    application_type: Option<String>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
}

/// The documents fetched, and how to fetch one.
pub(crate) struct ClientDocuments {
    client: Client<hyper_rustls::HttpsConnector<HttpConnector<PublicOnly>>, Empty<Bytes>>,
    allow_private: bool,
    cache: Mutex<HashMap<String, (OAuthClient, Instant)>>,
    /// URLs whose fetch failed moments ago, and why: not fetched again for
    /// [`FAILURE_PAUSE`], so a stranger cannot make this server fetch on every request.
    failed: Mutex<HashMap<String, (String, Instant)>>,
}

const FAILURE_PAUSE: Duration = Duration::from_secs(30);

impl std::fmt::Debug for ClientDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientDocuments")
            .field("allow_private", &self.allow_private)
            .finish_non_exhaustive()
    }
}

impl ClientDocuments {
    pub(crate) fn new(allow_private: bool, extra_roots: &[Vec<u8>]) -> Self {
        let mut http = HttpConnector::new_with_resolver(PublicOnly { allow_private });
        http.enforce_http(false);
        http.set_connect_timeout(Some(FETCH_TIMEOUT));
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(extra_roots))
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        // No pool: every fetch opens its own connection to addresses just checked.
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector);
        Self {
            client,
            allow_private,
            cache: Mutex::new(HashMap::new()),
            failed: Mutex::new(HashMap::new()),
        }
    }

    /// The client `url` names, from the cache or fetched now.
    pub(crate) async fn client(&self, url: &str) -> Result<OAuthClient, DocumentError> {
        if let Some((client, until)) = self.cache.lock().expect("cache lock").get(url)
            && Instant::now() < *until
        {
            return Ok(client.clone());
        }
        self.check_url(url)?;
        if let Some((why, at)) = self.failed.lock().expect("cache lock").get(url)
            && at.elapsed() < FAILURE_PAUSE
        {
            return Err(DocumentError::Fetch(format!(
                "{why} (moments ago; not fetched again for {}s)",
                FAILURE_PAUSE.as_secs()
            )));
        }
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, self.fetch(url))
            .await
            .map_err(|_| DocumentError::Fetch(format!("no whole answer within {FETCH_TIMEOUT:?}")))
            .and_then(|answer| answer);
        let (client, max_age) = match fetched {
            Ok(fetched) => fetched,
            Err(error) => {
                let mut failed = self.failed.lock().expect("cache lock");
                if failed.len() >= MAX_CACHED {
                    failed.retain(|_, (_, at)| at.elapsed() < FAILURE_PAUSE);
                }
                if failed.len() < MAX_CACHED {
                    failed.insert(url.to_string(), (error.to_string(), Instant::now()));
                }
                return Err(error);
            }
        };
        if let Some(max_age) = max_age.filter(|age| !age.is_zero()) {
            let mut cache = self.cache.lock().expect("cache lock");
            let now = Instant::now();
            if cache.len() >= MAX_CACHED {
                cache.retain(|_, (_, until)| *until > now);
            }
            if cache.len() < MAX_CACHED {
                cache.insert(
                    url.to_string(),
                    (client.clone(), now + max_age.min(MAX_CACHE_AGE)),
                );
            }
        }
        Ok(client)
    }

    fn check_url(&self, url: &str) -> Result<(), DocumentError> {
        if url.len() > MAX_URL_BYTES {
            return Err(DocumentError::Url("longer than 2000 bytes"));
        }
        if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(DocumentError::Url("it contains whitespace"));
        }
        let parsed = Url::parse(url).map_err(|_| DocumentError::Url("not a URL"))?;
        // The URL as parsed must be the URL as given: no normalisation hides anything.
        if parsed.as_str() != url {
            return Err(DocumentError::Url(
                "not in normal form (dot segments, case, escapes or a default port)",
            ));
        }
        if parsed.fragment().is_some() || parsed.query().is_some() {
            return Err(DocumentError::Url("it has a query or fragment"));
        }
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(DocumentError::Url("it has userinfo"));
        }
        if parsed.path() == "/" || parsed.path().is_empty() {
            return Err(DocumentError::Url("it has no path"));
        }
        let host = parsed.host().ok_or(DocumentError::Url("it has no host"))?;
        let literal = match host {
            Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
            Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
            Host::Domain(_) => None,
        };
        let loopback =
            literal.is_some_and(|ip| ip.is_loopback()) || matches!(host, Host::Domain("localhost"));
        match parsed.scheme() {
            "https" => {}
            "http" if self.allow_private && loopback => {}
            _ => return Err(DocumentError::Url("it is not https")),
        }
        if let Some(ip) = literal
            && !self.allow_private
            && !is_public(ip)
        {
            return Err(DocumentError::Url(
                "it names a private, loopback or reserved address",
            ));
        }
        Ok(())
    }

    async fn fetch(&self, url: &str) -> Result<(OAuthClient, Option<Duration>), DocumentError> {
        let request = Request::get(url)
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "mcp-lambda (client metadata document)")
            .body(Empty::new())
            .map_err(|_| DocumentError::Url("not a valid request URL"))?;
        let response = self.client.request(request).await.map_err(|e| {
            DocumentError::Fetch(client_error_reason(&e).chars().take(300).collect())
        })?;
        match response.status() {
            StatusCode::OK => {}
            status if status.is_redirection() => {
                return Err(DocumentError::Fetch(format!(
                    "it answered {status}: redirects are not followed"
                )));
            }
            status => return Err(DocumentError::Fetch(format!("it answered {status}"))),
        }
        let max_age = max_age(response.headers());
        if response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok())
            .is_some_and(|n| n > MAX_DOCUMENT_BYTES)
        {
            return Err(DocumentError::Fetch(format!(
                "it is larger than {MAX_DOCUMENT_BYTES} bytes"
            )));
        }
        let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
            .collect()
            .await
            .map_err(|_| {
                DocumentError::Fetch(format!("it is larger than {MAX_DOCUMENT_BYTES} bytes"))
            })?
            .to_bytes();
        let document: Document = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .filter(serde_json::Value::is_object)
            .and_then(|v| serde_json::from_value(v).ok())
            .ok_or_else(|| DocumentError::Invalid("not a JSON object of client metadata".into()))?;
        Ok((validate(url, document)?, max_age))
    }
}

fn validate(url: &str, document: Document) -> Result<OAuthClient, DocumentError> {
    let invalid = |why: String| Err(DocumentError::Invalid(why));
    if document.client_id != url {
        return invalid("its client_id is not the URL it was fetched from".into());
    }
    let Some(name) = document.client_name.filter(|n| !n.trim().is_empty()) else {
        return invalid("it has no client_name".into());
    };
    let redirect_uris = document.redirect_uris.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > 10 {
        return invalid("it must list 1 to 10 redirect_uris".into());
    }
    let application_type = document.application_type.as_deref();
    if !matches!(application_type, None | Some("web" | "native")) {
        return invalid("its application_type must be web or native".into());
    }
    for uri in &redirect_uris {
        if let Err(why) = redirect::check(uri, application_type) {
            return invalid(format!(
                "redirect URI {:?} {why}",
                uri.chars().take(200).collect::<String>()
            ));
        }
    }
    if document
        .token_endpoint_auth_method
        .as_deref()
        .is_some_and(|m| m != "none")
    {
        return invalid(
            "its token_endpoint_auth_method must be none: this server takes public clients".into(),
        );
    }
    // What this server does not offer is left aside; a document offering none of it is refused.
    if document
        .grant_types
        .as_ref()
        .is_some_and(|g| !g.iter().any(|t| t == "authorization_code"))
    {
        return invalid("it does not name the authorization_code grant".into());
    }
    if document
        .response_types
        .as_ref()
        .is_some_and(|r| !r.iter().any(|t| t == "code"))
    {
        return invalid("it does not name the response type code".into());
    }
    Ok(OAuthClient {
        client_id: url.to_string(),
        client_name: Some(super::register::shown_name(&name)),
        redirect_uris,
        registered: false,
    })
}

/// `Cache-Control: max-age`, unless `no-store`/`no-cache`.
fn max_age(headers: &http::HeaderMap) -> Option<Duration> {
    let value = headers.get(header::CACHE_CONTROL)?.to_str().ok()?;
    let mut age = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return None;
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            age = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    age
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
            "198.18.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn document_urls_are_checked_before_any_fetch() {
        let strict = ClientDocuments::new(false, &[]);
        for bad in [
            "http://app.example.com/client.json",
            "https://app.example.com",
            "https://app.example.com/",
            "https://user@app.example.com/c.json",
            "https://app.example.com/c.json#x",
            "https://app.example.com/c.json?x=1",
            "https://app.example.com/a/../c.json",
            "https://APP.example.com/c.json",
            "https://app.example.com:443/c.json",
            "https://127.0.0.1/c.json",
            "https://[::1]/c.json",
            "https://169.254.169.254/latest/meta-data",
            "http://127.0.0.1:8080/c.json",
        ] {
            assert!(strict.check_url(bad).is_err(), "{bad}");
        }
        assert!(
            strict
                .check_url("https://app.example.com/oauth/client.json")
                .is_ok()
        );
        let private = ClientDocuments::new(true, &[]);
        assert!(private.check_url("http://127.0.0.1:8080/c.json").is_ok());
        assert!(private.check_url("http://app.example.com/c.json").is_err());
    }

    #[test]
    fn a_document_must_name_itself_and_list_registrable_redirects() {
        let url = "https://app.example.com/c.json";
        let doc = |json: serde_json::Value| serde_json::from_value::<Document>(json).unwrap();
        let ok = validate(url, doc(serde_json::json!({
            "client_id": url, "client_name": "App", "redirect_uris": ["https://app.example.com/cb"],
        })))
        .unwrap();
        assert_eq!(ok.client_id, url);
        for bad in [
            serde_json::json!({"client_id": "https://other.example.com/c.json", "client_name": "A", "redirect_uris": ["https://a.example.com/cb"]}),
            serde_json::json!({"client_id": url, "redirect_uris": ["https://a.example.com/cb"]}),
            serde_json::json!({"client_id": url, "client_name": "A", "redirect_uris": []}),
            serde_json::json!({"client_id": url, "client_name": "A", "redirect_uris": ["javascript:alert(1)"]}),
            serde_json::json!({"client_id": url, "client_name": "A", "redirect_uris": ["https://a.example.com/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
        ] {
            assert!(validate(url, doc(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn cache_lifetimes_follow_cache_control() {
        let headers = |v: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(header::CACHE_CONTROL, v.parse().unwrap());
            h
        };
        assert_eq!(
            max_age(&headers("public, max-age=600")),
            Some(Duration::from_secs(600))
        );
        assert_eq!(max_age(&headers("no-store")), None);
        assert_eq!(max_age(&headers("max-age=60, no-cache")), None);
        assert_eq!(max_age(&http::HeaderMap::new()), None);
    }
}
