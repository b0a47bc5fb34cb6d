//! The HTTP front: every check a request goes through before and after rmcp.
//!
//! The order lives in one place, [`pipeline.rs`](McpService), whose comments name each step
//! as this table does (ARCHITECTURE.md points here rather than naming them again); each step
//! is a file here with its own settings:
//!
//! | step | file | refuses with |
//! |---|---|---|
//! | *task round*: `POST <MCP_PATH>` with `x-mcp-task-round`, a self-invocation on Lambda: its token, nothing else; the round runs | `pipeline.rs` (`worker_route`; token in [`tasks`](crate::tasks)) | 403; 404 unless rounds go to Lambda |
//! | *trace and metrics* (every request but a task round and `/healthz`): the `traceparent` read, the EMF record written when the answer is done | `trace_context.rs`, `metering.rs` (records in [`metrics`](crate::metrics)) | — |
//! | *origin secret* | `origin_secret.rs` | 403 |
//! | *host*: one `Host`; on the MCP path, one `MCP_ALLOWED_HOSTS` names and an `Origin`, if any, `MCP_ALLOWED_ORIGINS` names, both parsed and normalized once (the one judge: its verdict is also the CORS echo and either door's; rmcp's allow-lists are off) | `host.rs` | 400, 403 |
//! | *route* | `pipeline.rs` | 404, 405 |
//! | *media types* | `media_types.rs` | 415, 406 |
//! | *body limit* and deadline | `body_limit.rs` (the body made one type, `RequestBody`, at the service's edge), `deadline.rs` | 413, 408 |
//! | *envelope* | `envelope.rs` (parsed by `strict_json.rs`: a repeated key is -32700) | 400/-32700, -32600, -32020, -32602, -32022; 404/-32601 |
//! | *auth*: the `Caller`, built once | `bearer.rs` (decisions in [`auth`](crate::auth)) | 401, 403 |
//! | *listen filter* (`subscriptions/listen` only) | `listen.rs` (decisions in [`listen`](crate::listen)) | -32602, -32021, 503 |
//! | *rmcp* and the handler: a plain 2026-07-28 request through rmcp's handler dispatch directly, anything else through rmcp's service | `pipeline.rs`, `direct.rs`, [`handler`](crate::handler) | rmcp's answers |
//! | *retry after*: a caller's limit that waiting lifts, from the request's scope | `pipeline.rs` | 429 with `Retry-After` |
//! | *cache headers*, from the request's scope | `cache_headers.rs` | — |
//! | *CORS*: the admitted `Origin` echoed; the preflight admits the `Mcp-Param-*` headers asked for | `cors.rs` | — |
//!
//! Every step refuses with one type, [`Rejection`] (`refusal.rs`), whose variant knows its
//! status, JSON-RPC code and data; the pipeline answers it in one place. The origin secret's
//! 403, the `Host` and `Origin` refusals and the route's 404/405 are plain text, auth's 401/403 its
//! challenge. `settings.rs` reads the front's variables.

mod bearer;
mod body_limit;
mod cache_headers;
mod cors;
mod deadline;
mod direct;
mod envelope;
mod host;
pub(crate) mod in_process;
mod listen;
mod media_types;
mod metering;
mod origin_secret;
mod pipeline;
mod refusal;
mod settings;
mod strict_json;
mod trace_context;

pub(crate) use deadline::Deadline;
pub use origin_secret::OriginSecret;
pub(crate) use pipeline::Front;
pub use pipeline::McpService;
pub use refusal::{AuthChallenge, HttpResponse, Rejection};
pub use settings::HttpSettings;
