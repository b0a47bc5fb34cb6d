//! `subscriptions/listen` across instances: a change feed any instance publishes to and every
//! listener hears.
//!
//! A handler publishes what changed through [`Changes`] (a tool, prompt or resource list, one
//! resource's content); the library serves `subscriptions/listen` for it. rmcp sends the
//! acknowledgment, enforces the accepted filter and writes the closing result; this module
//! decides what a listener may watch (`plan.rs`), then polls the feed
//! (`stream.rs`) and turns every change it sees into the notification the filter asked for.
//!
//! Two feeds behind [`ChangeFeed`], chosen like the handle store
//! ([`ListenSettings::open`]): in memory (one process; a publish wakes its listeners at once)
//! and DynamoDB (every instance sharing `MCP_HANDLES_TABLE`; no second table, no other
//! service). The open streams of a process share **one poll** of the feed every
//! `MCP_LISTEN_POLL_MS` (`poller.rs`): it reads the union of what they watch, in requests of at
//! most [`MAX_KEYS_PER_READ`] items (`BatchGetItem`), so a poll costs ⌈distinct watched items /
//! 100⌉ requests however many streams watch them; a change is delivered within two poll
//! intervals. A listen's baseline is its own read (one request) when it is accepted.
//!
//! What a listener may watch:
//! - the three lists (`toolsListChanged`, `promptsListChanged`, `resourcesListChanged`), which
//!   everyone may watch;
//! - up to [`MAX_RESOURCE_SUBSCRIPTIONS`] resource URIs, each resolved by the handler's
//!   [`ResourceWatch`] for the caller's principal. A URI the caller may not read, an unknown,
//!   expired or foreign handle, a URI longer than [`MAX_URI_BYTES`] and a malformed one are all
//!   dropped from the accepted filter the same way (no oracle). A resource backed by a handle
//!   ([`Watch::Handle`]) is watched through the handle's own last write: the handle write is
//!   the change (a touch, which only slides the expiry, is not), so publishing costs no
//!   DynamoDB request.
//! - up to [`MAX_TASK_SUBSCRIPTIONS`] durable tasks (`taskIds`, the tasks extension, when the
//!   server runs [`tasks`](crate::tasks)): the caller's own live tasks, read from the task
//!   store's items in the same request; anyone else's, an expired and a malformed id are
//!   dropped alike. Each `notifications/tasks` carries what `tasks/get` would answer at that
//!   moment. The first one, right after the acknowledgment, is the task's state then (so a
//!   task that finished before the listen began is not waited for); after that, one per
//!   change; a task is watched until it is finished, and a stream left with nothing to watch
//!   ends with its result. rmcp 3.11 has no `taskIds`: `rmcp_gaps.rs` carries them.
//!
//! Every stream ends with the empty `subscriptions/listen` result before whichever comes first:
//! `MCP_LISTEN_MAX_SECS`, the Lambda invocation's deadline minus [`DEADLINE_MARGIN`], or the
//! server's [`Shutdown`](crate::shutdown::Shutdown). The client then listens again; nothing is
//! lost, because it re-reads what it cares about when it reconnects.

mod feed;
mod fingerprint;
mod listener;
mod memory;
mod permit;
mod plan;
mod poller;
mod refusal;
mod settings;
pub(crate) mod stream;

#[cfg(feature = "dynamodb")]
mod dynamodb;

pub use feed::{Change, Changes, ListKind, Watch};
// A change-feed backend's seam and its vocabulary, the listener's own settings and refusals:
// the house's (ARCHITECTURE.md, "A change-feed backend"), not a server's.
#[doc(hidden)]
pub use feed::{ChangeFeed, FeedError, Mark, Observed};
pub(crate) use listener::{Announced, Listener};
#[doc(hidden)]
pub use memory::MAX_MEMORY_ITEMS;
pub use memory::MemoryFeed;
pub use plan::ResourceWatch;
pub(crate) use plan::{ListenPlan, TaskIds};
#[doc(hidden)]
pub use refusal::ListenRefusal;
#[doc(hidden)]
pub use settings::ListenSettings;

/// The change feed, as [`TableError`](crate::aws::TableError) names it.
const STORE: &str = "change feed";
#[doc(hidden)]
pub use stream::StreamLimits;

#[cfg(feature = "dynamodb")]
#[doc(hidden)]
pub use dynamodb::{DynamoDbFeed, LIST_COPIES, RESOURCE_ITEM_TTL};

use std::time::Duration;

/// The most items one feed read names: one `BatchGetItem` reads at most 100 keys.
#[doc(hidden)]
pub const MAX_KEYS_PER_READ: usize = 100;

const _: () = assert!(
    MAX_WATCHED_ITEMS <= MAX_KEYS_PER_READ,
    "one listener's baseline is one read"
);

/// The most `resourceSubscriptions` one listen may name; more is refused with -32602.
///
/// With the three list items, every watched item fits one `BatchGetItem` (100 keys).
#[doc(hidden)]
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 64;

/// The most `taskIds` one listen may name; more is refused with -32602.
#[doc(hidden)]
pub const MAX_TASK_SUBSCRIPTIONS: usize = 32;

/// The most items one listener reads per poll: the three lists, the resources and the tasks
/// (within one `BatchGetItem`'s 100 keys).
#[doc(hidden)]
pub const MAX_WATCHED_ITEMS: usize = 3 + MAX_RESOURCE_SUBSCRIPTIONS + MAX_TASK_SUBSCRIPTIONS;

/// The longest resource URI a listener may watch, in bytes; a longer one is dropped.
#[doc(hidden)]
pub const MAX_URI_BYTES: usize = 1024;

/// How long before the Lambda invocation's deadline a listen stream ends, so its closing
/// result is written before the runtime stops the invocation.
#[doc(hidden)]
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(3);
