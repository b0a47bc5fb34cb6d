//! `lambda_http` glue: buffered answers by default, response streaming on request.

use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http_body_util::BodyExt;
use lambda_http::{Body as LambdaBody, Request, Response};

use crate::{Error, McpService};

/// Adapts the service to buffered Lambda responses (the whole body at once).
#[derive(Clone)]
pub struct Buffered<H>(pub McpService<H>);

impl<H: rmcp::ServerHandler> tower::Service<Request> for Buffered<H> {
    type Response = Response<LambdaBody>;
    type Error = std::convert::Infallible;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let mut inner = self.0.clone();
        Box::pin(async move {
            let response = tower::Service::call(&mut inner, request).await?;
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await?.to_bytes();
            let body = if bytes.is_empty() {
                LambdaBody::Empty
            } else {
                match String::from_utf8(bytes.to_vec()) {
                    Ok(text) => LambdaBody::Text(text),
                    Err(bytes) => LambdaBody::Binary(bytes.into_bytes()),
                }
            };
            Ok(Response::from_parts(parts, body))
        })
    }
}

/// Runs the Lambda runtime loop with `service` built during INIT.
pub(crate) async fn serve<H: rmcp::ServerHandler>(service: McpService<H>, streaming: bool) -> Result<(), Error> {
    tracing::info!(streaming, "serving MCP on AWS Lambda");
    let result = if streaming {
        lambda_http::run_with_streaming_response(service).await
    } else {
        lambda_http::run(Buffered(service)).await
    };
    result.map_err(|error| Error::Lambda(error.to_string()))
}
