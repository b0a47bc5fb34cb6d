//! The in-memory feed: one process, listeners woken at once by a publish.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt};
use tokio::sync::watch;

use super::{Change, ChangeFeed, FeedError, Mark, Observed, Watch};
use crate::handles::{HandleError, HandleStore};
use crate::tasks::{TaskError, TaskStore};

/// The most items the in-memory feed remembers. Past it, every resource's item is forgotten
/// at once: each of their listeners then hears one (spurious) update and re-reads, which is
/// always safe, and memory stays bounded however many URIs a handler publishes.
pub const MAX_MEMORY_ITEMS: usize = 65_536;

/// A [`ChangeFeed`] in this process's memory: what `cargo run` and tests use.
///
/// Handle-backed resources are read from `handles` (the in-memory handle store of the same
/// process); without one they are never present. At most [`MAX_MEMORY_ITEMS`] items are
/// remembered.
pub struct MemoryFeed {
    shared: Arc<Shared>,
    /// Where task watches are read; `None` (the feed as made) = never present. A server that
    /// runs tasks listens through a view of the feed that has its task store
    /// ([`ChangeFeed::reading_tasks_from`]).
    tasks: Option<Arc<dyn TaskStore>>,
}

/// The feed itself, shared by its views.
struct Shared {
    /// Each item's mark, and the next version to hand out: one counter for every item, so a
    /// forgotten and republished item never repeats a version its listeners saw.
    marks: Mutex<(HashMap<Watch, Mark>, u64)>,
    handles: Option<Arc<dyn HandleStore>>,
    published: watch::Sender<u64>,
}

impl fmt::Debug for MemoryFeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryFeed").finish_non_exhaustive()
    }
}

impl MemoryFeed {
    /// An empty feed; `handles` is where handle-backed resources live.
    pub fn new(handles: Option<Arc<dyn HandleStore>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                marks: Mutex::new((HashMap::new(), 1)),
                handles,
                published: watch::Sender::new(0),
            }),
            tasks: None,
        }
    }

    fn bump(&self, key: Watch, fingerprint: Option<String>) {
        let mut guard = self.shared.marks.lock().expect("feed lock");
        let (marks, next) = &mut *guard;
        if marks.len() >= MAX_MEMORY_ITEMS && !marks.contains_key(&key) {
            marks.retain(|watch, _| matches!(watch, Watch::List(_)));
        }
        let mark = marks.entry(key).or_insert(Mark {
            version: 0,
            tag: None,
        });
        match fingerprint {
            Some(fingerprint) => mark.tag = Some(fingerprint),
            None => {
                mark.version = *next;
                *next += 1;
            }
        }
    }
}

/// A short digest of a handle's data.
fn digest(data: &serde_json::Value) -> String {
    let bytes = serde_json::to_vec(data).unwrap_or_default();
    ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl ChangeFeed for MemoryFeed {
    fn publish<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<(), FeedError>> {
        match change {
            Change::List(list) => self.bump(Watch::List(*list), None),
            Change::Resource(uri) => {
                if uri.is_empty() || uri.len() > super::MAX_URI_BYTES {
                    return futures::future::ready(Err(FeedError::Invalid(format!(
                        "a resource URI must be 1 to {} bytes",
                        super::MAX_URI_BYTES
                    ))))
                    .boxed();
                }
                self.bump(Watch::Resource(uri.clone()), None)
            }
            Change::Fingerprint(list, fingerprint) => {
                self.bump(Watch::List(*list), Some(fingerprint.clone()))
            }
            // The handle store holds the version; only wake the listeners.
            Change::Handle(_) => {}
        }
        self.shared.published.send_modify(|n| *n += 1);
        futures::future::ready(Ok(())).boxed()
    }

    fn read<'a>(&'a self, watches: &'a [Watch]) -> BoxFuture<'a, Result<Vec<Observed>, FeedError>> {
        async move {
            let mut seen = Vec::with_capacity(watches.len());
            for watch in watches {
                let observed = match watch {
                    Watch::Handle { owner, id } => match &self.shared.handles {
                        Some(store) => match store.get(owner, *id).await {
                            // What was written, not the version: a touch is no change.
                            Ok(handle) => Observed::Present(Mark {
                                version: 0,
                                tag: Some(digest(&handle.data)),
                            }),
                            Err(HandleError::NotFound) => Observed::Absent,
                            Err(error) => return Err(FeedError::Unavailable(error.to_string())),
                        },
                        None => Observed::Absent,
                    },
                    Watch::Task { owner, id } => match &self.tasks {
                        Some(store) => match store.get(owner, *id).await {
                            Ok(task) => Observed::Task(Box::new(task)),
                            Err(TaskError::NotFound) => Observed::Absent,
                            Err(error) => return Err(FeedError::Unavailable(error.to_string())),
                        },
                        None => Observed::Absent,
                    },
                    key => match self.shared.marks.lock().expect("feed lock").0.get(key) {
                        Some(mark) => Observed::Present(mark.clone()),
                        None => Observed::Absent,
                    },
                };
                seen.push(observed);
            }
            Ok(seen)
        }
        .boxed()
    }

    fn reading_tasks_from(&self, store: Arc<dyn TaskStore>) -> Option<Arc<dyn ChangeFeed>> {
        Some(Arc::new(Self {
            shared: self.shared.clone(),
            tasks: Some(store),
        }))
    }

    fn wake(&self) -> Option<watch::Receiver<u64>> {
        Some(self.shared.published.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listen::ListKind;

    #[tokio::test(flavor = "current_thread")]
    async fn memory_stays_bounded_and_forgetting_reads_as_a_change() {
        let feed = MemoryFeed::new(None);
        feed.publish(&Change::List(ListKind::Tools)).await.unwrap();
        feed.publish(&Change::Resource("r:first".into()))
            .await
            .unwrap();
        let watches = [
            Watch::List(ListKind::Tools),
            Watch::Resource("r:first".into()),
        ];
        let before = feed.read(&watches).await.unwrap();
        assert!(matches!(before[1], Observed::Present(_)));
        for i in 0..MAX_MEMORY_ITEMS {
            feed.publish(&Change::Resource(format!("r:{i}")))
                .await
                .unwrap();
        }
        assert!(feed.shared.marks.lock().unwrap().0.len() <= MAX_MEMORY_ITEMS);
        let after = feed.read(&watches).await.unwrap();
        assert_eq!(after[0], before[0], "lists are never forgotten");
        assert_eq!(
            after[1],
            Observed::Absent,
            "a forgotten resource reads as changed"
        );
    }
}
