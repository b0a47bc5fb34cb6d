//! A task as a DynamoDB item (the attributes of the table in `mod.rs`), read back, and what a
//! failed call means for the caller.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::update_item::{UpdateItemError, UpdateItemOutput};
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::Value;

use super::super::{TaskError, TaskRecord, TaskState};
use super::MAX_TASK_BYTES;
use crate::aws::item::{self, Failure, Item, text};
use crate::aws::table::PK;
use crate::handles::HandleId;

pub(super) fn ss(values: impl IntoIterator<Item = impl Into<String>>) -> AttributeValue {
    AttributeValue::Ss(values.into_iter().map(Into::into).collect())
}

pub(super) fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Working => "working",
        TaskState::InputRequired => "input_required",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Cancelled => "cancelled",
    }
}

pub(super) fn parse_state(name: &str) -> Option<TaskState> {
    Some(match name {
        "working" => TaskState::Working,
        "input_required" => TaskState::InputRequired,
        "completed" => TaskState::Completed,
        "failed" => TaskState::Failed,
        "cancelled" => TaskState::Cancelled,
        _ => return None,
    })
}

pub(super) fn corrupt(attribute: &str) -> TaskError {
    tracing::error!(attribute, "a task item in DynamoDB is malformed");
    TaskError::Unavailable(format!(
        "a stored task is malformed (attribute {attribute})"
    ))
}

/// A number attribute that may be missing, but not malformed.
fn number(item: &Item, name: &str) -> Result<Option<u64>, TaskError> {
    match item.get(name) {
        None => Ok(None),
        Some(_) => item::number(item, name)
            .map(Some)
            .ok_or_else(|| corrupt(name)),
    }
}

fn json(item: &Item, name: &str) -> Result<Option<Value>, TaskError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::S(v)) => serde_json::from_str(v).map(Some).map_err(|_| corrupt(name)),
        Some(_) => Err(corrupt(name)),
    }
}

fn string_set(item: &Item, name: &str) -> Result<BTreeSet<String>, TaskError> {
    match item.get(name) {
        None => Ok(BTreeSet::new()),
        Some(AttributeValue::Ss(v)) => Ok(v.iter().cloned().collect()),
        Some(_) => Err(corrupt(name)),
    }
}

/// A stored item as a task.
pub(super) fn parse(item: &Item) -> Result<TaskRecord, TaskError> {
    parse_with(item, true)
}

/// The attributes a client's view of a task is made of ([`view`]): a change feed projects
/// these, so a listener's poll never reads the call's arguments or the answers.
pub(crate) const VIEW_ATTRIBUTES: [&str; 16] = [
    "pk",
    "owner",
    "state",
    "round",
    "cancel",
    "input_requests",
    "pending",
    "status_message",
    "result",
    "error",
    "claimed_round",
    "lease_until_ms",
    "created_at_ms",
    "updated_at_ms",
    "ttl_ms",
    "poll_ms",
];

/// An item read with [`VIEW_ATTRIBUTES`] as a task of `owner`, `None` when it is not a live
/// task of theirs: `call` is `null` and `responses` empty, which a client's view never shows.
pub(crate) fn view(item: &Item, owner: &str, now: u64) -> Result<Option<TaskRecord>, TaskError> {
    let task = parse_with(item, false)?;
    Ok((task.owner == owner && task.expires_at_ms() > now).then_some(task))
}

fn parse_with(item: &Item, whole: bool) -> Result<TaskRecord, TaskError> {
    let required = |name: &str| number(item, name)?.ok_or_else(|| corrupt(name));
    let id = text(item, PK)
        .and_then(|pk| pk.strip_prefix("t#"))
        .and_then(|id| id.parse::<HandleId>().ok())
        .ok_or_else(|| corrupt(PK))?;
    let state = text(item, "state")
        .and_then(parse_state)
        .ok_or_else(|| corrupt("state"))?;
    let round = u32::try_from(required("round")?).map_err(|_| corrupt("round"))?;
    let claimed = match (
        number(item, "claimed_round")?,
        number(item, "lease_until_ms")?,
    ) {
        (Some(r), Some(lease)) => Some((
            u32::try_from(r).map_err(|_| corrupt("claimed_round"))?,
            lease,
        )),
        _ => None,
    };
    let cancel_requested = match item.get("cancel") {
        Some(AttributeValue::Bool(b)) => *b,
        None => false,
        Some(_) => return Err(corrupt("cancel")),
    };
    // Only answers to the round's own keys count (see the module docs).
    let keys = string_set(item, "input_keys")?;
    let mut responses = BTreeMap::new();
    match item.get("responses") {
        None => {}
        Some(AttributeValue::M(map)) => {
            for (key, value) in map {
                if !keys.contains(key) {
                    continue;
                }
                let AttributeValue::S(value) = value else {
                    return Err(corrupt("responses"));
                };
                let value = serde_json::from_str(value).map_err(|_| corrupt("responses"))?;
                responses.insert(key.clone(), value);
            }
        }
        Some(_) => return Err(corrupt("responses")),
    }
    Ok(TaskRecord {
        id,
        owner: text(item, "owner")
            .ok_or_else(|| corrupt("owner"))?
            .to_owned(),
        call: match json(item, "call")? {
            Some(call) => call,
            None if !whole => Value::Null,
            None => return Err(corrupt("call")),
        },
        state,
        round,
        claimed,
        cancel_requested,
        input_requests: json(item, "input_requests")?,
        pending: string_set(item, "pending")?,
        responses,
        request_state: text(item, "request_state").map(str::to_owned),
        status_message: text(item, "status_message").map(str::to_owned),
        result: json(item, "result")?,
        error: json(item, "error")?,
        created_at_ms: required("created_at_ms")?,
        updated_at_ms: required("updated_at_ms")?,
        ttl_ms: required("ttl_ms")?,
        poll_interval_ms: required("poll_ms")?,
    })
}

/// The item of a failed conditional write, when it is a live task (of `owner`, if given).
pub(super) fn live(
    item: Option<&Item>,
    owner: Option<&str>,
    now: u64,
) -> Result<Option<TaskRecord>, TaskError> {
    let Some(item) = item else {
        return Ok(None);
    };
    let task = parse(item)?;
    let mine = owner.is_none_or(|o| o == task.owner);
    Ok((mine && task.expires_at_ms() > now).then_some(task))
}

/// The new item an `UpdateItem` with `ALL_NEW` returned, as a task.
pub(super) fn updated(out: &UpdateItemOutput) -> Result<TaskRecord, TaskError> {
    parse(
        out.attributes()
            .ok_or_else(|| corrupt("(UpdateItem returned no attributes)"))?,
    )
}

/// The old item of an `UpdateItem` refused by its condition; any other failure as an error.
pub(super) fn refused(
    operation: &str,
    error: SdkError<UpdateItemError, impl fmt::Debug>,
) -> Result<Option<Item>, TaskError> {
    match error.as_service_error() {
        Some(UpdateItemError::ConditionalCheckFailedException(c)) => Ok(c.item().cloned()),
        _ => Err(failure(operation, &error)),
    }
}

/// A failed SDK call as [`TaskError`]: a request DynamoDB refused as malformed (too large) is
/// `Invalid`, everything else (timeouts, unreachable endpoint, throttling after the SDK's
/// retries, missing table, no permission) `Unavailable`. The message names the operation and
/// the error code only; the whole error is logged here.
pub(super) fn failure<E, R>(operation: &str, error: &SdkError<E, R>) -> TaskError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    let kind = item::failure(error);
    // One line: the operation and what DynamoDB said (its code), never its raw answer; the
    // whole error only when there was no answer (a connection's cause chain).
    match &kind {
        Failure::Service { code, .. } => {
            tracing::warn!(operation, code, "a task store request to DynamoDB failed")
        }
        Failure::Refused { .. } => tracing::warn!(
            operation,
            code = "ValidationException",
            "a task store request to DynamoDB failed"
        ),
        Failure::Timeout => tracing::warn!(
            operation,
            "a task store request to DynamoDB timed out (MCP_AWS_*_TIMEOUT_MS)"
        ),
        Failure::Unreachable | Failure::Other => tracing::warn!(
            operation,
            error = %item::brief(error),
            "a task store request to DynamoDB failed"
        ),
    }
    match kind {
        Failure::Timeout => TaskError::Unavailable(format!(
            "DynamoDB {operation} did not complete within the configured timeout"
        )),
        Failure::Unreachable => {
            TaskError::Unavailable(format!("cannot reach DynamoDB for {operation}"))
        }
        Failure::Refused { .. } => {
            TaskError::Invalid(format!("DynamoDB refused {operation} (too large?)"))
        }
        Failure::Service { code, .. } => {
            TaskError::Unavailable(format!("DynamoDB {operation}: {code}"))
        }
        Failure::Other => TaskError::Unavailable(format!("DynamoDB {operation} failed")),
    }
}

pub(super) fn too_large(what: &str, bytes: usize) -> TaskError {
    TaskError::Invalid(format!(
        "{what} is {bytes} bytes; at most {MAX_TASK_BYTES} are stored"
    ))
}

/// Compact JSON, bounded.
pub(super) fn compact(what: &str, value: &Value) -> Result<String, TaskError> {
    let text = value.to_string();
    if text.len() > MAX_TASK_BYTES {
        return Err(too_large(what, text.len()));
    }
    Ok(text)
}

pub(super) fn token() -> Result<String, TaskError> {
    HandleId::random()
        .map(|id| id.to_string())
        .map_err(|e| TaskError::Unavailable(format!("no random token: {e}")))
}
