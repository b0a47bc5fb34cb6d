//! The floor for `benches/lambda-runtime.sh`: the smallest `lambda_http` function, answering
//! every event with a small JSON body and no MCP logic at all.
//!
//! Run under a Lambda Runtime API (`AWS_LAMBDA_RUNTIME_API`), as `bench_lambda_runtime` does.

use lambda_http::{Body, Error, Request, Response, run, service_fn};

async fn hello(_: Request) -> Result<Response<Body>, Error> {
    Ok(Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from(r#"{"hello":"world"}"#))?)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(hello)).await
}
