//! The issuer's signing keys: fetched during start-up, cached, refreshed on an
//! unknown `kid` at most once per interval, and kept when the issuer is down.
//!
//! A warm request with a known `kid` makes no network call: it reads the
//! cached key set through an `Arc` swap.
//!
//! Refreshes are serialised (concurrent requests with an unknown `kid` wait for one fetch) and
//! spaced two ways:
//!
//! - after a fetch that **succeeded**, none for `MCP_AUTH_JWKS_MIN_REFRESH_SECS` (60 s by
//!   default): a stranger's made-up `kid`s cannot make every request a fetch;
//! - after a fetch that **failed**, none for [`FAILED_FETCH_PAUSE`] (1 s, or the minimum
//!   interval when that is shorter: an interval of 0 pauses nothing): a failure is no key
//!   set, so it does not hold back the next fetch for the whole interval (a token signed with a
//!   rotated key would be refused for a minute after one lost connection or one bad answer),
//!   but an issuer that is down still costs at most one fetch a second, not one per request.
//!
//! The fetch goes through [`IssuerClient`](super::fetch::IssuerClient), which sends a request
//! again on a new connection when the pooled one was lost while the function was frozen.

use std::{
    sync::{
        Arc, RwLock,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use serde_json::Value;

use super::{AuthSettings, fetch::IssuerClient, jwt::Jwk};

const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_DOCUMENT_BYTES: usize = 512 * 1024;

/// The cached key set and how to refresh it.
pub(crate) struct Jwks {
    issuer: String,
    /// The JWKS URL once known (configured, or discovered from the issuer).
    url: tokio::sync::Mutex<Option<String>>,
    keys: RwLock<Arc<Vec<Jwk>>>,
    /// Bumped whenever the key set is replaced, so tokens verified under an
    /// older set (whose key may have been withdrawn) are verified again.
    generation: AtomicU64,
    /// When the last fetches succeeded and failed; refreshes are serialised through it.
    last_fetch: tokio::sync::Mutex<Fetched>,
    min_refresh: Duration,
    client: IssuerClient<Empty<Bytes>>,
    /// The issuer metadata's `introspection_endpoint`, once a metadata document named it.
    introspection_endpoint: std::sync::Mutex<Option<String>>,
    /// When a discovery made for the introspection endpoint last failed: not asked again
    /// for [`DISCOVERY_PAUSE`], so opaque tokens cannot make every request a fetch.
    discovery_failed: std::sync::Mutex<Option<Instant>>,
    /// The keys were given at start-up (`AuthSettings::issuer_keys`): never fetched.
    given: bool,
}

const DISCOVERY_PAUSE: Duration = Duration::from_secs(10);

/// How long after a failed fetch no other is made (see the module docs).
const FAILED_FETCH_PAUSE: Duration = Duration::from_secs(1);

/// When the key set was last fetched, and when a fetch last failed since.
#[derive(Debug, Default)]
struct Fetched {
    succeeded: Option<Instant>,
    failed: Option<Instant>,
}

impl Fetched {
    /// Whether a refresh now would come too soon after the last fetch: `min_refresh` after a
    /// success, [`FAILED_FETCH_PAUSE`] (at most `min_refresh`) after a failure.
    fn too_soon(&self, min_refresh: Duration) -> bool {
        self.succeeded.is_some_and(|at| at.elapsed() < min_refresh)
            || self
                .failed
                .is_some_and(|at| at.elapsed() < FAILED_FETCH_PAUSE.min(min_refresh))
    }

    /// Records how a fetch ended.
    fn record<T, E>(&mut self, result: &Result<T, E>) {
        match result {
            Ok(_) => (self.succeeded, self.failed) = (Some(Instant::now()), None),
            Err(_) => self.failed = Some(Instant::now()),
        }
    }
}

impl std::fmt::Debug for Jwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwks")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl Jwks {
    /// Fetches the keys now. A failure is logged, not fatal: requests retry
    /// (rate-limited) until the issuer answers.
    pub(crate) async fn warm(&self) {
        if self.given {
            return;
        }
        match self.fetch().await {
            Ok(count) => tracing::info!(keys = count, issuer = %self.issuer, "JWKS loaded"),
            Err(error) => {
                tracing::error!(%error, issuer = %self.issuer, "JWKS unavailable at start-up; tokens are refused until it loads")
            }
        }
    }

    pub(crate) fn new(settings: &AuthSettings) -> Self {
        let given: Option<Vec<Jwk>> = settings.issuer_keys.as_deref().map(|document| {
            serde_json::from_str::<Value>(document)
                .ok()
                .as_ref()
                .and_then(|d| d.get("keys"))
                .and_then(Value::as_array)
                .map(|keys| keys.iter().filter_map(Jwk::from_json).collect())
                .unwrap_or_default()
        });
        Self {
            issuer: settings.issuer.clone(),
            url: tokio::sync::Mutex::new(settings.jwks_url.clone()),
            given: given.is_some(),
            keys: RwLock::new(Arc::new(given.unwrap_or_default())),
            generation: AtomicU64::new(0),
            last_fetch: tokio::sync::Mutex::new(Fetched::default()),
            min_refresh: settings.jwks_min_refresh,
            client: IssuerClient::new(&settings.extra_roots),
            introspection_endpoint: std::sync::Mutex::new(None),
            discovery_failed: std::sync::Mutex::new(None),
        }
    }

    /// The issuer metadata's `introspection_endpoint`: recorded when start-up's discovery read
    /// the metadata, else discovered now (once; a failure is not retried for 10 s).
    pub(crate) async fn introspection_endpoint(&self) -> Result<String, String> {
        if let Some(url) = self.recorded_introspection_endpoint() {
            return Ok(url);
        }
        let paused = self
            .discovery_failed
            .lock()
            .expect("discovery lock")
            .is_some_and(|at| at.elapsed() < DISCOVERY_PAUSE);
        if paused {
            return Err("the issuer's metadata named no introspection_endpoint moments ago; set MCP_AUTH_INTROSPECTION_URL".into());
        }
        match self.discover("introspection_endpoint").await {
            Ok(url) => Ok(url),
            Err(error) => {
                *self.discovery_failed.lock().expect("discovery lock") = Some(Instant::now());
                Err(format!("{error}; or set MCP_AUTH_INTROSPECTION_URL"))
            }
        }
    }

    fn recorded_introspection_endpoint(&self) -> Option<String> {
        self.introspection_endpoint
            .lock()
            .expect("discovery lock")
            .clone()
    }

    /// The cached keys (no I/O).
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub(crate) fn current(&self) -> Arc<Vec<Jwk>> {
        self.keys.read().expect("JWKS lock poisoned").clone()
    }

    /// Refetches unless the last fetch succeeded within the minimum interval or failed within
    /// [`FAILED_FETCH_PAUSE`]; concurrent callers wait for one fetch. Returns the keys to use.
    pub(crate) async fn refresh(&self) -> Arc<Vec<Jwk>> {
        if self.given {
            return self.current();
        }
        let mut last = self.last_fetch.lock().await;
        if last.too_soon(self.min_refresh) {
            return self.current();
        }
        let fetched = self.fetch_unlocked().await;
        last.record(&fetched);
        if let Err(error) = fetched {
            // Keep serving with the keys we have (stale beats none).
            tracing::warn!(%error, "JWKS refresh failed; keeping the cached keys");
        }
        self.current()
    }

    async fn fetch(&self) -> Result<usize, String> {
        let mut last = self.last_fetch.lock().await;
        // A request's refresh fetched the keys while this waited for the lock: not twice.
        let keys = self.current();
        if last.succeeded.is_some() && !keys.is_empty() {
            return Ok(keys.len());
        }
        let fetched = self.fetch_unlocked().await;
        last.record(&fetched);
        fetched
    }

    async fn fetch_unlocked(&self) -> Result<usize, String> {
        let url = self.jwks_url().await?;
        let document = self.get_json(&url).await?;
        let keys: Vec<Jwk> = document
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{url} has no \"keys\" array"))?
            .iter()
            .filter_map(Jwk::from_json)
            .collect();
        if keys.is_empty() {
            return Err(format!("{url} holds no RSA, P-256 or Ed25519 signing key"));
        }
        let count = keys.len();
        *self.keys.write().expect("JWKS lock poisoned") = Arc::new(keys);
        self.generation.fetch_add(1, Ordering::Release);
        Ok(count)
    }

    async fn jwks_url(&self) -> Result<String, String> {
        let mut url = self.url.lock().await;
        if let Some(url) = url.as_ref() {
            return Ok(url.clone());
        }
        let discovered = self.discover("jwks_uri").await?;
        *url = Some(discovered.clone());
        Ok(discovered)
    }

    /// RFC 8414 metadata (path-inserted) and OpenID discovery (appended), asked at once: the
    /// first that names `member` (`jwks_uri`, `introspection_endpoint`) wins, so INIT waits for
    /// one round trip, not two. The `introspection_endpoint` of any document read is recorded.
    async fn discover(&self, member: &'static str) -> Result<String, String> {
        use futures::stream::{FuturesUnordered, StreamExt};
        let issuer = self.issuer.trim_end_matches('/');
        let after_scheme = issuer.find("://").map_or(0, |i| i + 3);
        let (origin, path) = match issuer[after_scheme..].find('/') {
            Some(i) => issuer.split_at(after_scheme + i),
            None => (issuer, ""),
        };
        let candidates = [
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{issuer}/.well-known/openid-configuration"),
        ];
        let mut answers: FuturesUnordered<_> = candidates
            .iter()
            .map(|candidate| async move { (candidate, self.get_json(candidate).await) })
            .collect();
        let mut errors = Vec::new();
        while let Some((candidate, answer)) = answers.next().await {
            match answer {
                Ok(metadata) => {
                    if let Some(endpoint) = metadata
                        .get("introspection_endpoint")
                        .and_then(Value::as_str)
                        .filter(|url| url.starts_with("https://") || url.starts_with("http://"))
                    {
                        *self.introspection_endpoint.lock().expect("discovery lock") =
                            Some(endpoint.to_string());
                    }
                    match metadata.get(member).and_then(Value::as_str) {
                        Some(uri) => return Ok(uri.to_string()),
                        None => errors.push(format!("{candidate} has no {member}")),
                    }
                }
                Err(error) => errors.push(error),
            }
        }
        let setting = match member {
            "jwks_uri" => "; set MCP_AUTH_JWKS_URL",
            _ => "",
        };
        Err(format!(
            "cannot find the issuer's {member} ({}){setting}",
            errors.join("; ")
        ))
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|_| format!("{url} is not a valid URL"))?;
        let request = http::Request::get(uri)
            .header(http::header::ACCEPT, "application/json")
            .body(Empty::new())
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(FETCH_TIMEOUT, self.client.send(request))
            .await
            .map_err(|_| format!("{url} did not answer within {FETCH_TIMEOUT:?}"))?
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let body = tokio::time::timeout(
            FETCH_TIMEOUT,
            Limited::new(response.into_body(), MAX_DOCUMENT_BYTES).collect(),
        )
        .await
        .map_err(|_| format!("{url} did not finish its body within {FETCH_TIMEOUT:?}"))?
        .map_err(|e| format!("{url}: {e}"))?
        .to_bytes();
        serde_json::from_slice(&body).map_err(|_| format!("{url} did not return JSON"))
    }
}
