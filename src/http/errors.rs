//! Every refusal the HTTP front answers itself, with its status and JSON-RPC code.
//!
//! The statuses follow MCP 2026-07-28 §3–4; where the spec leaves a status
//! open (-32700, -32600) we answer 400, as the spec's reference fixture does.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use serde_json::{Value, json};

/// The response type of the whole service.
pub type HttpResponse = Response<BoxBody<Bytes, Infallible>>;

/// JSON-RPC codes used by the front.
pub(crate) mod code {
    pub(crate) const PARSE_ERROR: i32 = -32700;
    pub(crate) const INVALID_REQUEST: i32 = -32600;
    pub(crate) const METHOD_NOT_FOUND: i32 = -32601;
    pub(crate) const INVALID_PARAMS: i32 = -32602;
    pub(crate) const INTERNAL_ERROR: i32 = -32603;
    pub(crate) const HEADER_MISMATCH: i32 = -32020;
    pub(crate) const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
}

/// A request the front refuses before it reaches rmcp.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Rejection {
    /// The body is not JSON (400, -32700).
    ParseError,
    /// The body is a JSON array: MCP has no batches (400, -32600).
    Batch,
    /// The body is JSON but not a JSON-RPC request (400, -32600).
    InvalidRequest(&'static str),
    /// The body exceeds the configured cap (413, -32600).
    BodyTooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// `Content-Type` is not `application/json` (415, -32600).
    UnsupportedMediaType,
    /// `Accept` excludes JSON or SSE (406, -32600).
    NotAcceptable,
    /// The body did not arrive within the read timeout (408, -32600).
    RequestTimeout,
    /// A required MCP header is missing, differs from the body, or is malformed (400, -32020).
    HeaderMismatch(String),
    /// `params` or its required `_meta` fields are missing or malformed (400, -32602).
    InvalidParams(String),
    /// The requested protocol version is not served (400, -32022).
    UnsupportedVersion {
        /// What the client asked for.
        requested: String,
        /// What this server speaks.
        supported: Vec<String>,
    },
    /// The request needs a client capability or extension the client did not declare on it
    /// (400, -32021, `data.requiredCapabilities` naming it, e.g. `{"extensions":
    /// {"io.modelcontextprotocol/tasks": {}}}`).
    MissingCapability {
        /// What it needs, as `requiredCapabilities` names it.
        required: Value,
        /// What asked for it.
        why: String,
    },
    /// The method does not exist at 2026-07-28 (404, -32601).
    MethodNotFound(String),
    /// A backend the request needs is unreachable; not the client's fault (503, -32603,
    /// `Retry-After: 1`).
    Unavailable(String),
    /// The caller already holds as much of something as one caller may (429, -32600,
    /// `data.limit`, `Retry-After`): the server is not full, this caller's share is.
    CallerLimit {
        /// What, and what to do.
        why: String,
        /// The limit.
        limit: usize,
        /// Seconds until trying again may help.
        retry_after_secs: u32,
    },
}

impl From<crate::rmcp_gaps::Gap> for Rejection {
    fn from(gap: crate::rmcp_gaps::Gap) -> Self {
        match gap {
            crate::rmcp_gaps::Gap::Unreadable => {
                Self::InvalidRequest("the body is not a JSON-RPC message this server can read")
            }
            crate::rmcp_gaps::Gap::ParamsDoNotFit { method } => {
                Self::InvalidParams(format!("params do not match the schema of {method}"))
            }
        }
    }
}

impl Rejection {
    /// The HTTP status of the refusal.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::MethodNotFound(_) => StatusCode::NOT_FOUND,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::CallerLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// The JSON-RPC error code of the refusal.
    pub fn json_rpc_code(&self) -> i32 {
        match self {
            Self::ParseError => code::PARSE_ERROR,
            Self::Batch
            | Self::InvalidRequest(_)
            | Self::BodyTooLarge { .. }
            | Self::UnsupportedMediaType
            | Self::NotAcceptable
            | Self::RequestTimeout
            | Self::CallerLimit { .. } => code::INVALID_REQUEST,
            Self::HeaderMismatch(_) => code::HEADER_MISMATCH,
            Self::InvalidParams(_) => code::INVALID_PARAMS,
            Self::UnsupportedVersion { .. } => code::UNSUPPORTED_PROTOCOL_VERSION,
            Self::MissingCapability { .. } => code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            Self::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            Self::Unavailable(_) => code::INTERNAL_ERROR,
        }
    }

    fn message(&self) -> String {
        match self {
            Self::ParseError => "Parse error: the body is not valid JSON".into(),
            Self::Batch => {
                "Invalid Request: JSON-RPC batches are not supported; send one request per POST"
                    .into()
            }
            Self::InvalidRequest(why) => format!("Invalid Request: {why}"),
            Self::BodyTooLarge { limit } => {
                format!("Invalid Request: the body exceeds {limit} bytes")
            }
            Self::UnsupportedMediaType => {
                "Invalid Request: Content-Type must be application/json".into()
            }
            Self::NotAcceptable => {
                "Invalid Request: Accept must list application/json and text/event-stream".into()
            }
            Self::RequestTimeout => "Invalid Request: the body did not arrive in time".into(),
            Self::HeaderMismatch(why) => format!("Header mismatch: {why}"),
            Self::InvalidParams(why) => format!("Invalid params: {why}"),
            Self::UnsupportedVersion {
                requested,
                supported,
            } => format!(
                "Unsupported protocol version {requested:?}; this server supports MCP protocol versions: {}",
                supported.join(", ")
            ),
            Self::MissingCapability { why, .. } => {
                format!("Missing required client capability: {why}")
            }
            Self::MethodNotFound(method) => format!("Method not found: {method}"),
            Self::Unavailable(why) => format!("Unavailable: {why}"),
            Self::CallerLimit { why, .. } => format!("Too many requests: {why}"),
        }
    }

    fn data(&self) -> Option<Value> {
        match self {
            Self::UnsupportedVersion {
                requested,
                supported,
            } => Some(json!({ "supported": supported, "requested": requested })),
            Self::BodyTooLarge { limit } | Self::CallerLimit { limit, .. } => {
                Some(json!({ "limit": limit }))
            }
            Self::MethodNotFound(method) => Some(json!({ "method": method })),
            Self::MissingCapability { required, .. } => {
                Some(json!({ "requiredCapabilities": required }))
            }
            _ => None,
        }
    }

    /// The HTTP response: a JSON-RPC error that echoes `id` when it was read.
    pub fn into_response(self, id: Option<&Value>) -> HttpResponse {
        let mut error = json!({ "code": self.json_rpc_code(), "message": self.message() });
        if let Some(data) = self.data() {
            error["data"] = data;
        }
        let mut body = json!({ "jsonrpc": "2.0", "error": error });
        if let Some(id) = id {
            body["id"] = id.clone();
        }
        let mut response = json_response(self.status(), &body);
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        let retry_after = match &self {
            Self::Unavailable(_) => Some(1),
            Self::CallerLimit {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        };
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> HttpResponse {
    let bytes = serde_json::to_vec(body).expect("a JSON value always serializes");
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(bytes)).boxed())
        .expect("static parts are valid")
}

pub(crate) fn text_response(status: StatusCode, text: &'static str) -> HttpResponse {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Full::new(Bytes::from_static(text.as_bytes())).boxed())
        .expect("static parts are valid")
}
