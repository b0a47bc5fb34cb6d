//! Run with: `BENCH_BIND=127.0.0.1:3104 cargo run --release -p mcp-lambda-benches --example bench_hyper`
//!
//! The floor of the side-by-side benchmark (`benches/side-by-side.sh`): hyper and serde_json
//! answering `server/discover`, `tools/list` and `tools/call` with the same JSON as the MCP
//! servers, and no MCP logic at all — no envelope or header checks, no handler, no cache hints.
//! "Within 1.5× of minimal hyper" is measured against this.

use mcp_lambda_test_support::tools;
use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response, body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

fn answer(request: &Value, tools: &Value) -> Value {
    let server_info =
        json!({"io.modelcontextprotocol/serverInfo": {"name": "bench", "version": "1.0.0"}});
    let result = match request["method"].as_str() {
        Some("server/discover") => json!({
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "resultType": "complete", "_meta": server_info,
        }),
        Some("tools/list") => {
            json!({"tools": tools.clone(), "resultType": "complete", "_meta": server_info})
        }
        Some("tools/call") => {
            let params = &request["params"];
            let name = params["name"].as_str().unwrap_or_default();
            match tools::BenchTools::answer(name, params["arguments"].as_object()) {
                Ok(text) => json!({
                    "content": [{"type": "text", "text": text}],
                    "isError": false, "resultType": "complete", "_meta": server_info,
                }),
                Err(message) => {
                    return json!({"jsonrpc": "2.0", "id": request["id"],
                                  "error": {"code": -32602, "message": message}});
                }
            }
        }
        _ => {
            return json!({"jsonrpc": "2.0", "id": request["id"],
                          "error": {"code": -32601, "message": "Method not found"}});
        }
    };
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result})
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bind = std::env::var("BENCH_BIND").unwrap_or_else(|_| "127.0.0.1:3104".into());
    // The tool list as the MCP servers serialize it.
    let tools: Arc<Value> = Arc::new(serde_json::to_value(tools::BenchTools::new().tool_list())?);
    let listener = TcpListener::bind(&bind).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let tools = tools.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let tools = tools.clone();
                async move {
                    let body = request.into_body().collect().await.map(|b| b.to_bytes());
                    let (status, value) = match body
                        .ok()
                        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    {
                        Some(request) => (200, answer(&request, &tools)),
                        None => (
                            400,
                            json!({"jsonrpc": "2.0", "id": null,
                                             "error": {"code": -32700, "message": "Parse error"}}),
                        ),
                    };
                    let body = serde_json::to_vec(&value).unwrap_or_default();
                    Ok::<_, Infallible>(
                        Response::builder()
                            .status(status)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body)))
                            .expect("a valid response"),
                    )
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
