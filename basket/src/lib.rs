//! The basket: mcp-lambda's example server, a shopping basket kept in typed handles
//! (docs/basket.md).
//!
//! [`Basket`] is the MCP server (seven tools over [`Handles<Contents>`](mcp_lambda::handles::Handles)
//! of kind [`KIND`]), [`resource::resource`] serves each basket as `basket://{basket_id}`, and
//! [`task_policy`] lets `place_order` run as a task. The `basket` binary puts them on an
//! [`App`](mcp_lambda::App); the tests and the fuzz target build the same service in process.

pub mod resource;
mod tools;

pub use tools::{Basket, Contents, KIND, task_policy};
