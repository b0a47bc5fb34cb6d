//! A task round's store writes retried until the round's own deadline.
//!
//! Each store call is retried within `MCP_AWS_OPERATION_TIMEOUT_MS` (5 s by default,
//! `aws/retry.rs`); a throttling burst or an outage longer than that used to leave a round's
//! end unrecorded, so a task whose work was done read `failed` once its claim ran out. A round
//! has its own deadline (its claim), so its writes keep trying until then: `Unavailable` (the
//! store unreachable, throttled or answering 5xx through a whole call) is tried again after
//! a pause that doubles from 100 ms to 2 s, with jitter so the workers of one outage do not
//! come back at once; every other answer, a condition failure read as `Ok(false)`/`Ok(None)`
//! included, is the answer.

use std::time::Duration;

use super::TaskError;

const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// `write` until it answers something other than [`TaskError::Unavailable`], or until
/// `deadline_ms` (epoch ms) leaves no time for another attempt: then its last error.
pub(crate) async fn until<T, F, Fut>(
    what: &'static str,
    deadline_ms: u64,
    mut write: F,
) -> Result<T, TaskError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, TaskError>>,
{
    let mut pause = FIRST_PAUSE;
    let mut attempt = 1u32;
    loop {
        match write().await {
            Err(TaskError::Unavailable(why)) => {
                let left = deadline_ms.saturating_sub(super::now_ms());
                let wait = crate::aws::pause::jittered(pause);
                if u128::from(left) <= wait.as_millis() {
                    tracing::warn!(write = what, attempts = attempt, error = %why, "the task store stayed unavailable until the round's deadline");
                    return Err(TaskError::Unavailable(why));
                }
                if attempt == 1 {
                    tracing::info!(write = what, error = %why, "task store unavailable; retrying until the round's deadline");
                }
                tokio::time::sleep(wait).await;
                pause = (pause * 2).min(LONGEST_PAUSE);
                attempt += 1;
            }
            answer => return answer,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[tokio::test]
    async fn unavailable_is_retried_until_it_answers_and_other_errors_are_answers() {
        let calls = AtomicU32::new(0);
        let deadline = super::super::now_ms() + 60_000;
        let answer = until("finish", deadline, || {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            async move {
                if n < 3 {
                    Err(TaskError::Unavailable("throttled".into()))
                } else {
                    Ok(true)
                }
            }
        })
        .await;
        assert!(answer.unwrap());
        assert_eq!(calls.load(Ordering::SeqCst), 4);

        let calls = AtomicU32::new(0);
        let answer: Result<bool, _> = until("finish", deadline, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(TaskError::NotFound) }
        })
        .await;
        assert!(matches!(answer, Err(TaskError::NotFound)));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    }

    #[tokio::test]
    async fn past_its_deadline_a_write_is_not_tried_again() {
        let calls = AtomicU32::new(0);
        let answer: Result<bool, _> = until("claim", super::super::now_ms() + 50, || {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(TaskError::Unavailable("down".into())) }
        })
        .await;
        assert!(matches!(answer, Err(TaskError::Unavailable(_))));
        assert!(calls.load(Ordering::SeqCst) <= 2);
    }
}
