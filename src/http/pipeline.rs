//! The front pipeline: every check a request goes through, in order, in one
//! place. Each step is one file of this module with its own settings, and
//! refuses with a [`Rejection`], answered here.
//!
//! | request | answer |
//! |---|---|
//! | `POST <MCP_PATH>` with `x-mcp-task-round` | a task round handed to this function by itself (`Dispatch::Lambda`): the token checked first (403), before the CDN secret, then the round run to its end |
//! | `POST <MCP_PATH>` | `Host` and `Origin` judged (`host.rs`), then [`McpService::mcp_post`]: media types → body limit → envelope → auth → (listen filter) → rmcp → cache headers, then CORS |
//! | `OPTIONS <MCP_PATH>` | the CORS preflight (a foreign `Host` is 403; an `Origin` not allowed gets no CORS headers) |
//! | `GET`/`DELETE <MCP_PATH>` | 405, `Allow: POST` (rmcp's legacy sessions when switched on) |
//! | `GET /healthz` | 200 `ok`, touching neither auth nor storage |
//! | `GET /.well-known/oauth-protected-resource[<MCP_PATH>]` | the RFC 9728 metadata when auth is on |
//! | `/.well-known/oauth-authorization-server[<MCP_PATH>]`, `/oauth/*` | the built-in authorization server's endpoints, when it is on (`crate::oauth`): the body capped at 16 KiB and on time, as an MCP body |
//! | anything else | 404 |

use std::{
    convert::Infallible,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderValue, Method, Request, StatusCode, header, request::Parts};
use http_body::Body;
use http_body_util::{BodyExt as _, Full};
use rmcp::{
    ServerHandler,
    model::ServerCapabilities,
    transport::{
        StreamableHttpService, streamable_http_server::session::local::LocalSessionManager,
    },
};
use serde_json::Value;
use tracing::Instrument as _;

use super::{
    bearer,
    body_limit::{self, RequestBody, request_body},
    cache_headers, cors,
    direct::{self, Direct},
    envelope::{self, Checked, Era},
    host::{self, Admission},
    listen, media_types, metering,
    origin_secret::{self, OriginSecretCheck},
    refusal::{HttpResponse, Rejection, text_response},
    settings::HttpSettings,
    trace_context,
};
use crate::{
    auth::{Authenticator, Caller, metadata},
    handler::{Hosted, InProcess},
    listen::Listener,
    metrics::Metrics,
    oauth::{self, AuthorizationServer},
    request_scope::{self, RequestScope},
    rmcp_gaps,
    tasks::{Engine, round_token},
};

/// rmcp's HTTP service around the wrapped handler: the pipeline's last step.
pub(crate) type Rmcp<H> = StreamableHttpService<Hosted<H>, LocalSessionManager>;

/// What the steps read, built once at start-up.
#[derive(Debug)]
pub(crate) struct Front {
    settings: HttpSettings,
    /// The `Host` and `Origin` allow-lists, parsed once: the one judge of both.
    admission: Admission,
    /// The CDN's secret origin header, as an HMAC tag; `None` = no check.
    origin_secret: Option<OriginSecretCheck>,
    /// Bearer-token auth; `None` = off.
    auth: Option<Arc<Authenticator>>,
    /// The versions the handler serves, for -32022 answers.
    supported_versions: Vec<String>,
    /// `subscriptions/listen` served by the library; `None` = left to the handler.
    listen: Option<Arc<Listener>>,
    /// The lists asked for at start-up: those the handler advertises that listen (tools,
    /// prompts) or metrics (all four) need.
    probed_lists: Vec<&'static str>,
    /// The task engine, for the worker route; `None` = tasks are off.
    tasks: Option<Arc<Engine>>,
    /// Per-request EMF records; `None` = none written.
    metrics: Option<Arc<Metrics>>,
    /// The built-in authorization server's endpoints; `None` = off.
    oauth: Option<Arc<AuthorizationServer>>,
}

impl Front {
    /// The front of a handler that announces `capabilities` and serves `supported_versions`.
    pub(crate) fn new(
        settings: &HttpSettings,
        auth: Option<Arc<Authenticator>>,
        capabilities: &ServerCapabilities,
        supported_versions: Vec<String>,
        listen: Option<Arc<Listener>>,
        tasks: Option<Arc<Engine>>,
        metrics: Option<Arc<Metrics>>,
    ) -> Self {
        let (listen_on, metrics_on) = (listen.is_some(), metrics.is_some());
        // Tool and prompt lists are fingerprinted for listeners; metrics learn the names on
        // every list.
        let probed_lists = [
            (
                "tools/list",
                capabilities.tools.is_some() && (listen_on || metrics_on),
            ),
            (
                "prompts/list",
                capabilities.prompts.is_some() && (listen_on || metrics_on),
            ),
            (
                "resources/list",
                capabilities.resources.is_some() && metrics_on,
            ),
            (
                "resources/templates/list",
                capabilities.resources.is_some() && metrics_on,
            ),
        ]
        .into_iter()
        .filter_map(|(method, probed)| probed.then_some(method))
        .collect();
        Self {
            origin_secret: settings.origin_secret.as_ref().map(OriginSecretCheck::new),
            admission: Admission::new(settings),
            settings: settings.clone(),
            auth,
            supported_versions,
            listen,
            probed_lists,
            tasks,
            metrics,
            oauth: None,
        }
    }

    /// The front with the built-in authorization server's endpoints on its origin.
    pub(crate) fn with_oauth(mut self, oauth: Option<Arc<AuthorizationServer>>) -> Self {
        self.oauth = oauth;
        self
    }
}

/// The whole HTTP service: routes, the MCP front, rmcp behind it.
///
/// Built once by [`App`](crate::App) and cloned per connection or invocation
/// (clones share everything).
pub struct McpService<H> {
    rmcp: Arc<Rmcp<H>>,
    /// rmcp's handler dispatch in process: where the answer is one JSON message
    /// (`direct.rs`), and for the list probe.
    dispatch: Arc<InProcess<H>>,
    /// Which requests take the dispatch directly.
    direct: Arc<Direct>,
    front: Arc<Front>,
}

impl<H> Clone for McpService<H> {
    fn clone(&self) -> Self {
        Self {
            rmcp: self.rmcp.clone(),
            dispatch: self.dispatch.clone(),
            direct: self.direct.clone(),
            front: self.front.clone(),
        }
    }
}

impl<H: ServerHandler> McpService<H> {
    /// The service over rmcp's, with `dispatch` over the handlers rmcp's service makes.
    pub(crate) fn new(rmcp: Rmcp<H>, dispatch: Arc<InProcess<H>>, front: Front) -> Self {
        Self {
            dispatch,
            direct: Arc::new(Direct),
            rmcp: Arc::new(rmcp),
            front: Arc::new(front),
        }
    }
}

impl<H, B> tower::Service<Request<B>> for McpService<H>
where
    H: ServerHandler,
    B: Body + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let mut request = request.map(request_body);
        // *task round*: a round handed to this function by itself (Dispatch::Lambda). It does
        // not come through the CDN, and carries its own proof instead. A process that never
        // hands rounds out has no such route.
        if request.method() == Method::POST
            && request.headers().contains_key(round_token::HEADER)
            && request.uri().path() == self.front.settings.path
        {
            let Some(tasks) = self.front.tasks.clone().filter(|t| !t.runs_locally()) else {
                let refusal =
                    Rejection::NotFound("Not Found: this server runs no task rounds for others\n");
                return Box::pin(std::future::ready(Ok(refusal.into_response(None))));
            };
            let lease = tasks.lease();
            return Box::pin(
                async move {
                    Ok(worker_route(tasks, lease, request)
                        .await
                        .unwrap_or_else(|refusal| refusal.into_response(None)))
                }
                .instrument(tracing::info_span!("mcp.task_round")),
            );
        }
        // *trace and metrics*: the caller's trace id (a valid `traceparent` only) and, metrics
        // on, the record.
        let trace_id = trace_context::trace_id(request.headers());
        let metered = metering::begin(self.front.metrics.as_ref(), &request, trace_id.clone());
        let scope = RequestScope::new(metered.is_some());
        // *origin secret*: only requests that came through the CDN, when one is configured:
        // before routing, auth, logging or reading the body.
        if let Err(refusal) =
            origin_secret::check(self.front.origin_secret.as_ref(), request.headers_mut())
        {
            let refusal = refusal.into_response(None);
            let refusal = match metered {
                Some(started) => metering::finish(started, &scope, refusal),
                None => refusal,
            };
            return Box::pin(async move { Ok(refusal) });
        }
        let this = self.clone();
        // Fields, not strings; never the token or the arguments. On Lambda the runtime's own
        // span around it carries `requestId` and `xrayTraceId`.
        let span = tracing::info_span!(
            "mcp.request",
            mcp.method = tracing::field::Empty,
            mcp.name = tracing::field::Empty,
            mcp.legacy = tracing::field::Empty,
            status = tracing::field::Empty,
            trace_id = trace_id.as_deref(),
        );
        Box::pin(
            async move {
                let response = this
                    .route(request, &scope)
                    .await
                    .unwrap_or_else(|refusal| refusal.into_response(None));
                tracing::Span::current().record("status", response.status().as_u16());
                tracing::debug!("answered");
                Ok(match metered {
                    Some(started) => metering::finish(started, &scope, response),
                    None => response,
                })
            }
            .instrument(span),
        )
    }
}

impl<H: ServerHandler> McpService<H> {
    /// The steps *host* and *route*; on the MCP path, [`mcp_post`](Self::mcp_post)'s steps, then
    /// *CORS* on whatever came back.
    async fn route(
        self,
        request: Request<RequestBody>,
        scope: &RequestScope,
    ) -> Result<HttpResponse, Rejection> {
        // *host*: one `Host`; on the MCP path, one the allow-list names and an allowed `Origin`
        // (403), judged for both doors and CORS alike.
        host::check(request.headers())?;
        let settings = &self.front.settings;
        let path = request.uri().path();
        let admitted = if path == settings.path {
            let (method, uri, headers) = (request.method(), request.uri(), request.headers());
            Some(self.front.admission.admit(method, uri, headers)?)
        } else {
            None
        };
        // *route*.
        if let Some(admitted) = admitted {
            let response = match *request.method() {
                Method::POST => {
                    let (parts, body) = request.into_parts();
                    self.mcp_post(parts, body, scope).await
                }
                Method::OPTIONS => cors::preflight(request.headers()),
                Method::GET | Method::DELETE if settings.legacy_sessions => {
                    Box::pin(self.rmcp.handle(request)).await
                }
                _ => Rejection::MethodNotAllowed.into_response(None),
            };
            // *CORS* for the browser origin the *host* step admitted.
            return Ok(cors::apply(response, admitted.cors_origin));
        }
        if let Some(oauth) = &self.front.oauth
            && let Some(endpoint) = oauth.route(request.method(), path)
        {
            // Boxed, as every step that may wait on the network: a login's state is kilobytes,
            // and only these few requests need it.
            return Ok(Box::pin(oauth_answer(oauth, endpoint, request)).await);
        }
        match (request.method(), path) {
            (&Method::GET | &Method::HEAD, "/healthz") => Ok(text_response(StatusCode::OK, "ok\n")),
            (&Method::GET | &Method::HEAD, path)
                if metadata::is_metadata_path(path, &settings.path) =>
            {
                match &self.front.auth {
                    Some(auth) => Ok(bearer::metadata_response(auth)),
                    None => Err(Rejection::NotFound("Not Found: auth is off\n")),
                }
            }
            _ => Err(Rejection::NotFound("Not Found\n")),
        }
    }

    /// One MCP POST: its steps, and a refusal answered with the id the envelope step read.
    async fn mcp_post(
        &self,
        parts: Parts,
        body: RequestBody,
        scope: &RequestScope,
    ) -> HttpResponse {
        let mut id = None;
        let answer = self.mcp_steps(parts, body, scope, &mut id).await;
        answer.unwrap_or_else(|refusal| refusal.into_response(id.as_ref()))
    }

    /// The steps of one MCP POST, in order; `id` is the request's once *envelope* has read it.
    async fn mcp_steps(
        &self,
        mut parts: Parts,
        body: RequestBody,
        scope: &RequestScope,
        id: &mut Option<Value>,
    ) -> Result<HttpResponse, Rejection> {
        let front = &*self.front;
        // *media types*: a JSON body, an Accept that allows JSON and SSE (415, 406).
        media_types::check(&mut parts.headers)?;
        // *body limit*: the body, capped and on time (413, 408).
        let body = body_limit::collect(&parts.headers, body, front.settings.max_body_bytes).await?;
        // *envelope*: the JSON-RPC and MCP envelope, in the spec's order (-32700 … -32601): the
        // body parsed once, then checked against the headers.
        rmcp_gaps::trim_mcp_headers(&mut parts.headers);
        let message = envelope::read(&body)?;
        id.clone_from(&message.id);
        let mut checked = self.envelope(&parts, &body, message, scope)?;
        // *auth* on the method and name the body names (401, 403): the caller, built once.
        let principal = match &front.auth {
            Some(auth) => {
                // Boxed, as every step that may wait on the network: a JWKS refresh's or an
                // introspection's state is kilobytes, and only some requests need it.
                Box::pin(bearer::authorize(
                    auth,
                    &parts,
                    &checked.method,
                    checked.name.as_deref(),
                ))
                .await?
            }
            None => None,
        };
        // The provider's tokens for tools, when the built-in authorization server keeps them.
        if let Some(oauth) = &front.oauth
            && principal.is_some()
            && let Some(access) = oauth::upstream_access(oauth, &parts.headers)
        {
            parts.extensions.insert(access);
        }
        let caller = Caller::from(principal);
        // *listen filter*: what a listen may watch, before rmcp acknowledges it (-32602,
        // -32021, 503).
        let (body, listen_task_ids) = match &front.listen {
            Some(listener)
                if checked.method == "subscriptions/listen" && checked.era == Era::Modern =>
            {
                Box::pin(listen::prepare(listener, &caller, &mut parts, &mut checked)).await?
            }
            _ => (body, None),
        };
        // *rmcp* and the wrapped handler, which read the caller and leave their facts in the
        // request's scope.
        parts.extensions.insert(caller);
        parts.extensions.insert(scope.clone());
        let mut response = self.rmcp_step(parts, body, &mut checked).await?;
        if let Some(task_ids) = listen_task_ids {
            response = rmcp_gaps::acknowledge_task_ids(response, task_ids);
        }
        // *retry after*: a caller over its share gets 429 with Retry-After (the body is the
        // JSON-RPC error).
        if let Some(secs) = scope.retry_after() {
            *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        // *cache headers*: Cache-Control (and Vary) from the result's hint.
        Ok(cache_headers::apply(response, scope))
    }

    fn envelope(
        &self,
        parts: &Parts,
        body: &Bytes,
        message: envelope::Message,
        scope: &RequestScope,
    ) -> Result<Checked, Rejection> {
        let session_replies =
            self.front.settings.legacy_sessions && parts.headers.contains_key("mcp-session-id");
        let checked = envelope::check(
            &parts.headers,
            body,
            message,
            &self.front.supported_versions,
            session_replies,
        )?;
        let span = tracing::Span::current();
        span.record("mcp.method", checked.method.as_str());
        if let Some(name) = checked.name.as_deref() {
            // The tool, prompt, resource or task named (never arguments), cut to a sane length.
            let cut = name
                .char_indices()
                .nth(256)
                .map_or(name.len(), |(at, _)| at);
            span.record("mcp.name", &name[..cut]);
        }
        span.record("mcp.legacy", checked.era == Era::Legacy);
        scope.set_method(&checked.method, checked.name.as_deref());
        Ok(checked)
    }

    /// rmcp answers (its handler dispatch called directly where the answer is one JSON
    /// message, `direct.rs`); a refusal that hides one of its decoding gaps is replaced by the
    /// spec's answer (`rmcp_gaps.rs`).
    async fn rmcp_step(
        &self,
        parts: Parts,
        body: Bytes,
        checked: &mut Checked,
    ) -> Result<HttpResponse, Rejection> {
        // Both boxed: their states (rmcp's is several kilobytes) would otherwise sit inline in
        // every request's future, refusals included, and be copied with it wherever it moves
        // (benches/history/issue-32.md).
        let response = match Box::pin(self.direct.answer(&self.dispatch, parts, checked)).await {
            Ok(response) => response,
            Err(parts) => {
                // rmcp decodes the body itself: the parsed message is not needed while it runs.
                checked.message = None;
                Box::pin(
                    self.rmcp
                        .handle(Request::from_parts(parts, Full::new(body.clone()))),
                )
                .await
            }
        };
        if !response.status().is_success()
            && let Some(rejection) = checked.explain_refusal(&body, response.status())
        {
            return Err(rejection);
        }
        Ok(response)
    }
}

impl<H: ServerHandler> McpService<H> {
    /// The MCP path (`TestClient`'s requests go there).
    #[cfg(feature = "test-util")]
    pub(crate) fn path(&self) -> &str {
        &self.front.settings.path
    }

    /// A `Host` the front's allow-list accepts, for requests made in process (`TestClient`
    /// sends them through the whole front).
    #[cfg(feature = "test-util")]
    pub(crate) fn host_for_internal_requests(&self) -> String {
        self.front
            .settings
            .allowed_hosts
            .iter()
            .find(|h| !h.contains('*'))
            .map_or("localhost", String::as_str)
            .to_owned()
    }

    /// With listen or metrics on, asks the handler once, in process, for its lists, so this
    /// instance's tool and prompt fingerprints are published before the first listener arrives
    /// and metrics know the names on them (Lambda INIT). The front is skipped (there is no
    /// caller): each list goes through the in-process dispatch; an answer that fails (the
    /// handler has no such list, or wants a caller) leaves both to the first real list request.
    pub(crate) async fn probe_lists(&self) {
        for &method in &self.front.probed_lists {
            let message = serde_json::json!({
                "jsonrpc": "2.0",
                "method": method,
                "params": { "_meta": super::in_process::meta(serde_json::json!({})) },
            });
            let Some(request) = message
                .as_object()
                .and_then(|m| direct::decode(method, m.clone()))
            else {
                continue;
            };
            let (mut parts, ()) = Request::new(()).into_parts();
            parts.method = Method::POST;
            let answer = InProcess::call(
                self.dispatch.handler(),
                rmcp::model::RequestId::Number(0),
                request,
                parts,
                self.dispatch.closed_peer().await,
            )
            .await;
            let outcome = match &answer {
                Ok(Ok(_)) => "answered",
                Ok(Err(_)) => "refused",
                Err(_) => "panicked",
            };
            tracing::debug!(method, outcome, "list probe");
        }
    }
}

/// The worker route: `POST <MCP_PATH>` with `x-mcp-task-round: <token>` and a body
/// `{"taskId": …, "round": …}`, served only where rounds are handed to Lambda (elsewhere 404). A
/// bad, missing or expired token is refused (403) before anything runs; a good one runs the
/// round to its end and answers `{"ran": true|false}` (false: another delivery had it, or it
/// is over). The claim holds until the invocation's deadline when there is one (Lambda),
/// otherwise for the task lease.
async fn worker_route(
    tasks: Arc<Engine>,
    lease: std::time::Duration,
    request: Request<RequestBody>,
) -> Result<HttpResponse, Rejection> {
    let (parts, body) = request.into_parts();
    let token = parts
        .headers
        .get(round_token::HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = body_limit::collect(&parts.headers, body, 4096)
        .await
        .map_err(|_| Rejection::ForgedTaskRound)?;
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Round {
        task_id: String,
        round: u32,
    }
    let Round { task_id, round } =
        serde_json::from_slice(&body).map_err(|_| Rejection::ForgedTaskRound)?;
    if !tasks.round_token_ok(&token, &task_id, round) {
        // Anyone can send the header: one line per 10 s at most.
        static FORGED: crate::logging::Sampled =
            crate::logging::Sampled::per(std::time::Duration::from_secs(10));
        if let Some(held_back) = FORGED.allow() {
            tracing::warn!(
                held_back,
                "a task round with a bad or expired token was refused"
            );
        }
        return Err(Rejection::ForgedTaskRound);
    }
    let id = task_id.parse().map_err(|_| Rejection::ForgedTaskRound)?;
    let now = std::time::SystemTime::now();
    let until = request_scope::in_request::<crate::listen::StreamLimits>(&parts.extensions)
        .and_then(|limits| limits.deadline)
        .unwrap_or(now + lease);
    let until_ms = until
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let ran = tasks.run_round_until(id, round, until_ms).await;
    Ok(http::Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::json!({ "ran": ran }).to_string())).boxed())
        .expect("static parts are valid"))
}

/// One request to the built-in authorization server: its body read (capped and on time, as
/// an MCP body), the answer as the front's.
async fn oauth_answer(
    oauth: &AuthorizationServer,
    endpoint: oauth::Endpoint,
    request: Request<RequestBody>,
) -> HttpResponse {
    let (parts, body) = request.into_parts();
    let body = if endpoint.has_body() {
        match body_limit::collect(&parts.headers, body, oauth::MAX_BODY_BYTES).await {
            Ok(body) => body,
            Err(refusal) => return refusal.into_response(None),
        }
    } else {
        Bytes::new()
    };
    oauth
        .answer(endpoint, &parts, body)
        .await
        .map(|b| Full::new(b).boxed())
}
