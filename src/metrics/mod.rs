//! Per-request metrics in CloudWatch's embedded metric format (EMF): one JSON line on stdout
//! per request, which CloudWatch Logs turns into metrics. No API call, no extra latency.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_METRICS` | `on` on Lambda, `off` locally | write one EMF record per request |
//! | `MCP_METRICS_NAMESPACE` | `mcp-lambda` | the CloudWatch namespace of the metrics |
//!
//! Each record carries, in the namespace, with the dimension sets `[Function]`,
//! `[Function, Method]` and `[Function, Method, Name]`:
//!
//! | metric | unit | value |
//! |---|---|---|
//! | `Requests` | Count | 1 |
//! | `Duration` | Milliseconds | until the answer's last byte (not for `subscriptions/listen`, a stream) |
//! | `Errors` | Count | 1 for an HTTP 5xx or a JSON-RPC error of the server's own (-32603, -32000…-32099) |
//! | `ClientErrors` | Count | 1 for an HTTP 4xx or a JSON-RPC error that is the client's (-32700, -32600…-32602, -32020…-32022, …) |
//! | `AuthRefusals` | Count | 1 for a 401, or a 403 with a bearer challenge (a scope the token lacks; not the front's 403s) |
//! | `ColdStart` | Count | 1 on an instance's first request |
//! | `DynamoDbRequests` | Count | DynamoDB requests sent while the request ran ([`DynamoDbUsage`](crate::aws::DynamoDbUsage)) |
//! | `DynamoDbLatency` | Milliseconds | their summed latency |
//! | `DynamoDbThrottles` | Count | the ones DynamoDB throttled |
//!
//! `Function` is the Lambda function's name (`AWS_LAMBDA_FUNCTION_NAME`; `local` elsewhere).
//! `Method` is the MCP method, or `-` when the request was refused before its method was read.
//! `Name` is the tool (`tools/call`), prompt (`prompts/get`) or resource (`resources/read`:
//! its URI when listed, else the URI template it matches) when it is on the server's lists,
//! `other` when it is not (cardinality stays bounded whatever clients send), `-` for every
//! other method. The record also holds, as properties (searchable in Logs Insights, not
//! metrics): `requestId` (Lambda's), `xrayTraceId`, `traceId` (from a valid W3C
//! `traceparent`), `httpStatus` and `jsonRpcCode`. Never a token, an argument or a handle's
//! contents. `/healthz` is not recorded.

mod names;
mod record;
mod settings;

pub use names::{KnownNames, MAX_KNOWN_NAMES};
pub use record::{Invocation, RequestRecord};
pub use settings::MetricsSettings;

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

/// A process's metrics: its settings, the names it counts, whether it served a request yet.
#[derive(Debug)]
pub struct Metrics {
    settings: MetricsSettings,
    function: String,
    names: KnownNames,
    served: AtomicBool,
}

impl Metrics {
    /// Metrics as `settings` say, for the function named by `AWS_LAMBDA_FUNCTION_NAME`.
    ///
    /// ```
    /// let config = mcp_lambda::Config::local_default();
    /// let metrics = mcp_lambda::metrics::Metrics::new(config.metrics.clone());
    /// assert!(!metrics.enabled(), "off locally by default");
    /// ```
    pub fn new(settings: MetricsSettings) -> Self {
        Self {
            settings,
            function: std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "local".into()),
            names: KnownNames::default(),
            served: AtomicBool::new(false),
        }
    }

    /// Whether records are written.
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// The names that count as themselves in the `Name` dimension.
    pub fn names(&self) -> &KnownNames {
        &self.names
    }

    /// Whether this is the instance's first request (then never again).
    pub(crate) fn cold_start(&self) -> bool {
        !self.served.swap(true, Ordering::Relaxed)
    }

    /// Writes `record` as one EMF line on stdout (one write, so it never interleaves with a
    /// log line).
    pub(crate) fn emit(&self, record: &RequestRecord) {
        if !self.settings.enabled {
            return;
        }
        let mut line = record.to_emf(&self.settings.namespace, &self.function, &self.names);
        line.push('\n');
        let _ = std::io::stdout().lock().write_all(line.as_bytes());
    }
}
