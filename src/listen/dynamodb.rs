//! The DynamoDB feed: items in the handles table, read in one `BatchGetItem` per poll.
//!
//! | item (`pk`) | attributes | written by |
//! |---|---|---|
//! | `l#tools`, `l#prompts`, `l#resources`, each with [`LIST_COPIES`] − 1 copies (`l#tools#1` …) | `version` (N, +1 per publish), `fp` (S, the latest instance's fingerprint) | [`Change::List`]: one `TransactWriteItems` over every copy; [`Change::Fingerprint`]: one `GetItem` of the process's copy, and the transaction only if it differs |
//! | `r#<uri>` | `version` (N), `expires_at` (the table's TTL, [`RESOURCE_ITEM_TTL`] after the last publish) | [`Change::Resource`]: one `UpdateItem` |
//! | `h#<uuid>` (a handle) | `write_id` (changes with every write but a touch), `owner`, `expires_at_ms`, `deleted` | the handle store; [`Change::Handle`] writes nothing |
//! | `t#<uuid>` (a task) | what `tasks/get` shows (state, status line, outstanding requests, result or error, times; the task store's `VIEW_ATTRIBUTES`) | the task store |
//!
//! A read is one strongly consistent `BatchGetItem` projecting only those attributes (a
//! handle's data, a task's call and answers are never read), so one poll costs one request
//! and about one read unit per watched item whatever its size; a finished task's result is
//! read once, by the poll that sees it finish (the stream then stops watching it). Keys
//! DynamoDB leaves unprocessed (throttling) are [`Observed::Unknown`] and read again at the
//! next poll.
//!
//! **No hot item.** Every listener reads the list items at every poll. On on-demand Lambda each
//! stream is a process of its own, so N listeners read a list item N times a second, and one
//! item is one partition: 3,000 strongly consistent reads a second at most. So each list is
//! kept in [`LIST_COPIES`] items written together (one transaction, atomic: a strongly
//! consistent read of any copy sees every publish), and each process reads one copy, drawn at
//! random when the feed is made. Copy 0 is the item earlier versions read and write.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use futures::future::{BoxFuture, FutureExt};

use super::{Change, ChangeFeed, Changes, FeedError, ListKind, Mark, Observed, STORE, Watch};
use crate::aws::AwsTimeouts;
use crate::aws::TableError;
use crate::aws::item::{self, Item, n, number, text};
use crate::aws::table::{PK, Table, handle_key, list_key, resource_key, task_key};
use crate::env::now_ms;

/// How long a resource's feed item outlives its last publish (the table's TTL sweeps it).
pub const RESOURCE_ITEM_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

/// How many items hold each list's version and fingerprint: one item is one partition (3,000
/// strongly consistent reads a second), and every listener reads the lists at every poll.
///
/// Each is read by 1/16 of the processes: 16 × 3,000 reads a second before a list item is
/// throttled, 48 times the listeners the default Lambda concurrency quota (1,000) admits.
pub const LIST_COPIES: usize = 16;

/// A [`ChangeFeed`] on the handles table, shared by every instance.
#[derive(Debug, Clone)]
pub struct DynamoDbFeed {
    table: Table,
    /// Which copy of the list items this process reads.
    copy: usize,
}

pub(super) async fn open(table: &str, timeouts: &AwsTimeouts) -> Result<Changes, TableError> {
    // The handle store's client: one connection pool, warmed at start-up by its first read.
    Ok(Changes::new(DynamoDbFeed::on(
        Table::open(STORE, table, timeouts).await?,
    )))
}

/// The key of a watched item; lists at copy `copy`.
fn key(watch: &Watch, copy: usize) -> String {
    match watch {
        Watch::List(list) => list_key(list.name(), copy),
        Watch::Resource(uri) => resource_key(uri),
        Watch::Handle { id, .. } => handle_key(id),
        Watch::Task { id, .. } => task_key(id),
    }
}

/// What one item says about the watch it answers.
fn observe(watch: &Watch, item: Option<&Item>) -> Observed {
    let Some(item) = item else {
        return Observed::Absent;
    };
    match watch {
        Watch::Handle { owner, .. } => {
            let live = text(item, "owner") == Some(owner.as_str())
                && !matches!(item.get("deleted"), Some(AttributeValue::Bool(true)))
                && number(item, "expires_at_ms").is_some_and(|e| e > now_ms());
            if live {
                // The last write, not the version: a touch (which only slides the expiry)
                // bumps the version but is no change of the resource.
                Observed::Present(Mark {
                    version: 0,
                    tag: text(item, "write_id").map(str::to_owned),
                })
            } else {
                Observed::Absent
            }
        }
        Watch::Task { owner, .. } => {
            match crate::tasks::dynamodb::view(item, owner, now_ms()) {
                Ok(Some(task)) => Observed::Task(Box::new(task)),
                Ok(None) => Observed::Absent,
                // Malformed (already logged by the task store's parser): read again next poll.
                Err(_) => Observed::Unknown,
            }
        }
        _ => Observed::Present(Mark {
            version: number(item, "version").unwrap_or(0),
            tag: text(item, "fp").map(str::to_owned),
        }),
    }
}

/// The attributes a read of `watches` needs: a task's view only when a task is watched.
fn projected(watches: &[Watch]) -> Vec<&'static str> {
    let mut attributes = vec![
        "pk",
        "version",
        "fp",
        "owner",
        "expires_at_ms",
        "deleted",
        "write_id",
    ];
    if watches.iter().any(|w| matches!(w, Watch::Task { .. })) {
        for name in crate::tasks::dynamodb::VIEW_ATTRIBUTES {
            if !attributes.contains(&name) {
                attributes.push(name);
            }
        }
    }
    attributes
}

impl DynamoDbFeed {
    /// A feed on `table` (the handles table, laid out as `infra/handles-table.json`).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self::on(Table::new(client, table))
    }

    fn on(table: Table) -> Self {
        let mut byte = [0u8; 1];
        // Any spread will do; a failed draw reads copy 0.
        let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut byte);
        Self {
            table,
            copy: usize::from(byte[0]) % LIST_COPIES,
        }
    }

    /// Applies `expression` to every copy of `list` in one transaction (retried while a
    /// concurrent publish holds the same items).
    async fn update_copies(
        &self,
        list: ListKind,
        expression: &str,
        values: &Item,
    ) -> Result<(), FeedError> {
        use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
        let sent = self
            .table
            .transact(|_| {
                let mut request = self.table.client().transact_write_items();
                for copy in 0..LIST_COPIES {
                    let update = Update::builder()
                        .table_name(self.table.name())
                        .key(PK, AttributeValue::S(list_key(list.name(), copy)))
                        .update_expression(expression)
                        .set_expression_attribute_values(Some(values.clone()))
                        .build()
                        .map_err(|error| FeedError::Invalid(error.to_string()))?;
                    request =
                        request.transact_items(TransactWriteItem::builder().update(update).build());
                }
                Ok(request)
            })
            .await?;
        sent.result
            .map(drop)
            .map_err(|error| FeedError::Unavailable(item::brief(&error)))
    }

    /// The fingerprint of `list` this process's copy holds.
    async fn stored_fingerprint(&self, list: ListKind) -> Result<Option<String>, FeedError> {
        let request = self
            .table
            .client()
            .get_item()
            .table_name(self.table.name())
            .key(PK, AttributeValue::S(list_key(list.name(), self.copy)))
            .projection_expression("fp")
            .consistent_read(true);
        let output = self
            .table
            .answer(|| request.clone().send())
            .await
            .map_err(|error| FeedError::Unavailable(item::brief(&error)))?;
        Ok(output
            .item()
            .and_then(|item| text(item, "fp"))
            .map(str::to_owned))
    }

    async fn update(&self, pk: String, expression: &str, values: Item) -> Result<(), FeedError> {
        let request = self
            .table
            .client()
            .update_item()
            .table_name(self.table.name())
            .key(PK, AttributeValue::S(pk))
            .update_expression(expression)
            .set_expression_attribute_values(Some(values));
        self.table
            .answer(|| request.clone().send())
            .await
            .map(|_| ())
            .map_err(|error| FeedError::Unavailable(item::brief(&error)))
    }
}

impl ChangeFeed for DynamoDbFeed {
    fn publish<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<(), FeedError>> {
        async move {
            match change {
                Change::List(list) => {
                    self.update_copies(
                        *list,
                        "ADD version :one",
                        &HashMap::from([(":one".into(), n(1))]),
                    )
                    .await
                }
                Change::Resource(uri) => {
                    if uri.is_empty() || uri.len() > super::MAX_URI_BYTES {
                        return Err(FeedError::Invalid(format!(
                            "a resource URI must be 1 to {} bytes",
                            super::MAX_URI_BYTES
                        )));
                    }
                    let expires = (now_ms() / 1000) + RESOURCE_ITEM_TTL.as_secs();
                    self.update(
                        key(&Watch::Resource(uri.clone()), self.copy),
                        "ADD version :one SET expires_at = :expires",
                        HashMap::from([(":one".into(), n(1)), (":expires".into(), n(expires))]),
                    )
                    .await
                }
                Change::Fingerprint(list, fingerprint) => {
                    // Every instance of a version publishes the same one at start-up: a read
                    // (one unit) spares the transaction (two units per copy) when it is there.
                    if self.stored_fingerprint(*list).await?.as_ref() == Some(fingerprint) {
                        return Ok(());
                    }
                    self.update_copies(
                        *list,
                        "SET fp = :fp",
                        &HashMap::from([(":fp".into(), AttributeValue::S(fingerprint.clone()))]),
                    )
                    .await
                }
                // The handle's own write bumped its version: nothing to publish.
                Change::Handle(_) => Ok(()),
            }
        }
        .boxed()
    }

    fn read<'a>(&'a self, watches: &'a [Watch]) -> BoxFuture<'a, Result<Vec<Observed>, FeedError>> {
        async move {
            if watches.is_empty() {
                return Ok(Vec::new());
            }
            if watches.len() > super::MAX_KEYS_PER_READ {
                return Err(FeedError::Invalid(format!(
                    "{} items; at most {} per read",
                    watches.len(),
                    super::MAX_KEYS_PER_READ
                )));
            }
            let keys: Vec<String> = watches.iter().map(|w| key(w, self.copy)).collect();
            // DynamoDB refuses a read that names a key twice (two watches of one handle).
            let mut unique: Vec<&String> = keys.iter().collect();
            unique.sort();
            unique.dedup();
            let attributes = projected(watches);
            // Placeholders throughout: `state`, `round`, `owner`… are reserved words.
            let projection: Vec<String> = (0..attributes.len()).map(|i| format!("#a{i}")).collect();
            let request = KeysAndAttributes::builder()
                .set_keys(Some(
                    unique
                        .iter()
                        .map(|k| {
                            HashMap::from([("pk".to_owned(), AttributeValue::S((*k).clone()))])
                        })
                        .collect(),
                ))
                .projection_expression(projection.join(", "))
                .set_expression_attribute_names(Some(
                    projection
                        .iter()
                        .zip(&attributes)
                        .map(|(placeholder, name)| (placeholder.clone(), (*name).to_owned()))
                        .collect(),
                ))
                .consistent_read(true)
                .build()
                .map_err(|error| FeedError::Invalid(error.to_string()))?;
            let request = self
                .table
                .client()
                .batch_get_item()
                .request_items(self.table.name(), request);
            let output = self
                .table
                .answer(|| request.clone().send())
                .await
                .map_err(|error| FeedError::Unavailable(item::brief(&error)))?;
            let mut items: HashMap<String, Item> = HashMap::new();
            for item in output
                .responses()
                .and_then(|r| r.get(self.table.name()))
                .into_iter()
                .flatten()
            {
                if let Some(pk) = text(item, "pk") {
                    items.insert(pk.to_owned(), item.clone());
                }
            }
            let unprocessed: Vec<String> = output
                .unprocessed_keys()
                .and_then(|u| u.get(self.table.name()))
                .map(|k| {
                    k.keys()
                        .iter()
                        .filter_map(|key| text(key, "pk").map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            Ok(watches
                .iter()
                .zip(keys)
                .map(|(watch, pk)| {
                    if unprocessed.contains(&pk) {
                        Observed::Unknown
                    } else {
                        observe(watch, items.get(&pk))
                    }
                })
                .collect())
        }
        .boxed()
    }
}
