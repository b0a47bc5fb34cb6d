//! Typed configuration, read from the environment in one place.
//!
//! [`Config::from_env`] is the only function in the crate that reads
//! environment variables. Every value is parsed and validated here, so a bad
//! value stops start-up with a message that names the variable and says what
//! it expects, instead of failing on the first request.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_BIND` | `127.0.0.1:3000` | local listen address (not used on Lambda) |
//! | `MCP_PATH` | `/mcp` | the MCP endpoint path |
//! | `MCP_ALLOWED_HOSTS` | loopback names | comma-separated `Host` values accepted (DNS-rebinding guard); `*` disables the check |
//! | `MCP_ALLOWED_ORIGINS` | none | comma-separated browser origins (`https://app.example.com:443`); a request with any other `Origin` gets 403 |
//! | `MCP_MAX_BODY_BYTES` | `1048576` | request bodies above this get 413 |
//! | `MCP_PAGE_SIZE` | `100` | items per page of `tools/list` and the other lists |
//! | `MCP_CACHE_<METHOD>` | see [`CacheHints`] | `<ttl seconds>[,public\|private]`, e.g. `MCP_CACHE_TOOLS_LIST=300,public` |
//! | `MCP_REQUEST_STATE_KEY` | random in local mode | base64 key, ≥ 32 bytes, that seals MRTR `requestState` and signs cursors; or the ARN of a Secrets Manager secret / SSM parameter holding it (read once at start-up by [`Config::load`]) |
//! | `MCP_REQUEST_STATE_KEY_SSM_PARAMETER` | none | instead of `MCP_REQUEST_STATE_KEY`: the name of an SSM parameter (SecureString) holding the base64 key |
//! | `MCP_REQUEST_STATE_KEY_PREVIOUS` | none | an older key (base64 or ARN) still accepted for verification during rotation; a Secrets Manager key's `AWSPREVIOUS` version is accepted too |
//! | `MCP_HANDLE_TTL_SECS` | `86400` | inactivity expiry of handles |
//! | `MCP_HANDLES_TABLE` | none (in memory) | the DynamoDB table (name or ARN) that keeps handles, laid out as `infra/handles-table.json` |
//! | `MCP_AWS_CONNECT_TIMEOUT_MS` | `1000` | connecting to an AWS endpoint (DynamoDB, SSM, Secrets Manager) |
//! | `MCP_AWS_READ_TIMEOUT_MS` | `2000` | one attempt of an AWS call, from sending to the answer |
//! | `MCP_AWS_OPERATION_TIMEOUT_MS` | `5000` | one AWS call including the SDK's retries: the longest a handle operation can take |
//! | `MCP_LEGACY_SESSIONS` | `false` | in-memory sessions for 2025-era clients (local mode only) |
//! | `MCP_LAMBDA_STREAMING` | `false` | Lambda response streaming for SSE answers |
//! | `MCP_READ_TIMEOUT_SECS` | `30` | local server: seconds a client has to send a request's head, and then its body (slower bodies get 408; idle keep-alive connections close after it too) |
//! | `MCP_SSE_KEEP_ALIVE_SECS` | `15` | seconds between `:` keep-alive comments on an idle SSE answer (keep it under the 30 s idle timeouts of CloudFront and edge API Gateway) |
//! | `MCP_ORIGIN_SECRET` | none | a secret the CDN in front (CloudFront) adds to every request as a header; when set, requests without it get 403 |
//! | `MCP_ORIGIN_SECRET_HEADER` | `x-origin-secret` | the header that carries `MCP_ORIGIN_SECRET` |
//! | `MCP_AUTH_*` | auth off | see [`AuthSettings`](crate::auth::AuthSettings) |
//! | `MCP_LOG` | `info` | tracing filter |
//!
//! The AWS endpoint, region and credentials come from the standard AWS variables
//! (`AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`,
//! `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SSM`, `AWS_ENDPOINT_URL_SECRETS_MANAGER`,
//! `AWS_ENDPOINT_URL`, …), read by the AWS SDK's own loader when a table or a key in AWS is
//! configured, so the same binary talks to AWS or to a local stand-in.

use std::{net::SocketAddr, time::Duration};

use base64::Engine as _;
use thiserror::Error;

/// Where the process is running, decided by `AWS_LAMBDA_RUNTIME_API`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A plain HTTP server on [`Config::bind`].
    Local,
    /// Inside the AWS Lambda runtime.
    Lambda,
}

/// Who may reuse a cached answer, mirrored into `Cache-Control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Any client or shared cache may reuse the answer.
    Public,
    /// Only the same authorization context may reuse the answer.
    Private,
}

/// A cache hint: freshness and scope, as `ttlMs`/`cacheScope` in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// How long the answer stays fresh.
    pub ttl: Duration,
    /// Who may reuse it.
    pub scope: CacheScope,
}

impl CacheHint {
    const fn public(secs: u64) -> Self {
        Self {
            ttl: Duration::from_secs(secs),
            scope: CacheScope::Public,
        }
    }
}

/// Cache hints per cacheable method.
///
/// Defaults: `server/discover` 1 h public; lists 5 min public;
/// `resources/read` 0 s private (resource contents are often per user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHints {
    /// `server/discover` (`MCP_CACHE_SERVER_DISCOVER`).
    pub discover: CacheHint,
    /// `tools/list` (`MCP_CACHE_TOOLS_LIST`).
    pub tools_list: CacheHint,
    /// `prompts/list` (`MCP_CACHE_PROMPTS_LIST`).
    pub prompts_list: CacheHint,
    /// `resources/list` (`MCP_CACHE_RESOURCES_LIST`).
    pub resources_list: CacheHint,
    /// `resources/templates/list` (`MCP_CACHE_RESOURCES_TEMPLATES_LIST`).
    pub resource_templates_list: CacheHint,
    /// `resources/read` (`MCP_CACHE_RESOURCES_READ`).
    pub resources_read: CacheHint,
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            discover: CacheHint::public(3600),
            tools_list: CacheHint::public(300),
            prompts_list: CacheHint::public(300),
            resources_list: CacheHint::public(300),
            resource_templates_list: CacheHint::public(300),
            resources_read: CacheHint {
                ttl: Duration::ZERO,
                scope: CacheScope::Private,
            },
        }
    }
}

impl CacheHints {
    /// The hint for a JSON-RPC method, if the method's result is cacheable.
    pub fn for_method(&self, method: &str) -> Option<CacheHint> {
        Some(match method {
            "server/discover" => self.discover,
            "tools/list" => self.tools_list,
            "prompts/list" => self.prompts_list,
            "resources/list" => self.resources_list,
            "resources/templates/list" => self.resource_templates_list,
            "resources/read" => self.resources_read,
            _ => return None,
        })
    }
}

/// The key(s) that seal MRTR `requestState` and sign list cursors.
///
/// The first key signs; every key verifies, so a key can be rotated by moving
/// it to `MCP_REQUEST_STATE_KEY_PREVIOUS`. `Debug` never shows key bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestStateKeys {
    keys: Vec<Vec<u8>>,
    generated: bool,
    /// Keys still to fetch from AWS ([`Config::load`]); `keys` is a placeholder meanwhile.
    pending: Vec<KeySource>,
}

/// Where one request-state key comes from, when it is not given inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// Bytes given in the environment.
    Inline(Vec<u8>),
    /// An SSM parameter (name or ARN), read with decryption.
    Ssm {
        variable: &'static str,
        name: String,
    },
    /// A Secrets Manager secret (ARN or name) at a version stage; an `optional` stage that does
    /// not exist is skipped (`AWSPREVIOUS` before the first rotation).
    SecretsManager {
        variable: &'static str,
        id: String,
        stage: &'static str,
        optional: bool,
    },
}

impl std::fmt::Debug for RequestStateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStateKeys")
            .field("keys", &self.keys.len())
            .field("generated", &self.generated)
            .finish()
    }
}

impl RequestStateKeys {
    /// Minimum key length in bytes.
    pub const MIN_LEN: usize = 32;

    /// Keys from raw bytes; the first one signs.
    ///
    /// ```
    /// let keys = mcp_lambda::config::RequestStateKeys::new(vec![vec![7u8; 32]]).unwrap();
    /// assert_eq!(keys.signing().len(), 32);
    /// ```
    pub fn new(keys: Vec<Vec<u8>>) -> Result<Self, &'static str> {
        if keys.is_empty() {
            return Err("at least one key is needed");
        }
        if keys.iter().any(|k| k.len() < Self::MIN_LEN) {
            return Err("a key must be at least 32 bytes");
        }
        Ok(Self {
            keys,
            generated: false,
            pending: Vec::new(),
        })
    }

    /// A fresh random key (local mode only: other instances cannot verify it).
    pub fn generate() -> Self {
        use ring::rand::SecureRandom as _;
        let mut key = vec![0u8; Self::MIN_LEN];
        ring::rand::SystemRandom::new()
            .fill(&mut key)
            .expect("the operating system's random source failed");
        Self {
            keys: vec![key],
            generated: true,
            pending: Vec::new(),
        }
    }

    /// The key that signs new state.
    pub fn signing(&self) -> &[u8] {
        &self.keys[0]
    }

    /// Every key accepted for verification, signing key first.
    pub fn all(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// Whether the key was generated at start-up rather than configured.
    pub fn is_generated(&self) -> bool {
        self.generated
    }

    /// The keys still to be fetched from AWS, in keyring order.
    pub(crate) fn pending(&self) -> &[KeySource] {
        &self.pending
    }
}

/// Timeouts of every AWS call (DynamoDB handles, SSM, Secrets Manager), so an unreachable or
/// hung endpoint fails the call within a bounded time instead of hanging the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwsTimeouts {
    /// Opening a connection, TCP and TLS (`MCP_AWS_CONNECT_TIMEOUT_MS`, default 1 s).
    pub connect: Duration,
    /// One attempt, from sending the request to the answer (`MCP_AWS_READ_TIMEOUT_MS`,
    /// default 2 s).
    pub read: Duration,
    /// One call including the SDK's retries with backoff (`MCP_AWS_OPERATION_TIMEOUT_MS`,
    /// default 5 s): the longest a handle operation can take. Keep it below the Lambda timeout.
    pub operation: Duration,
}

impl Default for AwsTimeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_millis(1000),
            read: Duration::from_millis(2000),
            operation: Duration::from_millis(5000),
        }
    }
}

/// A secret header that a CDN in front of the function adds to every request
/// it forwards (a CloudFront custom origin header), so the function serves only
/// requests that came through the CDN. `Debug` never shows the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct OriginSecret {
    header: http::HeaderName,
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
    /// use mcp_lambda::config::OriginSecret;
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

    fn parse_header(header: &str) -> Result<http::HeaderName, &'static str> {
        let header = http::HeaderName::from_bytes(header.trim().as_bytes())
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
    pub fn header(&self) -> &http::HeaderName {
        &self.header
    }

    /// The expected header value.
    pub fn secret(&self) -> &[u8] {
        &self.secret
    }
}

/// Everything the server needs to know, read once at start-up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Lambda or local.
    pub mode: Mode,
    /// Local listen address (`MCP_BIND`).
    pub bind: SocketAddr,
    /// The MCP endpoint path (`MCP_PATH`), starting with `/`.
    pub path: String,
    /// Accepted `Host` values; empty means any host (`MCP_ALLOWED_HOSTS=*`).
    pub allowed_hosts: Vec<String>,
    /// Accepted browser origins; empty means requests with an `Origin` are refused
    /// unless the origin is loopback in local mode.
    pub allowed_origins: Vec<String>,
    /// Body cap in bytes (`MCP_MAX_BODY_BYTES`).
    pub max_body_bytes: usize,
    /// Items per list page (`MCP_PAGE_SIZE`).
    pub page_size: usize,
    /// Cache hints per method.
    pub cache: CacheHints,
    /// Keys for `requestState` and cursors.
    pub request_state_keys: RequestStateKeys,
    /// Inactivity expiry of handles (`MCP_HANDLE_TTL_SECS`).
    pub handle_ttl: Duration,
    /// The DynamoDB table that keeps handles (`MCP_HANDLES_TABLE`); `None` = in memory.
    pub handles_table: Option<String>,
    /// Timeouts of AWS calls (`MCP_AWS_CONNECT_TIMEOUT_MS`, `MCP_AWS_READ_TIMEOUT_MS`,
    /// `MCP_AWS_OPERATION_TIMEOUT_MS`).
    pub aws_timeouts: AwsTimeouts,
    /// In-memory sessions for legacy clients (`MCP_LEGACY_SESSIONS`, local only).
    pub legacy_sessions: bool,
    /// Lambda response streaming for SSE answers (`MCP_LAMBDA_STREAMING`);
    /// needs `InvokeMode: RESPONSE_STREAM` or API Gateway streaming.
    pub lambda_streaming: bool,
    /// Interval of `:` keep-alive comments on an idle SSE answer
    /// (`MCP_SSE_KEEP_ALIVE_SECS`).
    pub sse_keep_alive: Duration,
    /// Local server: the time a client has to send a request's head, and
    /// then its body (`MCP_READ_TIMEOUT_SECS`); slowloris guard.
    pub read_timeout: Duration,
    /// The secret header a CDN in front adds (`MCP_ORIGIN_SECRET`,
    /// `MCP_ORIGIN_SECRET_HEADER`); `None` = no check.
    pub origin_secret: Option<OriginSecret>,
    /// Tracing filter (`MCP_LOG`).
    pub log_filter: String,
    /// OAuth resource-server settings (`MCP_AUTH_*`); `None` = auth off.
    pub auth: Option<crate::auth::AuthSettings>,
}

/// A configuration value that could not be used.
#[derive(Debug, Error)]
#[error("{variable}={value:?}: {reason}")]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// The value found (keys are never echoed).
    pub value: String,
    /// What was expected.
    pub reason: String,
}

impl Config {
    /// Reads the configuration from the process environment.
    ///
    /// ```no_run
    /// let config = mcp_lambda::Config::from_env()?;
    /// println!("serving {}", config.path);
    /// # Ok::<(), mcp_lambda::config::ConfigError>(())
    /// ```
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The configuration a local run gets with nothing set.
    pub fn local_default() -> Self {
        Self::from_lookup(|_| None).expect("the embedded defaults are valid")
    }

    /// Reads the configuration through `lookup` (the environment in
    /// [`Config::from_env`]; a map in tests).
    ///
    /// ```
    /// use mcp_lambda::Config;
    /// let config = Config::from_lookup(|name| (name == "MCP_PATH").then(|| "/rpc".to_string())).unwrap();
    /// assert_eq!(config.path, "/rpc");
    /// let err = Config::from_lookup(|name| (name == "MCP_PAGE_SIZE").then(|| "0".to_string())).unwrap_err();
    /// assert_eq!(err.variable, "MCP_PAGE_SIZE");
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let config = Self::read(lookup)?;
        if let Some(source) = config.request_state_keys.pending().first() {
            let (variable, value) = match source {
                KeySource::Ssm { variable, name } => (*variable, name.clone()),
                KeySource::SecretsManager { variable, id, .. } => (*variable, id.clone()),
                KeySource::Inline(_) => unreachable!("inline keys are never pending"),
            };
            return Err(ConfigError {
                variable,
                value,
                reason: "names a key kept in AWS, fetched at start-up: read the configuration with `Config::load().await` instead of `Config::from_env()`".into(),
            });
        }
        Ok(config)
    }

    /// Reads the configuration from the process environment and fetches the request-state
    /// key(s) it names in SSM Parameter Store or Secrets Manager (one call each, at start-up:
    /// Lambda INIT). With no key in AWS this is [`Config::from_env`] and makes no call.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// // MCP_REQUEST_STATE_KEY_SSM_PARAMETER=/mcp/request-state-key
    /// let config = mcp_lambda::Config::load().await?;
    /// assert!(!config.request_state_keys.is_generated());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the variable when a value is unusable or a key cannot be
    /// fetched (missing parameter, no permission, unreachable endpoint, not base64 of ≥ 32 bytes).
    pub async fn load() -> Result<Self, ConfigError> {
        Self::load_from_lookup(|name| std::env::var(name).ok()).await
    }

    /// [`Config::load`] through `lookup` for the `MCP_*` variables. The AWS endpoint, region
    /// and credentials still come from the process environment (the AWS SDK's loader).
    pub async fn load_from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut config = Self::read(lookup)?;
        if !config.request_state_keys.pending().is_empty() {
            config.request_state_keys = crate::aws::fetch_request_state_keys(
                config.request_state_keys.pending(),
                &config.aws_timeouts,
            )
            .await?;
        }
        Ok(config)
    }

    fn read(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let fail = |variable: &'static str, value: &str, reason: &str| ConfigError {
            variable,
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let mode = if get("AWS_LAMBDA_RUNTIME_API").is_some() {
            Mode::Lambda
        } else {
            Mode::Local
        };

        let bind = match get("MCP_BIND") {
            Some(v) => v.trim().parse().map_err(|_| {
                fail(
                    "MCP_BIND",
                    &v,
                    "expected an IP address and port, e.g. 127.0.0.1:3000",
                )
            })?,
            None => SocketAddr::from(([127, 0, 0, 1], 3000)),
        };

        let path = get("MCP_PATH").unwrap_or_else(|| "/mcp".into());
        if !path.starts_with('/')
            || path.len() < 2
            || path.contains(['?', '#', ' '])
            || path.ends_with('/')
        {
            return Err(fail(
                "MCP_PATH",
                &path,
                "expected an absolute path without query or trailing slash, e.g. /mcp",
            ));
        }

        let allowed_hosts = match get("MCP_ALLOWED_HOSTS") {
            Some(v) if v.trim() == "*" => Vec::new(),
            Some(v) => {
                let hosts = split_list(&v);
                if hosts
                    .iter()
                    .any(|h| h.contains(['/', ' ']) || h.contains("://"))
                {
                    return Err(fail(
                        "MCP_ALLOWED_HOSTS",
                        &v,
                        "expected comma-separated host names or host:port, e.g. abc.lambda-url.us-east-1.on.aws,d111.cloudfront.net (or * for any)",
                    ));
                }
                hosts
            }
            None => vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "::1".into(),
                "[::1]".into(),
            ],
        };

        let allowed_origins = match get("MCP_ALLOWED_ORIGINS") {
            Some(v) => {
                let origins = split_list(&v);
                if origins.iter().any(|o| {
                    o != "null" && !(o.starts_with("http://") || o.starts_with("https://"))
                }) {
                    return Err(fail(
                        "MCP_ALLOWED_ORIGINS",
                        &v,
                        "expected comma-separated origins with a scheme, e.g. https://app.example.com:443,http://localhost:*",
                    ));
                }
                origins
            }
            None => Vec::new(),
        };

        let max_body_bytes = parse_number(
            &get,
            "MCP_MAX_BODY_BYTES",
            1024 * 1024,
            1..=64 * 1024 * 1024,
        )
        .map_err(|(v, _)| {
            fail(
                "MCP_MAX_BODY_BYTES",
                &v,
                "expected a whole number of bytes between 1 and 67108864, e.g. 1048576",
            )
        })?;
        let page_size =
            parse_number(&get, "MCP_PAGE_SIZE", 100, 1..=10_000).map_err(|(v, _)| {
                fail(
                    "MCP_PAGE_SIZE",
                    &v,
                    "expected a whole number of items between 1 and 10000",
                )
            })?;
        let handle_ttl_secs = parse_number(&get, "MCP_HANDLE_TTL_SECS", 86_400, 1..=366 * 86_400)
            .map_err(|(v, _)| {
            fail(
                "MCP_HANDLE_TTL_SECS",
                &v,
                "expected whole seconds between 1 and 31622400, e.g. 86400",
            )
        })?;

        let mut cache = CacheHints::default();
        for (variable, slot) in [
            ("MCP_CACHE_SERVER_DISCOVER", &mut cache.discover),
            ("MCP_CACHE_TOOLS_LIST", &mut cache.tools_list),
            ("MCP_CACHE_PROMPTS_LIST", &mut cache.prompts_list),
            ("MCP_CACHE_RESOURCES_LIST", &mut cache.resources_list),
            (
                "MCP_CACHE_RESOURCES_TEMPLATES_LIST",
                &mut cache.resource_templates_list,
            ),
            ("MCP_CACHE_RESOURCES_READ", &mut cache.resources_read),
        ] {
            if let Some(v) = get(variable) {
                *slot = parse_cache_hint(&v, slot.scope).ok_or_else(|| {
                    fail(
                        variable,
                        &v,
                        "expected <ttl seconds>[,public|private], e.g. 300,public",
                    )
                })?;
            }
        }

        let request_state_keys = read_request_state_keys(&get, mode)?;

        let handles_table = match get("MCP_HANDLES_TABLE") {
            Some(v) if valid_table(v.trim()) => Some(v.trim().to_string()),
            Some(v) => {
                return Err(fail(
                    "MCP_HANDLES_TABLE",
                    &v,
                    "expected a DynamoDB table name (3 to 255 of A-Z a-z 0-9 _ - .) or a table ARN, e.g. mcp-handles",
                ));
            }
            None => None,
        };
        let mut aws_timeouts = AwsTimeouts::default();
        for (variable, slot) in [
            ("MCP_AWS_CONNECT_TIMEOUT_MS", &mut aws_timeouts.connect),
            ("MCP_AWS_READ_TIMEOUT_MS", &mut aws_timeouts.read),
            ("MCP_AWS_OPERATION_TIMEOUT_MS", &mut aws_timeouts.operation),
        ] {
            let default = slot.as_millis() as usize;
            let ms = parse_number(&get, variable, default, 1..=600_000).map_err(|(v, _)| {
                fail(
                    variable,
                    &v,
                    "expected whole milliseconds between 1 and 600000, e.g. 1000",
                )
            })?;
            *slot = Duration::from_millis(ms as u64);
        }

        let legacy_sessions = parse_bool(&get, "MCP_LEGACY_SESSIONS")
            .map_err(|v| fail("MCP_LEGACY_SESSIONS", &v, "expected true or false"))?;
        if legacy_sessions && mode == Mode::Lambda {
            return Err(fail(
                "MCP_LEGACY_SESSIONS",
                "true",
                "in-memory sessions cannot work on Lambda (each instance has its own memory); leave it unset so legacy clients are served statelessly",
            ));
        }

        let lambda_streaming = parse_bool(&get, "MCP_LAMBDA_STREAMING")
            .map_err(|v| fail("MCP_LAMBDA_STREAMING", &v, "expected true or false"))?;

        let sse_keep_alive_secs = parse_number(&get, "MCP_SSE_KEEP_ALIVE_SECS", 15, 1..=300)
            .map_err(|(v, _)| fail("MCP_SSE_KEEP_ALIVE_SECS", &v, "expected whole seconds between 1 and 300, e.g. 15 (stay under the 30 s idle timeout of CloudFront)"))?;
        let read_timeout_secs =
            parse_number(&get, "MCP_READ_TIMEOUT_SECS", 30, 1..=3600).map_err(|(v, _)| {
                fail(
                    "MCP_READ_TIMEOUT_SECS",
                    &v,
                    "expected whole seconds between 1 and 3600, e.g. 30",
                )
            })?;

        let origin_secret = match (get("MCP_ORIGIN_SECRET"), get("MCP_ORIGIN_SECRET_HEADER")) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(fail(
                    "MCP_ORIGIN_SECRET",
                    "",
                    "must be set when MCP_ORIGIN_SECRET_HEADER is: the value the CDN adds in that header, at least 16 characters (e.g. `openssl rand -hex 32`)",
                ));
            }
            (Some(secret), header) => {
                let header = header.unwrap_or_else(|| OriginSecret::DEFAULT_HEADER.into());
                if let Err(reason) = OriginSecret::parse_header(&header) {
                    return Err(fail(
                        "MCP_ORIGIN_SECRET_HEADER",
                        &header,
                        &format!("{reason}; expected a header of your own, e.g. x-origin-secret"),
                    ));
                }
                Some(OriginSecret::new(&header, secret.trim()).map_err(|_| ConfigError {
                    variable: "MCP_ORIGIN_SECRET",
                    value: "<redacted>".into(),
                    reason: "expected at least 16 characters, e.g. the output of `openssl rand -hex 32`".into(),
                })?)
            }
        };

        let auth =
            crate::auth::AuthSettings::from_lookup(&get).map_err(|(variable, value, reason)| {
                ConfigError {
                    variable,
                    value,
                    reason,
                }
            })?;

        let log_filter = get("MCP_LOG").unwrap_or_else(|| "info".into());
        if tracing_subscriber::EnvFilter::try_new(&log_filter).is_err() {
            return Err(fail(
                "MCP_LOG",
                &log_filter,
                "expected a tracing filter, e.g. info or mcp_lambda=debug,info",
            ));
        }

        Ok(Self {
            auth,
            lambda_streaming,
            sse_keep_alive: Duration::from_secs(sse_keep_alive_secs as u64),
            read_timeout: Duration::from_secs(read_timeout_secs as u64),
            origin_secret,
            mode,
            bind,
            path,
            allowed_hosts,
            allowed_origins,
            max_body_bytes,
            page_size,
            cache,
            request_state_keys,
            handle_ttl: Duration::from_secs(handle_ttl_secs as u64),
            handles_table,
            aws_timeouts,
            legacy_sessions,
            log_filter,
        })
    }

    /// The codec that seals and opens MRTR `requestState` with the configured keys.
    ///
    /// ```
    /// let config = mcp_lambda::Config::local_default();
    /// let codec = config.request_state_codec();
    /// let sealed = codec.seal(b"round-1");
    /// assert_eq!(codec.open(&sealed).unwrap(), b"round-1");
    /// ```
    pub fn request_state_codec(&self) -> rmcp::model::RequestStateCodec {
        crate::request_state::codec(&self.request_state_keys)
    }
}

fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse_number(
    get: &impl Fn(&str) -> Option<String>,
    variable: &str,
    default: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize, (String, ())> {
    match get(variable) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if range.contains(&n) => Ok(n),
            _ => Err((v, ())),
        },
    }
}

fn parse_bool(get: &impl Fn(&str) -> Option<String>, variable: &str) -> Result<bool, String> {
    match get(variable).as_deref().map(str::trim) {
        None => Ok(false),
        Some("true" | "1" | "yes") => Ok(true),
        Some("false" | "0" | "no") => Ok(false),
        Some(other) => Err(other.to_string()),
    }
}

fn parse_cache_hint(value: &str, default_scope: CacheScope) -> Option<CacheHint> {
    let mut parts = value.split(',').map(str::trim);
    let secs: u64 = parts.next()?.parse().ok()?;
    if secs > 31_536_000 {
        return None;
    }
    let scope = match parts.next() {
        None => default_scope,
        Some("public") => CacheScope::Public,
        Some("private") => CacheScope::Private,
        Some(_) => return None,
    };
    if parts.next().is_some() {
        return None;
    }
    Some(CacheHint {
        ttl: Duration::from_secs(secs),
        scope,
    })
}

/// `MCP_REQUEST_STATE_KEY[_SSM_PARAMETER]` and `MCP_REQUEST_STATE_KEY_PREVIOUS`: inline keys, or
/// keys to fetch from AWS at start-up.
fn read_request_state_keys(
    get: &impl Fn(&str) -> Option<String>,
    mode: Mode,
) -> Result<RequestStateKeys, ConfigError> {
    const KEY: &str = "MCP_REQUEST_STATE_KEY";
    const SSM: &str = "MCP_REQUEST_STATE_KEY_SSM_PARAMETER";
    const PREVIOUS: &str = "MCP_REQUEST_STATE_KEY_PREVIOUS";
    let current = match (get(KEY), get(SSM)) {
        (Some(_), Some(name)) => {
            return Err(ConfigError {
                variable: SSM,
                value: name,
                reason: format!("set either {KEY} or {SSM}, not both"),
            });
        }
        (Some(value), None) => key_source(KEY, &value)?,
        (None, Some(name)) => {
            let name = name.trim();
            let valid = if name.starts_with("arn:") {
                parse_arn(name).is_some_and(|(service, _)| service == "ssm")
            } else {
                !name.is_empty()
                    && name.len() <= 2048
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"_.-/".contains(&b))
            };
            if !valid {
                return Err(ConfigError {
                    variable: SSM,
                    value: name.into(),
                    reason: "expected an SSM parameter name or ARN, e.g. /mcp/request-state-key"
                        .into(),
                });
            }
            KeySource::Ssm {
                variable: SSM,
                name: name.into(),
            }
        }
        (None, None) => {
            if get(PREVIOUS).is_some() {
                return Err(ConfigError {
                    variable: PREVIOUS,
                    value: "<redacted>".into(),
                    reason: format!("only verifies alongside a current key: set {KEY} too"),
                });
            }
            if mode == Mode::Lambda {
                return Err(ConfigError {
                    variable: KEY,
                    value: String::new(),
                    reason: "must be set on Lambda so every instance seals and opens requestState and cursors with the same key: a base64 key (`openssl rand -base64 32`), a Secrets Manager secret ARN, or use MCP_REQUEST_STATE_KEY_SSM_PARAMETER".into(),
                });
            }
            return Ok(RequestStateKeys::generate());
        }
    };
    let mut sources = vec![current.clone()];
    if let KeySource::SecretsManager { variable, id, .. } = &current {
        // The standard rotation flow: AWSPREVIOUS still verifies after a rotation.
        sources.push(KeySource::SecretsManager {
            variable,
            id: id.clone(),
            stage: "AWSPREVIOUS",
            optional: true,
        });
    }
    if let Some(previous) = get(PREVIOUS) {
        sources.push(key_source(PREVIOUS, &previous)?);
    }
    if sources.iter().all(|s| matches!(s, KeySource::Inline(_))) {
        let keys = sources
            .into_iter()
            .filter_map(|s| match s {
                KeySource::Inline(key) => Some(key),
                _ => None,
            })
            .collect();
        return Ok(RequestStateKeys::new(keys).expect("lengths checked when decoded"));
    }
    let mut keys = RequestStateKeys::generate();
    keys.generated = false;
    keys.pending = sources;
    Ok(keys)
}

/// A key given as base64, or as the ARN of a Secrets Manager secret or SSM parameter.
fn key_source(variable: &'static str, value: &str) -> Result<KeySource, ConfigError> {
    let value = value.trim();
    if value.starts_with("arn:") {
        return match parse_arn(value) {
            Some(("secretsmanager", resource)) if resource.starts_with("secret:") => {
                Ok(KeySource::SecretsManager {
                    variable,
                    id: value.into(),
                    stage: "AWSCURRENT",
                    optional: false,
                })
            }
            Some(("ssm", resource)) if resource.starts_with("parameter/") => Ok(KeySource::Ssm {
                variable,
                name: value.into(),
            }),
            _ => Err(ConfigError {
                variable,
                value: value.into(),
                reason: "expected a Secrets Manager secret ARN (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME) or an SSM parameter ARN (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME)".into(),
            }),
        };
    }
    decode_key(value)
        .map(KeySource::Inline)
        .ok_or_else(|| ConfigError {
            variable,
            value: "<redacted>".into(),
            reason: "expected standard base64 of at least 32 bytes, e.g. the output of `openssl rand -base64 32`, or the ARN of a Secrets Manager secret or SSM parameter holding it".into(),
        })
}

/// `arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE` → (service, resource).
pub(crate) fn parse_arn(arn: &str) -> Option<(&str, &str)> {
    let mut parts = arn.splitn(6, ':');
    let (prefix, partition, service, region, _account, resource) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    (prefix == "arn" && !partition.is_empty() && !region.is_empty() && !resource.is_empty())
        .then_some((service, resource))
}

/// A DynamoDB table name, or a table ARN.
fn valid_table(value: &str) -> bool {
    if value.starts_with("arn:") {
        return parse_arn(value).is_some_and(|(service, resource)| {
            service == "dynamodb" && resource.strip_prefix("table/").is_some_and(valid_table)
        });
    }
    (3..=255).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

fn decode_key(value: &str) -> Option<Vec<u8>> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .ok()?;
    (key.len() >= RequestStateKeys::MIN_LEN).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn embedded_defaults_serve_loopback_on_port_3000() {
        let c = config(&[]).unwrap();
        assert_eq!(c.mode, Mode::Local);
        assert_eq!(c.bind.to_string(), "127.0.0.1:3000");
        assert_eq!(c.path, "/mcp");
        assert!(c.request_state_keys.is_generated());
        assert!(!c.legacy_sessions);
    }

    #[test]
    fn bad_values_name_the_variable_and_the_expectation() {
        for (var, value, expect) in [
            ("MCP_BIND", "localhost", "IP address and port"),
            ("MCP_PATH", "mcp", "absolute path"),
            ("MCP_MAX_BODY_BYTES", "10MB", "whole number of bytes"),
            ("MCP_PAGE_SIZE", "0", "between 1 and 10000"),
            ("MCP_CACHE_TOOLS_LIST", "300,shared", "public|private"),
            ("MCP_REQUEST_STATE_KEY", "c2hvcnQ=", "at least 32 bytes"),
            ("MCP_LEGACY_SESSIONS", "maybe", "true or false"),
            ("MCP_ALLOWED_ORIGINS", "example.com", "with a scheme"),
            ("MCP_LOG", "info,[[[", "tracing filter"),
        ] {
            let err = config(&[(var, value)]).unwrap_err();
            assert_eq!(err.variable, var);
            let text = err.to_string();
            assert!(text.starts_with(var), "{text}");
            assert!(text.contains(expect), "{text}");
        }
    }

    #[test]
    fn request_state_key_is_never_echoed_in_errors() {
        let err = config(&[("MCP_REQUEST_STATE_KEY", "c2VjcmV0LXZhbHVl")]).unwrap_err();
        assert!(!err.to_string().contains("c2VjcmV0LXZhbHVl"));
    }

    #[test]
    fn lambda_mode_requires_a_shared_request_state_key() {
        let err = config(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")]).unwrap_err();
        assert_eq!(err.variable, "MCP_REQUEST_STATE_KEY");
        let key = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let c = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
            ("MCP_REQUEST_STATE_KEY", &key),
        ])
        .unwrap();
        assert_eq!(c.mode, Mode::Lambda);
        assert!(!c.request_state_keys.is_generated());
    }

    #[test]
    fn legacy_sessions_are_refused_on_lambda() {
        let key = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let err = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "x"),
            ("MCP_REQUEST_STATE_KEY", &key),
            ("MCP_LEGACY_SESSIONS", "true"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "MCP_LEGACY_SESSIONS");
    }

    #[test]
    fn cache_hints_parse_ttl_and_scope() {
        let c = config(&[
            ("MCP_CACHE_TOOLS_LIST", "60,private"),
            ("MCP_CACHE_SERVER_DISCOVER", "10"),
        ])
        .unwrap();
        assert_eq!(c.cache.tools_list.ttl, Duration::from_secs(60));
        assert_eq!(c.cache.tools_list.scope, CacheScope::Private);
        assert_eq!(c.cache.discover.scope, CacheScope::Public);
        assert_eq!(c.cache.for_method("tools/call"), None);
    }

    #[test]
    fn origin_secret_is_off_unless_the_secret_is_set() {
        assert!(config(&[]).unwrap().origin_secret.is_none());
        let c = config(&[("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn")]).unwrap();
        let secret = c.origin_secret.unwrap();
        assert_eq!(secret.header().as_str(), OriginSecret::DEFAULT_HEADER);
        assert_eq!(secret.secret(), b"0123456789abcdef-cdn");
        let c = config(&[
            ("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn"),
            ("MCP_ORIGIN_SECRET_HEADER", "X-From-CDN"),
        ])
        .unwrap();
        assert_eq!(c.origin_secret.unwrap().header().as_str(), "x-from-cdn");
    }

    #[test]
    fn origin_secret_errors_name_the_variable_and_never_echo_the_secret() {
        let err = config(&[("MCP_ORIGIN_SECRET_HEADER", "x-from-cdn")]).unwrap_err();
        assert_eq!(err.variable, "MCP_ORIGIN_SECRET");
        let err = config(&[("MCP_ORIGIN_SECRET", "tooshort")]).unwrap_err();
        assert_eq!(err.variable, "MCP_ORIGIN_SECRET");
        assert!(!err.to_string().contains("tooshort"), "{err}");
        for header in ["authorization", "mcp-method", "x-amz-date", "not a header"] {
            let err = config(&[
                ("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn"),
                ("MCP_ORIGIN_SECRET_HEADER", header),
            ])
            .unwrap_err();
            assert_eq!(err.variable, "MCP_ORIGIN_SECRET_HEADER", "{header}");
            assert!(!err.to_string().contains("0123456789abcdef-cdn"), "{err}");
        }
        let c = config(&[("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn")]).unwrap();
        assert!(!format!("{c:?}").contains("0123456789abcdef-cdn"));
    }

    #[test]
    fn sse_keep_alive_defaults_to_15_seconds() {
        assert_eq!(config(&[]).unwrap().sse_keep_alive, Duration::from_secs(15));
        assert_eq!(
            config(&[("MCP_SSE_KEEP_ALIVE_SECS", "1")])
                .unwrap()
                .sse_keep_alive,
            Duration::from_secs(1)
        );
        assert_eq!(
            config(&[("MCP_SSE_KEEP_ALIVE_SECS", "0")])
                .unwrap_err()
                .variable,
            "MCP_SSE_KEEP_ALIVE_SECS"
        );
    }

    #[test]
    fn read_timeout_defaults_to_30_seconds() {
        assert_eq!(config(&[]).unwrap().read_timeout, Duration::from_secs(30));
        assert_eq!(
            config(&[("MCP_READ_TIMEOUT_SECS", "2")])
                .unwrap()
                .read_timeout,
            Duration::from_secs(2)
        );
        for bad in ["0", "3601", "soon"] {
            assert_eq!(
                config(&[("MCP_READ_TIMEOUT_SECS", bad)])
                    .unwrap_err()
                    .variable,
                "MCP_READ_TIMEOUT_SECS"
            );
        }
    }

    #[test]
    fn handles_table_selects_dynamodb_and_is_validated() {
        assert_eq!(config(&[]).unwrap().handles_table, None);
        for good in [
            "mcp-handles",
            "a.b_c-1",
            "arn:aws:dynamodb:eu-west-1:123456789012:table/mcp-handles",
        ] {
            let c = config(&[("MCP_HANDLES_TABLE", good)]).unwrap();
            assert_eq!(c.handles_table.as_deref(), Some(good));
        }
        for bad in [
            "ab",
            "has space",
            "tab/le",
            "arn:aws:s3:::bucket",
            "arn:aws:dynamodb:eu-west-1:1:index/x",
        ] {
            let err = config(&[("MCP_HANDLES_TABLE", bad)]).unwrap_err();
            assert_eq!(err.variable, "MCP_HANDLES_TABLE", "{bad}");
            assert!(err.to_string().contains("table name"), "{err}");
        }
    }

    #[test]
    fn aws_timeouts_default_and_parse_milliseconds() {
        let c = config(&[]).unwrap();
        assert_eq!(c.aws_timeouts, AwsTimeouts::default());
        assert_eq!(c.aws_timeouts.connect, Duration::from_secs(1));
        let c = config(&[
            ("MCP_AWS_CONNECT_TIMEOUT_MS", "250"),
            ("MCP_AWS_READ_TIMEOUT_MS", "750"),
            ("MCP_AWS_OPERATION_TIMEOUT_MS", "1500"),
        ])
        .unwrap();
        assert_eq!(c.aws_timeouts.connect, Duration::from_millis(250));
        assert_eq!(c.aws_timeouts.read, Duration::from_millis(750));
        assert_eq!(c.aws_timeouts.operation, Duration::from_millis(1500));
        for var in [
            "MCP_AWS_CONNECT_TIMEOUT_MS",
            "MCP_AWS_READ_TIMEOUT_MS",
            "MCP_AWS_OPERATION_TIMEOUT_MS",
        ] {
            for bad in ["0", "1s", "600001"] {
                let err = config(&[(var, bad)]).unwrap_err();
                assert_eq!(err.variable, var);
                assert!(err.to_string().contains("milliseconds"), "{err}");
            }
        }
    }

    #[test]
    fn request_state_keys_in_aws_need_config_load() {
        let ssm = config(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/state-key")]).unwrap_err();
        assert_eq!(ssm.variable, "MCP_REQUEST_STATE_KEY_SSM_PARAMETER");
        assert!(ssm.to_string().contains("Config::load"), "{ssm}");
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mcp-key-AbCdEf";
        let sm = config(&[("MCP_REQUEST_STATE_KEY", arn)]).unwrap_err();
        assert_eq!(sm.variable, "MCP_REQUEST_STATE_KEY");
        assert!(sm.to_string().contains("Config::load"), "{sm}");

        // What load() would fetch, in keyring order.
        let keys = read_request_state_keys(
            &|name: &str| match name {
                "MCP_REQUEST_STATE_KEY" => Some(arn.to_string()),
                "MCP_REQUEST_STATE_KEY_PREVIOUS" => {
                    Some("arn:aws:ssm:eu-west-1:123456789012:parameter/mcp/old".to_string())
                }
                _ => None,
            },
            Mode::Lambda,
        )
        .unwrap();
        assert!(!keys.is_generated());
        let stages: Vec<_> = keys
            .pending()
            .iter()
            .map(|s| match s {
                KeySource::SecretsManager {
                    stage, optional, ..
                } => format!("sm:{stage}:{optional}"),
                KeySource::Ssm { name, .. } => format!("ssm:{name}"),
                KeySource::Inline(_) => "inline".into(),
            })
            .collect();
        assert_eq!(
            stages,
            [
                "sm:AWSCURRENT:false",
                "sm:AWSPREVIOUS:true",
                "ssm:arn:aws:ssm:eu-west-1:123456789012:parameter/mcp/old"
            ]
        );
    }

    #[test]
    fn request_state_key_sources_are_checked_and_named() {
        let key = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let both = config(&[
            ("MCP_REQUEST_STATE_KEY", &key),
            ("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/key"),
        ])
        .unwrap_err();
        assert_eq!(both.variable, "MCP_REQUEST_STATE_KEY_SSM_PARAMETER");
        assert!(both.to_string().contains("not both"), "{both}");

        let lonely = config(&[("MCP_REQUEST_STATE_KEY_PREVIOUS", &key)]).unwrap_err();
        assert_eq!(lonely.variable, "MCP_REQUEST_STATE_KEY_PREVIOUS");
        assert!(!lonely.to_string().contains(&key));

        for bad in [
            "arn:aws:s3:::bucket",
            "arn:aws:secretsmanager:eu-west-1:1:other:x",
        ] {
            let err = config(&[("MCP_REQUEST_STATE_KEY", bad)]).unwrap_err();
            assert_eq!(err.variable, "MCP_REQUEST_STATE_KEY");
            assert!(
                err.to_string().contains("Secrets Manager secret ARN"),
                "{err}"
            );
        }
        let err =
            config(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "no spaces please")]).unwrap_err();
        assert_eq!(err.variable, "MCP_REQUEST_STATE_KEY_SSM_PARAMETER");

        // The Lambda requirement is met by a key in AWS too.
        let keys = read_request_state_keys(
            &|name: &str| (name == "MCP_REQUEST_STATE_KEY_SSM_PARAMETER").then(|| "/k".into()),
            Mode::Lambda,
        )
        .unwrap();
        assert_eq!(keys.pending().len(), 1);
    }
}
