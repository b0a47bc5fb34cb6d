//! `lambda_http` glue: buffered answers by default, response streaming on request.
//!
//! Both adapters do two things around the service and nothing else:
//!
//! - **Paths as the client sent them.** `lambda_http` puts an API Gateway
//!   stage in front of the path (`/prod/mcp`), which would never match
//!   `MCP_PATH`; the adapters route on the event's own path instead (REST:
//!   `path`; HTTP API: `rawPath` less a named stage). Function URLs and ALB
//!   events are unchanged.
//! - **Streaming never sends an empty body.** Under Lambda response streaming
//!   (`InvokeMode: RESPONSE_STREAM`, API Gateway `responseTransferMode: STREAM`)
//!   a response whose body is empty leaves the client waiting until the
//!   function times out, so a bodiless answer (a 202 for a notification, a
//!   204 preflight) goes out with a one-byte body (`\n`), a 204 as 200. JSON
//!   answers go out whole in one chunk; SSE answers stream event by event,
//!   with `X-Accel-Buffering: no` and a `:` comment every
//!   `MCP_SSE_KEEP_ALIVE_SECS` while idle.

use std::{
    convert::Infallible,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures::future::BoxFuture;
use http::{HeaderValue, StatusCode, Uri, header};
use http_body::Body as _;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use lambda_http::{
    Body as LambdaBody, Request, RequestExt as _, Response, request::RequestContext,
};

use crate::{
    env::{ConfigError, Env},
    error::Error,
    http::McpService,
    listen::StreamLimits,
    metrics::Invocation,
};

/// How the function answers: buffered, or with Lambda response streaming.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `MCP_LAMBDA_STREAMING` | `false` | Lambda response streaming for SSE answers; needs `InvokeMode: RESPONSE_STREAM` or API Gateway streaming |
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LambdaSettings {
    /// Lambda response streaming for SSE answers (`MCP_LAMBDA_STREAMING`).
    pub streaming: bool,
}

impl LambdaSettings {
    /// Reads `MCP_LAMBDA_STREAMING`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        Ok(Self {
            streaming: env.flag("MCP_LAMBDA_STREAMING")?,
        })
    }
}

/// Adapts the service to buffered Lambda responses (the whole body at once):
/// what `lambda_http::run` expects. Public so tests can send decoded events
/// through the same path Lambda uses.
pub struct Buffered<H>(pub McpService<H>);

// By hand: a derive would ask `H: Clone`, and the service clones without it.
impl<H> Clone for Buffered<H> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<H: rmcp::ServerHandler> tower::Service<Request> for Buffered<H> {
    type Response = Response<LambdaBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let answer = answer(self.0.clone(), request, true);
        Box::pin(async move {
            let (parts, body) = answer.await.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let body = if bytes.is_empty() {
                LambdaBody::Empty
            } else {
                // Reuses the body's allocation when it owns it (the usual case): no copy.
                match String::from_utf8(Vec::from(bytes)) {
                    Ok(text) => LambdaBody::Text(text),
                    Err(bytes) => LambdaBody::Binary(bytes.into_bytes()),
                }
            };
            Ok(Response::from_parts(parts, body))
        })
    }
}

/// Adapts the service to Lambda response streaming: what
/// `lambda_http::run_with_streaming_response` expects.
pub struct Streaming<H>(pub McpService<H>);

impl<H> Clone for Streaming<H> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

/// The body of a streamed answer.
pub(crate) type StreamingBody = BoxBody<Bytes, Infallible>;

impl<H: rmcp::ServerHandler> tower::Service<Request> for Streaming<H> {
    type Response = Response<StreamingBody>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let answer = answer(self.0.clone(), request, false);
        Box::pin(async move { Ok(never_empty(answer.await)) })
    }
}

/// The service's answer to an invocation's request: its path as the client sent it, its stream
/// bounded by the invocation's deadline (`buffered`: the whole answer goes back at once).
fn answer<H: rmcp::ServerHandler>(
    mut service: McpService<H>,
    request: Request,
    buffered: bool,
) -> impl std::future::Future<Output = crate::http::HttpResponse> + Send + 'static {
    let request = with_stream_limits(path_as_sent(request), buffered);
    async move {
        match tower::Service::call(&mut service, request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// The one byte a bodiless answer carries under response streaming.
const PLACEHOLDER_BODY: &[u8] = b"\n";

/// Folds a header sent more than once (`Vary: Authorization` and `Vary: Origin`) into one
/// comma-separated line, which HTTP defines as the same (RFC 9110 §5.3).
///
/// A streamed answer starts with a JSON prelude whose `headers` map holds one string per name
/// (AWS: "Set up a Lambda proxy integration with payload response streaming",
/// <https://docs.aws.amazon.com/apigateway/latest/developerguide/response-transfer-mode-lambda.html>);
/// `lambda_runtime` writes a repeated header there as a JSON array, which is not that format.
/// `Set-Cookie` is never folded (its values may hold commas); `lambda_http` moves it to the
/// prelude's `cookies`.
fn one_line_per_header(headers: &mut http::HeaderMap) {
    let repeated: Vec<header::HeaderName> = headers
        .keys()
        .filter(|name| {
            *name != header::SET_COOKIE && headers.get_all(*name).iter().nth(1).is_some()
        })
        .cloned()
        .collect();
    for name in repeated {
        let joined: Vec<&[u8]> = headers
            .get_all(&name)
            .iter()
            .map(HeaderValue::as_bytes)
            .collect();
        if let Ok(value) = HeaderValue::from_bytes(&joined.join(&b", "[..])) {
            headers.insert(name, value);
        }
    }
}

fn never_empty(response: Response<StreamingBody>) -> Response<StreamingBody> {
    let (mut parts, body) = response.into_parts();
    one_line_per_header(&mut parts.headers);
    let is_sse = parts
        .headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if is_sse {
        // rmcp sets it; proxies between Lambda and the client must not hold events back.
        parts
            .headers
            .insert("x-accel-buffering", HeaderValue::from_static("no"));
        return Response::from_parts(parts, body);
    }
    if !(body.is_end_stream() || body.size_hint().exact() == Some(0)) {
        return Response::from_parts(parts, body);
    }
    if parts.status == StatusCode::NO_CONTENT || parts.status == StatusCode::RESET_CONTENT {
        parts.status = StatusCode::OK;
    }
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    parts.headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(PLACEHOLDER_BODY.len()),
    );
    Response::from_parts(
        parts,
        Full::new(Bytes::from_static(PLACEHOLDER_BODY)).boxed(),
    )
}

/// Tells a listen stream when the invocation ends (the runtime's deadline, never a guess) and
/// whether its answer is sent whole (then it long-polls: it ends after its first delivery).
fn with_stream_limits(mut request: Request, buffered: bool) -> Request {
    let (deadline, invocation) = match request.lambda_context_ref() {
        Some(context) => (
            Some(std::time::UNIX_EPOCH + std::time::Duration::from_millis(context.deadline)),
            Some(Invocation::new(
                context.request_id.clone(),
                context.xray_trace_id.clone(),
            )),
        ),
        None => (None, None),
    };
    request
        .extensions_mut()
        .insert(StreamLimits::new(deadline, buffered));
    // The ids a metrics record carries, so it can be found from the invocation's logs.
    if let Some(invocation) = invocation {
        request.extensions_mut().insert(invocation);
    }
    request
}

/// Routes on the path the client sent, without the stage `lambda_http` adds.
fn path_as_sent(mut request: Request) -> Request {
    let path = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(_)) => request.raw_http_path().to_string(),
        Some(RequestContext::ApiGatewayV2(context)) => {
            let raw = request.raw_http_path();
            match context.stage.as_deref() {
                Some(stage) if stage != "$default" => {
                    let prefix = format!("/{stage}");
                    match raw.strip_prefix(&prefix) {
                        Some("") => "/".to_string(),
                        Some(rest) if rest.starts_with('/') => rest.to_string(),
                        _ => raw.to_string(),
                    }
                }
                _ => raw.to_string(),
            }
        }
        _ => return request,
    };
    if path.is_empty() || path == request.uri().path() {
        return request;
    }
    let mut parts = request.uri().clone().into_parts();
    let path_and_query = match request.uri().query() {
        Some(query) => format!("{path}?{query}"),
        None => path,
    };
    // A raw path that is not a valid URI path keeps lambda_http's version.
    if let Ok(path_and_query) = path_and_query.parse() {
        parts.path_and_query = Some(path_and_query);
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    request
}

/// Runs the Lambda runtime loop with `service` built during INIT.
///
/// Lambda Managed Instances send one execution environment up to
/// `AWS_LAMBDA_MAX_CONCURRENCY` invocations at once: the runtime then polls for that many and
/// serves them side by side on this process's runtime (each with its own request, context and
/// deadline; the service holds no per-invocation state). Unset, it serves one at a time.
pub(crate) async fn serve<H: rmcp::ServerHandler>(
    service: McpService<H>,
    settings: &LambdaSettings,
) -> Result<(), Error> {
    let streaming = settings.streaming;
    let concurrency = std::env::var("AWS_LAMBDA_MAX_CONCURRENCY").ok();
    tracing::info!(streaming, concurrency, "serving MCP on AWS Lambda");
    let result = if streaming {
        lambda_http::run_with_streaming_response_concurrent(Streaming(service)).await
    } else {
        lambda_http::run_concurrent(Buffered(service)).await
    };
    result.map_err(|error| Error::Lambda(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(
        status: StatusCode,
        body: &'static [u8],
        content_type: Option<&str>,
    ) -> Response<StreamingBody> {
        let mut builder = Response::builder().status(status);
        if let Some(content_type) = content_type {
            builder = builder.header(header::CONTENT_TYPE, content_type);
        }
        builder
            .body(Full::new(Bytes::from_static(body)).boxed())
            .unwrap()
    }

    async fn bytes(response: Response<StreamingBody>) -> (StatusCode, Bytes) {
        let (parts, body) = response.into_parts();
        (parts.status, body.collect().await.unwrap().to_bytes())
    }

    #[test]
    fn a_repeated_header_becomes_one_line_but_cookies_stay_apart() {
        let mut headers = http::HeaderMap::new();
        headers.append(header::VARY, HeaderValue::from_static("Authorization"));
        headers.append(header::VARY, HeaderValue::from_static("Origin"));
        headers.append(header::SET_COOKIE, HeaderValue::from_static("a=1"));
        headers.append(header::SET_COOKIE, HeaderValue::from_static("b=2"));
        one_line_per_header(&mut headers);
        assert_eq!(
            headers.get_all(header::VARY).iter().collect::<Vec<_>>(),
            ["Authorization, Origin"]
        );
        assert_eq!(headers.get_all(header::SET_COOKIE).iter().count(), 2);
    }

    #[tokio::test]
    async fn streamed_202_and_204_carry_one_byte_instead_of_an_empty_body() {
        let (status, body) = bytes(never_empty(response(StatusCode::ACCEPTED, b"", None))).await;
        assert_eq!((status, &body[..]), (StatusCode::ACCEPTED, &b"\n"[..]));
        let (status, body) = bytes(never_empty(response(
            StatusCode::NO_CONTENT,
            b"",
            Some("text/plain"),
        )))
        .await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"\n"[..]));
        let empty = Response::builder()
            .status(StatusCode::ACCEPTED)
            .body(http_body_util::Empty::new().boxed())
            .unwrap();
        assert_eq!(bytes(never_empty(empty)).await.1, &b"\n"[..]);
    }

    #[tokio::test]
    async fn streamed_json_answers_pass_through_whole() {
        let json = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        let (status, body) = bytes(never_empty(response(
            StatusCode::OK,
            json,
            Some("application/json"),
        )))
        .await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &json[..]));
    }

    #[test]
    fn sse_answers_are_never_buffered_by_proxies() {
        let sse = never_empty(response(
            StatusCode::OK,
            b"data: {}\n\n",
            Some("text/event-stream"),
        ));
        assert_eq!(sse.headers()["x-accel-buffering"], "no");
    }
}
