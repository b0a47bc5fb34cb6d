//! Glue between the service and where it runs: the Lambda runtime or a local
//! HTTP server. Neither holds protocol logic.

pub(crate) mod lambda;
pub(crate) mod local;
