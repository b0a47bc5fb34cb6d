//! The floor for `benches/lambda-runtime.sh`: the smallest `lambda_http` function, answering
//! every event with a small JSON body and no MCP logic at all.
//!
//! Run under a Lambda Runtime API (`AWS_LAMBDA_RUNTIME_API`), as `bench_lambda_runtime` does.
//! It runs on tokio's multi-threaded runtime, as `#[tokio::main]` (and cargo-lambda's template)
//! builds it; with `BENCH_HELLO_THREADS=one`, on a current-thread runtime, the floor of a
//! function on one thread (what `mcp_lambda::runtime()` gives the basket on Lambda).

use lambda_http::{Body, Error, Request, Response, run, service_fn};

async fn hello(_: Request) -> Result<Response<Body>, Error> {
    Ok(Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(Body::from(r#"{"hello":"world"}"#))?)
}

fn main() -> Result<(), Error> {
    let mut builder = if std::env::var("BENCH_HELLO_THREADS").as_deref() == Ok("one") {
        tokio::runtime::Builder::new_current_thread()
    } else {
        // What `#[tokio::main]` builds.
        tokio::runtime::Builder::new_multi_thread()
    };
    builder
        .enable_all()
        .build()?
        .block_on(run(service_fn(hello)))
}
