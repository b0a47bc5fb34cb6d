//! Durable tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): tool calls that
//! outlive the request, kept in a [`TaskStore`] any instance can read.
//!
//! A `tools/call` from a client that declared the extension on that request, for a tool whose
//! [`TaskPolicy`] allows it, is recorded as a task (durably: a `tasks/get` from any instance
//! finds it before the `CreateTaskResult` goes out) and handed to a worker. The worker runs the
//! tool's rounds through rmcp's handler dispatch, in process, as a request's call is run; a round that answers
//! `input_required` parks the task until `tasks/update` (from any instance) has answered every
//! request, and the next round runs with the answers and the round's `requestState`, as a
//! client retrying the call would send them.
//!
//! The store's rules, like handles': every operation is one backend request; a task belongs to
//! its owner and looks missing to anyone else; expiry is checked on read; worker writes are
//! conditional on the round they claimed, so a second delivery of the same round runs nothing
//! and overwrites nothing.

mod dispatch;
#[cfg(feature = "dynamodb")]
pub(crate) mod dynamodb;
mod engine;
mod intake;
mod memory;
mod record;
mod retry;
pub(crate) mod round_token;
mod settings;
mod stop;
mod store;
mod view;

pub use dispatch::Dispatch;
#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
pub use dispatch::LambdaDispatch;
#[cfg(feature = "dynamodb")]
pub use dynamodb::DynamoDbTaskStore;
#[cfg(feature = "dynamodb")]
#[doc(hidden)]
pub use dynamodb::{MAX_ANSWER_KEYS, MAX_KEY_BYTES, MAX_TASK_BYTES};
pub(crate) use engine::EXTENSION;
#[doc(hidden)]
pub use engine::Engine;
pub use engine::Tasks;
pub(crate) use engine::{RoundOutput, ToolRunner};
pub(crate) use intake::{Intake, RoundInProcess, TaskPolicies};
pub use memory::MemoryTaskStore;
// Limits the stores keep, told in docs/tasks.md; public for the crate's own tests.
#[doc(hidden)]
pub use memory::MAX_MEMORY_TASKS;
#[doc(hidden)]
pub use record::CLAIM_WINDOW_MS;
pub use record::{TaskRecord, TaskState};
pub use settings::TaskSettings;
pub(crate) use stop::until_stopped;
pub use store::{CallerQuota, RoundEnd, TaskError, TaskStore};
pub(crate) use view::client_view;

/// Whether a tool may run as a task: the handler's choice, per tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskPolicy {
    /// Always answered in the request.
    #[default]
    Never,
    /// A task when the client declared the extension on the request, otherwise answered in
    /// the request.
    Optional,
    /// Only as a task: a client that did not declare the extension gets -32021.
    Required,
    /// Only as a task, once its input is gathered: a call without `inputResponses` runs in the
    /// request (the tool's contract: that round only asks, with `input_required`, MRTR
    /// style), and the call that brings the answers becomes the task. A client that did not
    /// declare the extension gets -32021.
    RequiredAfterInput,
}

pub(crate) use crate::env::now_ms;

/// Applies a round's end to a task (every store keeps the same transitions).
pub(crate) fn apply_end(task: &mut TaskRecord, round: u32, end: &RoundEnd, now_ms: u64) {
    task.state = end.state();
    task.updated_at_ms = now_ms;
    match end {
        RoundEnd::Completed(result) => task.result = Some(result.clone()),
        RoundEnd::Failed(error) => task.error = Some(error.clone()),
        RoundEnd::Cancelled => {}
        RoundEnd::InputRequired {
            requests,
            keys,
            request_state,
        } => {
            task.round = round + 1;
            task.input_requests = Some(requests.clone());
            task.pending = keys.iter().cloned().collect();
            task.responses.clear();
            task.request_state = request_state.clone();
        }
    }
}
