//! Before the acknowledgment: what a listener asked for, what it may watch, and the baseline
//! every later poll is compared with.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::SubscriptionFilter;

use super::permit::Permit;
use super::{
    FeedError, ListKind, ListenRefusal, Listener, MAX_RESOURCE_SUBSCRIPTIONS,
    MAX_TASK_SUBSCRIPTIONS, MAX_URI_BYTES, Observed, Watch,
};
use crate::auth::Caller;
use crate::handles::HandleId;

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
    /// The stream's places among `MCP_LISTEN_MAX_STREAMS` and its caller's
    /// `MCP_LISTEN_MAX_STREAMS_PER_CALLER`, given back when it ends.
    pub(crate) _permit: Arc<Permit>,
}

impl Listener {
    /// Decides what `requested` (and `tasks`) may watch for `caller` and reads the baseline
    /// (one feed request). Returns what to acknowledge and the plan for the stream.
    pub(crate) async fn plan(
        &self,
        requested: &SubscriptionFilter,
        tasks: &TaskIds,
        caller: &Caller,
    ) -> Result<(Accepted, ListenPlan), ListenRefusal> {
        let task_ids = self.task_ids(tasks)?;
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
        let permit = self.permits.take(caller)?;
        let lists: Vec<ListKind> = asked
            .iter()
            .filter(|(list, on)| *on && self.announced.list(*list))
            .map(|(list, _)| *list)
            .collect();
        let watched = self.watched(&lists, uris, task_ids.unwrap_or_default(), caller);
        let read_at = Instant::now();
        let (kept, baseline) = self.present(watched).await?;
        if kept.is_empty() {
            let tasks = task_ids.map_or(0, <[String]>::len);
            return Err(ListenRefusal::NothingToWatch(self.why_nothing(
                &asked,
                uris.len(),
                tasks,
            )));
        }
        let accepted = self.accepted(requested, &lists, &kept, task_ids.is_some());
        let plan = ListenPlan {
            watched: kept.into(),
            baseline,
            read_at,
            _permit: Arc::new(permit),
        };
        Ok((accepted, plan))
    }

    /// The `taskIds` asked for, when this server serves tasks and the client declared them.
    fn task_ids<'a>(&self, tasks: &'a TaskIds) -> Result<Option<&'a [String]>, ListenRefusal> {
        match &tasks.ids {
            Some(_) if !self.serves_tasks => Ok(None),
            Some(_) if !tasks.declared => Err(ListenRefusal::TasksNotDeclared),
            Some(ids) if ids.len() > MAX_TASK_SUBSCRIPTIONS => Err(ListenRefusal::TooManyTasks {
                count: ids.len(),
                max: MAX_TASK_SUBSCRIPTIONS,
            }),
            Some(ids) => Ok(Some(ids.as_slice())),
            None => Ok(None),
        }
    }

    /// The items to read: the announced lists asked for, each URI through the handler's rule,
    /// each task id as the caller's; one item per key (a backend read refuses duplicates).
    fn watched(
        &self,
        lists: &[ListKind],
        uris: &[String],
        task_ids: &[String],
        caller: &Caller,
    ) -> Vec<Watched> {
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
                if !watched.iter().any(|w| w.watch == watch) {
                    watched.push(Watched {
                        watch,
                        uri: Some(uri.clone()),
                    });
                }
            }
        }
        let owner = caller.owner_key();
        // A malformed id names no task: dropped like a foreign one.
        for id in task_ids.iter().filter_map(|id| id.parse::<HandleId>().ok()) {
            let watch = Watch::Task {
                owner: owner.to_owned(),
                id,
            };
            if !watched.iter().any(|w| w.watch == watch) {
                watched.push(Watched { watch, uri: None });
            }
        }
        watched
    }

    /// The baseline, in one feed read, and the items that are there: a handle or task that
    /// is missing, expired, deleted or someone else's is dropped, all alike.
    async fn present(
        &self,
        watched: Vec<Watched>,
    ) -> Result<(Vec<Watched>, Vec<Observed>), ListenRefusal> {
        if watched.is_empty() {
            return Ok((watched, Vec::new()));
        }
        let watches: Vec<Watch> = watched.iter().map(|w| w.watch.clone()).collect();
        let baseline = self
            .feed
            .read(&watches)
            .await
            .map_err(ListenRefusal::Unavailable)?;
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
                (Watch::Handle { .. } | Watch::Task { .. }, Observed::Absent) => continue,
                _ => {}
            }
            kept.push(entry);
            kept_baseline.push(seen);
        }
        Ok((kept, kept_baseline))
    }

    /// The filter to acknowledge: exactly what is watched (`taskIds` only if asked for).
    fn accepted(
        &self,
        requested: &SubscriptionFilter,
        lists: &[ListKind],
        kept: &[Watched],
        tasks_asked: bool,
    ) -> Accepted {
        let mut filter = SubscriptionFilter::new();
        for list in lists {
            match list {
                ListKind::Tools => filter.tools_list_changed = Some(true),
                ListKind::Prompts => filter.prompts_list_changed = Some(true),
                ListKind::Resources => filter.resources_list_changed = Some(true),
            }
        }
        if requested.resource_subscriptions.is_some() && self.announced.resources {
            filter.resource_subscriptions =
                Some(kept.iter().filter_map(|w| w.uri.clone()).collect());
        }
        let task_ids = tasks_asked.then(|| {
            kept.iter()
                .filter_map(|w| match &w.watch {
                    Watch::Task { id, .. } => Some(id.to_string()),
                    _ => None,
                })
                .collect()
        });
        Accepted { filter, task_ids }
    }
}
