//! [`Rejection`]: every refusal the front answers itself, one type for all its steps.
//!
//! Each step of the pipeline returns `Result<_, Rejection>`; the pipeline turns a refusal into
//! its answer in one place ([`Rejection::into_response`]), echoing the JSON-RPC id once the
//! envelope step has read it. Each variant knows its status, its JSON-RPC code (when the answer
//! is a JSON-RPC error), its data and its headers, as axum's rejections do. Decisions made
//! outside the front convert into it: the listen plan's [`ListenRefusal`] and auth's
//! [`Refusal`](crate::auth::Refusal) (through [`AuthChallenge`]).
//!
//! The statuses follow MCP 2026-07-28 §3–4; where the spec leaves a status
//! open (-32700, -32600) we answer 400, as the spec's reference fixture does. The refusals made
//! before the body is read (origin secret, `Host` and its allow-list, `Origin`, routes) are
//! plain text: no JSON-RPC message has been read to answer.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use serde_json::{Value, json};

use crate::listen::ListenRefusal;

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

/// A request the front refuses: what every step returns, with its status, JSON-RPC code and
/// data.
///
/// ```
/// use mcp_lambda::http::Rejection;
///
/// let refusal = Rejection::BodyTooLarge { limit: 1024 };
/// assert_eq!(refusal.status(), http::StatusCode::PAYLOAD_TOO_LARGE);
/// assert_eq!(refusal.json_rpc_code(), Some(-32600));
/// let answer = refusal.into_response(Some(&serde_json::json!(7)));
/// assert_eq!(answer.headers()["cache-control"], "no-store");
/// assert_eq!(Rejection::RepeatedHost.json_rpc_code(), None);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Rejection {
    /// The CDN's origin secret is missing or wrong (403, plain text).
    NotThroughCdn,
    /// The request repeats `Host` (400, plain text).
    RepeatedHost,
    /// The request has no `Host` (nor an authority in its target), or one that is no
    /// authority (400, plain text); the text says which.
    BadHost(&'static str),
    /// The `Host` is not in `MCP_ALLOWED_HOSTS`: a DNS-rebinding guard (403, plain text).
    ForeignHost,
    /// The `Origin` is not in `MCP_ALLOWED_ORIGINS`, or is no origin (403, plain text); the
    /// text says which.
    ForeignOrigin(&'static str),
    /// Nothing is served here (404, plain text); the text says what.
    NotFound(&'static str),
    /// The MCP path takes `POST` only (405, plain text, `Allow: POST`).
    MethodNotAllowed,
    /// A task round whose token this server did not hand out, or that has expired (403,
    /// plain text).
    ForgedTaskRound,
    /// No usable bearer token, or one without the scopes the operation needs (401 or 403,
    /// `WWW-Authenticate`, and RFC 6750's error object as the body).
    Unauthorized(AuthChallenge),
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
    /// The request head exceeds what the local server reads (431, -32600, `Connection:
    /// close`).
    HeadTooLarge {
        /// The cap on the head in bytes.
        limit: usize,
        /// The cap on header fields.
        max_fields: usize,
    },
    /// `Content-Type` is not `application/json` (415, -32600).
    UnsupportedMediaType,
    /// `Accept` excludes JSON or SSE (406, -32600).
    NotAcceptable,
    /// The body did not arrive within the read timeout (408, -32600, `Connection: close`).
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

/// An auth refusal as the client is told it: 401 or 403, the RFC 6750 challenge for
/// `WWW-Authenticate`, and the error object for the body. Built by the auth step from
/// [`Refusal`](crate::auth::Refusal) and the [`Authenticator`](crate::auth::Authenticator)'s
/// settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthChallenge {
    pub(crate) status: StatusCode,
    pub(crate) www_authenticate: HeaderValue,
    pub(crate) body: Value,
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

impl From<ListenRefusal> for Rejection {
    fn from(refusal: ListenRefusal) -> Self {
        match refusal {
            // The backend's words (table, account, role) stay in the log (`http/listen.rs`).
            ListenRefusal::Unavailable(_) => {
                Self::Unavailable("the change feed is unavailable; try again shortly".into())
            }
            ListenRefusal::TooManyStreams => Self::Unavailable(refusal.to_string()),
            ListenRefusal::TooManyStreamsForCaller { max } => Self::CallerLimit {
                why: refusal.to_string(),
                limit: max,
                // A stream ends within MCP_LISTEN_MAX_SECS, often much sooner.
                retry_after_secs: 10,
            },
            ListenRefusal::TasksNotDeclared => Self::MissingCapability {
                required: json!({ "extensions": { crate::tasks::EXTENSION: {} } }),
                why: refusal.to_string(),
            },
            other => Self::InvalidParams(other.to_string()),
        }
    }
}

impl Rejection {
    /// The HTTP status of the refusal.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotThroughCdn
            | Self::ForgedTaskRound
            | Self::ForeignHost
            | Self::ForeignOrigin(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) | Self::MethodNotFound(_) => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unauthorized(challenge) => challenge.status,
            Self::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::HeadTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::NotAcceptable => StatusCode::NOT_ACCEPTABLE,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::CallerLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::RepeatedHost
            | Self::BadHost(_)
            | Self::ParseError
            | Self::Batch
            | Self::InvalidRequest(_)
            | Self::HeaderMismatch(_)
            | Self::InvalidParams(_)
            | Self::UnsupportedVersion { .. }
            | Self::MissingCapability { .. } => StatusCode::BAD_REQUEST,
        }
    }

    /// The JSON-RPC error code of the refusal; `None` when the answer is not a JSON-RPC error
    /// (the plain-text refusals and auth's challenge).
    pub fn json_rpc_code(&self) -> Option<i32> {
        Some(match self {
            Self::NotThroughCdn
            | Self::RepeatedHost
            | Self::BadHost(_)
            | Self::ForeignHost
            | Self::ForeignOrigin(_)
            | Self::NotFound(_)
            | Self::MethodNotAllowed
            | Self::ForgedTaskRound
            | Self::Unauthorized(_) => return None,
            Self::ParseError => code::PARSE_ERROR,
            Self::Batch
            | Self::InvalidRequest(_)
            | Self::BodyTooLarge { .. }
            | Self::HeadTooLarge { .. }
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
        })
    }

    /// The plain-text answer, for the refusals that have one.
    fn text(&self) -> Option<&'static str> {
        Some(match self {
            Self::NotThroughCdn => "Forbidden: this server is reached through its CDN\n",
            Self::RepeatedHost => "Bad Request: repeated Host header\n",
            // rmcp's words, which judged these until the front did: the same answers as before.
            Self::BadHost(text) | Self::ForeignOrigin(text) => text,
            Self::ForeignHost => "Forbidden: Host header is not allowed",
            Self::NotFound(text) => text,
            Self::MethodNotAllowed => "Method Not Allowed: POST only\n",
            Self::ForgedTaskRound => "Forbidden: not a task round this server handed out\n",
            _ => return None,
        })
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
            Self::HeadTooLarge { limit, max_fields } => format!(
                "Invalid Request: the request head is too large (at most {limit} bytes and \
                 {max_fields} header fields)"
            ),
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
            // Answered as plain text or auth's challenge: no JSON-RPC message.
            Self::NotThroughCdn
            | Self::RepeatedHost
            | Self::BadHost(_)
            | Self::ForeignHost
            | Self::ForeignOrigin(_)
            | Self::NotFound(_)
            | Self::MethodNotAllowed
            | Self::ForgedTaskRound
            | Self::Unauthorized(_) => String::new(),
        }
    }

    fn data(&self) -> Option<Value> {
        match self {
            Self::UnsupportedVersion {
                requested,
                supported,
            } => Some(json!({ "supported": supported, "requested": requested })),
            Self::BodyTooLarge { limit }
            | Self::HeadTooLarge { limit, .. }
            | Self::CallerLimit { limit, .. } => Some(json!({ "limit": limit })),
            Self::MethodNotFound(method) => Some(json!({ "method": method })),
            Self::MissingCapability { required, .. } => {
                Some(json!({ "requiredCapabilities": required }))
            }
            _ => None,
        }
    }

    /// The JSON-RPC error message answering this refusal, echoing `id` when it was read.
    pub(crate) fn json_rpc_body(&self, id: Option<&Value>) -> Value {
        let mut error = json!({ "code": self.json_rpc_code(), "message": self.message() });
        if let Some(data) = self.data() {
            error["data"] = data;
        }
        let mut body = json!({ "jsonrpc": "2.0", "error": error });
        if let Some(id) = id {
            body["id"] = id.clone();
        }
        body
    }

    /// The HTTP response: plain text, auth's challenge, or a JSON-RPC error that echoes `id`
    /// when the envelope step read it.
    pub fn into_response(self, id: Option<&Value>) -> HttpResponse {
        if let Some(text) = self.text() {
            let mut response = text_response(self.status(), text);
            if matches!(self, Self::MethodNotAllowed) {
                response
                    .headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("POST"));
            }
            return response;
        }
        let mut response = match &self {
            Self::Unauthorized(challenge) => {
                let mut response = json_response(challenge.status, &challenge.body);
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, challenge.www_authenticate.clone());
                response
            }
            _ => json_response(self.status(), &self.json_rpc_body(id)),
        };
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        let retry_after = match &self {
            Self::Unavailable(_) => Some(1),
            Self::CallerLimit {
                retry_after_secs, ..
            } => Some(*retry_after_secs),
            _ => None,
        };
        if let Some(secs) = retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if matches!(self, Self::RequestTimeout | Self::HeadTooLarge { .. }) {
            // The rest of the request is not read: the connection cannot carry another.
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
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
