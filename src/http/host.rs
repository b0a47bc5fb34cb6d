//! One `Host` header (RFC 9112 §3.2): more than one is a 400, since layers
//! that read the first and layers that read the last would see different
//! hosts. The allow-list itself (`MCP_ALLOWED_HOSTS`, DNS-rebinding guard) and
//! the `Origin` check are rmcp's, configured in `settings.rs`.

use http::{HeaderMap, header};

use super::refusal::Rejection;

/// Refuses a request that repeats `Host`.
pub(crate) fn check(headers: &HeaderMap) -> Result<(), Rejection> {
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return Err(Rejection::RepeatedHost);
    }
    Ok(())
}
