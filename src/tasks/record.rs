//! One task as the store keeps it.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::handles::HandleId;

/// Where a task stands, as stored. What a client sees is derived from it
/// (by the engine): a cancel asked for while the task waits for input, or a
/// worker whose lease ran out, show as `cancelled` and `failed` without a second write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// A round is queued or running.
    Working,
    /// The last round asked the client for input (`inputRequests`).
    InputRequired,
    /// The tool returned a result (an `isError` result included).
    Completed,
    /// The tool answered a JSON-RPC error, or its worker stopped.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
}

impl TaskState {
    /// Whether the task can no longer change.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// A stored task.
///
/// Rounds are the tool's MRTR rounds: round 0 runs the call as the client sent it; when a
/// round answers `input_required`, its requests become the task's `inputRequests`, and once
/// `tasks/update` has answered them all the next round runs with those responses and the
/// round's `requestState`, exactly as a client retrying the call would send them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// The id the client holds (a UUIDv4 from the OS CSPRNG).
    pub id: HandleId,
    /// Who may read, answer and cancel it.
    pub owner: String,
    /// What the worker needs to run the task, kept as is by every store (the engine's:
    /// the `tools/call` params and the caller).
    pub call: Value,
    /// The stored state.
    pub state: TaskState,
    /// The round the next worker runs.
    pub round: u32,
    /// The round a worker has claimed, and until when its claim holds (epoch ms).
    pub claimed: Option<(u32, u64)>,
    /// A client asked to cancel.
    pub cancel_requested: bool,
    /// The outstanding requests of an `input_required` round.
    pub input_requests: Option<Value>,
    /// Their keys not answered yet.
    pub pending: BTreeSet<String>,
    /// Answers received for the current round, by key.
    pub responses: BTreeMap<String, Value>,
    /// The round's MRTR `requestState`, handed back to the next round.
    pub request_state: Option<String>,
    /// The latest progress or status line.
    pub status_message: Option<String>,
    /// The tool's result (`completed`).
    pub result: Option<Value>,
    /// The JSON-RPC error (`failed`).
    pub error: Option<Value>,
    /// Epoch milliseconds.
    pub created_at_ms: u64,
    /// Epoch milliseconds.
    pub updated_at_ms: u64,
    /// How long the task lives after creation, in ms.
    pub ttl_ms: u64,
    /// How often clients should poll, in ms.
    pub poll_interval_ms: u64,
}

/// How long after a round is handed out (its record's `updated_at_ms`: the create, or the
/// answer that completed its inputs) a worker may still claim it. Past it no claim lands
/// (both stores' condition) and `tasks/get` reads the round `failed` with "nothing ran", so a
/// round whose worker never came, or could not reach the store, is not `working` for longer.
/// A worker keeps trying to claim while the store is unavailable until then.
pub const CLAIM_WINDOW_MS: u64 = 60_000;

impl TaskRecord {
    /// A task about to run round 0 of `call`.
    pub fn new(
        id: HandleId,
        owner: &str,
        call: Value,
        now_ms: u64,
        ttl_ms: u64,
        poll_interval_ms: u64,
    ) -> Self {
        Self {
            id,
            owner: owner.to_owned(),
            call,
            state: TaskState::Working,
            round: 0,
            claimed: None,
            cancel_requested: false,
            input_requests: None,
            pending: BTreeSet::new(),
            responses: BTreeMap::new(),
            request_state: None,
            status_message: None,
            result: None,
            error: None,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            ttl_ms,
            poll_interval_ms,
        }
    }

    /// When the task stops existing, in epoch ms.
    pub fn expires_at_ms(&self) -> u64 {
        self.created_at_ms.saturating_add(self.ttl_ms)
    }
}
