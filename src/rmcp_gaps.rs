//! Everything that exists only because rmcp 3.11 behaves a certain way.
//!
//! Each item names the rmcp behaviour it covers. When an rmcp release fixes
//! one, delete the item and its call: the spec's answer is then rmcp's own,
//! and the tests that pin it (`// rmcp 3.11:` in `tests/`) keep proving it.
//!
//! On an rmcp upgrade, run `cargo test --test self_contained -- forwarding::` first: the wrapper
//! (`handler/mod.rs`, `Hosted`) forwards rmcp's `ServerHandler` methods by hand,
//! and a method rmcp adds is answered -32601 until it is forwarded; the test reads
//! rmcp's request and notification unions and fails on one without a row
//! (ARCHITECTURE.md, "An rmcp upgrade").
//!
//! | item | rmcp 3.11 behaviour | used by |
//! |---|---|---|
//! | [`trim_mcp_headers`] | compares `Mcp-*` header values untrimmed, so `Mcp-Method: tools/list ` (legal optional whitespace, RFC 9110 §5.5) would mismatch the body | `http/pipeline.rs` |
//! | [`name_both_accept_types`] | refuses an `Accept` that allows JSON and SSE without naming both (`*/*`, `application/*`, none at all) | `http/media_types.rs` |
//! | [`decodes_like_rmcp`], [`may_hide_decoding_gap`] | answers an unreadable message with a plain-text 415, and `params` that do not fit a method's type with -32601 (it falls back to a custom request) | `http/envelope.rs` |
//! | [`list_cursor_is_not_a_string`] | silently drops a list `cursor` of the wrong type (serves the first page instead of -32602) | `http/envelope.rs` |
//! | [`stamp_server_info`] | puts `_meta["io.modelcontextprotocol/serverInfo"]` on `server/discover` only | `handler/mod.rs` |
//! | [`acknowledge_task_ids`] | `SubscriptionFilter` has no `taskIds` (the tasks extension), so its acknowledgment cannot name the accepted ones | `http/pipeline.rs` |
//! | [`QuietRefusals`], [`is_client_refusal`] | logs every error answer at warn (`response error`, with its data, which may echo arguments), and a client closing its stream before the last message at error (`failed to send pending response during drain`, or `fail to response message` outside the drain) | `logging.rs`; `handler/mod.rs` notes the client's refusals at info instead |
//! | [`send_task_status`] | `SubscriptionSink::send` refuses `notifications/tasks` | `listen/stream.rs` |
//! | [`jsonrpc_http_status`] | the HTTP status of a 2026-07-28 answer is decided by `jsonrpc_http_status` (`transport/streamable_http_server/tower.rs`), which is private: this mirrors it; delete when rmcp exposes it | `http/direct.rs` |
//! | [`closed_peer`], [`PeerLoop`] | `Peer::new` is `pub(crate)` (`service.rs`): a peer comes only from a service loop rmcp runs (`serve_directly`), so each runs one, with a handler that receives nothing, over a transport of ours (closed; forwarding notifications); delete when rmcp offers a public `Peer<RoleServer>` over a sink | `handler/dispatch.rs` (the fast path, task rounds, the list probe) |

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use http_body_util::{BodyExt, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use rmcp::model::{
    ClientCapabilities, DetailedTask, ErrorCode, GetMeta, Implementation, InitializeRequestParams,
    MetaObject, ProtocolVersion, RequestId, ServerJsonRpcMessage, ServerNotification,
    TaskStatusNotification, TaskStatusNotificationParams,
};
use rmcp::service::{
    Peer, RoleServer, RunningService, RxJsonRpcMessage, ServiceError, TxJsonRpcMessage,
};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Trims optional whitespace (RFC 9110 §5.5) from the `Mcp-*` headers, so
/// rmcp's own comparisons see the values the front checked.
///
/// rmcp 3.11: compares the raw header value with the body.
pub(crate) fn trim_mcp_headers(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|name| name.as_str().starts_with("mcp-"))
        .cloned()
        .collect();
    for name in names {
        if let header::Entry::Occupied(mut entry) = headers.entry(name) {
            for value in entry.iter_mut() {
                let bytes = value.as_bytes();
                let trimmed = bytes.trim_ascii();
                if trimmed.len() != bytes.len()
                    && let Ok(new) = HeaderValue::from_bytes(trimmed)
                {
                    *value = new;
                }
            }
        }
    }
}

/// Rewrites an accepted `Accept` to name both types, unless it already does.
///
/// rmcp 3.11: insists on `application/json` and `text/event-stream` by name,
/// where the spec (and HTTP) also accepts `*/*`, `application/*` + `text/*`,
/// or no `Accept` at all (curl, scripts).
pub(crate) fn name_both_accept_types(headers: &mut HeaderMap, already_named: bool) {
    if !already_named {
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
    }
}

/// A decoding gap: what rmcp would answer wrongly, and the spec's answer instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Gap {
    /// Not a JSON-RPC message rmcp can read: the spec's -32600 (rmcp: plain-text 415).
    Unreadable,
    /// `params` do not fit the method's schema: the spec's -32602 (rmcp: -32601).
    ParamsDoNotFit {
        /// The method.
        method: String,
    },
}

/// Methods rmcp decodes into a typed request. When `params` do not fit the
/// type, rmcp 3.11 falls back to a custom request and answers -32601, as if
/// the method did not exist.
const TYPED_METHODS: &[&str] = &[
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/directory/read",
    "completion/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "skills/list",
    "skills/get",
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// 2026-07-28 methods: in a 2025-era request they are unknown (-32601), not malformed.
const MODERN_ONLY_METHODS: &[&str] = &["server/discover", "subscriptions/listen"];

/// Decodes the body as rmcp will and says where rmcp would answer wrongly.
///
/// `modern`: a 2026-07-28 request; `has_params`: the body has `params`.
/// rmcp 3.11: an unreadable message is a plain-text 415; `params` that fail
/// the method's type are -32601 for most methods, and a silently dropped
/// `params` for the lists.
pub(crate) fn decodes_like_rmcp(body: &[u8], modern: bool, has_params: bool) -> Result<(), Gap> {
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
    let message =
        serde_json::from_slice::<ClientJsonRpcMessage>(body).map_err(|_| Gap::Unreadable)?;
    let JsonRpcMessage::Request(request) = message else {
        return Ok(());
    };
    let malformed = match &request.request {
        ClientRequest::CustomRequest(custom) => {
            let method = custom.method.as_str();
            TYPED_METHODS.contains(&method) && (modern || !MODERN_ONLY_METHODS.contains(&method))
        }
        ClientRequest::ListToolsRequest(list) => has_params && list.params.is_none(),
        ClientRequest::ListPromptsRequest(list) => has_params && list.params.is_none(),
        ClientRequest::ListResourcesRequest(list) => has_params && list.params.is_none(),
        ClientRequest::ListResourceTemplatesRequest(list) => has_params && list.params.is_none(),
        _ => false,
    };
    if malformed {
        return Err(Gap::ParamsDoNotFit {
            method: request.request.method().to_string(),
        });
    }
    Ok(())
}

/// Whether rmcp's answer (its HTTP status) to a request for `method` may hide
/// a decoding gap: a 415 (an unreadable message) or, for a 2026-07-28 request,
/// a 404 (-32601) for a method rmcp knows (params that did not fit its type).
///
/// Checked only after rmcp has refused, so the happy path never decodes twice.
pub(crate) fn may_hide_decoding_gap(method: &str, modern: bool, status: http::StatusCode) -> bool {
    status == http::StatusCode::UNSUPPORTED_MEDIA_TYPE
        || (status == http::StatusCode::NOT_FOUND && modern && TYPED_METHODS.contains(&method))
}

const LIST_METHODS: &[&str] = &[
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// Whether a list request's `cursor` is there but not a string.
///
/// rmcp 3.11: drops the whole `params` of a list that do not fit and serves
/// the first page, where the spec wants -32602.
pub(crate) fn list_cursor_is_not_a_string(
    method: &str,
    params: Option<&serde_json::Map<String, Value>>,
) -> bool {
    LIST_METHODS.contains(&method)
        && params
            .and_then(|p| p.get("cursor"))
            .is_some_and(|cursor| !cursor.is_string())
}

/// The `_meta` key of the server's identity.
const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Puts `serverInfo` (serialized once at start-up) into a result's `_meta`.
///
/// rmcp 3.11: only `server/discover` carries it; 2026-07-28 wants it on every result.
pub(crate) fn stamp_server_info(meta: &mut Option<MetaObject>, server_info: &Value) {
    meta.get_or_insert_default()
        .0
        .insert(SERVER_INFO_KEY.to_owned(), server_info.clone());
}

/// The most of a listen response read while looking for its acknowledgment (it comes first;
/// past this the response passes unchanged).
const ACKNOWLEDGMENT_SEARCH_BYTES: usize = 256 * 1024;

/// Adds `notifications.taskIds` (the accepted task ids) to the acknowledgment of a listen
/// response; every other byte passes unchanged, as rmcp wrote it.
///
/// rmcp 3.11: `SubscriptionFilter` has no `taskIds`, so the acknowledgment it writes cannot
/// echo the accepted ones, as the tasks extension requires.
pub(crate) fn acknowledge_task_ids(
    response: Response<BoxBody<Bytes, Infallible>>,
    task_ids: Vec<String>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !event_stream {
        // A JSON answer is an error: nothing was acknowledged.
        return response;
    }
    let (parts, body) = response.into_parts();
    struct State {
        body: BoxBody<Bytes, Infallible>,
        pending: Vec<u8>,
        /// `Some` until the acknowledgment has been rewritten.
        task_ids: Option<Vec<String>>,
    }
    let state = State {
        body,
        pending: Vec::new(),
        task_ids: Some(task_ids),
    };
    let frames = futures::stream::unfold(state, |mut state| async move {
        loop {
            let Some(frame) = state.body.frame().await else {
                // The stream ended: whatever was held back goes out as it came.
                if state.pending.is_empty() {
                    return None;
                }
                let rest = Bytes::from(std::mem::take(&mut state.pending));
                return Some((Ok::<_, Infallible>(Frame::data(rest)), state));
            };
            let Ok(frame) = frame;
            let data = match frame.into_data() {
                Ok(data) => data,
                Err(other) => return Some((Ok(other), state)),
            };
            let Some(task_ids) = state.task_ids.as_ref() else {
                return Some((Ok(Frame::data(data)), state));
            };
            state.pending.extend_from_slice(&data);
            let mut out = Vec::new();
            while let Some(end) = event_end(&state.pending) {
                let event: Vec<u8> = state.pending.drain(..end).collect();
                match with_task_ids(&event, task_ids) {
                    Some(rewritten) => {
                        out.extend_from_slice(&rewritten);
                        out.append(&mut state.pending);
                        state.task_ids = None;
                        break;
                    }
                    None => out.extend_from_slice(&event),
                }
            }
            if state.task_ids.is_some() && state.pending.len() > ACKNOWLEDGMENT_SEARCH_BYTES {
                out.append(&mut state.pending);
                state.task_ids = None;
            }
            if !out.is_empty() {
                return Some((Ok(Frame::data(Bytes::from(out))), state));
            }
        }
    });
    Response::from_parts(parts, BoxBody::new(StreamBody::new(frames)))
}

/// Where the first complete SSE event in `buffer` ends (after its blank line).
fn event_end(buffer: &[u8]) -> Option<usize> {
    let find = |needle: &[u8]| {
        buffer
            .windows(needle.len())
            .position(|w| w == needle)
            .map(|at| at + needle.len())
    };
    match (find(b"\n\n"), find(b"\r\n\r\n")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The event with `taskIds` added, if it is the acknowledgment.
fn with_task_ids(event: &[u8], task_ids: &[String]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(event).ok()?;
    let data: String = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect::<Vec<_>>()
        .join("\n");
    let mut message: Value = serde_json::from_str(&data).ok()?;
    if message.get("method")?.as_str()? != "notifications/subscriptions/acknowledged" {
        return None;
    }
    let notifications = message
        .pointer_mut("/params/notifications")?
        .as_object_mut()?;
    notifications.insert("taskIds".into(), Value::from(task_ids.to_vec()));
    let mut out = String::with_capacity(event.len() + 64);
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("data:"))
    {
        out.push_str(line);
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&serde_json::to_string(&message).ok()?);
    out.push_str("\n\n");
    Some(out.into_bytes())
}

/// Sends `notifications/tasks` with `task` on the listen stream `subscription` (the listen
/// request's id, in `_meta` as on every stream message).
///
/// rmcp 3.11: `SubscriptionSink::send` refuses task status notifications (its filter has no
/// `taskIds`), so the stream sends them through the request's peer, as the sink would.
pub(crate) async fn send_task_status(
    peer: &Peer<RoleServer>,
    subscription: &RequestId,
    task: DetailedTask,
) -> Result<(), ServiceError> {
    let mut notification = ServerNotification::TaskStatusNotification(TaskStatusNotification::new(
        TaskStatusNotificationParams::new(task),
    ));
    notification
        .get_meta_mut()
        .set_subscription_id(subscription.clone());
    peer.send_notification(notification).await
}

/// rmcp's HTTP status for a 2026-07-28 answer: 400 for a version, a missing capability, a
/// header mismatch, or invalid params when the request's `_meta` lacks what 2026-07-28
/// requires; 404 for an unknown method; 200 otherwise.
///
/// rmcp 3.11: mirrors `jsonrpc_http_status` (`transport/streamable_http_server/tower.rs`), which
/// is private; the in-process dispatch's HTTP answers (`http/direct.rs`) must carry the status
/// rmcp's service would. Delete when rmcp exposes it (or an answer's status) publicly.
pub(crate) fn jsonrpc_http_status(
    message: &ServerJsonRpcMessage,
    request_meta_malformed: bool,
) -> http::StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return http::StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => http::StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if request_meta_malformed => http::StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => http::StatusCode::NOT_FOUND,
        _ => http::StatusCode::OK,
    }
}

/// The peer info rmcp gives a stateless 2026-07-28 request (`peer_info_for_stateless_request`,
/// `tower.rs`: the header's version, default capabilities and client info).
fn stateless_peer_info() -> InitializeRequestParams {
    InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
        .with_protocol_version(ProtocolVersion::V_2026_07_28)
}

/// A peer whose transport is closed, with the peer info of a stateless 2026-07-28 request: a
/// handler that sends a message anyway gets `TransportClosed`.
///
/// rmcp 3.11: `Peer::new` is `pub(crate)` (`service.rs`); rmcp makes a peer only for a service
/// loop it runs (`serve_directly`). So this runs one, on a transport that ends at once, and
/// keeps its peer. Delete when rmcp offers a public way to make a `Peer<RoleServer>` over a
/// sink of ours.
pub(crate) async fn closed_peer() -> Peer<RoleServer> {
    let running = rmcp::service::serve_directly(NoHandler, Ended, Some(stateless_peer_info()));
    let peer = running.peer().clone();
    // Its loop ends on the first receive; once it has, every send fails at once.
    let _ = running.waiting().await;
    peer
}

/// A peer whose every notification is handed to a function of ours, for as long as this value
/// lives (the loop stops when it is dropped); a request to the client fails (2026-07-28 has
/// none).
///
/// rmcp 3.11: as [`closed_peer`], rmcp makes a peer only for a service loop it runs: this runs
/// one (a task) over a transport that forwards what the peer sends and receives nothing. Delete
/// with [`closed_peer`].
pub(crate) struct PeerLoop(RunningService<RoleServer, NoHandler>);

impl PeerLoop {
    /// The loop whose peer hands each notification to `forward`.
    pub(crate) fn forwarding(forward: impl Fn(ServerNotification) + Send + 'static) -> Self {
        let transport = Forwarding {
            forward: Box::new(forward),
            open: CancellationToken::new(),
        };
        Self(rmcp::service::serve_directly(
            NoHandler,
            transport,
            Some(stateless_peer_info()),
        ))
    }

    /// The peer.
    pub(crate) fn peer(&self) -> &Peer<RoleServer> {
        self.0.peer()
    }
}

/// The service the peers' loops run: it never receives a request.
pub(crate) struct NoHandler;

impl rmcp::ServerHandler for NoHandler {}

/// A transport with nothing to receive and nowhere to send.
struct Ended;

impl Transport<RoleServer> for Ended {
    type Error = std::io::Error;

    fn send(
        &mut self,
        _item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(Err(std::io::Error::from(std::io::ErrorKind::NotConnected)))
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        std::future::ready(None)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        std::future::ready(Ok(()))
    }
}

/// [`PeerLoop::forwarding`]'s transport: notifications to `forward`, anything else refused;
/// nothing received until the loop is closed.
struct Forwarding {
    forward: Box<dyn Fn(ServerNotification) + Send>,
    open: CancellationToken,
}

impl Transport<RoleServer> for Forwarding {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(match item {
            ServerJsonRpcMessage::Notification(sent) => {
                (self.forward)(sent.notification);
                Ok(())
            }
            _ => Err(std::io::Error::from(std::io::ErrorKind::Unsupported)),
        })
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        let open = self.open.clone();
        async move {
            open.cancelled().await;
            None
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.open.cancel();
        std::future::ready(Ok(()))
    }
}

/// The JSON-RPC codes that answer a client's mistake rather than a server fault: parse, request,
/// method and params errors, resource not found (2025), the MCP header mismatch, a missing
/// client capability, an unsupported protocol version, URL elicitation required.
pub(crate) fn is_client_refusal(code: i32) -> bool {
    matches!(
        code,
        -32700 | -32600 | -32601 | -32602 | -32002 | -32020 | -32021 | -32022 | -32042
    )
}

/// Keeps two of rmcp's lines out of the logs: its warn on an error answer that refuses a client's
/// mistake (the handler notes those at info, without their data), and its error when a client
/// closed its stream before the last message was sent (on this transport, a client that went
/// away: a listen stream closed normally). Error answers for server faults still log at warn.
///
/// rmcp 3.11: `service.rs` logs `response error` at warn for every `Err` a handler returns, and
/// `failed to send pending response during drain` (or, outside its drain, `fail to response
/// message`) at error when the transport is gone.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct QuietRefusals;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for QuietRefusals {
    fn event_enabled(
        &self,
        event: &tracing::Event<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        if !event.metadata().target().starts_with("rmcp::service") {
            return true;
        }
        let mut seen = Seen::default();
        event.record(&mut seen);
        match seen.message.as_str() {
            "failed to send pending response during drain" => false,
            // The same, outside the drain: the client's stream is gone.
            "fail to response message" => !seen.error.contains("closed"),
            "response error" => !seen.code.is_some_and(is_client_refusal),
            _ => true,
        }
    }
}

/// What [`QuietRefusals`] reads off an rmcp event: its message and the error code it names.
#[derive(Default)]
struct Seen {
    message: String,
    code: Option<i32>,
    error: String,
}

impl tracing::field::Visit for Seen {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            // `ErrorData { code: ErrorCode(-32602), … }`
            "error" => {
                let text = format!("{value:?}");
                self.error.clone_from(&text);
                self.code = text
                    .split_once("ErrorCode(")
                    .and_then(|(_, rest)| rest.split_once(')'))
                    .and_then(|(code, _)| code.parse().ok());
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_of_an_answer_is_rmcps() {
        use rmcp::ErrorData;
        let error =
            |code| ServerJsonRpcMessage::error(ErrorData::new(ErrorCode(code), "x", None), None);
        let status = jsonrpc_http_status;
        assert_eq!(status(&error(-32601), false), http::StatusCode::NOT_FOUND);
        assert_eq!(status(&error(-32602), false), http::StatusCode::OK);
        assert_eq!(status(&error(-32602), true), http::StatusCode::BAD_REQUEST);
        assert_eq!(status(&error(-32603), false), http::StatusCode::OK);
        assert_eq!(status(&error(-32022), false), http::StatusCode::BAD_REQUEST);
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn params_that_do_not_fit_a_known_method_are_a_gap() {
        for (method, params) in [
            ("tools/call", r#""name":5"#),
            ("tools/call", r#""name":"5","arguments":[]"#),
            ("prompts/get", r#""arguments":{}"#),
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"r","method":"{method}","params":{{{META},{params}}}}}"#
            );
            assert_eq!(
                decodes_like_rmcp(body.as_bytes(), true, true),
                Err(Gap::ParamsDoNotFit {
                    method: method.into()
                }),
                "{body}"
            );
            assert!(may_hide_decoding_gap(
                method,
                true,
                http::StatusCode::NOT_FOUND
            ));
        }
        assert_eq!(
            decodes_like_rmcp(b"{\"jsonrpc\":\"2.0\",\"id\":true}", true, false),
            Err(Gap::Unreadable)
        );
    }

    #[test]
    fn a_method_rmcp_does_not_know_is_not_a_gap() {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"x/y","params":{{{META}}}}}"#);
        assert_eq!(decodes_like_rmcp(body.as_bytes(), true, true), Ok(()));
        assert!(!may_hide_decoding_gap(
            "x/y",
            true,
            http::StatusCode::NOT_FOUND
        ));
    }

    #[test]
    fn only_headers_that_name_neither_type_are_rewritten() {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        name_both_accept_types(&mut headers, true);
        assert_eq!(headers[header::ACCEPT], "*/*");
        name_both_accept_types(&mut headers, false);
        assert_eq!(
            headers[header::ACCEPT],
            "application/json, text/event-stream"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_acknowledgment_gains_the_task_ids_and_nothing_else_changes() {
        let ack = r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}"#;
        let later = "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n";
        // Split mid-event, as a network would.
        let whole = format!("event: message\ndata: {ack}\n\n{later}");
        let (a, b) = whole.split_at(20);
        let chunks = vec![
            Ok::<_, Infallible>(Frame::data(Bytes::from(a.to_owned()))),
            Ok(Frame::data(Bytes::from(b.to_owned()))),
        ];
        let response = Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(BoxBody::new(StreamBody::new(futures::stream::iter(chunks))))
            .unwrap();
        let response = acknowledge_task_ids(response, vec!["t-1".into()]);
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = std::str::from_utf8(&bytes).unwrap();
        let (first, rest) = text.split_once("\n\n").unwrap();
        assert!(first.starts_with("event: message\ndata: "), "{first}");
        let message: Value = serde_json::from_str(first.split_once("data: ").unwrap().1).unwrap();
        assert_eq!(
            message["params"]["notifications"]["taskIds"],
            serde_json::json!(["t-1"])
        );
        assert_eq!(
            message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        assert_eq!(rest, later);
    }

    #[test]
    fn mcp_headers_lose_their_optional_whitespace() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-method", HeaderValue::from_static(" tools/list\t"));
        headers.insert("x-other", HeaderValue::from_static(" kept "));
        trim_mcp_headers(&mut headers);
        assert_eq!(headers["mcp-method"], "tools/list");
        assert_eq!(headers["x-other"], " kept ");
    }

    #[test]
    fn rmcp_s_lines_for_a_clients_doing_are_left_out_and_server_faults_kept() {
        use std::io::Write;
        use std::sync::{Arc, Mutex};
        use tracing_subscriber::layer::SubscriberExt as _;

        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish()
            .with(QuietRefusals);
        tracing::subscriber::with_default(subscriber, || {
            let refusal = rmcp::model::ErrorData::invalid_params("Resource not found", None);
            let fault = rmcp::model::ErrorData::internal_error("the store is down", None);
            tracing::warn!(target: "rmcp::service", id = 1, error = ?refusal, "response error");
            tracing::warn!(target: "rmcp::service", id = 2, error = ?fault, "response error");
            tracing::error!(target: "rmcp::service", error = "closed", "failed to send pending response during drain");
            tracing::error!(target: "rmcp::service", error = %"channel closed", "fail to response message");
            tracing::error!(target: "rmcp::service", error = %"serialize", "fail to response message");
            tracing::warn!(target: "mcp_lambda::handler", "response error");
        });
        let log = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = log.lines().collect();
        assert_eq!(lines.len(), 3, "{log}");
        assert!(
            lines[0].contains("id=2") && lines[0].contains("-32603"),
            "{log}"
        );
        assert!(lines[1].contains("serialize"), "{log}");
        assert!(lines[2].contains("mcp_lambda::handler"), "{log}");
    }
}
