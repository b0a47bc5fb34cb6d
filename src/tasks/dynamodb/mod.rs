//! The DynamoDB task store: durable tasks in the handles table, shared by every instance.
//!
//! One item per task, in the handles table (`infra/handles-table.json`: partition key `pk`,
//! TTL on `expires_at`):
//!
//! | attribute | type | meaning |
//! |---|---|---|
//! | `pk` | S | `t#<uuid>` |
//! | `owner` | S | who may read, answer and cancel it; anyone else gets `NotFound` |
//! | `state` | S | `working`, `input_required`, `completed`, `failed`, `cancelled` |
//! | `round` | N | the round the next worker runs |
//! | `cancel` | BOOL | a client asked to cancel |
//! | `call` | S | the `tools/call` params, compact JSON |
//! | `input_requests` | S | the outstanding requests, compact JSON (while `input_required`) |
//! | `input_keys` | SS | their keys (absent when none): only answers to these are read back |
//! | `pending` | SS | the keys not answered yet; absent when none (DynamoDB has no empty set, and removes a set a `DELETE` empties) |
//! | `responses` | M | answers by key, each compact JSON in an S; an empty map at creation and after every `input_required` round, so an answer can `SET responses.#k` |
//! | `request_state` | S | the round's `requestState`, as given |
//! | `status_message` | S | the latest status line, as given |
//! | `result`, `error` | S | compact JSON, once `completed` / `failed` |
//! | `claimed_round`, `lease_until_ms` | N | the round a worker claimed and until when (epoch ms) |
//! | `write_id` | S | a random token per create, claim and finish, so a retried write that already landed is recognised |
//! | `created_at_ms`, `updated_at_ms`, `ttl_ms`, `poll_ms` | N | epoch ms; the lifetime and the poll interval in ms |
//! | `expires_at` | N | epoch **seconds**, rounded up: the table's TTL attribute, for the sweeper |
//! | `expires_at_ms` | N | epoch milliseconds: the expiry every operation checks |
//!
//! Exactly one DynamoDB request per operation. `live` below is
//! `owner = :owner AND expires_at_ms > :now`; every conditional write asks for the old item on
//! failure (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), so telling "missing" from "in
//! another state" costs no second request:
//!
//! | operation | request | condition | when it fails |
//! |---|---|---|---|
//! | create | `PutItem` | `attribute_not_exists(pk)` | the old item is this call's (`write_id`): `Ok`; another task's: `Invalid` |
//! | get | `GetItem`, strongly consistent | owner and expiry checked on the item read | `NotFound` |
//! | answer | `UpdateItem` (`SET responses.#k = if_not_exists(responses.#k, :v)` per key, `DELETE pending :keys`), `ALL_NEW` | `live AND state = input_required` | a live task of this owner: returned unchanged; else `NotFound` |
//! | cancel | `UpdateItem` (`SET cancel = true`), `ALL_NEW` | `live AND state` not terminal | a live task of this owner (finished): returned unchanged; else `NotFound` |
//! | claim | `UpdateItem` (`SET state = working, claimed_round, lease_until_ms`), `ALL_NEW` | `expires_at_ms > :now AND round = :r AND cancel = false AND (state = working OR (state = input_required AND attribute_not_exists(pending))) AND (attribute_not_exists(claimed_round) OR claimed_round < :r)` | the old item is this call's claim (`write_id`): `Some`; else `None` |
//! | check, with a message | `UpdateItem` (`SET status_message`), `ALL_NEW` | `expires_at_ms > :now AND claimed_round = :r AND state = working` | the old item's `cancel`; no live item: `NotFound` |
//! | check, without | `GetItem`, strongly consistent | — | no live item: `NotFound` |
//! | finish | `UpdateItem` (the transitions of `apply_end`) | `expires_at_ms > :now AND claimed_round = :r AND state = working AND lease_until_ms >= :now` (a worker whose claim ran out, already reported `failed`, changes nothing) | the old item is this call's finish (`write_id`): `true`; else `false` |
//!
//! An answer's keys that were never outstanding are written into `responses` too (one
//! request cannot first look), but are never read back: a task read from DynamoDB keeps only
//! the responses whose key is in `input_keys`, so [`TaskRecord::responses`] holds exactly what
//! the memory store records. `if_not_exists` keeps the first answer to a key, as the memory
//! store ignores a key no longer pending.
//!
//! # Retries and lost answers
//!
//! Each request is tried again by the crate's one retry policy (`aws/retry.rs`: throttling,
//! 5xx and lost connections, within the operation timeout of
//! [`AwsTimeouts`](crate::aws::AwsTimeouts)). Each write is one conditional request: it lands
//! whole or not at all. When an attempt lands and its answer is lost, the repeat meets its own
//! result: answer and cancel are idempotent (their condition still holds and `if_not_exists`
//! keeps the value), and create, claim and finish recognise their own `write_id` in the old
//! item. A call whose every attempt failed is [`TaskError::Unavailable`]. For a create that is
//! the truth about the work whatever the item holds: a task is handed to a worker only after
//! its create is confirmed, so an unconfirmed one never runs (its record, if it landed, is
//! never dispatched and nobody has its id). A worker's claim and finish are retried by the engine while
//! this store answers `Unavailable`, until the round's own deadline (`tasks/retry.rs`): a
//! round whose end cannot be recorded before its claim runs out is the only one that reads
//! `failed` ("the worker's claim ran out"), and a client retries an answer or a cancel, both
//! idempotent.
//!
//! A create answered `Unavailable` may have landed all the same. The engine then sends no
//! `CreateTaskResult`, so nobody learns the id: the item is an orphan that no worker runs and
//! the TTL sweep removes. That is why a create is never reported durable unless DynamoDB
//! acknowledged it (or a retry found this call's own item).
//!
//! Error messages carry the operation and DynamoDB's error code, never its message text: the
//! full error goes to the log (`tracing`) here.

mod item;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use futures::future::{BoxFuture, FutureExt};
use serde_json::Value;

pub(crate) use self::item::{VIEW_ATTRIBUTES, view};
use self::item::{
    compact, failure, live, parse, refused, ss, state_name, token, too_large, updated,
};
use super::{CallerQuota, RoundEnd, TaskError, TaskRecord, TaskStore, now_ms};
use crate::aws::item::{Item, n, s, text};
use crate::aws::table::{Cancellation, Count, Counted, PK, Table, task_key};
use crate::handles::HandleId;

/// The largest task (its record as JSON) or answer this store writes, in bytes: DynamoDB's
/// item limit is 400 KB.
pub const MAX_TASK_BYTES: usize = 350 * 1024;

/// The most keys one answer may carry.
pub const MAX_ANSWER_KEYS: usize = 64;

/// The longest key of an answer, in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// A [`TaskStore`] on the handles table; clones share the client and its connections.
///
/// ```no_run
/// # async fn demo() {
/// use mcp_lambda::tasks::DynamoDbTaskStore;
/// let timeouts = mcp_lambda::aws::AwsTimeouts::default();
/// let sdk = mcp_lambda::aws::loader(&timeouts).load().await;
/// let store = DynamoDbTaskStore::new(aws_sdk_dynamodb::Client::new(&sdk), "mcp-handles");
/// # }
/// ```
#[derive(Clone)]
pub struct DynamoDbTaskStore {
    table: Table,
}

impl fmt::Debug for DynamoDbTaskStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamoDbTaskStore")
            .field("table", &self.table.name())
            .finish_non_exhaustive()
    }
}

impl DynamoDbTaskStore {
    /// A store on `table` (the handles table, a name or an ARN) through `client`. Makes no
    /// request.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
        }
    }

    /// The table name or ARN.
    pub fn table(&self) -> &str {
        self.table.name()
    }

    fn update(&self, id: HandleId) -> UpdateItemFluentBuilder {
        self.table
            .update_item(task_key(id))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }
}

impl DynamoDbTaskStore {
    /// The task `id` as one consistent `GetItem` reads it, if it is live (and `owner`'s, if
    /// given); otherwise `NotFound`.
    async fn read_live(
        &self,
        id: HandleId,
        owner: Option<&str>,
        now: u64,
    ) -> Result<TaskRecord, TaskError> {
        let request = self.table.get_item(task_key(id));
        let out = self
            .table
            .answer(|| request.clone().send())
            .await
            .map_err(|e| failure("GetItem", &e))?;
        live(out.item(), owner, now)?.ok_or(TaskError::NotFound)
    }

    /// Sends an owner's conditional update: the task as it became or, when the condition
    /// refused it, the task as it is (`NotFound` when it is gone, expired or not `owner`'s).
    async fn update_as_owner(
        &self,
        request: UpdateItemFluentBuilder,
        operation: &'static str,
        owner: &str,
        now: u64,
    ) -> Result<TaskRecord, TaskError> {
        match self.table.answer(|| request.clone().send()).await {
            Ok(out) => updated(&out),
            Err(e) => {
                live(refused(operation, e)?.as_ref(), Some(owner), now)?.ok_or(TaskError::NotFound)
            }
        }
    }

    /// The task's put and its owner's count for the window (`q#t#<window>#<owner>`, expiring
    /// with the window) in one `TransactWriteItems`: both or neither. The write id is the
    /// transaction's idempotency token, so the SDK retrying a landed attempt succeeds.
    async fn create_counted(
        &self,
        item: Item,
        owner: &str,
        quota: CallerQuota,
        write_id: String,
    ) -> Result<(), TaskError> {
        let now = now_ms();
        let (window, left) = quota.window_at(now);
        let digest = CallerQuota::owner_digest(owner);
        let count = Count::new(Counted::Tasks, &digest, window, left, now, quota.max);
        let sent = self
            .table
            .create_counted(
                |_| item.clone(),
                &count,
                write_id,
                token,
                |e| TaskError::Invalid(e.to_string()),
            )
            .await?;
        let Err(e) = sent.result else {
            return Ok(());
        };
        match Cancellation::of(&e) {
            Some(why) if why.second_refused => Err(super::store::over_quota(&quota, now)),
            Some(why) if why.first_refused => {
                Err(TaskError::Invalid("task id already in use".into()))
            }
            _ => Err(failure("TransactWriteItems", &e)),
        }
    }
}

const NOT_TERMINAL: &str = "NOT (#state IN (:completed, :failed, :cancelled))";

impl TaskStore for DynamoDbTaskStore {
    fn create<'a>(
        &'a self,
        task: &'a TaskRecord,
        quota: Option<CallerQuota>,
    ) -> BoxFuture<'a, Result<(), TaskError>> {
        async move {
            let size = serde_json::to_vec(task)
                .map(|v| v.len())
                .unwrap_or(usize::MAX);
            if size > MAX_TASK_BYTES {
                return Err(too_large("the task", size));
            }
            let write_id = token()?;
            let expires_at_ms = task.expires_at_ms();
            let mut item: Item = HashMap::from([
                (PK.to_owned(), s(task_key(task.id))),
                ("owner".to_owned(), s(&task.owner)),
                ("state".to_owned(), s(state_name(task.state))),
                ("round".to_owned(), n(task.round)),
                (
                    "cancel".to_owned(),
                    AttributeValue::Bool(task.cancel_requested),
                ),
                ("expires_at".to_owned(), n(expires_at_ms.div_ceil(1000))),
                ("expires_at_ms".to_owned(), n(expires_at_ms)),
                ("created_at_ms".to_owned(), n(task.created_at_ms)),
                ("updated_at_ms".to_owned(), n(task.updated_at_ms)),
                ("ttl_ms".to_owned(), n(task.ttl_ms)),
                ("poll_ms".to_owned(), n(task.poll_interval_ms)),
                ("call".to_owned(), s(task.call.to_string())),
                ("write_id".to_owned(), s(write_id.clone())),
            ]);
            let responses: HashMap<String, AttributeValue> = task
                .responses
                .iter()
                .map(|(k, v)| (k.clone(), s(v.to_string())))
                .collect();
            item.insert("responses".to_owned(), AttributeValue::M(responses));
            for (name, value) in [
                ("input_requests", &task.input_requests),
                ("result", &task.result),
                ("error", &task.error),
            ] {
                if let Some(value) = value {
                    item.insert(name.to_owned(), s(value.to_string()));
                }
            }
            for (name, value) in [
                ("request_state", &task.request_state),
                ("status_message", &task.status_message),
            ] {
                if let Some(value) = value {
                    item.insert(name.to_owned(), s(value));
                }
            }
            if !task.pending.is_empty() {
                item.insert("pending".to_owned(), ss(task.pending.iter().cloned()));
            }
            // A record created mid-way keeps its answers readable: its keys are what is
            // pending or answered.
            let keys: BTreeSet<&String> =
                task.pending.iter().chain(task.responses.keys()).collect();
            if !keys.is_empty() {
                item.insert("input_keys".to_owned(), ss(keys.into_iter().cloned()));
            }
            if let Some((round, lease)) = task.claimed {
                item.insert("claimed_round".to_owned(), n(round));
                item.insert("lease_until_ms".to_owned(), n(lease));
            }
            if let Some(quota) = quota {
                return self
                    .create_counted(item, &task.owner, quota, write_id)
                    .await;
            }
            let request = self.table.put_new(item);
            let result = self.table.answer(|| request.clone().send()).await;
            let Err(e) = result else {
                return Ok(());
            };
            let Some(PutItemError::ConditionalCheckFailedException(c)) = e.as_service_error()
            else {
                return Err(failure("PutItem", &e));
            };
            if c.item().and_then(|i| text(i, "write_id")) == Some(write_id.as_str()) {
                // A repeat of a put whose first attempt had already landed.
                Ok(())
            } else {
                Err(TaskError::Invalid("task id already in use".into()))
            }
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>> {
        async move { self.read_live(id, Some(owner), now_ms()).await }.boxed()
    }

    fn answer<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        responses: &'a BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>> {
        async move {
            if responses.len() > MAX_ANSWER_KEYS {
                return Err(TaskError::Invalid(format!(
                    "{} answers; at most {MAX_ANSWER_KEYS} at once",
                    responses.len()
                )));
            }
            let mut total = 0;
            let mut values = Vec::with_capacity(responses.len());
            for (key, value) in responses {
                if key.is_empty() || key.len() > MAX_KEY_BYTES {
                    return Err(TaskError::Invalid(format!(
                        "an answer's key must be 1 to {MAX_KEY_BYTES} bytes"
                    )));
                }
                let value = value.to_string();
                total += key.len() + value.len();
                values.push(value);
            }
            if total > MAX_TASK_BYTES {
                return Err(too_large("the answer", total));
            }
            let now = now_ms();
            let mut set = vec!["updated_at_ms = :now".to_owned()];
            let mut request = self
                .update(id)
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":owner", s(owner))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":input_required", s("input_required"));
            if !responses.is_empty() {
                request = request.expression_attribute_names("#r", "responses");
            }
            for (i, (key, value)) in responses.keys().zip(values).enumerate() {
                set.push(format!("#r.#k{i} = if_not_exists(#r.#k{i}, :v{i})"));
                request = request
                    .expression_attribute_names(format!("#k{i}"), key)
                    .expression_attribute_values(format!(":v{i}"), s(value));
            }
            let mut expression = format!("SET {}", set.join(", "));
            if !responses.is_empty() {
                expression.push_str(" DELETE #pending :keys");
                request = request
                    .expression_attribute_names("#pending", "pending")
                    .expression_attribute_values(":keys", ss(responses.keys().cloned()));
            }
            let request = request.update_expression(expression).condition_expression(
                "#owner = :owner AND expires_at_ms > :now AND #state = :input_required",
            );
            // Not waiting for input (any more): the task as it is, like the memory store.
            self.update_as_owner(request, "UpdateItem (answer)", owner, now)
                .await
        }
        .boxed()
    }

    fn cancel<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>> {
        async move {
            let now = now_ms();
            let request = self
                .update(id)
                .update_expression("SET #cancel = :true, updated_at_ms = :now")
                .condition_expression(format!(
                    "#owner = :owner AND expires_at_ms > :now AND {NOT_TERMINAL}"
                ))
                .expression_attribute_names("#cancel", "cancel")
                .expression_attribute_names("#owner", "owner")
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":true", AttributeValue::Bool(true))
                .expression_attribute_values(":owner", s(owner))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":completed", s("completed"))
                .expression_attribute_values(":failed", s("failed"))
                .expression_attribute_values(":cancelled", s("cancelled"));
            // Finished already: a no-op, the task as it is.
            self.update_as_owner(request, "UpdateItem (cancel)", owner, now)
                .await
        }
        .boxed()
    }

    fn claim<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        lease_until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskError>> {
        async move {
            let write_id = token()?;
            let now = now_ms();
            let request = self
                .update(id)
                .update_expression(
                    "SET #state = :working, claimed_round = :r, lease_until_ms = :lease, \
                     updated_at_ms = :now, write_id = :wid",
                )
                .condition_expression(
                    "expires_at_ms > :now AND #round = :r AND #cancel = :false \
                     AND (#state = :working OR (#state = :input_required \
                     AND attribute_not_exists(#pending))) \
                     AND (attribute_not_exists(claimed_round) OR claimed_round < :r) \
                     AND updated_at_ms > :claim_from",
                )
                .expression_attribute_names("#state", "state")
                .expression_attribute_names("#round", "round")
                .expression_attribute_names("#cancel", "cancel")
                .expression_attribute_names("#pending", "pending")
                .expression_attribute_values(":working", s("working"))
                .expression_attribute_values(":input_required", s("input_required"))
                .expression_attribute_values(":false", AttributeValue::Bool(false))
                .expression_attribute_values(":r", n(round))
                .expression_attribute_values(":lease", n(lease_until_ms))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(
                    ":claim_from",
                    n(now.saturating_sub(super::record::CLAIM_WINDOW_MS)),
                )
                .expression_attribute_values(":wid", s(write_id.clone()));
            let result = self.table.answer(|| request.clone().send()).await;
            match result {
                Ok(out) => updated(&out).map(Some),
                Err(e) => {
                    let old = refused("UpdateItem (claim)", e)?;
                    match old {
                        // A repeat of a claim whose first attempt had already landed.
                        Some(item) if text(&item, "write_id") == Some(write_id.as_str()) => {
                            parse(&item).map(Some)
                        }
                        _ => Ok(None),
                    }
                }
            }
        }
        .boxed()
    }

    fn check<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        status_message: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, TaskError>> {
        async move {
            let now = now_ms();
            let Some(message) = status_message else {
                let task = self.read_live(id, None, now).await?;
                return Ok(task.cancel_requested);
            };
            if message.len() > MAX_TASK_BYTES {
                return Err(too_large("the status message", message.len()));
            }
            let request = self
                .update(id)
                .update_expression("SET status_message = :m, updated_at_ms = :now")
                .condition_expression(
                    "expires_at_ms > :now AND claimed_round = :r AND #state = :working",
                )
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":m", s(message))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":r", n(round))
                .expression_attribute_values(":working", s("working"));
            let result = self.table.answer(|| request.clone().send()).await;
            let task = match result {
                Ok(out) => updated(&out)?,
                // The claim no longer holds: nothing recorded, the cancel flag as it is.
                Err(e) => live(refused("UpdateItem (check)", e)?.as_ref(), None, now)?
                    .ok_or(TaskError::NotFound)?,
            };
            Ok(task.cancel_requested)
        }
        .boxed()
    }

    fn finish<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        end: &'a RoundEnd,
    ) -> BoxFuture<'a, Result<bool, TaskError>> {
        async move {
            let write_id = token()?;
            let now = now_ms();
            let mut set = vec!["#state = :state", "updated_at_ms = :now", "write_id = :wid"];
            let mut remove = Vec::new();
            let mut request = self
                .table
                .update_item(task_key(id))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":state", s(state_name(end.state())))
                .expression_attribute_values(":now", n(now))
                .expression_attribute_values(":wid", s(write_id.clone()))
                .expression_attribute_values(":r", n(round))
                .expression_attribute_values(":working", s("working"));
            match end {
                RoundEnd::Completed(result) => {
                    set.push("#result = :result");
                    request = request
                        .expression_attribute_names("#result", "result")
                        .expression_attribute_values(":result", s(compact("the result", result)?));
                }
                RoundEnd::Failed(error) => {
                    set.push("#error = :error");
                    request = request
                        .expression_attribute_names("#error", "error")
                        .expression_attribute_values(":error", s(compact("the error", error)?));
                }
                RoundEnd::Cancelled => {}
                RoundEnd::InputRequired { .. } => {
                    request = next_round(request, end, round, &mut set, &mut remove)?;
                }
            }
            let mut expression = format!("SET {}", set.join(", "));
            if !remove.is_empty() {
                expression.push_str(&format!(" REMOVE {}", remove.join(", ")));
            }
            let request = request.update_expression(expression).condition_expression(
                "expires_at_ms > :now AND claimed_round = :r AND #state = :working \
                     AND lease_until_ms >= :now",
            );
            let result = self.table.answer(|| request.clone().send()).await;
            match result {
                Ok(_) => Ok(true),
                Err(e) => {
                    let old = refused("UpdateItem (finish)", e)?;
                    // True when a repeat of a finish whose first attempt had already landed.
                    Ok(old.is_some_and(|item| text(&item, "write_id") == Some(write_id.as_str())))
                }
            }
        }
        .boxed()
    }
}

/// The writes of a round that ends waiting for input: the next round, its input requests, no
/// responses yet, the keys still to answer and the sealed request state.
fn next_round<'a>(
    mut request: UpdateItemFluentBuilder,
    end: &RoundEnd,
    round: u32,
    set: &mut Vec<&'a str>,
    remove: &mut Vec<&'a str>,
) -> Result<UpdateItemFluentBuilder, TaskError> {
    let RoundEnd::InputRequired {
        requests,
        keys,
        request_state,
    } = end
    else {
        return Ok(request);
    };
    let next = round
        .checked_add(1)
        .ok_or_else(|| TaskError::Invalid("no round follows the last one".into()))?;
    set.extend([
        "#round = :next",
        "input_requests = :requests",
        "#responses = :empty",
    ]);
    request = request
        .expression_attribute_names("#round", "round")
        .expression_attribute_names("#responses", "responses")
        .expression_attribute_names("#pending", "pending")
        .expression_attribute_values(":next", n(next))
        .expression_attribute_values(":requests", s(compact("the input requests", requests)?))
        .expression_attribute_values(":empty", AttributeValue::M(HashMap::new()));
    if keys.is_empty() {
        remove.extend(["#pending", "input_keys"]);
    } else {
        if keys.iter().any(|k| k.is_empty() || k.len() > MAX_KEY_BYTES) {
            return Err(TaskError::Invalid(format!(
                "an input request's key must be 1 to {MAX_KEY_BYTES} bytes"
            )));
        }
        set.extend(["#pending = :keys", "input_keys = :keys"]);
        request = request.expression_attribute_values(":keys", ss(keys.iter().cloned()));
    }
    match request_state {
        Some(state) => {
            set.push("request_state = :rs");
            request = request.expression_attribute_values(":rs", s(state));
        }
        None => remove.push("request_state"),
    }
    Ok(request)
}
