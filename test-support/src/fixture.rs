//! A small MCP server (`Fixture`) and request builders that call the service
//! in-process, exactly as the local server and Lambda do.

use std::collections::HashMap;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use mcp_lambda::{App, Config, McpService};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// Five no-argument tools; `echo_0` answers its own name.
#[derive(Clone)]
pub struct Fixture;

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fixture", "1.2.3"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            (0..5)
                .map(|i| tool(format!("echo_{i}"), "Answers with its own name.", json!({})))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !request.name.starts_with("echo_") {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(request.name.to_string()),
        ])))
    }
}

/// A tool of a test's handler: `name`, `description`, and an object schema whose `properties`
/// are `properties`.
pub fn tool(name: impl Into<String>, description: &'static str, properties: Value) -> Tool {
    let schema = json!({"type": "object", "properties": properties});
    let Value::Object(schema) = schema else {
        unreachable!("json! of an object is an object")
    };
    Tool::new(name.into(), description, schema)
}

/// The `list_tools` answer of a test's handler that has one tool (as [`tool`]), so each
/// handler need not build the list itself.
pub fn only_tool(
    name: impl Into<String>,
    description: &'static str,
    properties: Value,
) -> Result<ListToolsResult, ErrorData> {
    Ok(ListToolsResult::with_all_items(vec![tool(
        name,
        description,
        properties,
    )]))
}

/// A lookup of `vars` alone, for `Config::from_lookup` and `Config::load_from_lookup`.
pub fn lookup<V: AsRef<str>>(vars: &[(&str, V)]) -> impl Fn(&str) -> Option<String> + use<V> {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.as_ref().to_owned()))
        .collect();
    move |name| vars.get(name).cloned()
}

pub fn config(vars: &[(&str, &str)]) -> Config {
    Config::from_lookup(lookup(vars)).expect("valid test config")
}

pub fn service(vars: &[(&str, &str)]) -> McpService<Fixture> {
    App::new(config(vars))
        .server_per_request(|| Fixture)
        .service()
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.text))
    }
    pub fn code(&self) -> i64 {
        self.json()["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code in {}", self.text))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "tests", "version": "0"}
    })
}

/// A well-formed 2026-07-28 request for `method`, with `params` merged over `_meta`: the
/// library's own builder (`mcp_lambda::testing::request`), as headers and body, so a test can
/// change any part of it.
pub fn modern(id: Value, method: &str, mut params: Value) -> (Vec<(String, String)>, Vec<u8>) {
    params["_meta"] = meta();
    let (parts, body) = mcp_lambda::testing::request(id, method, params).into_parts();
    let headers = parts
        .headers
        .iter()
        .filter(|(name, _)| *name != http::header::HOST)
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_string()))
        .collect();
    let body = futures::FutureExt::now_or_never(body.collect())
        .expect("a full body is ready at once")
        .unwrap_or_else(|never| match never {})
        .to_bytes();
    (headers, body.to_vec())
}

pub async fn send<H: ServerHandler>(
    service: &McpService<H>,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> Answer {
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:3000{path}"))
        .header("host", "127.0.0.1:3000");
    for (k, v) in headers {
        request = request.header(k.as_str(), v.as_str());
    }
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response: Response<_> = service.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    Answer {
        status: parts.status,
        headers: parts.headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

pub async fn post<H: ServerHandler>(
    service: &McpService<H>,
    request: (Vec<(String, String)>, Vec<u8>),
) -> Answer {
    send(service, "POST", "/mcp", &request.0, request.1).await
}

/// Replaces (or with `None`, removes) one header of a request.
pub fn with_header(
    mut request: (Vec<(String, String)>, Vec<u8>),
    name: &str,
    value: Option<&str>,
) -> (Vec<(String, String)>, Vec<u8>) {
    request.0.retain(|(k, _)| k != name);
    if let Some(value) = value {
        request.0.push((name.to_string(), value.to_string()));
    }
    request
}
