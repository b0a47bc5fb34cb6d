//! The embedded in-memory backend.

use std::collections::HashMap;
use std::collections::hash_map::{Entry, OccupiedEntry};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime};

use futures::future::{self, BoxFuture, FutureExt};

use super::{
    CallerQuota, Handle, HandleError, HandleId, HandlePage, HandleStore, ListPosition, expiry_ms,
    validate, validate_list,
};
use crate::env::epoch_ms;

/// Live handles the store holds before it refuses new ones (after first dropping expired ones).
const DEFAULT_CAPACITY: usize = 100_000;

/// Creates between two full sweeps of expired entries.
const SWEEP_EVERY: u32 = 1024;

type Clock = dyn Fn() -> SystemTime + Send + Sync;

/// A [`HandleStore`] in process memory: the default for local runs and tests.
///
/// Clones share the same handles. Expired entries are invisible at once and dropped lazily, when
/// they are next touched and in a periodic sweep on create. The store holds at most a fixed number
/// of live handles (100 000 unless set with [`with_capacity`](Self::with_capacity)); past that,
/// [`create`](HandleStore::create) answers [`HandleError::Unavailable`], so a client that makes
/// handles in a loop cannot exhaust memory.
///
/// Handles vanish when the process exits, so this store does not suit Lambda, where requests
/// are spread over many short-lived instances.
///
/// ```
/// use std::time::Duration;
/// use mcp_lambda::handles::{HandleStore, MemoryHandleStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), mcp_lambda::handles::HandleError> {
/// let store = MemoryHandleStore::new();
/// let ttl = Duration::from_secs(60);
/// let handle = store.create("alice", "note", serde_json::json!("hi"), ttl).await?;
/// assert_eq!(store.get("alice", handle.id).await?.data, "hi");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct MemoryHandleStore {
    inner: Arc<Mutex<Inner>>,
    clock: Arc<Clock>,
    capacity: usize,
    quota: Option<CallerQuota>,
}

#[derive(Default)]
struct Inner {
    handles: HashMap<HandleId, Handle>,
    creates_since_sweep: u32,
    /// Handles created per (owner, quota window), current windows only.
    created: HashMap<(String, u64), u32>,
}

impl MemoryHandleStore {
    /// An empty store on the system clock.
    pub fn new() -> Self {
        Self {
            inner: Arc::default(),
            clock: Arc::new(SystemTime::now),
            capacity: DEFAULT_CAPACITY,
            quota: None,
        }
    }

    /// Bounds what one authenticated owner creates (see [`CallerQuota`]), so no caller fills
    /// the store for the others; past it `create` answers [`HandleError::CallerLimit`].
    pub fn with_caller_quota(mut self, quota: CallerQuota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// Sets how many live handles the store holds before refusing new ones.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// Replaces the clock, so tests can move time instead of sleeping.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::{Duration, SystemTime};
    /// use mcp_lambda::handles::{HandleError, HandleStore, MemoryHandleStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), HandleError> {
    /// let now = Arc::new(Mutex::new(SystemTime::now()));
    /// let clock = now.clone();
    /// let store = MemoryHandleStore::new().with_clock(move || *clock.lock().unwrap());
    ///
    /// let handle = store.create("alice", "note", "hi".into(), Duration::from_secs(60)).await?;
    /// *now.lock().unwrap() += Duration::from_secs(61);
    /// assert_eq!(store.get("alice", handle.id).await, Err(HandleError::NotFound));
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Number of handles held, expired ones not yet dropped included.
    pub fn len(&self) -> usize {
        self.lock().handles.len()
    }

    /// Whether the store holds no handles at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn now_ms(&self) -> u64 {
        epoch_ms((self.clock)())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // No code path panics while holding the lock with the map half-changed, so the data is
        // consistent even if a panic poisoned it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Creates a handle at a fresh random id, or with `at`, at that id unless a live handle
    /// holds it (returned instead, `false`): one lock around the look and the insert, so
    /// concurrent calls for one id end with one handle.
    fn create_now(
        &self,
        owner: &str,
        kind: &str,
        at: Option<HandleId>,
        data: serde_json::Value,
        ttl: Duration,
    ) -> Result<(Handle, bool), HandleError> {
        validate(owner, Some(kind), Some(&data), ttl)?;
        let now = self.now_ms();
        let mut inner = self.lock();
        if let Some(live) = at
            .and_then(|id| inner.handles.get(&id))
            .filter(|h| h.expires_at_ms > now)
        {
            if live.owner != owner {
                return Err(HandleError::Unavailable(
                    "a keyed handle's id is held by another owner's handle".into(),
                ));
            }
            return Ok((live.clone(), false));
        }
        inner.creates_since_sweep += 1;
        if inner.creates_since_sweep >= SWEEP_EVERY || inner.handles.len() >= self.capacity {
            inner.handles.retain(|_, h| h.expires_at_ms > now);
            inner.creates_since_sweep = 0;
        }
        let counted = self
            .quota
            .filter(|_| CallerQuota::counts(owner))
            .map(|quota| {
                let (window, _) = quota.window_at(now);
                inner.created.retain(|(_, w), _| *w >= window);
                (quota, (owner.to_owned(), window))
            });
        if let Some((quota, key)) = &counted
            && inner.created.get(key).copied().unwrap_or(0) >= quota.max
        {
            return Err(HandleError::over_quota(quota, now));
        }
        if inner.handles.len() >= self.capacity {
            return Err(HandleError::Unavailable(format!(
                "the in-memory handle store is full ({} live handles)",
                self.capacity
            )));
        }
        let id = match at {
            Some(id) => id,
            None => loop {
                let id = HandleId::random()?;
                if !inner.handles.contains_key(&id) {
                    break id;
                }
            },
        };
        let handle = Handle::created(id, owner, kind, data, now, ttl);
        // An expired handle at a keyed id is replaced.
        inner.handles.insert(id, handle.clone());
        if let Some((_, key)) = counted {
            *inner.created.entry(key).or_insert(0) += 1;
        }
        Ok((handle, true))
    }

    /// Runs `f` on the live handle `id` of `owner`, or answers `NotFound` (dropping the entry if
    /// it has expired).
    /// One page of `owner`'s live handles of `kind`, newest first (then by id, descending),
    /// after `after`. A pass over every handle held: the store is for local runs, where that
    /// is a few milliseconds at its capacity.
    fn list_now(
        &self,
        owner: &str,
        kind: &str,
        after: Option<ListPosition>,
        limit: usize,
    ) -> Result<HandlePage, HandleError> {
        validate_list(owner, kind, limit)?;
        let now = self.now_ms();
        let inner = self.lock();
        let mut listed: Vec<&Handle> = inner
            .handles
            .values()
            .filter(|h| h.owner == owner && h.kind == kind && h.expires_at_ms > now)
            .filter(|h| after.is_none_or(|p| (h.created_at_ms, h.id) < (p.created_at_ms, p.id)))
            .collect();
        listed.sort_unstable_by_key(|h| std::cmp::Reverse((h.created_at_ms, h.id)));
        let more = listed.len() > limit;
        let handles: Vec<Handle> = listed.into_iter().take(limit).cloned().collect();
        let next = handles.last().filter(|_| more).map(ListPosition::after);
        Ok(HandlePage { handles, next })
    }

    fn with_live<T>(
        &self,
        owner: &str,
        id: HandleId,
        f: impl FnOnce(OccupiedEntry<'_, HandleId, Handle>, u64) -> Result<T, HandleError>,
    ) -> Result<T, HandleError> {
        let now = self.now_ms();
        let mut inner = self.lock();
        let Entry::Occupied(entry) = inner.handles.entry(id) else {
            return Err(HandleError::NotFound);
        };
        if entry.get().expires_at_ms <= now {
            entry.remove();
            return Err(HandleError::NotFound);
        }
        if entry.get().owner != owner {
            return Err(HandleError::NotFound);
        }
        f(entry, now)
    }
}

impl Default for MemoryHandleStore {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for MemoryHandleStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryHandleStore")
            .field("handles", &self.len())
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl HandleStore for MemoryHandleStore {
    fn create<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        future::ready(
            self.create_now(owner, kind, None, data, ttl)
                .map(|(h, _)| h),
        )
        .boxed()
    }

    fn get_or_create<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        id: HandleId,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(Handle, bool), HandleError>> {
        future::ready(self.create_now(owner, kind, Some(id), data, ttl)).boxed()
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        let result = self.with_live(owner, id, |entry, _| Ok(entry.get().clone()));
        future::ready(result).boxed()
    }

    fn update<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        expected_version: u64,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        let result = validate(owner, None, Some(&data), ttl).and_then(|()| {
            self.with_live(owner, id, |mut entry, now| {
                let handle = entry.get_mut();
                if handle.version != expected_version {
                    return Err(HandleError::Conflict {
                        current_version: handle.version,
                    });
                }
                handle.data = data;
                handle.version += 1;
                handle.expires_at_ms = expiry_ms(now, ttl);
                Ok(handle.clone())
            })
        });
        future::ready(result).boxed()
    }

    fn touch<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        let result = validate(owner, None, None, ttl).and_then(|()| {
            self.with_live(owner, id, |mut entry, now| {
                let handle = entry.get_mut();
                handle.version += 1;
                handle.expires_at_ms = expiry_ms(now, ttl);
                Ok(handle.clone())
            })
        });
        future::ready(result).boxed()
    }

    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<(), HandleError>> {
        let result = self.with_live(owner, id, |entry, _| {
            let current_version = entry.get().version;
            if expected_version.is_some_and(|v| v != current_version) {
                return Err(HandleError::Conflict { current_version });
            }
            entry.remove();
            Ok(())
        });
        future::ready(result).boxed()
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        after: Option<ListPosition>,
        limit: usize,
    ) -> BoxFuture<'a, Result<HandlePage, HandleError>> {
        future::ready(self.list_now(owner, kind, after, limit)).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manual_clock() -> (MemoryHandleStore, Arc<Mutex<SystemTime>>) {
        let now = Arc::new(Mutex::new(SystemTime::now()));
        let clock = now.clone();
        let store = MemoryHandleStore::new().with_clock(move || *clock.lock().unwrap());
        (store, now)
    }

    #[tokio::test]
    async fn a_handle_expires_exactly_at_its_ttl() {
        let (store, now) = manual_clock();
        let ttl = Duration::from_secs(10);
        let h = store.create("o", "k", json!(1), ttl).await.unwrap();
        *now.lock().unwrap() += Duration::from_millis(9_999);
        assert!(store.get("o", h.id).await.is_ok());
        *now.lock().unwrap() += Duration::from_millis(1);
        assert_eq!(store.get("o", h.id).await, Err(HandleError::NotFound));
    }

    #[tokio::test]
    async fn touch_and_update_slide_the_expiry() {
        let (store, now) = manual_clock();
        let ttl = Duration::from_secs(10);
        let h = store.create("o", "k", json!(1), ttl).await.unwrap();
        *now.lock().unwrap() += Duration::from_secs(8);
        store.touch("o", h.id, ttl).await.unwrap();
        *now.lock().unwrap() += Duration::from_secs(8);
        let h = store.update("o", h.id, 2, json!(2), ttl).await.unwrap();
        *now.lock().unwrap() += Duration::from_secs(8);
        assert_eq!(store.get("o", h.id).await.unwrap().data, json!(2));
    }

    #[tokio::test]
    async fn expired_entries_are_dropped_when_read() {
        let (store, now) = manual_clock();
        let h = store
            .create("o", "k", json!(1), Duration::from_secs(1))
            .await
            .unwrap();
        *now.lock().unwrap() += Duration::from_secs(2);
        assert_eq!(store.len(), 1);
        assert_eq!(
            store.touch("o", h.id, Duration::from_secs(60)).await,
            Err(HandleError::NotFound)
        );
        assert!(store.is_empty());
    }

    #[tokio::test]
    async fn a_full_store_drops_expired_entries_before_refusing() {
        let (store, now) = manual_clock();
        let store = store.with_capacity(2);
        let ttl = Duration::from_secs(1);
        store.create("o", "k", json!(1), ttl).await.unwrap();
        store.create("o", "k", json!(1), ttl).await.unwrap();
        assert!(matches!(
            store.create("o", "k", json!(1), ttl).await,
            Err(HandleError::Unavailable(_))
        ));
        *now.lock().unwrap() += Duration::from_secs(2);
        store.create("o", "k", json!(1), ttl).await.unwrap();
        assert_eq!(store.len(), 1);
    }

    #[tokio::test]
    async fn clones_share_handles() {
        let store = MemoryHandleStore::new();
        let other = store.clone();
        let h = store
            .create("o", "k", json!(1), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(other.get("o", h.id).await.unwrap(), h);
    }
}
