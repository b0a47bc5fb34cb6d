//! The task engine through the real service, in process: a task created by one request is run
//! by a worker and read by another; a worker that stops is reported `failed`, never `working`
//! forever; a second delivery of the same round runs nothing; a task belongs to its caller.
//! Every case runs on the in-memory store and on DynamoDB Local. `notifications/tasks` on a
//! `subscriptions/listen` stream runs on both feeds (memory; DynamoDB, the task read in the
//! poll's one `BatchGetItem`).

use mcp_lambda_test_support as support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{Full, combinators::BoxBody};
use mcp_lambda::handles::HandleId;
use mcp_lambda::listen::{Changes, DynamoDbFeed, MemoryFeed};
use mcp_lambda::tasks::{
    Dispatch, DynamoDbTaskStore, Engine, MemoryTaskStore, TaskPolicy, TaskRecord, TaskSettings,
    TaskStore, Tasks,
};
use mcp_lambda::{App, McpService};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
        ServerConfig,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use support::fixture;
use tower::ServiceExt as _;

/// `work` sleeps `ms` and counts how often it ran; `effect` sleeps `ms`, then does its side
/// effect (counted in `effects`). `running` counts calls whose future is still alive.
#[derive(Clone)]
struct Worker {
    runs: Arc<AtomicUsize>,
    effects: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
}

impl Worker {
    fn new() -> Self {
        Worker {
            runs: Arc::default(),
            effects: Arc::default(),
            running: Arc::default(),
        }
    }
}

/// Counts a call as running until its future is dropped, however it ends.
struct Running(Arc<AtomicUsize>);

impl Running {
    fn enter(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Running(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ServerHandler for Worker {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("worker", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        fixture::only_tool(
            "work",
            "Works for a while.",
            json!({"ms": {"type": "integer"}}),
        )
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let _running = Running::enter(&self.running);
        if request.name == "progress" {
            // Reports where it is to the client's progress token, then works a while: the
            // engine records the report as the task's status line.
            let token = context.meta.get_progress_token().expect("a progress token");
            let param = ProgressNotificationParam::new(token, 1.0)
                .with_total(2.0)
                .with_message("halfway");
            context.peer.notify_progress(param).await.expect("sent");
            tokio::time::sleep(Duration::from_millis(600)).await;
            return Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into());
        }
        if request.name == "effect" {
            let ms = request.arguments.as_ref().and_then(|a| a.get("ms"));
            let ms = ms.and_then(Value::as_u64).unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            self.effects.fetch_add(1, Ordering::SeqCst);
            // Work after the effect too: a cancel now finds the effect done, the call running.
            tokio::time::sleep(Duration::from_millis(ms)).await;
            return Ok(CallToolResult::success(vec![ContentBlock::text("done")]).into());
        }
        if request.name == "ask" {
            // Round 0 asks; round 1 answers with what the client said.
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get("name"))
                .map(|a| a["content"]["name"].clone());
            return Ok(match answer {
                Some(name) => {
                    CallToolResult::success(vec![ContentBlock::text(format!("Hello, {name}"))])
                        .into()
                }
                None => rmcp::model::InputRequiredResult::from_input_requests(
                    [(
                        "name".to_owned(),
                        serde_json::from_value(json!({
                            "method": "elicitation/create",
                            "params": {"mode": "form", "message": "Your name?",
                                "requestedSchema": {"type": "object",
                                    "properties": {"name": {"type": "string"}}}},
                        }))
                        .unwrap(),
                    )]
                    .into_iter()
                    .collect(),
                )
                .into(),
            });
        }
        let ms = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("ms"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(CallToolResult::success(vec![ContentBlock::text(format!("worked {ms} ms"))]).into())
    }
}

struct Setup {
    service: McpService<Worker>,
    tasks: Arc<Engine>,
    runs: Arc<AtomicUsize>,
    effects: Arc<AtomicUsize>,
    running: Arc<AtomicUsize>,
}

fn setup(settings: TaskSettings, store: Arc<dyn TaskStore>) -> Setup {
    setup_listening(settings, store, None)
}

/// A server that also serves `subscriptions/listen` from `changes` (polling every 100 ms).
fn setup_listening(
    settings: TaskSettings,
    store: Arc<dyn TaskStore>,
    changes: Option<Changes>,
) -> Setup {
    let tasks = Tasks::new(store, Dispatch::Local, settings);
    let worker = Worker::new();
    let runs = worker.runs.clone();
    let mut app = App::new(fixture::config(&[("MCP_LISTEN_POLL_MS", "100")]))
        .tasks(tasks, |_tool: &str, _caller: &mcp_lambda::Caller| {
            TaskPolicy::Optional
        });
    if let Some(changes) = &changes {
        app = app.changes(changes);
    }
    let (effects, running) = (worker.effects.clone(), worker.running.clone());
    let server = app.server_per_request(move || worker.clone());
    let tasks = server.tasks().expect("the server runs tasks");
    let service = server.service();
    Setup {
        service,
        tasks,
        runs,
        effects,
        running,
    }
}

fn settings(lease_ms: u64) -> TaskSettings {
    let mut settings = TaskSettings::default();
    settings.lease = Duration::from_millis(lease_ms);
    settings.poll_interval = Duration::from_millis(100);
    settings
}

/// A `tools/call` of `work` from a client that declared the tasks extension.
async fn create(service: &McpService<Worker>, ms: u64) -> String {
    call_as_task(service, json!({"name": "work", "arguments": {"ms": ms}})).await
}

/// A `tools/call` from a client that declared the tasks extension (and elicitation).
async fn call_as_task(service: &McpService<Worker>, params: Value) -> String {
    call_as_task_with(service, params, None).await
}

/// [`call_as_task`], with a progress token.
async fn call_as_task_with(
    service: &McpService<Worker>,
    params: Value,
    progress_token: Option<&str>,
) -> String {
    let (mut headers, body) = fixture::modern(json!(1), "tools/call", params);
    let mut body: Value = serde_json::from_slice(&body).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    if let Some(token) = progress_token {
        body["params"]["_meta"]["progressToken"] = json!(token);
    }
    headers.retain(|(k, _)| k != "content-length");
    let answer = fixture::post(service, (headers, serde_json::to_vec(&body).unwrap())).await;
    let created = answer.json();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// A `tasks/*` request about task `id`, from a client that declared the extension.
async fn task_request(
    service: &McpService<Worker>,
    method: &str,
    id: &str,
    mut params: Value,
) -> fixture::Answer {
    params["taskId"] = json!(id);
    let (mut headers, body) = fixture::modern(json!(2), method, params);
    let mut body: Value = serde_json::from_slice(&body).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    headers.push(("mcp-name".into(), id.into()));
    fixture::post(service, (headers, serde_json::to_vec(&body).unwrap())).await
}

async fn get(service: &McpService<Worker>, id: &str) -> Value {
    task_request(service, "tasks/get", id, json!({}))
        .await
        .json()
}

async fn until_terminal(service: &McpService<Worker>, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let task = get(service, id).await;
        let status = task["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return task["result"].clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still {status}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_task_runs_once_and_its_result_is_read_back(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    let id = create(&s.service, 100).await;
    let done = until_terminal(&s.service, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "worked 100 ms");
    assert_eq!(s.runs.load(Ordering::SeqCst), 1);
}

/// A round's progress reaches the engine: the tool's `notifications/progress` (sent through
/// the round's peer, in process) is what `tasks/get` shows as the task's status line while it
/// works.
async fn a_rounds_progress_is_the_tasks_status_message(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    let id = call_as_task_with(
        &s.service,
        json!({"name": "progress", "arguments": {}}),
        Some("p-1"),
    )
    .await;
    let started = Instant::now();
    let mut seen = Vec::new();
    let done = loop {
        let task = get(&s.service, &id).await["result"].clone();
        if let Some(message) = task["statusMessage"].as_str() {
            seen.push(message.to_owned());
        }
        if task["status"] != "working" {
            break task;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{task}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        seen.iter().any(|m| m == "halfway"),
        "the round's progress reached the task: {seen:?}"
    );
}

async fn a_second_delivery_of_the_same_round_runs_nothing_and_loses_nothing(
    store: Arc<dyn TaskStore>,
) {
    let s = setup(settings(60_000), store);
    let id = create(&s.service, 300).await;
    // The Lambda service may deliver an asynchronous invocation twice: the same round again,
    // while the first runs and after it finished.
    let handle: HandleId = id.parse().unwrap();
    s.tasks.clone().run_round(handle, 0).await;
    let done = until_terminal(&s.service, &id).await;
    s.tasks.clone().run_round(handle, 0).await;
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "the tool ran once");
    assert_eq!(done["status"], "completed");
    let again = get(&s.service, &id).await;
    assert_eq!(
        again["result"]["result"], done["result"],
        "the result is kept"
    );
}

async fn a_worker_that_stops_leaves_the_task_failed_never_working(store: Arc<dyn TaskStore>) {
    // A worker that vanished (a crashed process, a Lambda worker killed at its deadline): the
    // round was claimed, for 300 ms, and nobody ends it.
    let s = setup(settings(60_000), store.clone());
    let handle = HandleId::random().unwrap();
    let now = mcp_now_ms();
    let record = TaskRecord::new(handle, "anonymous", json!({}), now, 3_600_000, 100);
    store.create(&record, None).await.unwrap();
    assert!(store.claim(handle, 0, now + 300).await.unwrap().is_some());
    let failed = until_terminal(&s.service, &handle.to_string()).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("claim ran out before its end was recorded"),
        "{failed}"
    );
    // The worker that comes back late changes nothing: failed stays failed.
    let late = mcp_lambda::tasks::RoundEnd::Completed(json!({"content": []}));
    assert!(!store.finish(handle, 0, &late).await.unwrap());
    let later = get(&s.service, &handle.to_string()).await;
    assert_eq!(later["result"]["status"], "failed", "{later}");
}

/// One caller's tasks are bounded (`MCP_TASK_MAX_PER_CALLER` per task-TTL window): past it the
/// greedy caller gets 429, -32600 with the limit and `Retry-After`, nothing is stored for it,
/// and another caller still gets its task.
async fn one_caller_cannot_fill_the_task_store(store: Arc<dyn TaskStore>) {
    use mcp_lambda::testing::TestClient;
    use support::jwt::{Issuer, TestKey};
    const AUDIENCE: &str = "http://127.0.0.1:3000/mcp";
    let key = TestKey::rsa("rsa-1");
    let issuer = Issuer::start(&[&key]).await;
    let mut settings = settings(60_000);
    settings.max_per_caller = 3;
    let tasks = Tasks::new(store, Dispatch::Local, settings);
    let worker = Worker::new();
    let server = App::new(fixture::config(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
    ]))
    .tasks(tasks, |_: &str, _: &mcp_lambda::Caller| {
        TaskPolicy::Optional
    })
    .server_per_request(move || worker.clone());
    let as_user = |sub: &str| {
        TestClient::new(&server)
            .with_token(key.sign(&issuer.claims(AUDIENCE, sub, "")))
            .with_capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
    };
    let (greedy, other) = (as_user("greedy"), as_user("other"));
    for _ in 0..3 {
        let created = greedy.call_tool("work", json!({"ms": 0})).await;
        assert_eq!(
            created.result()["resultType"],
            "task",
            "{:?}",
            created.messages
        );
    }
    let refused = greedy.call_tool("work", json!({"ms": 0})).await;
    assert_eq!(refused.status, 429, "{:?}", refused.messages);
    assert_eq!(refused.error()["code"], -32600, "{:?}", refused.messages);
    assert_eq!(refused.error()["data"]["limit"], 3);
    let wait: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!(
        (1..=3600).contains(&wait),
        "within the task-TTL window: {wait}"
    );
    let served = other.call_tool("work", json!({"ms": 0})).await;
    assert_eq!(served.status, 200);
    assert_eq!(
        served.result()["resultType"],
        "task",
        "{:?}",
        served.messages
    );
}

/// The first read of a terminal status, and how many calls were still alive then.
async fn terminal_and_running(s: &Setup, id: &str) -> (Value, usize) {
    let started = Instant::now();
    loop {
        let task = get(&s.service, id).await;
        let running = s.running.load(Ordering::SeqCst);
        let status = task["result"]["status"].as_str().unwrap_or_default();
        if ["completed", "failed", "cancelled"].contains(&status) {
            return (task["result"].clone(), running);
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A round out of time is stopped before its claim runs out, at the await it is parked at:
/// `failed`, its effect never happens, and the work is gone before anyone reads `failed`.
async fn a_round_out_of_time_is_stopped_before_it_reads_failed(store: Arc<dyn TaskStore>) {
    let s = setup(settings(1000), store);
    let id = call_as_task(
        &s.service,
        json!({"name": "effect", "arguments": {"ms": 1500}}),
    )
    .await;
    let (failed, running) = terminal_and_running(&s, &id).await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ran out of time"),
        "{failed}"
    );
    assert_eq!(running, 0, "failed was read while the round still ran");
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(
        s.effects.load(Ordering::SeqCst),
        0,
        "the effect happened after failed"
    );
    assert_eq!(get(&s.service, &id).await["result"]["status"], "failed");
}

/// Cancelled before its side effect: `cancelled`, and the effect never happens.
async fn a_task_cancelled_before_its_effect_never_has_it(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    let id = call_as_task(
        &s.service,
        json!({"name": "effect", "arguments": {"ms": 1000}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    task_request(&s.service, "tasks/cancel", &id, json!({})).await;
    let (done, running) = terminal_and_running(&s, &id).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert_eq!(running, 0, "cancelled was read while the round still ran");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        s.effects.load(Ordering::SeqCst),
        0,
        "the effect happened after cancelled"
    );
}

/// Cancelled after its side effect: `completed` or `cancelled` with the effect there, and never
/// `cancelled` while the call still runs.
async fn a_task_cancelled_after_its_effect_shows_it_and_has_stopped(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    let id = call_as_task(
        &s.service,
        json!({"name": "effect", "arguments": {"ms": 300}}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(s.effects.load(Ordering::SeqCst), 1, "the effect is done");
    task_request(&s.service, "tasks/cancel", &id, json!({})).await;
    let (done, running) = terminal_and_running(&s, &id).await;
    assert!(
        ["cancelled", "completed"].contains(&done["status"].as_str().unwrap()),
        "{done}"
    );
    assert_eq!(
        running, 0,
        "{} was read while the round still ran",
        done["status"]
    );
    assert_eq!(s.effects.load(Ordering::SeqCst), 1);
}

async fn a_cancelled_task_stops_within_a_poll_interval(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    let id = create(&s.service, 5000).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel_acknowledged(&s.service, &id).await;
    let started = Instant::now();
    let done = until_terminal(&s.service, &id).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

async fn an_unknown_task_id_is_invalid_params(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    for id in ["not-a-uuid", &HandleId::random().unwrap().to_string()] {
        let task = get(&s.service, id).await;
        assert_eq!(task["error"]["code"], -32602, "{task}");
    }
}

async fn an_input_round_is_answered_through_tasks_update(store: Arc<dyn TaskStore>) {
    let s = setup(settings(60_000), store);
    let id = call_as_task(&s.service, json!({"name": "ask", "arguments": {}})).await;
    let started = Instant::now();
    let waiting = loop {
        let task = get(&s.service, &id).await["result"].clone();
        if task["status"] == "input_required" {
            break task;
        }
        assert_eq!(task["status"], "working", "{task}");
        assert!(started.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        waiting["inputRequests"]["name"]["method"], "elicitation/create",
        "{waiting}"
    );
    let answers = json!({"inputResponses": {
        "name": {"action": "accept", "content": {"name": "Ada"}},
        "never-asked": {"action": "accept", "content": {}},
    }});
    let ack = task_request(&s.service, "tasks/update", &id, answers).await;
    assert_eq!(
        ack.json()["result"],
        json!({"resultType": "complete"}),
        "{}",
        ack.text
    );
    let done = until_terminal(&s.service, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Hello, \"Ada\"");
    assert_eq!(s.runs.load(Ordering::SeqCst), 2, "two rounds");
}

/// A server with tasks and listen, both in memory.
fn listening_in_memory() -> Setup {
    setup_listening(
        settings(30_000),
        Arc::new(MemoryTaskStore::new()),
        Some(Changes::new(MemoryFeed::new(None))),
    )
}

type Stream = support::sse::ListenStream<BoxBody<Bytes, std::convert::Infallible>>;

/// A `subscriptions/listen` for `task_ids`; `declared`: the client declared the tasks extension.
async fn listen_for_tasks(
    service: &McpService<Worker>,
    task_ids: Value,
    declared: bool,
) -> Result<Stream, fixture::Answer> {
    let id = json!("listen-1");
    let (headers, body) = fixture::modern(
        id.clone(),
        "subscriptions/listen",
        json!({"notifications": {"taskIds": task_ids}}),
    );
    let mut body: Value = serde_json::from_slice(&body).unwrap();
    if declared {
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    }
    let mut request = Request::builder()
        .method("POST")
        .uri("http://127.0.0.1:3000/mcp")
        .header("host", "127.0.0.1:3000");
    for (k, v) in headers.iter().filter(|(k, _)| k != "content-length") {
        request = request.header(k.as_str(), v.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(serde_json::to_vec(&body).unwrap())))
        .unwrap();
    let response = service.clone().oneshot(request).await.unwrap();
    let streaming = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if response.status() == 200 && streaming {
        return Ok(Stream::new(id, response.into_body()));
    }
    let (parts, body) = response.into_parts();
    use http_body_util::BodyExt as _;
    let bytes = body.collect().await.unwrap().to_bytes();
    Err(fixture::Answer {
        status: parts.status,
        headers: parts.headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// `tasks/get`'s task, as a `notifications/tasks` carries it (no `resultType`, no `_meta`).
fn as_notified(mut got: Value) -> Value {
    let task = got["result"].as_object_mut().unwrap();
    task.remove("resultType");
    task.remove("_meta");
    got["result"].take()
}

/// The listener hears each state of its own task, each notification what `tasks/get` answers,
/// and the stream ends with its result once the task is finished; ids that are not the caller's
/// live tasks are dropped from the acknowledgment alike.
async fn task_notifications_follow_a_task_to_its_end(store: Arc<dyn TaskStore>, changes: Changes) {
    let s = setup_listening(settings(30_000), store.clone(), Some(changes));
    let id = create(&s.service, 700).await;
    // Someone else's live task, a task that does not exist, and no task id at all.
    let foreign = TaskRecord::new(
        HandleId::random().unwrap(),
        "https://issuer#someone-else",
        json!({}),
        mcp_now_ms(),
        60_000,
        1000,
    );
    store.create(&foreign, None).await.unwrap();
    let asked = json!([
        id,
        foreign.id.to_string(),
        HandleId::random().unwrap().to_string(),
        "not-a-task"
    ]);
    let mut stream = listen_for_tasks(&s.service, asked, true)
        .await
        .unwrap_or_else(|answer| panic!("listen refused: {} {}", answer.status, answer.text));
    let accepted = stream.acknowledged().await;
    assert_eq!(
        accepted,
        json!({"taskIds": [id]}),
        "only the caller's live task"
    );

    let first = stream
        .next(Duration::from_secs(5))
        .await
        .expect("the task's state now");
    assert_eq!(first["method"], "notifications/tasks", "{first}");
    assert_eq!(first["params"]["taskId"], id.as_str());
    assert_eq!(first["params"]["status"], "working", "{first}");
    assert_eq!(
        first["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    // Then one per change, the last one final, and the closing result.
    let rest = stream.closing_result(Duration::from_secs(10)).await;
    let last = rest.last().expect("a notification for the task's end");
    assert!(
        rest.iter().all(|m| m["method"] == "notifications/tasks"),
        "only task notifications on this stream: {rest:?}"
    );
    assert_eq!(last["params"]["status"], "completed", "{last}");
    let mut notified = last["params"].clone();
    notified.as_object_mut().unwrap().remove("_meta");
    assert_eq!(notified, as_notified(get(&s.service, &id).await));
    assert_eq!(
        notified["result"]["content"][0]["text"], "worked 700 ms",
        "the whole task, result included"
    );
}

fn mcp_now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test]
async fn task_notifications_on_the_memory_feed() {
    task_notifications_follow_a_task_to_its_end(
        Arc::new(MemoryTaskStore::new()),
        Changes::new(MemoryFeed::new(None)),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_notifications_on_the_dynamodb_feed() {
    let Some(store) = dynamodb_store().await else {
        return;
    };
    let endpoint = support::dynamodb::endpoint("task notifications on DynamoDB").unwrap();
    let client = support::dynamodb::client(&endpoint, &support::dynamodb::timeouts()).await;
    let feed = Changes::new(DynamoDbFeed::new(client, support::dynamodb::TABLE));
    task_notifications_follow_a_task_to_its_end(store, feed).await;
}

/// The engine runs its rounds through the handler and the handler reaches the engine, yet
/// nothing holds itself alive: once the server and its service are gone (a round having run
/// through both), the engine and the user's handler are freed. (An `Arc` cycle, `Tasks` →
/// runner → handler factory → handler settings → `Tasks`, kept both for the life of the
/// process.)
#[tokio::test]
async fn the_task_engine_and_the_handler_go_with_their_server() {
    let s = setup(settings(60_000), Arc::new(MemoryTaskStore::new()));
    let id = create(&s.service, 0).await;
    assert_eq!(until_terminal(&s.service, &id).await["status"], "completed");
    let (engine, runs) = (Arc::downgrade(&s.tasks), s.runs.clone());
    drop(s);
    // The round's worker lets go of the engine just after it records the end.
    let started = Instant::now();
    while engine.strong_count() > 0 && started.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(engine.strong_count(), 0, "the engine outlived its server");
    assert_eq!(
        Arc::strong_count(&runs),
        1,
        "the handler outlived its server"
    );
}

/// A finished task is told at once, and the stream, with nothing left to watch, ends.
#[tokio::test]
async fn a_listen_for_a_finished_task_tells_its_end_and_closes() {
    let s = listening_in_memory();
    let id = create(&s.service, 0).await;
    until_terminal(&s.service, &id).await;
    let mut stream = listen_for_tasks(&s.service, json!([id]), true)
        .await
        .unwrap_or_else(|answer| panic!("listen refused: {}", answer.text));
    stream.acknowledged().await;
    let told = stream.closing_result(Duration::from_secs(5)).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert_eq!(told[0]["params"]["status"], "completed");
}

/// `taskIds` from a client that did not declare the extension: -32021 naming it, HTTP 400;
/// ids that are not strings, or too many: -32602.
#[tokio::test]
async fn task_ids_need_the_extension_and_a_sane_list() {
    let s = listening_in_memory();
    let id = create(&s.service, 0).await;
    let Err(refused) = listen_for_tasks(&s.service, json!([id]), false).await else {
        panic!("an undeclared client's taskIds were accepted");
    };
    assert_eq!(refused.status, 400);
    assert_eq!(refused.code(), -32021, "{}", refused.text);
    assert_eq!(
        refused.json()["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    );
    for bad in [
        json!([1, 2]),
        json!(id),
        json!(vec![
            id.clone();
            mcp_lambda::listen::MAX_TASK_SUBSCRIPTIONS + 1
        ]),
    ] {
        let Err(refused) = listen_for_tasks(&s.service, bad.clone(), true).await else {
            panic!("taskIds {bad} were accepted");
        };
        assert_eq!(
            (refused.status.as_u16(), refused.code()),
            (400, -32602),
            "{}",
            refused.text
        );
    }
    // Nothing the caller may watch: refused like any filter with nothing left.
    let Err(refused) = listen_for_tasks(
        &s.service,
        json!([HandleId::random().unwrap().to_string()]),
        true,
    )
    .await
    else {
        panic!("a listen for an unknown task was accepted");
    };
    assert_eq!(refused.code(), -32602, "{}", refused.text);
}

/// The DynamoDB task store on the test table, or `None` (loudly) outside the DynamoDB script.
async fn dynamodb_store() -> Option<Arc<dyn TaskStore>> {
    let endpoint = support::dynamodb::endpoint("the task engine on DynamoDB")?;
    support::dynamodb::store(&endpoint).await;
    let client = support::dynamodb::client(&endpoint, &support::dynamodb::timeouts()).await;
    Some(Arc::new(DynamoDbTaskStore::new(
        client,
        support::dynamodb::TABLE,
    )))
}

macro_rules! on_both_stores {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $case() {
                    super::$case(std::sync::Arc::new(super::MemoryTaskStore::new())).await;
                }
            )*
        }
        mod dynamodb {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    if let Some(store) = super::dynamodb_store().await {
                        super::$case(store).await;
                    }
                }
            )*
        }
    };
}

on_both_stores!(
    a_task_runs_once_and_its_result_is_read_back,
    a_rounds_progress_is_the_tasks_status_message,
    a_second_delivery_of_the_same_round_runs_nothing_and_loses_nothing,
    a_worker_that_stops_leaves_the_task_failed_never_working,
    a_round_out_of_time_is_stopped_before_it_reads_failed,
    a_task_cancelled_before_its_effect_never_has_it,
    a_task_cancelled_after_its_effect_shows_it_and_has_stopped,
    a_cancelled_task_stops_within_a_poll_interval,
    one_caller_cannot_fill_the_task_store,
    an_unknown_task_id_is_invalid_params,
    an_input_round_is_answered_through_tasks_update,
);

/// The worker route (`POST <MCP_PATH>` with `x-mcp-task-round`, what a self-invocation on Lambda
/// sends): where rounds go to Lambda, a missing, malformed, forged or expired token is refused
/// 403 and runs nothing, whatever task the body names; where they run locally the route does not
/// exist (404), since this process hands out no round tokens.
#[tokio::test]
async fn a_task_round_without_a_good_token_is_refused_and_runs_nothing() {
    for (dispatch, refused) in [(lambda_dispatch().await, 403), (Dispatch::Local, 404)] {
        let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
        let tasks = Tasks::new(store.clone(), dispatch, settings(60_000));
        let worker = Worker::new();
        let runs = worker.runs.clone();
        let service = App::new(fixture::config(&[]))
            .tasks(tasks, |_: &str, _: &mcp_lambda::Caller| {
                TaskPolicy::Optional
            })
            .server_per_request(move || worker.clone())
            .service();
        a_task_round_is_refused(&service, &store, &runs, refused).await;
    }
}

/// `Dispatch::Lambda` to a closed port: no Invoke ever reaches anything.
async fn lambda_dispatch() -> Dispatch {
    use aws_credential_types::Credentials;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let timeouts = mcp_lambda::aws::AwsTimeouts {
        connect: Duration::from_millis(200),
        read: Duration::from_millis(200),
        operation: Duration::from_millis(1500),
    };
    let sdk = mcp_lambda::aws::loader(&timeouts)
        .endpoint_url(format!("http://{closed}"))
        .region(aws_types::region::Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "static"))
        .load()
        .await;
    Dispatch::Lambda(mcp_lambda::tasks::LambdaDispatch::new(
        "mcp", &sdk, &timeouts,
    ))
}

async fn a_task_round_is_refused(
    service: &McpService<Worker>,
    store: &Arc<dyn TaskStore>,
    runs: &AtomicUsize,
    refused: u16,
) {
    let id = HandleId::random().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let record = mcp_lambda::tasks::TaskRecord::new(
        id,
        "someone",
        json!({"params": {"name": "work", "arguments": {"ms": 0}}, "caller": null}),
        now,
        3_600_000,
        1000,
    );
    store.create(&record, None).await.unwrap();
    let body = serde_json::to_vec(&json!({"taskId": id.to_string(), "round": 0})).unwrap();
    let forged_tag = "0".repeat(64);
    let tokens = [
        String::new(),
        "not-a-token".to_owned(),
        format!("{}.{forged_tag}", now + 60_000),
        format!("{}.{forged_tag}", now - 1),
        format!("{}.{forged_tag}", now + 86_400_000),
    ];
    for token in tokens {
        let headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            ("x-mcp-task-round".to_owned(), token.clone()),
        ];
        let answer = fixture::send(service, "POST", "/mcp", &headers, body.clone()).await;
        assert_eq!(answer.status, refused, "{token:?}: {}", answer.text);
    }
    // Without the header at all it is an ordinary MCP request: no round runs either.
    let plain = vec![("content-type".to_owned(), "application/json".to_owned())];
    let answer = fixture::send(service, "POST", "/mcp", &plain, body).await;
    assert_ne!(answer.status, 200, "{}", answer.text);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
    let after = store.get("someone", id).await.unwrap();
    assert!(after.claimed.is_none(), "the round was never claimed");
}

/// A memory store that remembers the ids it created (a refused call carries none).
#[derive(Debug, Default)]
struct Recording {
    inner: MemoryTaskStore,
    created: std::sync::Mutex<Vec<HandleId>>,
}

/// What most `TaskStore` methods answer, spelt once for `Recording`'s delegating impl.
type RecordFuture<'a> = futures::future::BoxFuture<
    'a,
    Result<mcp_lambda::tasks::TaskRecord, mcp_lambda::tasks::TaskError>,
>;

impl TaskStore for Recording {
    fn create<'a>(
        &'a self,
        task: &'a mcp_lambda::tasks::TaskRecord,
        quota: Option<mcp_lambda::tasks::CallerQuota>,
    ) -> futures::future::BoxFuture<'a, Result<(), mcp_lambda::tasks::TaskError>> {
        self.created.lock().unwrap().push(task.id);
        self.inner.create(task, quota)
    }
    fn get<'a>(&'a self, owner: &'a str, id: HandleId) -> RecordFuture<'a> {
        self.inner.get(owner, id)
    }
    fn answer<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        responses: &'a std::collections::BTreeMap<String, Value>,
    ) -> RecordFuture<'a> {
        self.inner.answer(owner, id, responses)
    }
    fn cancel<'a>(&'a self, owner: &'a str, id: HandleId) -> RecordFuture<'a> {
        self.inner.cancel(owner, id)
    }
    fn claim<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        lease_until_ms: u64,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<mcp_lambda::tasks::TaskRecord>, mcp_lambda::tasks::TaskError>,
    > {
        self.inner.claim(id, round, lease_until_ms)
    }
    fn check<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        status_message: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<bool, mcp_lambda::tasks::TaskError>> {
        self.inner.check(id, round, status_message)
    }
    fn finish<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        end: &'a mcp_lambda::tasks::RoundEnd,
    ) -> futures::future::BoxFuture<'a, Result<bool, mcp_lambda::tasks::TaskError>> {
        self.inner.finish(id, round, end)
    }
}

/// `Dispatch::Lambda` whose Invoke fails (nothing listens where Lambda should be): the call is
/// answered -32603 with no task, and the recorded task reads `failed`, never `working`.
#[tokio::test]
async fn a_round_lambda_would_not_take_fails_the_call_and_the_task() {
    let store = Arc::new(Recording::default());
    let tasks = Tasks::new(store.clone(), lambda_dispatch().await, settings(60_000));
    let worker = Worker::new();
    let runs = worker.runs.clone();
    let service = App::new(fixture::config(&[]))
        .tasks(tasks, |_tool: &str, _caller: &mcp_lambda::Caller| {
            TaskPolicy::Optional
        })
        .server_per_request(move || worker.clone())
        .service();

    let (mut headers, body) = fixture::modern(
        json!(1),
        "tools/call",
        json!({"name": "work", "arguments": {"ms": 0}}),
    );
    let mut body: Value = serde_json::from_slice(&body).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    headers.retain(|(k, _)| k != "content-length");
    let answer = fixture::post(&service, (headers, serde_json::to_vec(&body).unwrap())).await;
    let answer = answer.json();
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");

    let created = store.created.lock().unwrap().clone();
    assert_eq!(created.len(), 1);
    let task = get(&service, &created[0].to_string()).await;
    assert_eq!(task["result"]["status"], "failed", "{task}");
    assert_eq!(runs.load(Ordering::SeqCst), 0, "nothing ran");
}

/// The DynamoDB task store through a fault-injecting proxy in front of DynamoDB Local, or
/// `None` (loudly) outside the DynamoDB script.
async fn faulty_dynamodb_store() -> Option<(Arc<dyn TaskStore>, support::fault_proxy::FaultProxy)> {
    let endpoint = support::dynamodb::endpoint("the task engine on a faulty DynamoDB")?;
    support::dynamodb::store(&endpoint).await;
    let proxy = support::fault_proxy::FaultProxy::start(&endpoint).await;
    let client = support::dynamodb::client(&proxy.url, &support::dynamodb::timeouts()).await;
    let store: Arc<dyn TaskStore> =
        Arc::new(DynamoDbTaskStore::new(client, support::dynamodb::TABLE));
    Some((store, proxy))
}

/// The cancel tests' `tasks/cancel`, which must be acknowledged (`resultType: complete`).
async fn cancel_acknowledged(service: &McpService<Worker>, id: &str) {
    let ack = task_request(service, "tasks/cancel", id, json!({})).await;
    assert_eq!(
        ack.json()["result"],
        json!({"resultType": "complete"}),
        "{}",
        ack.text
    );
}

/// Polls `tasks/get` until the task is terminal (within `limit`).
async fn terminal_within(service: &McpService<Worker>, id: &str, limit: Duration) -> Value {
    let started = Instant::now();
    loop {
        let task = get(service, id).await["result"].clone();
        if ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or("")) {
            return task;
        }
        assert!(
            started.elapsed() < limit,
            "not terminal after {limit:?}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A round finishes while DynamoDB throttles its end for 7 s (longer than the SDK's own three
/// attempts): the end is written again until it lands, and the task reads what its work did,
/// not `failed` once the claim runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_whose_end_meets_a_throttling_burst_still_reads_completed() {
    let Some((store, proxy)) = faulty_dynamodb_store().await else {
        return;
    };
    let s = setup(settings(20_000), store);
    proxy.rule(
        support::fault_proxy::Rule::op("UpdateItem")
            .body_contains("SET #state = :state")
            .for_duration(Duration::from_secs(7))
            .act(support::fault_proxy::Fault::Throttle),
    );
    let id = create(&s.service, 100).await;
    let done = terminal_within(&s.service, &id, Duration::from_secs(15)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "worked 100 ms");
    let finishes = proxy.actions("UpdateItem", "SET #state = :state");
    assert!(
        finishes.len() > 3 && finishes.last().is_some_and(|a| a == "Forward"),
        "throttled, then written: {finishes:?}"
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "run once");
}

/// DynamoDB throttles a round's claim for 4 s: the worker claims it once the store answers and
/// runs it, instead of leaving the task `working` with no worker until its token expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_whose_claim_is_throttled_is_claimed_once_the_store_answers() {
    let Some((store, proxy)) = faulty_dynamodb_store().await else {
        return;
    };
    let s = setup(settings(20_000), store);
    proxy.rule(
        support::fault_proxy::Rule::op("UpdateItem")
            .body_contains("SET #state = :working, claimed_round")
            .for_duration(Duration::from_secs(4))
            .act(support::fault_proxy::Fault::Throttle),
    );
    let id = create(&s.service, 100).await;
    let done = terminal_within(&s.service, &id, Duration::from_secs(12)).await;
    assert_eq!(done["status"], "completed", "{done}");
    let claims = proxy.actions("UpdateItem", "SET #state = :working, claimed_round");
    assert!(
        claims.len() > 3 && claims.last().is_some_and(|a| a == "Forward"),
        "throttled, then claimed: {claims:?}"
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "run once");
}

/// `tasks/cancel` while DynamoDB throttles the cancel's write for 3 s: the cancel is written
/// once the store answers (the call waits, it does not fail), and the round stops: `cancelled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_met_by_throttling_is_written_once_the_store_answers_and_stops_the_round() {
    let Some((store, proxy)) = faulty_dynamodb_store().await else {
        return;
    };
    let s = setup(settings(60_000), store);
    let id = create(&s.service, 10_000).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    proxy.rule(
        support::fault_proxy::Rule::op("UpdateItem")
            .body_contains("SET #cancel = :true")
            .for_duration(Duration::from_secs(3))
            .act(support::fault_proxy::Fault::Throttle),
    );
    cancel_acknowledged(&s.service, &id).await;
    let done = terminal_within(&s.service, &id, Duration::from_secs(5)).await;
    assert_eq!(done["status"], "cancelled", "{done}");
    let cancels = proxy.actions("UpdateItem", "SET #cancel = :true");
    assert!(
        cancels.len() > 1 && cancels.last().is_some_and(|a| a == "Forward"),
        "throttled, then written: {cancels:?}"
    );
}

/// The task's `PutItem` lands but its answer is lost: the server repeats it, finds its own
/// write id, answers the `CreateTaskResult`, and the task runs once to `completed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_answer_is_lost_still_starts_the_task_once() {
    let Some((store, proxy)) = faulty_dynamodb_store().await else {
        return;
    };
    let s = setup(settings(20_000), store);
    proxy.rule(
        support::fault_proxy::Rule::op("PutItem")
            .next(1)
            .act(support::fault_proxy::Fault::LoseAnswer),
    );
    let id = create(&s.service, 100).await;
    let done = terminal_within(&s.service, &id, Duration::from_secs(10)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        proxy.actions("PutItem", ""),
        ["LoseAnswer", "Forward"],
        "lost, then repeated"
    );
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "run once");
}

/// DynamoDB goes away for 3 s while a round runs (its progress checks fail, its end would
/// too): the round's end is written once the store is back, and the task reads `completed`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_outlives_the_store_being_down_for_three_seconds() {
    let Some((store, proxy)) = faulty_dynamodb_store().await else {
        return;
    };
    let s = setup(settings(30_000), store);
    let id = create(&s.service, 1500).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy.down();
    tokio::time::sleep(Duration::from_secs(3)).await;
    proxy.up();
    let done = terminal_within(&s.service, &id, Duration::from_secs(15)).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "worked 1500 ms");
    assert_eq!(s.runs.load(Ordering::SeqCst), 1, "run once");
}
