//! Around every request, metrics on: the EMF record ([`crate::metrics`]) written when the
//! answer's last byte has gone (or the client has gone), with the method and name the
//! envelope step read, the status, and the JSON-RPC error code the answer carries.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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

/// The method and the name (`Mcp-Name`) of a request.
type Facts = (String, Option<String>);

/// Where the envelope step leaves the method and the name it read.
#[derive(Debug, Clone, Default)]
pub(crate) struct MeterSlot(Arc<Mutex<Option<Facts>>>);

impl MeterSlot {
    pub(crate) fn set(&self, method: &str, name: Option<&str>) {
        *self.0.lock().expect("meter slot") = Some((method.to_owned(), name.map(str::to_owned)));
    }

    fn take(&self) -> Option<Facts> {
        self.0.lock().expect("meter slot").take()
    }
}

/// A request being measured.
pub(super) struct Started {
    metrics: Arc<Metrics>,
    at: Instant,
    usage: DynamoDbUsage,
    cold_start: bool,
    invocation: Option<Invocation>,
    trace_id: Option<String>,
    slot: MeterSlot,
}

/// Starts measuring a request, unless metrics are off (or it is a health check).
pub(super) fn begin<B>(
    metrics: Option<&Arc<Metrics>>,
    request: &mut http::Request<B>,
    trace_id: Option<String>,
) -> Option<Started> {
    let metrics = metrics.filter(|m| m.enabled())?;
    if request.uri().path() == "/healthz" {
        return None;
    }
    let slot = MeterSlot::default();
    request.extensions_mut().insert(slot.clone());
    Some(Started {
        metrics: metrics.clone(),
        at: Instant::now(),
        usage: DynamoDbUsage::now(),
        cold_start: metrics.cold_start(),
        invocation: request.extensions().get::<Invocation>().cloned(),
        trace_id,
        slot,
    })
}

/// Writes the record once the answer is done: its body passes through unchanged.
pub(super) fn finish(
    started: Started,
    response: Response<BoxBody<Bytes, Infallible>>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let (method, name) = match started.slot.take() {
        Some((method, name)) => (Some(method), name),
        None => (None, None),
    };
    let record = Record {
        stream: method.as_deref() == Some("subscriptions/listen"),
        method,
        name,
        status: response.status().as_u16(),
        json_rpc_code: None,
    };
    let event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let recorder = Recorder {
        started: Some(started),
        record,
    };
    let (parts, inner) = response.into_parts();
    let body = Metered {
        inner,
        recorder,
        event_stream,
    };
    Response::from_parts(parts, BoxBody::new(body))
}

/// The answer's body as it was (frames, end, size hint: the Lambda adapter tells an empty body
/// by them), read on the way for a JSON-RPC error code.
struct Metered {
    inner: BoxBody<Bytes, Infallible>,
    recorder: Recorder,
    event_stream: bool,
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
        {
            this.recorder.read(data, this.event_stream);
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

/// Writes the record when dropped: the body ended, or the client went away.
struct Recorder {
    started: Option<Started>,
    record: Record,
}

/// What the answer showed so far.
#[derive(Default)]
struct Record {
    method: Option<String>,
    name: Option<String>,
    status: u16,
    stream: bool,
    json_rpc_code: Option<i64>,
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
    if !message.windows(7).any(|w| w == b"\"error\"") {
        return None;
    }
    let answer: Answer = serde_json::from_slice(message).ok()?;
    match answer.method {
        Some(_) => None,
        None => answer.error.map(|e| e.code),
    }
}

impl Recorder {
    fn read(&mut self, data: &Bytes, event_stream: bool) {
        let code = if event_stream {
            data.split(|&b| b == b'\n')
                .filter_map(|line| line.strip_prefix(b"data:"))
                .find_map(error_code)
        } else {
            error_code(data)
        };
        if code.is_some() {
            self.record.json_rpc_code = code;
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        let Some(started) = self.started.take() else {
            return;
        };
        let record = std::mem::take(&mut self.record);
        started.metrics.emit(&RequestRecord {
            method: record.method,
            name: record.name,
            status: record.status,
            json_rpc_code: record.json_rpc_code,
            duration: (!record.stream).then(|| started.at.elapsed()),
            cold_start: started.cold_start,
            dynamodb: DynamoDbUsage::now().since(started.usage),
            invocation: started.invocation,
            trace_id: started.trace_id,
        });
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
            cold_start: false,
            invocation: None,
            trace_id: None,
            slot: MeterSlot::default(),
        }
    }

    #[tokio::test]
    async fn a_metered_body_keeps_its_emptiness_and_its_bytes() {
        // The Lambda streaming adapter gives an empty answer one byte, telling it by these.
        let empty = finish(
            started(),
            Response::new(BoxBody::new(Empty::<Bytes>::new())),
        );
        assert!(empty.body().is_end_stream());
        assert_eq!(empty.body().size_hint().exact(), Some(0));
        let answer = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}"#);
        let full = finish(
            started(),
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
