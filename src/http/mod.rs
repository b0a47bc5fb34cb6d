//! The HTTP front: routes, limits, envelope checks, refusals and cache headers.

mod cache_headers;
mod envelope;
pub mod errors;
mod routes;

pub(crate) use routes::FrontSettings;
pub use routes::McpService;
