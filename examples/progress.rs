//! Run with:
//!
//! ```sh
//! MCP_LAMBDA_STREAMING=true cargo lambda watch -A 127.0.0.1 -P 9100 --example progress
//! curl -sN http://127.0.0.1:9100/mcp -H 'content-type: application/json' \
//!     -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
//!     -H 'mcp-method: tools/call' -H 'mcp-name: count' \
//!     -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{"to":3,"delay_ms":300},"_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//!
//! (or `cargo run --example progress` for the local server on 127.0.0.1:3000).
//!
//! One tool, `count`, that reports progress: with a `progressToken` the answer is an SSE stream
//! of `notifications/progress` events, `delay_ms` apart, then the result — what Lambda response
//! streaming (`MCP_LAMBDA_STREAMING=true`) must deliver event by event. Used by
//! `scripts/lambda-tests.sh` and `tests/dynamodb_local/lambda_runtime.rs`.

use std::time::Duration;

use mcp_lambda::rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), mcp_lambda::Error> {
    let config = mcp_lambda::Config::load().await?;
    mcp_lambda::App::open(config)
        .await?
        .server(Counter)
        .run()
        .await
}

/// The server: one `count` tool.
#[derive(Clone)]
struct Counter;

/// The longest pause between steps, so a call stays well inside a Lambda timeout.
const MAX_DELAY_MS: u64 = 10_000;

impl ServerHandler for Counter {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("progress", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {
                "to": {"type": "integer", "minimum": 1, "maximum": 20, "description": "the last number"},
                "delay_ms": {"type": "integer", "minimum": 0, "maximum": MAX_DELAY_MS, "description": "pause before each number"}
            }
        });
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "count",
            "Counts from 1 to `to` (default 3), `delay_ms` (default 100) apart, reporting each number as progress.",
            schema.as_object().expect("an object").clone(),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != "count" {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        let arguments = request.arguments.unwrap_or_default();
        let to = arguments
            .get("to")
            .and_then(|v| v.as_u64())
            .unwrap_or(3)
            .clamp(1, 20);
        let delay = Duration::from_millis(
            arguments
                .get("delay_ms")
                .and_then(|v| v.as_u64())
                .unwrap_or(100)
                .min(MAX_DELAY_MS),
        );
        let token = context.meta.get_progress_token();
        for n in 1..=to {
            tokio::time::sleep(delay).await;
            if let Some(token) = &token {
                let _ = context
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), n as f64)
                            .with_total(to as f64)
                            .with_message(format!("counted {n} of {to}")),
                    )
                    .await;
            }
        }
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(format!("counted to {to}")),
        ])))
    }
}
