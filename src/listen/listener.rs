//! The listener: what the front (planning) and the streams (polling) share, built once at
//! start-up, and this instance's list fingerprints, published once.

use std::sync::Arc;

use rmcp::model::ServerCapabilities;

use super::fingerprint::Fingerprints;
use super::permit::StreamPermits;
use super::poller::Poller;
use super::{Change, ChangeFeed, ListKind, ListenSettings, ResourceWatch};
use crate::shutdown::Shutdown;

/// Which changes the server announces (its capabilities); nothing else is watched.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Announced {
    lists: [bool; 3],
    pub(super) resources: bool,
}

impl Announced {
    pub(crate) fn of(capabilities: &ServerCapabilities) -> Self {
        let tools = capabilities
            .tools
            .as_ref()
            .is_some_and(|t| t.list_changed == Some(true));
        let prompts = capabilities
            .prompts
            .as_ref()
            .is_some_and(|p| p.list_changed == Some(true));
        let (resources_list, subscribe) =
            capabilities.resources.as_ref().map_or((false, false), |r| {
                (r.list_changed == Some(true), r.subscribe == Some(true))
            });
        Self {
            lists: [tools, prompts, resources_list],
            resources: subscribe,
        }
    }

    pub(super) fn list(&self, list: ListKind) -> bool {
        match list {
            ListKind::Tools => self.lists[0],
            ListKind::Prompts => self.lists[1],
            ListKind::Resources => self.lists[2],
        }
    }
}

/// Start-up state shared by the front (planning) and the streams (polling).
pub(crate) struct Listener {
    pub(crate) feed: Arc<dyn ChangeFeed>,
    /// The one poll of the feed the open streams share.
    pub(crate) poller: Arc<Poller>,
    pub(super) resources: Option<Arc<dyn ResourceWatch>>,
    pub(super) announced: Announced,
    pub(crate) settings: ListenSettings,
    pub(crate) shutdown: Shutdown,
    pub(super) permits: StreamPermits,
    /// The server runs durable tasks: `taskIds` are served (otherwise ignored, as any field
    /// the server does not know).
    pub(super) serves_tasks: bool,
    /// This instance's fingerprint of each list, once published.
    fingerprints: Fingerprints,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("feed", &self.feed)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Listener {
    pub(crate) fn new(
        feed: Arc<dyn ChangeFeed>,
        resources: Option<Arc<dyn ResourceWatch>>,
        announced: Announced,
        settings: ListenSettings,
        shutdown: Shutdown,
        serves_tasks: bool,
    ) -> Self {
        Self {
            poller: Poller::new(feed.clone(), settings.poll),
            feed,
            resources,
            announced,
            serves_tasks,
            permits: StreamPermits::new(settings.max_streams, settings.max_streams_per_caller),
            settings,
            shutdown,
            fingerprints: Fingerprints::default(),
        }
    }

    /// Records this instance's fingerprint of a full list and, the first time it is seen (or
    /// when it changes), publishes it so listeners on other versions learn the list changed.
    pub(crate) async fn publish_fingerprint<T: serde::Serialize>(
        &self,
        list: ListKind,
        items: &[T],
    ) {
        // Once per process: a deployment changes the lists, a running instance does not
        // (a handler that changes them at run time publishes the change itself).
        if self.fingerprints.knows(list) {
            return;
        }
        let Some(fingerprint) = Fingerprints::of(items) else {
            return;
        };
        if self.fingerprints.set(list, &fingerprint)
            && let Err(error) = self
                .feed
                .publish(&Change::Fingerprint(list, fingerprint))
                .await
        {
            // Tried again at the next list request: until it is published, listeners here
            // compare with nothing rather than with a fingerprint nobody stored.
            self.fingerprints.forget(list);
            tracing::warn!(%error, list = list.name(), "could not publish the list fingerprint");
        }
    }

    /// This instance's fingerprint of `list`, once published.
    pub(crate) fn fingerprint(&self, list: ListKind) -> Option<String> {
        self.fingerprints.get(list)
    }
}
