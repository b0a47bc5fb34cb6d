//! The one DynamoDB table the stores share: handles, tasks and the change feed keep their items
//! side by side in the table of `infra/handles-table.json`, and this is the plumbing they share
//! — the client and the table's name ([`Table`]), the item keys, creating the table and warming
//! its connection, the counted creates' quota item and the one way a transaction is tried again
//! when a concurrent one cancelled it.
//!
//! | `pk` | item | written by |
//! |---|---|---|
//! | `h#<uuid>` | a handle | `handles/dynamodb/` |
//! | `t#<uuid>` | a task | `tasks/dynamodb/` |
//! | `q#h#<window>#<owner digest>`, `q#t#…` | one owner's count of creations in a quota window | the counted creates of both |
//! | `l#<list>`, `l#<list>#<copy>`, `r#<uri>` | a list's or a resource's version | `listen/dynamodb.rs` |
//!
//! Each store reads and writes only its own items; the feed reads the others' (a handle's
//! `write_id`, a task's view) through the keys written here.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{BuildError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::get_item::builders::GetItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::transact_write_items::{
    TransactWriteItemsError, TransactWriteItemsOutput, builders::TransactWriteItemsFluentBuilder,
};
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, IndexStatus, KeySchemaElement, KeyType, Projection, ProjectionType,
    Put, ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableDescription, TableStatus,
    TimeToLiveSpecification, TransactWriteItem, Update,
};

use super::item::{self, Item, n, s};
use super::retry::{self, Sent};
use super::{AwsTimeouts, TableError};

/// The table definition, as CloudFormation `AWS::DynamoDB::Table` properties: the one copy in
/// `infra/handles-table.json`, used by `Table::create` (tests, local development) and by the
/// deployment template.
pub const TABLE_DEFINITION: &str = include_str!("../../infra/handles-table.json");

/// The owner index (`infra/handles-table.json`): one owner's handles of one kind, newest first.
pub const OWNER_INDEX: &str = "by-owner";

/// The partition key attribute of every item.
pub(crate) const PK: &str = "pk";

/// The key of a handle's item.
pub(crate) fn handle_key(id: impl fmt::Display) -> String {
    format!("h#{id}")
}

/// The key of a task's item.
pub(crate) fn task_key(id: impl fmt::Display) -> String {
    format!("t#{id}")
}

/// Whose creations a quota item counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Counted {
    Handles,
    Tasks,
}

/// The key of the item counting one owner's (`owner_digest`) creations in quota window `window`.
fn quota_key(counted: Counted, window: u64, owner_digest: &str) -> String {
    let of = match counted {
        Counted::Handles => 'h',
        Counted::Tasks => 't',
    };
    format!("q#{of}#{window}#{owner_digest}")
}

/// The owner's count a counted create raises ([`Table::create_counted`]): its item's key
/// (`q#<kind>#<window>#<owner digest>`), the most it may reach, and when the item goes (epoch
/// seconds for the TTL sweep: a minute after its window ends).
#[derive(Debug, Clone)]
pub(crate) struct Count {
    key: String,
    max: u64,
    expires_at: u64,
}

impl Count {
    /// The count of `counted` for the owner whose digest is `owner_digest`, in the window
    /// `window` that ends `window_left` after `now_ms`, at most `max`.
    pub(crate) fn new(
        counted: Counted,
        owner_digest: &str,
        window: u64,
        window_left: Duration,
        now_ms: u64,
        max: u32,
    ) -> Self {
        Self {
            key: quota_key(counted, window, owner_digest),
            max: u64::from(max),
            expires_at: (now_ms + window_left.as_millis() as u64).div_ceil(1000) + 60,
        }
    }
}

/// The key of copy `copy` of the feed's item for the list `list` (copy 0 has no suffix).
pub(crate) fn list_key(list: &str, copy: usize) -> String {
    match copy {
        0 => format!("l#{list}"),
        copy => format!("l#{list}#{copy}"),
    }
}

/// The key of the feed's item for the resource `uri`.
pub(crate) fn resource_key(uri: &str) -> String {
    format!("r#{uri}")
}

/// The shared table: a client (its connections, its meter, no SDK retries) and the table's name
/// or ARN. Clones share the client.
#[derive(Clone)]
pub(crate) struct Table {
    client: Client,
    name: Arc<str>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl Table {
    /// `name` (a table name or an ARN) through `client`. Makes no request.
    pub(crate) fn new(client: Client, name: impl Into<String>) -> Self {
        Self {
            client,
            name: Arc::from(name.into()),
        }
    }

    /// `name` through the process's one shared client (`aws::shared_config`, one connection
    /// pool for every store), for `store`. Makes no request.
    ///
    /// # Errors
    ///
    /// [`TableError`] when the environment names no AWS region.
    pub(crate) async fn open(
        store: &'static str,
        name: &str,
        timeouts: &AwsTimeouts,
    ) -> Result<Self, TableError> {
        let sdk = super::regional_config(timeouts, store, name).await?;
        Ok(Self::new(super::dynamodb_client(&sdk), name))
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// One request (`|| request.clone().send()`) under the crate's retry policy.
    pub(crate) async fn send<T, E, F, Fut>(&self, send: F) -> Sent<T, E>
    where
        E: ProvideErrorMetadata,
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    {
        retry::send(&self.client, send).await
    }

    /// [`send`](Self::send) where whether a failed attempt landed is no question (a read, or a
    /// write whose condition or token tells it): the answer alone.
    pub(crate) async fn answer<T, E, F, Fut>(&self, send: F) -> Result<T, SdkError<E, HttpResponse>>
    where
        E: ProvideErrorMetadata,
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    {
        self.send(send).await.result
    }

    /// Reads one item that never exists (`pk = "h#warm-up"`) for `store`: checks that the table
    /// exists, that its key is the string `pk` of `infra/handles-table.json`, and that this
    /// role may read it, and leaves a warm connection in the client's pool, so the first
    /// request does not pay for the TCP and TLS handshakes.
    ///
    /// A `GetItem` rather than `DescribeTable`, so the function's role needs nothing beyond the
    /// item operations it uses anyway. A failure says whether it is the endpoint being away
    /// (`true`: timeout, connection refused) rather than a configuration mistake.
    pub(crate) async fn warm_up(&self, store: &'static str) -> Result<(), (bool, TableError)> {
        let fail = |reason: String| TableError::new(store, self.name(), reason);
        let request = self
            .client
            .get_item()
            .table_name(self.name())
            .key(PK, s(handle_key("warm-up")));
        let Err(e) = self.send(|| request.clone().send()).await.result else {
            return Ok(());
        };
        let message = || e.as_service_error().and_then(|s| s.message()).unwrap_or("");
        Err(match (&e, e.as_service_error().and_then(|s| s.code())) {
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
                    message()
                )),
            ),
            (_, Some("AccessDeniedException")) => (
                false,
                fail(format!(
                    "this role may not read it: allow dynamodb:GetItem, PutItem and UpdateItem \
                     on the table ({})",
                    message()
                )),
            ),
            (SdkError::TimeoutError(_) | SdkError::DispatchFailure(_), _) => (
                true,
                fail(format!("cannot reach DynamoDB: {}", item::brief(&e))),
            ),
            _ => (false, fail(format!("cannot read it: {}", item::brief(&e)))),
        })
    }

    /// An `UpdateItem` of the item at `key`.
    pub(crate) fn update_item(&self, key: String) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(self.name())
            .key(PK, s(key))
    }

    /// A strongly consistent `GetItem` of the item at `key`.
    pub(crate) fn get_item(&self, key: String) -> GetItemFluentBuilder {
        self.client
            .get_item()
            .table_name(self.name())
            .key(PK, s(key))
            .consistent_read(true)
    }

    /// A `PutItem` of `item` only if its key is new, answering the item in the way otherwise.
    pub(crate) fn put_new(&self, item: Item) -> PutItemFluentBuilder {
        self.put_if(PutIf::New, item)
    }

    /// A `PutItem` of `item` under `put_if`, answering the item in the way otherwise.
    pub(crate) fn put_if(&self, put_if: PutIf, item: Item) -> PutItemFluentBuilder {
        self.client
            .put_item()
            .table_name(self.name())
            .set_item(Some(item))
            .condition_expression(put_if.expression())
            .set_expression_attribute_names(put_if.names())
            .set_expression_attribute_values(put_if.values())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// A counted create in one `TransactWriteItems`, both or neither: the item `item` makes for
    /// a write id, put only if its key is new, and `count`'s item one more, refused at its
    /// most. The write id is the transaction's idempotency token (a repeat of one that landed
    /// succeeds without applying it twice, for 10 minutes); a transaction cancelled for a
    /// conflict alone (two of one owner's creates at once: its count is one item) is tried
    /// again as [`transact`](Self::transact) says, with a new one from `new_write_id`. What
    /// DynamoDB refused is the caller's to read ([`Cancellation::of`]: the put first, the count
    /// second).
    ///
    /// # Errors
    ///
    /// What `new_write_id` fails with, or a write that cannot be built, through `invalid`.
    pub(crate) async fn create_counted<E>(
        &self,
        item: impl Fn(&str) -> Item,
        count: &Count,
        write_id: String,
        new_write_id: impl FnMut() -> Result<String, E>,
        invalid: impl Fn(BuildError) -> E,
    ) -> Result<Sent<TransactWriteItemsOutput, TransactWriteItemsError>, E> {
        self.create_counted_if(PutIf::New, item, count, write_id, new_write_id, invalid)
            .await
    }

    /// [`create_counted`](Self::create_counted) whose put is conditioned by `put_if`.
    pub(crate) async fn create_counted_if<E>(
        &self,
        put_if: PutIf,
        item: impl Fn(&str) -> Item,
        count: &Count,
        write_id: String,
        mut new_write_id: impl FnMut() -> Result<String, E>,
        invalid: impl Fn(BuildError) -> E,
    ) -> Result<Sent<TransactWriteItemsOutput, TransactWriteItemsError>, E> {
        let mut write_id = write_id;
        self.transact(|attempt| {
            if attempt > 1 {
                write_id = new_write_id()?;
            }
            let put = Put::builder()
                .table_name(self.name())
                .set_item(Some(item(&write_id)))
                .condition_expression(put_if.expression())
                .set_expression_attribute_names(put_if.names())
                .set_expression_attribute_values(put_if.values())
                .build()
                .map_err(&invalid)?;
            let update = Update::builder()
                .table_name(self.name())
                .key(PK, s(count.key.clone()))
                .update_expression("ADD #n :one SET expires_at = :exp")
                .condition_expression("attribute_not_exists(#n) OR #n < :max")
                .expression_attribute_names("#n", "created")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":exp", n(count.expires_at))
                .expression_attribute_values(":max", n(count.max))
                .build()
                .map_err(&invalid)?;
            Ok(self
                .client()
                .transact_write_items()
                .transact_items(TransactWriteItem::builder().put(put).build())
                .transact_items(TransactWriteItem::builder().update(update).build())
                .client_request_token(write_id.clone()))
        })
        .await
    }

    /// Sends the transaction `build` makes (given the attempt, from 1), under the retry policy,
    /// and builds and sends it again while DynamoDB cancels it for a concurrent transaction on
    /// the same items alone (`TransactionConflict`, which nothing else retries: nothing of a
    /// cancelled transaction was applied), [`retry::CONFLICT_ATTEMPTS`] times at most with a
    /// short random pause between. The last answer is the caller's to read
    /// ([`Cancellation::of`]).
    ///
    /// # Errors
    ///
    /// What `build` fails with.
    pub(crate) async fn transact<E>(
        &self,
        mut build: impl FnMut(u32) -> Result<TransactWriteItemsFluentBuilder, E>,
    ) -> Result<Sent<TransactWriteItemsOutput, TransactWriteItemsError>, E> {
        let mut attempt = 1;
        loop {
            let request = build(attempt)?;
            let sent = self.send(|| request.clone().send()).await;
            let conflict_alone = sent
                .result
                .as_ref()
                .err()
                .and_then(Cancellation::of)
                .is_some_and(|why| why.conflict && !why.first_refused && !why.second_refused);
            if !conflict_alone || attempt == retry::CONFLICT_ATTEMPTS {
                return Ok(sent);
            }
            retry::conflict_pause(attempt).await;
            attempt += 1;
        }
    }
}

/// When a put may land.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PutIf {
    /// Only on a new key.
    New,
    /// On a new key, or over the dead item read at `version` (a tombstone, or past its
    /// `expires_at_ms` at `now_ms`): a keyed handle made again at its derived id. A put, not
    /// a `DeleteItem` and a put, so the role needs no `DeleteItem` and no moment passes with
    /// the key free.
    NewOrDead {
        /// The dead item's version, as read.
        version: u64,
        /// Now, in epoch milliseconds.
        now_ms: u64,
    },
}

impl PutIf {
    fn expression(self) -> &'static str {
        match self {
            Self::New => "attribute_not_exists(pk)",
            Self::NewOrDead { .. } => {
                "attribute_not_exists(pk) OR (#version = :dead_version AND \
                 (attribute_exists(#deleted) OR expires_at_ms <= :now))"
            }
        }
    }

    fn names(self) -> Option<HashMap<String, String>> {
        match self {
            Self::New => None,
            Self::NewOrDead { .. } => Some(HashMap::from([
                ("#version".to_owned(), "version".to_owned()),
                ("#deleted".to_owned(), "deleted".to_owned()),
            ])),
        }
    }

    fn values(self) -> Option<Item> {
        match self {
            Self::New => None,
            Self::NewOrDead { version, now_ms } => Some(Item::from([
                (":dead_version".to_owned(), n(version)),
                (":now".to_owned(), n(now_ms)),
            ])),
        }
    }
}

/// Why DynamoDB cancelled a transaction: a counted create's is the item's `Put` first and the
/// quota's `Update` second.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cancellation {
    /// The first write's condition failed (a counted create: the item already exists).
    pub(crate) first_refused: bool,
    /// The second write's condition failed (a counted create: the owner is at the quota).
    pub(crate) second_refused: bool,
    /// Another transaction on the same items: nothing was applied.
    pub(crate) conflict: bool,
}

impl Cancellation {
    /// Why `error` cancelled a transaction; `None` when it is not a cancellation.
    pub(crate) fn of(error: &SdkError<TransactWriteItemsError, HttpResponse>) -> Option<Self> {
        let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) =
            error.as_service_error()
        else {
            return None;
        };
        let reasons = cancelled.cancellation_reasons();
        let failed =
            |at: usize| reasons.get(at).and_then(|r| r.code()) == Some("ConditionalCheckFailed");
        Some(Self {
            first_refused: failed(0),
            second_refused: failed(1),
            conflict: reasons
                .iter()
                .any(|r| r.code() == Some("TransactionConflict")),
        })
    }
}

/// Creates `table` as `infra/handles-table.json` describes (key schema, the owner index,
/// on-demand billing, TTL on `expires_at`) and waits until it is active; an existing table
/// gains an index the definition has and it lacks. For tests and local stand-ins; deployments
/// create the table with the template.
///
/// # Errors
///
/// [`TableError`] when DynamoDB refuses or cannot be reached, or the table does not become
/// active within 30 s.
pub(crate) async fn create(
    client: &Client,
    table: &str,
    store: &'static str,
) -> Result<(), TableError> {
    let fail = |reason: String| TableError::new(store, table, reason);
    let sdk_failed =
        |operation: &str, e: &dyn fmt::Display| fail(format!("DynamoDB {operation}: {e}"));
    let invalid = |e: BuildError| fail(e.to_string());
    let definition: serde_json::Value =
        serde_json::from_str(TABLE_DEFINITION).expect("infra/handles-table.json is JSON");
    let text = |v: &serde_json::Value, field: &str| -> String {
        v[field].as_str().unwrap_or_default().to_owned()
    };
    let list = |v: &serde_json::Value| v.as_array().cloned().unwrap_or_default();
    let attributes = list(&definition["AttributeDefinitions"])
        .iter()
        .map(|a| {
            AttributeDefinition::builder()
                .attribute_name(text(a, "AttributeName"))
                .attribute_type(ScalarAttributeType::from(text(a, "AttributeType").as_str()))
                .build()
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    let key_schema = |keys: &serde_json::Value| -> Result<Vec<KeySchemaElement>, BuildError> {
        list(keys)
            .iter()
            .map(|k| {
                KeySchemaElement::builder()
                    .attribute_name(text(k, "AttributeName"))
                    .key_type(KeyType::from(text(k, "KeyType").as_str()))
                    .build()
            })
            .collect()
    };
    let mut indexes = Vec::new();
    for index in list(&definition["GlobalSecondaryIndexes"]) {
        let projection = Projection::builder()
            .projection_type(ProjectionType::from(
                text(&index["Projection"], "ProjectionType").as_str(),
            ))
            .build();
        let keys = key_schema(&index["KeySchema"]).map_err(invalid)?;
        indexes.push((text(&index, "IndexName"), keys, projection));
    }
    let mut request = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::from(text(&definition, "BillingMode").as_str()))
        .set_attribute_definitions(Some(attributes.clone()))
        .set_key_schema(Some(key_schema(&definition["KeySchema"]).map_err(invalid)?));
    for (name, keys, projection) in &indexes {
        request = request.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(name)
                .set_key_schema(Some(keys.clone()))
                .projection(projection.clone())
                .build()
                .map_err(invalid)?,
        );
    }
    let existed = match request.send().await {
        Ok(_) => false,
        Err(e) if e.as_service_error().and_then(|s| s.code()) == Some("ResourceInUseException") => {
            true
        }
        Err(e) => return Err(sdk_failed("CreateTable", &item::brief(&e))),
    };
    let made = wait_until_active(client, table).await.map_err(fail)?;
    // A table made before an index existed in the definition gains it, as a deployed stack's
    // does on its next update.
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
            .map_err(invalid)?;
        client
            .update_table()
            .table_name(table)
            .set_attribute_definitions(Some(attributes.clone()))
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder().create(action).build(),
            )
            .send()
            .await
            .map_err(|e| sdk_failed("UpdateTable", &item::brief(&e)))?;
        wait_until_active(client, table).await.map_err(fail)?;
    }
    let ttl = &definition["TimeToLiveSpecification"];
    if ttl["Enabled"] == true {
        let spec = TimeToLiveSpecification::builder()
            .attribute_name(text(ttl, "AttributeName"))
            .enabled(true)
            .build()
            .map_err(invalid)?;
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
                if e.as_service_error().and_then(|s| s.code()) == Some("ValidationException") => {}
            Err(e) => return Err(sdk_failed("UpdateTimeToLive", &item::brief(&e))),
        }
    }
    Ok(())
}

/// Waits (30 s at most) until `table` and every index on it are active, and describes it.
async fn wait_until_active(client: &Client, table: &str) -> Result<TableDescription, String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let out = client
            .describe_table()
            .table_name(table)
            .send()
            .await
            .map_err(|e| format!("DynamoDB DescribeTable: {}", item::brief(&e)))?;
        if let Some(description) = out.table().filter(|t| {
            t.table_status() == Some(&TableStatus::Active)
                && t.global_secondary_indexes()
                    .iter()
                    .all(|i| i.index_status() == Some(&IndexStatus::Active))
        }) {
            return Ok(description.clone());
        }
        if tokio::time::Instant::now() > deadline {
            return Err("the table and its indexes did not become active within 30 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
