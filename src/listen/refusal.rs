//! Why a listen is refused before it is acknowledged, in words that name what to fix.

use super::{FeedError, ListKind, Listener};

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
    /// More `resourceSubscriptions` than [`MAX_RESOURCE_SUBSCRIPTIONS`](super::MAX_RESOURCE_SUBSCRIPTIONS) (-32602).
    #[error("resourceSubscriptions names {count} URIs; at most {max} per listen")]
    TooManyResources {
        /// How many the request named.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// More `taskIds` than [`MAX_TASK_SUBSCRIPTIONS`](super::MAX_TASK_SUBSCRIPTIONS) (-32602).
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

impl Listener {
    /// Why a filter left nothing to watch, part by part, in words that name what to fix.
    pub(super) fn why_nothing(
        &self,
        asked: &[(ListKind, bool)],
        uris: usize,
        tasks: usize,
    ) -> String {
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
}
