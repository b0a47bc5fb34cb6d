//! Resources served from typed handles: `notes://{id}` read by its owner, watched by listen.

use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, ResourceContents, ResourceTemplate};
use serde::{Serialize, de::DeserializeOwned};

use crate::auth::Caller;
use crate::handles::{HandleError, HandleId, Handles, Stored};
use crate::listen::Watch;

/// What a read answers: the handle's JSON as the caller sees it.
type ReadFn =
    dyn Fn(Caller, HandleId) -> BoxFuture<'static, Result<String, HandleError>> + Send + Sync;

/// A resource template served from typed [`Handles`]: `resources/templates/list` offers it,
/// `resources/read` of one of its URIs answers the handle's value as JSON to its owner, and
/// `subscriptions/listen` may watch it (a write through the `Handles` is the change).
///
/// Everyone but the owner — and the owner once the handle has expired or been deleted, or for
/// an id that is not one — gets the same resource-not-found (`-32602` "Resource not found"
/// with `data.uri`), so ids cannot be probed. A read does not count as use: the expiry stays
/// where it is. Reads are always `cacheScope: private`.
///
/// Register it with [`App::resource`](crate::App::resource); the app then announces the
/// `resources` capability (and `resources.subscribe` when it serves listen) for the handler.
///
/// ```
/// use std::time::Duration;
/// use mcp_lambda::{handler::HandleResource, handles::{self, Handles}};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Note {
///     text: String,
/// }
///
/// let notes: Handles<Note> = Handles::new(handles::memory(), "note", Duration::from_secs(60));
/// let resource = HandleResource::new("notes://{id}", &notes).with_title("A note");
/// assert_eq!(resource.template().uri_template, "notes://{id}");
/// ```
#[derive(Clone)]
pub struct HandleResource {
    template: ResourceTemplate,
    /// Every URI of the template starts with it; the rest is the handle id.
    prefix: Arc<str>,
    read: Arc<ReadFn>,
}

impl std::fmt::Debug for HandleResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleResource")
            .field("uri_template", &self.template.uri_template)
            .finish_non_exhaustive()
    }
}

impl HandleResource {
    /// Serves `handles` under `uri_template`, which ends with the one placeholder for the id
    /// (`notes://{id}`); a read answers the handle's value.
    ///
    /// # Panics
    ///
    /// When `uri_template` does not end with a `{…}` placeholder or has another one: a
    /// programming error, caught the first time the server starts.
    pub fn new<T>(uri_template: &str, handles: &Handles<T>) -> Self
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        Self::render(uri_template, handles, |stored: &Stored<T>| {
            serde_json::to_string(&stored.value)
        })
    }

    /// Like [`new`](Self::new), but a read answers `view` of the stored handle (its id, expiry
    /// and value), serialized as JSON.
    ///
    /// # Panics
    ///
    /// As [`new`](Self::new).
    pub fn with_view<T, V, F>(uri_template: &str, handles: &Handles<T>, view: F) -> Self
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
        V: Serialize,
        F: Fn(&Stored<T>) -> V + Send + Sync + 'static,
    {
        Self::render(uri_template, handles, move |stored: &Stored<T>| {
            serde_json::to_string(&view(stored))
        })
    }

    fn render<T, F>(uri_template: &str, handles: &Handles<T>, render: F) -> Self
    where
        T: Serialize + DeserializeOwned + Send + Sync + 'static,
        F: Fn(&Stored<T>) -> Result<String, serde_json::Error> + Send + Sync + 'static,
    {
        let prefix = prefix_of(uri_template).unwrap_or_else(|| {
            panic!(
                "resource template {uri_template:?} must end with its one placeholder for the \
                 handle id, e.g. \"notes://{{id}}\""
            )
        });
        let handles = handles.clone();
        let render = Arc::new(render);
        let kind = handles.kind().to_owned();
        let read: Arc<ReadFn> = Arc::new(move |caller: Caller, id: HandleId| {
            let handles = handles.clone();
            let render = render.clone();
            Box::pin(async move {
                let stored = handles.read(&caller, id).await?;
                render(&stored).map_err(|e| {
                    HandleError::Decode(format!("the view does not serialize to JSON: {e}"))
                })
            })
        });
        Self {
            template: ResourceTemplate::new(uri_template, kind)
                .with_mime_type("application/json")
                .with_description(
                    "Kept between calls for its owner only; to anyone else, and once it has \
                     expired, it does not exist.",
                ),
            prefix: prefix.into(),
            read,
        }
    }

    /// The template's `name` (default: the handles' kind).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.template.name = name.into();
        self
    }

    /// The template's `title`.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.template = self.template.with_title(title.into());
        self
    }

    /// The template's `description`.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.template = self.template.with_description(description.into());
        self
    }

    /// The template `resources/templates/list` offers.
    pub fn template(&self) -> &ResourceTemplate {
        &self.template
    }

    /// Whether `uri` is one of this template's.
    pub(crate) fn serves(&self, uri: &str) -> bool {
        uri.starts_with(&*self.prefix)
    }

    /// The handle `uri` names, if the URI is one of this template's; `Some(None)` for a URI of
    /// the template whose id is not a handle id.
    fn id_of(&self, uri: &str) -> Option<Option<HandleId>> {
        uri.strip_prefix(&*self.prefix).map(|id| id.parse().ok())
    }

    /// What a listener of `uri` watches, if the URI is this template's.
    pub(crate) fn watch(&self, uri: &str, caller: &Caller) -> Option<Option<Watch>> {
        self.id_of(uri).map(|id| {
            id.map(|id| Watch::Handle {
                owner: caller.owner_key().to_owned(),
                id,
            })
        })
    }

    /// `resources/read` of `uri`, if the URI is this template's.
    pub(crate) fn read(
        &self,
        caller: Caller,
        uri: &str,
    ) -> Option<BoxFuture<'static, Result<ReadResourceResult, ErrorData>>> {
        let id = self.id_of(uri)?;
        let uri = uri.to_owned();
        let read = self.read.clone();
        Some(Box::pin(async move {
            let Some(id) = id else {
                return Err(not_found(&uri));
            };
            match read(caller, id).await {
                Ok(json) => Ok(ReadResourceResult::new(vec![
                    ResourceContents::text(json, uri).with_mime_type("application/json"),
                ])),
                Err(HandleError::NotFound) => Err(not_found(&uri)),
                Err(HandleError::Unavailable(reason) | HandleError::Indeterminate(reason)) => {
                    tracing::warn!(%reason, "handle store unavailable for a resource read");
                    Err(ErrorData::internal_error(
                        "the store behind this resource is temporarily unavailable; try again \
                         in a few seconds",
                        None,
                    ))
                }
                Err(error) => {
                    tracing::error!(%error, "a handle resource could not be read");
                    Err(ErrorData::internal_error(
                        "this resource could not be read",
                        None,
                    ))
                }
            }
        }))
    }
}

/// The spec's resource-not-found (SEP-2164), the same for every reason a handle is not there.
pub(crate) fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        "Resource not found",
        Some(serde_json::json!({ "uri": uri })),
    )
}

/// `notes://` for `notes://{id}`: the template up to its one placeholder, which ends it.
fn prefix_of(uri_template: &str) -> Option<&str> {
    let open = uri_template.find('{')?;
    let rest = &uri_template[open..];
    let closes_at_end = rest.ends_with('}') && rest.matches('}').count() == 1;
    let one_placeholder = rest.matches('{').count() == 1 && rest.len() > 2;
    (open > 0 && closes_at_end && one_placeholder).then(|| &uri_template[..open])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_ends_with_its_one_placeholder() {
        assert_eq!(prefix_of("notes://{id}"), Some("notes://"));
        assert_eq!(prefix_of("app://notes/{note_id}"), Some("app://notes/"));
        for bad in ["notes://", "{id}", "notes://{id}/x", "a://{x}{y}", "a://{}"] {
            assert_eq!(prefix_of(bad), None, "{bad}");
        }
    }
}
