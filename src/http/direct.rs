//! The *rmcp* step for a request whose whole answer is one JSON message: rmcp's handler
//! dispatch called without rmcp's per-request service.
//!
//! rmcp 3.11's `StreamableHttpService` answers every stateless request by starting a
//! service for it: it decodes the body into `ClientRequest` (an untagged enum, so every
//! method's type before the right one is tried and fails: 14 failed decodes, each with its
//! formatted error, for a `tools/list`), serializes the message back into a JSON value to
//! compare the routing headers, then `serve_directly` spawns a service loop, a task waiting
//! for it, the handler's task and the answer's send, over three channels, for one message
//! (benches/history/issue-32.md, "Where a request's instructions go"). Most of a request's instructions
//! went there.
//!
//! A 2026-07-28 request that asks for no stream — no `progressToken`, no `logLevel`, not
//! `subscriptions/listen` — may have no message but its answer (MCP 2026-07-28: progress and
//! log notifications only when asked for; no server-to-client requests). For such a request
//! this step keeps the HTTP part and hands the rest to the one in-process dispatch
//! (`handler/dispatch.rs`, rmcp's `Service::handle_request` with a typed request, its
//! context and a closed peer):
//! - which requests may take it ([`Direct::answer`]'s checks);
//! - the method's own request type decodes the body ([`decode`]): the variant rmcp's
//!   untagged decoding ends on, by the same `Deserialize`;
//! - the answer is rmcp's JSON-RPC message, with rmcp's status for it
//!   (`rmcp_gaps::jsonrpc_http_status`).
//!
//! Whatever this step cannot answer exactly as rmcp would goes to rmcp as before: a 2025-era
//! request, a notification, a stream, a session header, `Mcp-Param-*` headers or a tool whose
//! schema routes a parameter into one, a method without a typed decoder here, a body the
//! method's type does not fit. `Host` and `Origin` are no reason either way: the *host* step
//! (`host.rs`) judged them before either door, and rmcp's own allow-lists are off, so both
//! doors see only the requests it admitted. `tests/self_contained/direct_answers.rs` sends each kind of
//! request both ways and compares the answers byte for byte.

use bytes::Bytes;
use http::{StatusCode, header, request::Parts};
use http_body_util::{BodyExt as _, Full};
use rmcp::{
    ServerHandler,
    model::{
        CallToolRequest, ClientRequest, CompleteRequest, DiscoverRequest, GetMeta as _,
        GetPromptRequest, ListPromptsRequest, ListResourceTemplatesRequest, ListResourcesRequest,
        ListToolsRequest, ProtocolVersion, ReadResourceRequest, RequestId, ServerJsonRpcMessage,
    },
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::envelope::{Checked, Era};
use super::refusal::{HttpResponse, text_response};
use crate::handler::InProcess;
use crate::rmcp_gaps;

/// The one protocol version answered here: the version of the peer every context gets.
const VERSION: &str = "2026-07-28";

/// The direct answer: the HTTP part of the in-process dispatch (the *host* step has judged
/// `Host` and `Origin` for both doors already).
#[derive(Debug, Default)]
pub(crate) struct Direct;

impl Direct {
    /// The answer to the request of `parts` that the envelope step passed as `checked` (its
    /// parsed message taken out of it), through `dispatch`, or the parts back when rmcp's HTTP
    /// service must answer it.
    pub(crate) async fn answer<H: ServerHandler>(
        &self,
        dispatch: &InProcess<H>,
        parts: Parts,
        checked: &mut Checked,
    ) -> Result<HttpResponse, Parts> {
        let Some(id) = self.answerable(&parts, checked) else {
            return Err(parts);
        };
        let Some(message) = checked.message.take() else {
            return Err(parts);
        };
        let Some(request) = decode(&checked.method, message) else {
            return Err(parts);
        };
        let meta = request.get_meta();
        if meta.get_progress_token().is_some() || meta.contains_key(LOG_LEVEL_KEY) {
            return Err(parts);
        }
        let service = dispatch.handler();
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
        let peer = dispatch.closed_peer().await;
        let message = match InProcess::call(service, id.clone(), request, parts, peer).await {
            Ok(Ok(result)) => ServerJsonRpcMessage::response(result, id),
            Ok(Err(error)) => ServerJsonRpcMessage::error(error, Some(id)),
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
            .status(rmcp_gaps::jsonrpc_http_status(&message, meta_malformed))
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
            && !headers
                .keys()
                .any(|name| name.as_str().starts_with("mcp-param-"));
        if !plain {
            return None;
        }
        serde_json::from_value(checked.id.clone()?).ok()
    }
}

/// `io.modelcontextprotocol/logLevel`: a request that sets it may get log messages.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

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
}
