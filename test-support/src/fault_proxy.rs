//! A fault-injecting HTTP proxy in front of a DynamoDB endpoint: the store's bad days, made on
//! demand and repeatable, for the tests of what the server does on them (issue 29).
//!
//! [`CountingProxy`](crate::counting_proxy::CountingProxy) copies bytes, so it can only withhold
//! answers or stop. This is a real HTTP/1.1 proxy (hyper on both sides; keep-alive, chunked or
//! sized bodies), so it sees each request whole, its operation (`X-Amz-Target`) and its body,
//! and decides per request, from rules a test sets while it runs, what happens to it
//! ([`Fault`]): forward it; answer DynamoDB's throttling error or a 500 without forwarding;
//! reset the connection before forwarding; forward and then reset instead of answering
//! ("applied, answer lost"); delay it; or take the whole proxy down.
//!
//! ```ignore
//! let proxy = FaultProxy::start(&endpoint).await; // give the store proxy.url
//! // Throttle only a task's finish write (its UpdateExpression), for 7 s:
//! proxy.rule(Rule::op("UpdateItem").body_contains("SET #state = :state")
//!     .for_duration(Duration::from_secs(7)).act(Fault::Throttle));
//! proxy.rule(Rule::op("PutItem").next(3).act(Fault::LoseAnswer));
//! proxy.rule(Rule::any().probability(0.2, seed).act(Fault::Throttle));
//! proxy.down(); proxy.up(); proxy.clear();
//! for entry in proxy.log() { /* seq, at, op, fingerprint, body, action, status, error */ }
//! ```
//!
//! Rules are tried in the order they were added and the first that takes a request decides (a
//! `Fault::Forward` rule ahead of others exempts what it matches); a rule is spent after its
//! count (`next`) or its window (`for_duration`, from when it is added). A `probability` rule
//! draws from its own PRNG (splitmix64, seeded) once per request it matches, so the k-th
//! matching request gets the k-th draw: sequential requests repeat exactly for a seed. Every
//! request is logged, in the order the decisions were taken (one lock), so a test checks its
//! verdicts against what the store was really sent, and sees how often the SDK tried.
//!
//! A reset is a TCP RST (`SO_LINGER` 0) on the client's own connection, so the SDK sees a
//! connection error on the connection it was using, as with a real network fault.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::Notify;

/// What the proxy does to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    /// Pass it on, and its answer back (what happens without a rule).
    #[default]
    Forward,
    /// HTTP 400 `ProvisionedThroughputExceededException`, as DynamoDB throttles; not forwarded.
    Throttle,
    /// HTTP 500 `InternalServerError`; not forwarded.
    ServerError,
    /// Reset the connection before forwarding: nothing applied, no answer.
    Reset,
    /// Forward it (the write lands), then reset the connection instead of answering.
    LoseAnswer,
    /// Wait this long, then forward: a client that gives up meanwhile does not stop it (it
    /// lands later, as at a slow store; [`Entry::status`] says when).
    Delay(Duration),
    /// Reset this connection and take the proxy down ([`FaultProxy::down`]) until `up()`.
    Down,
}

/// Which requests a fault applies to, and for how long: [`Rule::op`] or [`Rule::any`],
/// narrowed, then given its fault with [`Rule::act`].
#[derive(Debug, Clone, Default)]
pub struct Rule {
    op: Option<String>,
    body: Vec<String>,
    count: Option<u64>,
    window: Option<Duration>,
    until: Option<Instant>,
    chance: Option<(f64, u64)>,
    fault: Fault,
}

impl Rule {
    /// Requests of one operation, e.g. `"UpdateItem"` (the `X-Amz-Target` after the dot).
    pub fn op(operation: &str) -> Self {
        let op = Some(operation.to_owned());
        Self { op, ..Self::any() }
    }
    /// Every request.
    pub fn any() -> Self {
        Self::default()
    }
    /// Only requests whose body (JSON as sent: an `UpdateExpression` fragment, a key, an
    /// attribute value) contains `text`; each call adds a text that must be there.
    pub fn body_contains(mut self, text: &str) -> Self {
        self.body.push(text.to_owned());
        self
    }
    /// The next `n` requests it takes, then it is spent.
    pub fn next(self, n: u64) -> Self {
        Self {
            count: Some(n),
            ..self
        }
    }
    /// For `window` from when it is added ([`FaultProxy::rule`]), then it is spent.
    pub fn for_duration(self, window: Duration) -> Self {
        Self {
            window: Some(window),
            ..self
        }
    }
    /// Each matching request with probability `p`, drawn from a PRNG seeded with `seed`.
    pub fn probability(self, p: f64, seed: u64) -> Self {
        Self {
            chance: Some((p, seed)),
            ..self
        }
    }
    /// What to do to the requests it takes.
    pub fn act(self, fault: Fault) -> Self {
        Self { fault, ..self }
    }

    fn spent(&self, now: Instant) -> bool {
        self.count == Some(0) || self.until.is_some_and(|until| now >= until)
    }

    /// Whether it takes this request (counted, and drawn for if it has a probability).
    fn takes(&mut self, op: &str, body: &str) -> bool {
        let matches = self.op.as_deref().is_none_or(|o| o == op)
            && self.body.iter().all(|text| body.contains(text.as_str()));
        if !matches {
            return false;
        }
        if let Some((p, state)) = &mut self.chance {
            // splitmix64, then a 53-bit uniform draw in [0, 1).
            *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = (*state ^ (*state >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            if ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 >= *p {
                return false;
            }
        }
        if let Some(n) = &mut self.count {
            *n -= 1;
        }
        true
    }
}

/// One request as the proxy saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its place in arrival order, from 0 (its index in [`FaultProxy::log`]).
    pub seq: usize,
    /// When it arrived, since the proxy started.
    pub at: Duration,
    /// The operation, e.g. `PutItem` (empty without `X-Amz-Target`).
    pub op: String,
    /// FNV-1a of the body, 16 hex digits: the SDK's attempts of one call share it.
    pub fingerprint: String,
    pub body: String,
    pub action: Fault,
    /// The upstream's status, once it answered a forwarded request.
    pub status: Option<u16>,
    /// The upstream's error code on an error answer (e.g. `ConditionalCheckFailedException`),
    /// or why it could not be reached.
    pub error: Option<String>,
}

/// The proxy; dropping it takes it down. See the module docs.
pub struct FaultProxy {
    /// `http://127.0.0.1:<port>`: the endpoint to give the store.
    pub url: String,
    shared: Arc<Shared>,
}

struct Shared {
    addr: SocketAddr,
    upstream: String,
    client: Client<HttpConnector, Full<Bytes>>,
    started: Instant,
    rules: Mutex<Vec<Rule>>,
    log: Mutex<Vec<Entry>>,
    down: AtomicBool,
    connections: AtomicUsize,
    net: Mutex<Net>,
}

#[derive(Default)]
struct Net {
    /// The listener and its accept loop; none while down.
    listening: Option<(TcpListener, tokio::task::AbortHandle)>,
    /// Each open connection's kill switch.
    open: HashMap<usize, Arc<Notify>>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.shared.take_down();
    }
}

impl FaultProxy {
    /// Listens on a free loopback port, forwarding to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> Self {
        let listener = bind("127.0.0.1:0".parse().unwrap());
        let shared = Arc::new(Shared {
            addr: listener.local_addr().unwrap(),
            upstream: upstream
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            started: Instant::now(),
            rules: Mutex::default(),
            log: Mutex::default(),
            down: AtomicBool::new(true),
            connections: AtomicUsize::new(0),
            net: Mutex::default(),
        });
        shared.listen(listener);
        let url = format!("http://{}", shared.addr);
        Self { url, shared }
    }

    /// Adds a rule after the others (a `for_duration` window starts now).
    pub fn rule(&self, mut rule: Rule) {
        rule.until = rule.window.map(|window| Instant::now() + window);
        self.shared.rules.lock().unwrap().push(rule);
    }

    /// Removes every rule: from now on everything is forwarded.
    pub fn clear(&self) {
        self.shared.rules.lock().unwrap().clear();
    }

    /// Stops listening (connecting is refused) and resets every open connection.
    pub fn down(&self) {
        self.shared.take_down();
    }

    /// Listens again, on the same port.
    pub fn up(&self) {
        if self.shared.down.load(Ordering::SeqCst) {
            self.shared.listen(bind(self.shared.addr));
        }
    }

    /// Every request so far, in arrival order.
    pub fn log(&self) -> Vec<Entry> {
        self.shared.log.lock().unwrap().clone()
    }

    /// What it did, in arrival order, to the `op` requests whose body contains `text` (`""`:
    /// all of them): `"Forward"`, `"Throttle"`, `"LoseAnswer"`, ….
    pub fn actions(&self, op: &str, text: &str) -> Vec<String> {
        self.log()
            .iter()
            .filter(|e| e.op == op && e.body.contains(text))
            .map(|e| format!("{:?}", e.action))
            .collect()
    }

    /// How many connections it has accepted.
    pub fn connections(&self) -> usize {
        self.shared.connections.load(Ordering::SeqCst)
    }
}

/// A listener on `addr`, with `SO_REUSEADDR` so `up()` gets the port back from under its own
/// connections' `TIME_WAIT`.
fn bind(addr: SocketAddr) -> TcpListener {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_reuseaddr(true).unwrap();
    (socket.bind(addr).and_then(|()| socket.listen(1024)))
        .unwrap_or_else(|e| panic!("fault proxy: listening on {addr}: {e}"))
}

impl Shared {
    /// Accepts on `listener` until [`take_down`](Self::take_down) closes it, which it does
    /// at once: the listener is polled under the lock, not owned by the loop.
    fn listen(self: &Arc<Self>, listener: TcpListener) {
        let mut net = self.net.lock().unwrap();
        let shared = self.clone();
        let accept = tokio::spawn(async move {
            let next = || {
                std::future::poll_fn(|cx| match &shared.net.lock().unwrap().listening {
                    Some((listener, _)) => listener.poll_accept(cx).map(|r| r.ok()),
                    None => Poll::Ready(None),
                })
            };
            while let Some((stream, _)) = next().await {
                tokio::spawn(connection(shared.clone(), stream));
            }
        });
        net.listening = Some((listener, accept.abort_handle()));
        self.down.store(false, Ordering::SeqCst);
    }

    fn take_down(&self) {
        let mut net = self.net.lock().unwrap();
        self.down.store(true, Ordering::SeqCst);
        if let Some((listener, accept)) = net.listening.take() {
            accept.abort();
            drop(listener); // refused from now on
        }
        net.open.values().for_each(|kill| kill.notify_one());
    }

    /// The fault for this request, logged under the same lock; with its `seq`.
    fn decide(&self, op: &str, body: &str) -> (Fault, usize) {
        let now = Instant::now();
        let mut rules = self.rules.lock().unwrap();
        rules.retain(|rule| !rule.spent(now));
        let action = (rules.iter_mut())
            .find_map(|rule| rule.takes(op, body).then_some(rule.fault))
            .unwrap_or_default();
        let mut log = self.log.lock().unwrap();
        let fnv = (body.bytes()).fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        let (seq, at, fingerprint) = (log.len(), now - self.started, format!("{fnv:016x}"));
        let (op, body) = (op.to_owned(), body.to_owned());
        let (status, error) = (None, None);
        log.push(Entry {
            seq,
            at,
            op,
            fingerprint,
            body,
            action,
            status,
            error,
        });
        (action, seq)
    }
}

/// One client connection, served until it closes, or is killed: then it is reset.
async fn connection(shared: Arc<Shared>, stream: TcpStream) {
    let id = shared.connections.fetch_add(1, Ordering::SeqCst);
    // A second descriptor of the socket (hyper owns the first), to make the close a reset.
    let Ok((twin, stream)) = (stream.into_std()).and_then(|s| {
        Ok((
            TcpStream::from_std(s.try_clone()?)?,
            TcpStream::from_std(s)?,
        ))
    }) else {
        return;
    };
    let kill = Arc::new(Notify::new());
    {
        let mut net = shared.net.lock().unwrap();
        if shared.down.load(Ordering::SeqCst) {
            let _ = twin.set_zero_linger();
            return;
        }
        net.open.insert(id, kill.clone());
    }
    let (s, k) = (shared.clone(), kill.clone());
    let service = hyper::service::service_fn(move |request| handle(s.clone(), k.clone(), request));
    let served = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = served => {}
        _ = kill.notified() => { let _ = twin.set_zero_linger(); }
    }
    shared.net.lock().unwrap().open.remove(&id);
}

type Answer = http::Response<Full<Bytes>>;

async fn handle(
    shared: Arc<Shared>,
    kill: Arc<Notify>,
    request: http::Request<hyper::body::Incoming>,
) -> Result<Answer, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let target = parts
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok());
    let op = target.unwrap_or("").rsplit('.').next().unwrap_or("");
    let (fault, seq) = shared.decide(op, &String::from_utf8_lossy(&body));
    match fault {
        Fault::Throttle => return Ok(refusal(400, "ProvisionedThroughputExceededException")),
        Fault::ServerError => return Ok(refusal(500, "InternalServerError")),
        Fault::Reset => cut(&kill).await,
        Fault::Down => {
            shared.take_down();
            cut(&kill).await;
        }
        Fault::Forward | Fault::LoseAnswer | Fault::Delay(_) => {}
    }
    // On a task of its own: a request on its way goes on when its client gives up, as at a
    // store, and lands (and is logged) all the same.
    let on_its_way = tokio::spawn(async move {
        if let Fault::Delay(delay) = fault {
            tokio::time::sleep(delay).await;
        }
        let answer = forward(&shared, parts, body).await;
        let entry = &mut shared.log.lock().unwrap()[seq];
        match &answer {
            Ok((response, code)) => {
                (entry.status, entry.error) = (Some(response.status().as_u16()), code.clone());
            }
            Err(e) => entry.error = Some(format!("upstream: {e}")),
        }
        answer
    });
    let answer = on_its_way.await.unwrap_or_else(|e| Err(e.to_string()));
    if fault == Fault::LoseAnswer {
        cut(&kill).await;
    }
    Ok(answer.map_or_else(|_| refusal(502, "BadGateway"), |(answer, _)| answer))
}

/// Kills this request's connection (a reset) and never answers.
async fn cut(kill: &Notify) {
    kill.notify_one();
    std::future::pending::<()>().await;
}

/// Hop-by-hop headers: each side's own business.
const HOP: [&str; 5] = [
    "connection",
    "keep-alive",
    "transfer-encoding",
    "te",
    "upgrade",
];

/// The request sent upstream: its answer, read whole, and its error code if it is an error.
async fn forward(
    shared: &Shared,
    parts: http::request::Parts,
    body: Bytes,
) -> Result<(Answer, Option<String>), String> {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let uri = format!("http://{}{path}", shared.upstream);
    let mut request = http::Request::builder().method(parts.method).uri(uri);
    for (name, value) in parts
        .headers
        .iter()
        .filter(|(n, _)| !HOP.contains(&n.as_str()))
    {
        request = request.header(name, value);
    }
    let request = request.body(Full::new(body)).map_err(|e| e.to_string())?;
    let answer = shared
        .client
        .request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (head, body) = answer.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let code = (head.status.as_u16() >= 400).then(|| {
        let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let header = head
            .headers
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok());
        let kind = header.or(json["__type"].as_str()).unwrap_or("");
        let kind = kind.rsplit('#').next().unwrap_or("");
        kind.split(':').next().unwrap_or("").to_owned()
    });
    let mut answer = http::Response::builder().status(head.status);
    for (name, value) in head
        .headers
        .iter()
        .filter(|(n, _)| !HOP.contains(&n.as_str()))
    {
        answer = answer.header(name, value);
    }
    Ok((
        answer.body(Full::new(body)).map_err(|e| e.to_string())?,
        code,
    ))
}

/// DynamoDB's error answer, named in `__type` and `x-amzn-ErrorType`, not forwarded.
fn refusal(status: u16, kind: &str) -> Answer {
    let body = serde_json::json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"),
        "message": format!("{kind} (made by the fault proxy)"),
    });
    http::Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-ErrorType", kind)
        .header("x-amzn-RequestId", "fault-proxy")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}
