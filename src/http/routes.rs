//! The routes and the MCP pipeline, as one `tower::Service`.
//!
//! | request | answer |
//! |---|---|
//! | `POST <MCP_PATH>` | limits → envelope checks → rmcp → cache headers |
//! | `GET`/`DELETE <MCP_PATH>` | 405, `Allow: POST` (rmcp's legacy sessions when switched on) |
//! | `GET /healthz` | 200 `ok`, touching neither auth nor storage |
//! | anything else | 404 |

use std::{
    convert::Infallible,
    fmt::Display,
    sync::Arc,
    task::{Context, Poll},
};

use futures::future::BoxFuture;
use http::{HeaderValue, Method, Request, StatusCode, header};
use http_body::Body;
use http_body_util::{BodyExt, Full, Limited};
use rmcp::{
    ServerHandler,
    transport::{
        StreamableHttpService, streamable_http_server::session::local::LocalSessionManager,
    },
};
use tracing::Instrument as _;

use super::{
    cache_headers,
    envelope::{self, Era},
    errors::{HttpResponse, Rejection, text_response},
};
use crate::{
    auth::{Authenticator, metadata},
    handler::Hosted,
};

/// Settings the front reads on every request, built once.
#[derive(Debug)]
pub(crate) struct FrontSettings {
    pub(crate) path: String,
    pub(crate) max_body_bytes: usize,
    pub(crate) legacy_sessions: bool,
    /// The versions the handler serves, for -32022 answers.
    pub(crate) supported_versions: Vec<String>,
    /// The CDN's secret origin header; `None` = no check (`origin_secret.rs`).
    pub(crate) origin_secret: Option<super::origin_secret::OriginSecretCheck>,
    /// Bearer-token auth; `None` = off.
    pub(crate) auth: Option<Arc<Authenticator>>,
    /// Browser origins allowed (CORS and rmcp's Origin check).
    pub(crate) allowed_origins: Vec<String>,
}

/// The whole HTTP service: routes, the MCP front, rmcp behind it.
///
/// Built once by [`App`](crate::App) and cloned per connection or invocation
/// (clones share everything).
pub struct McpService<H> {
    rmcp: Arc<StreamableHttpService<Hosted<H>, LocalSessionManager>>,
    front: Arc<FrontSettings>,
}

impl<H> Clone for McpService<H> {
    fn clone(&self) -> Self {
        Self {
            rmcp: self.rmcp.clone(),
            front: self.front.clone(),
        }
    }
}

impl<H> McpService<H> {
    pub(crate) fn new(
        rmcp: StreamableHttpService<Hosted<H>, LocalSessionManager>,
        front: Arc<FrontSettings>,
    ) -> Self {
        Self {
            rmcp: Arc::new(rmcp),
            front,
        }
    }
}

impl<H, B> tower::Service<Request<B>> for McpService<H>
where
    H: ServerHandler,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Display + Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<HttpResponse, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        // Before anything else: only requests that came through the CDN, when one is configured.
        if let Some(refusal) =
            super::origin_secret::verify(self.front.origin_secret.as_ref(), request.headers_mut())
        {
            return Box::pin(async move { Ok(refusal) });
        }
        let this = self.clone();
        // Fields, not strings; never the token or the arguments.
        let span = tracing::info_span!(
            "mcp.request",
            mcp.method = tracing::field::Empty,
            mcp.legacy = tracing::field::Empty,
            status = tracing::field::Empty,
        );
        Box::pin(
            async move {
                let response = this.route(request).await;
                tracing::Span::current().record("status", response.status().as_u16());
                tracing::debug!("answered");
                Ok(response)
            }
            .instrument(span),
        )
    }
}

impl<H: ServerHandler> McpService<H> {
    async fn route<B>(self, request: Request<B>) -> HttpResponse
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Display + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        // RFC 9112 §3.2: more than one Host is a 400; layers that read the
        // first and layers that read the last would see different hosts.
        if request
            .headers()
            .get_all(header::HOST)
            .iter()
            .nth(1)
            .is_some()
        {
            return text_response(
                StatusCode::BAD_REQUEST,
                "Bad Request: repeated Host header\n",
            );
        }
        let path = request.uri().path();
        if path == self.front.path {
            let origin = request.headers().get(header::ORIGIN).cloned();
            let mut response = match *request.method() {
                Method::POST => self.clone().mcp_post(request).await,
                Method::OPTIONS => preflight(),
                Method::GET | Method::DELETE if self.front.legacy_sessions => {
                    self.rmcp.handle(request).await
                }
                _ => {
                    let mut response = text_response(
                        StatusCode::METHOD_NOT_ALLOWED,
                        "Method Not Allowed: POST only\n",
                    );
                    response
                        .headers_mut()
                        .insert(header::ALLOW, HeaderValue::from_static("POST"));
                    response
                }
            };
            if let Some(origin) = origin
                && super::cors::origin_allowed(&origin, &self.front.allowed_origins)
            {
                super::cors::allow(response.headers_mut(), origin);
            }
            return response;
        }
        match (request.method(), path) {
            (&Method::GET | &Method::HEAD, "/healthz") => text_response(StatusCode::OK, "ok\n"),
            (&Method::GET | &Method::HEAD, path)
                if metadata::is_metadata_path(path, &self.front.path) =>
            {
                match &self.front.auth {
                    Some(auth) => metadata::document(auth.settings()),
                    None => text_response(StatusCode::NOT_FOUND, "Not Found: auth is off\n"),
                }
            }
            _ => text_response(StatusCode::NOT_FOUND, "Not Found\n"),
        }
    }

    async fn mcp_post<B>(self, request: Request<B>) -> HttpResponse
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Display + Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (mut parts, body) = request.into_parts();
        if let Err(rejection) = check_media_types(&mut parts.headers) {
            return rejection.into_response(None);
        }
        let limit = self.front.max_body_bytes;
        let too_large = || Rejection::BodyTooLarge { limit }.into_response(None);
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return too_large();
        }
        let body = match Limited::new(body, limit).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => return too_large(),
            Err(error) if error.is::<super::deadline::ReadTimeout>() => {
                let mut response = Rejection::RequestTimeout.into_response(None);
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return response;
            }
            Err(_) => {
                return Rejection::InvalidRequest("the request body could not be read")
                    .into_response(None);
            }
        };
        envelope::trim_mcp_headers(&mut parts.headers);
        let session_replies =
            self.front.legacy_sessions && parts.headers.contains_key("mcp-session-id");
        let checked = match envelope::check(
            &parts.headers,
            &body,
            &self.front.supported_versions,
            session_replies,
        ) {
            Ok(checked) => checked,
            Err((rejection, id)) => return rejection.into_response(id.as_ref()),
        };
        let span = tracing::Span::current();
        span.record("mcp.method", checked.method.as_str());
        span.record("mcp.legacy", checked.era == Era::Legacy);
        if let Some(auth) = &self.front.auth {
            match auth
                .authorize(
                    &parts.headers,
                    &parts.uri,
                    &checked.method,
                    checked.name.as_deref(),
                )
                .await
            {
                Ok(Some(principal)) => {
                    parts.extensions.insert(principal);
                }
                Ok(None) => {}
                Err((challenge, required)) => {
                    tracing::info!(?challenge, "request refused by auth");
                    return auth.challenge_response(&challenge, &required);
                }
            }
        }
        let slot = cache_headers::CacheSlot::default();
        parts.extensions.insert(slot.clone());
        let explain = (checked.era == Era::Modern).then(|| body.clone());
        let response = self
            .rmcp
            .handle(Request::from_parts(parts, Full::new(body)))
            .await;
        if envelope::may_hide_decoding_gap(&checked, response.status())
            && let Some(rejection) = explain
                .as_deref()
                .and_then(|body| envelope::explain_rmcp_refusal(body, &checked))
        {
            return rejection.into_response(checked.id.as_ref());
        }
        cache_headers::apply(response, &slot)
    }
}

/// The CORS preflight for browser clients; the Origin was checked by the caller.
fn preflight() -> HttpResponse {
    let mut response = text_response(StatusCode::NO_CONTENT, "");
    let headers = response.headers_mut();
    headers.insert(header::ALLOW, HeaderValue::from_static("POST, OPTIONS"));
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static(
            "authorization, content-type, accept, mcp-protocol-version, mcp-method, mcp-name, mcp-session-id, last-event-id",
        ),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

/// `Content-Type` must be JSON; `Accept` must allow JSON and SSE. A missing
/// `Accept` (curl, many scripts) counts as `*/*`. rmcp insists on both types
/// being listed by name, so the header is normalised once accepted.
fn check_media_types(headers: &mut http::HeaderMap) -> Result<(), Rejection> {
    // One Content-Type only (RFC 9110 §8.3): a second one could disagree.
    let mut content_types = headers.get_all(header::CONTENT_TYPE).iter();
    let json_body = content_types
        .next()
        .filter(|_| content_types.next().is_none())
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .is_some_and(|essence| essence.eq_ignore_ascii_case("application/json"));
    if !json_body {
        return Err(Rejection::UnsupportedMediaType);
    }
    let (mut json, mut sse, mut any) = (false, false, false);
    // Whether both types are named exactly, as rmcp wants to see them.
    let (mut named_json, mut named_sse) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        for entry in value.to_str().unwrap_or("").split(',') {
            let mut params = entry.split(';');
            let essence = params.next().unwrap_or("").trim();
            let refused = params.any(|p| {
                let p = p.trim();
                p.eq_ignore_ascii_case("q=0")
                    || p.starts_with("q=0.0") && p.trim_end_matches('0') == "q=0."
            });
            if refused {
                continue;
            }
            let is = |name: &str| essence.eq_ignore_ascii_case(name);
            named_json |= is("application/json");
            named_sse |= is("text/event-stream");
            json |= named_json || is("application/*");
            sse |= named_sse || is("text/*");
            any |= is("*/*");
        }
    }
    let listed = headers.contains_key(header::ACCEPT);
    if listed && !any && !(json && sse) {
        return Err(Rejection::NotAcceptable);
    }
    // rmcp insists on both types by name; rewrite only when it would not see them.
    if !(named_json && named_sse) {
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
    }
    Ok(())
}
