//! Where the authorization server keeps its state: client registrations, consents under way,
//! upstream logins under way, codes and grants. In the handles table on DynamoDB (items
//! `o#<key>`, with the table's TTL), in memory locally.
//!
//! Every record expires; secrets are never keys or values in the clear (codes, refresh tokens,
//! states and client secrets are stored as their SHA-256 hashes, and what a code carries to the
//! token endpoint is sealed under a key derived from the code). Each operation is one request
//! to the store.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use futures::future::BoxFuture;
use serde_json::Value;
use thiserror::Error;

use crate::env::now_ms;

/// One stored record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub(crate) value: Value,
    /// 1 when made, +1 per [`OAuthStore::replace`].
    pub(crate) version: u64,
}

/// The store could not answer; nothing is assumed to have changed.
#[derive(Debug, Error)]
#[error("the authorization server's store is unavailable: {0}")]
pub(crate) struct StoreError(pub(crate) String);

/// The operations the authorization server needs, each one request.
pub(crate) trait OAuthStore: Send + Sync + 'static {
    /// Stores a new record; `false` when one with this key is live.
    fn create(
        &self,
        key: String,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Stores a record, replacing any.
    fn put(
        &self,
        key: String,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>>;
    /// A live record.
    fn get(&self, key: String) -> BoxFuture<'_, Result<Option<Record>, StoreError>>;
    /// Removes a live record and returns it: whoever gets it is the only one (single use).
    fn take(&self, key: String) -> BoxFuture<'_, Result<Option<Record>, StoreError>>;
    /// Replaces a live record if it is still at `version`; `false` otherwise.
    fn replace(
        &self,
        key: String,
        version: u64,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
    /// Removes a record (no error when there is none).
    fn delete(&self, key: String) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Counts one more use of `key` within its window (`ttl` from the first); `false` when
    /// `limit` uses were counted already.
    fn count(
        &self,
        key: String,
        limit: u64,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>>;
}

#[derive(Debug)]
struct Entry {
    record: Record,
    expires_at_ms: u64,
}

/// The store of a local server: one process's memory (lost on restart, not shared).
#[derive(Debug, Default, Clone)]
pub(crate) struct MemoryOAuthStore {
    entries: Arc<Mutex<Entries>>,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<String, Entry>,
    /// When expired records were last swept out (epoch milliseconds).
    swept_at_ms: u64,
}

/// Expired records are swept out at most once a second: a sweep is a pass over all of them.
const SWEEP_EVERY_MS: u64 = 1000;

impl MemoryOAuthStore {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Entry>, u64) -> T) -> T {
        let mut entries = self.entries.lock().expect("oauth store lock");
        let now = now_ms();
        if now.saturating_sub(entries.swept_at_ms) >= SWEEP_EVERY_MS {
            entries.map.retain(|_, e| e.expires_at_ms > now);
            entries.swept_at_ms = now;
        }
        f(&mut entries.map, now)
    }
}

fn expiry(now: u64, ttl: Duration) -> u64 {
    now.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
}

fn live(entry: Option<&Entry>, now: u64) -> Option<&Entry> {
    entry.filter(|e| e.expires_at_ms > now)
}

impl OAuthStore for MemoryOAuthStore {
    fn create(
        &self,
        key: String,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let created = self.with(|entries, now| {
            if live(entries.get(&key), now).is_some() {
                return false;
            }
            entries.insert(
                key,
                Entry {
                    record: Record { value, version: 1 },
                    expires_at_ms: expiry(now, ttl),
                },
            );
            true
        });
        Box::pin(async move { Ok(created) })
    }

    fn put(
        &self,
        key: String,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<(), StoreError>> {
        self.with(|entries, now| {
            let version = live(entries.get(&key), now).map_or(1, |e| e.record.version + 1);
            entries.insert(
                key,
                Entry {
                    record: Record { value, version },
                    expires_at_ms: expiry(now, ttl),
                },
            );
        });
        Box::pin(async { Ok(()) })
    }

    fn get(&self, key: String) -> BoxFuture<'_, Result<Option<Record>, StoreError>> {
        let found =
            self.with(|entries, now| live(entries.get(&key), now).map(|e| e.record.clone()));
        Box::pin(async move { Ok(found) })
    }

    fn take(&self, key: String) -> BoxFuture<'_, Result<Option<Record>, StoreError>> {
        let taken = self.with(|entries, now| {
            entries
                .remove(&key)
                .filter(|e| e.expires_at_ms > now)
                .map(|e| e.record)
        });
        Box::pin(async move { Ok(taken) })
    }

    fn replace(
        &self,
        key: String,
        version: u64,
        value: Value,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let replaced = self.with(|entries, now| match entries.get_mut(&key) {
            Some(entry) if entry.expires_at_ms > now && entry.record.version == version => {
                *entry = Entry {
                    record: Record {
                        value,
                        version: version + 1,
                    },
                    expires_at_ms: expiry(now, ttl),
                };
                true
            }
            _ => false,
        });
        Box::pin(async move { Ok(replaced) })
    }

    fn delete(&self, key: String) -> BoxFuture<'_, Result<(), StoreError>> {
        self.with(|entries, _| entries.remove(&key));
        Box::pin(async { Ok(()) })
    }

    fn count(
        &self,
        key: String,
        limit: u64,
        ttl: Duration,
    ) -> BoxFuture<'_, Result<bool, StoreError>> {
        let counted = self.with(|entries, now| {
            let entry = entries.entry(key).or_insert_with(|| Entry {
                record: Record {
                    value: Value::from(0u64),
                    version: 1,
                },
                expires_at_ms: expiry(now, ttl),
            });
            if entry.expires_at_ms <= now {
                *entry = Entry {
                    record: Record {
                        value: Value::from(0u64),
                        version: 1,
                    },
                    expires_at_ms: expiry(now, ttl),
                };
            }
            let used = entry.record.value.as_u64().unwrap_or(0);
            if used >= limit {
                return false;
            }
            entry.record.value = Value::from(used + 1);
            true
        });
        Box::pin(async move { Ok(counted) })
    }
}

#[cfg(test)]
pub(crate) mod contract {
    //! What every store must do; run against memory here and DynamoDB in tests/.
    use serde_json::json;

    use super::*;

    pub(crate) async fn run(store: &dyn OAuthStore, prefix: &str) {
        let key = |name: &str| format!("{prefix}{name}");
        let ttl = Duration::from_secs(60);
        assert!(store.create(key("a"), json!({"n": 1}), ttl).await.unwrap());
        assert!(!store.create(key("a"), json!({"n": 2}), ttl).await.unwrap());
        let record = store.get(key("a")).await.unwrap().unwrap();
        assert_eq!(record.value, json!({"n": 1}));
        assert_eq!(record.version, 1);
        assert!(
            !store
                .replace(key("a"), 7, json!({"n": 3}), ttl)
                .await
                .unwrap()
        );
        assert!(
            store
                .replace(key("a"), 1, json!({"n": 3}), ttl)
                .await
                .unwrap()
        );
        assert_eq!(store.get(key("a")).await.unwrap().unwrap().version, 2);
        // Single use: one taker only.
        let taken = store.take(key("a")).await.unwrap().unwrap();
        assert_eq!(taken.value, json!({"n": 3}));
        assert!(store.take(key("a")).await.unwrap().is_none());
        assert!(store.get(key("a")).await.unwrap().is_none());
        // Expired records are gone for every operation.
        assert!(
            store
                .create(key("short"), json!(1), Duration::from_millis(1))
                .await
                .unwrap()
        );
        tokio::time::sleep(Duration::from_millis(1100)).await;
        assert!(store.get(key("short")).await.unwrap().is_none());
        assert!(store.take(key("short")).await.unwrap().is_none());
        assert!(store.create(key("short"), json!(2), ttl).await.unwrap());
        store.put(key("short"), json!(3), ttl).await.unwrap();
        assert_eq!(
            store.get(key("short")).await.unwrap().unwrap().value,
            json!(3)
        );
        store.delete(key("short")).await.unwrap();
        store.delete(key("short")).await.unwrap();
        assert!(store.get(key("short")).await.unwrap().is_none());
        // A window's count.
        for _ in 0..3 {
            assert!(store.count(key("window"), 3, ttl).await.unwrap());
        }
        assert!(!store.count(key("window"), 3, ttl).await.unwrap());
    }

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        run(&MemoryOAuthStore::default(), "").await;
    }
}
