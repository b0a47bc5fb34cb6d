//! A plain HTTP/1.1 server for development (`cargo run`), on loopback by default.

use std::{convert::Infallible, net::SocketAddr, time::Duration};

use http::{HeaderValue, header};
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower::Service as _;

use crate::{Error, McpService, http::Deadline};

/// The largest request head (request line and headers) accepted; more gets 431.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Serves `service` on `bind` until Ctrl-C or SIGTERM.
///
/// `read_timeout` bounds the wait for each request's head (and for the next
/// request on an idle keep-alive connection: the connection is closed) and,
/// separately, for its body (408): slow clients cannot hold connections open.
pub(crate) async fn serve<H>(
    service: McpService<H>,
    bind: SocketAddr,
    path: &str,
    read_timeout: Duration,
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
                hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
                    let mut service = service.clone();
                    // RFC 9112 §3.2.2: an absolute-form target's authority overrides Host,
                    // so the Host check judges the host the request actually names.
                    if let Some(authority) = request.uri().authority()
                        && let Ok(host) = HeaderValue::from_str(authority.as_str())
                    {
                        request.headers_mut().insert(header::HOST, host);
                    }
                    let request = request.map(|body| Deadline::new(body, read_timeout));
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
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .max_header_size(MAX_HEAD_BYTES)
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
