//! The crate's error type.

use std::fmt;
use std::net::SocketAddr;

use thiserror::Error;

/// What can stop the server from starting or running.
///
/// Its `Debug` is its message, so a `main` that returns `Result<(), Error>` prints what to do,
/// not the variant's fields:
///
/// ```
/// let error = mcp_lambda::Error::from(mcp_lambda::aws::TableError::new(
///     "handle store",
///     "mcp-handles",
///     "not found: create it from infra/handles-table.json",
/// ));
/// assert_eq!(
///     format!("{error:?}"),
///     "cannot use DynamoDB table mcp-handles for the handle store: not found: create it from \
///      infra/handles-table.json"
/// );
/// ```
#[derive(Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is unusable.
    #[error("configuration: {0}")]
    Config(#[from] crate::env::ConfigError),
    /// The local listen address could not be bound.
    #[error(
        "cannot listen on {addr}: {source}; set MCP_BIND to a free address, e.g. 127.0.0.1:3001"
    )]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The tokio runtime could not be built ([`runtime`](crate::runtime)).
    #[error("cannot start the tokio runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The Lambda runtime loop failed.
    #[error("the Lambda runtime stopped: {0}")]
    Lambda(String),
    /// A store's DynamoDB table (handles, tasks, the change feed) cannot be used.
    #[error(transparent)]
    Table(#[from] crate::aws::TableError),
    /// Durable tasks were configured to run where they cannot (see the message).
    #[error("durable tasks: {0}")]
    Tasks(&'static str),
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
