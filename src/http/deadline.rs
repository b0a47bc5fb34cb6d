//! A deadline on reading a request body: the local server's slowloris guard.
//!
//! hyper's `header_read_timeout` bounds the request head; this bounds the
//! body. A client that has not sent the whole body when the deadline passes
//! gets 408 (the front maps [`ReadTimeout`]) and the connection is closed.
//! Lambda delivers whole bodies, so only the local server wraps them.

use std::{
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use http_body::{Body, Frame, SizeHint};

/// The error a [`Deadline`] body yields once its time is up.
#[derive(Debug)]
pub(crate) struct ReadTimeout;

impl std::fmt::Display for ReadTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body did not arrive in time")
    }
}

impl std::error::Error for ReadTimeout {}

/// `inner`, failing with [`ReadTimeout`] if it is not finished by the deadline.
pub(crate) struct Deadline<B> {
    inner: B,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl<B> Deadline<B> {
    /// Starts the clock now.
    pub(crate) fn new(inner: B, timeout: Duration) -> Self {
        Self {
            inner,
            sleep: Box::pin(tokio::time::sleep(timeout)),
        }
    }
}

impl<B> Body for Deadline<B>
where
    B: Body + Unpin,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Data = B::Data;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.inner).poll_frame(cx) {
            return Poll::Ready(frame.map(|r| r.map_err(Into::into)));
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(ReadTimeout))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full, StreamBody};

    #[tokio::test]
    async fn a_complete_body_passes() {
        let body = Deadline::new(
            Full::new(bytes::Bytes::from_static(b"{}")),
            Duration::from_secs(5),
        );
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{}");
    }

    #[tokio::test]
    async fn a_stalled_body_fails_with_read_timeout() {
        let stalled = StreamBody::new(futures::stream::pending::<
            Result<Frame<bytes::Bytes>, std::convert::Infallible>,
        >());
        let error = Deadline::new(stalled, Duration::from_millis(50))
            .collect()
            .await
            .err()
            .unwrap();
        assert!(error.is::<ReadTimeout>(), "{error}");
    }
}
