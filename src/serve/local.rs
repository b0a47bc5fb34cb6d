//! A plain HTTP/1.1 server for development (`cargo run`), on loopback by default.

use std::{convert::Infallible, net::SocketAddr};

use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tower::Service as _;

use crate::{Error, McpService};

/// Serves `service` on `bind` until Ctrl-C or SIGTERM.
pub(crate) async fn serve<H>(
    service: McpService<H>,
    bind: SocketAddr,
    path: &str,
) -> Result<(), Error>
where
    H: rmcp::ServerHandler,
{
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|source| Error::Bind { addr: bind, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr: bind, source })?;
    tracing::info!(url = %format!("http://{local}{path}"), "serving MCP locally");
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: keep serving.
                    tracing::warn!(%error, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let hyper_service =
                hyper::service::service_fn(move |request: http::Request<Incoming>| {
                    let mut service = service.clone();
                    async move {
                        Ok::<_, Infallible>(
                            service
                                .call(request)
                                .await
                                .unwrap_or_else(|never| match never {}),
                        )
                    }
                });
            if let Err(error) = http1::Builder::new()
                .max_buf_size(64 * 1024)
                .serve_connection(TokioIo::new(stream), hyper_service)
                .await
            {
                tracing::debug!(%error, "connection closed with an error");
            }
        });
    }
    tracing::info!("shutting down");
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}
