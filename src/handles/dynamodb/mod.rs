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
//! Exactly one DynamoDB request per operation, but a keyed handle's get-or-create:
//!
//! | operation | request | condition |
//! |---|---|---|
//! | create | `PutItem` | `attribute_not_exists(pk)` |
//! | get | `GetItem`, strongly consistent | owner, expiry and no tombstone checked on the item read |
//! | update | `UpdateItem`, `ReturnValues=ALL_NEW` | owner, `expires_at_ms > now`, not deleted, `version = expected` |
//! | touch | `UpdateItem`, `ReturnValues=ALL_NEW` | owner, `expires_at_ms > now`, not deleted |
//! | delete | `UpdateItem` to a tombstone | owner, `expires_at_ms > now`, not deleted (and `version = expected` if given) |
//! | get-or-create (a keyed handle) | `GetItem`, strongly consistent; if no live handle, `PutItem` (with the quota, the counted create's transaction) | `attribute_not_exists(pk)`, or over the dead item read (`version = read AND (deleted OR expired)`); a refused put reads again |
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

mod item;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use futures::future::{BoxFuture, FutureExt};

use self::item::{
    DELETED, HISTORY_SHIFT_UPDATE, OWNER_KIND, corrupt, failure, indeterminate, is_tombstone,
    live_old, parse, version_of, write_history,
};
use super::{
    CallerQuota, Handle, HandleError, HandleId, HandlePage, HandleStore, ListPosition, STORE,
    expiry_ms, validate, validate_list,
};
use crate::aws::item::{self as aws_item, Item, n, s};
use crate::aws::table::{Cancellation, Count, Counted, OWNER_INDEX, PK, PutIf, Table, handle_key};
use crate::aws::{AwsTimeouts, TableError};
use crate::env::now_ms;

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
    table: Table,
    quota: Option<CallerQuota>,
}

impl fmt::Debug for DynamoDbHandleStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoDbHandleStore")
            .field("table", &self.table.name())
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
    let store = DynamoDbHandleStore {
        table: Table::open(STORE, table, timeouts).await?,
        quota: Some(quota),
    };
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
            table: Table::new(client, table),
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
        self.table.name()
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
        self.table.warm_up(STORE).await
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
        crate::aws::table::create(client, table, STORE)
            .await
            .map_err(|e| HandleError::Unavailable(e.reason))
    }

    /// `create` under the quota: the handle's put and its owner's count for the window
    /// (`q#h#<window>#<sha256(owner)>`, expiring with the window) in one `TransactWriteItems`,
    /// both or neither. The write id is the transaction's idempotency token, so the SDK
    /// retrying a landed attempt succeeds. `None` when the put was refused: the id is taken.
    async fn create_counted(
        &self,
        handle: Handle,
        quota: CallerQuota,
        write_id: String,
        now: u64,
        put_if: PutIf,
    ) -> Result<Option<Handle>, HandleError> {
        let invalid = |e: aws_sdk_dynamodb::error::BuildError| HandleError::Invalid(e.to_string());
        let (window, left) = quota.window_at(now);
        let digest = CallerQuota::owner_digest(&handle.owner);
        let count = Count::new(Counted::Handles, &digest, window, left, now, quota.max);
        let sent = self
            .table
            .create_counted_if(
                put_if,
                |write_id| item::new_item(&handle, write_id),
                &count,
                write_id,
                || Ok(HandleId::random()?.to_string()),
                invalid,
            )
            .await?;
        let Err(e) = sent.result else {
            return Ok(Some(handle));
        };
        match Cancellation::of(&e) {
            // Taken first: a keyed handle another call has just created is no creation of
            // this one, so no count (DynamoDB names every condition that failed, and at the
            // quota's edge the count's fails too).
            Some(why) if why.first_refused => Ok(None),
            Some(why) if why.second_refused => Err(HandleError::over_quota(&quota, now)),
            _ => Err(failure("TransactWriteItems", &e, sent.maybe_applied)),
        }
    }
}

/// Rounds of a keyed get-or-create (read, then put) before a still-contended id answers
/// [`HandleError::Unavailable`]: a round fails only when another write landed between its read
/// and its put, which leaves a live handle for the next read, so two rounds settle all but a
/// create racing deletes.
const GET_OR_CREATE_ROUNDS: u32 = 4;

impl DynamoDbHandleStore {
    /// One round of [`get_or_create`](HandleStore::get_or_create): `Ok(None)` when another
    /// writer got in between the read and the put (read again).
    async fn get_or_create_round(
        &self,
        owner: &str,
        kind: &str,
        id: HandleId,
        data: &serde_json::Value,
        ttl: Duration,
        mine: &[String],
    ) -> Result<Option<(Handle, bool)>, HandleError> {
        let request = self.table.get_item(handle_key(id));
        let out = self
            .table
            .answer(|| request.clone().send())
            .await
            .map_err(|e| failure("GetItem", &e, false))?;
        let now = now_ms();
        let mut put_if = PutIf::New;
        if let Some(item) = out.item() {
            let dead_version = if is_tombstone(item) {
                aws_item::number(item, "version")
            } else {
                let (handle, write_id) = parse(item)?;
                if handle.expires_at_ms > now {
                    if handle.owner != owner {
                        return Err(HandleError::Unavailable(
                            "a keyed handle's id is held by another owner's handle".into(),
                        ));
                    }
                    // Created by an earlier round of this call whose answer was lost?
                    let created = write_id.is_some_and(|w| mine.contains(&w));
                    return Ok(Some((handle, created)));
                }
                Some(handle.version)
            };
            // The dead item (a tombstone, or expired and not yet swept) is replaced, if it is
            // still the one read.
            let version = dead_version.ok_or_else(|| corrupt("version"))?;
            put_if = PutIf::NewOrDead {
                version,
                now_ms: now,
            };
        }
        let write_id = mine.last().cloned().unwrap_or_default();
        let mut handle = Handle::created(id, owner, kind, data.clone(), now, ttl);
        if let PutIf::NewOrDead { version, .. } = put_if {
            // The new handle continues the dead one's versions: an update meant for the old
            // one (its answer lost, still on its way) names a version the new one never has.
            handle.version = version.saturating_add(1);
        }
        if let Some(quota) = self.quota.filter(|_| CallerQuota::counts(owner)) {
            // `None`: the put was refused, another call created it meanwhile.
            let created = self
                .create_counted(handle, quota, write_id, now, put_if)
                .await?;
            return Ok(created.map(|handle| (handle, true)));
        }
        let request = self
            .table
            .put_if(put_if, item::new_item(&handle, &write_id));
        let sent = self.table.send(|| request.clone().send()).await;
        let Err(e) = sent.result else {
            return Ok(Some((handle, true)));
        };
        use aws_sdk_dynamodb::operation::put_item::PutItemError;
        match e.as_service_error() {
            // Taken meanwhile (or by this round's own landed attempt: the next read tells).
            Some(PutItemError::ConditionalCheckFailedException(_)) => Ok(None),
            _ => Err(failure("PutItem", &e, sent.maybe_applied)),
        }
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
                return self
                    .create_counted(handle, quota, write_id, now, PutIf::New)
                    .await?
                    .ok_or_else(|| {
                        HandleError::Unavailable(
                            "a random handle id collided with an existing one; try again".into(),
                        )
                    });
            }
            let request = self.table.put_new(item::new_item(&handle, &write_id));
            let sent = self.table.send(|| request.clone().send()).await;
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
            if c.item().and_then(|i| aws_item::text(i, "write_id")) == Some(write_id.as_str()) {
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

    /// A consistent `GetItem`; when no live handle is there, a `PutItem` only if the key is
    /// new or still holds the dead item read (a tombstone, an expired handle), or with the
    /// quota the counted create's transaction. A put refused because another call's landed first is followed by
    /// a read of the winner. A round's write id is remembered, so a put whose answer was lost
    /// but that landed is recognised as this call's creation.
    fn get_or_create<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        id: HandleId,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(Handle, bool), HandleError>> {
        async move {
            validate(owner, Some(kind), Some(&data), ttl)?;
            let mut mine = Vec::new();
            for _ in 0..GET_OR_CREATE_ROUNDS {
                mine.push(HandleId::random()?.to_string());
                if let Some(found) = self
                    .get_or_create_round(owner, kind, id, &data, ttl, &mine)
                    .await?
                {
                    return Ok(found);
                }
            }
            Err(HandleError::Unavailable(format!(
                "a keyed handle kept changing under {GET_OR_CREATE_ROUNDS} attempts to read or \
                 create it"
            )))
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
            let request = self.table.get_item(handle_key(id));
            let out = self
                .table
                .answer(|| request.clone().send())
                .await
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
            let request = self
                .table
                .update_item(handle_key(id))
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
            let sent = self.table.send(|| request.clone().send()).await;
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
            let request = self
                .table
                .update_item(handle_key(id))
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
            let sent = self.table.send(|| request.clone().send()).await;
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
            let (pk, pk_value) = item::key(id);
            // A tombstone rather than DeleteItem: a retried attempt finds its own write_id.
            let mut request = self
                .table
                .client()
                .update_item()
                .table_name(self.table.name())
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
            let sent = self.table.send(|| request.clone().send()).await;
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
                return if aws_item::text(item, "owner") == Some(owner)
                    && aws_item::text(item, "write_id") == Some(write_id.as_str())
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
            let listed = item::owner_kind(owner, kind);
            let start = after.map(|position| {
                Item::from([
                    (PK.to_owned(), s(handle_key(position.id))),
                    (OWNER_KIND.to_owned(), s(&listed)),
                    ("created_at".to_owned(), n(position.created_at_ms)),
                ])
            });
            let request = self
                .table
                .client()
                .query()
                .table_name(self.table.name())
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
            let out = self
                .table
                .answer(|| request.clone().send())
                .await
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
                    id: item::id_of(key).ok_or_else(|| corrupt("(Query's LastEvaluatedKey pk)"))?,
                    created_at_ms: aws_item::number(key, "created_at")
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
                table = %self.table.name(),
                "the handles table has no owner index, so handles cannot be listed"
            );
            return HandleError::Unavailable(format!(
                "table {} has no index {OWNER_INDEX}: add it as infra/handles-table.json \
                 defines it (redeploying the template does)",
                self.table.name()
            ));
        }
        failure("Query", error, false)
    }
}
