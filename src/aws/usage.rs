//! What this process has asked of DynamoDB so far: requests (attempts, retries included), their
//! latency, and how many DynamoDB throttled. [`DynamoDbMeter`](super::DynamoDbMeter) counts;
//! the per-request metrics take the difference over a request.
//!
//! Process-wide counters, not per request: on Lambda an execution environment serves one
//! invocation at a time, so the difference over an invocation is that invocation's. With
//! managed concurrency (`AWS_LAMBDA_MAX_CONCURRENCY`) or on the local server, requests that
//! overlap share what was sent while both ran.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static REQUESTS: AtomicU64 = AtomicU64::new(0);
static LATENCY_MICROS: AtomicU64 = AtomicU64::new(0);
static THROTTLES: AtomicU64 = AtomicU64::new(0);

/// DynamoDB requests, their total latency and the throttled ones.
///
/// ```
/// use mcp_lambda::aws::DynamoDbUsage;
///
/// let before = DynamoDbUsage::now();
/// // ... a request's work ...
/// let used = DynamoDbUsage::now().since(before);
/// assert!(used.requests >= used.throttles);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DynamoDbUsage {
    /// HTTP requests sent (every attempt of every call).
    pub requests: u64,
    /// Their summed latency, from sending to the answer.
    pub latency: Duration,
    /// Requests DynamoDB refused as throttled.
    pub throttles: u64,
}

impl DynamoDbUsage {
    /// The counters now.
    pub fn now() -> Self {
        Self {
            requests: REQUESTS.load(Ordering::Relaxed),
            latency: Duration::from_micros(LATENCY_MICROS.load(Ordering::Relaxed)),
            throttles: THROTTLES.load(Ordering::Relaxed),
        }
    }

    /// What was used between `earlier` and `self`.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            requests: self.requests.saturating_sub(earlier.requests),
            latency: self.latency.saturating_sub(earlier.latency),
            throttles: self.throttles.saturating_sub(earlier.throttles),
        }
    }

    /// Counts one finished request.
    #[cfg_attr(not(feature = "dynamodb"), allow(dead_code))]
    pub(crate) fn record(latency: Duration, throttled: bool) {
        REQUESTS.fetch_add(1, Ordering::Relaxed);
        LATENCY_MICROS.fetch_add(
            u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        if throttled {
            THROTTLES.fetch_add(1, Ordering::Relaxed);
        }
    }
}
