//! Every method rmcp dispatches to a `ServerHandler` reaches the user's handler through the
//! wrapper (`src/handler/mod.rs`, `Hosted`), on both doors of the front: the direct answer
//! (`src/http/direct.rs`: a plain 2026-07-28 request) and rmcp's `StreamableHttpService` (the
//! same request asking for progress, which only a stream can carry; a 2025-era request; a
//! method without a decoder in direct.rs). Each request is sent through `testing::TestClient` and over a socket
//! to the local server, and must come back with the answer the recording handler gave.
//!
//! `Hosted` forwards rmcp's methods by hand, so a method rmcp adds is answered by the trait's
//! default (-32601) until someone writes its forwarder: `skills/list`, `skills/get` and
//! `resources/directory/read` were dropped so (issue 42). Rows cannot be forgotten: rmcp's
//! `ClientRequest` and `ClientNotification` are `#[non_exhaustive]`, so no `match` here can
//! be exhaustive; instead `the_table_names_every_variant_rmcp_has` reads both unions from the
//! rmcp source Cargo built (`src/model.rs`, `ts_union!`) and fails on a variant without a row.
//!
//! **When it fails after an rmcp upgrade** (the checklist in `src/rmcp_gaps.rs`): for each
//! new variant, forward its `ServerHandler` method in `Hosted` (stamp `serverInfo` on its
//! result, as the others), record it in `Recorder` below, and add its row to `REQUESTS` or
//! `NOTIFICATIONS`.

// `logging/setLevel` is deprecated in rmcp, and still dispatched: it has a row.
#![allow(deprecated)]

use mcp_lambda_test_support as support;

use std::{
    collections::BTreeSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use mcp_lambda::{App, testing::TestClient};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
        ClientJsonRpcMessage, CompleteRequestParams, CompleteResult, CustomNotification,
        CustomRequest, CustomResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
        GetSkillRequestParams, GetSkillResult, GetTaskParams, GetTaskResult,
        InitializeRequestParams, InitializeResult, JsonRpcMessage, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult, ListToolsResult,
        PaginatedRequestParams, ProgressNotificationParam, ReadResourceDirectoryRequestParams,
        ReadResourceDirectoryResult, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};
use serde_json::{Value, json};

/// Which door a request came through: rmcp's service hands the handler a live peer, the direct
/// answer one whose transport is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Door {
    Direct,
    Rmcp,
}

/// A handler method that ran, and through which door (`None`: it has no request context).
type Seen = (&'static str, Option<Door>);

/// A handler implementing every `ServerHandler` method rmcp dispatches to: each records its
/// name and door and answers `-32602 "reached <name>"` (or `Ok` where the answer is `()`), so
/// the answer too shows the handler's hand.
#[derive(Clone, Default)]
struct Recorder {
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn note<T>(
        &self,
        name: &'static str,
        context: &RequestContext<RoleServer>,
    ) -> Result<T, ErrorData> {
        self.record(name, Some(door(context)));
        Err(ErrorData::invalid_params(format!("reached {name}"), None))
    }

    fn record(&self, name: &'static str, door: Option<Door>) {
        self.seen.lock().unwrap().push((name, door));
    }

    fn take(&self) -> Vec<Seen> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

fn door(context: &RequestContext<RoleServer>) -> Door {
    if context.peer.is_transport_closed() {
        Door::Direct
    } else {
        Door::Rmcp
    }
}

impl ServerHandler for Recorder {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_completions()
            .enable_logging()
            .enable_tasks()
            .enable_skills_with_directory_read()
            .build();
        // `resources/subscribe` is dispatched only to a server that offers it.
        if let Some(resources) = &mut capabilities.resources {
            resources.subscribe = Some(true);
        }
        ServerConfig::new(capabilities)
            .with_server_info(rmcp::model::Implementation::new("recorder", "1.0.0"))
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.note("ping", &context)
    }

    /// Answers as rmcp's default does, so that a legacy session opens (the notifications).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.record("initialize", Some(door(&context)));
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        self.note("discover", &context)
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.note("complete", &context)
    }

    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note("set_level", &context)
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.note("get_prompt", &context)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.note("list_prompts", &context)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.note("list_resources", &context)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.note("list_resource_templates", &context)
    }

    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.note("read_resource", &context)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.record("accepted_subscription_filter", None);
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.note("listen", context.request_context())
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note("subscribe", &context)
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note("unsubscribe", &context)
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.note("call_tool", &context)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.note("list_tools", &context)
    }

    async fn on_custom_request(
        &self,
        _request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.note("on_custom_request", &context)
    }

    async fn get_task(
        &self,
        _request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.note("get_task", &context)
    }

    async fn update_task(
        &self,
        _request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note("update_task", &context)
    }

    async fn cancel_task(
        &self,
        _request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.note("cancel_task", &context)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        self.note("list_skills", &context)
    }

    async fn get_skill(
        &self,
        _request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.note("get_skill", &context)
    }

    async fn read_resource_directory(
        &self,
        _request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        self.note("read_resource_directory", &context)
    }

    async fn on_cancelled(
        &self,
        _notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.record("on_cancelled", None);
    }

    async fn on_progress(
        &self,
        _notification: ProgressNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        self.record("on_progress", None);
    }

    async fn on_initialized(&self, _context: NotificationContext<RoleServer>) {
        self.record("on_initialized", None);
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        self.record("on_roots_list_changed", None);
    }

    async fn on_custom_notification(
        &self,
        _notification: CustomNotification,
        _context: NotificationContext<RoleServer>,
    ) {
        self.record("on_custom_notification", None);
    }
}

/// A notification: rmcp's variant, the method, its params and the handler method it reaches.
type Notice = (&'static str, &'static str, fn() -> Value, &'static str);

/// How a row's request is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// 2026-07-28, the protocol fields in `_meta`: direct when `direct.rs` decodes the method.
    Modern { direct: bool },
    /// 2025-era (a method 2026-07-28 removed): rmcp's service always.
    Legacy,
}

/// One request: rmcp's `ClientRequest` variant, the method and params on the wire, how it is
/// sent, and the handler methods it must reach, in order.
struct Row {
    variant: &'static str,
    method: &'static str,
    params: fn() -> Value,
    era: Era,
    reaches: &'static [&'static str],
}

const fn modern(
    variant: &'static str,
    method: &'static str,
    params: fn() -> Value,
    direct: bool,
    reaches: &'static [&'static str],
) -> Row {
    Row {
        variant,
        method,
        params,
        era: Era::Modern { direct },
        reaches,
    }
}

const fn legacy(
    variant: &'static str,
    method: &'static str,
    params: fn() -> Value,
    reaches: &'static [&'static str],
) -> Row {
    Row {
        variant,
        method,
        params,
        era: Era::Legacy,
        reaches,
    }
}

/// Every `ClientRequest` variant of rmcp (checked by `the_table_names_every_variant_rmcp_has`).
const REQUESTS: &[Row] = &[
    legacy("PingRequest", "ping", || json!({}), &["ping"]),
    legacy(
        "InitializeRequest",
        "initialize",
        || json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
        &["initialize"],
    ),
    modern(
        "DiscoverRequest",
        "server/discover",
        || json!({}),
        true,
        &["discover"],
    ),
    modern(
        "CompleteRequest",
        "completion/complete",
        || json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}),
        true,
        &["complete"],
    ),
    legacy(
        "SetLevelRequest",
        "logging/setLevel",
        || json!({"level": "info"}),
        &["set_level"],
    ),
    modern(
        "GetPromptRequest",
        "prompts/get",
        || json!({"name": "p"}),
        true,
        &["get_prompt"],
    ),
    modern(
        "ListPromptsRequest",
        "prompts/list",
        || json!({}),
        true,
        &["list_prompts"],
    ),
    modern(
        "ListResourcesRequest",
        "resources/list",
        || json!({}),
        true,
        &["list_resources"],
    ),
    modern(
        "ListResourceTemplatesRequest",
        "resources/templates/list",
        || json!({}),
        true,
        &["list_resource_templates"],
    ),
    modern(
        "ReadResourceRequest",
        "resources/read",
        || json!({"uri": "note://1"}),
        true,
        &["read_resource"],
    ),
    modern(
        "SubscriptionsListenRequest",
        "subscriptions/listen",
        || json!({"notifications": {"toolsListChanged": true}}),
        false,
        &["accepted_subscription_filter", "listen"],
    ),
    legacy(
        "SubscribeRequest",
        "resources/subscribe",
        || json!({"uri": "note://1"}),
        &["subscribe"],
    ),
    legacy(
        "UnsubscribeRequest",
        "resources/unsubscribe",
        || json!({"uri": "note://1"}),
        &["unsubscribe"],
    ),
    modern(
        "CallToolRequest",
        "tools/call",
        || json!({"name": "t", "arguments": {}}),
        true,
        &["call_tool"],
    ),
    modern(
        "ListToolsRequest",
        "tools/list",
        || json!({}),
        true,
        &["list_tools"],
    ),
    modern(
        "GetTaskRequest",
        "tasks/get",
        || json!({"taskId": "t1"}),
        false,
        &["get_task"],
    ),
    modern(
        "UpdateTaskRequest",
        "tasks/update",
        || json!({"taskId": "t1", "inputResponses": {}}),
        false,
        &["update_task"],
    ),
    modern(
        "CancelTaskRequest",
        "tasks/cancel",
        || json!({"taskId": "t1"}),
        false,
        &["cancel_task"],
    ),
    modern(
        "ListSkillsRequest",
        "skills/list",
        || json!({}),
        false,
        &["list_skills"],
    ),
    modern(
        "GetSkillRequest",
        "skills/get",
        || json!({"uri": "skill://demo/SKILL.md"}),
        false,
        &["get_skill"],
    ),
    modern(
        "ReadResourceDirectoryRequest",
        "resources/directory/read",
        || json!({"uri": "skill://demo/"}),
        false,
        &["read_resource_directory"],
    ),
    modern(
        "CustomRequest",
        "example/custom",
        || json!({}),
        false,
        &["on_custom_request"],
    ),
];

/// Every `ClientNotification` variant of rmcp, with the handler method it reaches. A
/// stateless server never hands rmcp's handler a notification (rmcp answers 202 and drops
/// it), so these go through a legacy session (`MCP_LEGACY_SESSIONS=true`), rmcp's one path
/// that dispatches them.
const NOTIFICATIONS: &[Notice] = &[
    (
        "CancelledNotification",
        "notifications/cancelled",
        || json!({"requestId": 99}),
        "on_cancelled",
    ),
    (
        "ProgressNotification",
        "notifications/progress",
        || json!({"progressToken": 1, "progress": 1}),
        "on_progress",
    ),
    (
        "InitializedNotification",
        "notifications/initialized",
        || json!({}),
        "on_initialized",
    ),
    (
        "RootsListChangedNotification",
        "notifications/roots/list_changed",
        || json!({}),
        "on_roots_list_changed",
    ),
    (
        "CustomNotification",
        "notifications/example",
        || json!({}),
        "on_custom_notification",
    ),
];

/// The variant rmcp decodes a message into: its `Debug` name.
fn variant_of(message: &Value) -> String {
    let decoded: ClientJsonRpcMessage = serde_json::from_value(message.clone()).unwrap();
    let debug = match decoded {
        JsonRpcMessage::Request(request) => format!("{:?}", request.request),
        JsonRpcMessage::Notification(notification) => format!("{:?}", notification.notification),
        other => panic!("not a request or notification: {other:?}"),
    };
    debug.split('(').next().unwrap().to_owned()
}

/// The union `name`'s variants as rmcp's `src/model.rs` declares them (`ts_union!`).
fn rmcp_union(model: &str, name: &str) -> BTreeSet<String> {
    let start = model
        .find(&format!("export type {name} ="))
        .unwrap_or_else(|| panic!("rmcp's model.rs declares no {name}"));
    let body = &model[start..];
    let body = &body[..body.find(';').unwrap()];
    body.split('|')
        .skip(1)
        .map(|variant| variant.trim().trim_start_matches("box ").trim().to_owned())
        .collect()
}

/// rmcp's `src/model.rs`, of the version `Cargo.lock` pins, from Cargo's registry sources
/// (where Cargo unpacked it to build this test).
fn rmcp_model_source() -> String {
    let lock = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.lock")).unwrap();
    let version = lock
        .split("[[package]]")
        .find(|package| package.contains("\nname = \"rmcp\"\n"))
        .and_then(|package| package.lines().find_map(|l| l.strip_prefix("version = ")))
        .expect("rmcp in Cargo.lock")
        .trim_matches('"')
        .to_owned();
    let cargo_home = std::env::var("CARGO_HOME")
        .unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap()));
    let registry = std::path::Path::new(&cargo_home).join("registry/src");
    std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("{}: {e}", registry.display()))
        .flatten()
        .map(|index| index.path().join(format!("rmcp-{version}/src/model.rs")))
        .find_map(|model| std::fs::read_to_string(model).ok())
        .unwrap_or_else(|| panic!("rmcp {version}'s source under {}", registry.display()))
}

#[test]
fn the_table_names_every_variant_rmcp_has() {
    let model = rmcp_model_source();
    let rows: BTreeSet<String> = REQUESTS.iter().map(|r| r.variant.to_owned()).collect();
    assert_eq!(
        rows,
        rmcp_union(&model, "ClientRequest"),
        "a ClientRequest variant without a row (or a row rmcp no longer has): see this file's \
         doc for what to do"
    );
    let rows: BTreeSet<String> = NOTIFICATIONS.iter().map(|n| n.0.to_owned()).collect();
    assert_eq!(
        rows,
        rmcp_union(&model, "ClientNotification"),
        "see this file's doc"
    );
    // And each row's message is the variant it names, as rmcp decodes it.
    for row in REQUESTS {
        let message =
            json!({"jsonrpc": "2.0", "id": 1, "method": row.method, "params": (row.params)()});
        assert_eq!(variant_of(&message), row.variant, "{}", row.method);
    }
    for (variant, method, params, _) in NOTIFICATIONS {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params()});
        assert_eq!(variant_of(&message), *variant, "{method}");
    }
}

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// `row`'s request, addressed to `host`; with `via_rmcp`, a 2026-07-28 request asks for
/// progress (`_meta.progressToken`), which only rmcp's own service may answer (a stream), so
/// the same request reaches the handler through the other door.
fn request_of(
    client: &TestClient<Recorder>,
    row: &Row,
    host: &str,
    via_rmcp: bool,
) -> http::Request<Full<Bytes>> {
    let mut request = match row.era {
        Era::Modern { .. } => {
            let mut params = (row.params)();
            if via_rmcp {
                params["_meta"]["progressToken"] = json!("forwarding");
            }
            client.build(row.method, params)
        }
        Era::Legacy => {
            let body =
                json!({"jsonrpc": "2.0", "id": 1, "method": row.method, "params": (row.params)()});
            http::Request::post("/mcp")
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap()
        }
    };
    let headers = request.headers_mut();
    headers.insert(http::header::HOST, host.parse().unwrap());
    // A task's id is its request's `Mcp-Name` (the test client names `name` and `uri` only).
    if let Some(task) = (row.params)()["taskId"].as_str() {
        headers.insert("mcp-name", task.parse().unwrap());
    }
    request
}

/// The door a row's request goes through, asked to go through rmcp's or not.
fn expected_door(row: &Row, via_rmcp: bool) -> Door {
    match row.era {
        Era::Modern { direct: true } if !via_rmcp => Door::Direct,
        _ => Door::Rmcp,
    }
}

/// What the handler recorded for one request must be exactly the row's methods, through the
/// door expected, and the answer the last one's.
fn check(row: &Row, how: &str, door: Door, seen: Vec<Seen>, answer: &Value) {
    let names: Vec<&str> = seen.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names, row.reaches,
        "{} ({how}): the handler saw {names:?}; the answer was {answer}",
        row.method
    );
    for (name, seen_door) in &seen {
        if let Some(seen_door) = seen_door {
            assert_eq!(
                *seen_door, door,
                "{} ({how}): {name} came through",
                row.method
            );
        }
    }
    let last = row.reaches.last().unwrap();
    let (got, want) = if *last == "initialize" {
        (&answer["result"]["serverInfo"]["name"], json!("recorder"))
    } else {
        (
            &answer["error"]["message"],
            json!(format!("reached {last}")),
        )
    };
    assert_eq!(
        *got, want,
        "{} ({how}): the handler's answer, back to the client: {answer}",
        row.method
    );
}

fn app_server(vars: &[(&str, &str)]) -> mcp_lambda::Server<Recorder> {
    let recorder = Recorder::default();
    App::new(support::fixture::config(vars)).server_per_request(move || recorder.clone())
}

#[tokio::test]
async fn every_request_reaches_the_handler_through_the_test_client_on_both_doors() {
    let recorder = Recorder::default();
    let handler = recorder.clone();
    let server =
        App::new(support::fixture::config(&[])).server_per_request(move || handler.clone());
    let client = TestClient::new(&server).with_capabilities(json!({"extensions": {TASKS: {}}}));
    for row in REQUESTS {
        for via_rmcp in [false, true] {
            let how = if via_rmcp {
                "TestClient, progress asked"
            } else {
                "TestClient"
            };
            let answer = client
                .send(request_of(&client, row, "127.0.0.1:3000", via_rmcp))
                .await;
            check(
                row,
                how,
                expected_door(row, via_rmcp),
                recorder.take(),
                answer.json(),
            );
        }
    }
}

/// The answer's last JSON-RPC message, read from JSON or SSE.
fn last_message(content_type: &str, body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    if content_type.starts_with("text/event-stream") {
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .filter(|data| !data.is_empty())
            .filter_map(|data| serde_json::from_str(data).ok())
            .next_back()
            .unwrap_or_else(|| panic!("no message in {text}"))
    } else {
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
    }
}

type HttpClient = hyper_util::client::legacy::Client<
    hyper_util::client::legacy::connect::HttpConnector,
    Full<Bytes>,
>;

async fn over_socket(
    http: &HttpClient,
    addr: &str,
    request: http::Request<Full<Bytes>>,
) -> (http::StatusCode, Option<String>, Value) {
    let (mut parts, body) = request.into_parts();
    parts.uri = format!("http://{addr}/mcp").parse().unwrap();
    let response = http
        .request(http::Request::from_parts(parts, body))
        .await
        .expect("the local server answers");
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let message = if body.is_empty() {
        Value::Null
    } else {
        last_message(&content_type, &body)
    };
    (status, session, message)
}

/// The local server on a free port, serving `recorder`; its address and its shutdown.
async fn local_server(
    recorder: &Recorder,
    vars: &[(&str, &str)],
) -> (String, mcp_lambda::shutdown::Shutdown) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string();
    let mut all: Vec<(String, String)> = vec![("MCP_BIND".into(), addr.clone())];
    all.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let handler = recorder.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    // On a runtime of its own: `Server::run`'s future is not `Send` for `tokio::spawn`.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async move {
            let vars: Vec<(&str, &str)> =
                all.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let server = App::new(support::fixture::config(&vars))
                .server_per_request(move || handler.clone());
            tx.send(server.shutdown()).unwrap();
            server.run().await.unwrap();
        });
    });
    let shutdown = rx.recv().unwrap();
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(&addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // `run` lists the tools and prompts once at start-up (the fingerprints): not a request.
    recorder.take();
    (addr, shutdown)
}

#[tokio::test]
async fn every_request_reaches_the_handler_over_http_on_both_doors() {
    let recorder = Recorder::default();
    let (addr, shutdown) = local_server(&recorder, &[]).await;
    // Only to build requests as a client does.
    let builder =
        TestClient::new(&app_server(&[])).with_capabilities(json!({"extensions": {TASKS: {}}}));
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    for row in REQUESTS {
        for via_rmcp in [false, true] {
            let how = if via_rmcp {
                "socket, progress asked"
            } else {
                "socket"
            };
            let request = request_of(&builder, row, &addr, via_rmcp);
            let (_, _, answer) = over_socket(&http, &addr, request).await;
            check(
                row,
                how,
                expected_door(row, via_rmcp),
                recorder.take(),
                &answer,
            );
        }
    }
    shutdown.trigger();
}

#[tokio::test]
async fn every_notification_reaches_the_handler_in_a_legacy_session() {
    let recorder = Recorder::default();
    let (addr, shutdown) = local_server(&recorder, &[("MCP_LEGACY_SESSIONS", "true")]).await;
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let post = |body: Value, session: Option<&str>| {
        let mut request = http::Request::post("/mcp")
            .header("host", addr.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (_, session, _) = over_socket(&http, &addr, post(initialize, None)).await;
    let session = session.expect("a legacy session");
    recorder.take();
    for (_, method, params, reaches) in NOTIFICATIONS {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params()});
        let (status, _, _) = over_socket(&http, &addr, post(message, Some(&session))).await;
        assert_eq!(status, 202, "{method}");
        let mut seen = Vec::new();
        for _ in 0..100 {
            seen = recorder.take();
            if !seen.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let names: Vec<&str> = seen.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, [*reaches], "{method}");
    }
    shutdown.trigger();
}
