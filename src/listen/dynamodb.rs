//! The DynamoDB feed: items in the handles table, read in one `BatchGetItem` per poll.
//!
//! | item (`pk`) | attributes | written by |
//! |---|---|---|
//! | `l#tools`, `l#prompts`, `l#resources` | `version` (N, +1 per publish), `fp` (S, the latest instance's fingerprint) | [`Change::List`], [`Change::Fingerprint`]: one `UpdateItem` |
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

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use futures::future::{BoxFuture, FutureExt};

use super::{Change, ChangeFeed, Changes, FeedError, Mark, Observed, OpenError, Watch};
use crate::aws::AwsTimeouts;

/// How long a resource's feed item outlives its last publish (the table's TTL sweeps it).
pub const RESOURCE_ITEM_TTL: Duration = Duration::from_secs(7 * 24 * 3600);

type Item = HashMap<String, AttributeValue>;

/// A [`ChangeFeed`] on the handles table, shared by every instance.
#[derive(Debug, Clone)]
pub struct DynamoDbFeed {
    client: Client,
    table: String,
}

pub(super) async fn open(table: &str, timeouts: &AwsTimeouts) -> Result<Changes, OpenError> {
    // The handle store's client: one connection pool, warmed at start-up by its first read.
    let sdk = crate::aws::shared_config(timeouts).await;
    if sdk.region().is_none() {
        return Err(OpenError::Table {
            table: table.to_owned(),
            reason: "no AWS region; set AWS_REGION (Lambda sets it)".into(),
        });
    }
    Ok(Changes::new(DynamoDbFeed::new(
        crate::aws::dynamodb_client(&sdk),
        table,
    )))
}

fn key(watch: &Watch) -> String {
    match watch {
        Watch::List(list) => format!("l#{}", list.name()),
        Watch::Resource(uri) => format!("r#{uri}"),
        Watch::Handle { id, .. } => crate::handles::partition_key(*id),
        Watch::Task { id, .. } => format!("t#{id}"),
    }
}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

fn number(item: &Item, name: &str) -> Option<u64> {
    match item.get(name)? {
        AttributeValue::N(n) => n.parse().ok(),
        _ => None,
    }
}

fn text<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name)? {
        AttributeValue::S(s) => Some(s),
        _ => None,
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
                && number(item, "expires_at_ms").is_some_and(|e| u128::from(e) > now().as_millis());
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
            let now_ms = u64::try_from(now().as_millis()).unwrap_or(u64::MAX);
            match crate::tasks::dynamodb::view(item, owner, now_ms) {
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
        Self {
            client,
            table: table.into(),
        }
    }

    async fn update(&self, pk: String, expression: &str, values: Item) -> Result<(), FeedError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S(pk))
            .update_expression(expression)
            .set_expression_attribute_values(Some(values))
            .send()
            .await
            .map(|_| ())
            .map_err(|error| FeedError::Unavailable(DisplayErrorContext(error).to_string()))
    }
}

impl ChangeFeed for DynamoDbFeed {
    fn publish<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<(), FeedError>> {
        async move {
            let n = |v: u64| AttributeValue::N(v.to_string());
            match change {
                Change::List(list) => {
                    let pk = key(&Watch::List(*list));
                    self.update(
                        pk,
                        "ADD version :one",
                        HashMap::from([(":one".into(), n(1))]),
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
                    let expires = (now() + RESOURCE_ITEM_TTL).as_secs();
                    self.update(
                        key(&Watch::Resource(uri.clone())),
                        "ADD version :one SET expires_at = :expires",
                        HashMap::from([(":one".into(), n(1)), (":expires".into(), n(expires))]),
                    )
                    .await
                }
                Change::Fingerprint(list, fingerprint) => {
                    self.update(
                        key(&Watch::List(*list)),
                        "SET fp = :fp",
                        HashMap::from([(":fp".into(), AttributeValue::S(fingerprint.clone()))]),
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
            if watches.len() > super::MAX_WATCHED_ITEMS {
                return Err(FeedError::Invalid(format!(
                    "{} items; at most {} per read",
                    watches.len(),
                    super::MAX_WATCHED_ITEMS
                )));
            }
            let keys: Vec<String> = watches.iter().map(key).collect();
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
            let output = self
                .client
                .batch_get_item()
                .request_items(&self.table, request)
                .send()
                .await
                .map_err(|error| FeedError::Unavailable(DisplayErrorContext(error).to_string()))?;
            let mut items: HashMap<String, Item> = HashMap::new();
            for item in output
                .responses()
                .and_then(|r| r.get(&self.table))
                .into_iter()
                .flatten()
            {
                if let Some(pk) = text(item, "pk") {
                    items.insert(pk.to_owned(), item.clone());
                }
            }
            let unprocessed: Vec<String> = output
                .unprocessed_keys()
                .and_then(|u| u.get(&self.table))
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
