//! Run with: `MCP_BIND=127.0.0.1:3100 MCP_LOG=warn cargo run --release -p mcp-lambda-benches --example bench_server`
//!
//! The mcp-lambda server of the side-by-side benchmark (`benches/side-by-side.sh`): the three
//! benchmark tools (`mcp_lambda_test_support::tools`) behind mcp-lambda in local mode — every
//! layer on (front checks, cache hints, cursors) and auth when `MCP_AUTH_*` is set, exactly as a
//! user's `main` would build it.
//!
//! ```text
//! curl -s http://127.0.0.1:3100/mcp -H 'Content-Type: application/json' \
//!   -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
//!         "io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!         "io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```

use mcp_lambda_test_support::tools;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = mcp_lambda::Config::from_env()?;
    mcp_lambda::init_tracing(&config);
    let tools = tools::BenchTools::new();
    mcp_lambda::App::new(config)
        .server_per_request(move || tools.clone())
        .run()
        .await?;
    Ok(())
}
