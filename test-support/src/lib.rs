//! The helpers every test target shares, included as `mod support;` (one copy, no `#[path]`
//! per helper; `tests/hostile/main.rs` needs one `#[path]` to reach this folder).
//!
//! - [`fixture`]: a small MCP server and request builders that call the service in-process;
//! - [`basket`]: the one way to start the basket binary (or another server binary) with a clean
//!   environment, and a client for it over real HTTP;
//! - [`jwt`]: real keys, real signatures and a loopback issuer (`benches/in_process.rs` and
//!   `benches/servers/harness.rs` include this file too);
//! - [`dynamodb`]: the DynamoDB test endpoint, a client on it and the shared table;
//! - [`sse`]: a `subscriptions/listen` answer read message by message;
//! - [`counting_proxy`]: a proxy in front of DynamoDB that records each request's operation.
//!
//! Each test target uses part of it, hence the `dead_code` allowance.
#![allow(dead_code, unreachable_pub)]

pub mod basket;
pub mod counting_proxy;
pub mod dynamodb;
pub mod fixture;
pub mod jwt;
pub mod sse;
