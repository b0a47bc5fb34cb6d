//! The engine: accepting a task, answering `tasks/*`, and running a round as a worker.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{
    CreateTaskResult, DetailedTask, ErrorData, GetTaskResult, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::{RoundEnd, TaskError, TaskRecord, TaskState, TaskStore, now_ms};
use crate::auth::Principal;
use crate::handles::HandleId;

/// What one round of a tool answered, as the worker reads it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RoundOutput {
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

/// Runs one round of a tool call in this process, through the same service a request takes
/// (the HTTP front implements it). `progress` hears each progress message as it comes.
pub trait ToolRunner: Send + Sync + 'static {
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

/// How a round reaches a worker.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Dispatch {
    /// On this process's runtime (the local server; tests).
    Local,
    /// Handed to the Lambda service: an asynchronous invocation (`InvocationType: Event`) of
    /// this same function, whose event is a Function URL request for `POST <MCP_PATH>` carrying
    /// the round's token in `x-mcp-task-round`. The invocation that accepted the task answers at
    /// once; the worker invocation runs the round until its own deadline.
    #[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
    Lambda(LambdaDispatch),
}

/// Where [`Dispatch::Lambda`] sends rounds: the function and a signed client for its Invoke.
#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
#[derive(Debug, Clone)]
pub struct LambdaDispatch {
    /// The function to invoke (a name or an ARN): this one, `AWS_LAMBDA_FUNCTION_NAME`.
    function: String,
    client: Arc<crate::aws::signed::SignedJsonClient>,
}

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
impl LambdaDispatch {
    /// Rounds go to `function` (a name or an ARN), signed with `sdk`'s credentials; the
    /// endpoint follows `AWS_ENDPOINT_URL_LAMBDA`.
    pub fn new(
        function: impl Into<String>,
        sdk: &aws_config::SdkConfig,
        timeouts: &crate::aws::AwsTimeouts,
    ) -> Self {
        Self {
            function: function.into(),
            client: Arc::new(crate::aws::signed::SignedJsonClient::unchecked(
                sdk, timeouts,
            )),
        }
    }

    /// The event a worker invocation receives: a Function URL (payload 2.0) `POST <path>`.
    fn event(path: &str, token: &str, task_id: &str, round: u32) -> Value {
        let body = json!({ "taskId": task_id, "round": round }).to_string();
        let now = now_ms();
        json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": "",
            "headers": {
                "content-type": "application/json",
                "host": "localhost",
                super::round_token::HEADER: token,
            },
            "requestContext": {
                "accountId": "self",
                "apiId": "self",
                "domainName": "localhost",
                "domainPrefix": "localhost",
                "http": {
                    "method": "POST",
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": "mcp-lambda-task-round",
                },
                "requestId": format!("task-round-{task_id}-{round}"),
                "routeKey": "$default",
                "stage": "$default",
                "time": "",
                "timeEpoch": now,
            },
            "isBase64Encoded": false,
            "body": body,
        })
    }
}

/// Task settings (`MCP_TASK_*`).
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `MCP_TASK_TTL_SECS` | `3600` | how long a task lives after creation (60–604800) |
/// | `MCP_TASK_POLL_MS` | `1000` | the poll interval clients are told, and how often a worker looks for a cancel (100–60000) |
/// | `MCP_TASK_MAX_PER_CALLER` | `100` | tasks one authenticated caller may create per `MCP_TASK_TTL_SECS` window (1–1000000), so it holds at most twice that; more get 429, -32600 |
/// | `MCP_TASK_LEASE_SECS` | `900` | how long a local worker's claim on a round holds (1–86400); a round still working shortly before it runs out is stopped and recorded `failed` |
///
/// The store follows the handle store: `MCP_HANDLES_TABLE` set → DynamoDB on that table,
/// otherwise in memory ([`TaskSettings::open`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskSettings {
    /// How long a task lives after creation.
    pub ttl: Duration,
    /// How often clients should poll, and how often a worker looks for a cancel.
    pub poll_interval: Duration,
    /// How long a worker's claim on a round holds locally (on Lambda: the invocation's
    /// deadline). A round still working shortly before it runs out is stopped and recorded
    /// `failed`.
    pub lease: Duration,
    /// Tasks one authenticated caller may create per `ttl` window (`MCP_TASK_MAX_PER_CALLER`).
    /// With auth off every client is the same anonymous caller, so only the store's own
    /// limits apply.
    pub max_per_caller: u32,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(1000),
            lease: Duration::from_secs(900),
            max_per_caller: 100,
        }
    }
}

impl TaskSettings {
    /// Reads `MCP_TASK_TTL_SECS`, `MCP_TASK_POLL_MS`, `MCP_TASK_LEASE_SECS` and
    /// `MCP_TASK_MAX_PER_CALLER`.
    pub(crate) fn from_env(env: &crate::env::Env<'_>) -> Result<Self, crate::env::ConfigError> {
        Ok(Self {
            ttl: env.secs(
                "MCP_TASK_TTL_SECS",
                3600,
                60..=604_800,
                "whole seconds between 60 and 604800, e.g. 3600",
            )?,
            poll_interval: Duration::from_millis(env.number(
                "MCP_TASK_POLL_MS",
                1000,
                100..=60_000,
                "whole milliseconds between 100 and 60000, e.g. 1000",
            )?),
            lease: env.secs(
                "MCP_TASK_LEASE_SECS",
                900,
                1..=86_400,
                "whole seconds between 1 and 86400, e.g. 900",
            )?,
            max_per_caller: env.number(
                "MCP_TASK_MAX_PER_CALLER",
                100,
                1..=1_000_000,
                "a whole number between 1 and 1000000, e.g. 100",
            )? as u32,
        })
    }

    /// The task engine for this deployment: the store is DynamoDB on `MCP_HANDLES_TABLE` when
    /// it is set (sharing the handle store's connection), otherwise in memory. Locally rounds
    /// run on this process's runtime ([`Dispatch::Local`]); on Lambda (`AWS_LAMBDA_RUNTIME_API`
    /// set) they are handed to the Lambda service (`Dispatch::Lambda`, which needs the
    /// `aws-secrets` feature), and `MCP_HANDLES_TABLE` is required.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = mcp_lambda::Config::load().await?;
    /// let tasks = config.tasks.open(&config.handles).await?;
    /// # let _ = tasks; Ok(())
    /// # }
    /// ```
    pub async fn open(
        &self,
        handles: &crate::handles::HandleSettings,
    ) -> Result<Arc<Tasks>, crate::handles::OpenError> {
        let on_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
        if on_lambda && handles.table.is_none() {
            return Err(crate::handles::OpenError::Table {
                table: "(MCP_HANDLES_TABLE is not set)".into(),
                reason: "tasks on Lambda need a store every invocation shares: set \
                         MCP_HANDLES_TABLE, or leave tasks off"
                    .into(),
            });
        }
        let store: Arc<dyn TaskStore> = match &handles.table {
            #[cfg(feature = "dynamodb")]
            Some(table) => {
                let sdk = crate::aws::shared_config(&handles.timeouts).await;
                let store = Arc::new(super::DynamoDbTaskStore::new(
                    crate::aws::dynamodb_client(&sdk),
                    table.clone(),
                ));
                #[cfg(not(feature = "aws-secrets"))]
                if on_lambda {
                    return Err(crate::handles::OpenError::Table {
                        table: table.clone(),
                        reason: "tasks on Lambda hand rounds to the Lambda service with a signed \
                                 Invoke, which needs the `aws-secrets` feature"
                            .into(),
                    });
                }
                #[cfg(feature = "aws-secrets")]
                if on_lambda {
                    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").map_err(|_| {
                        crate::handles::OpenError::Table {
                            table: table.clone(),
                            reason: "AWS_LAMBDA_FUNCTION_NAME is not set (Lambda sets it): \
                                     rounds are handed to this function"
                                .into(),
                        }
                    })?;
                    let dispatch =
                        Dispatch::Lambda(LambdaDispatch::new(function, &sdk, &handles.timeouts));
                    return Ok(Tasks::new(store, dispatch, self.clone()));
                }
                store
            }
            #[cfg(not(feature = "dynamodb"))]
            Some(table) => {
                return Err(crate::handles::OpenError::Table {
                    table: table.clone(),
                    reason: "this build lacks the `dynamodb` feature".into(),
                });
            }
            None => Arc::new(super::MemoryTaskStore::new()),
        };
        Ok(Tasks::new(store, Dispatch::Local, self.clone()))
    }
}

/// The task engine a server runs with; see the [module docs](super).
pub struct Tasks {
    store: Arc<dyn TaskStore>,
    dispatch: Dispatch,
    settings: TaskSettings,
    runner: OnceLock<Arc<dyn ToolRunner>>,
    /// Signs and checks round tokens; set with the runner.
    keys: OnceLock<super::round_token::RoundKeys>,
    /// The MCP path a worker invocation is sent to; set with the runner.
    path: OnceLock<String>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
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

/// Epoch milliseconds as an ISO 8601 UTC timestamp (`2026-12-01T06:30:00.123Z`).
fn iso(ms: u64) -> String {
    let (days, rest) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

impl Tasks {
    /// An engine on `store`.
    pub fn new(store: Arc<dyn TaskStore>, dispatch: Dispatch, settings: TaskSettings) -> Arc<Self> {
        Arc::new(Self {
            store,
            dispatch,
            settings,
            runner: OnceLock::new(),
            keys: OnceLock::new(),
            path: OnceLock::new(),
        })
    }

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

    /// Connects the worker side to the service (once, at start-up): the runner, the MCP path
    /// and the request-state keys round tokens are derived from.
    pub(crate) fn set_runner(
        &self,
        runner: Arc<dyn ToolRunner>,
        path: &str,
        request_state_keys: &[Vec<u8>],
    ) {
        let _ = self.runner.set(runner);
        let _ = self.path.set(path.to_owned());
        let _ = self
            .keys
            .set(super::round_token::RoundKeys::derive(request_state_keys));
    }

    /// Whether `token` lets its bearer run `round` of `task_id` now.
    pub(crate) fn round_token_ok(&self, token: &str, task_id: &str, round: u32) -> bool {
        self.keys
            .get()
            .is_some_and(|keys| keys.verify(token, task_id, round, now_ms()))
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
                let token = self.keys.get().and_then(|keys| {
                    keys.sign(
                        &task_id,
                        round,
                        now_ms() + super::round_token::TOKEN_LIFETIME_MS,
                    )
                });
                let path = self.path.get().map_or("/mcp", String::as_str);
                let sent = match token {
                    None => Err("the server was not built (no round-token key)".to_string()),
                    Some(token) => {
                        let event = LambdaDispatch::event(path, &token, &task_id, round);
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
        match self.store.claim(id, round, until).await {
            Ok(Some(_)) => {
                if let Err(error) = self.store.finish(id, round, &error).await {
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
        let Some(runner) = self.runner.get().cloned() else {
            tracing::error!("a task round was dispatched before the server was built");
            return false;
        };
        let task = match self.store.claim(id, round, lease_until_ms).await {
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
        let run = runner.run_round(params, caller, progress, stop.clone());
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
        match self.store.finish(id, round, &end).await {
            Ok(true) => {}
            Ok(false) => tracing::debug!("a task round ended after its claim was gone"),
            Err(error) => tracing::warn!(%error, "could not record a task round's end"),
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

/// The task as a client sees it now: a cancel asked for while it waits for input shows as
/// `cancelled`; a round whose worker's claim ran out shows as `failed`, and so does a round
/// handed out that no worker claimed while its round token was good (an asynchronous invocation
/// the Lambda service dropped): no worker can claim it any more.
fn visible(record: &TaskRecord, now: u64) -> (TaskStatus, Option<Value>) {
    let ready = match record.state {
        TaskState::Working => true,
        TaskState::InputRequired => record.pending.is_empty() && !record.cancel_requested,
        _ => false,
    };
    let unclaimed = record.claimed.is_none_or(|(round, _)| round < record.round);
    if ready
        && unclaimed
        && now > record.updated_at_ms + super::round_token::TOKEN_LIFETIME_MS + 60_000
    {
        return (
            TaskStatus::Failed,
            Some(json!({
                "code": -32603,
                "message": "no worker picked this task up in time",
            })),
        );
    }
    match record.state {
        TaskState::InputRequired if record.cancel_requested => (TaskStatus::Cancelled, None),
        TaskState::Working if record.claimed.is_some_and(|(_, until)| until < now) => (
            TaskStatus::Failed,
            Some(json!({
                "code": -32603,
                "message": "the worker running this task stopped before it finished (timeout or crash)",
            })),
        ),
        TaskState::Working => (TaskStatus::Working, None),
        TaskState::InputRequired => (TaskStatus::InputRequired, None),
        TaskState::Completed => (TaskStatus::Completed, None),
        TaskState::Failed => (TaskStatus::Failed, record.error.clone()),
        TaskState::Cancelled => (TaskStatus::Cancelled, None),
    }
}

fn task_of(record: &TaskRecord, status: TaskStatus) -> Task {
    let mut task = Task::new(
        record.id.to_string(),
        status,
        iso(record.created_at_ms),
        iso(record.updated_at_ms),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(record.poll_interval_ms);
    if let Some(message) = &record.status_message {
        task = task.with_status_message(message.clone());
    }
    task
}

/// The task as `tasks/get` shows it at `now` (epoch ms); `notifications/tasks` carries the same.
pub(crate) fn client_view(record: &TaskRecord, now: u64) -> DetailedTask {
    let (status, error) = visible(record, now);
    let task = task_of(record, status);
    let payload = match status {
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        // Only what is still outstanding: an answered request is gone from the next look.
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: record
                .input_requests
                .as_ref()
                .and_then(Value::as_object)
                .map(|all| {
                    all.iter()
                        .filter(|(key, _)| record.pending.contains(*key))
                        .filter_map(|(key, request)| {
                            Some((key.clone(), serde_json::from_value(request.clone()).ok()?))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: record
                .result
                .clone()
                .and_then(|r| serde_json::from_value::<JsonObject>(r).ok())
                .unwrap_or_default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: error
                .and_then(|e| serde_json::from_value::<JsonObject>(e).ok())
                .unwrap_or_else(|| {
                    let mut error = JsonObject::new();
                    error.insert("code".into(), json!(-32603));
                    error.insert("message".into(), json!("the task failed"));
                    error
                }),
        },
        _ => TaskPayload::Working,
    };
    DetailedTask::new(task, payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_no_worker_claimed_before_its_token_expired_reads_failed() {
        let record = TaskRecord::new(
            HandleId::random().unwrap(),
            "o",
            json!({}),
            1000,
            3_600_000,
            1000,
        );
        let soon = 1000 + super::super::round_token::TOKEN_LIFETIME_MS;
        assert_eq!(visible(&record, soon).0, TaskStatus::Working);
        assert_eq!(visible(&record, soon + 60_001).0, TaskStatus::Failed);
        let mut claimed = record.clone();
        claimed.claimed = Some((0, u64::MAX));
        assert_eq!(visible(&claimed, soon + 60_001).0, TaskStatus::Working);
    }

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

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_796_000_000_123), "2026-11-30T00:53:20.123Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
