//! The built binaries under a loopback Lambda Runtime API: the same `/next` → `/response` loop
//! Lambda runs, with events from `events/`, buffered and with response streaming.
//!
//! The emulator below speaks the Runtime API (2018-06-01) on 127.0.0.1: it hands out one event
//! per `GET /runtime/invocation/next` and records each `/response` frame by frame with its
//! arrival time, so a test can tell a streamed answer from a buffered one. Each function process
//! is killed when its test ends; its log lines (JSON on Lambda) are checked for ERROR.

mod support;

use std::{
    collections::{HashMap, VecDeque},
    convert::Infallible,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use support::basket::{REQUEST_STATE_KEY, spawn};
use tokio::{net::TcpListener, sync::oneshot};

/// One finished invocation as the Runtime API saw it.
#[derive(Debug)]
struct Invocation {
    /// The `/response` request's headers (streaming mode shows here).
    headers: http::HeaderMap,
    /// Body frames in arrival order, with the time each arrived.
    frames: Vec<(Instant, Bytes)>,
    /// Posted to `/error` instead of `/response`.
    error: bool,
}

impl Invocation {
    fn body(&self) -> Vec<u8> {
        self.frames
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }

    fn streamed(&self) -> bool {
        self.headers
            .get("lambda-runtime-function-response-mode")
            .is_some_and(|v| v == "streaming")
    }

    /// A buffered answer: the `{statusCode, headers, body}` document `lambda_http` returns.
    fn buffered(&self) -> (u16, Value, String) {
        assert!(!self.streamed() && !self.error, "{self:?}");
        let doc: Value = serde_json::from_slice(&self.body()).expect("a JSON Lambda response");
        let body = doc["body"].as_str().unwrap_or_default().to_string();
        // REST and ALB answers may carry headers in `multiValueHeaders` only.
        let mut headers = doc["headers"].as_object().cloned().unwrap_or_default();
        if let Some(multi) = doc["multiValueHeaders"].as_object() {
            for (name, values) in multi {
                if let Some(first) = values.get(0) {
                    headers
                        .entry(name.to_ascii_lowercase())
                        .or_insert(first.clone());
                }
            }
        }
        (
            doc["statusCode"].as_u64().unwrap() as u16,
            Value::Object(headers),
            body,
        )
    }

    /// A streamed answer: the metadata prelude, 8 NUL bytes, then the body.
    fn streaming(&self) -> (u16, Value, Vec<u8>) {
        assert!(self.streamed() && !self.error, "{self:?}");
        let bytes = self.body();
        let cut = bytes
            .windows(8)
            .position(|w| w == [0u8; 8])
            .expect("the prelude delimiter");
        let prelude: Value = serde_json::from_slice(&bytes[..cut]).expect("a JSON prelude");
        let status = prelude["statusCode"].as_u64().unwrap() as u16;
        (
            status,
            prelude["headers"].clone(),
            bytes[cut + 8..].to_vec(),
        )
    }
}

#[derive(Default)]
struct State {
    /// Queued invocations: id, event, how long the invocation may run.
    pending: Mutex<VecDeque<(String, String, Duration)>>,
    results: Mutex<HashMap<String, oneshot::Sender<Invocation>>>,
    wake: tokio::sync::Notify,
}

/// The loopback Runtime API.
struct RuntimeApi {
    addr: SocketAddr,
    state: Arc<State>,
    next_id: std::sync::atomic::AtomicU64,
}

impl RuntimeApi {
    async fn start() -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let served = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(state, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        RuntimeApi {
            addr,
            state,
            next_id: 0.into(),
        }
    }

    /// Queues `event` with the usual 60 s deadline, waits for the function's answer.
    async fn invoke(&self, event: &str) -> Invocation {
        self.invoke_within(event, Duration::from_secs(60)).await
    }

    /// Queues `event` as an invocation that must end within `timeout` (the deadline the
    /// runtime hands the function), waits for the function's answer.
    async fn invoke_within(&self, event: &str, timeout: Duration) -> Invocation {
        let n = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let id = format!("00000000-0000-4000-8000-{n:012}");
        let (tx, rx) = oneshot::channel();
        self.state.results.lock().unwrap().insert(id.clone(), tx);
        self.state
            .pending
            .lock()
            .unwrap()
            .push_back((id, event.to_string(), timeout));
        self.state.wake.notify_one();
        tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .expect("the function answered within 60 s")
            .expect("the emulator kept the invocation")
    }
}

async fn handle(state: Arc<State>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let reply = |status: StatusCode, body: &'static str| {
        Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    };
    if request.method() == Method::GET && path == "/2018-06-01/runtime/invocation/next" {
        loop {
            let next = state.pending.lock().unwrap().pop_front();
            if let Some((id, event, timeout)) = next {
                let deadline = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
                    + timeout.as_millis();
                return Response::builder()
                    .header("content-type", "application/json")
                    .header("lambda-runtime-aws-request-id", id)
                    .header("lambda-runtime-deadline-ms", deadline.to_string())
                    .header(
                        "lambda-runtime-invoked-function-arn",
                        "arn:aws:lambda:us-east-1:123456789012:function:mcp",
                    )
                    .header(
                        "lambda-runtime-trace-id",
                        "Root=1-674a1b2c-0123456789abcdef01234567;Sampled=0",
                    )
                    .body(Full::new(Bytes::from(event)))
                    .unwrap();
            }
            state.wake.notified().await;
        }
    }
    let parts: Vec<&str> = path
        .trim_start_matches("/2018-06-01/runtime/")
        .split('/')
        .collect();
    match (request.method(), parts.as_slice()) {
        (&Method::POST, ["invocation", id, kind @ ("response" | "error")]) => {
            let id = id.to_string();
            let error = *kind == "error";
            let (head, mut body) = request.into_parts();
            let mut frames = Vec::new();
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else { break };
                if let Ok(data) = frame.into_data() {
                    frames.push((Instant::now(), data));
                }
            }
            if let Some(tx) = state.results.lock().unwrap().remove(&id) {
                let _ = tx.send(Invocation {
                    headers: head.headers,
                    frames,
                    error,
                });
            }
            reply(StatusCode::ACCEPTED, "{\"status\":\"OK\"}")
        }
        (&Method::POST, ["init", "error"]) => {
            let body = request
                .into_body()
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            panic!(
                "the function failed its INIT: {}",
                String::from_utf8_lossy(&body)
            );
        }
        _ => reply(StatusCode::NOT_FOUND, "not found"),
    }
}

/// A function process under the emulator; killed when dropped.
struct Function {
    child: Child,
    logs: Arc<Mutex<String>>,
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Function {
    fn start(binary: &Path, api: &RuntimeApi, env: &[(&str, &str)]) -> Function {
        let runtime_api = api.addr.to_string();
        // Every other MCP_* and AWS_* variable is left out (a fixed key so the function does
        // not refuse to start on Lambda), whatever the test's own environment holds.
        let mut vars = vec![
            ("AWS_LAMBDA_RUNTIME_API", runtime_api.as_str()),
            ("AWS_LAMBDA_FUNCTION_NAME", "mcp"),
            ("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"),
            ("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST"),
            ("AWS_LAMBDA_LOG_GROUP_NAME", "/aws/lambda/mcp"),
            (
                "AWS_LAMBDA_LOG_STREAM_NAME",
                "2026/11/29/[$LATEST]0123456789abcdef",
            ),
            ("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY),
            ("MCP_ALLOWED_HOSTS", "*"),
        ];
        vars.extend_from_slice(env);
        let mut child = spawn(binary, &vars, Stdio::piped(), Stdio::piped());
        let logs = Arc::new(Mutex::new(String::new()));
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let logs = logs.clone();
            std::thread::spawn(move || {
                use std::io::BufRead as _;
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut logs = logs.lock().unwrap();
                    logs.push_str(&line);
                    logs.push('\n');
                }
            });
        }
        Function { child, logs }
    }

    /// Log lines at ERROR (JSON lines on Lambda, or the runtime's plain fallback).
    fn errors(&self) -> Vec<String> {
        self.logs
            .lock()
            .unwrap()
            .lines()
            .filter(|l| {
                l.contains("\"level\":\"ERROR\"") || l.contains(" ERROR ") || l.starts_with("ERROR")
            })
            .map(str::to_string)
            .collect()
    }

    fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }
}

fn event(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("events")
        .join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn basket() -> PathBuf {
    support::basket::binary().to_path_buf()
}

/// `examples/progress.rs`, built here from this tree (a no-op when `cargo test` already built it).
fn progress_example() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_basket"))
        .parent()
        .unwrap()
        .join("examples");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--example", "progress"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
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

    assert_eq!(
        function.errors(),
        Vec::<String>::new(),
        "{}",
        function.logs()
    );
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

    assert_eq!(
        function.errors(),
        Vec::<String>::new(),
        "{}",
        function.logs()
    );
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

    assert_eq!(
        function.errors(),
        Vec::<String>::new(),
        "{}",
        function.logs()
    );
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
    assert_eq!(
        buffered.errors(),
        Vec::<String>::new(),
        "{}",
        buffered.logs()
    );
}
