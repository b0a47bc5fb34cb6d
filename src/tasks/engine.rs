//! The engine: accepting a task, answering `tasks/*`, and running a round as a worker.
//!
//! A server describes its tasks with [`Tasks`] (the store, how rounds reach a worker, the
//! settings); [`App::server`](crate::App::server) starts the [`Engine`] from it, whole: the
//! runner its rounds go through, the MCP path and the round-token keys are given at
//! construction. The engine holds the runner, the runner the handler, so the handler's side
//! holds the engine weakly (`Arc::new_cyclic`): no strong cycle, nothing set after the fact.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{CreateTaskResult, ErrorData, GetTaskResult, TaskStatus};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
use super::LambdaDispatch;
use super::view::task_of;
use super::{
    Dispatch, RoundEnd, TaskError, TaskRecord, TaskSettings, TaskState, TaskStore, client_view,
    now_ms,
};
use crate::auth::Principal;
use crate::handles::HandleId;

/// What one round of a tool answered, as the worker reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RoundOutput {
    /// A `CallToolResult` (an `isError` one included).
    Completed(Value),
    /// An `InputRequiredResult`: its `inputRequests` and `requestState`.
    InputRequired {
        /// The requests, by key.
        requests: Value,
        /// The state to hand back with the answers.
        request_state: Option<String>,
    },
    /// A JSON-RPC error object.
    Error(Value),
}

/// Runs one round of a tool call in this process, through the handler's dispatch a request
/// takes (`handler/dispatch.rs` implements it). `progress` hears each progress message as it
/// comes.
pub(crate) trait ToolRunner: Send + Sync + 'static {
    /// Runs `params` (a `tools/call`'s params, `_meta` included) as `caller`. When `stop`
    /// fires, the tool's future must be dropped (and rmcp's cancellation token fired) before
    /// the returned future ends: the engine records `cancelled` or `failed` only after that.
    fn run_round(
        &self,
        params: Value,
        caller: Option<Principal>,
        progress: Box<dyn Fn(String) + Send + Sync>,
        stop: CancellationToken,
    ) -> BoxFuture<'static, RoundOutput>;
}

/// Durable tasks as a server describes them: where they are kept, how a round reaches a worker,
/// and the settings; [`App::tasks`](crate::App::tasks) takes it, and the server starts the
/// engine from it. See the [module docs](super).
///
/// ```
/// use std::sync::Arc;
/// use mcp_lambda::tasks::{Dispatch, MemoryTaskStore, TaskSettings, Tasks};
/// let tasks = Tasks::new(
///     Arc::new(MemoryTaskStore::new()),
///     Dispatch::Local,
///     TaskSettings::default(),
/// );
/// # drop(tasks);
/// ```
#[derive(Debug, Clone)]
pub struct Tasks {
    store: Arc<dyn TaskStore>,
    dispatch: Dispatch,
    settings: TaskSettings,
}

impl Tasks {
    /// Tasks kept in `store`, their rounds handed to a worker as `dispatch` says.
    pub fn new(store: Arc<dyn TaskStore>, dispatch: Dispatch, settings: TaskSettings) -> Self {
        Self {
            store,
            dispatch,
            settings,
        }
    }

    /// The store they are kept in.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// The engine, whole: rounds run through `runner`, handed to Lambda as invocations of
    /// `path` carrying round tokens derived from `request_state_keys`.
    pub(crate) fn start(
        self,
        runner: Arc<dyn ToolRunner>,
        path: &str,
        request_state_keys: &[Vec<u8>],
    ) -> Engine {
        Engine {
            store: self.store,
            dispatch: self.dispatch,
            settings: self.settings,
            runner,
            keys: super::round_token::RoundKeys::derive(request_state_keys),
            path: path.to_owned(),
        }
    }
}

/// The running task engine, started by [`App::server`](crate::App::server) from a [`Tasks`]
/// (the crate's own tests reach it through `Server::tasks`).
#[doc(hidden)]
pub struct Engine {
    store: Arc<dyn TaskStore>,
    dispatch: Dispatch,
    settings: TaskSettings,
    /// Runs a round's call in this process.
    runner: Arc<dyn ToolRunner>,
    /// Signs and checks round tokens.
    keys: super::round_token::RoundKeys,
    /// The MCP path a worker invocation is sent to (Lambda dispatch: features `dynamodb` and
    /// `aws-secrets`).
    #[cfg_attr(
        not(all(feature = "dynamodb", feature = "aws-secrets")),
        allow(dead_code)
    )]
    path: String,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("store", &self.store)
            .field("dispatch", &self.dispatch)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The `_meta` key of the client's capabilities.
const CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The extension's id.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

fn internal(error: TaskError) -> ErrorData {
    match error {
        TaskError::NotFound => unknown_task(),
        TaskError::Invalid(why) => ErrorData::invalid_params(why, None),
        limit @ TaskError::CallerLimit {
            max, retry_after, ..
        } => ErrorData::invalid_request(
            limit.to_string(),
            Some(json!({ "limit": max, "retryAfterSecs": retry_after.as_secs().max(1) })),
        ),
        TaskError::Unavailable(why) => {
            tracing::warn!(reason = %why, "task store unavailable");
            ErrorData::internal_error("the task store is unavailable; try again shortly", None)
        }
    }
}

fn unknown_task() -> ErrorData {
    ErrorData::invalid_params(
        "unknown task: it does not exist, has expired, or belongs to someone else",
        None,
    )
}

impl Engine {
    /// Whether rounds run on this process's runtime.
    pub(crate) fn runs_locally(&self) -> bool {
        matches!(self.dispatch, Dispatch::Local)
    }

    /// How long a local worker's claim on a round holds.
    pub(crate) fn lease(&self) -> Duration {
        self.settings.lease
    }

    /// The store behind it.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.store
    }

    /// Whether `token` lets its bearer run `round` of `task_id` now.
    pub(crate) fn round_token_ok(&self, token: &str, task_id: &str, round: u32) -> bool {
        self.keys.verify(token, task_id, round, now_ms())
    }

    /// Records a task for `params` (durably) and hands round 0 to a worker.
    pub(crate) async fn accept(
        self: &Arc<Self>,
        owner: &str,
        caller: Option<Principal>,
        mut params: Value,
    ) -> Result<CreateTaskResult, ErrorData> {
        // The worker's call is a plain one: the extension is what made this a task.
        if let Some(extensions) = params
            .pointer_mut(&format!(
                "/_meta/{}/extensions",
                CAPABILITIES.replace('/', "~1")
            ))
            .and_then(Value::as_object_mut)
        {
            extensions.remove(EXTENSION);
        }
        let id = HandleId::random().map_err(|e| internal(TaskError::Unavailable(e.to_string())))?;
        let now = now_ms();
        let record = TaskRecord::new(
            id,
            owner,
            json!({ "params": params, "caller": caller }),
            now,
            self.settings.ttl.as_millis() as u64,
            self.settings.poll_interval.as_millis() as u64,
        );
        // One caller's share, unless every client is the same anonymous caller.
        let quota = caller.is_some().then(|| super::CallerQuota {
            max: self.settings.max_per_caller,
            window: self.settings.ttl,
        });
        // Durable first: no CreateTaskResult for a task another instance could not find.
        self.store.create(&record, quota).await.map_err(internal)?;
        self.dispatch(id, 0).await?;
        Ok(CreateTaskResult::new(task_of(&record, TaskStatus::Working)))
    }

    /// Hands `round` to a worker. When that fails the round is recorded as failed (so no
    /// `tasks/get` sees it working forever) and the caller hears a -32603.
    async fn dispatch(self: &Arc<Self>, id: HandleId, round: u32) -> Result<(), ErrorData> {
        match &self.dispatch {
            Dispatch::Local => {
                let engine = self.clone();
                tokio::spawn(async move { engine.run_round(id, round).await });
                Ok(())
            }
            #[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
            Dispatch::Lambda(lambda) => {
                let task_id = id.to_string();
                let token = self.keys.sign(
                    &task_id,
                    round,
                    now_ms() + super::round_token::TOKEN_LIFETIME_MS,
                );
                let sent = match token {
                    None => Err("no request-state key to sign a round token with".to_string()),
                    Some(token) => {
                        let event = LambdaDispatch::event(&self.path, &token, &task_id, round);
                        lambda
                            .client
                            .invoke_event(&lambda.function, event.to_string().as_bytes())
                            .await
                            .map_err(|e| e.to_string())
                    }
                };
                match sent {
                    Ok(()) => Ok(()),
                    Err(reason) => {
                        tracing::error!(%reason, function = %lambda.function, "could not hand a task round to Lambda");
                        self.fail_undispatched(id, round).await;
                        Err(ErrorData::internal_error(
                            "the task could not be handed to a worker; try again shortly",
                            None,
                        ))
                    }
                }
            }
        }
    }

    /// Records `round` as failed: claimed here (nobody else could have it: it was never sent)
    /// and finished at once.
    #[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
    async fn fail_undispatched(&self, id: HandleId, round: u32) {
        let until = now_ms() + self.settings.lease.as_millis() as u64;
        let error = RoundEnd::Failed(json!({
            "code": -32603,
            "message": "the task could not be handed to a worker",
        }));
        let claimed = super::retry::until("claim", until.min(now_ms() + 30_000), || {
            self.store.claim(id, round, until)
        })
        .await;
        match claimed {
            Ok(Some(_)) => {
                let finished =
                    super::retry::until("finish", until, || self.store.finish(id, round, &error));
                if let Err(error) = finished.await {
                    tracing::warn!(%error, "could not record an undispatched round as failed");
                }
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(%error, "could not record an undispatched round as failed")
            }
        }
    }

    /// `tasks/get`.
    pub(crate) async fn get(&self, owner: &str, id: &str) -> Result<GetTaskResult, ErrorData> {
        let id: HandleId = id.parse().map_err(|_| unknown_task())?;
        let record = self.store.get(owner, id).await.map_err(internal)?;
        Ok(GetTaskResult::new(client_view(&record, now_ms())))
    }

    /// `tasks/update`: unknown keys are ignored; the round resumes once every request is
    /// answered.
    pub(crate) async fn update(
        self: &Arc<Self>,
        owner: &str,
        id: &str,
        responses: &BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        let id: HandleId = id.parse().map_err(|_| unknown_task())?;
        let record = self
            .store
            .answer(owner, id, responses)
            .await
            .map_err(internal)?;
        if record.state == TaskState::InputRequired
            && record.pending.is_empty()
            && !record.cancel_requested
        {
            self.dispatch(id, record.round).await?;
        }
        Ok(())
    }

    /// `tasks/cancel`: acknowledged whatever the state (a finished task stays as it is).
    pub(crate) async fn cancel(&self, owner: &str, id: &str) -> Result<(), ErrorData> {
        let id: HandleId = id.parse().map_err(|_| unknown_task())?;
        self.store.cancel(owner, id).await.map_err(internal)?;
        Ok(())
    }

    /// A worker: claims `round` and runs it to its end, looking for a cancel every poll
    /// interval. A second delivery of the same round finds it claimed and does nothing.
    pub async fn run_round(self: Arc<Self>, id: HandleId, round: u32) {
        let lease_until = now_ms() + self.settings.lease.as_millis() as u64;
        self.run_round_until(id, round, lease_until).await;
    }

    /// [`run_round`](Self::run_round) with a claim that holds until `lease_until_ms` (on
    /// Lambda: the worker invocation's deadline). Whether this call claimed the round and ran it.
    pub async fn run_round_until(
        self: Arc<Self>,
        id: HandleId,
        round: u32,
        lease_until_ms: u64,
    ) -> bool {
        // Past the claim window no claim can land (and `tasks/get` reads the round failed,
        // nothing ran), so a worker that cannot reach the store stops trying then.
        let claim_deadline = lease_until_ms.min(now_ms() + super::record::CLAIM_WINDOW_MS);
        let claimed = super::retry::until("claim", claim_deadline, || {
            self.store.claim(id, round, lease_until_ms)
        })
        .await;
        let task = match claimed {
            Ok(Some(task)) => task,
            Ok(None) => return false,
            Err(error) => {
                tracing::warn!(%error, "could not claim a task round");
                return false;
            }
        };
        let mut params = task.call["params"].clone();
        if round > 0 {
            let responses: serde_json::Map<String, Value> =
                task.responses.clone().into_iter().collect();
            params["inputResponses"] = Value::Object(responses);
            if let Some(state) = &task.request_state {
                params["requestState"] = Value::String(state.clone());
            }
        }
        let caller: Option<Principal> = serde_json::from_value(task.call["caller"].clone()).ok();
        let latest = Arc::new(std::sync::Mutex::new(None::<String>));
        let sink = latest.clone();
        let progress = Box::new(move |message: String| {
            *sink.lock().expect("progress lock") = Some(message);
        });
        let stop = CancellationToken::new();
        let run = self
            .runner
            .run_round(params, caller, progress, stop.clone());
        tokio::pin!(run);
        let out_of_time = tokio::time::sleep(time_to_stop(lease_until_ms, now_ms()));
        tokio::pin!(out_of_time);
        let mut ticks = tokio::time::interval(self.settings.poll_interval);
        ticks.tick().await;
        let stopped = loop {
            tokio::select! {
                output = &mut run => break Err(output),
                _ = &mut out_of_time => break Ok(Stopped::OutOfTime),
                _ = ticks.tick() => {
                    let message = latest.lock().expect("progress lock").take();
                    // A slow store does not hold the round past its time.
                    let checked = tokio::select! {
                        checked = self.store.check(id, round, message.as_deref()) => checked,
                        _ = &mut out_of_time => break Ok(Stopped::OutOfTime),
                    };
                    match checked {
                        Ok(true) => break Ok(Stopped::Cancelled),
                        Ok(false) => {}
                        Err(error) => tracing::debug!(%error, "task check failed; retrying"),
                    }
                }
            }
        };
        let end = match stopped {
            Err(output) => round_end(output),
            Ok(why) => {
                // The round answers once the tool's future is gone (`stop::until_stopped`):
                // only then is its end written.
                stop.cancel();
                // Bounded by the claim: a tool that blocks its thread never reaches an await,
                // and a worker must not outlive its claim waiting for it. (On one thread,
                // `crate::runtime()` on Lambda, such a tool holds back this timeout and the
                // checks above too: the round then ends with the invocation, and `tasks/get`
                // shows it failed once its claim has run out.)
                let left = Duration::from_millis(lease_until_ms.saturating_sub(now_ms()));
                match tokio::time::timeout(left, &mut run).await {
                    Ok(output) => why.end(output),
                    Err(_) => {
                        tracing::warn!(
                            "a stopped task round did not end before its claim ran out (a tool \
                             that blocks its thread without awaiting?)"
                        );
                        why.end(RoundOutput::Error(Value::Null))
                    }
                }
            }
        };
        // Until the claim runs out: past it the conditional write cannot land, and a reader
        // sees the round's claim gone.
        let finished = super::retry::until("finish", lease_until_ms, || {
            self.store.finish(id, round, &end)
        })
        .await;
        match finished {
            Ok(true) => {}
            Ok(false) => tracing::debug!("a task round ended after its claim was gone"),
            Err(error) => {
                tracing::warn!(%error, "could not record a task round's end before its claim ran out")
            }
        }
        true
    }
}

/// Why the engine stopped a round before it ended.
#[derive(Debug, Clone, Copy)]
enum Stopped {
    /// `tasks/cancel`.
    Cancelled,
    /// Its claim was about to run out.
    OutOfTime,
}

impl Stopped {
    /// What a stopped round's task records: a round that finished first keeps its end (its
    /// effects are done); otherwise `cancelled`, or `failed` for one out of time.
    fn end(self, output: RoundOutput) -> RoundEnd {
        match (self, output) {
            (_, output @ RoundOutput::Completed(_)) => round_end(output),
            (Stopped::Cancelled, _) => RoundEnd::Cancelled,
            (Stopped::OutOfTime, output @ RoundOutput::InputRequired { .. }) => round_end(output),
            (Stopped::OutOfTime, _) => RoundEnd::Failed(json!({
                "code": -32603,
                "message": "the round ran out of time (MCP_TASK_LEASE_SECS, or on Lambda the \
                            function's timeout) and was stopped",
            })),
        }
    }
}

/// How long a round claimed until `lease_until_ms` may work: it is stopped a little before the
/// claim runs out, so its end is written while the claim still holds and no reader sees
/// `failed` while the work still runs. What is kept for that: a quarter of the claim, at least
/// 500 ms (one slow store write) but never more than half of it, and at most 2 s.
fn time_to_stop(lease_until_ms: u64, now_ms: u64) -> Duration {
    let left = Duration::from_millis(lease_until_ms.saturating_sub(now_ms));
    let kept = (left / 4)
        .max(Duration::from_millis(500))
        .min(left / 2)
        .min(Duration::from_secs(2));
    left - kept
}

fn round_end(output: RoundOutput) -> RoundEnd {
    match output {
        RoundOutput::Completed(result) => RoundEnd::Completed(result),
        RoundOutput::Error(error) => RoundEnd::Failed(error),
        RoundOutput::InputRequired {
            requests,
            request_state,
        } => {
            let keys = requests
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            RoundEnd::InputRequired {
                requests,
                keys,
                request_state,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_stops_before_its_claim_runs_out() {
        let s = Duration::from_secs;
        // A quarter of the claim, 500 ms to half of it, at most 2 s, is left to write the end.
        assert_eq!(time_to_stop(1_000 + 400, 1_000), Duration::from_millis(200));
        assert_eq!(
            time_to_stop(1_000 + 1_000, 1_000),
            Duration::from_millis(500)
        );
        assert_eq!(time_to_stop(1_000 + 4_000, 1_000), s(3));
        assert_eq!(time_to_stop(1_000 + 60_000, 1_000), s(58));
        assert_eq!(time_to_stop(1_000 + 900_000, 1_000), s(898));
        assert_eq!(
            time_to_stop(500, 1_000),
            Duration::ZERO,
            "already out of time"
        );
    }
}
