//! How a round's work is stopped: a task's terminal status is what its work actually did.
//!
//! rmcp runs a handler's `call_tool` in a task of its own and only cancels a token when the
//! request goes away, so a tool that never looks at the token would run on after a cancel or
//! after its worker's claim ran out, and change things under a task already reported
//! `cancelled` or `failed`. A round's call therefore runs inside [`until_stopped`]: when the
//! engine stops the round, rmcp's token fires (for tools that check it and for work they
//! handed it to) and the tool's future is dropped, so it goes no further than the await it is
//! parked at. The engine writes `cancelled` or `failed` only once the round has answered, that
//! is after the future is gone; a tool that finished first is recorded `completed`. So once a
//! task reads `cancelled` or `failed`, its work changes nothing more — except a request the tool
//! had already sent when it was stopped (its final write in flight), which may still land: a
//! cancel that comes that late finds `completed`, or `cancelled` with the effect done, which the
//! spec allows (cancellation is cooperative). Put the irreversible step last, as one write.
//!
//! Code that blocks a thread without awaiting cannot be stopped this way; the engine waits for
//! the round until its claim runs out, and the task then reads `failed`.

use std::future::Future;

use rmcp::ErrorData;
use tokio_util::sync::CancellationToken;

/// The marker of a round the engine stopped; the engine reads it from the round's answer.
pub(crate) const STOPPED: &str = "the task round was stopped";

/// Runs `work` until it ends, `stop` fires (the engine: a cancel, or the claim running out) or
/// `request` fires (rmcp: nobody reads the answer any more). Stopped, it cancels `request` and
/// drops `work` before answering.
pub(crate) async fn until_stopped<T>(
    stop: &CancellationToken,
    request: &CancellationToken,
    work: impl Future<Output = Result<T, ErrorData>>,
) -> Result<T, ErrorData> {
    tokio::pin!(work);
    tokio::select! {
        // A round that is ready and stopped at the same poll counts as finished: its effects
        // are done, and its result is what the task should show.
        biased;
        result = &mut work => result,
        _ = stop.cancelled() => {
            request.cancel();
            Err(ErrorData::internal_error(STOPPED, None))
        }
        _ = request.cancelled() => Err(ErrorData::internal_error(STOPPED, None)),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_stopped_round_goes_no_further_than_its_await_and_its_token_fires() {
        let (stop, request) = (CancellationToken::new(), CancellationToken::new());
        let effect = Arc::new(AtomicBool::new(false));
        let done = effect.clone();
        let work = async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            done.store(true, Ordering::SeqCst);
            Ok::<_, ErrorData>(())
        };
        let stopper = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            stopper.cancel();
        });
        let answer = until_stopped(&stop, &request, work).await;
        assert_eq!(answer.unwrap_err().message, STOPPED);
        assert!(
            request.is_cancelled(),
            "rmcp's token fires for tools that check it"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            !effect.load(Ordering::SeqCst),
            "the effect after the await never ran"
        );
    }

    #[tokio::test]
    async fn a_round_that_finished_keeps_its_result_even_if_stopped_at_once() {
        let (stop, request) = (CancellationToken::new(), CancellationToken::new());
        stop.cancel();
        let answer = until_stopped(&stop, &request, async { Ok::<_, ErrorData>(7) }).await;
        assert_eq!(answer.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_round_nobody_reads_any_more_is_dropped() {
        let (stop, request) = (CancellationToken::new(), CancellationToken::new());
        request.cancel();
        let answer = until_stopped(&stop, &request, std::future::pending::<Result<(), _>>()).await;
        assert_eq!(answer.unwrap_err().message, STOPPED);
    }
}
