//! Host [MCP](https://modelcontextprotocol.io) servers written with [`rmcp`]
//! on AWS Lambda — or locally — speaking MCP 2026-07-28 statelessly.
//!
//! mcp-lambda wraps an rmcp [`ServerHandler`](rmcp::ServerHandler) with what a
//! pay-per-request deployment needs: an HTTP front that answers every bad
//! request with the spec's status and JSON-RPC code, cache hints mirrored to
//! `Cache-Control`, signed list cursors, durable [`handles`] instead of
//! sessions, bearer-token auth (and a built-in authorization server,
//! [`oauth`]), durable [`tasks`], [`listen`]ing to changes, and one
//! [`Server::run`] that serves on Lambda or on loopback.
//!
//! What a server uses is here at the root — [`App`] builds the server from a
//! [`Config`] ([`App::load`] reads it from the environment), a tool learns who
//! calls from a [`Caller`], [`Server::run`] serves — and in [`handles`],
//! [`tasks`], [`listen`], [`oauth`] and `testing` (feature `test-util`).
//! Everything else is the house's own (`ARCHITECTURE.md` walks one request
//! through it) and hidden from these docs.
//!
//! # Example: the smallest server
//!
//! One tool, served locally on `http://127.0.0.1:3000/mcp` — or on Lambda,
//! with the same binary, when the Lambda runtime starts it
//! (`examples/hello.rs`). A server's crate needs no `rmcp` dependency of its
//! own: write handlers with the rmcp this crate re-exports, and import
//! `rmcp` itself too (`use mcp_lambda::rmcp::{self, …}`), since rmcp's macros
//! expand to `rmcp::…` paths.
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
//! #[tool_handler(router = self.tool_router, name = "hello")]
//! impl ServerHandler for Hello {}
//!
//! #[tokio::main]
//! async fn main() -> Result<(), mcp_lambda::Error> {
//!     let app = mcp_lambda::App::load().await?; // every MCP_* variable, read once
//!     let hello = Hello { tool_router: Hello::tool_router() };
//!     app.server(hello).run().await
//! }
//! ```
//!
//! Deployed to on-demand Lambda, build the runtime with [`runtime()`] instead of
//! `#[tokio::main]`: one thread there, where an environment serves one invocation at a time,
//! and tokio's multi-threaded runtime everywhere else (`docs/deploy.md`).
//!
//! # Example: state kept between calls, as a resource you can listen to
//!
//! [`App::open`] opens the handle store and the change feed the
//! configuration names; [`App::handles`] gives typed, caller-bound state
//! ([`handles::Handles`]); a tool learns who calls from a [`Caller`]
//! argument; [`HandleResource`] serves each handle as a resource its
//! owner reads and listens to. `examples/notes.rs` is the whole server.
//!
//! ```no_run
//! use mcp_lambda::rmcp::{self, ServerHandler, handler::server::router::tool::ToolRouter};
//! use mcp_lambda::rmcp::{tool, tool_handler, tool_router};
//! use mcp_lambda::{App, Caller, Config, HandleResource, handles::{HandleError, Handles}};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct Counter {
//!     n: u64,
//! }
//!
//! #[derive(Clone)]
//! struct Counters {
//!     counters: Handles<Counter>,
//!     tool_router: ToolRouter<Self>,
//! }
//!
//! #[tool_router]
//! impl Counters {
//!     #[tool(description = "Start a counter; returns its id. Read it as counter://{id}.")]
//!     async fn start(&self, caller: Caller) -> Result<String, HandleError> {
//!         Ok(self.counters.create(&caller, Counter { n: 0 }).await?.id.to_string())
//!     }
//! }
//!
//! #[tool_handler(router = self.tool_router)]
//! impl ServerHandler for Counters {}
//!
//! #[tokio::main]
//! async fn main() -> Result<(), mcp_lambda::Error> {
//!     let app = App::load().await?;
//!     let counters = app.handles("counter");
//!     app.resource(HandleResource::new("counter://{id}", &counters))
//!         .server(Counters { counters, tool_router: Counters::tool_router() })
//!         .run()
//!         .await
//! }
//! ```
//!
//! # Example: call the service in-process
//!
//! [`Server::service`] is a `tower::Service`: tests send it requests without a
//! socket, exactly as the local server and the Lambda adapter do. With the
//! `test-util` feature, `testing::TestClient` does it for you, speaking MCP.
//!
//! ```
//! use tower::ServiceExt as _;
//! # #[derive(Clone)] struct Hello;
//! # impl mcp_lambda::rmcp::ServerHandler for Hello {}
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let service = mcp_lambda::App::open(mcp_lambda::Config::local_default())
//!     .await
//!     .unwrap()
//!     .server(Hello)
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
//! | `dynamodb` | yes | `MCP_HANDLES_TABLE`: `handles::DynamoDbHandleStore`, and durable tasks and the `subscriptions/listen` change feed on the same table (the AWS SDK for DynamoDB) |
//! | `aws-secrets` | yes | request-state keys from SSM Parameter Store or Secrets Manager ([`Config::load`]) |
//! | `test-util` | no | `testing::TestClient`: an MCP client that calls your server in process, for your tests |
//!
//! `default-features = false` keeps the in-memory handle store, auth and
//! everything else, without the AWS SDK. A variable that needs a missing feature
//! (`MCP_HANDLES_TABLE`, a request-state key kept in AWS) stops start-up with an
//! error that names the feature.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(unreachable_pub)]
#![deny(rustdoc::broken_intra_doc_links)]

// What a server author uses: the root's items below, and these four modules.
pub mod handles;
pub mod listen;
pub mod oauth;
pub mod tasks;
#[cfg(feature = "test-util")]
pub mod testing;

// The house's rooms (ARCHITECTURE.md). Public so the crate's own tests, benchmarks and
// example servers reach them, hidden because no server needs them: they may change in any
// release. What a server needs from them is re-exported at the root.
#[doc(hidden)]
pub mod app;
#[doc(hidden)]
pub mod auth;
#[doc(hidden)]
pub mod aws;
#[doc(hidden)]
pub mod cache;
#[doc(hidden)]
pub mod config;
mod env;
mod error;
#[doc(hidden)]
pub mod handler;
#[doc(hidden)]
pub mod http;
#[doc(hidden)]
pub mod logging;
#[doc(hidden)]
pub mod metrics;
mod request_scope;
#[doc(hidden)]
pub mod request_state;
mod rmcp_gaps;
#[doc(hidden)]
pub mod serve;
#[doc(hidden)]
pub mod shutdown;
mod startup;

pub use app::{App, Server, init_tracing};

/// The guides' Rust, compiled by `cargo test --doc` so `docs/` cannot drift from the API (the
/// README's and `docs/your-server.md`'s quick start is built out of tree by
/// `scripts/quickstart-tests.sh`).
#[cfg(doctest)]
mod guides {
    #[doc = include_str!("../docs/listen.md")]
    struct Listen;
    #[doc = include_str!("../docs/tasks.md")]
    struct Tasks;
    #[doc = include_str!("../docs/your-server.md")]
    struct YourServer;
    #[doc = include_str!("../docs/deploy.md")]
    struct Deploy;
    #[doc = include_str!("../docs/auth.md")]
    struct Auth;
    #[doc = include_str!("../docs/porting.md")]
    struct Porting;
}
pub use auth::{Caller, Principal};
pub use aws::TableError;
pub use config::{Config, ConfigError, Mode};
pub use error::Error;
pub use handler::HandleResource;
pub use http::McpService;
/// The rmcp version this crate is built on, so servers need no second dependency on it.
pub use rmcp;
pub use serve::runtime;
pub use shutdown::Shutdown;
