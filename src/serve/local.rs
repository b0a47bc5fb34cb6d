//! A plain HTTP/1.1 server for development (`cargo run`), on loopback by default.

use std::{convert::Infallible, net::SocketAddr, time::Duration};

use http::{HeaderValue, header};
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower::Service as _;

use crate::{
    env::{ConfigError, Env},
    error::Error,
    http::{Deadline, McpService},
    shutdown::Shutdown,
};

/// The local server's settings.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `MCP_BIND` | `127.0.0.1:3000` | local listen address (not used on Lambda) |
/// | `MCP_READ_TIMEOUT_SECS` | `30` | seconds a client has to send a request's head, and then its body (slower bodies get 408; idle keep-alive connections close after it too) |
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert_eq!(config.local.bind.to_string(), "127.0.0.1:3000");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSettings {
    /// Local listen address (`MCP_BIND`).
    pub bind: SocketAddr,
    /// The time a client has to send a request's head, and then its body
    /// (`MCP_READ_TIMEOUT_SECS`); slowloris guard.
    pub read_timeout: Duration,
}

impl LocalSettings {
    /// Reads `MCP_BIND` and `MCP_READ_TIMEOUT_SECS`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let bind = match env.get("MCP_BIND") {
            Some(v) => v.trim().parse().map_err(|_| {
                ConfigError::new(
                    "MCP_BIND",
                    v,
                    "expected an IP address and port, e.g. 127.0.0.1:3000",
                )
            })?,
            None => SocketAddr::from(([127, 0, 0, 1], 3000)),
        };
        let read_timeout = env.secs(
            "MCP_READ_TIMEOUT_SECS",
            30,
            1..=3600,
            "whole seconds between 1 and 3600, e.g. 30",
        )?;
        Ok(Self { bind, read_timeout })
    }
}

/// The largest request head (request line and headers) accepted; more gets 431.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Serves `service` on `bind` until Ctrl-C or SIGTERM.
///
/// `read_timeout` bounds the wait for each request's head (and for the next
/// request on an idle keep-alive connection: the connection is closed) and,
/// separately, for its body (408): slow clients cannot hold connections open.
pub(crate) async fn serve<H>(
    service: McpService<H>,
    settings: &LocalSettings,
    path: &str,
    shutdown: Shutdown,
) -> Result<(), Error>
where
    H: rmcp::ServerHandler,
{
    let (bind, read_timeout) = (settings.bind, settings.read_timeout);
    let listener = TcpListener::bind(bind)
        .await
        .map_err(|source| Error::Bind { addr: bind, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| Error::Bind { addr: bind, source })?;
    tracing::info!(url = %format!("http://{local}{path}"), "serving MCP locally");
    let signalled = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        signalled.trigger();
    });
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
            () = shutdown.triggered() => break,
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
