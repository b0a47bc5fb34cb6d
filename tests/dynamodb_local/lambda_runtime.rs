//! The built binaries under a loopback Lambda Runtime API: the same `/next` → `/response` loop
//! Lambda runs, with events from `events/`, buffered and with response streaming.
//!
//! The emulator (`mcp_lambda_test_support::lambda_runtime`) speaks the Runtime API (2018-06-01)
//! on 127.0.0.1: it hands out one event per `GET /runtime/invocation/next` and records each
//! `/response` frame by frame with its arrival time, so a test can tell a streamed answer from a
//! buffered one. Each function process is killed when its test ends; its log lines (JSON on
//! Lambda) are checked for ERROR.

use std::{
    convert::Infallible,
    net::SocketAddr,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use mcp_lambda_test_support as support;
use serde_json::{Value, json};
use support::lambda_runtime::{Function, Invocation, RuntimeApi};
use tokio::{net::TcpListener, sync::oneshot};

fn event(name: &str) -> String {
    let path = support::package_dir()
        .join("events")
        .join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn basket() -> PathBuf {
    support::basket::binary().to_path_buf()
}

/// `examples/progress.rs`, built here from this tree. `--workspace` resolves features as the
/// test command's `cargo test --workspace --all-targets` does, so there it is a no-op instead of
/// a second build of the library competing with the running tests for the CPU.
fn progress_example() -> PathBuf {
    let dir = support::basket::binary().parent().unwrap().join("examples");
    let mut build = support::cargo();
    build.args(["build", "--workspace", "--example", "progress"]);
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build
        .status()
        .expect("running cargo build --example progress");
    assert!(status.success(), "cargo build --example progress failed");
    dir.join("progress")
}

fn mcp_event(source_event: &str, id: u64, method: &str, params: Value) -> String {
    let mut event: Value = serde_json::from_str(&self::event(source_event)).unwrap();
    let mut params = params;
    let meta = params["_meta"].as_object().cloned().unwrap_or_default();
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    for (k, v) in meta {
        params["_meta"][k] = v;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
    event["body"] = body.clone().into();
    event["isBase64Encoded"] = false.into();
    let headers = event["headers"].as_object_mut().unwrap();
    let keys: Vec<String> = headers.keys().cloned().collect();
    for key in keys {
        let lower = key.to_ascii_lowercase();
        if lower == "mcp-method" {
            headers.insert(key.clone(), method.into());
        } else if lower == "mcp-name" || lower == "content-length" {
            headers.remove(&key);
        }
    }
    if let Some(name) = params["name"].as_str() {
        headers.insert("mcp-name".into(), name.into());
    }
    if let Some(multi) = event
        .get_mut("multiValueHeaders")
        .and_then(Value::as_object_mut)
    {
        multi.clear();
    }
    event.to_string()
}

#[tokio::test]
async fn buffered_answers_come_back_in_each_sources_response_format() {
    let api = RuntimeApi::start().await;
    let function = Function::start(&basket(), &api, &[]);

    for (name, status, id) in [
        ("function_url_discover", 200, Some(1)),
        ("rest_v1_tools_call", 200, Some(3)),
        ("http_v2_tools_list", 200, Some(2)),
        ("alb_parse_error", 400, None),
        ("rest_v1_unsupported_version", 400, Some(7)),
    ] {
        let invocation = api.invoke(&event(name)).await;
        let (got, headers, body) = invocation.buffered();
        assert_eq!(got, status, "{name}: {body}");
        let json: Value =
            serde_json::from_str(&body).unwrap_or_else(|e| panic!("{name}: {e}: {body}"));
        assert_eq!(json["id"].as_u64(), id, "{name}: {json}");
        assert!(
            headers["content-type"]
                .as_str()
                .unwrap()
                .starts_with("application/json"),
            "{name}: {headers}"
        );
    }
    let (status, headers, body) = api.invoke(&event("alb_get_mcp")).await.buffered();
    assert_eq!(
        (status, headers["allow"].as_str()),
        (405, Some("POST")),
        "{body}"
    );

    function.assert_no_errors();
}

#[tokio::test]
async fn streaming_sends_json_whole_and_never_an_empty_body() {
    let api = RuntimeApi::start().await;
    let function = Function::start(&basket(), &api, &[("MCP_LAMBDA_STREAMING", "true")]);

    let invocation = api.invoke(&event("rest_v1_discover")).await;
    let (status, headers, body) = invocation.streaming();
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json", "{headers}");
    let json: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(json["id"], 1);
    assert!(json["result"].is_object(), "{json}");

    // A 202 for a notification: one byte, never an empty stream (that would hang until timeout).
    for name in [
        "rest_v1_legacy_notification",
        "function_url_legacy_notification",
    ] {
        let (status, _, body) = api.invoke(&event(name)).await.streaming();
        assert_eq!((status, body.as_slice()), (202, &b"\n"[..]), "{name}");
    }
    let (status, _, body) = api.invoke(&event("function_url_healthz")).await.streaming();
    assert_eq!((status, body.as_slice()), (200, &b"ok\n"[..]));

    function.assert_no_errors();
}

#[tokio::test]
async fn a_tool_with_progress_streams_events_as_they_happen_with_keep_alives() {
    let api = RuntimeApi::start().await;
    let function = Function::start(
        &progress_example(),
        &api,
        &[
            ("MCP_LAMBDA_STREAMING", "true"),
            ("MCP_SSE_KEEP_ALIVE_SECS", "1"),
        ],
    );

    // Through API Gateway REST (streaming integration) and a Function URL (RESPONSE_STREAM).
    for source in ["rest_v1_tools_call", "function_url_tools_call"] {
        let started = Instant::now();
        let event = mcp_event(
            source,
            42,
            "tools/call",
            json!({"name": "count", "arguments": {"to": 3, "delay_ms": 1300}, "_meta": {"progressToken": "p-1"}}),
        );
        let invocation = api.invoke(&event).await;
        let (status, headers, body) = invocation.streaming();
        let text = String::from_utf8_lossy(&body).to_string();
        assert_eq!(status, 200, "{source}: {text}");
        assert_eq!(
            headers["content-type"], "text/event-stream",
            "{source}: {headers}"
        );
        assert_eq!(headers["x-accel-buffering"], "no", "{source}: {headers}");
        assert_eq!(headers["cache-control"], "no-store", "{source}: {headers}");

        let data: Vec<Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert_eq!(
            data.len(),
            4,
            "{source}: three progress events and the result: {text}"
        );
        for (n, event) in data[..3].iter().enumerate() {
            assert_eq!(event["method"], "notifications/progress", "{event}");
            assert_eq!(event["params"]["progress"], (n + 1) as f64, "{event}");
            assert_eq!(event["params"]["progressToken"], "p-1", "{event}");
        }
        assert_eq!(data[3]["id"], 42);
        assert_eq!(data[3]["result"]["content"][0]["text"], "counted to 3");
        // Idle for 1.3 s between events with a 1 s keep-alive: `:` comments in between.
        assert!(
            text.lines().filter(|l| *l == ":").count() >= 2,
            "{source}: no keep-alive comments: {text}"
        );

        // Streamed, not buffered: the first progress event arrived long before the result.
        let arrival = |needle: &str| {
            let mut seen = Vec::new();
            for (at, frame) in &invocation.frames {
                seen.extend_from_slice(frame);
                if String::from_utf8_lossy(&seen).contains(needle) {
                    return *at;
                }
            }
            panic!("{needle} never arrived")
        };
        let first = arrival("counted 1 of 3");
        let last = arrival("counted to 3");
        assert!(
            last.duration_since(first) >= Duration::from_millis(2000),
            "{source}: events arrived together ({:?} apart): buffered, not streamed",
            last.duration_since(first)
        );
        assert!(started.elapsed() < Duration::from_secs(30));
    }

    function.assert_no_errors();
}

/// The `data:` messages of an SSE body.
fn sse_messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

#[tokio::test]
async fn a_listen_stream_ends_with_its_result_before_the_invocation_deadline() {
    let api = RuntimeApi::start().await;
    let streaming = Function::start(&basket(), &api, &[("MCP_LAMBDA_STREAMING", "true")]);
    // An invocation with 6 s left: the stream must close itself, with its result, 3 s before.
    let listen = |source: &str| {
        mcp_event(
            source,
            11,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
    };
    for source in ["function_url_tools_call", "rest_v1_tools_call"] {
        let started = Instant::now();
        let invocation = api
            .invoke_within(&listen(source), Duration::from_secs(6))
            .await;
        let took = started.elapsed();
        let (status, headers, body) = invocation.streaming();
        assert_eq!(status, 200, "{source}");
        assert_eq!(
            headers["content-type"], "text/event-stream",
            "{source}: {headers}"
        );
        let messages = sse_messages(&body);
        assert_eq!(
            messages[0]["method"], "notifications/subscriptions/acknowledged",
            "{source}: {messages:?}"
        );
        let last = messages.last().unwrap();
        assert_eq!(last["id"], 11, "{source}: {last}");
        assert_eq!(last["result"]["resultType"], "complete", "{source}: {last}");
        assert!(
            (Duration::from_millis(2500)..Duration::from_millis(5000)).contains(&took),
            "{source}: the stream lasted {took:?}; it should end about 3 s before a 6 s deadline"
        );
    }
    drop(streaming);

    // Buffered (no response streaming): the same bound, and the whole exchange in one body.
    let buffered = Function::start(&basket(), &api, &[]);
    let started = Instant::now();
    let invocation = api
        .invoke_within(&listen("function_url_tools_call"), Duration::from_secs(5))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let (status, _, body) = invocation.buffered();
    assert_eq!(status, 200, "{body}");
    let messages = sse_messages(body.as_bytes());
    assert_eq!(
        messages[0]["method"], "notifications/subscriptions/acknowledged",
        "{body}"
    );
    assert_eq!(
        messages.last().unwrap()["result"]["resultType"],
        "complete",
        "{body}"
    );
    buffered.assert_no_errors();
}

/// Accepted Invokes: each payload, with the worker invocation's answer to come.
type Accepted = Vec<(Value, Option<oneshot::Receiver<Invocation>>)>;

/// What the Invoke stand-in saw: properly signed Event invocations, by payload.
#[derive(Default)]
struct InvokeLog {
    /// Each accepted Invoke's payload, with the worker invocation's answer to come.
    accepted: Mutex<Accepted>,
    /// Requests refused (bad signature, not an Event, another function).
    refused: Mutex<Vec<String>>,
}

/// `20261201T065900Z` as a time.
fn amz_date(text: &str) -> Option<std::time::SystemTime> {
    let n = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(4..6)?, n(6..8)?);
    let (hh, mm, ss) = (n(9..11)?, n(11..13)?, n(13..15)?);
    // Civil date to days (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(std::time::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// Whether `request` carries a SigV4 signature (service `lambda`, `us-east-1`) made with the test
/// credentials over its method, URI, signed headers and body: the signature is recomputed with
/// the SDK's signer from the request's own `x-amz-date` and `SignedHeaders`.
fn signed_by_test_credentials(head: &http::request::Parts, body: &[u8]) -> Result<(), String> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    use aws_sigv4::sign::v4;
    let header = |name: &str| head.headers.get(name).and_then(|v| v.to_str().ok());
    let authorization = header("authorization").ok_or("no Authorization")?;
    let field = |key: &str| {
        authorization
            .split([' ', ','])
            .find_map(|part| part.strip_prefix(key))
            .map(str::to_owned)
    };
    let signed_headers = field("SignedHeaders=").ok_or("no SignedHeaders")?;
    let signature = field("Signature=").ok_or("no Signature")?;
    let credential = field("Credential=").ok_or("no Credential")?;
    if !credential.starts_with("local/") || !credential.ends_with("/us-east-1/lambda/aws4_request")
    {
        return Err(format!("credential scope {credential}"));
    }
    let time = amz_date(header("x-amz-date").ok_or("no x-amz-date")?).ok_or("bad x-amz-date")?;
    let host = header("host").ok_or("no Host")?;
    let path = head.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = format!("http://{host}{path}");
    let headers: Vec<(&str, &str)> = signed_headers
        .split(';')
        .filter(|name| !["host", "x-amz-date"].contains(name))
        .map(|name| Ok((name, header(name).ok_or(format!("no {name}"))?)))
        .collect::<Result<_, String>>()?;
    let identity =
        aws_credential_types::Credentials::new("local", "local", None, None, "test").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name("lambda")
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| e.to_string())?
        .into();
    let signable = SignableRequest::new(
        head.method.as_str(),
        uri.clone(),
        headers.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| e.to_string())?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    let mut expected = http::Request::builder().uri(&uri).body(()).unwrap();
    instructions.apply_to_request_http1x(&mut expected);
    let expected = expected.headers()["authorization"]
        .to_str()
        .unwrap()
        .to_owned();
    let expected_signature = expected
        .rsplit("Signature=")
        .next()
        .unwrap_or_default()
        .to_owned();
    if expected_signature == signature
        && expected.contains(&format!("SignedHeaders={signed_headers}"))
    {
        Ok(())
    } else {
        Err(format!(
            "signature mismatch: got {authorization}, expected {expected}"
        ))
    }
}

/// A loopback stand-in for Lambda's Invoke API (the `Event` type only): checks the signature,
/// the invocation type and the function, answers 202, then queues the payload into the Runtime
/// API as a new invocation, as the Lambda service does, which must end within `timeout` (the
/// function's timeout on Lambda).
async fn start_invoke_stand_in(
    api: Arc<RuntimeApi>,
    log: Arc<InvokeLog>,
    timeout: Duration,
) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (api, log) = (api.clone(), log.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (api, log) = (api.clone(), log.clone());
                    async move {
                        let (head, body) = request.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|c| c.to_bytes())
                            .unwrap_or_default();
                        let refuse = |why: String| {
                            log.refused.lock().unwrap().push(why);
                            Response::builder()
                                .status(StatusCode::FORBIDDEN)
                                .body(Full::new(Bytes::from_static(
                                    b"{\"Type\":\"User\",\"message\":\"The request signature we calculated does not match\"}",
                                )))
                                .unwrap()
                        };
                        if let Err(why) = signed_by_test_credentials(&head, &body) {
                            return Ok::<_, Infallible>(refuse(why));
                        }
                        if head.method != Method::POST
                            || head.uri.path() != "/2015-03-31/functions/mcp/invocations"
                            || head
                                .headers
                                .get("x-amz-invocation-type")
                                .map(|v| v.as_bytes())
                                != Some(b"Event")
                        {
                            return Ok(refuse(format!("not an Event Invoke of mcp: {head:?}")));
                        }
                        let payload: Value = serde_json::from_slice(&body).unwrap();
                        let answer = api.enqueue(&payload.to_string(), timeout);
                        log.accepted.lock().unwrap().push((payload, Some(answer)));
                        Ok(Response::builder()
                            .status(StatusCode::ACCEPTED)
                            .body(Full::new(Bytes::new()))
                            .unwrap())
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// An MCP event from a client that declared the tasks extension.
fn task_client_event(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({"io.modelcontextprotocol/clientCapabilities":
        {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let mut event: Value = serde_json::from_str(&mcp_event(
        "function_url_tools_call",
        id,
        method,
        params.clone(),
    ))
    .unwrap();
    if let Some(task_id) = params["taskId"].as_str() {
        event["headers"]["mcp-name"] = task_id.into();
    }
    event.to_string()
}

/// Issue 12's "done when": under the Lambda runtime, a task's round is handed to the Lambda
/// service (a signed asynchronous Invoke of the same function) and runs in another invocation;
/// the accepting invocation answers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_round_runs_in_an_asynchronous_invocation_of_the_same_function() {
    task_round_hand_off(false).await;
}

/// The same with Lambda response streaming (the worker's event decodes like any request) and a
/// CDN origin secret: callers' events carry it, the self-invocation does not need it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_round_runs_in_an_asynchronous_invocation_when_streaming() {
    task_round_hand_off(true).await;
}

/// An answer's status and body, buffered or streamed.
fn answer_of(invocation: &Invocation) -> (u16, String) {
    if invocation.streamed() {
        let (status, _, body) = invocation.streaming();
        (status, String::from_utf8(body).unwrap())
    } else {
        let (status, _, body) = invocation.buffered();
        (status, body)
    }
}

/// An answer's JSON, which must have come with status 200 (`case` names it in the failure).
fn ok_json(invocation: &Invocation, case: &str) -> Value {
    let (status, body) = answer_of(invocation);
    assert_eq!(status, 200, "{case}: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A `tools/call` of `name` through a Function URL.
fn tool_call(id: u64, name: &str, arguments: Value) -> String {
    mcp_event(
        "function_url_tools_call",
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// What the task tests on Lambda run against: a Runtime API, the Invoke stand-in (worker
/// invocations must end within `timeout`) and two basket processes with their handles in
/// DynamoDB at `endpoint` and `env` besides: two execution environments, as Lambda scales out,
/// so polls are answered while a round runs.
struct TaskLambda {
    api: Arc<RuntimeApi>,
    log: Arc<InvokeLog>,
    functions: [Function; 2],
}

impl TaskLambda {
    async fn start(endpoint: &str, timeout: Duration, env: &[(&str, &str)]) -> TaskLambda {
        support::dynamodb::store(endpoint).await; // the table exists
        let api = Arc::new(RuntimeApi::start().await);
        let log = Arc::new(InvokeLog::default());
        let stand_in = start_invoke_stand_in(api.clone(), log.clone(), timeout).await;
        let mut vars = support::dynamodb::basket_env(endpoint, support::dynamodb::TABLE);
        vars.push((
            "AWS_ENDPOINT_URL_LAMBDA".into(),
            format!("http://{stand_in}"),
        ));
        vars.push(("MCP_TASK_POLL_MS".into(), "200".into()));
        vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let functions = [(); 2].map(|()| Function::start(&basket(), &api, &vars));
        TaskLambda {
            api,
            log,
            functions,
        }
    }

    /// The bad-day tests' Lambda: its DynamoDB requests pass through a fault proxy (no rules
    /// yet) in front of `endpoint`, worker invocations end within 60 s.
    async fn start_behind_a_fault_proxy(
        endpoint: &str,
    ) -> (support::fault_proxy::FaultProxy, TaskLambda) {
        support::dynamodb::store(endpoint).await;
        let proxy = support::fault_proxy::FaultProxy::start(endpoint).await;
        let lambda = TaskLambda::start(&proxy.url, Duration::from_secs(60), &[]).await;
        (proxy, lambda)
    }

    /// [`Self::finished`] for the tests whose events go to the function as they are (no CDN).
    async fn finished_as_sent(
        &self,
        task_id: &str,
        id: u64,
        started: Instant,
        every: Duration,
        case: &str,
    ) -> Value {
        self.finished(task_id, id, |event| event, started, every, case)
            .await
    }

    /// Polls `tasks/get` (each event passed through `wrap`) every `every` until the task is no
    /// longer working, for at most 30 s from `started`: the task's result.
    async fn finished(
        &self,
        task_id: &str,
        id: u64,
        wrap: impl Fn(String) -> String,
        started: Instant,
        every: Duration,
        case: &str,
    ) -> Value {
        loop {
            let get = task_client_event(id, "tasks/get", json!({"taskId": task_id}));
            let task = ok_json(&self.api.invoke(&wrap(get)).await, case);
            if task["result"]["status"] != "working" {
                return task["result"].clone();
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{case}: {task}"
            );
            tokio::time::sleep(every).await;
        }
    }

    /// The Invokes the stand-in accepted so far (taken) and those it refused.
    fn invoked(&self) -> (Accepted, Vec<String>) {
        let accepted = std::mem::take(&mut *self.log.accepted.lock().unwrap());
        (accepted, self.log.refused.lock().unwrap().clone())
    }

    fn assert_no_errors(&self) {
        for function in &self.functions {
            function.assert_no_errors();
        }
    }

    /// The basket the task tests order: a new one (call 1) holding three TEA (call 2); its id.
    async fn basket_of_three_teas(&self, case: &str) -> Value {
        let create = tool_call(1, "create_basket", json!({}));
        let created = ok_json(&self.api.invoke(&create).await, case);
        let basket_id = created["result"]["structuredContent"]["basket_id"].clone();
        let added = json!({"basket_id": basket_id, "sku": "TEA", "quantity": 3});
        ok_json(
            &self.api.invoke(&tool_call(2, "add_item", added)).await,
            case,
        );
        basket_id
    }

    /// The task every test here runs: `place_order` on `basket_id` as a task (call 3, its event
    /// passed through `wrap`); the accepting answer.
    async fn place_order_as_task(
        &self,
        basket_id: &Value,
        wrap: impl Fn(String) -> String,
        case: &str,
    ) -> Value {
        let call = task_client_event(
            3,
            "tools/call",
            json!({"name": "place_order", "arguments": {"basket_id": basket_id}}),
        );
        ok_json(&self.api.invoke(&wrap(call)).await, case)
    }

    /// A client's `tasks/cancel` of `task_id` (call 4), which must be answered 200.
    async fn cancel(&self, task_id: &str, case: &str) {
        let cancel = task_client_event(4, "tasks/cancel", json!({"taskId": task_id}));
        ok_json(&self.api.invoke(&cancel).await, case);
    }

    /// How the stopped-task tests prove the order never ran to its end: past the ~3 s it takes
    /// (from `started`), the basket (viewed with call `id`) still holds its three TEA.
    async fn assert_basket_untouched(
        &self,
        id: u64,
        basket_id: &Value,
        started: Instant,
        case: &str,
    ) {
        tokio::time::sleep(Duration::from_millis(4500).saturating_sub(started.elapsed())).await;
        let view = tool_call(id, "view_basket", json!({"basket_id": basket_id}));
        let view = ok_json(&self.api.invoke(&view).await, case);
        assert_eq!(
            view["result"]["structuredContent"]["items"][0]["quantity"], 3,
            "{case}: the basket is untouched: {view}"
        );
    }
}

/// The end of an order that went through, shared by the tests whose order must complete: the
/// task `completed` with the basket checked out.
fn assert_order_completed(done: &Value) {
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["status"], "checked_out",
        "{done}"
    );
}

async fn task_round_hand_off(streaming: bool) {
    let Some(endpoint) = support::dynamodb::endpoint("the Lambda task hand-off test") else {
        return;
    };
    let case = if streaming { "streaming" } else { "buffered" };
    const ORIGIN_SECRET: &str = "a-cdn-secret-0123456789";
    let mut env = vec![(
        "MCP_LAMBDA_STREAMING",
        if streaming { "true" } else { "false" },
    )];
    if streaming {
        env.push(("MCP_ORIGIN_SECRET", ORIGIN_SECRET));
    }
    let lambda = TaskLambda::start(&endpoint, Duration::from_secs(60), &env).await;
    let api = &lambda.api;
    // What CloudFront adds to every caller's request when the secret is on.
    let via_cdn = |event: String| {
        let mut event: Value = serde_json::from_str(&event).unwrap();
        if streaming {
            event["headers"]["x-origin-secret"] = ORIGIN_SECRET.into();
        }
        event.to_string()
    };
    let json_of = |invocation: Invocation| ok_json(&invocation, case);
    let created = json_of(
        api.invoke(&via_cdn(tool_call(1, "create_basket", json!({}))))
            .await,
    );
    let basket_id = created["result"]["structuredContent"]["basket_id"].clone();
    if streaming {
        // Around the CDN, a caller is refused: the secret is on.
        let around = api.invoke(&tool_call(9, "create_basket", json!({}))).await;
        assert_eq!(answer_of(&around).0, 403);
    }
    assert!(basket_id.is_string(), "{created}");
    let added = json!({"basket_id": basket_id, "sku": "TEA", "quantity": 3});
    json_of(api.invoke(&via_cdn(tool_call(2, "add_item", added))).await);

    let started = Instant::now();
    let accepted = lambda.place_order_as_task(&basket_id, via_cdn, case).await;
    let answered_in = started.elapsed();
    assert_eq!(accepted["result"]["resultType"], "task", "{accepted}");
    assert!(
        answered_in < Duration::from_millis(2000),
        "the CreateTaskResult came back in {answered_in:?}, before the ~3 s of work"
    );
    let task_id = accepted["result"]["taskId"].as_str().unwrap().to_owned();

    let done = lambda
        .finished(
            &task_id,
            4,
            via_cdn,
            started,
            Duration::from_millis(200),
            case,
        )
        .await;
    assert_order_completed(&done);

    // Exactly one signed Invoke, for round 0 of this task, whose invocation ran it.
    let (accepted, refused) = lambda.invoked();
    assert_eq!(accepted.len(), 1, "{refused:?}");
    assert!(refused.is_empty());
    let (payload, answer) = accepted.into_iter().next().unwrap();
    let round: Value = serde_json::from_str(payload["body"].as_str().unwrap()).unwrap();
    assert_eq!(round, json!({"taskId": task_id, "round": 0}));
    let worker = answer.unwrap().await.unwrap();
    assert_eq!(worker.streamed(), streaming);
    let (status, body) = answer_of(&worker);
    assert_eq!((status, body.as_str()), (200, "{\"ran\":true}"));

    lambda.assert_no_errors();
    // The metrics count DynamoDB: `add_item` reads the basket handle and writes it back on
    // its version (one `GetItem`, one conditional `UpdateItem`, no conflict here).
    let [first, second] = &lambda.functions;
    let logs = format!("{}{}", first.logs(), second.logs());
    let add_item: Vec<Value> = logs
        .lines()
        .filter(|l| l.contains("\"_aws\"") && l.contains("\"Name\":\"add_item\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(add_item.len(), 1, "{logs}");
    assert_eq!(add_item[0]["DynamoDbRequests"], 2, "{}", add_item[0]);
    assert!(add_item[0]["DynamoDbLatency"].as_f64().unwrap() > 0.0);
    assert_eq!(add_item[0]["DynamoDbThrottles"], 0);
}

/// Issue 19 on the Lambda runtime path: `place_order` as a task (three 1 s steps, then one
/// conditional delete of the basket) is cancelled at +0.8 s, or runs in a worker invocation with
/// a 2 s deadline. Either way the worker stops the tool before writing the end: `cancelled` or
/// `failed`, and the basket is still there well after the tool would have checked it out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cancelled_or_timed_out_task_on_lambda_stops_its_work() {
    let Some(endpoint) = support::dynamodb::endpoint("the Lambda task cancel test") else {
        return;
    };
    for (case, deadline) in [("cancelled", 60), ("failed", 2)] {
        let lambda = TaskLambda::start(&endpoint, Duration::from_secs(deadline), &[]).await;
        let basket_id = lambda.basket_of_three_teas(case).await;

        let started = Instant::now();
        let accepted = lambda.place_order_as_task(&basket_id, |e| e, case).await;
        let task_id = accepted["result"]["taskId"].as_str().unwrap().to_owned();
        if case == "cancelled" {
            tokio::time::sleep(Duration::from_millis(800)).await;
            lambda.cancel(&task_id, case).await;
        }
        let done = lambda
            .finished_as_sent(&task_id, 5, started, Duration::from_millis(100), case)
            .await;
        assert_eq!(done["status"], case, "{done}");
        if case == "failed" {
            let message = done["error"]["message"].as_str().unwrap();
            assert!(message.contains("ran out of time"), "{done}");
        }
        lambda
            .assert_basket_untouched(6, &basket_id, started, case)
            .await;
        // The worker invocation claimed the round, stopped it and answered in time.
        let (accepted, _) = lambda.invoked();
        assert_eq!(accepted.len(), 1, "{case}");
        let worker = accepted
            .into_iter()
            .next()
            .unwrap()
            .1
            .unwrap()
            .await
            .unwrap();
        assert_eq!(
            answer_of(&worker),
            (200, "{\"ran\":true}".to_owned()),
            "{case}"
        );
        lambda.assert_no_errors();
    }
}

/// The stand-in's verifier refuses a signature that does not match (a tampered body, another
/// secret), so the test above proves the Invoke was signed.
#[test]
fn the_invoke_stand_in_refuses_a_tampered_signature() {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    use aws_sigv4::sign::v4;
    let signed = |secret: &str, body: &[u8]| {
        let uri = "http://127.0.0.1:9/2015-03-31/functions/mcp/invocations";
        let identity =
            aws_credential_types::Credentials::new("local", secret, None, None, "test").into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region("us-east-1")
            .name("lambda")
            .time(amz_date("20261201T065900Z").unwrap())
            .settings(SigningSettings::default())
            .build()
            .unwrap()
            .into();
        let headers = [
            ("content-type", "application/json"),
            ("x-amz-invocation-type", "Event"),
        ];
        let signable =
            SignableRequest::new("POST", uri, headers.into_iter(), SignableBody::Bytes(body))
                .unwrap();
        let (instructions, _) = sign(signable, &params).unwrap().into_parts();
        let mut request = http::Request::post(uri)
            .header("host", "127.0.0.1:9")
            .header("content-type", "application/json")
            .header("x-amz-invocation-type", "Event")
            .body(())
            .unwrap();
        instructions.apply_to_request_http1x(&mut request);
        request.into_parts().0
    };
    let good = signed("local", b"{}");
    assert_eq!(signed_by_test_credentials(&good, b"{}"), Ok(()));
    assert!(
        signed_by_test_credentials(&good, b"{\"x\":1}").is_err(),
        "tampered body"
    );
    let other = signed("another secret", b"{}");
    assert!(
        signed_by_test_credentials(&other, b"{}").is_err(),
        "another secret"
    );
    let mut unsigned = good.clone();
    unsigned.headers.remove("authorization");
    assert!(
        signed_by_test_credentials(&unsigned, b"{}").is_err(),
        "unsigned"
    );
}

/// Issue 13: with `AWS_LAMBDA_MAX_CONCURRENCY` (Lambda Managed Instances), one execution
/// environment serves that many invocations at once, each answered with its own result.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_environment_serves_concurrent_invocations_when_managed_concurrency_is_set() {
    const N: u64 = 4;
    let api = Arc::new(RuntimeApi::start().await);
    let function = Function::start(&basket(), &api, &[("AWS_LAMBDA_MAX_CONCURRENCY", "4")]);
    let call = tool_call;
    let content = |invocation: Invocation| {
        ok_json(&invocation, "concurrent")["result"]["structuredContent"].clone()
    };
    let mut baskets = Vec::new();
    for n in 0..N {
        let created = content(api.invoke(&call(n, "create_basket", json!({}))).await);
        let basket_id = created["basket_id"].as_str().unwrap().to_owned();
        let sku = format!("SKU-{n}");
        content(
            api.invoke(&call(
                100 + n,
                "add_item",
                json!({"basket_id": basket_id, "sku": sku, "quantity": n + 1}),
            ))
            .await,
        );
        baskets.push(basket_id);
    }
    // `place_order` works about 3 s; four of them one at a time would take 12 s.
    let started = Instant::now();
    let orders: Vec<_> = baskets
        .iter()
        .enumerate()
        .map(|(n, basket_id)| {
            let api = api.clone();
            let event = call(
                200 + n as u64,
                "place_order",
                json!({"basket_id": basket_id}),
            );
            tokio::spawn(async move { api.invoke(&event).await })
        })
        .collect();
    for (n, order) in orders.into_iter().enumerate() {
        let summary = content(order.await.unwrap());
        assert_eq!(summary["basket_id"], baskets[n].as_str(), "{summary}");
        assert_eq!(summary["status"], "checked_out", "{summary}");
        assert_eq!(
            summary["items"],
            json!([{"sku": format!("SKU-{n}"), "quantity": n + 1}]),
            "its own basket: {summary}"
        );
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(8),
        "four 3-s invocations took {took:?}: not served concurrently"
    );
    function.assert_no_errors();
}

/// Issue 13: on Lambda every request writes one EMF record (valid against the format's
/// schema, with the function, method and a bounded name as dimensions), and every log line of
/// a request carries the invocation's request id and trace ids.
#[tokio::test]
async fn every_request_writes_one_emf_record_and_its_log_lines_carry_its_ids() {
    let api = RuntimeApi::start().await;
    let function = Function::start(
        &basket(),
        &api,
        &[
            ("MCP_LOG", "mcp_lambda=debug,info"),
            ("MCP_METRICS_NAMESPACE", "tests/mcp"),
        ],
    );
    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let traced = |event: String| {
        let mut event: Value = serde_json::from_str(&event).unwrap();
        event["headers"]["traceparent"] = TRACEPARENT.into();
        event.to_string()
    };
    let call = |id: u64, name: &str, arguments: Value| traced(tool_call(id, name, arguments));
    let created = api.invoke(&call(1, "create_basket", json!({}))).await;
    let (status, body) = answer_of(&created);
    assert_eq!(status, 200, "{body}");
    let basket_id =
        serde_json::from_str::<Value>(&body).unwrap()["result"]["structuredContent"]["basket_id"]
            .as_str()
            .unwrap()
            .to_owned();
    let uri = format!("basket://{basket_id}");
    let mut read = mcp_event(
        "function_url_tools_call",
        3,
        "resources/read",
        json!({"uri": uri}),
    );
    {
        let mut event: Value = serde_json::from_str(&read).unwrap();
        event["headers"]["mcp-name"] = uri.clone().into();
        read = traced(event.to_string());
    }
    // (event, the Method and Name dimensions, status, JSON-RPC code)
    let cases: Vec<(String, &str, &str, u16, Option<i64>)> = vec![
        (
            call(2, "no_such_tool", json!({})),
            "tools/call",
            "other",
            200,
            Some(-32602),
        ),
        (read, "resources/read", "basket://{basket_id}", 200, None),
        (
            traced(event("function_url_parse_error")),
            "-",
            "-",
            400,
            Some(-32700),
        ),
        (
            traced(mcp_event(
                "function_url_tools_call",
                4,
                "tools/list",
                json!({}),
            )),
            "tools/list",
            "-",
            200,
            None,
        ),
    ];
    for (event, ..) in &cases {
        api.invoke(event).await;
    }
    // The records are written when an answer is done; give the pipe a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logs = function.logs();
    let records: Vec<Value> = logs
        .lines()
        .filter(|l| l.contains("\"_aws\""))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(
        records.len(),
        1 + cases.len(),
        "one record per request:\n{logs}"
    );
    let schema: Value = serde_json::from_str(include_str!("schemas/emf.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    for record in &records {
        let errors: Vec<String> = validator
            .iter_errors(record)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{errors:?}: {record}");
        // Every member a directive names is at the root: dimensions as strings, metrics as numbers.
        for directive in record["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
            assert_eq!(directive["Namespace"], "tests/mcp");
            for set in directive["Dimensions"].as_array().unwrap() {
                for dimension in set.as_array().unwrap() {
                    assert!(record[dimension.as_str().unwrap()].is_string(), "{record}");
                }
            }
            for metric in directive["Metrics"].as_array().unwrap() {
                assert!(
                    record[metric["Name"].as_str().unwrap()].is_number(),
                    "{record}"
                );
            }
        }
        assert_eq!(record["Function"], "mcp");
        assert_eq!(record["Requests"], 1);
        assert_eq!(record["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(
            record["xrayTraceId"],
            "Root=1-674a1b2c-0123456789abcdef01234567;Sampled=0"
        );
        assert!(
            record["requestId"]
                .as_str()
                .unwrap()
                .starts_with("00000000-0000-4000-8000-")
        );
    }
    let request_ids: std::collections::HashSet<&str> = records
        .iter()
        .map(|r| r["requestId"].as_str().unwrap())
        .collect();
    assert_eq!(
        request_ids.len(),
        records.len(),
        "one record per invocation"
    );
    assert_eq!(records[0]["ColdStart"], 1, "{}", records[0]);
    assert_eq!(
        (records[0]["Method"].as_str(), records[0]["Name"].as_str()),
        (Some("tools/call"), Some("create_basket"))
    );
    for (record, (_, method, name, status, code)) in records[1..].iter().zip(&cases) {
        assert_eq!(record["ColdStart"], 0, "{record}");
        assert_eq!(
            (record["Method"].as_str(), record["Name"].as_str()),
            (Some(*method), Some(*name)),
            "{record}"
        );
        assert_eq!(record["httpStatus"], *status, "{record}");
        assert_eq!(record["jsonRpcCode"].as_i64(), *code, "{record}");
        assert_eq!(record["ClientErrors"], u8::from(code.is_some()), "{record}");
        assert_eq!(record["Errors"], 0, "{record}");
        assert!(record["Duration"].as_f64().unwrap() > 0.0, "{record}");
    }
    // No token, argument or handle content in a record: the basket id is only in the URI,
    // which counts as its template.
    assert!(records.iter().all(|r| !r.to_string().contains(&basket_id)));

    // Every log line written while a request ran names its invocation and its trace.
    let request_lines: Vec<Value> = logs
        .lines()
        .filter(|l| l.contains("mcp.request"))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(request_lines.len() >= records.len(), "{logs}");
    assert!(
        request_lines
            .iter()
            .any(|l| l.to_string().contains("\"mcp.name\":\"no_such_tool\"")),
        "the request span names the tool: {logs}"
    );
    for line in &request_lines {
        let text = line.to_string();
        assert!(
            text.contains("\"requestId\":\"00000000-0000-4000-8000-"),
            "{text}"
        );
        assert!(text.contains("\"xrayTraceId\":\"Root=1-674a1b2c"), "{text}");
        assert!(
            text.contains("\"trace_id\":\"4bf92f3577b34da6a3ce929d0e0e4736\""),
            "{text}"
        );
    }
    assert_eq!(function.errors(), Vec::<String>::new(), "{logs}");
}

/// Locally, metrics are off unless asked for: no EMF record on stdout (and one per request
/// with `MCP_METRICS=on`, so the check can fail).
#[tokio::test]
async fn the_local_server_writes_no_metrics_unless_asked() {
    for (env, records) in [(vec![], 0), (vec![("MCP_METRICS", "on")], 2)] {
        let mut server = support::basket::Server::start_with_output(
            &env,
            std::process::Stdio::piped(),
            std::process::Stdio::null(),
        )
        .await;
        server.rpc("tools/list", None, json!({})).await;
        server.rpc("server/discover", None, json!({})).await;
        server.sigterm();
        server.exit(Duration::from_secs(10)).await;
        let out = server.stdout();
        let written = out.lines().filter(|l| l.contains("\"_aws\"")).count();
        assert_eq!(written, records, "{env:?}: {out}");
    }
}

/// Issue 13: a streamed answer's prelude holds one string per header, as API Gateway's
/// documented format for streamed REST responses has it, even when the front sent a header
/// twice (`Vary` from CORS and from the cache hints).
#[tokio::test]
async fn a_streamed_prelude_holds_one_line_per_header() {
    let api = RuntimeApi::start().await;
    let function = Function::start(
        &basket(),
        &api,
        &[
            ("MCP_LAMBDA_STREAMING", "true"),
            ("MCP_ALLOWED_ORIGINS", "https://app.example.com"),
            ("MCP_CACHE_TOOLS_LIST", "60,private"),
        ],
    );
    let mut event: Value =
        serde_json::from_str(&mcp_event("rest_v1_tools_call", 1, "tools/list", json!({}))).unwrap();
    event["headers"]["Origin"] = "https://app.example.com".into();
    let (status, headers, body) = api.invoke(&event.to_string()).await.streaming();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    for (name, value) in headers.as_object().unwrap() {
        assert!(value.is_string(), "{name}: {value} in {headers}");
    }
    let vary = headers["vary"].as_str().unwrap();
    assert!(
        vary.contains("Authorization") && vary.contains("Origin"),
        "both Vary values, one line: {headers}"
    );
    function.assert_no_errors();
}

/// Issue 29 on the Lambda runtime path: `place_order` as a task with its handles and tasks in
/// DynamoDB Local behind a fault proxy. The task's `PutItem` lands but its answer is lost; the
/// worker's claim is throttled four times, the round's end six (a burst longer than one call's
/// budget is `tests/dynamodb_local/task_engine.rs`'s).
/// The order is placed once, and the task reads `completed` with the checked-out basket —
/// never `failed` for an order that went through, never `working` with no worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_lambda_a_placed_order_reads_completed_through_the_stores_bad_day() {
    use support::fault_proxy::{Fault, Rule};
    let Some(endpoint) = support::dynamodb::endpoint("the Lambda bad-day task test") else {
        return;
    };
    let (proxy, lambda) = TaskLambda::start_behind_a_fault_proxy(&endpoint).await;
    let api = &lambda.api;
    let case = "bad day";
    let basket_id = lambda.basket_of_three_teas(case).await;

    proxy.rule(Rule::op("PutItem").next(1).act(Fault::LoseAnswer));
    // By count, not by time: however slow the machine, the claim meets four throttles and
    // the end six (more than the SDK's own three attempts each).
    proxy.rule(
        Rule::op("UpdateItem")
            .body_contains("SET #state = :working, claimed_round")
            .next(4)
            .act(Fault::Throttle),
    );
    proxy.rule(
        Rule::op("UpdateItem")
            .body_contains("SET #state = :state")
            .next(6)
            .act(Fault::Throttle),
    );
    let started = Instant::now();
    let accepted = lambda.place_order_as_task(&basket_id, |e| e, case).await;
    assert_eq!(accepted["result"]["resultType"], "task", "{accepted}");
    let task_id = accepted["result"]["taskId"].as_str().unwrap().to_owned();
    let done = lambda
        .finished_as_sent(&task_id, 4, started, Duration::from_millis(200), case)
        .await;
    assert_order_completed(&done);
    let acted = |op: &str, text: &str| proxy.actions(op, text);
    let puts = acted("PutItem", "");
    assert!(
        puts.ends_with(&["LoseAnswer".to_owned(), "Forward".to_owned()]),
        "the basket's put, then the task's, lost and repeated: {puts:?}"
    );
    let claims = acted("UpdateItem", "SET #state = :working, claimed_round");
    assert!(
        claims.len() > 4 && claims.last().is_some_and(|a| a == "Forward"),
        "claim throttled, then written: {claims:?}"
    );
    let finishes = acted("UpdateItem", "SET #state = :state");
    assert!(
        finishes.len() > 6 && finishes.last().is_some_and(|a| a == "Forward"),
        "end throttled, then written: {finishes:?}"
    );
    // Ran once: one worker invocation, and the basket is gone (checked out) exactly once.
    let (accepted, refused) = lambda.invoked();
    assert_eq!(accepted.len(), 1, "{refused:?}");
    proxy.clear();
    let view = api
        .invoke(&tool_call(
            5,
            "view_basket",
            json!({"basket_id": basket_id}),
        ))
        .await;
    let (_, body) = answer_of(&view);
    assert!(
        body.contains("isError"),
        "the basket was checked out: {body}"
    );
    lambda.assert_no_errors();
}

/// Issue 29 on the Lambda runtime path, the other two faults: DynamoDB down for 3 s while a
/// round runs (the order still completes, once), and a `tasks/cancel` whose write is throttled
/// four times (the cancel waits, is written, and the round stops before checking the basket
/// out).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_lambda_a_round_outlives_the_store_going_down_and_a_throttled_cancel_still_stops() {
    use support::fault_proxy::{Fault, Rule};
    let Some(endpoint) = support::dynamodb::endpoint("the Lambda store-down task test") else {
        return;
    };
    let (proxy, lambda) = TaskLambda::start_behind_a_fault_proxy(&endpoint).await;
    let api = &lambda.api;
    for case in ["store down", "cancel throttled"] {
        let basket_id = lambda.basket_of_three_teas(case).await;
        let started = Instant::now();
        let accepted = lambda.place_order_as_task(&basket_id, |e| e, case).await;
        let task_id = accepted["result"]["taskId"].as_str().unwrap().to_owned();
        if case == "store down" {
            tokio::time::sleep(Duration::from_millis(800)).await;
            proxy.down();
            tokio::time::sleep(Duration::from_secs(3)).await;
            proxy.up();
        } else {
            // By count: four throttles (more than the SDK's own three attempts), written well
            // before the order's last step however slow the machine.
            proxy.rule(
                Rule::op("UpdateItem")
                    .body_contains("SET #cancel = :true")
                    .next(4)
                    .act(Fault::Throttle),
            );
            lambda.cancel(&task_id, case).await;
        }
        let done = lambda
            .finished_as_sent(&task_id, 5, started, Duration::from_millis(200), case)
            .await;
        let view = api
            .invoke(&tool_call(
                6,
                "view_basket",
                json!({"basket_id": basket_id}),
            ))
            .await;
        let (_, view) = answer_of(&view);
        if case == "store down" {
            assert_eq!(done["status"], "completed", "{case}: {done}");
            assert!(view.contains("isError"), "{case}: checked out: {view}");
        } else {
            assert_eq!(done["status"], "cancelled", "{case}: {done}");
            let cancels = proxy.actions("UpdateItem", "SET #cancel = :true");
            assert!(
                cancels.len() > 4 && cancels.last().is_some_and(|a| a == "Forward"),
                "throttled, then written: {cancels:?}"
            );
            lambda
                .assert_basket_untouched(7, &basket_id, started, case)
                .await;
        }
        let (accepted, _) = lambda.invoked();
        assert_eq!(accepted.len(), 1, "{case}: one worker invocation");
    }
    lambda.assert_no_errors();
}
