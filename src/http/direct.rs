//! The *rmcp* step for a request whose whole answer is one JSON message: rmcp's handler
//! dispatch called without rmcp's per-request service.
//!
//! rmcp 3.11's `StreamableHttpService` answers every stateless request by starting a
//! service for it: it decodes the body into `ClientRequest` (an untagged enum, so every
//! method's type before the right one is tried and fails: 14 failed decodes, each with its
//! formatted error, for a `tools/list`), serializes the message back into a JSON value to
//! compare the routing headers, then `serve_directly` spawns a service loop, a task waiting
//! for it, the handler's task and the answer's send, over three channels, for one message
//! (BENCHMARKS.md, "Where a request's instructions go"). Most of a request's instructions
//! went there.
//!
//! A 2026-07-28 request that asks for no stream — no `progressToken`, no `logLevel`, not
//! `subscriptions/listen` — may have no message but its answer (MCP 2026-07-28: progress and
//! log notifications only when asked for; no server-to-client requests). For such a request
//! this step does what that machinery does, with rmcp's own parts:
//! - the method's own request type decodes the body ([`decode`]): the variant rmcp's
//!   untagged decoding ends on, by the same `Deserialize`;
//! - the [`RequestContext`] is built as rmcp's service loop builds it: the request's `_meta`
//!   and extensions moved into it, the HTTP request's parts among them, a cancellation token,
//!   and a peer with the peer info rmcp gives a stateless request (its version from the
//!   header, default capabilities and client info), whose transport is closed: a handler
//!   that sends a message anyway gets rmcp's `TransportClosed`, where the spec has it send
//!   none;
//! - the handler runs through rmcp's dispatch, `Service::handle_request` (where rmcp checks
//!   the version and the `_meta` and routes the method), polled in place; if the answer is
//!   dropped first, its token is cancelled and it runs on in a task of its own, as rmcp runs
//!   every handler ([`RunsToEnd`]);
//! - the answer is rmcp's JSON-RPC message, with rmcp's status for it ([`status_of`]).
//!
//! Not carried over: rmcp's task-locals naming the request a handler serves (they are
//! `pub(crate)` in rmcp). They tag server-to-client requests, which 2026-07-28 forbids (the
//! peer refuses them by its version anyway), and rmcp's own task manager, which the tasks
//! extension here does not use (`crate::tasks`).
//!
//! Whatever this step cannot answer exactly as rmcp would goes to rmcp as before: a 2025-era
//! request, a notification, a stream, a `Host` outside the allow-list or any `Origin` (rmcp
//! judges those), a session header, `Mcp-Param-*` headers or a tool whose schema routes a
//! parameter into one, a method without a typed decoder here, a body the method's type does
//! not fit. `tests/self_contained/direct_answers.rs` sends each kind of request both ways and compares the
//! answers byte for byte.

use std::{
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderMap, StatusCode, Uri, header, request::Parts, uri::Authority};
use http_body_util::{BodyExt as _, Full};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequest, ClientCapabilities, ClientRequest, CompleteRequest, DiscoverRequest,
        ErrorCode, GetExtensions as _, GetMeta as _, GetPromptRequest, Implementation,
        InitializeRequestParams, ListPromptsRequest, ListResourceTemplatesRequest,
        ListResourcesRequest, ListToolsRequest, ProtocolVersion, ReadResourceRequest, RequestId,
        ServerJsonRpcMessage,
    },
    service::{Peer, RequestContext, RxJsonRpcMessage, Service as _, TxJsonRpcMessage},
    transport::Transport,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::envelope::{Checked, Era};
use super::refusal::{HttpResponse, text_response};
use crate::handler::Hosted;
use crate::rmcp_gaps;

/// The one protocol version answered here: the version of the peer every context gets.
const VERSION: &str = "2026-07-28";

/// Makes the wrapped handler for one request, as rmcp's service factory does.
pub(crate) type MakeHosted<H> = Arc<dyn Fn() -> Hosted<H> + Send + Sync>;

/// The direct answer: the handler's factory, the `Host` allow-list as rmcp reads it, and
/// the peer every context gets (made on first use: it needs the runtime).
pub(crate) struct Direct<H> {
    make: MakeHosted<H>,
    /// `None`: any host (rmcp's empty list).
    allowed_hosts: Option<Vec<AllowedHost>>,
    peer: tokio::sync::OnceCell<Peer<RoleServer>>,
}

impl<H: ServerHandler> Direct<H> {
    /// `allowed_hosts` as rmcp is given them (`HttpSettings::rmcp_config`): empty = any.
    pub(crate) fn new(make: MakeHosted<H>, allowed_hosts: &[String]) -> Self {
        let allowed_hosts = (!allowed_hosts.is_empty()).then(|| {
            allowed_hosts
                .iter()
                .filter_map(|h| AllowedHost::parse(h))
                .collect()
        });
        Self {
            make,
            allowed_hosts,
            peer: tokio::sync::OnceCell::new(),
        }
    }

    /// The answer to the request of `parts` that the envelope step passed as `checked` (its
    /// parsed message taken out of it), or the parts back when rmcp must answer it.
    pub(crate) async fn answer(
        &self,
        parts: Parts,
        checked: &mut Checked,
    ) -> Result<HttpResponse, Parts> {
        let Some(id) = self.answerable(&parts, checked) else {
            return Err(parts);
        };
        let Some(message) = checked.message.take() else {
            return Err(parts);
        };
        let Some(mut request) = decode(&checked.method, message) else {
            return Err(parts);
        };
        let meta = request.get_meta();
        if meta.get_progress_token().is_some() || meta.contains_key(LOG_LEVEL_KEY) {
            return Err(parts);
        }
        let service = (self.make)();
        if let ClientRequest::CallToolRequest(call) = &request
            && service
                .get_tool(&call.params.name)
                .is_some_and(|tool| routes_a_parameter(&tool.input_schema))
        {
            return Err(parts);
        }
        let meta_malformed = !meta
            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
            .is_empty();
        let peer = self.peer.get_or_init(closed_peer).await.clone();

        // As rmcp's service loop: the parts ride in the request's extensions, then `_meta`
        // and the extensions move into the context.
        request.extensions_mut().insert(parts);
        let mut context = RequestContext::new(id.clone(), peer);
        std::mem::swap(&mut context.meta, request.get_meta_mut());
        std::mem::swap(&mut context.extensions, request.extensions_mut());
        let cancel = CancellationToken::new();
        context.ct = cancel.child_token();
        let handled = RunsToEnd {
            handler: Some(Box::pin(async move {
                service.handle_request(request, context).await
            })),
            cancel: cancel.clone(),
        };
        // rmcp cancels the request's token once it has answered, too.
        let _cancel_on_exit = cancel.drop_guard();
        let message = match handled.await {
            Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id),
            Ok(Err(error)) => {
                log_fault(&id, &error);
                ServerJsonRpcMessage::error(error, Some(id))
            }
            // A panicking handler: rmcp's service gets no message and answers 500.
            Err(_) => {
                return Ok(text_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Internal Server Error: the handler ended without an answer\n",
                ));
            }
        };
        let Ok(json) = serde_json::to_vec(&message) else {
            return Ok(text_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error: the answer could not be serialized\n",
            ));
        };
        Ok(http::Response::builder()
            .status(status_of(&message, meta_malformed))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(json)).boxed())
            .expect("static parts are valid"))
    }

    /// The request's id when everything rmcp's transport would check before its handler is
    /// already settled, so that only the body's decoding and the handler remain.
    fn answerable(&self, parts: &Parts, checked: &Checked) -> Option<RequestId> {
        let headers = &parts.headers;
        let plain = checked.era == Era::Modern
            && checked.method != "subscriptions/listen"
            && headers
                .get("mcp-protocol-version")
                .is_some_and(|v| v.as_bytes() == VERSION.as_bytes())
            && !headers.contains_key("mcp-session-id")
            && !headers.contains_key(header::ORIGIN)
            && !headers
                .keys()
                .any(|name| name.as_str().starts_with("mcp-param-"))
            && self.host_is_allowed(&parts.uri, headers);
        if !plain {
            return None;
        }
        serde_json::from_value(checked.id.clone()?).ok()
    }

    /// rmcp's `Host` check (`parse_host_header`, `host_is_allowed`): the `Host` header, or
    /// the URI's authority without one, against the allow-list, the port only where the
    /// entry names one. `false` when rmcp would refuse it or could: rmcp then answers.
    fn host_is_allowed(&self, uri: &Uri, headers: &HeaderMap) -> bool {
        let authority = match headers.get(header::HOST) {
            Some(host) => match host.to_str().ok().map(Authority::try_from) {
                Some(Ok(authority)) => authority,
                _ => return false,
            },
            None => match uri.authority() {
                Some(authority) => authority.clone(),
                None => return false,
            },
        };
        let Some(allowed) = &self.allowed_hosts else {
            return true;
        };
        let host = normalize_host(authority.host());
        let port = authority.port_u16();
        allowed
            .iter()
            .any(|entry| entry.host == host && entry.port.is_none_or(|p| port == Some(p)))
    }
}

/// The handler's future, polled in place rather than in a task of its own; if the answer is
/// dropped before the handler is done (a client gone), the request's token is cancelled and the
/// rest of the handler runs on in a task, as rmcp runs every handler. A panic in the handler is
/// its answer (`Err`), as a task's would be.
///
/// rmcp spawns a task per handler; on the local server's multi-threaded runtime that task may
/// wake the other worker, and every request pays for it (BENCHMARKS.md, issue 32).
struct RunsToEnd<T: Send + 'static> {
    handler: Option<BoxFuture<'static, T>>,
    cancel: CancellationToken,
}

impl<T: Send + 'static> Future for RunsToEnd<T> {
    type Output = Result<T, Box<dyn std::any::Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(handler) = self.handler.as_mut() else {
            return Poll::Pending;
        };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| handler.as_mut().poll(cx)));
        let answer = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(answer)) => Ok(answer),
            Err(panic) => Err(panic),
        };
        // Done, or a future that panicked and may not be polled again: nothing left to run.
        self.handler = None;
        Poll::Ready(answer)
    }
}

impl<T: Send + 'static> Drop for RunsToEnd<T> {
    fn drop(&mut self) {
        if let Some(handler) = self.handler.take() {
            self.cancel.cancel();
            // Outside a runtime (one shutting down) there is nowhere to run it: it is dropped.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(handler);
            }
        }
    }
}

/// `io.modelcontextprotocol/logLevel`: a request that sets it may get log messages.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// One entry of the `Host` allow-list, as rmcp's `parse_allowed_authority` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        Some(match Authority::try_from(entry) {
            Ok(authority) => Self {
                host: normalize_host(authority.host()),
                port: authority.port_u16(),
            },
            Err(_) => Self {
                host: normalize_host(entry),
                port: None,
            },
        })
    }
}

/// rmcp's `normalize_host`: brackets off, lower case.
fn normalize_host(host: &str) -> String {
    host.trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase()
}

/// The request in `message` (the body as the envelope step parsed it, without its id), decoded
/// by its method's own type: the variant rmcp's untagged `ClientRequest` would end on, by the
/// same `Deserialize` (the method is a constant of each type, so every variant before it fails
/// on the method), from a parsed value as rmcp's untagged decoding reads from its buffered
/// one. `None` for a method without a decoder here, or a body its type does not fit (rmcp then
/// decodes it, into `CustomRequest` or a refusal).
pub(crate) fn decode(method: &str, message: Map<String, Value>) -> Option<ClientRequest> {
    // rmcp reads a message's shape from its keys first (`JsonRpcMessageShape`): one with a
    // `result` or an `error` beside its method is no request.
    if message.contains_key("result") || message.contains_key("error") {
        return None;
    }
    let (_, typed) = DECODERS.iter().find(|(name, _)| *name == method)?;
    typed(Value::Object(message))
}

/// One method's decoder: its own request type, into the `ClientRequest` variant.
type Decoder = fn(Value) -> Option<ClientRequest>;

fn typed<T: DeserializeOwned + Into<ClientRequest>>(body: Value) -> Option<ClientRequest> {
    serde_json::from_value::<T>(body).ok().map(Into::into)
}

/// The methods [`decode`] decodes, each with its type.
const DECODERS: &[(&str, Decoder)] = &[
    ("tools/list", typed::<ListToolsRequest>),
    ("tools/call", typed::<CallToolRequest>),
    ("server/discover", typed::<DiscoverRequest>),
    ("prompts/list", typed::<ListPromptsRequest>),
    ("prompts/get", typed::<GetPromptRequest>),
    ("resources/list", typed::<ListResourcesRequest>),
    (
        "resources/templates/list",
        typed::<ListResourceTemplatesRequest>,
    ),
    ("resources/read", typed::<ReadResourceRequest>),
    ("completion/complete", typed::<CompleteRequest>),
];

/// Whether a tool's input schema names a header for any of its parameters (`x-mcp-header`):
/// rmcp then checks the `Mcp-Param-*` headers against the arguments, and answers.
fn routes_a_parameter(schema: &serde_json::Map<String, serde_json::Value>) -> bool {
    fn walk(value: &serde_json::Value) -> bool {
        match value {
            serde_json::Value::Object(object) => routes_a_parameter(object),
            serde_json::Value::Array(items) => items.iter().any(walk),
            _ => false,
        }
    }
    schema.contains_key("x-mcp-header") || schema.values().any(walk)
}

/// rmcp's HTTP status for a 2026-07-28 answer (`jsonrpc_http_status`): 400 for a version, a
/// missing capability, a header mismatch, or invalid params when the request's `_meta` lacks
/// what 2026-07-28 requires; 404 for an unknown method; 200 otherwise.
fn status_of(message: &ServerJsonRpcMessage, meta_malformed: bool) -> StatusCode {
    let ServerJsonRpcMessage::Error(error) = message else {
        return StatusCode::OK;
    };
    match error.error.code {
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
        | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
        | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
        ErrorCode::INVALID_PARAMS if meta_malformed => StatusCode::BAD_REQUEST,
        ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// rmcp's warn on an error answer (`response error`), for a server's fault only: a client's
/// refusal is noted by the handler at info (`rmcp_gaps::QuietRefusals` keeps rmcp's own line
/// for it out). The code and message, never the data, which may echo arguments.
fn log_fault(id: &RequestId, error: &ErrorData) {
    if !rmcp_gaps::is_client_refusal(error.code.0) {
        tracing::warn!(%id, code = error.code.0, message = %error.message, "response error");
    }
}

/// A peer whose transport is closed, with the peer info rmcp gives a stateless 2026-07-28
/// request (`peer_info_for_stateless_request`: the header's version, default capabilities
/// and client info). rmcp makes peers only for a service it runs, so this runs one on a
/// transport that ends at once, and keeps its peer.
async fn closed_peer() -> Peer<RoleServer> {
    let info =
        InitializeRequestParams::new(ClientCapabilities::default(), Implementation::default())
            .with_protocol_version(ProtocolVersion::V_2026_07_28);
    let running = rmcp::service::serve_directly(NoHandler, Ended, Some(info));
    let peer = running.peer().clone();
    // Its loop ends on the first receive; once it has, every send fails at once.
    let _ = running.waiting().await;
    peer
}

/// The service [`closed_peer`] runs: it never receives a request.
struct NoHandler;

impl ServerHandler for NoHandler {}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn body(method: &str, params: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": method, "params": params
        }))
        .unwrap()
    }

    /// The body as the envelope step leaves it: parsed, its id taken out.
    fn parsed(body: &[u8]) -> Map<String, Value> {
        let mut message: Map<String, Value> = serde_json::from_slice(body).unwrap();
        message.remove("id");
        message
    }

    fn params_of(method: &str) -> serde_json::Value {
        let meta = serde_json::json!({"io.modelcontextprotocol/protocolVersion": VERSION});
        match method {
            "tools/call" => serde_json::json!({"name": "echo", "arguments": {}, "_meta": meta}),
            "prompts/get" => serde_json::json!({"name": "p", "_meta": meta}),
            "resources/read" => serde_json::json!({"uri": "x://1", "_meta": meta}),
            "completion/complete" => serde_json::json!({
                "ref": {"type": "ref/prompt", "name": "p"},
                "argument": {"name": "a", "value": "b"},
                "_meta": meta
            }),
            _ => serde_json::json!({"_meta": meta}),
        }
    }

    #[test]
    fn each_method_decodes_to_the_variant_rmcp_decodes_it_to() {
        for (method, _) in DECODERS {
            let body = body(method, params_of(method));
            let ours = decode(method, parsed(&body)).unwrap_or_else(|| panic!("{method} decodes"));
            let rmcp: rmcp::model::ClientJsonRpcMessage = serde_json::from_slice(&body).unwrap();
            let rmcp::model::JsonRpcMessage::Request(rmcp) = rmcp else {
                panic!("{method}: rmcp reads a request")
            };
            assert_eq!(ours.method(), *method);
            assert_eq!(
                std::mem::discriminant(&ours),
                std::mem::discriminant(&rmcp.request),
                "{method}"
            );
            assert_eq!(
                serde_json::to_value(&ours).unwrap(),
                serde_json::to_value(&rmcp.request).unwrap(),
                "{method}"
            );
            assert!(
                ours.get_meta().protocol_version().is_some(),
                "{method}: _meta read"
            );
        }
    }

    #[test]
    fn a_body_the_type_does_not_fit_is_left_to_rmcp() {
        let body = body("tools/call", serde_json::json!({"arguments": {}}));
        assert!(decode("tools/call", parsed(&body)).is_none());
        assert!(decode("custom/thing", parsed(&body)).is_none());
        let mut with_result = parsed(&self::body("tools/list", params_of("tools/list")));
        assert!(decode("tools/list", with_result.clone()).is_some());
        with_result.insert("result".into(), serde_json::json!({}));
        assert!(decode("tools/list", with_result).is_none());
    }

    #[test]
    fn a_schema_that_routes_a_parameter_into_a_header_is_seen_at_any_depth() {
        let plain = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let routed = serde_json::json!({"type": "object", "properties": {
            "outer": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
        }});
        assert!(!routes_a_parameter(plain.as_object().unwrap()));
        assert!(routes_a_parameter(routed.as_object().unwrap()));
    }

    #[test]
    fn the_status_of_an_answer_is_rmcps() {
        let error =
            |code| ServerJsonRpcMessage::error(ErrorData::new(ErrorCode(code), "x", None), None);
        assert_eq!(status_of(&error(-32601), false), StatusCode::NOT_FOUND);
        assert_eq!(status_of(&error(-32602), false), StatusCode::OK);
        assert_eq!(status_of(&error(-32602), true), StatusCode::BAD_REQUEST);
        assert_eq!(status_of(&error(-32603), false), StatusCode::OK);
    }
}
