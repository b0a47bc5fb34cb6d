//! The smallest complete server: one tool, `hello`, that greets `name`.
//!
//! Run with: `cargo run --example hello`, then call its tool:
//!
//! ```sh
//! curl -s http://127.0.0.1:3000/mcp -H 'Content-Type: application/json' \
//!   -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: hello' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hello","arguments":{"name":"Ada"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//!
//! It uses only what a server's own crate has: `mcp-lambda` (and the rmcp it re-exports),
//! `tokio`, `serde`.

use mcp_lambda::rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use mcp_lambda::rmcp::{self, ServerHandler, schemars, tool, tool_handler, tool_router};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct HelloArgs {
    /// Who to greet.
    name: String,
}

#[derive(Clone)]
struct Hello {
    tool_router: ToolRouter<Self>, // built once, in main
}

#[tool_router]
impl Hello {
    #[tool(description = "Say hello to someone.")]
    async fn hello(&self, Parameters(args): Parameters<HelloArgs>) -> String {
        format!("Hello, {}!", args.name)
    }
}

#[tool_handler(router = self.tool_router, name = "hello")]
impl ServerHandler for Hello {}

#[tokio::main]
async fn main() -> Result<(), mcp_lambda::Error> {
    let config = mcp_lambda::Config::load().await?; // every MCP_* variable, read once
    let hello = Hello {
        tool_router: Hello::tool_router(),
    };
    mcp_lambda::App::open(config)
        .await?
        .server(hello)
        .run()
        .await
}
