//! Run with `benches/lambda-peers.sh` (which builds the functions), or:
//! `bench_lambda_peers OUT.jsonl LOG_DIR INITS ROUNDS BATCH NAME=BINARY...` with NAME one of
//! `mcp-lambda`, `pmcp`, `turul`.
//!
//! Three MCP servers with the same three tools (`echo`, `reverse`, `count`), each built for
//! Lambda as its docs say (`benches/servers/lambda_peer.rs`, `benches/peers/`), each run as a
//! Lambda function under its own loopback Runtime API (the emulator of
//! `mcp_lambda_test_support::lambda_runtime`, which `benches/lambda-runtime.sh` and
//! `tests/dynamodb_local/lambda_runtime.rs` use too), measured the way Lambda measures them, interleaved:
//!
//! - **INIT**: exec → the function's first `GET /runtime/invocation/next`, `INITS` fresh
//!   processes of each, the order rotated every start; with the CPU time (`utime + stime`) by
//!   then, and the first invocation (a `tools/list`) after it: its duration, the CPU time and
//!   the peak resident memory (`VmHWM`) once it is answered.
//! - **Duration of an invocation**: the event handed out on `/next` → the function's next
//!   `/next` (Lambda's billed duration), and the response latency (→ the `/response` body
//!   received), for `tools/list` and `tools/call` (the three tools in turn). One warm process of
//!   each server; `ROUNDS` rounds of `BATCH` invocations per server and request kind after a
//!   warm-up, the order of the servers and of the kinds rotated every round; each process's CPU
//!   time over every batch, its resident memory after each and its peak at the end.
//!
//! Every answer is checked: status 200, a JSON-RPC result with the request's id, not a tool
//! error, and the content expected (the three tools listed; each call's text). Every request
//! is a 2026-07-28 request (the `_meta` keys and the `MCP-Protocol-Version`, `Mcp-Method` and
//! `Mcp-Name` headers), as all three servers speak that version. Writes one JSON line per
//! measurement to `OUT.jsonl`, the functions' logs to `LOG_DIR/<name>.log`.

use mcp_lambda_test_support::basket::REQUEST_STATE_KEY;
use mcp_lambda_test_support::lambda_runtime::MeasuredFunction as Function;

use std::{fs::File, io::Write as _, path::PathBuf, process::ExitCode, time::Duration};

use base64::Engine as _;
use serde_json::{Value, json};

/// A Function URL event; its body and MCP headers are replaced per invocation.
const EVENT: &str = include_str!("../../events/function_url_tools_call.json");
/// Invocations of each request kind before measuring.
const WARM_UP: usize = 20;
/// The tools every server serves, and the text each call sends.
const TOOLS: [&str; 3] = ["echo", "reverse", "count"];
const TEXT: &str = "Zwölf Boxkämpfer jagen Viktor";
/// pmcp's request-state key: 32 bytes, hex.
const PMCP_KEY: &str = "6d63702d6c616d6264612070656572732062656e6368206b6579203030303031";

/// The request kinds measured.
#[derive(Clone, Copy)]
enum Op {
    ToolsList,
    ToolsCall,
}

impl Op {
    const ALL: [Op; 2] = [Op::ToolsList, Op::ToolsCall];

    fn name(self) -> &'static str {
        match self {
            Op::ToolsList => "tools/list",
            Op::ToolsCall => "tools/call",
        }
    }
}

/// A Function URL event carrying one 2026-07-28 request to `path`.
fn mcp_event(path: &str, id: u64, method: &str, mut params: Value) -> String {
    let mut event: Value = serde_json::from_str(EVENT).expect("the event file is JSON");
    event["rawPath"] = path.into();
    event["requestContext"]["http"]["path"] = path.into();
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    event["body"] = body.to_string().into();
    event["isBase64Encoded"] = false.into();
    let headers = event["headers"]
        .as_object_mut()
        .expect("the event has headers");
    headers.remove("content-length");
    headers.remove("mcp-name");
    headers.insert("mcp-method".into(), method.into());
    if let Some(name) = params["name"].as_str() {
        headers.insert("mcp-name".into(), name.into());
    }
    event.to_string()
}

/// The JSON-RPC result answering `id` in a buffered `lambda_http` answer (a JSON body, or an
/// SSE snapshot of one; base64 or not), or why there is none.
fn result_of(body: &[u8], id: u64) -> Result<Value, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    if doc["statusCode"] != 200 {
        return Err(format!("status {}: {}", doc["statusCode"], doc["body"]));
    }
    let text = doc["body"].as_str().unwrap_or_default();
    let text = if doc["isBase64Encoded"] == true {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("body not base64: {e}"))?;
        String::from_utf8(bytes).map_err(|e| format!("body not UTF-8: {e}"))?
    } else {
        text.to_owned()
    };
    let messages: Vec<Value> = if text.trim_start().starts_with('{') {
        vec![serde_json::from_str(&text).map_err(|e| format!("body not JSON: {e}: {text}"))?]
    } else {
        // An SSE stream: one message per `data:` line.
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    };
    let rpc = messages
        .into_iter()
        .find(|m| m["id"] == id)
        .ok_or_else(|| format!("no answer to id {id}: {text}"))?;
    let result = rpc
        .get("result")
        .ok_or_else(|| format!("no result: {rpc}"))?;
    if result["isError"] == true {
        return Err(format!("tool error: {result}"));
    }
    Ok(result.clone())
}

/// What each call is expected to answer.
fn expected(tool: &str) -> String {
    match tool {
        "echo" => TEXT.to_owned(),
        "reverse" => TEXT.chars().rev().collect(),
        _ => TEXT.chars().count().to_string(),
    }
}

/// The string a tool returned, from its text item as each server writes it: mcp-lambda (rmcp)
/// as the text itself, pmcp's `TypedTool` as the value's JSON (`"…"`), turul's derive as
/// `{"output": …}` (and the same in `structuredContent`).
fn returned(result: &Value) -> Option<String> {
    let text = result["content"][0]["text"].as_str()?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::String(s)) => Some(s),
        Ok(Value::Object(o)) => o.get("output")?.as_str().map(str::to_owned),
        _ => Some(text.to_owned()),
    }
}

/// One server under test.
struct Server {
    name: String,
    binary: PathBuf,
}

impl Server {
    /// What the function needs set besides what Lambda sets: mcp-lambda refuses to start on
    /// Lambda without a request-state key and checks the Host (the Function URL's here); pmcp
    /// takes a request-state key too (without one it makes one per process, and warns that a
    /// follow-up on another instance cannot be resumed), and its wrapper binds its background
    /// HTTP server to `PORT` (8080 by default: any free port here, so a start never waits for
    /// the last one's). turul needs nothing.
    fn env(&self) -> Vec<(&'static str, &'static str)> {
        match self.name.as_str() {
            "mcp-lambda" => vec![
                ("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY),
                ("MCP_ALLOWED_HOSTS", "*"),
            ],
            "pmcp" => vec![("PORT", "0"), ("PMCP_REQUEST_STATE_KEY", PMCP_KEY)],
            _ => vec![],
        }
    }

    /// Where the server answers MCP: pmcp's wrapper forwards the path to its server, which
    /// answers at `/`; the others at `/mcp` (turul at any path).
    fn path(&self) -> &'static str {
        if self.name == "pmcp" { "/" } else { "/mcp" }
    }
}

struct Bench {
    servers: Vec<Server>,
    out: File,
    logs: PathBuf,
    next_rpc: u64,
    calls: usize,
}

impl Bench {
    fn record(&mut self, line: Value) -> Result<(), String> {
        writeln!(self.out, "{line}").map_err(|e| e.to_string())
    }

    async fn start(&self, server: usize) -> Result<Function, String> {
        let server = &self.servers[server];
        let log = self.logs.join(format!("{}.log", server.name));
        Function::start(&server.binary, &server.env(), &log).await
    }

    /// One request of `op`, checked: its duration, response latency.
    async fn invoke(
        &mut self,
        function: &mut Function,
        server: usize,
        op: Op,
    ) -> Result<(Duration, Duration), String> {
        self.next_rpc += 1;
        let id = self.next_rpc;
        let path = self.servers[server].path();
        let (event, tool) = match op {
            Op::ToolsList => (mcp_event(path, id, "tools/list", json!({})), None),
            Op::ToolsCall => {
                self.calls += 1;
                let tool = TOOLS[self.calls % TOOLS.len()];
                let key = if tool == "echo" { "message" } else { "text" };
                let params = json!({"name": tool, "arguments": {key: TEXT}});
                (mcp_event(path, id, "tools/call", params), Some(tool))
            }
        };
        let (duration, latency, body) = function.invoke(&event).await?;
        let name = &self.servers[server].name;
        let result = result_of(&body, id).map_err(|e| format!("{name}, {}: {e}", op.name()))?;
        match tool {
            None => {
                let listed: Vec<&str> = result["tools"]
                    .as_array()
                    .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
                    .unwrap_or_default();
                if !TOOLS.iter().all(|t| listed.contains(t)) {
                    return Err(format!(
                        "{name}, tools/list: {listed:?} lacks one of {TOOLS:?}"
                    ));
                }
            }
            Some(tool) => {
                if returned(&result) != Some(expected(tool)) {
                    return Err(format!(
                        "{name}, tools/call {tool}: not {:?}: {result}",
                        expected(tool)
                    ));
                }
            }
        }
        Ok((duration, latency))
    }

    /// `inits` fresh processes of each server, the order rotated every start.
    async fn inits(&mut self, inits: usize) -> Result<(), String> {
        let n = self.servers.len();
        for run in 0..inits {
            for i in 0..n {
                let server = (run + i) % n;
                let mut function = self.start(server).await?;
                let (init, ticks) = function.init().await?;
                let (duration, latency) = self.invoke(&mut function, server, Op::ToolsList).await?;
                let (hwm, _) = function.memory_kib();
                let first_ticks = function.cpu_ticks();
                drop(function);
                let record = json!({
                    "kind": "init",
                    "server": self.servers[server].name,
                    "run": run,
                    "init_ms": init.as_secs_f64() * 1e3,
                    "init_cpu_ticks": ticks,
                    "first_duration_ms": duration.as_secs_f64() * 1e3,
                    "first_latency_ms": latency.as_secs_f64() * 1e3,
                    "first_cpu_ticks": first_ticks,
                    "first_peak_rss_kib": hwm,
                });
                self.record(record)?;
                // Let the page cache and the ports settle between starts.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// One warm process of each server: `rounds` rounds of `batch` invocations per server and
    /// request kind, the orders rotated every round.
    async fn warm(&mut self, rounds: usize, batch: usize) -> Result<(), String> {
        let n = self.servers.len();
        let mut functions = Vec::new();
        for server in 0..n {
            let mut function = self.start(server).await?;
            function.init().await?;
            for op in Op::ALL {
                for _ in 0..WARM_UP {
                    self.invoke(&mut function, server, op).await?;
                }
            }
            functions.push(function);
        }
        for round in 0..rounds {
            for k in 0..Op::ALL.len() {
                let op = Op::ALL[(round + k) % Op::ALL.len()];
                for i in 0..n {
                    let server = (round + i) % n;
                    let function = &mut functions[server];
                    let before = function.cpu_ticks();
                    let (mut durations, mut latencies) = (Vec::new(), Vec::new());
                    for _ in 0..batch {
                        let (d, l) = self.invoke(function, server, op).await?;
                        durations.push(d.as_secs_f64() * 1e3);
                        latencies.push(l.as_secs_f64() * 1e3);
                    }
                    let ticks = functions[server].cpu_ticks().saturating_sub(before);
                    let (_, rss) = functions[server].memory_kib();
                    self.record(json!({
                        "kind": "invoke",
                        "server": self.servers[server].name,
                        "op": op.name(),
                        "round": round,
                        "invocations": batch,
                        "cpu_ticks": ticks,
                        "rss_kib": rss,
                        "duration_ms": durations,
                        "latency_ms": latencies,
                    }))?;
                }
            }
        }
        for (server, function) in functions.iter().enumerate() {
            let (hwm, rss) = function.memory_kib();
            let name = self.servers[server].name.clone();
            self.record(json!({
                "kind": "memory",
                "server": name,
                "peak_rss_kib": hwm,
                "rss_kib": rss,
            }))?;
        }
        Ok(())
    }
}

async fn run(args: &[String]) -> Result<(), String> {
    let [out, logs, inits, rounds, batch, servers @ ..] = args else {
        return Err("usage: OUT.jsonl LOG_DIR INITS ROUNDS BATCH NAME=BINARY...".into());
    };
    let number = |s: &String| s.parse::<usize>().map_err(|e| format!("{s}: {e}"));
    let (inits, rounds, batch) = (number(inits)?, number(rounds)?, number(batch)?);
    let servers = servers
        .iter()
        .map(|s| {
            let (name, binary) = s
                .split_once('=')
                .ok_or_else(|| format!("{s:?} is not NAME=BINARY"))?;
            if !["mcp-lambda", "pmcp", "turul"].contains(&name) {
                return Err(format!("{name}: expected mcp-lambda, pmcp or turul"));
            }
            Ok(Server {
                name: name.to_owned(),
                binary: binary.into(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    if servers.is_empty() {
        return Err("no server to measure".into());
    }
    let mut bench = Bench {
        servers,
        out: File::create(out).map_err(|e| format!("{out}: {e}"))?,
        logs: logs.into(),
        next_rpc: 0,
        calls: 0,
    };
    bench.inits(inits).await?;
    bench.warm(rounds, batch).await?;
    bench.record(json!({"kind": "done"}))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench_lambda_peers: {message}");
            ExitCode::FAILURE
        }
    }
}
