//! turul-mcp-aws-lambda 0.4's README, "Basic Lambda MCP Server (Snapshot-based SSE)", with the
//! three tools of benches/servers/lambda_peer.rs in place of its `echo`: built with
//! `cargo lambda build --release`, run by benches/lambda-peers.sh under a loopback Runtime API.

use lambda_http::{run, service_fn};
use turul_mcp_aws_lambda::LambdaMcpServerBuilder;
use turul_mcp_derive::McpTool;
use turul_mcp_server::{McpResult, SessionContext};

#[derive(McpTool, Clone, Default)]
#[tool(name = "echo", description = "Send back the message")]
struct EchoTool {
    #[param(description = "The text to send back.")]
    message: String,
}

impl EchoTool {
    async fn execute(&self, _session: Option<SessionContext>) -> McpResult<String> {
        Ok(self.message.clone())
    }
}

#[derive(McpTool, Clone, Default)]
#[tool(
    name = "reverse",
    description = "Reverse the text, character by character"
)]
struct ReverseTool {
    #[param(description = "The text to work on.")]
    text: String,
}

impl ReverseTool {
    async fn execute(&self, _session: Option<SessionContext>) -> McpResult<String> {
        Ok(self.text.chars().rev().collect())
    }
}

#[derive(McpTool, Clone, Default)]
#[tool(name = "count", description = "Count the text's characters")]
struct CountTool {
    #[param(description = "The text to work on.")]
    text: String,
}

impl CountTool {
    async fn execute(&self, _session: Option<SessionContext>) -> McpResult<String> {
        Ok(self.text.chars().count().to_string())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // Initialize tracing with RUST_LOG environment variable
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_target(false)
        .without_time()
        .init();

    let server = LambdaMcpServerBuilder::new()
        .name("peer")
        .version("1.0.0")
        .tool(EchoTool::default())
        .tool(ReverseTool::default())
        .tool(CountTool::default())
        .sse(true) // Enable SSE (snapshot-based)
        .cors_allow_all_origins() // Allow CORS for browser clients
        .build()
        .await?;

    // Build the handler eagerly in main() — see ADR-024.
    let handler = server.handler().await?;

    // Run with standard Lambda runtime (snapshot-based SSE).
    run(service_fn(move |req| dispatch(handler.clone(), req))).await
}

async fn dispatch(
    handler: turul_mcp_aws_lambda::LambdaMcpHandler,
    req: lambda_http::Request,
) -> Result<lambda_http::Response<lambda_http::Body>, Box<dyn std::error::Error + Send + Sync>> {
    handler
        .handle(req)
        .await
        .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
}
