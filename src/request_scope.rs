//! One request's scope: the one way down from the HTTP front to the handler, and the one way
//! back up.
//!
//! rmcp hands a handler the HTTP request's [`Parts`] inside its `RequestContext`'s extensions,
//! so whatever the front leaves in the parts' extensions (the [`Caller`](crate::Caller), a
//! listen plan, a task round's mark, the stream's limits) a handler reads with [`extension`],
//! the one reader of that two-hop path; the front reads what the host adapter left with
//! [`in_request`].
//!
//! What a handler hands back up, after rmcp has answered and before the front sends the answer,
//! goes into the one [`RequestScope`] the front put there first: the cache hint the
//! `Cache-Control` header mirrors, a refusal's `Retry-After`, and (metrics on) the method and
//! name the envelope step read. Each fact is written once; the first write wins.

use std::sync::{Arc, OnceLock};

use http::request::Parts;
use rmcp::{RoleServer, service::RequestContext};

/// What the front put into the request `context` belongs to, as type `T`.
pub(crate) fn extension<T: Send + Sync + 'static>(
    context: &RequestContext<RoleServer>,
) -> Option<&T> {
    context
        .extensions
        .get::<Parts>()
        .and_then(|parts| in_request(&parts.extensions))
}

/// What a request's `extensions` hold as type `T`: for the front, what the host adapter
/// (`serve/`) put there (a Lambda invocation's ids, its stream's deadline).
pub(crate) fn in_request<T: Send + Sync + 'static>(extensions: &http::Extensions) -> Option<&T> {
    extensions.get::<T>()
}

/// The facts a request's handling leaves for the front: one per request, shared by clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestScope(Arc<Facts>);

#[derive(Debug, Default)]
struct Facts {
    /// Whether the metrics record wants the method and name.
    metered: bool,
    /// The result's cache hint: `(ttl in ms, public)`.
    cache_hint: OnceLock<(u64, bool)>,
    /// A caller's limit that waiting lifts: the refusal's `data.retryAfterSecs`.
    retry_after_secs: OnceLock<u64>,
    /// The method and the name (`Mcp-Name`) the envelope step read.
    method: OnceLock<(String, Option<String>)>,
}

impl RequestScope {
    /// A scope for one request; `metered` keeps the method and name for its metrics record.
    pub(crate) fn new(metered: bool) -> Self {
        Self(Arc::new(Facts {
            metered,
            ..Facts::default()
        }))
    }

    /// The scope of the request being handled, if the front put one there.
    pub(crate) fn of(context: &RequestContext<RoleServer>) -> Option<&Self> {
        extension(context)
    }

    /// Records the hint of the result just made.
    pub(crate) fn set_cache_hint(&self, ttl_ms: u64, public: bool) {
        let _ = self.0.cache_hint.set((ttl_ms, public));
    }

    /// The recorded hint: `(ttl in ms, public)`.
    pub(crate) fn cache_hint(&self) -> Option<(u64, bool)> {
        self.0.cache_hint.get().copied()
    }

    /// Records a refusal's wait, for a 429 with `Retry-After`.
    pub(crate) fn set_retry_after(&self, secs: u64) {
        let _ = self.0.retry_after_secs.set(secs);
    }

    /// The recorded wait, in seconds.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.0.retry_after_secs.get().copied()
    }

    /// Records the method and name, when a metrics record wants them.
    pub(crate) fn set_method(&self, method: &str, name: Option<&str>) {
        if self.0.metered {
            let _ = self
                .0
                .method
                .set((method.to_owned(), name.map(str::to_owned)));
        }
    }

    /// The recorded method and name.
    pub(crate) fn method(&self) -> Option<(&str, Option<&str>)> {
        self.0
            .method
            .get()
            .map(|(method, name)| (method.as_str(), name.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_fact_recorded_wins_and_clones_share_it() {
        let scope = RequestScope::new(true);
        let front = scope.clone();
        assert_eq!(front.cache_hint(), None);
        scope.set_cache_hint(1_000, true);
        scope.set_cache_hint(2_000, false);
        assert_eq!(front.cache_hint(), Some((1_000, true)));
        scope.set_retry_after(7);
        assert_eq!(front.retry_after(), Some(7));
        scope.set_method("tools/call", Some("echo"));
        assert_eq!(front.method(), Some(("tools/call", Some("echo"))));
    }

    #[test]
    fn an_unmetered_scope_keeps_no_method() {
        let scope = RequestScope::new(false);
        scope.set_method("tools/list", None);
        assert_eq!(scope.method(), None);
    }
}
