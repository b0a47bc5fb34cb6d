//! The crate's error type.

use std::net::SocketAddr;

use thiserror::Error;

/// What can stop the server from starting or running.
#[derive(Debug, Error)]
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
