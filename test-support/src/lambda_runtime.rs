//! A loopback Lambda Runtime API (2018-06-01) and function processes under it: what
//! `tests/dynamodb_local/lambda_runtime.rs` runs the built binaries against and
//! `benches/servers/lambda_runtime_bench.rs` measures them with.
//!
//! [`RuntimeApi`] hands out one queued event per `GET /runtime/invocation/next`, records each
//! `/response` (or `/error`) frame by frame with its arrival time, so a test can tell a streamed
//! answer from a buffered one, and records every `/next` poll with its time: the first ends INIT,
//! each later one the invocation before it (where Lambda's phases, and its billed duration, end).
//! Several processes may poll one API (as Lambda scales out); an event is never handed to one
//! that has gone. [`Function`] is a process under it, with the environment Lambda gives one,
//! killed when dropped; [`MeasuredFunction`] one under an API of its own, as the benchmarks
//! measure it (INIT, each invocation's billed duration, CPU time and memory).

use std::{
    collections::{HashMap, VecDeque},
    convert::Infallible,
    fs::File,
    net::SocketAddr,
    path::Path,
    process::{Child, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::{
    net::{TcpListener, TcpStream},
    sync::{Notify, oneshot},
};

use crate::basket::{REQUEST_STATE_KEY, spawn};
use crate::proc;

/// One finished invocation as the Runtime API saw it.
#[derive(Debug)]
pub struct Invocation {
    /// When the event was handed out on `/next`.
    pub out: Instant,
    /// The `/response` request's headers (streaming mode shows here).
    pub headers: HeaderMap,
    /// Body frames in arrival order, with the time each arrived.
    pub frames: Vec<(Instant, Bytes)>,
    /// When the whole body had arrived.
    pub answered: Instant,
    /// Posted to `/error` instead of `/response`.
    pub error: bool,
}

impl Invocation {
    /// The whole body, its frames joined.
    pub fn body(&self) -> Vec<u8> {
        self.frames
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect()
    }

    /// Whether the function answered in response-streaming mode.
    pub fn streamed(&self) -> bool {
        self.headers
            .get("lambda-runtime-function-response-mode")
            .is_some_and(|v| v == "streaming")
    }

    /// A buffered answer: the `{statusCode, headers, body}` document `lambda_http` returns.
    ///
    /// # Panics
    ///
    /// When the answer was streamed, posted as an error or is not such a document.
    pub fn buffered(&self) -> (u16, Value, String) {
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
    ///
    /// # Panics
    ///
    /// When the answer was buffered, posted as an error or has no JSON prelude.
    pub fn streaming(&self) -> (u16, Value, Vec<u8>) {
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
    /// Handed-out times of the invocations in flight, by request id.
    out: Mutex<HashMap<String, Instant>>,
    wake: Notify,
    /// Every `GET /next` arrival, in order.
    polls: Mutex<Vec<Instant>>,
    polled: Notify,
    /// What a function posted to `/init/error`.
    init_error: Mutex<Option<String>>,
}

/// The loopback Runtime API; serves until the runtime it was started on ends.
pub struct RuntimeApi {
    addr: SocketAddr,
    state: Arc<State>,
    next_id: AtomicU64,
}

impl RuntimeApi {
    /// Listens on a free loopback port.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start() -> RuntimeApi {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the Runtime API");
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State::default());
        let served = state.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let Some((stream, peer)) = with_liveness_probe(stream) else {
                    continue;
                };
                let state = served.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let (state, peer) = (state.clone(), peer.clone());
                        async move { Ok::<_, Infallible>(handle(state, &peer, request).await) }
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

    /// Where it listens (`AWS_LAMBDA_RUNTIME_API`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues `event` with the usual 60 s deadline, waits for the function's answer.
    pub async fn invoke(&self, event: &str) -> Invocation {
        self.invoke_within(event, Duration::from_secs(60)).await
    }

    /// Queues `event` as an invocation that must end within `timeout` (the deadline the
    /// runtime hands the function), waits for the function's answer.
    ///
    /// # Panics
    ///
    /// When no answer comes within 60 s, or a function fails its INIT.
    pub async fn invoke_within(&self, event: &str, timeout: Duration) -> Invocation {
        let rx = self.enqueue(event, timeout);
        let answer = async {
            tokio::select! {
                answer = rx => answer.expect("the emulator kept the invocation"),
                error = self.init_failed() => panic!("the function failed its INIT: {error}"),
            }
        };
        tokio::time::timeout(Duration::from_secs(60), answer)
            .await
            .expect("the function answered within 60 s")
    }

    /// Queues `event` without waiting: what the Lambda service does with an asynchronous
    /// (`Event`) invocation. The receiver hears the function's answer.
    pub fn enqueue(&self, event: &str, timeout: Duration) -> oneshot::Receiver<Invocation> {
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        let id = format!("00000000-0000-4000-8000-{n:012}");
        let (tx, rx) = oneshot::channel();
        self.state.results.lock().unwrap().insert(id.clone(), tx);
        self.state
            .pending
            .lock()
            .unwrap()
            .push_back((id, event.to_string(), timeout));
        self.state.wake.notify_one();
        rx
    }

    /// How many times functions have polled `/next` so far.
    pub fn polls(&self) -> usize {
        self.state.polls.lock().unwrap().len()
    }

    /// Waits until functions have polled `/next` `count` times; the time of that poll. An error
    /// when a function fails its INIT first, or `within` passes.
    pub async fn polled(&self, count: usize, within: Duration) -> Result<Instant, String> {
        let deadline = Instant::now() + within;
        loop {
            let notified = self.state.polled.notified();
            if let Some(at) = self.state.polls.lock().unwrap().get(count - 1) {
                return Ok(*at);
            }
            if let Some(error) = self.state.init_error.lock().unwrap().clone() {
                return Err(format!("the function failed its INIT: {error}"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no poll number {count} on /next within {within:?}"));
            }
            let _ = tokio::time::timeout(left.min(Duration::from_millis(100)), notified).await;
        }
    }

    /// What a function posted to `/init/error`, once one has.
    async fn init_failed(&self) -> String {
        loop {
            let notified = self.state.polled.notified();
            if let Some(error) = self.state.init_error.lock().unwrap().clone() {
                return error;
            }
            notified.await;
        }
    }
}

/// `stream` for hyper, and a duplicate of its socket to ask whether the function process is
/// still there: a killed function's `GET /next` stays parked in its handler, and an event handed
/// to it would be written to a closed socket and lost.
fn with_liveness_probe(stream: TcpStream) -> Option<(TcpStream, Arc<std::net::TcpStream>)> {
    let stream = stream.into_std().ok()?;
    let probe = stream.try_clone().ok()?;
    probe.set_nonblocking(true).ok()?;
    Some((TcpStream::from_std(stream).ok()?, Arc::new(probe)))
}

/// Whether the peer still holds its end: a killed process's socket reads as closed (the kernel
/// closes its descriptors before `wait` returns, so this cannot race the kill).
fn peer_is_open(probe: &std::net::TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match probe.peek(&mut byte) {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
    }
}

async fn handle(
    state: Arc<State>,
    peer: &std::net::TcpStream,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_string();
    let reply = |status: StatusCode, body: &'static str| {
        Response::builder()
            .status(status)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    };
    if request.method() == Method::GET && path == "/2018-06-01/runtime/invocation/next" {
        state.polls.lock().unwrap().push(Instant::now());
        state.polled.notify_waiters();
        loop {
            if !peer_is_open(peer) {
                // Pass the wake-up on: a live function's request may be parked behind this one.
                state.wake.notify_one();
                return reply(StatusCode::GONE, "the function is gone");
            }
            let next = state.pending.lock().unwrap().pop_front();
            if let Some((id, event, timeout)) = next {
                let deadline = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
                    + timeout.as_millis();
                let response = Response::builder()
                    .header("content-type", "application/json")
                    .header("lambda-runtime-aws-request-id", id.as_str())
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
                state.out.lock().unwrap().insert(id, Instant::now());
                return response;
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
            let answered = Instant::now();
            let out = state.out.lock().unwrap().remove(&id);
            if let Some(tx) = state.results.lock().unwrap().remove(&id) {
                let _ = tx.send(Invocation {
                    out: out.unwrap_or(answered),
                    headers: head.headers,
                    frames,
                    answered,
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
            *state.init_error.lock().unwrap() = Some(String::from_utf8_lossy(&body).into_owned());
            state.polled.notify_waiters();
            reply(StatusCode::ACCEPTED, "{\"status\":\"OK\"}")
        }
        _ => reply(StatusCode::NOT_FOUND, "not found"),
    }
}

/// A function process under a [`RuntimeApi`]; killed when dropped.
pub struct Function {
    child: Child,
    started: Instant,
    logs: Arc<Mutex<String>>,
}

impl Drop for Function {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Function {
    /// `binary` under `api` as a test starts it: the environment of
    /// [`start_with_output`](Self::start_with_output) with a fixed request-state key (so the
    /// function does not refuse to start on Lambda) and any Host allowed before `env`, its output
    /// kept for [`errors`](Self::errors) and [`logs`](Self::logs).
    pub fn start(binary: &Path, api: &RuntimeApi, env: &[(&str, &str)]) -> Function {
        let mut vars = vec![
            ("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY),
            ("MCP_ALLOWED_HOSTS", "*"),
        ];
        vars.extend_from_slice(env);
        let mut function =
            Self::start_with_output(binary, api, &vars, Stdio::piped(), Stdio::piped());
        for pipe in [
            Box::new(function.child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(function.child.stderr.take().unwrap()),
        ] {
            let logs = function.logs.clone();
            std::thread::spawn(move || {
                use std::io::BufRead as _;
                for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut logs = logs.lock().unwrap();
                    logs.push_str(&line);
                    logs.push('\n');
                }
            });
        }
        function
    }

    /// `binary` under `api` with a clean environment ([`spawn`]: no inherited `MCP_*`, `AWS_*`
    /// or `BENCH_*`), the variables Lambda sets for a function (its Runtime API, name `mcp`,
    /// 128 MB, log group and stream), then `env`; its output to `stdout` and `stderr`.
    pub fn start_with_output(
        binary: &Path,
        api: &RuntimeApi,
        env: &[(&str, &str)],
        stdout: Stdio,
        stderr: Stdio,
    ) -> Function {
        let runtime_api = api.addr.to_string();
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
        ];
        vars.extend_from_slice(env);
        let started = Instant::now();
        let child = spawn(binary, &vars, stdout, stderr);
        Function {
            child,
            started,
            logs: Arc::default(),
        }
    }

    /// When the process was started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Log lines at ERROR (JSON lines on Lambda, or the runtime's plain fallback).
    pub fn errors(&self) -> Vec<String> {
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

    /// Everything the function has written so far (with [`start`](Self::start)).
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    /// Fails the test, with the whole log, if the function logged an error.
    ///
    /// # Panics
    ///
    /// When it did.
    pub fn assert_no_errors(&self) {
        assert_eq!(self.errors(), Vec::<String>::new(), "{}", self.logs());
    }
}

/// A function process under a [`RuntimeApi`] of its own, as the benchmarks measure it: INIT
/// (exec → its first `/next`), each invocation's billed duration (event out → its next `/next`)
/// and response latency, and what the kernel says it has used. Killed when dropped.
pub struct MeasuredFunction {
    api: RuntimeApi,
    process: Function,
}

impl MeasuredFunction {
    /// Starts `binary` with a clean environment and `env` ([`Function::start_with_output`]), its
    /// output appended to `log`.
    pub async fn start(binary: &Path, env: &[(&str, &str)], log: &Path) -> Result<Self, String> {
        let api = RuntimeApi::start().await;
        let log = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let stdout = log.try_clone().map_err(|e| e.to_string())?;
        let process = Function::start_with_output(binary, &api, env, stdout.into(), log.into());
        Ok(MeasuredFunction { api, process })
    }

    /// Waits for the end of INIT: (INIT duration, CPU ticks spent by then).
    pub async fn init(&mut self) -> Result<(Duration, u64), String> {
        let at = self.api.polled(1, Duration::from_secs(30)).await?;
        Ok((at - self.process.started(), self.cpu_ticks()))
    }

    /// `utime + stime` of the process so far, in clock ticks ([`proc::cpu_ticks`]).
    pub fn cpu_ticks(&self) -> u64 {
        proc::cpu_ticks(self.process.pid()).unwrap_or(0)
    }

    /// (peak, current) resident memory of the process, in KiB (`VmHWM`, `VmRSS`).
    pub fn memory_kib(&self) -> (u64, u64) {
        let pid = self.process.pid();
        (
            proc::peak_rss_kib(pid).unwrap_or(0),
            proc::rss_kib(pid).unwrap_or(0),
        )
    }

    /// Queues `event` without waiting; the receiver hears the answer.
    pub fn enqueue(&self, event: &str) -> oneshot::Receiver<Invocation> {
        self.api.enqueue(event, Duration::from_secs(60))
    }

    /// One invocation, the function idle on `/next`: hands `event` out, waits for the answer
    /// and for the function's next poll. Returns (billed duration, response latency, body).
    pub async fn invoke(&mut self, event: &str) -> Result<(Duration, Duration, Vec<u8>), String> {
        let polls = self.api.polls();
        let rx = self.enqueue(event);
        let done = tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .map_err(|_| "no answer within 60 s".to_string())?
            .map_err(|_| "the emulator lost the invocation".to_string())?;
        if done.error {
            return Err(format!(
                "the function posted an error: {}",
                String::from_utf8_lossy(&done.body())
            ));
        }
        let next = self.api.polled(polls + 1, Duration::from_secs(60)).await?;
        Ok((next - done.out, done.answered - done.out, done.body()))
    }
}
