//! The HTTP front: routes, limits, envelope checks, refusals and cache headers.

mod cache_headers;
mod cors;
mod deadline;
mod envelope;
pub mod errors;
mod origin_secret;
mod routes;

pub(crate) use cache_headers::CacheSlot;
pub(crate) use deadline::Deadline;
pub(crate) use origin_secret::OriginSecretCheck;
pub(crate) use routes::FrontSettings;
pub use routes::McpService;
