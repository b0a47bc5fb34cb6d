//! Test your server without a socket (feature `test-util`).
//!
//! [`TestClient`] sends MCP requests through the whole service in process — every check of the
//! front, auth with a token when it is on, rmcp, your handler — and reads the JSON or SSE answer,
//! as axum's `TestClient` does for routers. Add the feature for tests only:
//!
//! ```toml
//! [dev-dependencies]
//! mcp-lambda = { version = "0.1", features = ["test-util"] }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use http_body_util::Full;
use rmcp::ServerHandler;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use crate::app::Server;
use crate::http::{McpService, in_process};

/// The path and host a [`request`] is addressed to: the local server's defaults.
const DEFAULT_PATH: &str = "/mcp";
const DEFAULT_HOST: &str = "127.0.0.1:3000";

/// A well-formed 2026-07-28 MCP request, as a client sends it: `POST /mcp` to
/// `127.0.0.1:3000` (the local defaults) with `Content-Type`, `Accept`, `MCP-Protocol-Version`,
/// `Mcp-Method`, `Mcp-Name` (from the params' `name` or `uri`) and a `_meta` with the protocol
/// fields (`protocolVersion`, `clientCapabilities` declaring none): a `_meta` of
/// the params' own (a `progressToken`, say) keeps what it names and gains the fields it lacks.
/// For tests that change part of it before sending it ([`TestClient::send`]) or send it over a
/// socket.
///
/// ```
/// # use http_body_util::BodyExt as _;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let request = mcp_lambda::testing::request(
///     serde_json::json!(7),
///     "tools/call",
///     serde_json::json!({"name": "hello", "arguments": {}, "_meta": {"progressToken": 1}}),
/// );
/// assert_eq!(request.headers()["mcp-name"], "hello");
/// let body = request.into_body().collect().await.unwrap().to_bytes();
/// let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
/// let meta = &body["params"]["_meta"];
/// assert_eq!(meta["progressToken"], 1);
/// assert!(meta["io.modelcontextprotocol/protocolVersion"].is_string(), "{meta}");
/// # });
/// ```
pub fn request(id: Value, method: &str, params: Value) -> http::Request<Full<Bytes>> {
    build(DEFAULT_PATH, DEFAULT_HOST, id, method, params, json!({}))
}

fn build(
    path: &str,
    host: &str,
    id: Value,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> http::Request<Full<Bytes>> {
    if !params.is_object() {
        params = json!({});
    }
    let protocol = in_process::meta(capabilities);
    match (params.get_mut("_meta"), protocol) {
        (Some(Value::Object(given)), Value::Object(protocol)) => {
            for (field, value) in protocol {
                given.entry(field).or_insert(value);
            }
        }
        // Not an object: a test of a malformed `_meta`, sent as it is.
        (Some(_), _) => {}
        (None, protocol) => params["_meta"] = protocol,
    }
    in_process::request(path, host, id, method, params).expect("a well-formed request")
}

/// An MCP client that calls a [`Server`] in process.
///
/// ```
/// use mcp_lambda::rmcp::{self, ServerHandler, handler::server::router::tool::ToolRouter};
/// use mcp_lambda::rmcp::{tool, tool_handler, tool_router};
/// use mcp_lambda::testing::TestClient;
///
/// #[derive(Clone)]
/// struct Hello {
///     tool_router: ToolRouter<Self>,
/// }
///
/// #[tool_router]
/// impl Hello {
///     #[tool(description = "Say hello.")]
///     fn hello(&self) -> String {
///         "Hello!".into()
///     }
/// }
///
/// #[tool_handler(router = self.tool_router)]
/// impl ServerHandler for Hello {}
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let server = mcp_lambda::App::open(mcp_lambda::Config::local_default())
///     .await
///     .unwrap()
///     .server(Hello { tool_router: Hello::tool_router() });
/// let client = TestClient::new(&server);
/// let answer = client.call_tool("hello", serde_json::json!({})).await;
/// assert_eq!(answer.result()["content"][0]["text"], "Hello!");
/// # }
/// ```
pub struct TestClient<H> {
    service: McpService<H>,
    token: Option<String>,
    capabilities: Value,
    next_id: AtomicU64,
}

impl<H> std::fmt::Debug for TestClient<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

impl<H: ServerHandler> TestClient<H> {
    /// A client of `server`, anonymous, declaring no client capabilities.
    pub fn new(server: &Server<H>) -> Self {
        Self {
            service: server.service(),
            token: None,
            capabilities: json!({}),
            next_id: AtomicU64::new(1),
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request (auth on).
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Declares `capabilities` (the `clientCapabilities` of every request's `_meta`), e.g.
    /// `{"extensions": {"io.modelcontextprotocol/tasks": {}}}` to get tools as tasks.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Sends `method` with `params` (an object; its `_meta` gains the protocol fields it lacks, see
    /// [`request`]) and reads the whole
    /// answer. A listen stream is read until it ends: use [`listen`](Self::listen) to read one
    /// message by message.
    pub async fn request(&self, method: &str, params: Value) -> TestResponse {
        self.open(method, params).await.read_all().await
    }

    /// `tools/call` of `name` with `arguments`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> TestResponse {
        self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    /// `tools/list` (the first page).
    pub async fn list_tools(&self) -> TestResponse {
        self.request("tools/list", json!({})).await
    }

    /// `resources/read` of `uri`.
    pub async fn read_resource(&self, uri: &str) -> TestResponse {
        self.request("resources/read", json!({ "uri": uri })).await
    }

    /// `subscriptions/listen` with `filter` (e.g. `{"resourceSubscriptions": [uri]}`): the
    /// stream, read message by message as the server sends it.
    pub async fn listen(&self, filter: Value) -> TestStream {
        self.open("subscriptions/listen", json!({ "notifications": filter }))
            .await
    }

    /// The request [`request`](Self::request) would send, to change before sending it with
    /// [`send`](Self::send).
    pub fn build(&self, method: &str, params: Value) -> http::Request<Full<Bytes>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let host = self.service.host_for_internal_requests();
        build(
            self.service.path(),
            &host,
            json!(id),
            method,
            params,
            self.capabilities.clone(),
        )
    }

    /// Sends `request` as it is (with the client's token, unless it carries an
    /// `Authorization` of its own) and reads the whole answer.
    pub async fn send(&self, request: http::Request<Full<Bytes>>) -> TestResponse {
        self.stream(request).await.read_all().await
    }

    async fn open(&self, method: &str, params: Value) -> TestStream {
        self.stream(self.build(method, params)).await
    }

    async fn stream(&self, mut request: http::Request<Full<Bytes>>) -> TestStream {
        if let Some(token) = &self.token
            && !request.headers().contains_key(header::AUTHORIZATION)
        {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .expect("a token is header-safe text");
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        let response = self
            .service
            .clone()
            .oneshot(request)
            .await
            .unwrap_or_else(|never| match never {});
        let (parts, body) = response.into_parts();
        TestStream {
            messages: in_process::Messages::new(parts.headers.get(header::CONTENT_TYPE), body),
            status: parts.status,
            headers: parts.headers,
        }
    }
}

/// A whole answer: its status, headers and JSON-RPC messages (one for JSON, every event for
/// SSE: progress notifications, then the response).
#[derive(Debug, Clone)]
pub struct TestResponse {
    /// The HTTP status.
    pub status: StatusCode,
    /// The HTTP headers.
    pub headers: HeaderMap,
    /// The messages, in order; an answer that is not JSON (a plain-text refusal) is one
    /// JSON string.
    pub messages: Vec<Value>,
}

impl TestResponse {
    /// The last message: the JSON-RPC response.
    ///
    /// # Panics
    ///
    /// When the answer carried no message.
    pub fn json(&self) -> &Value {
        self.messages
            .last()
            .unwrap_or_else(|| panic!("the answer ({}) carried no message", self.status))
    }

    /// The response's `result`.
    ///
    /// # Panics
    ///
    /// When the answer is an error, showing it.
    pub fn result(&self) -> &Value {
        let json = self.json();
        json.get("result")
            .unwrap_or_else(|| panic!("expected a result, got ({}) {json}", self.status))
    }

    /// The response's `error` (`code`, `message`, `data`).
    ///
    /// # Panics
    ///
    /// When the answer is a result, showing it.
    pub fn error(&self) -> &Value {
        let json = self.json();
        json.get("error")
            .unwrap_or_else(|| panic!("expected an error, got ({}) {json}", self.status))
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

type BoxedBody = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;

/// An answer read message by message, as a listen stream is.
pub struct TestStream {
    /// The HTTP status.
    pub status: StatusCode,
    /// The HTTP headers.
    pub headers: HeaderMap,
    messages: in_process::Messages<BoxedBody>,
}

impl std::fmt::Debug for TestStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestStream")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl TestStream {
    /// The next message; `None` once the answer has ended.
    pub async fn next(&mut self) -> Option<Value> {
        self.messages.next().await
    }

    /// Every message to the end of the answer.
    pub async fn read_all(mut self) -> TestResponse {
        let mut messages = Vec::new();
        while let Some(message) = self.next().await {
            messages.push(message);
        }
        TestResponse {
            status: self.status,
            headers: self.headers,
            messages,
        }
    }
}
