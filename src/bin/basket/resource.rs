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
//! Caching: the library puts the `MCP_CACHE_RESOURCES_READ` hint on every read (default `0 s,
//! private`); `main` pins its scope to `private`, so a shared cache never keeps one caller's
//! basket.

use mcp_lambda::handles::HandleId;
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};

use super::{Basket, ToolError, human};

/// The one resource template.
pub(crate) const URI_TEMPLATE: &str = "basket://{basket_id}";

/// What every basket URI starts with; the rest is the `basket_id`, exactly as issued.
const PREFIX: &str = "basket://";

/// The JSON a read answers.
const MIME_TYPE: &str = "application/json";

/// The template `resources/templates/list` offers; its description states the configured expiry.
pub(crate) fn template(basket: &Basket) -> ResourceTemplate {
    ResourceTemplate::new(URI_TEMPLATE, "basket")
        .with_title("Shopping basket")
        .with_description(format!(
            "A shopping basket as JSON: its lines ordered by SKU, total quantity and expiry, the \
             same object view_basket returns. Fill in the basket_id that create_basket returned. \
             Only the basket's owner can read it; to anyone else, and once it has expired or \
             been checked out, it does not exist. Reading does not count as use: unlike \
             view_basket it does not reset the basket's {} inactivity expiry. Baskets are per \
             caller, so none are listed in resources/list.",
            human(basket.ttl)
        ))
        .with_mime_type(MIME_TYPE)
}

/// `resources/read` of `uri` on behalf of `owner`.
pub(crate) async fn read(
    basket: &Basket,
    owner: &str,
    uri: &str,
) -> Result<ReadResourceResult, ErrorData> {
    let Some(id) = basket_id(uri) else {
        return Err(not_found(uri));
    };
    let view = basket.peek(owner, id).await.map_err(|e| match e {
        ToolError::Gone(_) => not_found(uri),
        ToolError::Unavailable => ErrorData::internal_error(
            "The basket service is temporarily unavailable; try again in a few seconds.",
            None,
        ),
        _ => ErrorData::internal_error("Something went wrong on the server.", None),
    })?;
    let json = serde_json::to_string(&view).map_err(|e| {
        tracing::error!(error = %e, "basket view does not serialize");
        ErrorData::internal_error("Something went wrong on the server.", None)
    })?;
    let contents = ResourceContents::text(json, uri).with_mime_type(MIME_TYPE);
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The basket id of a URI: `basket://` and a basket_id in its one canonical form (36 lowercase
/// characters), so each basket has exactly one URI. Anything else names no basket.
fn basket_id(uri: &str) -> Option<HandleId> {
    uri.strip_prefix(PREFIX)?.parse().ok()
}

/// The spec's resource-not-found (SEP-2164), the same for every reason a basket is not there.
/// rmcp answers it as `-32602` to 2026-07-28 clients and as `-32002` to older ones.
fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        "Resource not found",
        Some(serde_json::json!({ "uri": uri })),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_canonical_basket_uri_names_a_basket() {
        let id = HandleId::random().unwrap();
        assert_eq!(basket_id(&format!("basket://{id}")), Some(id));
        for bad in [
            id.to_string(),
            format!("basket:/{id}"),
            format!("basket://{id}/"),
            format!("basket:// {id}"),
            format!("BASKET://{id}"),
            format!("basket://{}", id.to_string().to_uppercase()),
            "basket://".into(),
            "basket://{basket_id}".into(),
        ] {
            assert_eq!(basket_id(&bad), None, "{bad}");
        }
    }

    #[test]
    fn not_found_carries_the_uri() {
        let error = not_found("basket://nope");
        assert_eq!(error.code, rmcp::model::ErrorCode::RESOURCE_NOT_FOUND);
        assert_eq!(error.message, "Resource not found");
        assert_eq!(
            error.data,
            Some(serde_json::json!({ "uri": "basket://nope" }))
        );
    }
}
