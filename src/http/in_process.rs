//! MCP requests made in process through the whole front: the builder and the answer reader
//! behind [`TestClient`](crate::testing::TestClient). (The list probe and task rounds skip HTTP:
//! they call the handler's dispatch, `handler/dispatch.rs`.)

#[cfg(feature = "test-util")]
use bytes::Bytes;
#[cfg(feature = "test-util")]
use http::{Request, header};
#[cfg(feature = "test-util")]
use http_body::Body;
#[cfg(feature = "test-util")]
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

/// The protocol revision in-process requests speak.
pub(crate) const VERSION: &str = "2026-07-28";

/// `_meta` of a 2026-07-28 request from a client with `capabilities`.
pub(crate) fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A well-formed 2026-07-28 `POST <path>` for `method`: the envelope around `params` (which
/// carry their `_meta`), `Content-Type`, `Accept`, and the MCP headers, `Mcp-Name` from the
/// params' `name` or `uri` as the spec requires.
#[cfg(feature = "test-util")]
pub(crate) fn request(
    path: &str,
    host: &str,
    id: Value,
    method: &str,
    params: Value,
) -> Result<Request<Full<Bytes>>, http::Error> {
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = Request::post(path)
        .header(header::HOST, host)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request.body(Full::new(Bytes::from(body.to_string())))
}

/// The JSON-RPC messages of an answer, in order: the one JSON body, or each SSE event's data.
#[cfg(feature = "test-util")]
pub(crate) struct Messages<B> {
    body: B,
    sse: bool,
    buffer: Vec<u8>,
    done: bool,
}

#[cfg(feature = "test-util")]
impl<B> Messages<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    /// Reads `body`, an answer whose `Content-Type` was `content_type`.
    pub(crate) fn new(content_type: Option<&http::HeaderValue>, body: B) -> Self {
        Self {
            sse: content_type.is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream")),
            body,
            buffer: Vec::new(),
            done: false,
        }
    }

    /// The next message; `None` once the body has ended (or failed). Bytes that are not JSON
    /// (an HTTP refusal's text) come as a JSON string.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if self.sse
                && let Some(message) = self.next_event()
            {
                return Some(message);
            }
            if self.done {
                if self.sse || self.buffer.is_empty() {
                    return None;
                }
                let bytes = std::mem::take(&mut self.buffer);
                return Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                    Value::String(String::from_utf8_lossy(&bytes).into_owned())
                }));
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) | None => self.done = true,
            }
        }
    }

    /// One complete SSE event's data as JSON, skipping events without JSON data (priming
    /// events, comments).
    fn next_event(&mut self) -> Option<Value> {
        loop {
            let end = self.buffer.windows(2).position(|w| w == b"\n\n")?;
            let event: Vec<u8> = self.buffer.drain(..end + 2).collect();
            let text = String::from_utf8_lossy(&event);
            let data: String = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if let Ok(message) = serde_json::from_str(&data) {
                return Some(message);
            }
        }
    }
}
