//! Before the acknowledgment: what a listener asked for, what it may watch, and the baseline
//! every later poll is compared with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::SubscriptionFilter;

use super::{
    ChangeFeed, FeedError, ListKind, ListenSettings, MAX_RESOURCE_SUBSCRIPTIONS, MAX_URI_BYTES,
    Mark, Observed, Watch,
};
use crate::{auth::Principal, shutdown::Shutdown};

/// The handler's answer to "may this caller watch this URI, and through which item?".
///
/// `None` drops the URI from the accepted filter, exactly like a URI that names nothing, so a
/// caller cannot tell "not yours" from "not there". A closure works:
///
/// ```
/// use mcp_lambda::listen::{ResourceWatch, Watch};
/// use mcp_lambda::Principal;
///
/// // Public files anyone may watch; everything else is dropped.
/// let public = |uri: &str, _caller: Option<&Principal>| {
///     uri.starts_with("file:///public/").then(|| Watch::Resource(uri.to_owned()))
/// };
/// assert!(public.watch("file:///public/a.txt", None).is_some());
/// assert!(public.watch("file:///etc/passwd", None).is_none());
/// ```
pub trait ResourceWatch: Send + Sync + 'static {
    /// The item that signals changes of `uri` for `caller`; `None` if the caller may not
    /// watch it. A [`Watch::Handle`] is also checked against the store before it is accepted
    /// (owner, expiry), in the same read as the baseline.
    fn watch(&self, uri: &str, caller: Option<&Principal>) -> Option<Watch>;
}

impl<F> ResourceWatch for F
where
    F: Fn(&str, Option<&Principal>) -> Option<Watch> + Send + Sync + 'static,
{
    fn watch(&self, uri: &str, caller: Option<&Principal>) -> Option<Watch> {
        self(uri, caller)
    }
}

/// Why a listen is refused before it is acknowledged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenRefusal {
    /// The filter asks for nothing this server knows (-32602).
    #[error(
        "the filter asks for nothing: set toolsListChanged, promptsListChanged, resourcesListChanged or resourceSubscriptions"
    )]
    NothingRequested,
    /// More `resourceSubscriptions` than [`MAX_RESOURCE_SUBSCRIPTIONS`] (-32602).
    #[error("resourceSubscriptions names {count} URIs; at most {max} per listen")]
    TooManyResources {
        /// How many the request named.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// The feed could not be read for the baseline (503; try again).
    #[error("{0}")]
    Unavailable(FeedError),
}

/// One watched item and the URI it answers for.
#[derive(Debug, Clone)]
pub(crate) struct Watched {
    pub(crate) watch: Watch,
    /// The URI to name in `notifications/resources/updated`; `None` for a list.
    pub(crate) uri: Option<String>,
}

/// What an accepted listen watches, handed from the front to the stream.
#[derive(Debug, Clone)]
pub(crate) struct ListenPlan {
    pub(crate) watched: Arc<[Watched]>,
    pub(crate) baseline: Vec<Observed>,
}

/// Start-up state shared by the front (planning) and the streams (polling).
pub(crate) struct Listener {
    pub(crate) feed: Arc<dyn ChangeFeed>,
    resources: Option<Arc<dyn ResourceWatch>>,
    pub(crate) settings: ListenSettings,
    pub(crate) shutdown: Shutdown,
    /// This instance's fingerprint of each list, once known.
    fingerprints: Mutex<HashMap<ListKind, String>>,
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
        settings: ListenSettings,
        shutdown: Shutdown,
    ) -> Self {
        Self {
            feed,
            resources,
            settings,
            shutdown,
            fingerprints: Mutex::new(HashMap::new()),
        }
    }

    /// Remembers this instance's fingerprint of `list`; returns whether it is new.
    pub(crate) fn set_fingerprint(&self, list: ListKind, fingerprint: &str) -> bool {
        let mut known = self.fingerprints.lock().expect("fingerprint lock");
        if known.get(&list).map(String::as_str) == Some(fingerprint) {
            return false;
        }
        known.insert(list, fingerprint.to_owned());
        true
    }

    /// Whether this instance's fingerprint of `list` is known.
    pub(crate) fn knows_fingerprint(&self, list: ListKind) -> bool {
        self.fingerprints
            .lock()
            .expect("fingerprint lock")
            .contains_key(&list)
    }

    fn fingerprint(&self, list: ListKind) -> Option<String> {
        self.fingerprints
            .lock()
            .expect("fingerprint lock")
            .get(&list)
            .cloned()
    }

    /// Decides what `requested` may watch for `caller` and reads the baseline (one feed
    /// request). Returns the filter to acknowledge and the plan for the stream.
    pub(crate) async fn plan(
        &self,
        requested: &SubscriptionFilter,
        caller: Option<&Principal>,
    ) -> Result<(SubscriptionFilter, ListenPlan), ListenRefusal> {
        let lists = [
            (ListKind::Tools, requested.tools_list_changed == Some(true)),
            (
                ListKind::Prompts,
                requested.prompts_list_changed == Some(true),
            ),
            (
                ListKind::Resources,
                requested.resources_list_changed == Some(true),
            ),
        ];
        let uris = requested.resource_subscriptions.as_deref().unwrap_or(&[]);
        if uris.len() > MAX_RESOURCE_SUBSCRIPTIONS {
            return Err(ListenRefusal::TooManyResources {
                count: uris.len(),
                max: MAX_RESOURCE_SUBSCRIPTIONS,
            });
        }
        if uris.is_empty() && !lists.iter().any(|(_, on)| *on) {
            return Err(ListenRefusal::NothingRequested);
        }
        let mut watched: Vec<Watched> = lists
            .iter()
            .filter(|(_, on)| *on)
            .map(|(list, _)| Watched {
                watch: Watch::List(*list),
                uri: None,
            })
            .collect();
        for uri in uris {
            if uri.is_empty() || uri.len() > MAX_URI_BYTES {
                continue;
            }
            let Some(watch) = self.resources.as_ref().and_then(|r| r.watch(uri, caller)) else {
                continue;
            };
            // One item per key: a backend read refuses duplicates.
            if watched.iter().any(|w| w.watch == watch) {
                continue;
            }
            watched.push(Watched {
                watch,
                uri: Some(uri.clone()),
            });
        }
        let baseline = if watched.is_empty() {
            Vec::new()
        } else {
            let watches: Vec<Watch> = watched.iter().map(|w| w.watch.clone()).collect();
            self.feed
                .read(&watches)
                .await
                .map_err(ListenRefusal::Unavailable)?
        };
        let mut kept = Vec::with_capacity(watched.len());
        let mut kept_baseline = Vec::with_capacity(watched.len());
        for (entry, seen) in watched.into_iter().zip(baseline) {
            let seen = match (&entry.watch, seen) {
                // Missing, expired, foreign or unread: dropped, all alike.
                (Watch::Handle { .. }, Observed::Absent | Observed::Unknown) => continue,
                // A listener compares the stored fingerprint with its own instance's.
                (Watch::List(list), seen) => match self.fingerprint(*list) {
                    Some(own) => {
                        let version = match &seen {
                            Observed::Present(mark) => mark.version,
                            _ => 0,
                        };
                        Observed::Present(Mark {
                            version,
                            fingerprint: Some(own),
                        })
                    }
                    None => seen,
                },
                (_, seen) => seen,
            };
            kept.push(entry);
            kept_baseline.push(seen);
        }
        let mut accepted = SubscriptionFilter::new();
        for (list, on) in lists {
            let flag = on.then_some(true);
            match list {
                ListKind::Tools => accepted.tools_list_changed = flag,
                ListKind::Prompts => accepted.prompts_list_changed = flag,
                ListKind::Resources => accepted.resources_list_changed = flag,
            }
        }
        if requested.resource_subscriptions.is_some() {
            accepted.resource_subscriptions =
                Some(kept.iter().filter_map(|w| w.uri.clone()).collect());
        }
        Ok((
            accepted,
            ListenPlan {
                watched: kept.into(),
                baseline: kept_baseline,
            },
        ))
    }
}
