//! Instructions per request, counted by callgrind: the before/after measure of a change to the
//! request path (BENCHMARKS.md, "CPU per request"). Wall-clock timings on a shared 2-core
//! machine move by several percent between runs; an instruction count repeats to a few hundredths
//! of a percent whatever else the machine runs.
//!
//! Sends `N` requests of one kind through the whole service in process (`oneshot`, one
//! `block_on` each, current-thread runtime), as `benches/in_process.rs` does:
//!
//! ```text
//! cargo build --release -p mcp-lambda-benches --example bench_instructions
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/bench_instructions tools_list 2000
//! ```
//!
//! and per request = (I(N₂) − I(N₁)) / (N₂ − N₁), so start-up cancels. Kinds: `tools_list`,
//! `tools_call`, `listen` (a `subscriptions/listen` accepted, its acknowledgment read, the
//! stream dropped) and `refused` (a body that is not JSON: the front alone).
//!
//! With `BENCH_MODE=lambda` the service is configured as on Lambda (`AWS_LAMBDA_RUNTIME_API`
//! set, never called: the requests still go in process), so each request also pays what it pays
//! there beyond the protocol: JSON log lines with the request's span, and the EMF metrics record.
//!
//! Self-contained on purpose (its handler is here, not in a support module): the same file
//! builds against an older tree for the "before" count (copy it over that tree's
//! `benches/servers/instructions.rs`; trees from before the benchmarks had a package of their own,
//! `benches/Cargo.toml`, build it without `-p mcp-lambda-benches`).

use std::collections::HashMap;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use mcp_lambda::{App, Config, listen::Changes, listen::MemoryFeed};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// Three tools; `echo` answers its `message`.
#[derive(Clone)]
struct Tools;

impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"]
        });
        let schema = schema.as_object().expect("an object").clone();
        Ok(ListToolsResult::with_all_items(
            ["echo", "reverse", "count"]
                .into_iter()
                .map(|name| Tool::new(name, "Answers with its message.", schema.clone()))
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let message = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("message"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Ok(CallToolResponse::from(CallToolResult::success(vec![
            ContentBlock::text(message),
        ])))
    }
}

fn modern(id: u64, method: &str, mut params: Value) -> Request<Full<Bytes>> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}
    });
    mcp_lambda::testing::request(json!(id), method, params)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_default();
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    if n == 0 {
        eprintln!("usage: bench_instructions tools_list|tools_call|listen|refused <N>");
        std::process::exit(2);
    }
    let mut vars: HashMap<&str, &str> = [
        // No poll tick during a run: a listen's cost is its acceptance, not the shared poll.
        ("MCP_LISTEN_POLL_MS", "60000"),
        ("MCP_LISTEN_MAX_STREAMS", "100000"),
        ("MCP_LISTEN_MAX_STREAMS_PER_CALLER", "99999"),
    ]
    .into_iter()
    .collect();
    if std::env::var("BENCH_MODE").as_deref() == Ok("lambda") {
        vars.insert("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9");
        vars.insert(
            "MCP_REQUEST_STATE_KEY",
            "aw9C5Pf6gzD8Za8qaDXAJvlBHm0BKpbS1aXWFQoBUpE=",
        );
    }
    let config = Config::from_lookup(|name| vars.get(name).map(|v| v.to_string()))
        .expect("a valid bench config");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let changes = Changes::new(MemoryFeed::new(None));
    let service = App::new(config)
        .changes(&changes)
        .server_per_request(|| Tools)
        .service();
    let mut answered = 0u64;
    for id in 0..n {
        let request = match kind.as_str() {
            "tools_list" => modern(id, "tools/list", json!({})),
            "tools_call" => modern(
                id,
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "hello"}}),
            ),
            "listen" => modern(
                id,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            ),
            "refused" => {
                let mut request = modern(id, "tools/list", json!({}));
                *request.body_mut() = Full::new(Bytes::from_static(b"{\"jsonrpc\":"));
                request
            }
            other => panic!("unknown kind {other:?}"),
        };
        let status = runtime.block_on(async {
            let response = service.clone().oneshot(request).await.expect("infallible");
            let status = response.status();
            let mut body = response.into_body();
            if kind == "listen" {
                // The acknowledgment only; dropping the body ends the stream.
                let frame = body.frame().await.expect("an acknowledgment");
                std::hint::black_box(frame.expect("infallible"));
            } else {
                std::hint::black_box(body.collect().await.expect("infallible").to_bytes());
            }
            status
        });
        answered += u64::from(status.is_success());
    }
    // A run whose answers changed kind would count something else: say so.
    let expected = if kind == "refused" { 0 } else { n };
    assert_eq!(answered, expected, "{kind}: {answered} of {n} answered 2xx");
    println!("{kind}: {n} requests");
}
