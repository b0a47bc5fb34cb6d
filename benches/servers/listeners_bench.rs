//! Run with `benches/listeners.sh` (which builds it and starts DynamoDB Local), or:
//! `bench_listeners BASKET DYNAMODB_ENDPOINT OUT.jsonl LOG COUNTS SECONDS POLL_MS`.
//!
//! What `subscriptions/listen` costs one process as its open streams grow: the basket (a local
//! server, auth off, handles and the change feed in DynamoDB Local) behind a request-counting
//! proxy in front of DynamoDB Local. For each count in `COUNTS` (ascending, e.g. `1,10,100,1000`)
//! the driver holds that many listen streams open at once, each watching the tool list and a
//! basket of its own, and over `SECONDS` measures:
//!
//! - DynamoDB requests per second and per poll (every request the proxy sees, by operation);
//! - the basket's CPU (`utime + stime`) per stream-second above what it spends with no stream
//!   open, and its resident memory (VmRSS) per open stream above what it held with none (both in a quiet window: nothing changes);
//! - delivery, in a second window: a few baskets are changed through the server; the time from
//!   each change to its stream's `notifications/resources/updated`, against the poll interval.
//!
//! One JSON line per count goes to `OUT.jsonl`; the basket's log to `LOG`. Fails (exit 1) when a
//! stream is refused or misses a change, when requests per poll exceed ⌈distinct watched items /
//! 100⌉ by more than the slack a late tick explains, or (at up to 1,000 streams) when a delivery
//! took longer than two poll intervals.

use counting_proxy::CountingProxy;
use mcp_lambda_test_support::{counting_proxy, dynamodb, proc};

use std::{
    collections::HashMap,
    fs::File,
    io::Write as _,
    net::SocketAddr,
    process::{Child, Command, ExitCode, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use bytes::{Buf, Bytes};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

/// The table the benchmark keeps its baskets in (created if missing).
const TABLE: &str = "mcp-handles-bench";
/// How many baskets change during each window (spread over it).
const CHANGES: usize = 10;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench_listeners: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The basket process under test.
struct Basket {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Basket {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Basket {
    /// `utime + stime` in seconds.
    fn cpu_secs(&self) -> Result<f64, String> {
        proc::cpu_ticks(self.child.id())
            .map(|ticks| ticks as f64 / 100.0)
            .ok_or_else(|| "cannot read the basket's /proc/<pid>/stat".to_owned())
    }

    /// Resident memory in KiB (`VmRSS`).
    fn rss_kib(&self) -> Result<u64, String> {
        proc::rss_kib(self.child.id()).ok_or_else(|| "no VmRSS for the basket".to_owned())
    }
}

/// One request to `/mcp`, answered as JSON.
async fn call(addr: SocketAddr, method: &str, params: Value) -> Result<Value, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request(addr, method, params)?)
        .await
        .map_err(|e| e.to_string())?;
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| format!("{method}: not JSON: {e}"))
}

fn request(
    addr: SocketAddr,
    method: &str,
    mut params: Value,
) -> Result<Request<Full<Bytes>>, String> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let name = params["name"].as_str().map(str::to_owned);
    let mut builder = Request::post(format!("http://{addr}/mcp"))
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    builder
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| e.to_string())
}

async fn tool(addr: SocketAddr, name: &str, arguments: Value) -> Result<Value, String> {
    let answer = call(
        addr,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await?;
    let result = &answer["result"];
    if result["isError"] == json!(true) || result.is_null() {
        return Err(format!("{name}: {answer}"));
    }
    Ok(result["structuredContent"].clone())
}

/// When each basket's stream last heard of a change, by URI.
type Heard = Arc<Mutex<HashMap<String, Instant>>>;

/// Opens a listen stream watching the tool list and `uri`; waits for its acknowledgment, then
/// records every `notifications/resources/updated` it carries until the process ends.
async fn listen(addr: SocketAddr, uri: String, heard: Heard) -> Result<(), String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": [uri]});
    let response = sender
        .send_request(request(
            addr,
            "subscriptions/listen",
            json!({"notifications": filter}),
        )?)
        .await
        .map_err(|e| e.to_string())?;
    if response.status() != 200 {
        return Err(format!("listen answered {}", response.status()));
    }
    let mut body = response.into_body();
    let mut buffer = String::new();
    let (acknowledged, ack) = tokio::sync::oneshot::channel();
    let mut acknowledged = Some(acknowledged);
    tokio::spawn(async move {
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(mut data) = frame.into_data() else {
                continue;
            };
            let bytes = data.copy_to_bytes(data.remaining());
            buffer.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                let Some(data) = event.lines().find_map(|l| l.strip_prefix("data:")) else {
                    continue;
                };
                let Ok(message) = serde_json::from_str::<Value>(data.trim()) else {
                    continue;
                };
                match message["method"].as_str() {
                    Some("notifications/subscriptions/acknowledged") => {
                        if let Some(ack) = acknowledged.take() {
                            let _ = ack.send(message["params"]["notifications"].clone());
                        }
                    }
                    Some("notifications/resources/updated") => {
                        if let Some(uri) = message["params"]["uri"].as_str() {
                            heard
                                .lock()
                                .expect("heard")
                                .insert(uri.to_owned(), Instant::now());
                        }
                    }
                    _ => {}
                }
            }
        }
    });
    let filter = tokio::time::timeout(Duration::from_secs(30), ack)
        .await
        .map_err(|_| "no acknowledgment within 30 s".to_owned())?
        .map_err(|_| "the stream ended before its acknowledgment".to_owned())?;
    if filter["resourceSubscriptions"].as_array().map(Vec::len) != Some(1) {
        return Err(format!("the basket was not accepted: {filter}"));
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn run(args: &[String]) -> Result<(), String> {
    let [_, basket, endpoint, out, log, counts, seconds, poll_ms] = args else {
        return Err(
            "usage: bench_listeners BASKET DYNAMODB_ENDPOINT OUT.jsonl LOG COUNTS SECONDS POLL_MS"
                .into(),
        );
    };
    let counts: Vec<usize> = counts
        .split(',')
        .map(|c| c.trim().parse().map_err(|_| format!("bad count {c:?}")))
        .collect::<Result<_, _>>()?;
    let window = Duration::from_secs_f64(seconds.parse().map_err(|_| "bad SECONDS")?);
    let poll = Duration::from_millis(poll_ms.parse().map_err(|_| "bad POLL_MS")?);
    let client = dynamodb::client(endpoint, &dynamodb::timeouts()).await;
    mcp_lambda::handles::DynamoDbHandleStore::create_table(&client, TABLE)
        .await
        .map_err(|e| format!("creating {TABLE}: {e}"))?;
    let proxy = CountingProxy::start(endpoint).await;

    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?;
    let max = counts.iter().max().copied().unwrap_or(1);
    let log_file = File::create(log).map_err(|e| format!("{log}: {e}"))?;
    let child = Command::new(basket)
        .env("MCP_BIND", port.to_string())
        .env("MCP_LOG", "warn")
        .env("MCP_HANDLES_TABLE", TABLE)
        .env("AWS_ENDPOINT_URL_DYNAMODB", &proxy.url)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "local")
        .env("AWS_SECRET_ACCESS_KEY", "local")
        .env("MCP_AWS_READ_TIMEOUT_MS", "10000")
        .env("MCP_LISTEN_POLL_MS", poll.as_millis().to_string())
        .env("MCP_LISTEN_MAX_SECS", "900")
        .env("MCP_LISTEN_MAX_STREAMS", (max + 10).to_string())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("starting {basket}: {e}"))?;
    let server = Basket { child, addr: port };
    let started = Instant::now();
    while TcpStream::connect(server.addr).await.is_err() {
        if started.elapsed() > Duration::from_secs(30) {
            return Err("the basket did not listen within 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_idle = server.rss_kib()?;
    // What the process costs with no stream open, taken off every count's figure.
    let cpu_before = server.cpu_secs()?;
    let idle_start = Instant::now();
    tokio::time::sleep(window).await;
    let cpu_idle_per_sec = (server.cpu_secs()? - cpu_before) / idle_start.elapsed().as_secs_f64();

    let mut out = File::create(out).map_err(|e| format!("{out}: {e}"))?;
    let heard: Heard = Arc::default();
    let mut baskets: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    println!(
        "{:>7} {:>10} {:>9} {:>13} {:>11} {:>14} {:>14}",
        "streams",
        "ddb req/s",
        "req/poll",
        "CPU µs/str·s",
        "RSS KiB/str",
        "deliver p50 ms",
        "deliver max ms"
    );
    for &count in &counts {
        // New baskets and their streams, sixteen at a time.
        let new = count.saturating_sub(baskets.len());
        let addr = server.addr;
        let created: Vec<Result<String, String>> = futures::stream::iter(0..new)
            .map(|_| async move {
                let basket = tool(addr, "create_basket", json!({})).await?;
                let id = basket["basket_id"]
                    .as_str()
                    .ok_or("no basket_id")?
                    .to_owned();
                Ok(format!("basket://{id}"))
            })
            .buffer_unordered(16)
            .collect()
            .await;
        let created: Vec<String> = created.into_iter().collect::<Result<_, _>>()?;
        let opened: Vec<Result<(), String>> = futures::stream::iter(created.iter().cloned())
            .map(|uri| listen(addr, uri, heard.clone()))
            .buffer_unordered(16)
            .collect()
            .await;
        for result in opened {
            result.map_err(|e| format!("opening stream {}: {e}", baskets.len()))?;
        }
        baskets.extend(created);
        // Every stream joined: let the shared poll settle on the new set.
        tokio::time::sleep(2 * poll).await;

        // A quiet window: what the open streams cost by themselves.
        proxy.take();
        let cpu_before = server.cpu_secs()?;
        let window_start = Instant::now();
        tokio::time::sleep(window).await;
        let elapsed = window_start.elapsed().as_secs_f64();
        let (requests, cpu_after) = (proxy.take(), server.cpu_secs()?);
        let rss = server.rss_kib()?;

        // Then a window with changes, for delivery.
        let mut deliveries = Vec::new();
        let gap = window / (CHANGES as u32 + 1);
        let mut changed = Vec::new();
        let changes_start = Instant::now();
        for i in 0..CHANGES.min(baskets.len()) {
            tokio::time::sleep_until((changes_start + gap * (i as u32 + 1)).into()).await;
            let uri = &baskets[(i * 7919) % baskets.len()];
            let id = uri.trim_start_matches("basket://");
            let at = Instant::now();
            tool(
                addr,
                "add_item",
                json!({"basket_id": id, "sku": "tea", "quantity": 1}),
            )
            .await?;
            changed.push((uri.clone(), at));
        }
        // Deliveries: the last change of each basket, heard within five intervals at most.
        tokio::time::sleep(poll * 3).await;
        for (uri, at) in &changed {
            match heard.lock().expect("heard").get(uri) {
                Some(when) if *when >= *at => deliveries.push((*when - *at).as_secs_f64() * 1000.0),
                _ => failures.push(format!("{count} streams: {uri} never heard of its change")),
            }
        }
        let polls_made = requests.iter().filter(|op| *op == "BatchGetItem").count() as f64;
        let listener_requests = requests.len() as u64;
        let polls = elapsed / poll.as_secs_f64();
        let per_poll = polls_made / polls;
        let expected = (count + 1).div_ceil(mcp_lambda::listen::MAX_KEYS_PER_READ) as f64;
        let cpu = cpu_after - cpu_before;
        let cpu_us_per_stream_second =
            (cpu - cpu_idle_per_sec * elapsed).max(0.0) / (count as f64 * elapsed) * 1e6;
        let rss_per_stream = rss.saturating_sub(rss_idle) as f64 / count as f64;
        deliveries.sort_by(f64::total_cmp);
        let (p50, worst) = (percentile(&deliveries, 0.5), percentile(&deliveries, 1.0));
        println!(
            "{count:>7} {:>10.2} {per_poll:>9.2} {cpu_us_per_stream_second:>13.1} {rss_per_stream:>11.1} {p50:>14.0} {worst:>14.0}",
            listener_requests as f64 / elapsed
        );
        let record = json!({
            "kind": "listeners", "streams": count, "seconds": elapsed, "poll_ms": poll.as_millis() as u64,
            "dynamodb_requests_per_sec": listener_requests as f64 / elapsed,
            "batch_get_per_poll": per_poll, "expected_per_poll": expected,
            "cpu_secs": cpu, "cpu_idle_per_sec": cpu_idle_per_sec,
            "cpu_us_per_stream_second": cpu_us_per_stream_second,
            "rss_kib": rss, "rss_idle_kib": rss_idle, "rss_kib_per_stream": rss_per_stream,
            "deliveries_ms": deliveries, "delivery_p50_ms": p50, "delivery_max_ms": worst,
        });
        writeln!(out, "{record}").map_err(|e| e.to_string())?;
        // A late tick explains a fraction of a poll more, never a request per stream.
        if per_poll > expected * 1.25 + 0.25 {
            failures.push(format!(
                "{count} streams: {per_poll:.2} BatchGetItem per poll, expected at most {expected}"
            ));
        }
        if count <= 1000 && worst > 2.0 * poll.as_secs_f64() * 1000.0 {
            failures.push(format!(
                "{count} streams: a change took {worst:.0} ms to arrive, more than two polls"
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

use futures::StreamExt as _;
