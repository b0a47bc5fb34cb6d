//! Around every request, metrics on: the EMF record ([`crate::metrics`]) written when the
//! answer's last byte has gone (or the client has gone), with the method and name the
//! envelope step read, the status, and the JSON-RPC error code the answer carries.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{Response, header};
use http_body::Frame;
use http_body_util::combinators::BoxBody;
use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::aws::DynamoDbUsage;
use crate::metrics::{Invocation, Metrics, RequestRecord};
use crate::request_scope::{self, RequestScope};

/// A request being measured: what is known before the answer, filled in as it goes.
pub(super) struct Started {
    metrics: Arc<Metrics>,
    at: Instant,
    usage: DynamoDbUsage,
    record: RequestRecord,
}

/// Starts measuring a request, unless metrics are off (or it is a health check).
pub(super) fn begin<B>(
    metrics: Option<&Arc<Metrics>>,
    request: &http::Request<B>,
    trace_id: Option<String>,
) -> Option<Started> {
    let metrics = metrics?;
    if request.uri().path() == "/healthz" {
        return None;
    }
    let record = RequestRecord {
        cold_start: metrics.cold_start(),
        invocation: request_scope::in_request::<Invocation>(request.extensions()).cloned(),
        trace_id,
        ..RequestRecord::default()
    };
    Some(Started {
        metrics: metrics.clone(),
        at: Instant::now(),
        usage: DynamoDbUsage::now(),
        record,
    })
}

/// Writes the record once the answer is done: its body passes through unchanged.
pub(super) fn finish(
    mut started: Started,
    scope: &RequestScope,
    response: Response<BoxBody<Bytes, Infallible>>,
) -> Response<BoxBody<Bytes, Infallible>> {
    if let Some((method, name)) = scope.method() {
        started.record.method = Some(method.to_owned());
        started.record.name = name.map(str::to_owned);
    }
    started.record.status = response.status().as_u16();
    started.record.auth_challenged = response.headers().contains_key(header::WWW_AUTHENTICATE);
    let event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let (parts, inner) = response.into_parts();
    let body = Metered {
        inner,
        event_stream,
        started: Some(started),
    };
    Response::from_parts(parts, BoxBody::new(body))
}

/// The answer's body as it was (frames, end, size hint: the Lambda adapter tells an empty body
/// by them), read on the way for a JSON-RPC error code; the record is written when it is
/// dropped (the body ended, or the client went away).
struct Metered {
    inner: BoxBody<Bytes, Infallible>,
    event_stream: bool,
    started: Option<Started>,
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
            && let Some(code) = answer_error_code(data, this.event_stream)
            && let Some(started) = &mut this.started
        {
            started.record.json_rpc_code = Some(code);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        let Some(Started {
            metrics,
            at,
            usage,
            mut record,
            ..
        }) = self.started.take()
        else {
            return;
        };
        // A listen stream lasts as long as it is open: no duration.
        if record.method.as_deref() != Some("subscriptions/listen") {
            record.duration = Some(at.elapsed());
        }
        record.dynamodb = DynamoDbUsage::now().since(usage);
        metrics.emit(&record);
    }
}

/// Just enough of a JSON-RPC message to tell an error answer (a message with a top-level
/// `error` and no `method`; its `id` may be `null`, for a body that could not be read).
#[derive(Deserialize)]
struct Answer {
    method: Option<IgnoredAny>,
    error: Option<Code>,
}

#[derive(Deserialize)]
struct Code {
    code: i64,
}

fn error_code(message: &[u8]) -> Option<i64> {
    // Only messages that mention an error are parsed, and only their top level is kept.
    memchr::memmem::find(message, b"\"error\"")?;
    let answer: Answer = serde_json::from_slice(message).ok()?;
    match answer.method {
        Some(_) => None,
        None => answer.error.map(|e| e.code),
    }
}

/// The JSON-RPC error code a frame of the answer carries, if any: the whole message for JSON,
/// each `data:` line for an event stream.
fn answer_error_code(data: &Bytes, event_stream: bool) -> Option<i64> {
    if event_stream {
        data.split(|&b| b == b'\n')
            .filter_map(|line| line.strip_prefix(b"data:"))
            .find_map(error_code)
    } else {
        error_code(data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Body as _;
    use http_body_util::{BodyExt as _, Empty, Full};

    fn started() -> Started {
        let metrics = Arc::new(Metrics::new(crate::Config::local_default().metrics));
        Started {
            metrics,
            at: Instant::now(),
            usage: DynamoDbUsage::now(),
            record: RequestRecord::default(),
        }
    }

    #[tokio::test]
    async fn a_metered_body_keeps_its_emptiness_and_its_bytes() {
        // The Lambda streaming adapter gives an empty answer one byte, telling it by these.
        let empty = finish(
            started(),
            &RequestScope::default(),
            Response::new(BoxBody::new(Empty::<Bytes>::new())),
        );
        assert!(empty.body().is_end_stream());
        assert_eq!(empty.body().size_hint().exact(), Some(0));
        let answer = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}"#);
        let full = finish(
            started(),
            &RequestScope::default(),
            Response::new(BoxBody::new(Full::new(answer.clone()))),
        );
        assert_eq!(full.body().size_hint().exact(), Some(answer.len() as u64));
        let read = full.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(read, answer);
    }

    #[test]
    fn only_an_answer_with_a_top_level_error_has_a_code() {
        assert_eq!(
            error_code(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700}}"#),
            Some(-32700)
        );
        assert_eq!(
            error_code(br#"{"jsonrpc":"2.0","id":1,"result":{"error":{"code":-32603}}}"#),
            None
        );
        assert_eq!(
            error_code(br#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{"error":{"code":1}}}"#),
            None
        );
    }
}
