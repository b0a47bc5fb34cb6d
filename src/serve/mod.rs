//! Glue between the service and where it runs: the Lambda runtime or a local
//! HTTP server. Neither holds protocol logic, so tests call the service directly.

pub(crate) mod lambda;
pub(crate) mod local;
mod refused_head;
mod runtime;

pub use lambda::{Buffered, LambdaSettings, Streaming};
pub use local::LocalSettings;
pub use runtime::runtime;
