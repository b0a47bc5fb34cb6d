//! AWS plumbing shared by the stores on the one DynamoDB table (handles, tasks, the change
//! feed: the table itself in `table.rs` — client and name, key prefixes, creation and warm-up,
//! the conflict-retried counted transaction; the client's meter; the items' attributes in
//! `item.rs`, and there what a failed call was for the handle and task stores) and the
//! request-state key loader. The stores sit side by side over `table.rs` and take nothing from
//! each other's internals.
//!
//! One HTTP stack for the SDK (hyper 1 + rustls on `ring`: no `aws-lc-sys`, no second TLS
//! library) and the configured timeouts on every call. DynamoDB calls are retried by one
//! policy, `retry.rs` (throttling, 5xx and lost connections, 25 ms backoff with jitter, within
//! the operation timeout; docs/operations.md has the table); the other AWS calls (SSM, Secrets
//! Manager, Lambda, once at start-up or per dispatch) by the SDK's standard retries.
//!
//! The endpoint, region and credentials come from the standard AWS environment, read by the
//! SDK's loader: `AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`
//! (Lambda sets these), `AWS_ENDPOINT_URL_DYNAMODB` (or `AWS_ENDPOINT_URL`) for a local
//! stand-in, and so on.
//!
//! Request-state keys (and the introspection client's secret, `secrets.rs`) in SSM Parameter
//! Store or Secrets Manager are fetched with one SigV4-signed
//! JSON call each (`aws/signed.rs`, feature `aws-secrets`), through `aws-sigv4` (already part of the
//! SDK): the full `aws-sdk-ssm` and `aws-sdk-secretsmanager` crates would add about 1 minute to a
//! cold debug build and 2 min 20 s to a cold release build, for two calls made once at start-up.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_AWS_CONNECT_TIMEOUT_MS` | `1000` | connecting to an AWS endpoint (DynamoDB, SSM, Secrets Manager) |
//! | `MCP_AWS_READ_TIMEOUT_MS` | `2000` | one attempt of an AWS call, from sending to the answer |
//! | `MCP_AWS_OPERATION_TIMEOUT_MS` | `5000` | one AWS call including its retries: the longest a handle operation can take |

#[cfg(feature = "dynamodb")]
pub(crate) mod item;
#[cfg(feature = "dynamodb")]
mod meter;
#[cfg(feature = "dynamodb")]
pub(crate) mod retry;
#[cfg(feature = "aws-secrets")]
pub(crate) mod secrets;
#[cfg(feature = "aws-secrets")]
pub(crate) mod signed;
#[cfg(feature = "dynamodb")]
pub(crate) mod table;
#[cfg(feature = "dynamodb")]
pub use meter::DynamoDbMeter;
pub use usage::DynamoDbUsage;

pub(crate) mod pause;
mod usage;

/// A DynamoDB table a store cannot use, found when it is opened at start-up: which table, for
/// which store, and what to do about it.
///
/// ```
/// let error = mcp_lambda::aws::TableError::new("handle store", "handles", "no AWS region; set AWS_REGION");
/// assert_eq!(
///     error.to_string(),
///     "cannot use DynamoDB table handles for the handle store: no AWS region; set AWS_REGION"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[error("cannot use DynamoDB table {table} for the {store}: {reason}")]
#[non_exhaustive]
pub struct TableError {
    /// The store that was being opened: `handle store`, `task store` or `change feed`.
    pub store: &'static str,
    /// The table name or ARN (or why there is none).
    pub table: String,
    /// What went wrong and what to do.
    pub reason: String,
}

impl TableError {
    /// The `store`'s table `table` cannot be used, for `reason`.
    pub fn new(store: &'static str, table: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            store,
            table: table.into(),
            reason: reason.into(),
        }
    }
}

use std::time::Duration;

#[cfg(any(feature = "dynamodb", feature = "aws-secrets"))]
use aws_config::{BehaviorVersion, retry::RetryConfig, timeout::TimeoutConfig};
#[cfg(any(feature = "dynamodb", feature = "aws-secrets"))]
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};

use crate::env::{ConfigError, Env, Unit};

/// Timeouts of every AWS call (DynamoDB handles, SSM, Secrets Manager), so an unreachable or
/// hung endpoint fails the call within a bounded time instead of hanging the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AwsTimeouts {
    /// Opening a connection, TCP and TLS (`MCP_AWS_CONNECT_TIMEOUT_MS`, default 1 s).
    pub connect: Duration,
    /// One attempt, from sending the request to the answer (`MCP_AWS_READ_TIMEOUT_MS`,
    /// default 2 s).
    pub read: Duration,
    /// One call including its retries with backoff (`MCP_AWS_OPERATION_TIMEOUT_MS`, default
    /// 5 s): the longest a handle operation can take. Keep it below the Lambda timeout.
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

impl AwsTimeouts {
    /// Reads `MCP_AWS_CONNECT_TIMEOUT_MS`, `MCP_AWS_READ_TIMEOUT_MS` and
    /// `MCP_AWS_OPERATION_TIMEOUT_MS`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut timeouts = Self::default();
        for (variable, slot) in [
            ("MCP_AWS_CONNECT_TIMEOUT_MS", &mut timeouts.connect),
            ("MCP_AWS_READ_TIMEOUT_MS", &mut timeouts.read),
            ("MCP_AWS_OPERATION_TIMEOUT_MS", &mut timeouts.operation),
        ] {
            *slot = env.duration(variable, Unit::Millis, slot.as_millis() as u64, 1..=600_000)?;
        }
        Ok(timeouts)
    }
}

#[cfg(any(feature = "dynamodb", feature = "aws-secrets"))]
/// Attempts of one SDK call (the first try and two retries), all within
/// [`AwsTimeouts::operation`].
pub const MAX_ATTEMPTS: u32 = 3;

/// The SDK configuration loader with this crate's HTTP client, timeouts and retries, reading
/// region, credentials and endpoints from the standard AWS environment.
///
/// Override what you need before `load()`; tests point it at a local endpoint:
///
/// ```no_run
/// # async fn demo() {
/// use aws_config::Region;
/// let timeouts = mcp_lambda::aws::AwsTimeouts::default();
/// let sdk = mcp_lambda::aws::loader(&timeouts)
///     .endpoint_url("http://127.0.0.1:8000")
///     .region(Region::new("us-east-1"))
///     .load()
///     .await;
/// assert_eq!(sdk.endpoint_url(), Some("http://127.0.0.1:8000"));
/// # }
/// ```
#[cfg(any(feature = "dynamodb", feature = "aws-secrets"))]
pub fn loader(timeouts: &AwsTimeouts) -> aws_config::ConfigLoader {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let timeout_config = TimeoutConfig::builder()
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.read)
        .operation_attempt_timeout(timeouts.connect + timeouts.read)
        .operation_timeout(timeouts.operation)
        .build();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .timeout_config(timeout_config)
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
}

/// A DynamoDB client on `sdk` whose every request is counted by [`DynamoDbUsage`] (what the
/// per-request metrics report), with the SDK's own retries off: the stores retry each call
/// themselves (throttling, 5xx, lost connections) sooner than the SDK would, and learn whether
/// a write whose answer was lost landed. A client of your own works too; its SDK retries then
/// come on top of the stores'.
#[cfg(feature = "dynamodb")]
pub fn dynamodb_client(sdk: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    // Each store call retries by `retry.rs`'s policy; the SDK's retries on top would multiply
    // the attempts and wait longer between them.
    let config = aws_sdk_dynamodb::config::Builder::from(sdk)
        .interceptor(DynamoDbMeter)
        .retry_config(RetryConfig::disabled())
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// [`shared_config`], refused when it names no region: a store on `table` cannot work without
/// one.
#[cfg(feature = "dynamodb")]
pub(crate) async fn regional_config(
    timeouts: &AwsTimeouts,
    store: &'static str,
    table: &str,
) -> Result<aws_config::SdkConfig, TableError> {
    let sdk = shared_config(timeouts).await;
    if sdk.region().is_none() {
        return Err(TableError::new(
            store,
            table,
            "no AWS region; set AWS_REGION (Lambda sets it)",
        ));
    }
    Ok(sdk)
}

/// The SDK configuration every DynamoDB user in this process shares (the handle store and the
/// change feed): one load at start-up and one connection pool, so INIT opens one connection,
/// not one per user. Loaded once per set of timeouts and endpoint variables.
#[cfg(feature = "dynamodb")]
pub(crate) async fn shared_config(timeouts: &AwsTimeouts) -> aws_config::SdkConfig {
    use std::sync::Mutex;
    type Shared = Option<(AwsTimeouts, Vec<Option<String>>, aws_config::SdkConfig)>;
    static SHARED: Mutex<Shared> = Mutex::new(None);
    let environment: Vec<Option<String>> = [
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_ENDPOINT_URL",
        "AWS_REGION",
    ]
    .iter()
    .map(|name| std::env::var(name).ok())
    .collect();
    if let Some((t, e, config)) = SHARED.lock().expect("shared AWS config lock").as_ref()
        && t == timeouts
        && *e == environment
    {
        return config.clone();
    }
    let config = loader(timeouts).load().await;
    *SHARED.lock().expect("shared AWS config lock") =
        Some((*timeouts, environment, config.clone()));
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_timeouts_default_and_parse_milliseconds() {
        let read = |vars: &'static [(&'static str, &'static str)]| {
            let lookup = move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            };
            AwsTimeouts::from_env(&Env::new(&lookup))
        };
        assert_eq!(read(&[]).unwrap(), AwsTimeouts::default());
        let t = read(&[
            ("MCP_AWS_CONNECT_TIMEOUT_MS", "250"),
            ("MCP_AWS_READ_TIMEOUT_MS", "750"),
            ("MCP_AWS_OPERATION_TIMEOUT_MS", "1500"),
        ])
        .unwrap();
        assert_eq!(t.connect, Duration::from_millis(250));
        assert_eq!(t.read, Duration::from_millis(750));
        assert_eq!(t.operation, Duration::from_millis(1500));
        for bad in [
            &[("MCP_AWS_CONNECT_TIMEOUT_MS", "0")][..],
            &[("MCP_AWS_READ_TIMEOUT_MS", "1s")][..],
            &[("MCP_AWS_OPERATION_TIMEOUT_MS", "600001")][..],
        ] {
            let err = read(bad).unwrap_err();
            assert_eq!(err.variable, bad[0].0);
            assert!(err.to_string().contains("milliseconds"), "{err}");
        }
    }
}
