//! [`HostedSettings`]: what every clone of [`Hosted`](super::Hosted) shares, built once at
//! start-up (cache hints, cursors, `serverInfo`, scope maps, listen, tasks, metrics, handle
//! resources, the portable schemas), and [`Announce`], the capabilities the library adds to
//! the handler's.

use std::sync::{Arc, Weak};

use rmcp::ErrorData;
use rmcp::model::{
    CacheScope as RmcpCacheScope, MetaObject, ServerCapabilities, ServerConfig, Tool,
};
use serde_json::Value;

use super::lists::ListSettings;
use super::{HandleResource, portable_schema};
use crate::request_state::cursor::CursorSigner;
use crate::tasks::TaskPolicies;
use crate::{
    auth::{AuthSettings, Principal},
    cache::{CacheHint, CacheHints, CacheScope},
    listen::{ListKind, Listener},
    metrics::{KnownNames, Metrics},
    rmcp_gaps,
    tasks::Engine,
};

/// Settings shared by every clone of [`Hosted`], built once at start-up.
#[derive(Debug)]
pub(crate) struct HostedSettings {
    pub(super) cache: CacheHints,
    pub(super) page_size: usize,
    pub(super) cursors: CursorSigner,
    /// `serverInfo`, serialized once.
    pub(super) server_info: Value,
    /// Scope maps, when auth is on: lists show only what the caller may call.
    pub(super) auth: Option<AuthSettings>,
    /// `subscriptions/listen` served by the library, when the server publishes changes.
    pub(super) listen: Option<Arc<Listener>>,
    /// Durable tasks, when the server runs some tools as tasks. Held weakly: the engine holds
    /// the runner, which holds the handler factory, which holds these settings; the front and
    /// the `Server` hold it strongly.
    tasks: Option<(Weak<Engine>, TaskPolicies)>,
    /// Per-request metrics, which count names on the lists as themselves.
    pub(super) metrics: Option<Arc<Metrics>>,
    /// Resource templates served from handles, by the library.
    pub(super) resources: Arc<[HandleResource]>,
    /// Whether the user's handler announces `resources` itself (then its lists and reads are
    /// asked first).
    pub(super) inner_resources: bool,
    /// What the library announces on top of the handler's capabilities.
    pub(super) announce: Announce,
    /// The tool schemas `tools/list` serves, made portable once each.
    pub(super) portable: portable_schema::PortableSchemas,
}

/// What the server announces on top of the handler's own capabilities, so a handler written
/// with `#[tool_handler]` alone needs no `get_info`: the tasks extension when tools run as
/// tasks; `resources` when handle resources are served; and, when the library serves listen,
/// every `listChanged` it delivers (tools and prompts: a deployment that changes them is
/// noticed through the list fingerprints) and `resources.subscribe` when resources can be
/// watched.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Announce {
    pub(crate) tasks: bool,
    pub(crate) handle_resources: bool,
    pub(crate) listen: bool,
    /// Handle resources, or a `watch_resources` rule.
    pub(crate) resources_watchable: bool,
}

impl Announce {
    pub(crate) fn apply(self, capabilities: &mut ServerCapabilities) {
        if self.tasks {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(crate::tasks::EXTENSION.to_owned(), Default::default());
        }
        if self.handle_resources && capabilities.resources.is_none() {
            capabilities.resources = Some(Default::default());
        }
        if !self.listen {
            return;
        }
        if let Some(tools) = &mut capabilities.tools {
            tools.list_changed = Some(true);
        }
        if let Some(prompts) = &mut capabilities.prompts {
            prompts.list_changed = Some(true);
        }
        if let Some(resources) = &mut capabilities.resources
            && self.resources_watchable
        {
            resources.subscribe = Some(true);
        }
    }
}

impl HostedSettings {
    /// `cursor_keys`: the request-state keys, signing key first (cursor keys are derived).
    pub(crate) fn new(
        cache: &CacheHints,
        lists: &ListSettings,
        cursor_keys: &[Vec<u8>],
        auth: Option<&AuthSettings>,
        info: &ServerConfig,
        listen: Option<Arc<Listener>>,
        tasks: Option<(Weak<Engine>, TaskPolicies)>,
    ) -> Self {
        Self {
            cache: cache.clone(),
            page_size: lists.page_size,
            cursors: CursorSigner::new(cursor_keys),
            server_info: serde_json::to_value(&info.server_info)
                .expect("Implementation always serializes"),
            auth: auth.cloned(),
            listen,
            tasks,
            metrics: None,
            inner_resources: info.capabilities.resources.is_some(),
            resources: Arc::from([]),
            announce: Announce::default(),
            portable: portable_schema::PortableSchemas::default(),
        }
    }

    /// Serves `resources` from handles and announces `announce` on top of the handler's
    /// capabilities.
    pub(crate) fn with_resources(
        mut self,
        resources: Vec<HandleResource>,
        announce: Announce,
    ) -> Self {
        self.resources = resources.into();
        self.announce = announce;
        self
    }

    /// The task engine and the tools' policies, `None` when tasks are off. An engine gone (it
    /// lives as long as the server: only while the server is dropped, at shutdown) is answered
    /// -32603, as a store out of reach is.
    pub(super) fn tasks(&self) -> Result<Option<(Arc<Engine>, &TaskPolicies)>, ErrorData> {
        let Some((engine, policies)) = &self.tasks else {
            return Ok(None);
        };
        match engine.upgrade() {
            Some(engine) => Ok(Some((engine, policies))),
            None => Err(ErrorData::internal_error(
                "the server is shutting down; try again shortly",
                None,
            )),
        }
    }

    /// The handle resource `uri` belongs to, if any.
    pub(super) fn handle_resource(&self, uri: &str) -> Option<&HandleResource> {
        self.resources.iter().find(|r| r.serves(uri))
    }

    /// Teaches `metrics` the names on the lists as the handler answers them.
    pub(crate) fn with_metrics(mut self, metrics: Option<Arc<Metrics>>) -> Self {
        self.metrics = metrics;
        self
    }

    /// Lets metrics learn the names on a list the handler answered (no-op with metrics off).
    pub(super) fn learn_names(&self, learn: impl FnOnce(&KnownNames)) {
        if let Some(metrics) = &self.metrics {
            learn(metrics.names());
        }
    }

    /// Publishes this instance's fingerprint of a full list once (`listen`'s part).
    pub(super) async fn fingerprint<T: serde::Serialize>(&self, list: ListKind, items: &[T]) {
        if let Some(listener) = &self.listen {
            listener.publish_fingerprint(list, items).await;
        }
    }

    pub(super) fn stamp(&self, meta: &mut Option<MetaObject>) {
        rmcp_gaps::stamp_server_info(meta, &self.server_info);
    }

    /// Cache hints for `method`; none for 2025-era requests, whose results
    /// have no such fields.
    pub(crate) fn hint(&self, method: &str, modern: bool) -> (Option<u64>, Option<RmcpCacheScope>) {
        if !modern {
            return (None, None);
        }
        let hint: CacheHint = self
            .cache
            .for_method(method)
            .expect("only called for cacheable methods");
        let scope = match hint.scope {
            CacheScope::Public => RmcpCacheScope::Public,
            CacheScope::Private => RmcpCacheScope::Private,
        };
        (Some(hint.ttl.as_millis() as u64), Some(scope))
    }

    /// Keeps the tools `principal` may call. Returns whether the list depends
    /// on the principal at all (then it is `private`).
    pub(super) fn filter_tools(
        &self,
        principal: Option<&Principal>,
        tools: &mut Vec<Tool>,
    ) -> bool {
        let Some(auth) = &self.auth else {
            return false;
        };
        let call_scopes = auth.required_scopes("tools/call", None);
        if auth.tool_scopes.is_empty() && call_scopes.is_empty() {
            return false;
        }
        let granted = |scopes: &[String]| {
            scopes
                .iter()
                .all(|s| principal.is_some_and(|p| p.has_scope(s)))
        };
        tools.retain(|tool| granted(&auth.required_scopes("tools/call", Some(&tool.name))));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_tasks(tasks: Option<(Weak<Engine>, TaskPolicies)>) -> HostedSettings {
        HostedSettings::new(
            &CacheHints::default(),
            &ListSettings { page_size: 10 },
            &[vec![7; 32]],
            None,
            &ServerConfig::new(ServerCapabilities::default()),
            None,
            tasks,
        )
    }

    /// The handler's side holds the engine weakly; one gone (the server being dropped) is
    /// answered -32603, never a panic, and tasks off stays off.
    #[test]
    fn an_engine_gone_is_an_answer_not_a_panic() {
        let never =
            TaskPolicies::new(|_: &str, _: &crate::auth::Caller| crate::tasks::TaskPolicy::Never);
        let gone = with_tasks(Some((Weak::new(), never)));
        let Err(error) = gone.tasks() else {
            panic!("an engine that is gone was handed out");
        };
        assert_eq!(error.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert!(matches!(with_tasks(None).tasks(), Ok(None)));
    }
}
