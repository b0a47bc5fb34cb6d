//! Before the acknowledgment: what a listener asked for, what it may watch, and the baseline
//! every later poll is compared with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rmcp::model::{ServerCapabilities, SubscriptionFilter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::poller::Poller;
use super::{
    Change, ChangeFeed, FeedError, ListKind, ListenSettings, MAX_RESOURCE_SUBSCRIPTIONS,
    MAX_TASK_SUBSCRIPTIONS, MAX_URI_BYTES, Observed, Watch,
};
use crate::handles::HandleId;
use crate::{auth::Caller, shutdown::Shutdown};

/// The handler's answer to "may this caller watch this URI, and through which item?".
///
/// `None` drops the URI from the accepted filter, exactly like a URI that names nothing, so a
/// caller cannot tell "not yours" from "not there". A closure works:
///
/// ```
/// use mcp_lambda::listen::{ResourceWatch, Watch};
/// use mcp_lambda::Caller;
///
/// // Public files anyone may watch; everything else is dropped.
/// let public = |uri: &str, _caller: &Caller| {
///     uri.starts_with("file:///public/").then(|| Watch::Resource(uri.to_owned()))
/// };
/// let anyone = Caller::anonymous();
/// assert!(public.watch("file:///public/a.txt", &anyone).is_some());
/// assert!(public.watch("file:///etc/passwd", &anyone).is_none());
/// ```
///
/// Resources served from handles ([`HandleResource`](crate::handler::HandleResource)) need no
/// rule: the app watches them for their owner.
pub trait ResourceWatch: Send + Sync + 'static {
    /// The item that signals changes of `uri` for `caller`; `None` if the caller may not
    /// watch it. A [`Watch::Handle`] is also checked against the store before it is accepted
    /// (owner, expiry), in the same read as the baseline.
    fn watch(&self, uri: &str, caller: &Caller) -> Option<Watch>;
}

impl<F> ResourceWatch for F
where
    F: Fn(&str, &Caller) -> Option<Watch> + Send + Sync + 'static,
{
    fn watch(&self, uri: &str, caller: &Caller) -> Option<Watch> {
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
    /// Nothing the filter asks for can be watched (-32602). The text says why, per part of the
    /// filter: which capability the server does not announce, that no `watch_resources` rule
    /// or handle resource is configured, or that the URIs name nothing this caller may watch
    /// (one wording for unknown, expired and someone else's, so it tells nothing the
    /// acknowledgment would not).
    #[error("nothing in the filter can be watched on this server: {0}")]
    NothingToWatch(String),
    /// More `resourceSubscriptions` than [`MAX_RESOURCE_SUBSCRIPTIONS`] (-32602).
    #[error("resourceSubscriptions names {count} URIs; at most {max} per listen")]
    TooManyResources {
        /// How many the request named.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// More `taskIds` than [`MAX_TASK_SUBSCRIPTIONS`] (-32602).
    #[error("taskIds names {count} tasks; at most {max} per listen")]
    TooManyTasks {
        /// How many the request named.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// `taskIds` from a client that did not declare the tasks extension on the request
    /// (-32021, as the extension requires).
    #[error(
        "taskIds needs the io.modelcontextprotocol/tasks extension: declare it in the request's _meta client capabilities"
    )]
    TasksNotDeclared,
    /// This process already holds `MCP_LISTEN_MAX_STREAMS` open streams (503; try again).
    #[error("too many open listen streams; try again shortly")]
    TooManyStreams,
    /// The caller already holds `MCP_LISTEN_MAX_STREAMS_PER_CALLER` open streams on this
    /// process (429; one of them must end first).
    #[error(
        "you already hold {max} open listen streams on this server, the most one caller may: \
         close one (or let one end) before opening another, or watch more in one stream"
    )]
    TooManyStreamsForCaller {
        /// The limit.
        max: usize,
    },
    /// The feed could not be read for the baseline, or left some of it unread (503; try
    /// again).
    #[error("{0}")]
    Unavailable(FeedError),
}

/// The `taskIds` a listen asks for (the tasks extension; rmcp's filter type has no such
/// field) and whether the client declared the extension on the request.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskIds {
    pub(crate) ids: Option<Vec<String>>,
    pub(crate) declared: bool,
}

/// What a listen was granted: the filter to acknowledge, the task ids to add to it.
#[derive(Debug, Clone)]
pub(crate) struct Accepted {
    pub(crate) filter: SubscriptionFilter,
    /// `None` when the listen did not ask for tasks (the acknowledgment then names none).
    pub(crate) task_ids: Option<Vec<String>>,
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
    /// What the feed held when the listen was accepted.
    pub(crate) baseline: Vec<Observed>,
    /// When the baseline's read was sent: a shared poll sent before it is older, and ignored.
    pub(crate) read_at: Instant,
    /// The stream's place among `MCP_LISTEN_MAX_STREAMS`, given back when it ends.
    pub(crate) _permit: Arc<OwnedSemaphorePermit>,
    /// Its place among its caller's `MCP_LISTEN_MAX_STREAMS_PER_CALLER`, likewise.
    pub(crate) _caller_permit: Option<Arc<CallerPermit>>,
}

/// Open streams per authenticated caller (by owner key), on this process.
type PerCaller = Arc<Mutex<HashMap<String, usize>>>;

/// One open stream of a caller; given back when dropped.
#[derive(Debug)]
pub(crate) struct CallerPermit {
    open: PerCaller,
    owner: String,
}

impl CallerPermit {
    /// A place for `owner`, unless it already holds `max`.
    fn take(open: &PerCaller, owner: &str, max: usize) -> Option<Self> {
        let mut counts = open.lock().expect("per-caller lock");
        let held = counts.entry(owner.to_owned()).or_insert(0);
        if *held >= max {
            return None;
        }
        *held += 1;
        Some(Self {
            open: open.clone(),
            owner: owner.to_owned(),
        })
    }
}

impl Drop for CallerPermit {
    fn drop(&mut self) {
        let mut counts = self.open.lock().expect("per-caller lock");
        if let Some(held) = counts.get_mut(&self.owner) {
            *held -= 1;
            if *held == 0 {
                counts.remove(&self.owner);
            }
        }
    }
}

/// Which changes the server announces (its capabilities); nothing else is watched.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Announced {
    lists: [bool; 3],
    resources: bool,
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

    fn list(&self, list: ListKind) -> bool {
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
    resources: Option<Arc<dyn ResourceWatch>>,
    announced: Announced,
    pub(crate) settings: ListenSettings,
    pub(crate) shutdown: Shutdown,
    streams: Arc<Semaphore>,
    per_caller: PerCaller,
    /// The server runs durable tasks: `taskIds` are served (otherwise ignored, as any field
    /// the server does not know).
    serves_tasks: bool,
    /// This instance's fingerprint of each list, once published.
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
            streams: Arc::new(Semaphore::new(settings.max_streams)),
            per_caller: PerCaller::default(),
            settings,
            shutdown,
            fingerprints: Mutex::new(HashMap::new()),
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
        if self.knows_fingerprint(list) {
            return;
        }
        let Ok(bytes) = serde_json::to_vec(items) else {
            return;
        };
        let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
        let fingerprint: String = digest.as_ref()[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if self.set_fingerprint(list, &fingerprint)
            && let Err(error) = self
                .feed
                .publish(&Change::Fingerprint(list, fingerprint))
                .await
        {
            // Tried again at the next list request: until it is published, listeners here
            // compare with nothing rather than with a fingerprint nobody stored.
            self.forget_fingerprint(list);
            tracing::warn!(%error, list = list.name(), "could not publish the list fingerprint");
        }
    }

    /// Remembers this instance's fingerprint of `list`; returns whether it is new.
    fn set_fingerprint(&self, list: ListKind, fingerprint: &str) -> bool {
        let mut known = self.fingerprints.lock().expect("fingerprint lock");
        if known.get(&list).map(String::as_str) == Some(fingerprint) {
            return false;
        }
        known.insert(list, fingerprint.to_owned());
        true
    }

    /// Forgets a fingerprint whose publication failed, so the next list request tries again.
    fn forget_fingerprint(&self, list: ListKind) {
        self.fingerprints
            .lock()
            .expect("fingerprint lock")
            .remove(&list);
    }

    /// Whether this instance's fingerprint of `list` is known.
    fn knows_fingerprint(&self, list: ListKind) -> bool {
        self.fingerprints
            .lock()
            .expect("fingerprint lock")
            .contains_key(&list)
    }

    /// This instance's fingerprint of `list`, once published.
    pub(crate) fn fingerprint(&self, list: ListKind) -> Option<String> {
        self.fingerprints
            .lock()
            .expect("fingerprint lock")
            .get(&list)
            .cloned()
    }

    /// Why a filter left nothing to watch, part by part, in words that name what to fix.
    fn why_nothing(&self, asked: &[(ListKind, bool)], uris: usize, tasks: usize) -> String {
        let mut why = Vec::new();
        for (list, on) in asked {
            if *on && !self.announced.list(*list) {
                why.push(format!(
                    "{0}ListChanged: the server does not announce {0}.listChanged (it has no {0})",
                    list.name()
                ));
            }
        }
        if uris > 0 {
            why.push(if !self.announced.resources {
                "resourceSubscriptions: the server does not announce resources.subscribe (serve \
                 a HandleResource with App::resource, or give App::watch_resources a rule)"
                    .to_owned()
            } else if self.resources.is_none() {
                "resourceSubscriptions: the app has no watch_resources rule and no handle \
                 resource, so no URI can be watched"
                    .to_owned()
            } else {
                format!(
                    "resourceSubscriptions: none of the {uris} URIs names a resource you may \
                     watch (unknown, expired, or not yours)"
                )
            });
        }
        if tasks > 0 {
            why.push(format!(
                "taskIds: none of the {tasks} ids names a live task of yours"
            ));
        }
        why.join("; ")
    }

    /// Decides what `requested` (and `tasks`) may watch for `caller` and reads the baseline
    /// (one feed request). Returns what to acknowledge and the plan for the stream.
    pub(crate) async fn plan(
        &self,
        requested: &SubscriptionFilter,
        tasks: &TaskIds,
        caller: &Caller,
    ) -> Result<(Accepted, ListenPlan), ListenRefusal> {
        let task_ids = match &tasks.ids {
            Some(_) if !self.serves_tasks => None,
            Some(_) if !tasks.declared => return Err(ListenRefusal::TasksNotDeclared),
            Some(ids) if ids.len() > MAX_TASK_SUBSCRIPTIONS => {
                return Err(ListenRefusal::TooManyTasks {
                    count: ids.len(),
                    max: MAX_TASK_SUBSCRIPTIONS,
                });
            }
            Some(ids) => Some(ids.as_slice()),
            None => None,
        };
        let asked = [
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
        if uris.is_empty()
            && task_ids.is_none_or(<[String]>::is_empty)
            && !asked.iter().any(|(_, on)| *on)
        {
            return Err(ListenRefusal::NothingRequested);
        }
        // A caller's own limit first: a greedy caller is told so, never that the server is full.
        let caller_permit = if caller.is_anonymous() {
            None
        } else {
            let max = self.settings.max_streams_per_caller;
            Some(Arc::new(
                CallerPermit::take(&self.per_caller, caller.owner_key(), max)
                    .ok_or(ListenRefusal::TooManyStreamsForCaller { max })?,
            ))
        };
        let permit = self
            .streams
            .clone()
            .try_acquire_owned()
            .map_err(|_| ListenRefusal::TooManyStreams)?;
        let lists: Vec<ListKind> = asked
            .iter()
            .filter(|(list, on)| *on && self.announced.list(*list))
            .map(|(list, _)| *list)
            .collect();
        let mut watched: Vec<Watched> = lists
            .iter()
            .map(|list| Watched {
                watch: Watch::List(*list),
                uri: None,
            })
            .collect();
        if self.announced.resources {
            for uri in uris {
                if uri.is_empty() || uri.len() > MAX_URI_BYTES {
                    continue;
                }
                let watch = match self.resources.as_ref().and_then(|r| r.watch(uri, caller)) {
                    // A URI is a resource, never a list.
                    None | Some(Watch::List(_)) => continue,
                    Some(watch) => watch,
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
        }
        let owner = caller.owner_key().to_owned();
        for id in task_ids.unwrap_or_default() {
            // A malformed id names no task: dropped like a foreign one.
            let Ok(id) = id.parse::<HandleId>() else {
                continue;
            };
            let watch = Watch::Task {
                owner: owner.clone(),
                id,
            };
            if !watched.iter().any(|w| w.watch == watch) {
                watched.push(Watched { watch, uri: None });
            }
        }
        let read_at = Instant::now();
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
            match (&entry.watch, &seen) {
                // Whether it is the caller's cannot be told yet: refuse rather than drop it.
                (Watch::Handle { .. } | Watch::Task { .. }, Observed::Unknown) => {
                    return Err(ListenRefusal::Unavailable(FeedError::Unavailable(
                        "the change feed left part of the read undone (throttled)".into(),
                    )));
                }
                // Missing, expired, deleted or someone else's: dropped, all alike.
                (Watch::Handle { .. } | Watch::Task { .. }, Observed::Absent) => continue,
                _ => {}
            }
            kept.push(entry);
            kept_baseline.push(seen);
        }
        if kept.is_empty() {
            return Err(ListenRefusal::NothingToWatch(self.why_nothing(
                &asked,
                uris.len(),
                task_ids.map_or(0, <[String]>::len),
            )));
        }
        let mut accepted = SubscriptionFilter::new();
        for list in &lists {
            match list {
                ListKind::Tools => accepted.tools_list_changed = Some(true),
                ListKind::Prompts => accepted.prompts_list_changed = Some(true),
                ListKind::Resources => accepted.resources_list_changed = Some(true),
            }
        }
        if requested.resource_subscriptions.is_some() && self.announced.resources {
            accepted.resource_subscriptions =
                Some(kept.iter().filter_map(|w| w.uri.clone()).collect());
        }
        let accepted = Accepted {
            filter: accepted,
            task_ids: task_ids.map(|_| {
                kept.iter()
                    .filter_map(|w| match &w.watch {
                        Watch::Task { id, .. } => Some(id.to_string()),
                        _ => None,
                    })
                    .collect()
            }),
        };
        Ok((
            accepted,
            ListenPlan {
                watched: kept.into(),
                baseline: kept_baseline,
                read_at,
                _permit: Arc::new(permit),
                _caller_permit: caller_permit,
            },
        ))
    }
}
