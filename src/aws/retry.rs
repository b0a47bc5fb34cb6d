//! The retry policy of every DynamoDB call the stores make (handles, tasks, the change feed),
//! in one place: what is tried again, how soon, for how long, and whether a failed write may
//! have landed.
//!
//! The SDK's own retries are off on the DynamoDB client ([`dynamodb_client`](super::dynamodb_client)):
//! they wait up to a second or two before the next attempt and share a process-wide token
//! bucket that sustained throttling drains, after which nothing is retried at all. Here each
//! call is tried again, attempt by attempt, while its budget lasts:
//!
//! | an attempt's answer | tried again | may the write have landed |
//! |---|---|---|
//! | throttled (`ProvisionedThroughputExceededException`, `ThrottlingException`, `RequestLimitExceeded`, a transaction cancelled for throttling) | yes | no |
//! | a 5xx (`InternalServerError`, `ServiceUnavailable`) | yes | yes |
//! | no connection (refused, connect timeout, DNS) | yes | no |
//! | the connection lost or the attempt timed out after sending | yes | yes |
//! | any other 4xx (a condition failure, `ValidationException`, no table, no permission) | no, it is the answer | no |
//!
//! - **Budget:** the call's operation timeout (`MCP_AWS_OPERATION_TIMEOUT_MS`, 5 s by default),
//!   counted from the first attempt; an attempt that would outlast it is cut at its end.
//! - **Pauses:** 25 ms before the second attempt, doubling to at most 1 s, each between half
//!   and all of that (jitter, so the callers of one burst do not come back together); at most
//!   [`ATTEMPTS`] attempts. The 25 ms base and the ten retries are the AWS SDK for Java v1's
//!   DynamoDB defaults (`PredefinedBackoffStrategies.DYNAMODB_DEFAULT_BASE_DELAY`,
//!   `PredefinedRetryPolicies.DYNAMODB_DEFAULT_MAX_ERROR_RETRY`); the DynamoDB Developer Guide
//!   ("Error retries and exponential backoff") describes the same shape, "up to 50 milliseconds
//!   before the first retry, up to 100 milliseconds before the second". That SDK waited from
//!   500 ms after throttling; here throttling waits as any other failure, because the attempts
//!   are few and bounded by the budget, and on an on-demand table throttling is mostly a
//!   partition's burst that passes in milliseconds.
//! - **Soon, on purpose:** a repeat of a write whose answer was lost must meet the item before
//!   many other writes have moved it on, or the item's write history (handles) no longer
//!   reaches back to tell whether it landed.
//!
//! Callers keep what they know: a write that [`maybe_applied`](Sent::maybe_applied) and then
//! met a condition failure asks the item whether its own write id is there. A task round's
//! writes are tried again past one call's budget, until the round's deadline
//! (`tasks/retry.rs`).

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

use super::pause::jittered;

/// Attempts of one call at most (the legacy AWS SDKs' DynamoDB default: one try, ten retries).
pub(crate) const ATTEMPTS: u32 = 11;
const FIRST_PAUSE: Duration = Duration::from_millis(25);
const LONGEST_PAUSE: Duration = Duration::from_secs(1);
/// An attempt given less time than this is not started.
const SHORTEST_ATTEMPT: Duration = Duration::from_millis(50);

/// A call's last answer, and whether any of its attempts may have been applied.
pub(crate) struct Sent<T, E> {
    /// The last attempt's answer.
    pub(crate) result: Result<T, SdkError<E, HttpResponse>>,
    /// Some failed attempt may have been applied by DynamoDB without the call learning it (a
    /// 5xx, a connection lost after sending, a timeout), so a later condition failure may be
    /// this call's own write.
    pub(crate) maybe_applied: bool,
}

/// What one failed attempt says about the next.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// The answer: do not try again.
    Answer,
    /// Try again; `maybe_applied` when this attempt may have landed.
    Again { maybe_applied: bool },
}

/// The budget of one call on `client`: its operation timeout, 5 s when it has none.
pub(crate) fn budget(client: &Client) -> Duration {
    client
        .config()
        .timeout_config()
        .and_then(|t| t.operation_timeout())
        .unwrap_or(Duration::from_secs(5))
}

/// `send` (one attempt of one request: `|| request.clone().send()`) under the policy, within
/// `client`'s [`budget`].
pub(crate) async fn send<T, E, F, Fut>(client: &Client, send: F) -> Sent<T, E>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SdkError<E, HttpResponse>>>,
{
    send_within(budget(client), send).await
}

/// [`send`] within `budget`.
pub(crate) async fn send_within<T, E, F, Fut>(budget: Duration, mut send: F) -> Sent<T, E>
where
    E: ProvideErrorMetadata,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, SdkError<E, HttpResponse>>>,
{
    let started = Instant::now();
    let mut maybe_applied = false;
    let mut pause = FIRST_PAUSE;
    let mut result = send().await;
    for _ in 1..ATTEMPTS {
        let Err(error) = &result else { break };
        match verdict(error) {
            Verdict::Answer => break,
            Verdict::Again { maybe_applied: m } => maybe_applied |= m,
        }
        let wait = jittered(pause);
        let left = budget.saturating_sub(started.elapsed() + wait);
        if left < SHORTEST_ATTEMPT {
            break;
        }
        tokio::time::sleep(wait).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
        match tokio::time::timeout(left, send()).await {
            Ok(answer) => result = answer,
            // Cut at the budget's end: it may have been sent, and the last error stands.
            Err(_) => {
                maybe_applied = true;
                break;
            }
        }
    }
    if let Err(error) = &result
        && let Verdict::Again { maybe_applied: m } = verdict(error)
    {
        maybe_applied |= m;
    }
    Sent {
        result,
        maybe_applied,
    }
}

/// Error codes DynamoDB throttles with.
const THROTTLED: [&str; 3] = [
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
];

/// Whether `error` is DynamoDB throttling the request (a transaction cancelled because one of
/// its items was throttled included).
pub(crate) fn is_throttling<E: ProvideErrorMetadata>(error: &SdkError<E, HttpResponse>) -> bool {
    let Some(code) = error.code() else {
        return false;
    };
    THROTTLED.contains(&code)
        || (code == "TransactionCanceledException"
            && error.message().is_some_and(|m| {
                m.contains("ThrottlingError") || m.contains("ProvisionedThroughputExceeded")
            }))
}

fn verdict<E: ProvideErrorMetadata>(error: &SdkError<E, HttpResponse>) -> Verdict {
    match error {
        SdkError::ServiceError(service) => {
            let status = service.raw().status();
            if status.is_server_error() {
                Verdict::Again {
                    maybe_applied: true,
                }
            } else if is_throttling(error) {
                Verdict::Again {
                    maybe_applied: false,
                }
            } else {
                Verdict::Answer
            }
        }
        SdkError::DispatchFailure(failure) => Verdict::Again {
            maybe_applied: !failure
                .as_connector_error()
                .is_some_and(|e| failed_to_connect(e)),
        },
        // An attempt timed out, or the answer could not be read: it went out.
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => Verdict::Again {
            maybe_applied: true,
        },
        // The request could not be built: it never will be.
        _ => Verdict::Answer,
    }
}

/// Whether a connector error happened while opening the connection (refused, connect timeout,
/// DNS), before any byte of the request was sent. hyper's pool tags those errors "connect".
fn failed_to_connect(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(e) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
            return e.is_connect();
        }
        next = error.source();
    }
    false
}

/// How often a transaction meets a concurrent one on the same item (`TransactionConflict`,
/// which nothing above retries) before giving up: counted creates, the change feed's bumps.
pub(crate) const CONFLICT_ATTEMPTS: u32 = 8;

/// A short random pause before the next attempt after a `TransactionConflict` (nothing of a
/// cancelled transaction was applied), growing with `attempt`.
pub(crate) async fn conflict_pause(attempt: u32) {
    tokio::time::sleep(jittered(Duration::from_millis(
        20 + 10 * u64::from(attempt),
    )))
    .await;
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use aws_sdk_dynamodb::error::{ConnectorError, ErrorMetadata};
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_smithy_types::body::SdkBody;

    fn answered(status: u16, code: &str, message: &str) -> SdkError<GetItemError, HttpResponse> {
        let meta = ErrorMetadata::builder().code(code).message(message).build();
        SdkError::service_error(
            GetItemError::generic(meta),
            HttpResponse::new(status.try_into().unwrap(), SdkBody::empty()),
        )
    }

    #[test]
    fn each_failure_is_read_as_the_table_says() {
        let again = |maybe_applied| Verdict::Again { maybe_applied };
        for (error, expected) in [
            (
                answered(400, "ProvisionedThroughputExceededException", ""),
                again(false),
            ),
            (answered(400, "ThrottlingException", ""), again(false)),
            (
                answered(
                    400,
                    "TransactionCanceledException",
                    "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ThrottlingError]",
                ),
                again(false),
            ),
            (
                answered(
                    400,
                    "TransactionCanceledException",
                    "Transaction cancelled [ConditionalCheckFailed, None]",
                ),
                Verdict::Answer,
            ),
            (answered(500, "InternalServerError", ""), again(true)),
            (answered(503, "ServiceUnavailable", ""), again(true)),
            (
                answered(400, "ConditionalCheckFailedException", ""),
                Verdict::Answer,
            ),
            (answered(400, "ValidationException", ""), Verdict::Answer),
            (
                answered(400, "ResourceNotFoundException", ""),
                Verdict::Answer,
            ),
            (SdkError::timeout_error("slow"), again(true)),
            (
                SdkError::dispatch_failure(ConnectorError::io("reset".into())),
                again(true),
            ),
            (SdkError::construction_failure("bad"), Verdict::Answer),
        ] {
            assert_eq!(verdict(&error), expected, "{error:?}");
        }
    }

    #[tokio::test]
    async fn throttling_is_tried_again_until_it_answers_and_a_condition_failure_is_an_answer() {
        let calls = AtomicU32::new(0);
        let sent = send_within(Duration::from_secs(5), || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                match n {
                    0 | 1 => Err(answered(400, "ThrottlingException", "")),
                    _ => Ok(n),
                }
            }
        })
        .await;
        assert_eq!(sent.result.unwrap(), 2);
        assert!(!sent.maybe_applied, "a throttled attempt changed nothing");

        let calls = AtomicU32::new(0);
        let sent: Sent<(), _> = send_within(Duration::from_secs(5), || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                Err(match n {
                    0 => answered(500, "InternalServerError", ""),
                    _ => answered(400, "ConditionalCheckFailedException", ""),
                })
            }
        })
        .await;
        assert_eq!(
            sent.result.unwrap_err().code(),
            Some("ConditionalCheckFailedException")
        );
        assert!(sent.maybe_applied, "the 500 may have landed");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "the answer is not repeated"
        );
    }

    #[tokio::test]
    async fn a_store_that_keeps_failing_is_given_up_on_within_the_budget() {
        let calls = AtomicU32::new(0);
        let started = Instant::now();
        let sent: Sent<(), _> = send_within(Duration::from_millis(400), || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(answered(500, "InternalServerError", "")) }
        })
        .await;
        assert!(sent.result.is_err() && sent.maybe_applied);
        assert!(started.elapsed() < Duration::from_millis(450));
        let calls = calls.load(Ordering::SeqCst);
        assert!((3..=ATTEMPTS).contains(&calls), "{calls} attempts");
    }
}
