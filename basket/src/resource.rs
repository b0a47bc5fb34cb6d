//! Each basket as a resource: `basket://{basket_id}`, offered as a resource template.
//!
//! `resources/read` of `basket://<basket_id>` answers the basket as JSON
//! (`application/json`), the same object `view_basket` returns as its structured result. Only the
//! basket's owner can read it: an unknown, expired, checked-out or malformed id and another
//! principal's basket all answer the same error, the spec's resource-not-found (SEP-2164:
//! `-32602` "Resource not found" with `data.uri` for 2026-07-28 clients; rmcp keeps the old
//! `-32002` for older ones), so ids cannot be probed.
//!
//! A read is a store `get`: unlike `view_basket` it does not count as use (the expiry stays
//! where it is) and does not fence earlier unconfirmed writes.
//!
//! `resources/list` is empty: baskets belong to their callers and the handle store does not
//! enumerate an owner's handles. A basket's URI is built from the `basket_id` that
//! `create_basket` returns.
//!
//! The library serves it ([`HandleResource`]): the template, the owner-only read, the same
//! not-found for everyone else, listen on it, and `cacheScope: private` on every read whatever
//! `MCP_CACHE_RESOURCES_READ` says (its TTL stays the operator's; default 0).

use mcp_lambda::handler::HandleResource;
use mcp_lambda::handles::Handles;

use crate::tools::{Contents, human, view};

/// The one resource template.
pub const URI_TEMPLATE: &str = "basket://{basket_id}";

/// Each basket in `baskets` as `basket://{basket_id}`, read as the object `view_basket` returns.
pub fn resource(baskets: &Handles<Contents>) -> HandleResource {
    let ttl = baskets.ttl();
    HandleResource::with_view(URI_TEMPLATE, baskets, move |basket| view(basket, ttl))
        .with_name("basket")
        .with_title("Shopping basket")
        .with_description(format!(
            "A shopping basket as JSON: its lines ordered by SKU, total quantity and expiry, the \
             same object view_basket returns. Fill in the basket_id that create_basket returned. \
             Only the basket's owner can read it; to anyone else, and once it has expired or \
             been checked out, it does not exist. Reading does not count as use: unlike \
             view_basket it does not reset the basket's {} inactivity expiry. Baskets are per \
             caller, so none are listed in resources/list.",
            human(ttl)
        ))
}
