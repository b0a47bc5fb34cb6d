//! One poll of the feed per process, shared by every open stream.
//!
//! Each open stream [joins](Poller::join) with what it watches; one task reads the union of
//! every stream's watches each `MCP_LISTEN_POLL_MS` (reads of at most [`MAX_KEYS_PER_READ`]
//! items, a few at once) and publishes what it saw; each stream picks its own items out of
//! it. A poll therefore costs ⌈distinct watched items / 100⌉ backend requests, however many
//! streams watch them. The task runs while something is watched and ends with the last stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::watch;

use super::{ChangeFeed, MAX_KEYS_PER_READ, Observed, Watch};

/// The most reads of one poll in flight at once.
const READS_AT_ONCE: usize = 8;

/// The least time between two polls a memory feed's wake-ups may cause: a burst of publishes
/// costs one read, not one each.
const MIN_WAKE_SPACING: Duration = Duration::from_millis(50);

/// What one shared poll saw.
#[derive(Debug)]
pub(crate) struct Poll {
    /// When its reads were sent: a stream ignores a poll older than its own baseline.
    pub(crate) sent: Instant,
    seen: HashMap<Watch, Observed>,
}

impl Poll {
    /// What the poll saw of `watch`: [`Observed::Unknown`] when it was not read (the stream
    /// joined after the poll began, or that read failed).
    pub(crate) fn get(&self, watch: &Watch) -> Observed {
        self.seen.get(watch).cloned().unwrap_or(Observed::Unknown)
    }
}

/// The process's one reader of a feed; see the [module docs](self).
pub(crate) struct Poller {
    feed: Arc<dyn ChangeFeed>,
    interval: Duration,
    state: Mutex<State>,
    polls: watch::Sender<Arc<Poll>>,
}

#[derive(Default)]
struct State {
    /// Every watched item and how many streams watch it.
    watched: HashMap<Watch, usize>,
    /// The polling task is running (it stops when nothing is watched).
    running: bool,
}

impl std::fmt::Debug for Poller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poller")
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

impl Poller {
    /// A poller of `feed` every `interval`; nothing runs until a stream joins.
    pub(crate) fn new(feed: Arc<dyn ChangeFeed>, interval: Duration) -> Arc<Self> {
        Arc::new(Self {
            feed,
            interval,
            state: Mutex::new(State::default()),
            polls: watch::Sender::new(Arc::new(Poll {
                sent: Instant::now(),
                seen: HashMap::new(),
            })),
        })
    }

    /// Adds `watches` to what every poll reads, until the returned [`Joined`] is dropped; it
    /// hears every poll from now on.
    pub(crate) fn join(self: &Arc<Self>, watches: &[Watch]) -> Joined {
        let polls = self.polls.subscribe();
        let mut joined = Joined {
            poller: self.clone(),
            watches: Vec::new(),
            polls,
        };
        joined.add(watches);
        joined
    }

    /// How many distinct items the polls read now.
    #[cfg(test)]
    fn watched(&self) -> usize {
        self.state.lock().expect("poller lock").watched.len()
    }

    fn add(self: &Arc<Self>, watches: &[Watch]) {
        let mut state = self.state.lock().expect("poller lock");
        for watch in watches {
            *state.watched.entry(watch.clone()).or_insert(0) += 1;
        }
        if !state.running && !state.watched.is_empty() {
            state.running = true;
            tokio::spawn(self.clone().run());
        }
    }

    fn remove(&self, watches: &[Watch]) {
        let mut state = self.state.lock().expect("poller lock");
        for watch in watches {
            if let Some(count) = state.watched.get_mut(watch) {
                *count -= 1;
                if *count == 0 {
                    state.watched.remove(watch);
                }
            }
        }
    }

    /// What to read now, or `None` (and the task marked stopped) when nothing is watched.
    fn to_read(&self) -> Option<Vec<Watch>> {
        let mut state = self.state.lock().expect("poller lock");
        if state.watched.is_empty() {
            state.running = false;
            return None;
        }
        Some(state.watched.keys().cloned().collect())
    }

    /// Polls until nothing is watched. The first poll comes one interval after the first
    /// stream joined, whose own baseline is fresh.
    async fn run(self: Arc<Self>) {
        let mut wake = self.feed.wake();
        let start = tokio::time::Instant::now();
        let mut next = start + self.interval;
        let mut last = start;
        let mut failing = false;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                Ok(()) = async {
                    match wake.as_mut() {
                        Some(wake) => wake.changed().await.map_err(|_| ()),
                        None => std::future::pending().await,
                    }
                } => {
                    tokio::time::sleep_until(last + MIN_WAKE_SPACING).await;
                }
            }
            let Some(watches) = self.to_read() else {
                return;
            };
            last = tokio::time::Instant::now();
            // A fixed rate, whatever a read takes: one poll per interval, not per interval + read.
            next = (next + self.interval).max(last);
            let sent = Instant::now();
            let feed = &self.feed;
            let chunks: Vec<Vec<Watch>> = watches
                .chunks(MAX_KEYS_PER_READ)
                .map(<[Watch]>::to_vec)
                .collect();
            let reads: Vec<_> = futures::stream::iter(chunks)
                .map(|chunk| async move {
                    let read = feed.read(&chunk).await;
                    (chunk, read)
                })
                .buffered(READS_AT_ONCE)
                .collect()
                .await;
            let mut seen = HashMap::with_capacity(watches.len());
            let mut failure = None;
            for (chunk, read) in reads {
                match read {
                    Ok(observed) => seen.extend(chunk.into_iter().zip(observed)),
                    // Its streams compare again at the next poll that reads it.
                    Err(error) => failure = Some(error),
                }
            }
            match failure {
                // Logged once per outage, not once per poll or per stream.
                Some(error) if !failing => {
                    failing = true;
                    tracing::warn!(%error, "listen: the change feed could not be read; retrying at the poll interval");
                }
                Some(_) => {}
                None => failing = false,
            }
            self.polls.send_replace(Arc::new(Poll { sent, seen }));
        }
    }
}

/// One stream's place in the shared polls; leaves them when dropped.
pub(crate) struct Joined {
    poller: Arc<Poller>,
    watches: Vec<Watch>,
    polls: watch::Receiver<Arc<Poll>>,
}

impl Joined {
    fn add(&mut self, watches: &[Watch]) {
        self.poller.add(watches);
        self.watches.extend_from_slice(watches);
    }

    /// Stops reading `watches` for this stream (a finished task).
    pub(crate) fn leave(&mut self, watches: &[Watch]) {
        self.poller.remove(watches);
        for watch in watches {
            if let Some(at) = self.watches.iter().position(|w| w == watch) {
                self.watches.swap_remove(at);
            }
        }
    }

    /// The next poll.
    pub(crate) async fn next(&mut self) -> Arc<Poll> {
        if self.polls.changed().await.is_err() {
            // The poller lives as long as this: its sender cannot go first.
            std::future::pending::<()>().await;
        }
        self.polls.borrow_and_update().clone()
    }
}

impl Drop for Joined {
    fn drop(&mut self) {
        self.poller.remove(&self.watches);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listen::{Change, ListKind, MemoryFeed};

    #[tokio::test(flavor = "current_thread")]
    async fn streams_share_one_poll_and_leave_it_when_they_end() {
        let feed: Arc<dyn ChangeFeed> = Arc::new(MemoryFeed::new(None));
        let poller = Poller::new(feed.clone(), Duration::from_millis(100));
        let tools = Watch::List(ListKind::Tools);
        let page = Watch::Resource("r:page".into());
        let mut a = poller.join(std::slice::from_ref(&tools));
        let mut b = poller.join(&[tools.clone(), page.clone()]);
        assert_eq!(
            poller.watched(),
            2,
            "one item per key, however many watch it"
        );

        feed.publish(&Change::List(ListKind::Tools)).await.unwrap();
        let (seen_a, seen_b) = tokio::join!(a.next(), b.next());
        assert!(Arc::ptr_eq(&seen_a, &seen_b), "one poll for both");
        assert!(matches!(seen_a.get(&tools), Observed::Present(m) if m.version >= 1));
        assert_eq!(seen_b.get(&page), Observed::Absent);

        drop(b);
        assert_eq!(poller.watched(), 1);
        a.leave(std::slice::from_ref(&tools));
        assert_eq!(poller.watched(), 0);
        // With nothing watched the task ends at its next turn, and a new stream starts it again.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!poller.state.lock().unwrap().running);
        let mut c = poller.join(std::slice::from_ref(&page));
        feed.publish(&Change::Resource("r:page".into()))
            .await
            .unwrap();
        let seen = c.next().await;
        assert!(matches!(seen.get(&page), Observed::Present(_)));
    }
}
