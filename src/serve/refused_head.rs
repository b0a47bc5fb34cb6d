//! hyper answers a request head it cannot take (over 64 KiB or 100 header fields) itself,
//! with a bare `431` and no body, before any service sees the request. Every other refusal of
//! this server is a JSON-RPC error, so the connection's writes pass through [`RefusedHead`],
//! which swaps that one bodiless head for the same `431` with the JSON-RPC error the front
//! answers for an oversized body (-32600, `data.limit`).

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::http::Rejection;

/// hyper's limit on header fields (its default), which also answers 431.
const MAX_HEADERS: usize = 100;

/// What hyper writes for a head over its limit.
const HYPERS_431: &[u8] = b"HTTP/1.1 431 ";

/// A connection whose bodiless `431` from hyper goes out with a JSON-RPC error body.
#[derive(Debug)]
pub(super) struct RefusedHead<S> {
    inner: S,
    limit: usize,
    /// The answer that replaces hyper's, still to be written.
    pending: Vec<u8>,
}

impl<S> RefusedHead<S> {
    pub(super) fn new(inner: S, limit: usize) -> Self {
        Self {
            inner,
            limit,
            pending: Vec::new(),
        }
    }

    pub(super) fn into_inner(self) -> S {
        self.inner
    }

    /// The whole `431` answer: the front's refusal for an oversized head.
    fn answer(&self) -> Vec<u8> {
        let refusal = Rejection::HeadTooLarge {
            limit: self.limit,
            max_fields: MAX_HEADERS,
        };
        let body = refusal.json_rpc_body(None).to_string();
        format!(
            "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: application/json\r\n\
             content-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }
}

impl<S: AsyncWrite + Unpin> RefusedHead<S> {
    /// Writes what is pending; ready once nothing is.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for RefusedHead<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for RefusedHead<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_pending(cx))?;
        // hyper's refusal is a head and nothing else, written at once (writes are not
        // vectored here, so a head arrives whole); this server's own answers never start so.
        if buf.starts_with(HYPERS_431) && buf.ends_with(b"\r\n\r\n") {
            self.pending = self.answer();
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    #[tokio::test]
    async fn hyper_s_bare_431_goes_out_with_a_json_rpc_error_and_nothing_else_changes() {
        let (client, server) = tokio::io::duplex(4096);
        let mut server = RefusedHead::new(server, 65_536);
        server
            .write_all(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n")
            .await
            .unwrap();
        server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        server.shutdown().await.unwrap();
        let mut got = String::new();
        let mut client = client;
        client.read_to_string(&mut got).await.unwrap();
        let (head, rest) = got.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let body = &rest[..rest.find("HTTP/1.1 200").unwrap()];
        let error: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(error["error"]["code"], -32600);
        assert_eq!(error["error"]["data"]["limit"], 65_536);
        assert!(
            rest.ends_with("HTTP/1.1 200 OK\r\n\r\n"),
            "other writes pass: {rest}"
        );
    }
}
