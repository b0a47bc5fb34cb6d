//! The runner of the hostile tests: requests written byte for byte, the answers each case
//! expects, the raw-TCP exchange that sends a request and parses what comes back, the check of
//! one case and of a table, and the basket servers the cases run against.

use std::{
    process::{Child, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::support::basket::{self, Server, free_port};

pub const VERSION: &str = "2026-07-28";
pub const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
/// The read timeout the catalogue servers run with (`MCP_READ_TIMEOUT_SECS`).
pub const READ_TIMEOUT_SECS: u64 = 2;
/// No single exchange may take longer than this.
pub const HANG: Duration = Duration::from_secs(15);

// ---------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------

/// One HTTP/1.1 request, written byte for byte.
#[derive(Clone)]
pub struct Req {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// Send these bytes instead (framing cases).
    pub raw: Option<Vec<u8>>,
    /// Add `Content-Length` (on unless a case frames the body itself).
    pub length: bool,
}

impl Req {
    pub fn new(method: &str, target: &str) -> Self {
        Self {
            method: method.into(),
            target: target.into(),
            headers: vec![("Host".into(), b"127.0.0.1".to_vec())],
            body: Vec::new(),
            raw: None,
            length: true,
        }
    }

    /// Replaces every `name` header with one `value`.
    pub fn set(self, name: &str, value: &str) -> Self {
        self.set_bytes(name, value.as_bytes())
    }

    pub fn set_bytes(mut self, name: &str, value: &[u8]) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.into(), value.to_vec()));
        self
    }

    /// Adds one more `name` header.
    pub fn add(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.as_bytes().to_vec()));
        self
    }

    pub fn drop(mut self, name: &str) -> Self {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    pub fn method(mut self, method: &str) -> Self {
        self.method = method.into();
        self
    }

    pub fn target(mut self, target: &str) -> Self {
        self.target = target.into();
        self
    }

    pub fn unframed(mut self) -> Self {
        self.length = false;
        self
    }

    pub fn bytes(&self, close: bool) -> Vec<u8> {
        if let Some(raw) = &self.raw {
            return raw.clone();
        }
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.target).into_bytes();
        for (k, v) in &self.headers {
            out.extend_from_slice(k.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v);
            out.extend_from_slice(b"\r\n");
        }
        if self.length {
            out.extend_from_slice(format!("Content-Length: {}\r\n", self.body.len()).as_bytes());
        }
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }
}

/// Literal bytes on the wire.
pub fn raw(bytes: impl Into<Vec<u8>>) -> Req {
    Req {
        raw: Some(bytes.into()),
        ..Req::new("POST", "/mcp")
    }
}

/// A well-formed 2026-07-28 request: `params` gets the `_meta`, the headers
/// copy the method and the name.
pub fn rpc(method: &str, params: Value) -> Req {
    rpc_with_id(json!(1), method, params)
}

pub fn rpc_with_id(id: Value, method: &str, mut params: Value) -> Req {
    params["_meta"] = serde_json::from_str(META).unwrap();
    let mut req = mcp_headers(method);
    if let Some(name) = params
        .get("name")
        .or(params.get("uri"))
        .and_then(Value::as_str)
    {
        req = req.set("Mcp-Name", name);
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    req.body(body.to_string())
}

/// POST /mcp with the headers of a modern `method` request and no body yet.
pub fn mcp_headers(method: &str) -> Req {
    Req::new("POST", "/mcp")
        .set("Content-Type", "application/json")
        .set("Accept", "application/json, text/event-stream")
        .set("MCP-Protocol-Version", VERSION)
        .set("Mcp-Method", method)
}

/// `tools/list` headers around any body.
pub fn list_body(body: impl Into<Vec<u8>>) -> Req {
    mcp_headers("tools/list").body(body)
}

/// A `tools/list` body with `params` (a JSON object's members, `_meta` added)
/// and `extra` top-level members, written as text so keys may repeat.
pub fn list_text(params: &str, extra: &str) -> String {
    let params = if params.is_empty() {
        format!(r#"{{"_meta":{META}}}"#)
    } else {
        format!(r#"{{"_meta":{META},{params}}}"#)
    };
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{params}{extra}}}"#)
}

/// A `tools/list` body whose `_meta` is exactly `meta`.
pub fn list_meta(meta: &str) -> Req {
    list_body(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{meta}}}}}"#
    ))
}

/// A `tools/call` of `tool` with `arguments` given as JSON text.
pub fn call_text(tool: &str, arguments: &str) -> Req {
    mcp_headers("tools/call").set("Mcp-Name", tool).body(format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{META},"name":"{tool}","arguments":{arguments}}}}}"#
    ))
}

pub fn call(tool: &str, arguments: Value) -> Req {
    rpc("tools/call", json!({"name": tool, "arguments": arguments}))
}

/// A request for a 2025-era client: no `_meta`, no MCP headers.
pub fn legacy(body: Value) -> Req {
    Req::new("POST", "/mcp")
        .set("Content-Type", "application/json")
        .body(body.to_string())
}

pub fn nested(depth: usize, open: &str, close: &str, core: &str) -> String {
    format!("{}{core}{}", open.repeat(depth), close.repeat(depth))
}

// ---------------------------------------------------------------------------
// Expected answers
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub enum Expect {
    /// A JSON-RPC error: status, code, and the `id` echoed (`None`: absent).
    Error {
        status: u16,
        code: i64,
        id: Option<Value>,
    },
    /// 200 with a JSON-RPC result (not a tool error) for `id`.
    Result(Value),
    /// 200 with a tool result that has `isError: true`.
    ToolError,
    /// This status; the body is not JSON-RPC (plain text or empty).
    Status(u16),
    /// 401/403 with a `WWW-Authenticate: Bearer` challenge carrying `error`.
    Challenge(u16, Option<&'static str>),
    /// The server closes the connection without answering.
    Closed,
}

pub fn err(status: u16, code: i64) -> Expect {
    Expect::Error {
        status,
        code,
        id: Some(json!(1)),
    }
}

pub fn err_no_id(status: u16, code: i64) -> Expect {
    Expect::Error {
        status,
        code,
        id: None,
    }
}

pub fn ok() -> Expect {
    Expect::Result(json!(1))
}

pub struct Case {
    pub name: &'static str,
    pub req: Req,
    pub expect: Expect,
}

pub fn case(name: &'static str, req: Req, expect: Expect) -> Case {
    Case { name, req, expect }
}

// ---------------------------------------------------------------------------
// The wire
// ---------------------------------------------------------------------------

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    pub fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        text.chars().take(300).collect()
    }
}

#[derive(Debug)]
pub enum Outcome {
    Replies(Vec<Reply>),
    /// EOF (or reset) before any response byte.
    Closed,
    /// Nothing within the deadline.
    Hung,
}

/// Writes `bytes` (concurrently with reading, so an early answer to a large
/// body is not lost) and reads until the server closes.
pub async fn exchange(addr: std::net::SocketAddr, bytes: Vec<u8>, deadline: Duration) -> Outcome {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let write = tokio::spawn(async move {
        let _ = writer.write_all(&bytes).await;
        // Keep the write half open: closing it would end the request early.
        tokio::time::sleep(deadline).await;
        drop(writer);
    });
    let mut received = Vec::new();
    let read = tokio::time::timeout(deadline, async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    write.abort();
    if read.is_err() {
        return Outcome::Hung;
    }
    if received.is_empty() {
        return Outcome::Closed;
    }
    Outcome::Replies(parse_replies(&received))
}

/// Splits a byte stream into HTTP/1.1 responses, skipping 1xx interim ones.
pub fn parse_replies(mut data: &[u8]) -> Vec<Reply> {
    let mut replies = Vec::new();
    while let Some(end) = find(data, b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&data[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let mut rest = &data[end + 4..];
        let get = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let body = if (100..200).contains(&status) {
            Vec::new()
        } else if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            let mut body = Vec::new();
            while let Some(line_end) = find(rest, b"\r\n") {
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&rest[..line_end])
                        .split(';')
                        .next()
                        .unwrap()
                        .trim(),
                    16,
                )
                .unwrap_or(0);
                rest = &rest[line_end + 2..];
                if size == 0 {
                    rest = &rest[find(rest, b"\r\n").map_or(rest.len(), |e| e + 2)..];
                    break;
                }
                let take = size.min(rest.len());
                body.extend_from_slice(&rest[..take]);
                rest = &rest[(take + 2).min(rest.len())..];
            }
            body
        } else if let Some(length) = get("content-length").and_then(|v| v.parse::<usize>().ok()) {
            let take = length.min(rest.len());
            let body = rest[..take].to_vec();
            rest = &rest[take..];
            body
        } else {
            let body = rest.to_vec();
            rest = &[];
            body
        };
        if !(100..200).contains(&status) {
            replies.push(Reply {
                status,
                headers,
                body,
            });
        }
        data = rest;
    }
    replies
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Sends one case and checks its answer; `Err` says what was wrong.
pub async fn run(addr: std::net::SocketAddr, case: &Case) -> Result<(), String> {
    let outcome = exchange(addr, case.req.bytes(true), HANG).await;
    let reply = match (outcome, &case.expect) {
        (Outcome::Hung, _) => return Err(format!("no answer within {HANG:?}")),
        (Outcome::Closed, Expect::Closed) => return Ok(()),
        (Outcome::Closed, _) => return Err("connection closed without an answer".into()),
        (Outcome::Replies(replies), _) => {
            let mut replies = replies.into_iter();
            let reply = replies.next().ok_or("no parsable response")?;
            if replies.next().is_some() {
                return Err("more than one final response".into());
            }
            reply
        }
    };
    if reply.status >= 500 {
        return Err(format!("{} (5xx): {}", reply.status, reply.text()));
    }
    let status_is = |want: u16| {
        if reply.status == want {
            Ok(())
        } else {
            Err(format!(
                "status {} (want {want}): {}",
                reply.status,
                reply.text()
            ))
        }
    };
    match &case.expect {
        Expect::Closed => Err(format!("answered {}: {}", reply.status, reply.text())),
        Expect::Status(want) => status_is(*want),
        Expect::Error { status, code, id } => {
            status_is(*status)?;
            let body = reply
                .json()
                .ok_or_else(|| format!("not JSON: {}", reply.text()))?;
            if !reply
                .header("content-type")
                .is_some_and(|v| v.starts_with("application/json"))
            {
                return Err(format!("content-type {:?}", reply.header("content-type")));
            }
            if body["jsonrpc"] != "2.0" || body.get("result").is_some() {
                return Err(format!("not a JSON-RPC error: {body}"));
            }
            if body["error"]["code"] != *code {
                return Err(format!(
                    "code {} (want {code}): {body}",
                    body["error"]["code"]
                ));
            }
            if !body["error"]["message"].is_string() {
                return Err(format!("no message: {body}"));
            }
            if body.get("id") != id.as_ref() {
                return Err(format!("id {:?} (want {id:?})", body.get("id")));
            }
            Ok(())
        }
        Expect::Result(id) => {
            status_is(200)?;
            let body = reply
                .json()
                .ok_or_else(|| format!("not JSON: {}", reply.text()))?;
            if body.get("error").is_some() || !body["result"].is_object() {
                return Err(format!("not a result: {}", reply.text()));
            }
            if body["result"]["isError"] == true {
                return Err(format!("a tool error: {}", reply.text()));
            }
            if body["id"] != *id {
                return Err(format!("id {} (want {id})", body["id"]));
            }
            Ok(())
        }
        Expect::ToolError => {
            status_is(200)?;
            let body = reply
                .json()
                .ok_or_else(|| format!("not JSON: {}", reply.text()))?;
            if body["result"]["isError"] != true {
                return Err(format!("not a tool error: {}", reply.text()));
            }
            Ok(())
        }
        Expect::Challenge(want, error) => {
            status_is(*want)?;
            let challenge = reply
                .header("www-authenticate")
                .ok_or("no WWW-Authenticate")?;
            if !challenge.starts_with("Bearer ") || !challenge.contains("resource_metadata=") {
                return Err(format!("challenge {challenge:?}"));
            }
            match error {
                Some(e) if !challenge.contains(&format!("error=\"{e}\"")) => {
                    Err(format!("challenge {challenge:?} lacks error={e}"))
                }
                None if challenge.contains("error=") => {
                    Err(format!("challenge {challenge:?} has an error"))
                }
                _ => Ok(()),
            }
        }
    }
}

/// Runs a table; fails listing every case that did not answer as expected.
pub async fn run_table(addr: std::net::SocketAddr, table: &[Case]) -> usize {
    let mut names = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for case in table {
        assert!(names.insert(case.name), "case name {} repeats", case.name);
        if let Err(why) = run(addr, case).await {
            failures.push(format!("  {}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
    table.len()
}

/// A good request on a fresh connection still gets a 200.
pub async fn still_serving(addr: std::net::SocketAddr) {
    let outcome = exchange(addr, rpc("tools/list", json!({})).bytes(true), HANG).await;
    match outcome {
        Outcome::Replies(r) if r[0].status == 200 => {}
        other => panic!("the server no longer answers a good request: {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Connections kept open
// ---------------------------------------------------------------------------

/// Opens a connection and writes `bytes`, then leaves it open.
pub async fn dangle(addr: std::net::SocketAddr, bytes: &[u8]) -> (TcpStream, Instant) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let since = Instant::now();
    stream.write_all(bytes).await.unwrap();
    (stream, since)
}

/// Reads until the server closes; returns what came and how long after `since`.
pub async fn wait_closed((stream, since): &mut (TcpStream, Instant)) -> (Vec<u8>, Duration) {
    let start = *since;
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(HANG, stream.read(&mut buf)).await {
            Err(_) => panic!("the server kept a slow connection open for {HANG:?}"),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    }
    (received, start.elapsed())
}

/// `elapsed` is the catalogue servers' read timeout, give or take.
pub fn within_read_timeout(elapsed: Duration) {
    let timeout = Duration::from_secs(READ_TIMEOUT_SECS);
    assert!(
        elapsed >= timeout - Duration::from_millis(300)
            && elapsed <= timeout + Duration::from_secs(3),
        "cut off after {elapsed:?}, the read timeout is {timeout:?}"
    );
}

// ---------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------

/// The basket binary as the catalogue runs against it: a short read timeout,
/// two tools a page, quiet logs; `extra` on top.
pub async fn catalogue_server(extra: &[(&str, &str)]) -> Server {
    let timeout = READ_TIMEOUT_SECS.to_string();
    let mut env = vec![
        ("MCP_READ_TIMEOUT_SECS", timeout.as_str()),
        ("MCP_PAGE_SIZE", "2"),
        ("MCP_LOG", "error"),
    ];
    env.extend_from_slice(extra);
    Server::start(&env).await
}

/// A basket binary started by [`bare`], killed when dropped.
pub struct Bare {
    pub child: Child,
    pub addr: std::net::SocketAddr,
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The basket binary with `env`, ready once it answers anything (its /healthz
/// needs the secret too); for the CloudFront origin-protection cases.
pub async fn bare(env: &[(&str, &str)]) -> Bare {
    let addr = free_port();
    let bind = addr.to_string();
    let mut vars = vec![("MCP_BIND", bind.as_str()), ("MCP_LOG", "error")];
    vars.extend_from_slice(env);
    let child = basket::spawn(basket::binary(), &vars, Stdio::null(), Stdio::inherit());
    let server = Bare { child, addr };
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if TcpStream::connect(addr).await.is_ok() {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the basket binary did not listen on {addr}");
}
