//! The change feed: what a handler publishes and what a listener reads.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::watch;

use crate::handles::HandleId;
use crate::tasks::{TaskRecord, TaskStore};

/// One of the lists a server may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
}

impl ListKind {
    /// Every list, in a fixed order.
    pub const ALL: [ListKind; 3] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources];

    /// A short lowercase name (`tools`), used in keys and logs.
    pub fn name(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
        }
    }
}

/// A change a handler publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// A list changed: its listeners get `notifications/<list>/list_changed`.
    List(ListKind),
    /// A resource changed: its listeners get `notifications/resources/updated`.
    Resource(String),
    /// A handle changed. Listeners of a resource backed by it are told through the handle's
    /// own last write; a shared feed writes nothing for this.
    Handle(HandleId),
    /// This instance's fingerprint of a list, published at start-up: listeners whose own
    /// fingerprint differs learn the list changed (a deployment changed it).
    Fingerprint(ListKind, String),
}

/// What a listener watches: one item of the feed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Watch {
    /// One of the lists.
    List(ListKind),
    /// A resource whose changes the handler publishes with [`Changes::resource_updated`].
    Resource(String),
    /// A resource backed by a handle: present while the handle is live and `owner`'s.
    Handle {
        /// Who must own the handle (the listener's owner key).
        owner: String,
        /// The handle.
        id: HandleId,
    },
    /// A durable task (`notifications/tasks`): present while it is live and `owner`'s. Its
    /// stores write it; nothing is published.
    Task {
        /// Who must own the task (the listener's owner key).
        owner: String,
        /// The task.
        id: HandleId,
    },
}

/// The state of a watched item at one read: it changed when the mark changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// Bumped by every publish (0 for a handle).
    pub version: u64,
    /// A list's latest published fingerprint; a handle's last write (its `write_id` on
    /// DynamoDB, a digest of its data in memory), so that a touch, which only slides the
    /// expiry, is not a change.
    pub tag: Option<String>,
}

/// What one read saw of one watched item.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// The item exists with this mark.
    Present(Mark),
    /// A watched task as stored ([`Watch::Task`]): what a client is shown of it is derived
    /// from the record at each read, as `tasks/get` derives it.
    Task(Box<TaskRecord>),
    /// No such item: never published, or (a handle) missing, expired, deleted or not the
    /// listener's.
    Absent,
    /// Not read this time (the backend deferred it); compare again next poll.
    Unknown,
}

/// Why the feed failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FeedError {
    /// The backend could not be reached or refused; try again shortly.
    #[error("change feed unavailable: {0}; try again shortly")]
    Unavailable(String),
    /// The request itself is wrong (too many items, a key too long).
    #[error("invalid change feed request: {0}")]
    Invalid(String),
}

/// Where changes are published and read; see the [module docs](super).
///
/// Dyn-compatible: use it as `Arc<dyn ChangeFeed>`.
pub trait ChangeFeed: Send + Sync + fmt::Debug + 'static {
    /// Records `change` for every listener, on every instance sharing the feed.
    fn publish<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<(), FeedError>>;

    /// Reads every watched item (at most [`MAX_KEYS_PER_READ`](super::MAX_KEYS_PER_READ)) in
    /// one backend request; one answer per watch, in order.
    fn read<'a>(&'a self, watches: &'a [Watch]) -> BoxFuture<'a, Result<Vec<Observed>, FeedError>>;

    /// This feed as it reads [`Watch::Task`] from `store`, for a feed that cannot read task
    /// items from its own backend (the memory feed: a view sharing everything else); `None`
    /// for a feed that reads them where the task store writes them (DynamoDB: the same table,
    /// in the same request as every other watch). Asked once at start-up when a server runs
    /// tasks; its listeners read through the view.
    #[doc(hidden)]
    fn reading_tasks_from(&self, store: Arc<dyn TaskStore>) -> Option<Arc<dyn ChangeFeed>> {
        let _ = store;
        None
    }

    /// A signal that something may have changed, for feeds that know (in memory); `None` for
    /// shared feeds, which listeners poll.
    fn wake(&self) -> Option<watch::Receiver<u64>> {
        None
    }
}

/// The handler's side of the feed: cheap to clone, one per server.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp_lambda::listen::FeedError> {
/// use mcp_lambda::listen::{Changes, MemoryFeed};
/// let changes = Changes::new(MemoryFeed::new(None));
/// changes.tools_list_changed().await?;
/// changes.resource_updated("file:///notes.txt").await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Changes {
    feed: Arc<dyn ChangeFeed>,
}

impl Changes {
    /// Publishes to `feed`.
    pub fn new(feed: impl ChangeFeed) -> Self {
        Self {
            feed: Arc::new(feed),
        }
    }

    /// Publishes to a shared `feed`.
    pub fn from_arc(feed: Arc<dyn ChangeFeed>) -> Self {
        Self { feed }
    }

    /// The feed behind it.
    pub fn feed(&self) -> &Arc<dyn ChangeFeed> {
        &self.feed
    }

    /// Publishes one change.
    pub async fn publish(&self, change: Change) -> Result<(), FeedError> {
        self.feed.publish(&change).await
    }

    /// `notifications/tools/list_changed` for every listener that asked.
    pub async fn tools_list_changed(&self) -> Result<(), FeedError> {
        self.publish(Change::List(ListKind::Tools)).await
    }

    /// `notifications/prompts/list_changed` for every listener that asked.
    pub async fn prompts_list_changed(&self) -> Result<(), FeedError> {
        self.publish(Change::List(ListKind::Prompts)).await
    }

    /// `notifications/resources/list_changed` for every listener that asked.
    pub async fn resources_list_changed(&self) -> Result<(), FeedError> {
        self.publish(Change::List(ListKind::Resources)).await
    }

    /// `notifications/resources/updated` for `uri`, to its listeners (URIs the handler's
    /// [`ResourceWatch`](super::ResourceWatch) resolves to [`Watch::Resource`]).
    pub async fn resource_updated(&self, uri: impl Into<String>) -> Result<(), FeedError> {
        self.publish(Change::Resource(uri.into())).await
    }

    /// A handle changed: listeners of the resource backed by it get
    /// `notifications/resources/updated`. Free on a shared feed (the handle's own write is the
    /// signal); call it after every successful handle write so the in-memory feed hears it too.
    pub async fn handle_updated(&self, id: HandleId) -> Result<(), FeedError> {
        self.publish(Change::Handle(id)).await
    }
}

/// Typed handles ([`Handles`](crate::handles::Handles)) tell their listeners through it.
impl crate::handles::HandleWrites for Changes {
    fn handle_written(&self, id: HandleId) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(error) = self.handle_updated(id).await {
                // The write itself landed; a listener still sees it at its next poll.
                tracing::warn!(%error, "could not tell listeners of a handle change");
            }
        })
    }
}
