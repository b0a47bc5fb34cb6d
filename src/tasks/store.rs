//! The task store: every operation one backend request, owner-bound like handles.

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::{TaskRecord, TaskState};
pub use crate::handles::CallerQuota;
use crate::handles::HandleId;

/// Why a task store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// No live task with this id belongs to this owner: unknown, expired or someone else's,
    /// deliberately alike (-32602 for a client).
    #[error("no such task: it does not exist, has expired, or belongs to someone else")]
    NotFound,
    /// The store could not be reached; nothing was changed (a create answered this was never
    /// made durable: no `CreateTaskResult` may be sent).
    #[error("task store unavailable: {0}; try again shortly")]
    Unavailable(String),
    /// The request is wrong (too large, too many keys).
    #[error("invalid task request: {0}")]
    Invalid(String),
    /// The owner already created as many tasks in this window as one caller may (nothing was
    /// stored; the window turns after `retry_after`).
    #[error(
        "you have created {max} tasks in the last {window_secs} s, the most one caller may; \
         try again in {} s", retry_after.as_secs().max(1)
    )]
    CallerLimit {
        /// The limit.
        max: u32,
        /// The window's length, in seconds.
        window_secs: u64,
        /// Until the window turns.
        retry_after: Duration,
    },
}

/// The refusal of `quota` at `now_ms`.
pub(crate) fn over_quota(quota: &CallerQuota, now_ms: u64) -> TaskError {
    TaskError::CallerLimit {
        max: quota.max,
        window_secs: quota.window.as_secs(),
        retry_after: quota.window_at(now_ms).1,
    }
}

/// How a round ended, as the worker records it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RoundEnd {
    /// The tool returned a result: `completed`.
    Completed(Value),
    /// The tool answered a JSON-RPC error: `failed`.
    Failed(Value),
    /// The tool asked for input: `input_required` with these requests, the next round waits
    /// for their answers.
    InputRequired {
        /// The `inputRequests` map.
        requests: Value,
        /// Its keys.
        keys: Vec<String>,
        /// The round's `requestState`, if any.
        request_state: Option<String>,
    },
    /// The worker saw the cancel and stopped: `cancelled`.
    Cancelled,
}

impl RoundEnd {
    /// The state the task is in after this end.
    pub fn state(&self) -> TaskState {
        match self {
            Self::Completed(_) => TaskState::Completed,
            Self::Failed(_) => TaskState::Failed,
            Self::InputRequired { .. } => TaskState::InputRequired,
            Self::Cancelled => TaskState::Cancelled,
        }
    }
}

/// Durable, owner-bound tasks; see the [module docs](super). Dyn-compatible.
///
/// Client-facing operations ([`create`](Self::create), [`get`](Self::get),
/// [`answer`](Self::answer), [`cancel`](Self::cancel)) name the owner; worker operations
/// ([`claim`](Self::claim), [`check`](Self::check), [`finish`](Self::finish)) name the round
/// they hold, and are conditional on it, so a second delivery of the same round (the Lambda
/// service retries asynchronous invocations) can neither run the tool again nor overwrite a
/// result.
pub trait TaskStore: Send + Sync + fmt::Debug + 'static {
    /// Stores a new task; once this returns `Ok`, a `get` from any instance finds it. With a
    /// `quota`, its owner's count in the current window goes up in the same request, and a
    /// create past it stores nothing ([`TaskError::CallerLimit`]).
    fn create<'a>(
        &'a self,
        task: &'a TaskRecord,
        quota: Option<CallerQuota>,
    ) -> BoxFuture<'a, Result<(), TaskError>>;

    /// Reads a task (strongly consistent).
    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>>;

    /// Records answers to the current round's outstanding requests; keys that are not
    /// outstanding are ignored. Returns the task as it now is.
    fn answer<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        responses: &'a std::collections::BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>>;

    /// Records a cancel request (a no-op on a finished task). Returns the task as it now is.
    fn cancel<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>>;

    /// Claims `round` for a worker until `lease_until_ms`: the task must be working (or have
    /// every input answered), at that round, unclaimed and not cancelled. `None` when it is not
    /// claimable (already claimed by another delivery, finished, cancelled).
    fn claim<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        lease_until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskError>>;

    /// A worker's look at its task while the round runs: records `status_message` when
    /// given, and returns whether a cancel was asked for.
    fn check<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        status_message: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, TaskError>>;

    /// Ends the claimed `round`; `false` when the claim no longer holds or ran out (nothing
    /// written: a task whose worker's claim ran out is already reported `failed`).
    fn finish<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        end: &'a RoundEnd,
    ) -> BoxFuture<'a, Result<bool, TaskError>>;
}
