//! Host [MCP](https://modelcontextprotocol.io) servers written with
//! [`rmcp`] on AWS Lambda — or locally — speaking MCP 2026-07-28 statelessly.
//!
//! mcp-lambda wraps an rmcp [`ServerHandler`](rmcp::ServerHandler) with what a
//! pay-per-request deployment needs: the HTTP front that answers every bad
//! request with the spec's status and JSON-RPC code, cache hints mirrored to
//! `Cache-Control`, signed list cursors, durable handles instead of sessions,
//! and one [`App::run`](app::Server::run) that serves on Lambda or on loopback.
//!
//! # Example: serve locally, or on Lambda with the same binary
//!
//! ```no_run
//! use rmcp::{ServerHandler, model::{ServerCapabilities, ServerConfig}};
//!
//! #[derive(Clone)]
//! struct Hello;
//! impl ServerHandler for Hello {
//!     fn get_info(&self) -> ServerConfig {
//!         ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), mcp_lambda::Error> {
//!     let config = mcp_lambda::Config::load().await?; // every knob, read once
//!     mcp_lambda::init_tracing(&config);
//!     mcp_lambda::App::new(config).server(|| Hello).run().await
//! }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![deny(unreachable_pub)]

pub mod app;
pub mod auth;
pub mod aws;
pub mod config;
mod error;
pub(crate) mod handler;
pub mod handles;
pub mod http;
pub mod request_state;
mod serve;

pub use app::{App, Server, init_tracing};
pub use auth::Principal;
pub use config::Config;
pub use error::Error;
pub use handler::Hosted;
pub use http::McpService;
pub use serve::lambda::{Buffered as LambdaBuffered, Streaming as LambdaStreaming};
