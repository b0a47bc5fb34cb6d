//! Resources: three direct ones, one template, and the subscriptions to them (legacy
//! `resources/subscribe`, and `subscriptions/listen` through the library's watch rule).

use std::{collections::HashSet, sync::Mutex};

use mcp_lambda::listen::Watch;
use rmcp::{
    ErrorData,
    model::{
        ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    },
};
use serde_json::json;

use crate::{from_json, media::PNG_BASE64};

/// The direct resources `resources/list` returns.
const RESOURCE_URIS: [&str; 3] = [
    "test://static-text",
    "test://static-binary",
    "test://watched-resource",
];

/// The one resource template; [`template_id`] reads its `{id}`.
pub(crate) const TEMPLATE: &str = "test://template/{id}/data";

pub(crate) fn list() -> Vec<Resource> {
    from_json(json!([
        {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
         "description": "A static text resource for testing", "mimeType": "text/plain"},
        {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
         "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
        {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
         "description": "A resource clients can subscribe to", "mimeType": "text/plain"},
    ]))
}

pub(crate) fn templates() -> Vec<ResourceTemplate> {
    from_json(json!([
        {"uriTemplate": TEMPLATE, "name": "template", "title": "Resource Template",
         "description": "A resource template with parameter substitution", "mimeType": "application/json"},
    ]))
}

pub(crate) fn read(uri: &str) -> Result<ReadResourceResponse, ErrorData> {
    let contents = match uri {
        "test://static-text" => {
            ResourceContents::text("This is the content of the static text resource.", uri)
        }
        "test://static-binary" => {
            ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")
        }
        "test://watched-resource" => ResourceContents::text("Watched resource content", uri),
        _ => match template_id(uri) {
            Some(id) => ResourceContents::text(
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string(),
                uri,
            )
            .with_mime_type("application/json"),
            // 2026-07-28 peers get -32602 (rmcp rewrites the code); older peers -32002.
            None => {
                return Err(ErrorData::resource_not_found(
                    "Resource not found",
                    Some(json!({"uri": uri})),
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]).into())
}

/// The `subscriptions/listen` watch rule: updates can only concern resources that exist;
/// anyone may watch them.
pub(crate) fn watch(uri: &str, _caller: &mcp_lambda::Caller) -> Option<Watch> {
    (RESOURCE_URIS.contains(&uri) || template_id(uri).is_some())
        .then(|| Watch::Resource(uri.to_owned()))
}

/// `test://template/{id}/data` → `id`.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Legacy `resources/subscribe` targets.
#[derive(Default)]
pub(crate) struct Subscriptions(Mutex<HashSet<String>>);

impl Subscriptions {
    pub(crate) fn add(&self, uri: String) {
        self.0.lock().expect("subscriptions lock").insert(uri);
    }

    pub(crate) fn remove(&self, uri: &str) {
        self.0.lock().expect("subscriptions lock").remove(uri);
    }
}
