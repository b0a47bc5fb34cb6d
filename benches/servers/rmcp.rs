//! Run with: `BENCH_BIND=127.0.0.1:3101 cargo run --release -p mcp-lambda-benches --example bench_rmcp`
//!
//! The bare-rmcp server of the side-by-side benchmark (`benches/side-by-side.sh`): the same
//! handler as `bench_server` (`mcp_lambda_test_support::tools`) on rmcp's own `StreamableHttpService`,
//! stateless with JSON responses, served by the same hyper HTTP/1.1 accept loop mcp-lambda uses
//! locally — so the difference between the two is mcp-lambda's layers and nothing else.

use mcp_lambda_test_support::tools;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper_util::{rt::TokioIo, service::TowerToHyperService};
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use tokio::net::TcpListener;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let bind = std::env::var("BENCH_BIND").unwrap_or_else(|_| "127.0.0.1:3101".into());
    let handler = tools::BenchTools::new();
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    );
    let listener = TcpListener::bind(&bind).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
