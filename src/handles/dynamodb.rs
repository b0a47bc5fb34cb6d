//! The DynamoDB backend: durable handles shared by every Lambda instance.
//!
//! One item per handle, in a table laid out as `infra/handles-table.json` (partition key `pk`,
//! on-demand billing, TTL on `expires_at`):
//!
//! | attribute | type | meaning |
//! |---|---|---|
//! | `pk` | S | `h#<uuid>` |
//! | `owner` | S | the owner key; anyone else gets `NotFound` |
//! | `kind` | S | the tool's label (`basket`) |
//! | `data` | S | the tool's state, compact JSON (≤ [`MAX_DATA_BYTES`](super::MAX_DATA_BYTES)) |
//! | `version` | N | 1 at creation, +1 per update and per touch |
//! | `created_at` | N | epoch milliseconds; the owner index's sort key |
//! | `owner_kind` | S | `<kind's length>:<kind>:<owner>`: the owner index's partition key (index `by-owner`, newest first by `created_at`), removed from a tombstone so a deleted handle leaves the index |
//! | `expires_at` | N | epoch **seconds**, rounded up: the table's TTL attribute, for the sweeper |
//! | `expires_at_ms` | N | epoch milliseconds: the expiry every operation checks |
//! | `write_id` | S | a random token per create/update/delete, so a retried write that already landed is recognised instead of reported as a conflict or as missing; an update's is `<the version it makes>:<uuid>` |
//! | `w1` … `w15` | S | the write ids of the fifteen updates before the current one (`write_id` moved down on each update): after an update whose outcome is unknown meets a concurrent writer, they tell whether it landed (its id is there) or not (the version it would have made is another write's) |
//! | `deleted` | BOOL | present (`true`) on a deleted handle's tombstone: `data` is removed, the expiry cut to [`TOMBSTONE_TTL`] so the TTL sweep removes it soon |
//!
//! Exactly one DynamoDB request per operation:
//!
//! | operation | request | condition |
//! |---|---|---|
//! | create | `PutItem` | `attribute_not_exists(pk)` |
//! | get | `GetItem`, strongly consistent | owner, expiry and no tombstone checked on the item read |
//! | update | `UpdateItem`, `ReturnValues=ALL_NEW` | owner, `expires_at_ms > now`, not deleted, `version = expected` |
//! | touch | `UpdateItem`, `ReturnValues=ALL_NEW` | owner, `expires_at_ms > now`, not deleted |
//! | delete | `UpdateItem` to a tombstone | owner, `expires_at_ms > now`, not deleted (and `version = expected` if given) |
//! | list (a page) | `Query` on the index `by-owner`, newest first, `Limit` = the page size | `expires_at_ms > now`, not deleted (a filter: a page may come back short) |
//!
//! Conditional writes ask for the old item on failure
//! (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), so telling "gone" from "changed
//! concurrently" (and naming the current version) costs no second request. DynamoDB's TTL sweep
//! can lag by days; an item past `expires_at_ms` is treated as gone by every operation anyway,
//! and so is a tombstone.
//!
//! # Retries and lost answers
//!
//! Each request is tried again by the crate's one retry policy (`aws/retry.rs`, the table in
//! docs/operations.md): throttling, 5xx and lost connections, 25 ms apart and growing, within
//! the operation timeout of [`AwsTimeouts`](crate::aws::AwsTimeouts), so an unreachable table
//! fails in bounded time. Every write is a single conditional request: it lands whole or not
//! at all. When an attempt lands but its answer is lost (a 5xx, a read timeout, a connection
//! dropped) the next attempt is the same request, and its condition then fails on the
//! attempt's own result: the `write_id` in the old item (or in the update history `w1` …
//! `w15`) shows it, and the operation succeeds. That is why a delete is a tombstone and not a
//! `DeleteItem`: a repeated `DeleteItem` would find nothing and answer "not found" for a
//! delete that worked.
//!
//! A failed write is [`HandleError::Unavailable`] ("nothing changed") only when no attempt can
//! have been applied: each attempt either failed to connect, or was refused with a 4xx. When
//! any attempt may have landed and no later attempt saw its result (the store stayed
//! unreachable for the whole budget, or the item moved on further than its history reaches),
//! the answer is [`HandleError::Indeterminate`]. Reads never are: a failed `GetItem` changed
//! nothing.
//!
//! An attempt whose answer was lost may still be on its way: queued in DynamoDB or in the
//! network, applied after the caller has moved on. A `GetItem` cannot rule that out; a
//! [`touch`](HandleStore::touch) can, since it bumps the version that every pending write is
//! conditioned on, so once it has answered, no write issued before it can land.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, CreateGlobalSecondaryIndexAction,
    GlobalSecondaryIndex, GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType,
    Projection, ProjectionType, ReturnValue, ReturnValuesOnConditionCheckFailure,
    ScalarAttributeType, TableStatus, TimeToLiveSpecification,
};
use futures::future::{BoxFuture, FutureExt};

use super::{
    CallerQuota, Handle, HandleError, HandleId, HandlePage, HandleStore, ListPosition, STORE,
    epoch_ms, expiry_ms, validate, validate_list,
};
use crate::aws::AwsTimeouts;
use crate::aws::TableError;
use crate::aws::item::{self, Failure, Item, n, s};
use crate::aws::retry::{self, CONFLICT_ATTEMPTS, conflict_pause};

/// The table definition, as CloudFormation `AWS::DynamoDB::Table` properties: the one copy in
/// `infra/handles-table.json`, used by [`DynamoDbHandleStore::create_table`] (tests, local
/// development) and by the deployment template.
pub const TABLE_DEFINITION: &str = include_str!("../../infra/handles-table.json");

/// The partition key attribute.
const PK: &str = "pk";

/// The owner index's partition key attribute: the owner and the kind.
const OWNER_KIND: &str = "owner_kind";

/// The owner index (`infra/handles-table.json`): one owner's handles of one kind, newest first.
pub const OWNER_INDEX: &str = "by-owner";

/// The tombstone marker attribute.
const DELETED: &str = "deleted";

/// How long a deleted handle's tombstone is kept (its `expires_at`, for the TTL sweep). It
/// only has to outlive the retries of the delete, which end within the operation timeout.
pub const TOMBSTONE_TTL: Duration = Duration::from_secs(300);

/// A [`HandleStore`] on a DynamoDB table; clones share the client and its connections.
///
/// Build it once at start-up (Lambda INIT) with [`HandleSettings::open`](super::HandleSettings::open),
/// or from your own client:
///
/// ```no_run
/// # async fn demo() -> Result<(), mcp_lambda::Error> {
/// use mcp_lambda::handles::DynamoDbHandleStore;
/// let timeouts = mcp_lambda::aws::AwsTimeouts::default();
/// let sdk = mcp_lambda::aws::loader(&timeouts).load().await;
/// let store = DynamoDbHandleStore::new(aws_sdk_dynamodb::Client::new(&sdk), "mcp-handles");
/// store.check_table().await?; // opens the connection, checks the table and the key
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct DynamoDbHandleStore {
    client: Client,
    table: Arc<str>,
    quota: Option<CallerQuota>,
}

impl fmt::Debug for DynamoDbHandleStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoDbHandleStore")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

/// [`HandleSettings::open`](super::HandleSettings::open) for a table: the client with this
/// crate's timeouts, then one warm-up read.
pub(super) async fn open(
    table: &str,
    timeouts: &AwsTimeouts,
    quota: CallerQuota,
) -> Result<Arc<dyn HandleStore>, TableError> {
    let sdk = crate::aws::regional_config(timeouts, STORE, table).await?;
    let store =
        DynamoDbHandleStore::new(crate::aws::dynamodb_client(&sdk), table).with_caller_quota(quota);
    let started = std::time::Instant::now();
    match store.warm_up().await {
        Ok(()) => tracing::info!(
            table = %table,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "handles in DynamoDB; connection warmed"
        ),
        // The endpoint is away: serve anyway; operations fail cleanly until it answers.
        Err((true, reason)) => tracing::warn!(
            table = %table,
            %reason,
            "DynamoDB is unreachable at start-up; handle operations fail until it answers"
        ),
        Err((false, e)) => return Err(e),
    }
    Ok(Arc::new(store))
}

impl DynamoDbHandleStore {
    /// A store on `table` (a name or an ARN) through `client`. Makes no request.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: Arc::from(table.into()),
            quota: None,
        }
    }

    /// Bounds what one authenticated owner creates (see [`CallerQuota`]): a counted create is
    /// the handle's put and the owner's count in one `TransactWriteItems`; past it `create`
    /// answers [`HandleError::CallerLimit`] and stores nothing.
    pub fn with_caller_quota(mut self, quota: CallerQuota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// The table name or ARN.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// Reads one item that never exists (`pk = "h#warm-up"`): checks that the table exists,
    /// that its key is the string `pk` of `infra/handles-table.json`, and that this role may
    /// read it, and leaves a warm connection in the client's pool. Call it at start-up (Lambda
    /// INIT) so the first request does not pay for the TCP and TLS handshakes.
    ///
    /// A `GetItem` rather than `DescribeTable`, so the function's role needs nothing beyond the
    /// three item operations it uses anyway.
    ///
    /// # Errors
    ///
    /// [`TableError`] when the table is missing, has another key schema, or DynamoDB
    /// refuses the call (no region, no credentials, no permission), and when it cannot be
    /// reached within the operation timeout.
    pub async fn check_table(&self) -> Result<(), TableError> {
        self.warm_up().await.map_err(|(_, e)| e)
    }

    /// [`check_table`](Self::check_table), telling whether a failure is the endpoint being away
    /// (`true`: timeout, connection refused) rather than a configuration mistake.
    pub(crate) async fn warm_up(&self) -> Result<(), (bool, TableError)> {
        let fail = |reason: String| TableError::new(STORE, self.table.as_ref(), reason);
        let request = self
            .client
            .get_item()
            .table_name(self.table.as_ref())
            .key(PK, s("h#warm-up"));
        let Err(e) = retry::send(&self.client, || request.clone().send())
            .await
            .result
        else {
            return Ok(());
        };
        let code = e.as_service_error().and_then(|s| s.code());
        Err(match (&e, code) {
            (_, Some("ResourceNotFoundException")) => (
                false,
                fail(
                    "not found: create it from infra/handles-table.json, or check \
                     MCP_HANDLES_TABLE and AWS_REGION"
                        .into(),
                ),
            ),
            (_, Some("ValidationException")) => (
                false,
                fail(format!(
                    "its key is not the string partition key pk of infra/handles-table.json ({})",
                    e.as_service_error().and_then(|s| s.message()).unwrap_or("")
                )),
            ),
            (_, Some("AccessDeniedException")) => (
                false,
                fail(format!(
                    "this role may not read it: allow dynamodb:GetItem, PutItem and UpdateItem \
                     on the table ({})",
                    e.as_service_error().and_then(|s| s.message()).unwrap_or("")
                )),
            ),
            (SdkError::TimeoutError(_) | SdkError::DispatchFailure(_), _) => (
                true,
                fail(format!("cannot reach DynamoDB: {}", item::brief(&e))),
            ),
            _ => (false, fail(format!("cannot read it: {}", item::brief(&e)))),
        })
    }

    /// Creates `table` as `infra/handles-table.json` describes (key schema, on-demand billing,
    /// TTL on `expires_at`) and waits until it is active. An existing table is left as it is.
    /// For tests and local stand-ins; deployments create the table with the template.
    ///
    /// # Errors
    ///
    /// [`HandleError::Unavailable`] when DynamoDB refuses or cannot be reached, or the table
    /// does not become active within 30 s.
    pub async fn create_table(client: &Client, table: &str) -> Result<(), HandleError> {
        let definition: serde_json::Value =
            serde_json::from_str(TABLE_DEFINITION).expect("infra/handles-table.json is JSON");
        let text = |v: &serde_json::Value, field: &str| -> String {
            v[field].as_str().unwrap_or_default().to_owned()
        };
        let mut request = client
            .create_table()
            .table_name(table)
            .billing_mode(BillingMode::from(text(&definition, "BillingMode").as_str()));
        let attributes = definition["AttributeDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                AttributeDefinition::builder()
                    .attribute_name(text(a, "AttributeName"))
                    .attribute_type(ScalarAttributeType::from(text(a, "AttributeType").as_str()))
                    .build()
                    .map_err(|e| HandleError::Invalid(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        request = request.set_attribute_definitions(Some(attributes.clone()));
        let key_schema = |keys: &serde_json::Value| -> Result<Vec<KeySchemaElement>, HandleError> {
            keys.as_array()
                .into_iter()
                .flatten()
                .map(|k| {
                    KeySchemaElement::builder()
                        .attribute_name(text(k, "AttributeName"))
                        .key_type(KeyType::from(text(k, "KeyType").as_str()))
                        .build()
                        .map_err(|e| HandleError::Invalid(e.to_string()))
                })
                .collect()
        };
        request = request.set_key_schema(Some(key_schema(&definition["KeySchema"])?));
        let mut indexes = Vec::new();
        for index in definition["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let projection = Projection::builder()
                .projection_type(ProjectionType::from(
                    text(&index["Projection"], "ProjectionType").as_str(),
                ))
                .build();
            indexes.push((
                text(index, "IndexName"),
                key_schema(&index["KeySchema"])?,
                projection,
            ));
        }
        for (name, keys, projection) in &indexes {
            request = request.global_secondary_indexes(
                GlobalSecondaryIndex::builder()
                    .index_name(name)
                    .set_key_schema(Some(keys.clone()))
                    .projection(projection.clone())
                    .build()
                    .map_err(|e| HandleError::Invalid(e.to_string()))?,
            );
        }
        let existed = match request.send().await {
            Ok(_) => false,
            Err(e)
                if e.as_service_error().and_then(|s| s.code())
                    == Some("ResourceInUseException") =>
            {
                true
            }
            Err(e) => return Err(unavailable("CreateTable", &e)),
        };
        let made = wait_until_active(client, table).await?;
        // A table made before an index existed in the definition gains it, as a deployed
        // stack's does on its next update.
        let missing = indexes.iter().filter(|(name, ..)| {
            existed
                && !made
                    .global_secondary_indexes()
                    .iter()
                    .any(|i| i.index_name() == Some(name.as_str()))
        });
        for (name, keys, projection) in missing {
            let action = CreateGlobalSecondaryIndexAction::builder()
                .index_name(name)
                .set_key_schema(Some(keys.clone()))
                .projection(projection.clone())
                .build()
                .map_err(|e| HandleError::Invalid(e.to_string()))?;
            client
                .update_table()
                .table_name(table)
                .set_attribute_definitions(Some(attributes.clone()))
                .global_secondary_index_updates(
                    GlobalSecondaryIndexUpdate::builder().create(action).build(),
                )
                .send()
                .await
                .map_err(|e| unavailable("UpdateTable", &e))?;
            wait_until_active(client, table).await?;
        }
        let ttl = &definition["TimeToLiveSpecification"];
        if ttl["Enabled"] == true {
            let spec = TimeToLiveSpecification::builder()
                .attribute_name(text(ttl, "AttributeName"))
                .enabled(true)
                .build()
                .map_err(|e| HandleError::Invalid(e.to_string()))?;
            match client
                .update_time_to_live()
                .table_name(table)
                .time_to_live_specification(spec)
                .send()
                .await
            {
                Ok(_) => {}
                // Already enabled (the table existed).
                Err(e)
                    if e.as_service_error().and_then(|s| s.code())
                        == Some("ValidationException") => {}
                Err(e) => return Err(unavailable("UpdateTimeToLive", &e)),
            }
        }
        Ok(())
    }

    /// A new handle's item: its attributes at version 1, under `write_id`.
    fn new_item(handle: &Handle, write_id: &str) -> Item {
        Item::from([
            (PK.to_owned(), s(partition_key(handle.id))),
            ("owner".to_owned(), s(&handle.owner)),
            ("kind".to_owned(), s(&handle.kind)),
            (
                OWNER_KIND.to_owned(),
                s(owner_kind(&handle.owner, &handle.kind)),
            ),
            ("data".to_owned(), s(handle.data.to_string())),
            ("version".to_owned(), n(1)),
            ("created_at".to_owned(), n(handle.created_at_ms)),
            ("expires_at".to_owned(), n(handle.expires_at_secs())),
            ("expires_at_ms".to_owned(), n(handle.expires_at_ms)),
            ("write_id".to_owned(), s(write_id)),
        ])
    }

    fn key(id: HandleId) -> (String, AttributeValue) {
        (PK.to_owned(), AttributeValue::S(partition_key(id)))
    }

    /// `create` under the quota: the handle's put and its owner's count for the window
    /// (`q#h#<window>#<sha256(owner)>`, expiring with the window) in one `TransactWriteItems`,
    /// both or neither. The write id is the transaction's idempotency token, so the SDK
    /// retrying a landed attempt succeeds.
    async fn create_counted(
        &self,
        handle: Handle,
        quota: CallerQuota,
        write_id: String,
        now: u64,
    ) -> Result<Handle, HandleError> {
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
        use aws_sdk_dynamodb::types::{Put, TransactWriteItem, Update};
        let invalid = |e: aws_sdk_dynamodb::error::BuildError| HandleError::Invalid(e.to_string());
        let (window, left) = quota.window_at(now);
        let mut write_id = write_id;
        // The owner's count is one item: two of its creates at once conflict, and DynamoDB
        // cancels one (`TransactionConflict`, which the SDK does not retry). Nothing of a
        // cancelled transaction was applied, so it is tried again, with a new write id.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let put = Put::builder()
                .table_name(self.table.as_ref())
                .set_item(Some(Self::new_item(&handle, &write_id)))
                .condition_expression("attribute_not_exists(pk)")
                .build()
                .map_err(invalid)?;
            let owner = CallerQuota::owner_digest(&handle.owner);
            let count = Update::builder()
                .table_name(self.table.as_ref())
                .key(PK, s(format!("q#h#{window}#{owner}")))
                .update_expression("ADD #n :one SET expires_at = :exp")
                .condition_expression("attribute_not_exists(#n) OR #n < :max")
                .expression_attribute_names("#n", "created")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":exp", n((now + left.as_millis() as u64) / 1000 + 60))
                .expression_attribute_values(":max", n(u64::from(quota.max)))
                .build()
                .map_err(invalid)?;
            // The same token again is idempotent for 10 minutes: a repeat of a transaction that
            // landed succeeds without applying it twice.
            let request = self
                .client
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(put).build())
                .transact_items(TransactWriteItem::builder().update(count).build())
                .client_request_token(write_id.clone());
            let sent = retry::send(&self.client, || request.clone().send()).await;
            let maybe_applied = sent.maybe_applied;
            let result = sent.result;
            let Err(e) = result else {
                return Ok(handle);
            };
            let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
                e.as_service_error()
            else {
                return Err(failure("TransactWriteItems", &e, maybe_applied));
            };
            let why = CountedCancel::of(cancelled);
            if why.over_quota {
                return Err(HandleError::over_quota(&quota, now));
            } else if why.item_exists {
                return Err(HandleError::Unavailable(
                    "a random handle id collided with an existing one; try again".into(),
                ));
            } else if !why.conflict || attempt == CONFLICT_ATTEMPTS {
                return Err(failure("TransactWriteItems", &e, maybe_applied));
            }
            conflict_pause(attempt).await;
            write_id = HandleId::random()?.to_string();
        }
    }
}

/// The partition key of a handle's item (the change feed reads handle versions by it).
pub(crate) fn partition_key(id: HandleId) -> String {
    format!("h#{id}")
}

/// The owner index's key of `owner`'s handles of `kind`. The kind's length first, so no two
/// (kind, owner) pairs spell the same key whatever bytes they hold.
fn owner_kind(owner: &str, kind: &str) -> String {
    format!("{}:{kind}:{owner}", kind.len())
}

/// Waits (30 s at most) until `table` and every index on it are active, and describes it.
async fn wait_until_active(
    client: &Client,
    table: &str,
) -> Result<aws_sdk_dynamodb::types::TableDescription, HandleError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| unavailable("DescribeTable", &e))?;
        if let Some(description) = out.table().filter(|t| {
            t.table_status() == Some(&TableStatus::Active)
                && t.global_secondary_indexes()
                    .iter()
                    .all(|i| i.index_status() == Some(&IndexStatus::Active))
        }) {
            return Ok(description.clone());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(HandleError::Unavailable(format!(
                "table {table} and its indexes did not become active within 30 s"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn now_ms() -> u64 {
    epoch_ms(SystemTime::now())
}

/// How many earlier write ids an item remembers (`w1` … `w15`).
const HISTORY: usize = 15;

/// An update's expression: the new data, version and expiry, its `write_id`, and the write ids
/// before it moved down one place (`w1` … `w15`; every operand reads the item as it was).
const HISTORY_SHIFT_UPDATE: &str = "SET #data = :data, #version = #version + :one, \
     expires_at = :exp, expires_at_ms = :exp_ms, w15 = if_not_exists(w14, :none), w14 = if_not_exists(w13, :none), w13 = if_not_exists(w12, :none), w12 = if_not_exists(w11, :none), w11 = if_not_exists(w10, :none), w10 = if_not_exists(w9, :none), w9 = if_not_exists(w8, :none), w8 = if_not_exists(w7, :none), w7 = if_not_exists(w6, :none), w6 = if_not_exists(w5, :none), w5 = if_not_exists(w4, :none), w4 = if_not_exists(w3, :none), w3 = if_not_exists(w2, :none), w2 = if_not_exists(w1, :none), \
     w1 = if_not_exists(write_id, :none), write_id = :wid";

/// The write ids an item remembers, newest first: `write_id`, then `w1` … `w15`.
fn write_history(item: &Item) -> Vec<&str> {
    std::iter::once("write_id".to_owned())
        .chain((1..=HISTORY).map(|i| format!("w{i}")))
        .filter_map(|name| item::text(item, &name))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The version an update's write id says it made (`<version>:<uuid>`); `None` for other ids
/// (creates, touches' absence, ids written before the tag existed).
fn version_of(write_id: &str) -> Option<u64> {
    write_id.split_once(':')?.0.parse().ok()
}

/// A stored item as a handle, plus its `write_id`.
fn parse(item: &Item) -> Result<(Handle, Option<String>), HandleError> {
    let text = |name: &str| item::text(item, name).ok_or_else(|| corrupt(name));
    let number = |name: &str| item::number(item, name).ok_or_else(|| corrupt(name));
    let id = text(PK)?
        .strip_prefix("h#")
        .and_then(|id| id.parse::<HandleId>().ok())
        .ok_or_else(|| corrupt(PK))?;
    let data = serde_json::from_str(text("data")?).map_err(|_| corrupt("data"))?;
    let handle = Handle {
        id,
        owner: text("owner")?.to_owned(),
        kind: text("kind")?.to_owned(),
        data,
        version: number("version")?,
        created_at_ms: number("created_at")?,
        expires_at_ms: number("expires_at_ms")?,
    };
    let write_id = text("write_id").ok().map(str::to_owned);
    Ok((handle, write_id))
}

fn corrupt(attribute: &str) -> HandleError {
    tracing::error!(attribute, "a handle item in DynamoDB is malformed");
    HandleError::Unavailable(format!(
        "a stored handle is malformed (attribute {attribute})"
    ))
}

/// Whether `item` is a deleted handle's tombstone.
fn is_tombstone(item: &Item) -> bool {
    matches!(item.get(DELETED), Some(AttributeValue::Bool(true)))
}

/// The old item of a failed conditional write, if it is a live handle of `owner` (not expired,
/// not a tombstone).
fn live_old(
    item: Option<&Item>,
    owner: &str,
    now: u64,
) -> Result<Option<(Handle, Option<String>)>, HandleError> {
    let Some(item) = item.filter(|i| !is_tombstone(i)) else {
        return Ok(None);
    };
    let (handle, write_id) = parse(item)?;
    Ok((handle.owner == owner && handle.expires_at_ms > now).then_some((handle, write_id)))
}

/// A failed SDK call as [`HandleError`]. A read (`attempts` is `None`) or a write no attempt of
/// which can have landed: bad requests are `Invalid`, everything else (timeouts, unreachable
/// endpoint, throttling after every retry, missing table, no permission) is
/// `Unavailable`, with the cause for the logs. A write some attempt of which may have landed is
/// `Indeterminate`.
/// Why DynamoDB cancelled a counted create (the item's `Put` first, the count's `Update` second).
pub(crate) struct CountedCancel {
    /// The item already exists.
    pub(crate) item_exists: bool,
    /// The owner's count is at its quota.
    pub(crate) over_quota: bool,
    /// Another transaction on the same items: nothing was applied, try again.
    pub(crate) conflict: bool,
}

impl CountedCancel {
    pub(crate) fn of(
        cancelled: &aws_sdk_dynamodb::types::error::TransactionCanceledException,
    ) -> Self {
        let reasons = cancelled.cancellation_reasons();
        let failed =
            |at: usize| reasons.get(at).and_then(|r| r.code()) == Some("ConditionalCheckFailed");
        Self {
            item_exists: failed(0),
            over_quota: failed(1),
            conflict: reasons
                .iter()
                .any(|r| r.code() == Some("TransactionConflict")),
        }
    }
}

fn failure<E, R>(operation: &str, error: &SdkError<E, R>, maybe_applied: bool) -> HandleError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    if maybe_applied {
        return indeterminate(operation, error);
    }
    unavailable(operation, error)
}

fn indeterminate<E, R>(operation: &str, error: &SdkError<E, R>) -> HandleError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    HandleError::Indeterminate(format!(
        "DynamoDB {operation} was sent and its answer lost: {}",
        item::brief(error)
    ))
}

/// A failed SDK call that certainly changed nothing, as [`HandleError`].
fn unavailable<E, R>(operation: &str, error: &SdkError<E, R>) -> HandleError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    match item::failure(error) {
        Failure::Timeout => HandleError::Unavailable(format!(
            "DynamoDB {operation} did not complete within the configured timeout"
        )),
        Failure::Unreachable => HandleError::Unavailable(format!(
            "cannot reach DynamoDB for {operation}: {}",
            item::brief(error)
        )),
        Failure::Refused { message } => {
            HandleError::Invalid(format!("DynamoDB refused {operation}: {message}"))
        }
        Failure::Service { code, message } => {
            HandleError::Unavailable(format!("DynamoDB {operation}: {code}: {message}"))
        }
        Failure::Other => HandleError::Unavailable(format!(
            "DynamoDB {operation} failed: {}",
            item::brief(error)
        )),
    }
}

impl HandleStore for DynamoDbHandleStore {
    fn create<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        async move {
            validate(owner, Some(kind), Some(&data), ttl)?;
            let id = HandleId::random()?;
            let write_id = HandleId::random()?.to_string();
            let now = now_ms();
            let handle = Handle::created(id, owner, kind, data, now, ttl);
            if let Some(quota) = self.quota.filter(|_| CallerQuota::counts(owner)) {
                return self.create_counted(handle, quota, write_id, now).await;
            }
            let request = self
                .client
                .put_item()
                .table_name(self.table.as_ref())
                .set_item(Some(Self::new_item(&handle, &write_id)))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            let sent = retry::send(&self.client, || request.clone().send()).await;
            let maybe_applied = sent.maybe_applied;
            let result = sent.result;
            let Err(e) = result else {
                return Ok(handle);
            };
            use aws_sdk_dynamodb::operation::put_item::PutItemError;
            let Some(PutItemError::ConditionalCheckFailedException(c)) = e.as_service_error()
            else {
                return Err(failure("PutItem", &e, maybe_applied));
            };
            if c.item().and_then(|i| item::text(i, "write_id")) == Some(write_id.as_str()) {
                // A repeat of a put whose first attempt had already landed.
                Ok(handle)
            } else {
                // Nobody else knows a fresh id, so no earlier attempt of this call is there.
                Err(HandleError::Unavailable(
                    "a random handle id collided with an existing one; try again".into(),
                ))
            }
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        async move {
            if owner.is_empty() {
                return Err(HandleError::NotFound);
            }
            let (pk, pk_value) = Self::key(id);
            let request = self
                .client
                .get_item()
                .table_name(self.table.as_ref())
                .key(pk, pk_value)
                .consistent_read(true);
            let out = retry::send(&self.client, || request.clone().send())
                .await
                .result
                .map_err(|e| failure("GetItem", &e, false))?;
            let Some(item) = out.item().filter(|i| !is_tombstone(i)) else {
                return Err(HandleError::NotFound);
            };
            let (handle, _) = parse(item)?;
            if handle.owner != owner || handle.expires_at_ms <= now_ms() {
                return Err(HandleError::NotFound);
            }
            Ok(handle)
        }
        .boxed()
    }

    fn update<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        expected_version: u64,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        async move {
            validate(owner, None, Some(&data), ttl)?;
            // Tagged with the version it makes, so the history tells whose write took it.
            let made = expected_version.saturating_add(1);
            let write_id = format!("{made}:{}", HandleId::random()?);
            let now = now_ms();
            let expires_at_ms = expiry_ms(now, ttl);
            let (pk, pk_value) = Self::key(id);
            let request = self
                .client
                .update_item()
                .table_name(self.table.as_ref())
                .key(pk, pk_value)
                .update_expression(HISTORY_SHIFT_UPDATE)
                .condition_expression(
                    "#owner = :owner AND expires_at_ms > :now AND attribute_not_exists(#deleted) \
                     AND #version = :expected",
                )
                .expression_attribute_names("#data", "data")
                .expression_attribute_names("#version", "version")
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_names("#deleted", DELETED)
                .expression_attribute_values(":data", s(data.to_string()))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":exp", n(expires_at_ms.div_ceil(1000)))
                .expression_attribute_values(":exp_ms", n(expires_at_ms))
                .expression_attribute_values(":wid", s(write_id.clone()))
                .expression_attribute_values(":none", s(""))
                .expression_attribute_values(":owner", s(owner))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":expected", n(expected_version))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            let sent = retry::send(&self.client, || request.clone().send()).await;
            let maybe_applied = sent.maybe_applied;
            let result = sent.result;
            let e = match result {
                Ok(out) => {
                    let item = out
                        .attributes()
                        .ok_or_else(|| corrupt("(UpdateItem returned no attributes)"))?;
                    return Ok(parse(item)?.0);
                }
                Err(e) => e,
            };
            use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
            let Some(UpdateItemError::ConditionalCheckFailedException(c)) = e.as_service_error()
            else {
                return Err(failure("UpdateItem", &e, maybe_applied));
            };
            let history = c.item().map(write_history).unwrap_or_default();
            match live_old(c.item(), owner, now)? {
                // An earlier attempt of this call landed (the SDK's retry, or a repeat, met it),
                // perhaps with other writes after it: done, once.
                Some((handle, _)) if history.contains(&write_id.as_str()) => Ok(handle),
                // The version this write would have made is another write's: none of its
                // attempts landed, and none can any more. A true conflict.
                Some((handle, _))
                    if !maybe_applied || history.iter().any(|w| version_of(w) == Some(made)) =>
                {
                    Err(HandleError::Conflict {
                        current_version: handle.version,
                    })
                }
                // An earlier attempt may have landed and been changed or deleted since, further
                // back than the history reaches: the item cannot tell, and a "conflict" would
                // invite the caller to apply it again.
                _ if maybe_applied => Err(indeterminate("UpdateItem", &e)),
                None => Err(HandleError::NotFound),
                Some((handle, _)) => Err(HandleError::Conflict {
                    current_version: handle.version,
                }),
            }
        }
        .boxed()
    }

    fn touch<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>> {
        async move {
            validate(owner, None, None, ttl)?;
            let now = now_ms();
            let expires_at_ms = expiry_ms(now, ttl);
            let (pk, pk_value) = Self::key(id);
            let request = self
                .client
                .update_item()
                .table_name(self.table.as_ref())
                .key(pk, pk_value)
                // The version moves too: a write issued before this touch (one whose answer was
                // lost, possibly still on its way) can no longer land.
                .update_expression(
                    "SET expires_at = :exp, expires_at_ms = :exp_ms, #version = #version + :one",
                )
                .condition_expression(
                    "#owner = :owner AND expires_at_ms > :now AND attribute_not_exists(#deleted)",
                )
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_names("#deleted", DELETED)
                .expression_attribute_names("#version", "version")
                .expression_attribute_values(":exp", n(expires_at_ms.div_ceil(1000)))
                .expression_attribute_values(":exp_ms", n(expires_at_ms))
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":owner", s(owner))
                .expression_attribute_values(":now", n(now))
                .return_values(ReturnValue::AllNew);
            let sent = retry::send(&self.client, || request.clone().send()).await;
            let maybe_applied = sent.maybe_applied;
            match sent.result {
                Ok(out) => {
                    let item = out
                        .attributes()
                        .ok_or_else(|| corrupt("(UpdateItem returned no attributes)"))?;
                    Ok(parse(item)?.0)
                }
                // A touch repeated after a landed attempt meets the same condition, so a failed
                // condition means the handle is gone (or never was this owner's) either way.
                Err(e) => match e.as_service_error() {
                    Some(err) if err.is_conditional_check_failed_exception() => {
                        Err(HandleError::NotFound)
                    }
                    _ => Err(failure("UpdateItem", &e, maybe_applied)),
                },
            }
        }
        .boxed()
    }

    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<(), HandleError>> {
        async move {
            if owner.is_empty() {
                return Err(HandleError::NotFound);
            }
            let write_id = HandleId::random()?.to_string();
            let now = now_ms();
            let tombstone_expires_ms = expiry_ms(now, TOMBSTONE_TTL);
            let (pk, pk_value) = Self::key(id);
            // A tombstone rather than DeleteItem: a retried attempt finds its own write_id.
            let mut request = self
                .client
                .update_item()
                .table_name(self.table.as_ref())
                .key(pk, pk_value)
                // Without its owner key the tombstone leaves the owner index.
                .update_expression(
                    "SET #deleted = :true, write_id = :wid, expires_at = :exp, \
                     expires_at_ms = :exp_ms REMOVE #data, owner_kind",
                )
                .expression_attribute_names("#deleted", DELETED)
                .expression_attribute_names("#data", "data")
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_values(":true", AttributeValue::Bool(true))
                .expression_attribute_values(":wid", s(write_id.clone()))
                .expression_attribute_values(":exp", n(tombstone_expires_ms.div_ceil(1000)))
                .expression_attribute_values(":exp_ms", n(tombstone_expires_ms))
                .expression_attribute_values(":owner", s(owner))
                .expression_attribute_values(":now", n(now))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
            const LIVE: &str =
                "#owner = :owner AND expires_at_ms > :now AND attribute_not_exists(#deleted)";
            request = match expected_version {
                Some(version) => request
                    .condition_expression(format!("{LIVE} AND #version = :expected"))
                    .expression_attribute_names("#version", "version")
                    .expression_attribute_values(":expected", n(version)),
                None => request.condition_expression(LIVE),
            };
            let sent = retry::send(&self.client, || request.clone().send()).await;
            let maybe_applied = sent.maybe_applied;
            let result = sent.result;
            let Err(e) = result else {
                return Ok(());
            };
            use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
            let Some(UpdateItemError::ConditionalCheckFailedException(c)) = e.as_service_error()
            else {
                return Err(failure("UpdateItem (delete)", &e, maybe_applied));
            };
            let old = c.item();
            if let Some(item) = old.filter(|i| is_tombstone(i)) {
                return if item::text(item, "owner") == Some(owner)
                    && item::text(item, "write_id") == Some(write_id.as_str())
                {
                    // A repeat of a delete whose first attempt had already landed.
                    Ok(())
                } else {
                    Err(HandleError::NotFound)
                };
            }
            // A tombstone is final (no write applies to one), so when the old item is not this
            // call's tombstone, no attempt of this call landed: the answer is certain.
            match live_old(old, owner, now)? {
                None => Err(HandleError::NotFound),
                Some((handle, _)) => Err(HandleError::Conflict {
                    current_version: handle.version,
                }),
            }
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        after: Option<ListPosition>,
        limit: usize,
    ) -> BoxFuture<'a, Result<HandlePage, HandleError>> {
        async move {
            validate_list(owner, kind, limit)?;
            let now = now_ms();
            let listed = owner_kind(owner, kind);
            let start = after.map(|position| {
                Item::from([
                    (PK.to_owned(), s(partition_key(position.id))),
                    (OWNER_KIND.to_owned(), s(&listed)),
                    ("created_at".to_owned(), n(position.created_at_ms)),
                ])
            });
            let request = self
                .client
                .query()
                .table_name(self.table.as_ref())
                .index_name(OWNER_INDEX)
                .key_condition_expression("#listed = :listed")
                .filter_expression("expires_at_ms > :now AND attribute_not_exists(#deleted)")
                .expression_attribute_names("#listed", OWNER_KIND)
                .expression_attribute_names("#deleted", DELETED)
                .expression_attribute_values(":listed", s(&listed))
                .expression_attribute_values(":now", n(now))
                .scan_index_forward(false)
                .limit(i32::try_from(limit).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start);
            let out = retry::send(&self.client, || request.clone().send())
                .await
                .result
                .map_err(|e| self.list_failure(&e))?;
            let mut handles = Vec::with_capacity(out.items().len());
            for item in out.items() {
                let (handle, _) = parse(item)?;
                // The key says so already; a hand-edited item must not leak another's handle.
                if handle.owner == owner && handle.kind == kind {
                    handles.push(handle);
                }
            }
            let next = match out.last_evaluated_key() {
                None => None,
                Some(key) => Some(ListPosition {
                    id: item::text(key, PK)
                        .and_then(|pk| pk.strip_prefix("h#"))
                        .and_then(|id| id.parse().ok())
                        .ok_or_else(|| corrupt("(Query's LastEvaluatedKey pk)"))?,
                    created_at_ms: item::number(key, "created_at")
                        .ok_or_else(|| corrupt("(Query's LastEvaluatedKey created_at)"))?,
                }),
            };
            Ok(HandlePage { handles, next })
        }
        .boxed()
    }
}

impl DynamoDbHandleStore {
    /// A failed page read, as [`HandleError`]: a table without the owner index says which.
    fn list_failure<R: fmt::Debug>(
        &self,
        error: &SdkError<aws_sdk_dynamodb::operation::query::QueryError, R>,
    ) -> HandleError {
        let message = error.as_service_error().and_then(|e| e.message());
        if error.as_service_error().and_then(|e| e.code()) == Some("ValidationException")
            && message.is_some_and(|m| m.contains("index"))
        {
            tracing::warn!(
                table = %self.table,
                "the handles table has no owner index, so handles cannot be listed"
            );
            return HandleError::Unavailable(format!(
                "table {} has no index {OWNER_INDEX}: add it as infra/handles-table.json \
                 defines it (redeploying the template does)",
                self.table
            ));
        }
        failure("Query", error, false)
    }
}
