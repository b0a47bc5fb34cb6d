//! A plain HTTP/1.1 server for development and for a VPS behind a reverse proxy, on loopback
//! by default.
//!
//! Two things here are about how connections end rather than what they carry:
//!
//! - **Draining.** When the [`Shutdown`] signal triggers (SIGTERM, Ctrl-C or
//!   [`Server::shutdown`](crate::Server::shutdown)), the listener takes what the kernel has
//!   already accepted, then closes, so a client that connects afterwards is refused at once (a
//!   proxy retries elsewhere) and no half-accepted connection is reset. Every connection gets
//!   hyper's graceful shutdown: idle keep-alive connections close, a request in flight is
//!   answered and its connection then closes; a connection that has not sent its first request
//!   yet gets [`FIRST_REQUEST_GRACE`] to begin it, and is answered too. [`serve`] returns once they are all gone, or
//!   when `MCP_DRAIN_SECS` has passed (what is still open is dropped), or at a second signal.
//! - **Lingering close.** A response sent before the request body was read (413 on a declared
//!   length, 408, an early refusal), or before a refused head was read whole (431 over
//!   64 KiB), leaves the rest of the request on its way. Closing the socket
//!   with unread bytes in its receive buffer makes the kernel send a reset, and a client that
//!   writes its whole body before reading (Python's urllib, most raw-socket clients) then sees
//!   "connection reset" instead of its 413. So such a connection is half-closed after the
//!   answer and the rest is read and discarded, for at most [`LINGER_TIME`] and
//!   [`LINGER_BYTES`], as nginx's `lingering_close` does; the bounds keep it from becoming a
//!   way to hold connections open.

use std::{
    convert::Infallible,
    io::ErrorKind,
    net::SocketAddr,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use http::{HeaderValue, header};
use http_body::{Body, Frame, SizeHint};
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpListener, TcpStream},
    sync::Notify,
    task::JoinSet,
};
use tower::Service as _;

use super::refused_head::RefusedHead;
use crate::{
    env::{ConfigError, Env, Unit},
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
/// | `MCP_DRAIN_SECS` | `30` | after SIGTERM or Ctrl-C, seconds the requests in flight get to finish before the process exits anyway; `0` = do not wait |
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert_eq!(config.local.bind.to_string(), "127.0.0.1:3000");
/// assert_eq!(config.local.drain.as_secs(), 30);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LocalSettings {
    /// Local listen address (`MCP_BIND`).
    pub bind: SocketAddr,
    /// The time a client has to send a request's head, and then its body
    /// (`MCP_READ_TIMEOUT_SECS`); slowloris guard.
    pub read_timeout: Duration,
    /// How long, after the shutdown signal, the requests in flight get to finish
    /// (`MCP_DRAIN_SECS`); zero closes every connection at once.
    pub drain: Duration,
}

impl LocalSettings {
    /// Reads `MCP_BIND`, `MCP_READ_TIMEOUT_SECS` and `MCP_DRAIN_SECS`.
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
        let read_timeout = env.duration("MCP_READ_TIMEOUT_SECS", Unit::Seconds, 30, 1..=3600)?;
        let drain = env.duration("MCP_DRAIN_SECS", Unit::Seconds, 30, 0..=3600)?;
        Ok(Self {
            bind,
            read_timeout,
            drain,
        })
    }
}

/// The largest request head (request line and headers) accepted; more gets 431.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// How long, after the shutdown signal, a connection that has not begun its first request
/// is given to begin it (a client sends its request one round trip after connecting; Go's
/// `net/http` gives such connections 5 s). A connection that sends nothing is then closed, so
/// a speculative connection (browsers open some) does not hold the drain.
pub(crate) const FIRST_REQUEST_GRACE: Duration = Duration::from_secs(2);

/// The longest a connection answered before its request body was read is kept open to
/// discard the rest of the body (nginx's `lingering_timeout` default is also 5 s).
pub(crate) const LINGER_TIME: Duration = Duration::from_secs(5);

/// The most bytes discarded from such a connection before it is closed anyway: eight times
/// the 8 MiB a careless client is likely to send, far below what would cost anything.
pub(crate) const LINGER_BYTES: u64 = 64 * 1024 * 1024;

/// Serves `service` on `bind` until `shutdown` triggers (the task spawned here triggers it on
/// Ctrl-C or SIGTERM), then drains: see the module documentation.
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
    let bind = settings.bind;
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
    let mut connections = JoinSet::new();
    let start = |connections: &mut JoinSet<()>, stream: TcpStream| {
        let _ = stream.set_nodelay(true);
        connections.spawn(connection(
            stream,
            service.clone(),
            settings.read_timeout,
            shutdown.clone(),
        ));
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => start(&mut connections, stream),
                // Out of file descriptors and the like: keep serving.
                Err(error) => tracing::warn!(%error, "accept failed"),
            },
            // Finished connections are reaped as they end, so the set holds only open ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = shutdown.triggered() => break,
        }
    }
    // The connections the kernel has completed but nobody accepted yet would be reset when the
    // listener closes: take them without waiting (each then answers one request and closes).
    match listener.into_std() {
        Ok(listener) => {
            loop {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if stream.set_nonblocking(true).is_ok()
                            && let Ok(stream) = TcpStream::from_std(stream)
                        {
                            start(&mut connections, stream);
                        }
                    }
                    // One connection reset while it waited: the next may be fine.
                    Err(error)
                        if matches!(
                            error.kind(),
                            ErrorKind::ConnectionAborted | ErrorKind::Interrupted
                        ) => {}
                    // WouldBlock: the backlog is empty.
                    Err(_) => break,
                }
            }
            drop(listener);
        }
        Err(error) => tracing::warn!(%error, "could not take the accept backlog"),
    }
    tracing::info!(
        connections = connections.len(),
        deadline_secs = settings.drain.as_secs(),
        "draining {} connections",
        connections.len()
    );
    let drained = async { while connections.join_next().await.is_some() {} };
    tokio::select! {
        () = drained => {
            tracing::info!("drained");
            return Ok(());
        }
        () = tokio::time::sleep(settings.drain) => {}
        // An operator pressing Ctrl-C again means "now".
        () = shutdown_signal() => {}
    }
    tracing::warn!(
        open = connections.len(),
        "drain ended with {} connections still open: closing them",
        connections.len()
    );
    connections.shutdown().await;
    Ok(())
}

/// Serves one connection until it ends, gracefully once `shutdown` triggers, then closes it:
/// with a lingering close if a request body was left unread.
async fn connection<H>(
    stream: TcpStream,
    service: McpService<H>,
    read_timeout: Duration,
    shutdown: Shutdown,
) where
    H: rmcp::ServerHandler,
{
    let unread = Arc::new(AtomicBool::new(false));
    let body_unread = unread.clone();
    // Rung at each request (a permit is kept until someone waits): the drain waits for it.
    let requested = Arc::new(Notify::new());
    let request_began = requested.clone();
    let hyper_service = hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
        request_began.notify_one();
        let mut service = service.clone();
        // RFC 9112 §3.2.2: an absolute-form target's authority overrides Host,
        // so the Host check judges the host the request actually names.
        if let Some(authority) = request.uri().authority()
            && let Ok(host) = HeaderValue::from_str(authority.as_str())
        {
            request.headers_mut().insert(header::HOST, host);
        }
        let unread = body_unread.clone();
        let request = request.map(|body| Deadline::new(Watched::new(body, unread), read_timeout));
        // Boxed: taking the connection back from hyper (`poll_without_shutdown`) needs an
        // `Unpin` future.
        Box::pin(async move {
            Ok::<_, Infallible>(
                service
                    .call(request)
                    .await
                    .unwrap_or_else(|never| match never {}),
            )
        })
    });
    let mut conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(read_timeout)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(64 * 1024)
        .serve_connection(
            TokioIo::new(RefusedHead::new(stream, MAX_HEAD_BYTES)),
            hyper_service,
        );
    // hyper's graceful shutdown closes a connection it has read nothing from yet, even when
    // its first request is already waiting in the socket (a connection accepted just before the
    // signal, or taken from the backlog): that request would be lost. So the graceful shutdown
    // waits for the connection's first request to begin, or for FIRST_REQUEST_GRACE.
    let mut phase = Phase::Serving;
    let grace = tokio::time::sleep(Duration::MAX);
    tokio::pin!(grace);
    // Without shutdown: the socket comes back to decide how to close it.
    let served = loop {
        tokio::select! {
            served = std::future::poll_fn(|cx| conn.poll_without_shutdown(cx)) => break served,
            () = shutdown.triggered(), if phase == Phase::Serving => {
                phase = Phase::AwaitingRequest;
                grace.as_mut().reset(tokio::time::Instant::now() + FIRST_REQUEST_GRACE);
            }
            () = requested.notified(), if phase == Phase::AwaitingRequest => {
                phase = Phase::Draining;
                // Idle: closes now. Mid-request: answers it, then closes.
                Pin::new(&mut conn).graceful_shutdown();
            }
            () = &mut grace, if phase == Phase::AwaitingRequest => {
                phase = Phase::Draining;
                Pin::new(&mut conn).graceful_shutdown();
            }
        }
    };
    // A head hyper refused (431 over MAX_HEAD_BYTES, 400 malformed) was answered while the
    // client may still be sending it: like an unread body, it needs the lingering close.
    let refused_head = served.as_ref().is_err_and(hyper::Error::is_parse);
    if let Err(error) = served {
        tracing::debug!(%error, "connection closed with an error");
    }
    let mut io = conn.into_parts().io.into_inner();
    // What the connection still holds (a replaced 431 behind a full send buffer) goes out first.
    let _ = tokio::time::timeout(LINGER_TIME, io.flush()).await;
    let mut stream = io.into_inner();
    if unread.load(Ordering::Relaxed) || refused_head {
        linger(stream).await;
    } else {
        let _ = stream.shutdown().await;
    }
}

/// Where a connection is in the drain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No shutdown signal yet.
    Serving,
    /// Signalled; waiting for the first request to begin before the graceful shutdown.
    AwaitingRequest,
    /// Graceful shutdown called: hyper ends the connection after the request in progress.
    Draining,
}

/// Half-closes `stream` (the client reads the answer, then end-of-stream) and discards what
/// the client still sends, until it closes its side or the bounds are reached.
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = LINGER_BYTES;
    let discard = async {
        while left > 0 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n as u64),
            }
        }
    };
    if tokio::time::timeout(LINGER_TIME, discard).await.is_err() {
        tracing::debug!("lingering close timed out");
    }
}

/// A request body that notes, when dropped, whether it was left unread, so the connection
/// knows to close with a lingering close.
struct Watched<B: Body> {
    inner: B,
    ended: bool,
    unread: Arc<AtomicBool>,
}

impl<B: Body> Watched<B> {
    fn new(inner: B, unread: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            ended: false,
            unread,
        }
    }
}

impl<B: Body + Unpin> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = frame {
            self.ended = true;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: Body> Drop for Watched<B> {
    fn drop(&mut self) {
        if !self.ended && !self.inner.is_end_stream() {
            self.unread.store(true, Ordering::Relaxed);
        }
    }
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
