//! A handle as a DynamoDB item (the attributes of the table in `mod.rs`), read back, and what a
//! failed call means for the caller.

use std::fmt;

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::AttributeValue;

use super::super::{Handle, HandleError, HandleId};
use crate::aws::item::{self, Failure, Item, n, s};
use crate::aws::table::{PK, handle_key};

/// The owner index's partition key attribute: the owner and the kind.
pub(super) const OWNER_KIND: &str = "owner_kind";

/// The tombstone marker attribute.
pub(super) const DELETED: &str = "deleted";

/// A new handle's item: its attributes at its version (1, or more for a keyed handle that
/// replaces a dead one), under `write_id`.
pub(super) fn new_item(handle: &Handle, write_id: &str) -> Item {
    Item::from([
        (PK.to_owned(), s(handle_key(handle.id))),
        ("owner".to_owned(), s(&handle.owner)),
        ("kind".to_owned(), s(&handle.kind)),
        (
            OWNER_KIND.to_owned(),
            s(owner_kind(&handle.owner, &handle.kind)),
        ),
        ("data".to_owned(), s(handle.data.to_string())),
        ("version".to_owned(), n(handle.version)),
        ("created_at".to_owned(), n(handle.created_at_ms)),
        ("expires_at".to_owned(), n(handle.expires_at_secs())),
        ("expires_at_ms".to_owned(), n(handle.expires_at_ms)),
        ("write_id".to_owned(), s(write_id)),
    ])
}

/// The key of handle `id`'s item.
pub(super) fn key(id: HandleId) -> (String, AttributeValue) {
    (PK.to_owned(), s(handle_key(id)))
}

/// The owner index's key of `owner`'s handles of `kind`. The kind's length first, so no two
/// (kind, owner) pairs spell the same key whatever bytes they hold.
pub(super) fn owner_kind(owner: &str, kind: &str) -> String {
    format!("{}:{kind}:{owner}", kind.len())
}

/// How many earlier write ids an item remembers (`w1` … `w15`).
const HISTORY: usize = 15;

/// An update's expression: the new data, version and expiry, its `write_id`, and the write ids
/// before it moved down one place (`w1` … `w15`; every operand reads the item as it was).
pub(super) const HISTORY_SHIFT_UPDATE: &str = "SET #data = :data, #version = #version + :one, \
     expires_at = :exp, expires_at_ms = :exp_ms, w15 = if_not_exists(w14, :none), w14 = if_not_exists(w13, :none), w13 = if_not_exists(w12, :none), w12 = if_not_exists(w11, :none), w11 = if_not_exists(w10, :none), w10 = if_not_exists(w9, :none), w9 = if_not_exists(w8, :none), w8 = if_not_exists(w7, :none), w7 = if_not_exists(w6, :none), w6 = if_not_exists(w5, :none), w5 = if_not_exists(w4, :none), w4 = if_not_exists(w3, :none), w3 = if_not_exists(w2, :none), w2 = if_not_exists(w1, :none), \
     w1 = if_not_exists(write_id, :none), write_id = :wid";

/// The write ids an item remembers, newest first: `write_id`, then `w1` … `w15`.
pub(super) fn write_history(item: &Item) -> Vec<&str> {
    std::iter::once("write_id".to_owned())
        .chain((1..=HISTORY).map(|i| format!("w{i}")))
        .filter_map(|name| item::text(item, &name))
        .filter(|w| !w.is_empty())
        .collect()
}

/// The version an update's write id says it made (`<version>:<uuid>`); `None` for other ids
/// (creates, touches' absence, ids written before the tag existed).
pub(super) fn version_of(write_id: &str) -> Option<u64> {
    write_id.split_once(':')?.0.parse().ok()
}

/// The handle id in an item's (or a key's) `pk`.
pub(super) fn id_of(item: &Item) -> Option<HandleId> {
    item::text(item, PK)?.strip_prefix("h#")?.parse().ok()
}

/// A stored item as a handle, plus its `write_id`.
pub(super) fn parse(item: &Item) -> Result<(Handle, Option<String>), HandleError> {
    let text = |name: &str| item::text(item, name).ok_or_else(|| corrupt(name));
    let number = |name: &str| item::number(item, name).ok_or_else(|| corrupt(name));
    let id = id_of(item).ok_or_else(|| corrupt(PK))?;
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

pub(super) fn corrupt(attribute: &str) -> HandleError {
    tracing::error!(attribute, "a handle item in DynamoDB is malformed");
    HandleError::Unavailable(format!(
        "a stored handle is malformed (attribute {attribute})"
    ))
}

/// Whether `item` is a deleted handle's tombstone.
pub(super) fn is_tombstone(item: &Item) -> bool {
    matches!(item.get(DELETED), Some(AttributeValue::Bool(true)))
}

/// The old item of a failed conditional write, if it is a live handle of `owner` (not expired,
/// not a tombstone).
pub(super) fn live_old(
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

/// A failed SDK call as [`HandleError`]. A read (`maybe_applied` false) or a write no attempt
/// of which can have landed: bad requests are `Invalid`, everything else (timeouts,
/// unreachable endpoint, throttling after every retry, missing table, no permission) is
/// `Unavailable`, with the cause for the logs. A write some attempt of which may have landed is
/// `Indeterminate`.
pub(super) fn failure<E, R>(
    operation: &str,
    error: &SdkError<E, R>,
    maybe_applied: bool,
) -> HandleError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug,
{
    if maybe_applied {
        return indeterminate(operation, error);
    }
    unavailable(operation, error)
}

pub(super) fn indeterminate<E, R>(operation: &str, error: &SdkError<E, R>) -> HandleError
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
