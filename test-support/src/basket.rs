//! The basket binary on a loopback port, driven over real HTTP with MCP
//! 2026-07-28 requests, optionally as a bearer-token user; and [`spawn`], the one
//! way every test starts a server process, with a clean environment.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

pub const VERSION: &str = "2026-07-28";

/// A fixed test key, so the server does not generate one and warn about it.
pub const REQUEST_STATE_KEY: &str = "aw9C5Pf6gzD8Za8qaDXAJvlBHm0BKpbS1aXWFQoBUpE=";

/// The basket binary (basket/), built from this tree by the first call, beside this test's own
/// executable. It is another package's binary, which cargo builds for no test of this one
/// (`CARGO_BIN_EXE_*` names only the test's own package's), so this runs `cargo build
/// --workspace --bin basket --example hello`: with an example, the features the test command's
/// `cargo test --workspace --all-targets` resolves (the dev-dependencies' unified in), so there
/// it is a no-op instead of a second build of the library.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        // `<target dir>/<profile>/deps/<this test>`: the basket goes to `<target dir>/<profile>`.
        let exe = std::env::current_exe().expect("the test's own path");
        let profile = exe.parent().and_then(Path::parent).expect("a target dir");
        let mut build = crate::cargo();
        build
            .args([
                "build",
                "--quiet",
                "--workspace",
                "--bin",
                "basket",
                "--example",
                "hello",
            ])
            .arg("--target-dir")
            .arg(profile.parent().expect("a target dir"));
        if !cfg!(debug_assertions) {
            build.arg("--release");
        }
        let status = build.status().expect("running cargo build --bin basket");
        assert!(status.success(), "cargo build --bin basket failed");
        profile.join("basket")
    })
}

/// Starts `binary` (the basket, or an example built on this crate) with a clean environment:
/// every `MCP_*`, `AWS_*` and `BENCH_*` variable of the test's own environment is removed, so a
/// shell or CI job cannot change what the process reads; then `env` is set in order (a later
/// pair wins over an earlier one). Stdin is closed. Every test and benchmark starts its servers
/// here.
pub fn spawn(binary: &Path, env: &[(&str, &str)], stdout: Stdio, stderr: Stdio) -> Child {
    let mut command = Command::new(binary);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|name| {
            ["MCP_", "AWS_", "BENCH_"]
                .iter()
                .any(|p| name.starts_with(p))
        }) {
            command.env_remove(name);
        }
    }
    command
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {}: {e}", binary.display()))
}

/// How a server process came up, as [`wait_healthy`] saw it.
#[derive(Debug)]
pub enum Ready {
    /// `GET /healthz` answered 200.
    Healthy,
    /// The process exited first.
    Exited(ExitStatus),
    /// Neither, within the time allowed.
    Silent,
}

/// Polls `http://{addr}/healthz` every 50 ms until it answers 200, `child` exits, or `within`
/// has passed.
pub async fn wait_healthy(child: &mut Child, addr: SocketAddr, within: Duration) -> Ready {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Ready::Exited(status);
        }
        let request = http::Request::get(format!("http://{addr}/healthz"))
            .body(Full::new(Bytes::new()))
            .unwrap();
        if let Ok(response) = client.request(request).await
            && response.status() == 200
        {
            return Ready::Healthy;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ready::Silent
}

/// The basket binary, killed when dropped.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    client: Client<HttpConnector, Full<Bytes>>,
    /// Sent as `Authorization: Bearer …` when set.
    pub token: std::sync::Mutex<Option<String>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts the binary with `env` on a free loopback port and waits until `/healthz` answers.
    pub async fn start(env: &[(&str, &str)]) -> Server {
        Self::start_with(env, Stdio::inherit()).await
    }

    /// [`start`](Self::start), with the child's stderr sent to `stderr` (`Stdio::piped()` keeps
    /// it for [`exit`](Self::exit)); `MCP_LOG` in `env` overrides the default `warn`.
    pub async fn start_with(env: &[(&str, &str)], stderr: Stdio) -> Server {
        Self::start_with_output(env, Stdio::null(), stderr).await
    }

    /// [`start_with`](Self::start_with), with the child's stdout sent to `stdout` too (piped:
    /// read it with [`stdout`](Self::stdout) once the server has exited).
    pub async fn start_with_output(env: &[(&str, &str)], stdout: Stdio, stderr: Stdio) -> Server {
        let mut stdout = Some(stdout);
        let mut stderr = Some(stderr);
        let client = Client::builder(TokioExecutor::new()).build_http();
        // The port is free when picked but could be taken before the child binds it: retry.
        for _ in 0..3 {
            let addr = free_port();
            let bind = addr.to_string();
            let mut vars = vec![
                ("MCP_BIND", bind.as_str()),
                ("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY),
                ("MCP_LOG", "warn"),
            ];
            vars.extend_from_slice(env);
            let child = spawn(
                binary(),
                &vars,
                stdout.take().unwrap_or_else(Stdio::null),
                stderr.take().unwrap_or_else(Stdio::null),
            );
            let mut server = Server {
                child,
                addr,
                client: client.clone(),
                token: std::sync::Mutex::new(None),
            };
            match wait_healthy(&mut server.child, addr, Duration::from_secs(20)).await {
                Ready::Healthy => return server,
                Ready::Exited(status) => eprintln!("basket exited early with {status}"),
                Ready::Silent => {}
            }
        }
        panic!("the basket binary did not become healthy on any of 3 ports");
    }

    /// Sends one MCP request that must answer 200 and returns the JSON-RPC response.
    pub async fn rpc(&self, method: &str, name: Option<&str>, params: Value) -> Value {
        let (status, _, json) = self.send(method, name, params).await;
        assert_eq!(status, 200, "{method} {name:?} answered {status}: {json}");
        json
    }

    /// Reads a resource (`Mcp-Name` is the URI) and returns the JSON-RPC response.
    pub async fn read(&self, uri: &str) -> Value {
        self.rpc("resources/read", Some(uri), json!({ "uri": uri }))
            .await
    }

    /// Sends one MCP request with `Mcp-Name: name` when given, whatever the answer's status;
    /// returns the status, the headers and the JSON-RPC response (from an SSE answer, the
    /// last event's).
    pub async fn send(
        &self,
        method: &str,
        name: Option<&str>,
        mut params: Value,
    ) -> (http::StatusCode, http::HeaderMap, Value) {
        // `_meta` the caller gave (capabilities, a progress token) is kept; the rest is filled in.
        let mut meta = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        if let Some(given) = params.get("_meta").and_then(Value::as_object) {
            for (key, value) in given {
                meta[key] = value.clone();
            }
        }
        params["_meta"] = meta;
        let request = self.request(json!(7), method, name, params);
        let response = self.client.request(request).await.expect("request failed");
        let status = response.status();
        let headers = response.headers().clone();
        let sse = headers
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        let json: Value = if sse {
            // The last `data:` line carries the response.
            text.lines()
                .rev()
                .filter_map(|line| line.strip_prefix("data:"))
                .find(|data| !data.trim().is_empty())
                .map(|data| serde_json::from_str(data.trim()).unwrap())
                .unwrap_or_else(|| panic!("no data in SSE answer to {method}: {text}"))
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("answer to {method} is not JSON ({e}): {text}"))
        };
        assert_eq!(json["id"], 7, "response id for {method}: {json}");
        (status, headers, json)
    }

    /// Sends one MCP request and returns its status and body as they came, unread: for a
    /// refusal, whose body is no JSON-RPC response.
    pub async fn status_of(&self, method: &str, params: Value) -> (http::StatusCode, String) {
        let mut params = params;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let request = self.request(json!(7), method, None, params);
        let response = self.client.request(request).await.expect("request failed");
        let status = response.status();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM: the server drains and exits.
    pub fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("running kill");
        assert!(status.success(), "kill -TERM failed");
    }

    /// Waits up to `within` for the process to exit: its status, how long it took, and its
    /// stderr when it was piped ([`start_with`](Self::start_with)).
    pub async fn exit(&mut self, within: Duration) -> (ExitStatus, Duration, String) {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut log = String::new();
                if let Some(mut stderr) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut log);
                }
                return (status, started.elapsed(), log);
            }
            assert!(
                started.elapsed() < within,
                "the server did not exit within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// What the server wrote on stdout (when started with it piped), once it has exited.
    pub fn stdout(&mut self) -> String {
        let mut out = String::new();
        if let Some(mut stdout) = self.child.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
        }
        out
    }

    /// The library's request builder (`mcp_lambda::testing::request`), addressed to this
    /// process, with `Mcp-Name: name` only when given and the token when one is set.
    fn request(
        &self,
        id: Value,
        method: &str,
        name: Option<&str>,
        params: Value,
    ) -> http::Request<Full<Bytes>> {
        let (mut parts, body) = mcp_lambda::testing::request(id, method, params).into_parts();
        parts.uri = format!("http://{}/mcp", self.addr).parse().unwrap();
        parts.headers.remove(http::header::HOST);
        parts.headers.remove("mcp-name");
        if let Some(name) = name {
            parts.headers.insert("mcp-name", name.parse().unwrap());
        }
        if let Some(token) = self.token.lock().unwrap().as_deref() {
            let value = format!("Bearer {token}").parse().unwrap();
            parts.headers.insert(http::header::AUTHORIZATION, value);
        }
        http::Request::from_parts(parts, body)
    }

    /// Opens a `subscriptions/listen` stream for `filter` with JSON-RPC id `id`.
    pub async fn listen(&self, id: Value, filter: Value) -> ListenStream {
        let request = self.request(
            id.clone(),
            "subscriptions/listen",
            None,
            json!({ "notifications": filter }),
        );
        let response = self.client.request(request).await.expect("listen failed");
        assert_eq!(
            response.status(),
            200,
            "listen answered {}",
            response.status()
        );
        ListenStream::new(id, response.into_body())
    }

    /// Calls a tool and returns its `result`.
    pub async fn call(&self, tool: &str, arguments: Value) -> Value {
        let response = self
            .rpc(
                "tools/call",
                Some(tool),
                json!({ "name": tool, "arguments": arguments }),
            )
            .await;
        assert!(
            response.get("error").is_none(),
            "{tool} gave a JSON-RPC error: {response}"
        );
        response["result"].clone()
    }

    /// Calls a tool that must succeed; returns its `structuredContent`, checked against the text.
    pub async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone()).await;
        assert_ne!(
            result["isError"], true,
            "{tool} {arguments} failed: {result}"
        );
        let structured = result["structuredContent"].clone();
        assert!(
            structured.is_object(),
            "{tool} has no structuredContent: {result}"
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        let from_text: Value = serde_json::from_str(text).unwrap();
        assert_eq!(from_text, structured, "text and structuredContent agree");
        structured
    }

    /// Calls a tool that must fail as a tool result; returns its text.
    pub async fn tool_error(&self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments.clone()).await;
        assert_eq!(
            result["isError"], true,
            "{tool} {arguments} should fail: {result}"
        );
        result["content"][0]["text"].as_str().unwrap().to_owned()
    }
}

/// `count` concurrent `add_item` calls of one TEA each on basket `id`, every one succeeding: the
/// lost-update tests (in memory and on DynamoDB) race them.
pub async fn add_one_tea_concurrently(server: &std::sync::Arc<Server>, id: &Value, count: usize) {
    let calls: Vec<_> = (0..count)
        .map(|_| {
            let (server, id) = (server.clone(), id.clone());
            tokio::spawn(async move {
                server
                    .ok(
                        "add_item",
                        json!({ "basket_id": id, "sku": "TEA", "quantity": 1 }),
                    )
                    .await;
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
}

/// An open `subscriptions/listen` stream over real HTTP.
pub type ListenStream = super::sse::ListenStream<hyper::body::Incoming>;

pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("no free loopback port")
}

pub fn items(basket: &Value) -> Vec<(String, u64)> {
    basket["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| {
            (
                line["sku"].as_str().unwrap().to_owned(),
                line["quantity"].as_u64().unwrap(),
            )
        })
        .collect()
}
