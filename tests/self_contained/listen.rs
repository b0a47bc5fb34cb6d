//! `subscriptions/listen` served by the library for any handler that publishes changes, in
//! one process on the in-memory feed: the acknowledgment, delivery of exactly what the accepted
//! filter asks for, owner-bound resource subscriptions, and every way a stream ends with its
//! result (the maximum, the invocation deadline, shutdown).

use mcp_lambda_test_support as support;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use http::Request;
use http_body_util::{Full, combinators::BoxBody};
use mcp_lambda::handles::{HandleId, HandleStore};
use mcp_lambda::listen::{Changes, StreamLimits, Watch};
use mcp_lambda::{App, Caller, Config, McpService};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use support::fixture;
use tower::ServiceExt as _;

/// A server whose tool list and resources change: it advertises list changes and resource
/// subscriptions, and publishes through `Changes` (held by the test).
#[derive(Clone)]
struct Changing;

impl ServerHandler for Changing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("changing", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        fixture::only_tool("noop", "Does nothing.", json!({}))
    }
}

/// `file:///public/*` for anyone; `handle://<uuid>` through the caller's handle; nothing else.
fn watch(uri: &str, caller: &Caller) -> Option<Watch> {
    if uri.starts_with("file:///public/") {
        return Some(Watch::Resource(uri.to_owned()));
    }
    let id: HandleId = uri.strip_prefix("handle://")?.parse().ok()?;
    let owner = caller.owner_key().to_owned();
    Some(Watch::Handle { owner, id })
}

struct Setup {
    service: McpService<Changing>,
    changes: Changes,
    handles: Arc<dyn HandleStore>,
    shutdown: mcp_lambda::shutdown::Shutdown,
}

async fn setup(vars: &[(&str, &str)]) -> Setup {
    let config = fixture::config(vars);
    let handles = config.handles().open().await.unwrap();
    let changes = config
        .listen()
        .open(config.handles(), handles.clone())
        .await
        .unwrap();
    let server = App::new(config)
        .changes(&changes)
        .watch_resources(watch)
        .server_per_request(|| Changing);
    Setup {
        service: server.service(),
        shutdown: server.shutdown(),
        changes,
        handles,
    }
}

type Stream = support::sse::ListenStream<BoxBody<Bytes, std::convert::Infallible>>;

async fn listen_with(
    service: &McpService<Changing>,
    id: Value,
    filter: Value,
    limits: Option<StreamLimits>,
) -> Stream {
    let (headers, body) = fixture::modern(
        id.clone(),
        "subscriptions/listen",
        json!({ "notifications": filter }),
    );
    let mut request = Request::builder()
        .method("POST")
        .uri("http://127.0.0.1:3000/mcp")
        .header("host", "127.0.0.1:3000");
    for (k, v) in &headers {
        request = request.header(k.as_str(), v.as_str());
    }
    let mut request = request.body(Full::new(Bytes::from(body))).unwrap();
    if let Some(limits) = limits {
        request.extensions_mut().insert(limits);
    }
    let response = service.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers().get("content-type").unwrap();
    assert!(
        content_type.as_bytes().starts_with(b"text/event-stream"),
        "{content_type:?}"
    );
    Stream::new(id, response.into_body())
}

async fn listen(service: &McpService<Changing>, id: Value, filter: Value) -> Stream {
    listen_with(service, id, filter, None).await
}

fn method(message: &Value) -> &str {
    message["method"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_list_change_reaches_the_listener_that_asked_and_nobody_else() {
    let s = setup(&[("MCP_LISTEN_POLL_MS", "5000")]).await;
    let tools_id = json!("tools-1");
    let mut tools = listen(
        &s.service,
        tools_id.clone(),
        json!({"toolsListChanged": true}),
    )
    .await;
    let accepted = tools.acknowledged().await;
    assert_eq!(accepted, json!({"toolsListChanged": true}));
    let resources_id = json!(7);
    let mut resources = listen(
        &s.service,
        resources_id.clone(),
        json!({"resourcesListChanged": true}),
    )
    .await;
    resources.acknowledged().await;

    // The in-memory feed wakes listeners at once, well before the 5 s poll.
    let published = Instant::now();
    s.changes.tools_list_changed().await.unwrap();
    let note = tools.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(method(&note), "notifications/tools/list_changed", "{note}");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        tools_id
    );
    assert!(published.elapsed() < Duration::from_secs(2));

    // The resources listener heard nothing of it, and hears its own change.
    s.changes.resources_list_changed().await.unwrap();
    let note = resources.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(
        method(&note),
        "notifications/resources/list_changed",
        "{note}"
    );
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        7
    );

    s.shutdown.trigger();
    tools.closing_result(Duration::from_secs(5)).await;
    resources.closing_result(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn resource_subscriptions_are_owner_bound_and_dropped_without_an_oracle() {
    let s = setup(&[("MCP_LISTEN_POLL_MS", "100")]).await;
    let ttl = Duration::from_secs(60);
    let mine = s
        .handles
        .create("anonymous", "doc", json!({"n": 1}), ttl)
        .await
        .unwrap();
    let theirs = s
        .handles
        .create("someone-else", "doc", json!({"n": 1}), ttl)
        .await
        .unwrap();
    let missing = HandleId::random().unwrap();
    let id = json!(1);
    let filter = json!({"resourceSubscriptions": [
        format!("handle://{}", mine.id),
        format!("handle://{}", theirs.id),
        format!("handle://{missing}"),
        "file:///public/readme.txt",
        "file:///private/secrets.txt",
        "not a uri at all",
        format!("file:///public/{}", "x".repeat(2000)),
    ]});
    let mut stream = listen(&s.service, id.clone(), filter).await;
    let accepted = stream.acknowledged().await;
    // Another owner's handle, a missing one, an unreadable URI, a malformed one and an
    // overlong one are all simply absent.
    assert_eq!(
        accepted,
        json!({"resourceSubscriptions": [format!("handle://{}", mine.id), "file:///public/readme.txt"]})
    );

    // A write to someone else's handle says nothing to this listener.
    s.handles
        .update(
            "someone-else",
            theirs.id,
            theirs.version,
            json!({"n": 2}),
            ttl,
        )
        .await
        .unwrap();
    s.changes.handle_updated(theirs.id).await.unwrap();
    // Its own handle's write does.
    s.handles
        .update("anonymous", mine.id, mine.version, json!({"n": 2}), ttl)
        .await
        .unwrap();
    s.changes.handle_updated(mine.id).await.unwrap();
    let note = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(method(&note), "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], format!("handle://{}", mine.id));

    s.changes
        .resource_updated("file:///private/secrets.txt")
        .await
        .unwrap();
    s.changes
        .resource_updated("file:///public/readme.txt")
        .await
        .unwrap();
    let note = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(note["params"]["uri"], "file:///public/readme.txt", "{note}");
    s.shutdown.trigger();
    stream.closing_result(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_stream_ends_with_its_result_at_the_configured_maximum() {
    let s = setup(&[
        ("MCP_LISTEN_MAX_SECS", "1"),
        ("MCP_SSE_KEEP_ALIVE_SECS", "1"),
    ])
    .await;
    let id = json!("max");
    let opened = Instant::now();
    let mut stream = listen(&s.service, id.clone(), json!({"toolsListChanged": true})).await;
    stream.acknowledged().await;
    stream.closing_result(Duration::from_secs(5)).await;
    let lasted = opened.elapsed();
    assert!(lasted >= Duration::from_millis(900), "{lasted:?}");
    assert!(lasted < Duration::from_secs(4), "{lasted:?}");
}

#[tokio::test]
async fn a_stream_ends_before_the_invocation_deadline() {
    let s = setup(&[]).await;
    let id = json!("deadline");
    // The invocation ends in 4.5 s: the stream must end (with its result) by 1.5 s.
    let deadline = SystemTime::now() + Duration::from_millis(4500);
    let opened = Instant::now();
    let mut stream = listen_with(
        &s.service,
        id.clone(),
        json!({"toolsListChanged": true}),
        Some(StreamLimits::new(Some(deadline), false)),
    )
    .await;
    stream.acknowledged().await;
    stream.closing_result(Duration::from_secs(5)).await;
    assert!(
        opened.elapsed() < Duration::from_millis(2500),
        "{:?}",
        opened.elapsed()
    );
}

#[tokio::test]
async fn a_buffered_answer_long_polls_until_its_first_delivery() {
    let s = setup(&[]).await;
    let id = json!("long-poll");
    let mut stream = listen_with(
        &s.service,
        id.clone(),
        json!({"toolsListChanged": true}),
        Some(StreamLimits::new(None, true)),
    )
    .await;
    stream.acknowledged().await;
    s.changes.tools_list_changed().await.unwrap();
    let note = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(method(&note), "notifications/tools/list_changed");
    stream.closing_result(Duration::from_secs(2)).await;
}

#[tokio::test]
async fn bad_filters_get_the_spec_answer() {
    let s = setup(&[]).await;
    // Nothing asked for: -32602, 400.
    for filter in [
        json!({}),
        json!({"toolsListChanged": false}),
        json!({"unknownThing": true}),
    ] {
        let answer = fixture::post(
            &s.service,
            fixture::modern(
                json!(1),
                "subscriptions/listen",
                json!({ "notifications": filter }),
            ),
        )
        .await;
        assert_eq!(answer.status, 400, "{filter}: {}", answer.text);
        assert_eq!(answer.code(), -32602, "{filter}");
    }
    // More URIs than one listen may watch: -32602 naming the limit.
    let uris: Vec<String> = (0..=mcp_lambda::listen::MAX_RESOURCE_SUBSCRIPTIONS)
        .map(|i| format!("file:///public/{i}"))
        .collect();
    let answer = fixture::post(
        &s.service,
        fixture::modern(
            json!(2),
            "subscriptions/listen",
            json!({ "notifications": {"resourceSubscriptions": uris} }),
        ),
    )
    .await;
    assert_eq!(answer.status, 400, "{}", answer.text);
    assert_eq!(answer.code(), -32602);
    assert!(answer.text.contains("at most 64"), "{}", answer.text);
    // A filter that is not an object: rmcp's -32602.
    let answer = fixture::post(
        &s.service,
        fixture::modern(
            json!(3),
            "subscriptions/listen",
            json!({ "notifications": "all" }),
        ),
    )
    .await;
    assert_eq!(answer.code(), -32602, "{}", answer.text);
}

#[tokio::test]
async fn listen_without_a_feed_is_left_to_the_handler() {
    // No `changes`: the library does not serve listen; this handler does not either.
    let service = App::new(Config::local_default())
        .server_per_request(|| Changing)
        .service();
    let answer = fixture::post(
        &service,
        fixture::modern(
            json!(1),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
    )
    .await;
    assert_eq!(answer.code(), -32601, "{}", answer.text);
}

#[tokio::test]
async fn a_filter_with_nothing_left_to_watch_is_refused_alike_for_every_reason() {
    let s = setup(&[]).await;
    let theirs = s
        .handles
        .create("someone-else", "doc", json!({}), Duration::from_secs(60))
        .await
        .unwrap();
    for uris in [
        json!([format!("handle://{}", theirs.id)]),
        json!([format!("handle://{}", HandleId::random().unwrap())]),
        json!(["file:///private/secrets.txt"]),
    ] {
        let answer = fixture::post(
            &s.service,
            fixture::modern(
                json!(1),
                "subscriptions/listen",
                json!({"notifications": {"resourceSubscriptions": uris}}),
            ),
        )
        .await;
        assert_eq!(
            (answer.status.as_u16(), answer.code()),
            (400, -32602),
            "{uris}: {}",
            answer.text
        );
        assert!(
            answer.text.contains("nothing in the filter can be watched"),
            "{}",
            answer.text
        );
    }
}

#[tokio::test]
async fn open_streams_are_bounded_per_process() {
    let s = setup(&[("MCP_LISTEN_MAX_STREAMS", "1")]).await;
    let mut first = listen(&s.service, json!(1), json!({"toolsListChanged": true})).await;
    first.acknowledged().await;
    let second = fixture::post(
        &s.service,
        fixture::modern(
            json!(2),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
    )
    .await;
    assert_eq!(second.status, 503, "{}", second.text);
    assert_eq!(second.code(), -32603);
    assert_eq!(second.header("retry-after"), Some("1"));
    // The place is given back when the stream ends.
    s.shutdown.trigger();
    first.closing_result(Duration::from_secs(5)).await;
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let third = fixture::post(
        &s.service,
        fixture::modern(
            json!(3),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ),
    )
    .await;
    assert_ne!(third.status, 503, "{}", third.text);
}

/// One caller's streams are capped below the process total (`MCP_LISTEN_MAX_STREAMS_PER_CALLER`):
/// the greedy caller is told 429 with its limit and `Retry-After`, another caller is still
/// served, and a place is given back when one of the greedy caller's streams ends.
#[tokio::test]
async fn one_caller_cannot_take_every_stream() {
    use mcp_lambda::testing::TestClient;
    use support::jwt::{Issuer, TestKey};
    const AUDIENCE: &str = "http://127.0.0.1:3000/mcp";
    let key = TestKey::rsa("rsa-1");
    let issuer = Issuer::start(&[&key]).await;
    let config = fixture::config(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_LISTEN_MAX_STREAMS", "3"),
        ("MCP_LISTEN_MAX_STREAMS_PER_CALLER", "2"),
    ]);
    let handles = config.handles().open().await.unwrap();
    let changes = config
        .listen()
        .open(config.handles(), handles)
        .await
        .unwrap();
    let server = App::new(config)
        .changes(&changes)
        .server_per_request(|| Changing);
    let as_user = |sub: &str| {
        TestClient::new(&server).with_token(key.sign(&issuer.claims(AUDIENCE, sub, "")))
    };
    let (greedy, other) = (as_user("greedy"), as_user("other"));
    let filter = || json!({"toolsListChanged": true});

    let mut held = Vec::new();
    for _ in 0..2 {
        let mut stream = greedy.listen(filter()).await;
        assert_eq!(stream.status, 200);
        let ack = stream.next().await.unwrap();
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        held.push(stream);
    }
    let refused = greedy.listen(filter()).await.read_all().await;
    assert_eq!(refused.status, 429, "{:?}", refused.messages);
    assert_eq!(refused.error()["code"], -32600, "{:?}", refused.messages);
    assert_eq!(refused.error()["data"]["limit"], 2);
    assert!(
        refused.error()["message"]
            .as_str()
            .unwrap()
            .contains("2 open listen streams")
    );
    assert_eq!(refused.header("retry-after"), Some("10"));

    // The process still has room, for someone else.
    let mut served = other.listen(filter()).await;
    assert_eq!(served.status, 200);
    let ack = served.next().await.unwrap();
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );

    // One of the greedy caller's streams goes away: it may open another.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = greedy.listen(filter()).await;
    assert_eq!(again.status, 200);
    assert_eq!(
        again.next().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
}
