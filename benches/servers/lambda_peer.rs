//! mcp-lambda's side of `benches/lambda-peers.sh`: three tools — `echo`, `reverse`, `count` —
//! that the peers (pmcp and turul-mcp-aws-lambda, `benches/peers/`) serve too, with the same
//! names, arguments and answers (one text item each).
//!
//! Run with: `benches/lambda-peers.sh` (under a loopback Lambda Runtime API), or locally:
//! `cargo run -p mcp-lambda-benches --example bench_lambda_peer`, then
//!
//! ```sh
//! curl -s http://127.0.0.1:3000/mcp -H 'Content-Type: application/json' \
//!   -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: reverse' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"reverse","arguments":{"text":"abc"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//!
//! Built as the starter builds a server (`App::load` on `mcp_lambda::runtime()`), run with auth
//! off and no handle table: what the peers do without being told otherwise.

use mcp_lambda::rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use mcp_lambda::rmcp::{self, ServerHandler, schemars, tool, tool_handler, tool_router};
use mcp_lambda::{App, Error};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct TextArgs {
    /// The text to work on.
    text: String,
}

#[derive(Clone)]
struct Peer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Peer {
    #[tool(description = "Send back the message")]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.message
    }

    #[tool(description = "Reverse the text, character by character")]
    async fn reverse(&self, Parameters(args): Parameters<TextArgs>) -> String {
        args.text.chars().rev().collect()
    }

    #[tool(description = "Count the text's characters")]
    async fn count(&self, Parameters(args): Parameters<TextArgs>) -> String {
        args.text.chars().count().to_string()
    }
}

#[tool_handler(router = self.tool_router, name = "peer")]
impl ServerHandler for Peer {}

// One thread on on-demand Lambda (one invocation at a time), a worker per core elsewhere.
fn main() -> Result<(), Error> {
    mcp_lambda::runtime()?.block_on(async {
        let peer = Peer {
            tool_router: Peer::tool_router(),
        };
        App::load().await?.server(peer).run().await
    })
}
