//! The rmcp step answers a plain 2026-07-28 request itself (`src/http/direct.rs`: rmcp's
//! handler dispatch without rmcp's per-request service) and must answer it exactly as rmcp's
//! `StreamableHttpService` does. Each request here is sent twice through the same service:
//! as it is (answered directly) and with an `Mcp-Param-Unused` header, which rmcp ignores
//! (no tool routes a parameter named so) but which sends the request to rmcp's service. The
//! two answers must have the same status, content type and body, byte for byte.

use mcp_lambda_test_support as support;

use std::sync::{
    Arc,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};

use mcp_lambda::App;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams,
        CompleteResult, CompletionInfo, ContentBlock, GetPromptRequestParams, GetPromptResponse,
        GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage, ReadResourceRequestParams,
        ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
        Role, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use support::fixture::*;

/// Tools (one fails, one routes a parameter into a header, one tries to notify), prompts,
/// resources and completions.
#[derive(Clone, Default)]
struct Everything {
    /// How many requests reached the handler without rmcp's service: their peer's transport
    /// is closed (rmcp's service hands every handler a live one).
    direct: Arc<AtomicUsize>,
    /// `slow` saw its request's token cancelled, and ran to its end.
    slow_saw_cancel: Arc<AtomicBool>,
    slow_finished: Arc<AtomicBool>,
}

impl Everything {
    fn note(&self, context: &RequestContext<RoleServer>) {
        if context.peer.is_transport_closed() {
            self.direct.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ServerHandler for Everything {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_completions()
                .build(),
        )
        .with_server_info(rmcp::model::Implementation::new("everything", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.note(&context);
        Ok(ListToolsResult::with_all_items(vec![
            tool(
                "echo",
                "Answers its message.",
                json!({"message": {"type": "string"}}),
            ),
            tool("fail", "Fails as a tool.", json!({})),
            tool("refuse", "Refuses its arguments.", json!({})),
            tool(
                "notify",
                "Tries to send a progress notification.",
                json!({}),
            ),
            regional(),
        ]))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        (name == "regional").then(regional)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.note(&context);
        let text = match request.name.as_ref() {
            "echo" | "regional" => serde_json::to_string(&request.arguments).unwrap(),
            "fail" => {
                return Ok(CallToolResponse::from(CallToolResult::error(vec![
                    ContentBlock::text("it failed"),
                ])));
            }
            "refuse" => return Err(ErrorData::invalid_params("no, thank you", None)),
            "panic" => panic!("a handler that panics"),
            "slow" => {
                for _ in 0..50 {
                    if context.ct.is_cancelled() {
                        self.slow_saw_cancel.store(true, Ordering::SeqCst);
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                self.slow_finished.store(true, Ordering::SeqCst);
                "slow".to_owned()
            }
            "notify" => {
                let token = context
                    .meta
                    .get_progress_token()
                    .map_or(json!("none"), |t| serde_json::to_value(t).unwrap());
                let param =
                    serde_json::from_value(json!({"progressToken": token, "progress": 1})).unwrap();
                match context.peer.notify_progress(param).await {
                    Ok(()) => "sent".to_owned(),
                    Err(error) => format!("not sent: {error}"),
                }
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.note(&context);
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "greet",
            Some("Greets."),
            None,
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.note(&context);
        if request.name != "greet" {
            return Err(ErrorData::invalid_params("no such prompt", None));
        }
        Ok(GetPromptResponse::from(GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "hello"),
        ])))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.note(&context);
        Ok(ListResourcesResult::with_all_items(vec![Resource::new(
            "note://1", "one",
        )]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.note(&context);
        Ok(ListResourceTemplatesResult::with_all_items(vec![
            ResourceTemplate::new("note://{id}", "note"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.note(&context);
        if request.uri != "note://1" {
            return Err(ErrorData::resource_not_found("no such note", None));
        }
        Ok(ReadResourceResponse::from(ReadResourceResult::new(vec![
            ResourceContents::text("one", request.uri.clone()),
        ])))
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.note(&context);
        Ok(CompleteResult::new(
            CompletionInfo::new(vec!["alpha".into(), "beta".into()]).unwrap(),
        ))
    }
}

/// The tool that routes its `region` argument into an `Mcp-Param-Region` header.
fn regional() -> rmcp::model::Tool {
    tool(
        "regional",
        "Routes its region into a header.",
        json!({"region": {"type": "string", "x-mcp-header": "Region"}}),
    )
}

fn service(vars: &[(&str, &str)]) -> mcp_lambda::McpService<Everything> {
    served(vars, Everything::default())
}

fn served(vars: &[(&str, &str)], handler: Everything) -> mcp_lambda::McpService<Everything> {
    App::new(config(vars)).server(handler).service()
}

/// The same request through rmcp's service.
fn through_rmcp(request: (Vec<(String, String)>, Vec<u8>)) -> (Vec<(String, String)>, Vec<u8>) {
    with_header(request, "mcp-param-unused", Some("x"))
}

/// Sends `request` both ways and checks the answers agree; returns the direct one.
async fn both_ways(
    service: &mcp_lambda::McpService<Everything>,
    request: (Vec<(String, String)>, Vec<u8>),
) -> Answer {
    let direct = post(service, request.clone()).await;
    let rmcp = post(service, through_rmcp(request.clone())).await;
    let what = String::from_utf8_lossy(&request.1).into_owned();
    assert_eq!(direct.status, rmcp.status, "status of {what}");
    assert_eq!(
        direct.header("content-type"),
        rmcp.header("content-type"),
        "content type of {what}"
    );
    assert_eq!(direct.text, rmcp.text, "body of {what}");
    direct
}

/// `request` with a `result` beside its method: no request to rmcp, whose refusal the front
/// explains (-32600).
fn with_result(
    (headers, body): (Vec<(String, String)>, Vec<u8>),
) -> (Vec<(String, String)>, Vec<u8>) {
    let mut body: Value = serde_json::from_slice(&body).unwrap();
    body["result"] = json!({});
    (headers, serde_json::to_vec(&body).unwrap())
}

fn named(
    request: (Vec<(String, String)>, Vec<u8>),
    name: &str,
) -> (Vec<(String, String)>, Vec<u8>) {
    with_header(request, "mcp-name", Some(name))
}

#[tokio::test]
async fn every_method_answers_as_rmcp_answers() {
    let handler = Everything::default();
    let service = served(&[], handler.clone());
    let cases = [
        modern(json!(1), "server/discover", json!({})),
        modern(json!(2), "tools/list", json!({})),
        named(
            modern(
                json!("s"),
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "hi"}}),
            ),
            "echo",
        ),
        named(
            modern(
                json!(4),
                "tools/call",
                json!({"name": "fail", "arguments": {}}),
            ),
            "fail",
        ),
        named(
            modern(json!(5), "tools/call", json!({"name": "refuse"})),
            "refuse",
        ),
        named(
            modern(
                json!(6),
                "tools/call",
                json!({"name": "missing", "arguments": {}}),
            ),
            "missing",
        ),
        named(
            modern(
                json!(7),
                "tools/call",
                json!({"name": "echo", "arguments": {"message": 5}}),
            ),
            "echo",
        ),
        modern(json!(8), "prompts/list", json!({})),
        named(
            modern(json!(9), "prompts/get", json!({"name": "greet"})),
            "greet",
        ),
        named(
            modern(json!(10), "prompts/get", json!({"name": "nope"})),
            "nope",
        ),
        modern(json!(11), "resources/list", json!({})),
        modern(json!(12), "resources/templates/list", json!({})),
        named(
            modern(json!(13), "resources/read", json!({"uri": "note://1"})),
            "note://1",
        ),
        named(
            modern(json!(14), "resources/read", json!({"uri": "note://2"})),
            "note://2",
        ),
        modern(
            json!(15),
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a", "value": "b"}}),
        ),
        modern(json!(16), "tasks/get", json!({"taskId": "nope"})),
        modern(json!(17), "tools/list", json!({"cursor": "forged"})),
        with_result(modern(json!(18), "tools/list", json!({}))),
    ];
    let mut statuses = Vec::new();
    for request in cases {
        statuses.push(both_ways(&service, request).await.status.as_u16());
    }
    // Not all refusals: the cases reach the handler and come back as results.
    assert!(
        statuses.iter().filter(|s| **s == 200).count() >= 10,
        "{statuses:?}"
    );
    // Each case reached the handler directly once, but `tasks/get` (no decoder here: rmcp's)
    // and the forged cursor (refused by the wrapper before the handler).
    assert_eq!(handler.direct.load(Ordering::Relaxed), 15);
}

#[tokio::test]
async fn a_method_the_server_does_not_offer_answers_as_rmcp_answers() {
    // The fixture offers tools only: prompts/list is rmcp's -32601, 404.
    let service = App::new(config(&[]))
        .server_per_request(|| Fixture)
        .service();
    let request = modern(json!(1), "prompts/list", json!({}));
    let direct = post(&service, request.clone()).await;
    let rmcp = post(&service, through_rmcp(request)).await;
    assert_eq!(direct.status, 404);
    assert_eq!(direct.code(), -32601);
    assert_eq!((direct.status, direct.text), (rmcp.status, rmcp.text));
}

#[tokio::test]
async fn a_second_page_answers_as_rmcp_answers() {
    let service = service(&[("MCP_PAGE_SIZE", "2")]);
    let first = both_ways(&service, modern(json!(1), "tools/list", json!({}))).await;
    let cursor = first.json()["result"]["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = both_ways(
        &service,
        modern(json!(2), "tools/list", json!({"cursor": cursor})),
    )
    .await;
    assert_eq!(second.json()["result"]["tools"][0]["name"], "refuse");
}

#[tokio::test]
async fn a_tool_that_routes_a_parameter_into_a_header_is_left_to_rmcp() {
    let service = service(&[]);
    // Without its Mcp-Param-Region header rmcp refuses the call (-32020); answered directly,
    // the handler would have run.
    let request = named(
        modern(
            json!(1),
            "tools/call",
            json!({"name": "regional", "arguments": {"region": "eu"}}),
        ),
        "regional",
    );
    let answer = post(&service, request.clone()).await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert_eq!(answer.code(), -32020);
    let routed = post(
        &service,
        with_header(request, "mcp-param-region", Some("eu")),
    )
    .await;
    assert_eq!(routed.status, 200, "{}", routed.text);
}

#[tokio::test]
async fn a_message_the_spec_forbids_is_refused_to_the_handler_and_an_asked_one_is_sent() {
    let service = service(&[]);
    // No progressToken: answered directly, where the handler's notification cannot go.
    let request = named(
        modern(json!(1), "tools/call", json!({"name": "notify"})),
        "notify",
    );
    let answer = post(&service, request).await;
    assert_eq!(answer.status, 200);
    let text = answer.json()["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.starts_with("not sent"), "{text}");
    // With one, rmcp's service streams it before the answer.
    let (headers, _) = modern(json!(2), "tools/call", json!({}));
    let mut body: Value =
        serde_json::from_slice(&modern(json!(2), "tools/call", json!({"name": "notify"})).1)
            .unwrap();
    body["params"]["_meta"]["progressToken"] = json!("p1");
    let streamed = post(
        &service,
        named((headers, serde_json::to_vec(&body).unwrap()), "notify"),
    )
    .await;
    assert_eq!(streamed.status, 200);
    assert!(
        streamed.text.contains("notifications/progress") && streamed.text.contains("\"sent\""),
        "{}",
        streamed.text
    );
}

/// `request` as an HTTP request to the service, with `Host: host` (the only one).
fn to_host(
    host: &str,
    (headers, body): (Vec<(String, String)>, Vec<u8>),
) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    let mut request = http::Request::post("http://127.0.0.1:3000/mcp").header("host", host);
    for (name, value) in &headers {
        request = request.header(name.as_str(), value.as_str());
    }
    request
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .unwrap()
}

/// `request` with `Host: host`, answered: its status and body.
async fn post_to_host(
    service: &mcp_lambda::McpService<Everything>,
    host: &str,
    request: (Vec<(String, String)>, Vec<u8>),
) -> (http::StatusCode, String) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let response = service
        .clone()
        .oneshot(to_host(host, request))
        .await
        .unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn hosts_are_judged_as_rmcp_judged_them_on_both_doors() {
    // The front judges `Host` before either door (`src/http/host.rs`), by rmcp 3.11's rules:
    // the statuses rmcp's allow-list gave, the same on both.
    let service = service(&[(
        "MCP_ALLOWED_HOSTS",
        "example.com,api.example.com:8443,[::1]",
    )]);
    let hosts = [
        ("example.com", 200),
        ("EXAMPLE.com", 200),
        ("example.com:1234", 200),
        ("api.example.com", 403),
        ("api.example.com:8443", 200),
        ("api.example.com:8444", 403),
        ("[::1]:3000", 200),
        ("evil.com", 403),
        ("127.0.0.1:3000", 403),
        // Read as rmcp read it: an authority whose port is no number has no port.
        ("example.com:notaport", 200),
        ("", 400),
    ];
    for (host, status) in hosts {
        let request = modern(json!(1), "tools/list", json!({}));
        let direct = post_to_host(&service, host, request.clone()).await;
        let rmcp = post_to_host(&service, host, through_rmcp(request)).await;
        assert_eq!(direct, rmcp, "Host {host:?}");
        assert_eq!(direct.0.as_u16(), status, "Host {host:?}: {}", direct.1);
    }
}

#[tokio::test]
async fn a_request_from_an_allowed_origin_is_answered_directly_as_rmcp_answers_it() {
    let handler = Everything::default();
    let service = served(
        &[("MCP_ALLOWED_ORIGINS", "https://app.example.com:443")],
        handler.clone(),
    );
    for origin in ["https://app.example.com", "https://app.example.com:443"] {
        let request = with_header(
            modern(json!(1), "tools/list", json!({})),
            "origin",
            Some(origin),
        );
        let direct = both_ways(&service, request).await;
        assert_eq!(direct.status, 200, "{}", direct.text);
        assert_eq!(direct.header("access-control-allow-origin"), Some(origin));
    }
    // The front judged the origin: the fast path may answer it.
    assert_eq!(handler.direct.load(Ordering::Relaxed), 2);
    let foreign = with_header(
        modern(json!(2), "tools/list", json!({})),
        "origin",
        Some("https://evil.example.com"),
    );
    assert_eq!(both_ways(&service, foreign).await.status, 403);
    assert_eq!(handler.direct.load(Ordering::Relaxed), 2);
}

/// Every request's future is boxed and moved as a whole: a step's state kept inline in it (rmcp's
/// service is kilobytes) is copied on every request, refusals included. The steps that need
/// much (rmcp, the direct answer, auth, listen) are boxed; this holds the rest to a few
/// kilobytes (8 KiB before they were; the bound is loose for a debug build's layout).
#[tokio::test]
async fn a_request_future_stays_small() {
    use tower::Service as _;
    let mut service = service(&[]);
    let (headers, body) = modern(json!(1), "tools/list", json!({}));
    let request = to_host("127.0.0.1:3000", (headers, body));
    let future = service.call(request);
    let size = std::mem::size_of_val(&*future);
    assert!(size < 4096, "a request's future is {size} bytes");
}

#[tokio::test]
async fn a_handler_whose_answer_is_dropped_runs_on_with_its_token_cancelled() {
    // rmcp runs each handler in a task and cancels its token when the client goes; the direct
    // answer polls the handler in place and, when dropped, hands the rest to a task.
    use tower::Service as _;
    let handler = Everything::default();
    let mut service = served(&[], handler.clone());
    let (headers, body) = named(
        modern(json!(1), "tools/call", json!({"name": "slow"})),
        "slow",
    );
    let request = to_host("127.0.0.1:3000", (headers, body));
    let answer =
        tokio::time::timeout(std::time::Duration::from_millis(50), service.call(request)).await;
    assert!(answer.is_err(), "the slow tool answered within 50 ms");
    for _ in 0..100 {
        if handler.slow_finished.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        handler.slow_finished.load(Ordering::SeqCst),
        "the handler was dropped, not run to its end"
    );
    assert!(
        handler.slow_saw_cancel.load(Ordering::SeqCst),
        "the handler's token was not cancelled"
    );
}

#[tokio::test]
async fn a_panicking_handler_gets_a_500_and_the_server_serves_on() {
    let service = service(&[]);
    let answer = post(
        &service,
        named(
            modern(json!(1), "tools/call", json!({"name": "panic"})),
            "panic",
        ),
    )
    .await;
    assert_eq!(answer.status, 500, "{}", answer.text);
    let next = post(&service, modern(json!(2), "tools/list", json!({}))).await;
    assert_eq!(next.status, 200, "{}", next.text);
}
