//! Host [MCP](https://modelcontextprotocol.io) servers written with [`rmcp`]
//! on AWS Lambda — or locally — speaking MCP 2026-07-28 statelessly.
//!
//! mcp-lambda wraps an rmcp [`ServerHandler`](rmcp::ServerHandler) with what a
//! pay-per-request deployment needs: the HTTP front that answers every bad
//! request with the spec's status and JSON-RPC code ([`http`]), cache hints
//! mirrored to `Cache-Control` ([`cache`]), signed list cursors, durable
//! [`handles`] instead of sessions, bearer-token [`auth`], and one
//! [`Server::run`] that serves on Lambda or on loopback ([`serve`]).
//! [`Config`] reads every setting once; `ARCHITECTURE.md` walks one request
//! through the modules.
//!
//! # Example: the smallest server
//!
//! One tool, served locally on `http://127.0.0.1:3000/mcp` — or on Lambda,
//! with the same binary, when the Lambda runtime starts it
//! (`examples/hello.rs`):
//!
//! ```no_run
//! use mcp_lambda::rmcp::{
//!     self, ServerHandler,
//!     handler::server::{router::tool::ToolRouter, wrapper::Parameters},
//!     schemars, tool, tool_handler, tool_router,
//! };
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Greet {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Clone)]
//! struct Hello {
//!     tool_router: ToolRouter<Self>,
//! }
//!
//! #[tool_router]
//! impl Hello {
//!     #[tool(description = "Say hello to someone.")]
//!     fn hello(&self, Parameters(Greet { name }): Parameters<Greet>) -> String {
//!         format!("Hello, {name}!")
//!     }
//! }
//!
//! #[tool_handler(name = "hello")]
//! impl ServerHandler for Hello {}
//!
//! #[tokio::main]
//! async fn main() -> Result<(), mcp_lambda::Error> {
//!     let config = mcp_lambda::Config::load().await?; // every MCP_* variable, read once
//!     mcp_lambda::init_tracing(&config);
//!     let hello = Hello { tool_router: Hello::tool_router() };
//!     mcp_lambda::App::new(config).server(move || hello.clone()).run().await
//! }
//! ```
//!
//! # Example: call the service in-process
//!
//! [`Server::service`] is a `tower::Service`: tests send it requests without a
//! socket, exactly as the local server and the Lambda adapter do.
//!
//! ```
//! use tower::ServiceExt as _;
//! # #[derive(Clone)] struct Hello;
//! # impl mcp_lambda::rmcp::ServerHandler for Hello {}
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = mcp_lambda::App::new(mcp_lambda::Config::local_default())
//!     .server(|| Hello)
//!     .service();
//! let request = http::Request::get("/healthz")
//!     .body(http_body_util::Empty::<bytes::Bytes>::new())
//!     .unwrap();
//! let response = service.oneshot(request).await.unwrap();
//! assert_eq!(response.status(), 200);
//! # }
//! ```
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `dynamodb` | yes | `handles::DynamoDbHandleStore` and `MCP_HANDLES_TABLE` (the AWS SDK for DynamoDB) |
//! | `aws-secrets` | yes | request-state keys from SSM Parameter Store or Secrets Manager ([`Config::load`]) |
//!
//! `default-features = false` keeps the in-memory handle store, auth and
//! everything else, without the AWS SDK. A variable that needs a missing feature
//! (`MCP_HANDLES_TABLE`, a request-state key kept in AWS) stops start-up with an
//! error that names the feature.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(unreachable_pub)]
#![deny(rustdoc::broken_intra_doc_links)]

pub mod app;
pub mod auth;
pub mod aws;
pub mod cache;
pub mod config;
mod env;
mod error;
pub mod handler;
pub mod handles;
pub mod http;
pub mod listen;
pub mod logging;
pub mod metrics;
pub mod request_state;
mod rmcp_gaps;
pub mod serve;
pub mod shutdown;
pub mod tasks;
#[cfg(feature = "test-util")]
pub mod testing;

pub use app::{App, MakeHandler, Server, init_tracing};
pub use auth::{Caller, Principal};
pub use config::{Config, ConfigError};
pub use error::Error;
pub use handler::Hosted;
pub use http::McpService;
/// The rmcp version this crate is built on, so servers need no second dependency on it.
pub use rmcp;
pub use serve::{Buffered as LambdaBuffered, Streaming as LambdaStreaming};
