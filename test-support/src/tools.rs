//! The three benchmark tools, as one rmcp `ServerHandler` shared by every Rust server in the
//! side-by-side harness (`benches/servers/mcp_lambda.rs` on mcp-lambda, `benches/servers/rmcp.rs`
//! on bare rmcp) and by the criterion benches, so those differ only in what wraps the handler.
//!
//! The TypeScript (`benches/ts/server.mjs`) and Python (`benches/py/server.py`) peers declare the
//! same tools with the same hand-written JSON schemas and give the same answers;
//! `benches/servers/hyper.rs` answers the same JSON with no MCP logic at all.
//!
//! - `echo {message}` → the message;
//! - `add {a, b}` (integers) → their sum, in decimal;
//! - `upper {text}` → the text upper-cased.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
        Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

/// The tools, their schemas built once; cloning shares them.
#[derive(Clone)]
pub struct BenchTools {
    tools: Arc<Vec<Tool>>,
}

impl Default for BenchTools {
    fn default() -> Self {
        Self::new()
    }
}

/// `{"type":"object","properties":{…},"required":[…]}` as rmcp wants it.
fn object_schema(properties: Value, required: &[&str]) -> JsonObject {
    match json!({"type": "object", "properties": properties, "required": required}) {
        Value::Object(map) => map,
        _ => unreachable!("a JSON object literal"),
    }
}

impl BenchTools {
    /// Builds the three tools.
    pub fn new() -> Self {
        let tools = vec![
            Tool::new(
                "echo",
                "Answers with the message it was sent.",
                object_schema(
                    json!({"message": {"type": "string", "description": "The text to send back."}}),
                    &["message"],
                ),
            ),
            Tool::new(
                "add",
                "Adds two integers.",
                object_schema(
                    json!({
                        "a": {"type": "integer", "description": "The first addend."},
                        "b": {"type": "integer", "description": "The second addend."}
                    }),
                    &["a", "b"],
                ),
            ),
            Tool::new(
                "upper",
                "Upper-cases a text.",
                object_schema(
                    json!({"text": {"type": "string", "description": "The text to upper-case."}}),
                    &["text"],
                ),
            ),
        ];
        Self {
            tools: Arc::new(tools),
        }
    }

    /// The three tools plus `extra` copies of `echo` named `echo_<i>`: a longer `tools/list`
    /// answer for the criterion benches (every list-answer layer scales with its size).
    pub fn with_extra_tools(extra: usize) -> Self {
        let mut tools = Self::new().tools.as_ref().clone();
        let echo = tools[0].clone();
        tools.extend((0..extra).map(|i| {
            let mut tool = echo.clone();
            tool.name = format!("echo_{i}").into();
            tool
        }));
        Self {
            tools: Arc::new(tools),
        }
    }

    /// The tools as `tools/list` lists them.
    pub fn tool_list(&self) -> &[Tool] {
        &self.tools
    }

    /// The answer text of one call, or why the arguments are wrong.
    pub fn answer(name: &str, arguments: Option<&JsonObject>) -> Result<String, String> {
        let arg = |key: &str| {
            arguments
                .and_then(|a| a.get(key))
                .ok_or_else(|| format!("missing argument {key:?}"))
        };
        let string = |key: &str| {
            arg(key)?
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("argument {key:?} must be a string"))
        };
        let integer = |key: &str| {
            arg(key)?
                .as_i64()
                .ok_or_else(|| format!("argument {key:?} must be an integer"))
        };
        match name {
            "echo" => string("message"),
            echo if echo.starts_with("echo_") => string("message"),
            "add" => Ok(integer("a")?
                .checked_add(integer("b")?)
                .ok_or("the sum overflows a 64-bit integer")?
                .to_string()),
            "upper" => Ok(string("text")?.to_uppercase()),
            other => Err(format!("Unknown tool: {other}")),
        }
    }
}

impl ServerHandler for BenchTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = Self::answer(&request.name, request.arguments.as_ref())
            .map_err(|message| ErrorData::invalid_params(message, None))?;
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}
