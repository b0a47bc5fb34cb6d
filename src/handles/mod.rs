//! Handles: small pieces of state a tool hands out by id instead of keeping a session.
//!
//! MCP 2026-07-28 is stateless: any request may land on any Lambda instance, so state that must
//! outlive one call lives in a [`HandleStore`] and is referenced by an explicit id the client
//! sends back each time (a basket id, a job id). Two backends: `DynamoDbHandleStore` (feature `dynamodb`), one
//! conditional request per operation on a table shared by every instance, and
//! [`MemoryHandleStore`] for local use and tests. [`HandleSettings::open`] picks one (`MCP_HANDLES_TABLE`).
//!
//! The rules every backend keeps:
//!
//! - **Ids are unguessable.** A [`HandleId`] is a UUIDv4 from the OS CSPRNG. With auth off the id
//!   is the only secret, so keep the TTL short there. A keyed handle's id is derived from its
//!   owner, kind and key instead (see below); the owner binding is what keeps it the owner's.
//! - **A handle belongs to its owner.** Every operation names the owner (normally the request's
//!   principal). A handle owned by someone else answers exactly like a missing one,
//!   [`HandleError::NotFound`], so ids cannot be probed.
//! - **Expiry is enforced on read.** A handle past its expiry is gone for every operation, even
//!   if the backend has not deleted it yet (DynamoDB's TTL sweep can lag by days).
//!   [`update`](HandleStore::update) and [`touch`](HandleStore::touch) slide the expiry forward:
//!   the TTL measures inactivity.
//! - **Writes are optimistic.** Each handle carries a `version`, starting at 1 and bumped by every
//!   [`update`](HandleStore::update) and [`touch`](HandleStore::touch). A write that names a
//!   stale version fails with
//!   [`HandleError::Conflict`]; re-read and retry. A `Conflict` is only answered when the write
//!   certainly did not land, so the retry cannot apply a change twice.
//! - **A write's outcome is told truthfully.** A write retried by the backend after a lost
//!   answer recognises its own landed attempt and succeeds; a backend that can repeat a write
//!   safely (the DynamoDB store: same `write_id`, same condition) does so until it learns the
//!   outcome. A write whose outcome nobody knows (the request went out, no answer came back,
//!   and the backend stayed unreachable) is [`HandleError::Indeterminate`], never
//!   [`HandleError::Unavailable`], which promises that nothing changed. Such a write may still
//!   land later (it can be queued in the backend); a [`touch`](HandleStore::touch) settles an
//!   update or a versioned delete: it bumps the version, so once it has answered, the handle it
//!   returns shows the write or the write can never land.
//! - **Deleted is gone.** A deleted handle is [`HandleError::NotFound`] for every operation,
//!   exactly like one that never existed (a stale version names no `Conflict`).
//! - **Data is bounded.** Serialized data above [`MAX_DATA_BYTES`] is refused, so every handle
//!   fits in one DynamoDB item (400 KB).
//!
//! # Keyed handles: this caller's one X
//!
//! A tool with no id argument ("my settings", "my cart", "increment my counter") uses
//! [`Handles::keyed`]: the caller's handle named by a key, created at first use. Its id is
//! derived from (owner, kind, key), and the store creates at an id only if no live handle holds
//! it ([`HandleStore::get_or_create`]: a conditional put in DynamoDB, one lock in memory), so
//! concurrent first uses on any number of instances end with one handle and every change
//! applied. Listing the caller's handles and creating one if none is **not** that: two calls
//! both see none and both create.
//!
//! ```
//! use std::time::Duration;
//! use mcp_lambda::{Caller, handles::{self, Handles}};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), handles::HandleError> {
//! let counters: Handles<u64> = Handles::new(handles::memory(), "counter", Duration::from_secs(3600));
//! let caller = Caller::anonymous();
//! let mine = counters.keyed(&caller, "default");
//! assert_eq!(mine.value_or(0).await?, 0); // nothing created yet
//! assert_eq!(mine.modify_or_create(0, |n| *n += 1).await?.value, 1);
//! mine.delete().await?;
//! assert_eq!(mine.read().await?, None);
//! # Ok(())
//! # }
//! ```
//!
//! # Example: read-modify-write with retry
//!
//! ```
//! use std::time::Duration;
//! use mcp_lambda::handles::{self, HandleError};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), HandleError> {
//! let store = handles::memory();
//! let ttl = Duration::from_secs(3600);
//! let counter = store.create("alice", "counter", json!({ "n": 0 }), ttl).await?;
//!
//! // Increment, retrying if another request got there first.
//! let updated = loop {
//!     let current = store.get("alice", counter.id).await?;
//!     let n = current.data["n"].as_u64().unwrap_or(0);
//!     match store.update("alice", counter.id, current.version, json!({ "n": n + 1 }), ttl).await {
//!         Err(HandleError::Conflict { .. }) => continue,
//!         other => break other?,
//!     }
//! };
//! assert_eq!(updated.data["n"], 1);
//! assert_eq!(updated.version, 2);
//!
//! // Someone else asking for the same id learns nothing.
//! assert!(matches!(store.get("mallory", counter.id).await, Err(HandleError::NotFound)));
//! # Ok(())
//! # }
//! ```

#[cfg(feature = "dynamodb")]
mod dynamodb;
mod id;
mod memory;
mod quota;
mod settings;
mod typed;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

#[cfg(feature = "dynamodb")]
pub use crate::aws::table::{OWNER_INDEX, TABLE_DEFINITION};
#[cfg(feature = "dynamodb")]
pub use dynamodb::{DynamoDbHandleStore, TOMBSTONE_TTL};
pub use id::{HandleId, ParseHandleIdError};
pub use memory::MemoryHandleStore;
pub use quota::CallerQuota;
pub use settings::HandleSettings;

/// The handle store, as [`TableError`](crate::aws::TableError) names it.
const STORE: &str = "handle store";
pub use typed::{
    DEFAULT_PAGE_SIZE, HandleWrites, Handles, Keyed, MAX_ATTEMPTS, MAX_REQUEST_KEY_BYTES,
    MAX_REQUEST_KEYS, Page, RequestKey, Stored,
};

/// The largest accepted `data`, in bytes of compact JSON.
///
/// Below DynamoDB's 400 KB item limit, leaving room for the key and the other attributes.
#[doc(hidden)]
pub const MAX_DATA_BYTES: usize = 350 * 1024;

/// The longest accepted owner, in bytes.
#[doc(hidden)]
pub const MAX_OWNER_BYTES: usize = 1024;

/// The longest accepted kind, in bytes.
#[doc(hidden)]
pub const MAX_KIND_BYTES: usize = 64;

/// The longest accepted key of a keyed handle ([`Handles::keyed`]), in bytes.
pub const MAX_KEY_BYTES: usize = 64;

/// One stored handle, as a [`HandleStore`] returns it.
///
/// Times are milliseconds since the Unix epoch. Milliseconds let tests (and the in-memory store)
/// use sub-second TTLs; a DynamoDB backend stores [`expires_at_secs`](Handle::expires_at_secs)
/// as the table's TTL attribute, since DynamoDB's TTL wants whole epoch seconds, and may enforce
/// expiry at that granularity.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Handle {
    /// The id the client holds.
    pub id: HandleId,
    /// Who may use the handle (normally derived from the request's principal).
    pub owner: String,
    /// What the handle is, chosen by the tool (`"basket"`); not interpreted by the store.
    pub kind: String,
    /// The tool's state.
    pub data: serde_json::Value,
    /// 1 at creation, +1 on every [`update`](HandleStore::update) and
    /// [`touch`](HandleStore::touch).
    pub version: u64,
    /// When the handle was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When the handle stops existing unless used again, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl Handle {
    /// A handle just created at `now_ms`: version 1, expiring after `ttl`.
    pub(crate) fn created(
        id: HandleId,
        owner: &str,
        kind: &str,
        data: serde_json::Value,
        now_ms: u64,
        ttl: Duration,
    ) -> Self {
        Self {
            id,
            owner: owner.to_owned(),
            kind: kind.to_owned(),
            data,
            version: 1,
            created_at_ms: now_ms,
            expires_at_ms: expiry_ms(now_ms, ttl),
        }
    }

    /// The expiry in whole seconds since the Unix epoch, rounded up (DynamoDB's TTL attribute).
    pub fn expires_at_secs(&self) -> u64 {
        self.expires_at_ms.div_ceil(1000)
    }

    /// The expiry as a [`SystemTime`].
    pub fn expires_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.expires_at_ms)
    }

    /// The creation time as a [`SystemTime`].
    pub fn created_at(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.created_at_ms)
    }
}

/// Where a listing of one owner's handles goes on: after this handle. Listings are newest
/// first (by [`created_at_ms`](Handle::created_at_ms), then by id), so a position is the last
/// handle a page held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListPosition {
    /// The creation time of the last handle listed.
    pub created_at_ms: u64,
    /// Its id.
    pub id: HandleId,
}

impl ListPosition {
    /// Where a listing goes on after `handle`.
    pub fn after(handle: &Handle) -> Self {
        Self {
            created_at_ms: handle.created_at_ms,
            id: handle.id,
        }
    }
}

/// One page of an owner's handles, as [`HandleStore::list`] returns it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HandlePage {
    /// Live handles, newest first; at most the limit asked for, and possibly fewer (even
    /// none) with more to come: a page ends where the backend's read ended.
    pub handles: Vec<Handle>,
    /// Where the next page starts; `None` when the listing is complete.
    pub next: Option<ListPosition>,
}

/// The most handles one [`HandleStore::list`] page holds.
#[doc(hidden)]
pub const MAX_LIST_PAGE: usize = 100;

/// Why a [`HandleStore`] operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HandleError {
    /// No live handle with this id belongs to this owner: it never existed, it expired, it was
    /// deleted, or it belongs to someone else. The cases are deliberately indistinguishable.
    #[error("no such handle: it does not exist, has expired, or belongs to someone else")]
    NotFound,
    /// The handle changed since it was read; re-read it and retry the change.
    #[error(
        "the handle was changed concurrently (now at version {current_version}); re-read it and retry"
    )]
    Conflict {
        /// The version now stored.
        current_version: u64,
    },
    /// The backend could not be reached or refused to work, and **nothing was changed**: the
    /// request never reached it (connection refused, connect timeout), or it answered that it did
    /// not apply it (throttled after the retries, no permission). The same call may succeed
    /// later and is safe to repeat.
    #[error("handle store unavailable: {0}; try again shortly")]
    Unavailable(String),
    /// A write was sent but no answer said whether it was applied (a timeout, or the connection
    /// was lost, after the request had gone out): **it may or may not have been applied**. Read
    /// the handle before repeating the change. Only writes ([`create`](HandleStore::create),
    /// [`update`](HandleStore::update), [`touch`](HandleStore::touch),
    /// [`delete`](HandleStore::delete)) answer this; a read that fails changed nothing and is
    /// [`Unavailable`](Self::Unavailable).
    #[error("handle store did not confirm the write ({0}): it may or may not have been applied")]
    Indeterminate(String),
    /// The request itself is wrong (empty owner, data too large, zero TTL); retrying won't help.
    #[error("invalid handle request: {0}")]
    Invalid(String),
    /// The stored data does not decode as the type a [`Handles<T>`] reads it as (the type
    /// changed since the handle was written, or the data was edited by hand). Only the typed
    /// layer answers this; retrying won't help.
    #[error("stored handle does not decode: {0}")]
    Decode(String),
    /// A [`RequestKey`] the handle remembers was used again for another change; nothing was
    /// changed. Only the typed layer answers this.
    #[error(
        "request key {key} was already used on this handle for another change ({change}); use a new key for each change"
    )]
    RequestKeyReused {
        /// The reused key.
        key: String,
        /// What it was first used for.
        change: String,
    },
    /// A keyed handle's key ([`Handles::keyed`]) is empty, longer than [`MAX_KEY_BYTES`], or
    /// holds a character outside letters, digits, `_`, `-`, `.` and `:`; nothing was read or
    /// written. Retrying won't help. The key itself is left out of the message.
    #[error(
        "invalid key: a key is 1 to {MAX_KEY_BYTES} characters of letters, digits, '_', '-', \
         '.' and ':' ({0})"
    )]
    InvalidKey(&'static str),
    /// The owner already created as many handles in this window as one caller may (the
    /// store's [`CallerQuota`]); nothing was stored. The window turns after `retry_after`.
    #[error(
        "you have created {max} items in the last {window_secs} s, the most one caller may; \
         try again in {} s, or reuse or delete ones you have", retry_after.as_secs().max(1)
    )]
    CallerLimit {
        /// The limit.
        max: u32,
        /// The window's length, in seconds.
        window_secs: u64,
        /// Until the window turns.
        retry_after: std::time::Duration,
    },
}

impl HandleError {
    /// The refusal of `quota` at `now_ms`.
    pub(crate) fn over_quota(quota: &CallerQuota, now_ms: u64) -> Self {
        Self::CallerLimit {
            max: quota.max,
            window_secs: quota.window.as_secs(),
            retry_after: quota.window_at(now_ms).1,
        }
    }
}

/// A tool may return `Result<_, HandleError>`: the error becomes the tool result's text
/// (`isError: true`), which tells the model what happened and what to do.
/// The backend's own words (a table, an account, a timeout) stay in the log.
impl rmcp::model::IntoContents for HandleError {
    fn into_contents(self) -> Vec<rmcp::model::ContentBlock> {
        vec![rmcp::model::ContentBlock::text(self.public_text())]
    }
}

/// A handler returning `Result<_, McpError>` may use `?` on a [`HandleError`]: it becomes a
/// JSON-RPC error (HTTP 200, like every error of a tool call) with the text a tool result
/// would carry, so the backend's own words (a table, an account, a timeout) stay in the log.
///
/// | error | code |
/// |---|---|
/// | [`NotFound`](HandleError::NotFound), [`Invalid`](HandleError::Invalid), [`InvalidKey`](HandleError::InvalidKey), [`RequestKeyReused`](HandleError::RequestKeyReused) | -32602 invalid params: the client's id, key or arguments are wrong |
/// | [`Conflict`](HandleError::Conflict), [`Unavailable`](HandleError::Unavailable), [`Indeterminate`](HandleError::Indeterminate), [`Decode`](HandleError::Decode) | -32603 internal error: nothing the client sent is wrong |
/// | [`CallerLimit`](HandleError::CallerLimit) | -32603, with `data.retryAfterSeconds` |
///
/// The spec reserves -32020 … -32099 for its own codes and asks new code not to use the
/// legacy -32000 … -32019, so a full quota has no code of its own: -32603 with the wait in
/// `data`. A tool whose model should read and act on the error returns
/// `Result<_, HandleError>` instead (an `isError` tool result).
///
/// ```
/// use mcp_lambda::handles::HandleError;
/// use rmcp::model::{ErrorCode, ErrorData};
///
/// fn find() -> Result<u64, HandleError> {
///     Err(HandleError::NotFound)
/// }
/// fn tool() -> Result<u64, ErrorData> {
///     Ok(find()? + 1)
/// }
/// assert_eq!(tool().unwrap_err().code, ErrorCode::INVALID_PARAMS);
/// ```
impl From<HandleError> for rmcp::model::ErrorData {
    fn from(error: HandleError) -> Self {
        use rmcp::model::ErrorCode;
        let (code, data) = match &error {
            HandleError::NotFound
            | HandleError::Invalid(_)
            | HandleError::InvalidKey(_)
            | HandleError::RequestKeyReused { .. } => (ErrorCode::INVALID_PARAMS, None),
            HandleError::CallerLimit { retry_after, .. } => (
                ErrorCode::INTERNAL_ERROR,
                Some(serde_json::json!({ "retryAfterSeconds": retry_after.as_secs().max(1) })),
            ),
            HandleError::Conflict { .. }
            | HandleError::Unavailable(_)
            | HandleError::Indeterminate(_)
            | HandleError::Decode(_) => (ErrorCode::INTERNAL_ERROR, None),
        };
        rmcp::model::ErrorData::new(code, error.public_text(), data)
    }
}

impl HandleError {
    /// What a client is told: the error's own words, but for the backend's failures, whose
    /// reasons (a table, an account, a timeout) are logged here and replaced by advice.
    fn public_text(&self) -> String {
        match self {
            HandleError::Unavailable(reason) => {
                tracing::warn!(%reason, "handle store unavailable");
                "The store is temporarily unavailable. Nothing was changed; try the same call \
                 again in a few seconds."
                    .to_owned()
            }
            HandleError::Indeterminate(reason) => {
                tracing::warn!(%reason, "handle store did not confirm a write");
                "The store did not confirm this change in time, so it may or may not have been \
                 applied. Read it before trying again."
                    .to_owned()
            }
            HandleError::Decode(reason) => {
                tracing::error!(%reason, "a stored handle does not decode");
                "This item could not be read on the server.".to_owned()
            }
            other => other.to_string(),
        }
    }
}

/// Durable, owner-bound state referenced by id.
///
/// Every operation is async and fallible and takes the owner; see the [module docs](self) for
/// the rules all backends keep. The trait is dyn-compatible: use it as `Arc<dyn HandleStore>`.
///
/// Each `ttl` is the inactivity window: the handle expires `ttl` after the latest
/// [`create`](Self::create), [`update`](Self::update) or [`touch`](Self::touch). A zero `ttl` is
/// [`HandleError::Invalid`].
pub trait HandleStore: Send + Sync + 'static {
    /// Stores a new handle at version 1 with a fresh random id.
    ///
    /// # Errors
    ///
    /// [`HandleError::Invalid`] for an empty or overlong owner or kind, a zero `ttl`, or `data`
    /// larger than [`MAX_DATA_BYTES`]; [`HandleError::Unavailable`] when the backend is down
    /// or full; [`HandleError::Indeterminate`] when the answer was lost (a handle may exist,
    /// but its id never reached the caller, so it is unreachable and expires unused).
    fn create<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>>;

    /// Reads a live handle. Does not extend its expiry (use [`touch`](Self::touch) for that).
    ///
    /// # Errors
    ///
    /// [`HandleError::NotFound`] unless a live handle with this id belongs to `owner`.
    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<Handle, HandleError>>;

    /// Replaces the data if the stored version is still `expected_version`; bumps the version
    /// and slides the expiry to now + `ttl`. Returns the handle as stored.
    ///
    /// # Errors
    ///
    /// [`HandleError::Conflict`] if the version moved on (and this write certainly did not
    /// land); [`HandleError::NotFound`] as for [`get`](Self::get); [`HandleError::Invalid`] as
    /// for [`create`](Self::create); [`HandleError::Indeterminate`] when the outcome is unknown.
    fn update<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        expected_version: u64,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>>;

    /// Slides the expiry of a live handle to now + `ttl` and bumps its version without changing
    /// its data, and returns the handle. An expired handle stays expired.
    ///
    /// The version moves so that a touch is a fence: an [`update`](Self::update) or a
    /// versioned [`delete`](Self::delete) issued before it, even one whose answer was lost and
    /// that is still on its way ([`HandleError::Indeterminate`]), names a version that is now
    /// stale and can no longer land. The handle a touch returns is therefore final about every
    /// such earlier write: what it shows landed, and what it does not show never will.
    ///
    /// # Errors
    ///
    /// [`HandleError::NotFound`] as for [`get`](Self::get); [`HandleError::Indeterminate`] when
    /// the outcome is unknown (the expiry may or may not have moved; data never changes).
    fn touch<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Handle, HandleError>>;

    /// Deletes a live handle; with `Some(version)`, only if it is still at that version.
    /// Afterwards the handle is [`HandleError::NotFound`] for every operation. A delete the
    /// backend retries after a lost answer, and finds already done by itself, succeeds.
    ///
    /// # Errors
    ///
    /// [`HandleError::NotFound`] as for [`get`](Self::get) (also when it is already deleted);
    /// [`HandleError::Conflict`] if `expected_version` is given and stale;
    /// [`HandleError::Indeterminate`] when the outcome is unknown.
    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<(), HandleError>>;

    /// One page of `owner`'s live handles of `kind`, newest first: from the newest, or after
    /// `after` (the [`next`](HandlePage::next) of the page before), at most `limit` (1 to
    /// [`MAX_LIST_PAGE`]). Expired and deleted handles are never listed; another owner's never.
    /// Reading the whole list means following `next` until it is `None`; a handle created
    /// meanwhile may or may not appear, none is listed twice.
    ///
    /// The DynamoDB store reads one page with one `Query` on the table's owner index, which
    /// DynamoDB keeps up to date within a moment of each write (the index is eventually
    /// consistent): a handle created a fraction of a second ago may be missing from the first
    /// page, and one just deleted may still be listed there, though [`get`](Self::get) finds
    /// it gone.
    ///
    /// # Errors
    ///
    /// [`HandleError::Invalid`] for an empty or overlong owner or kind or a `limit` outside
    /// 1 to [`MAX_LIST_PAGE`]; [`HandleError::Unavailable`] when the backend cannot be read
    /// (for DynamoDB also when the table lacks the owner index of `infra/handles-table.json`).
    fn list<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        after: Option<ListPosition>,
        limit: usize,
    ) -> BoxFuture<'a, Result<HandlePage, HandleError>>;

    /// Reads `owner`'s live handle `id`, or, when there is none, stores a new one of `kind`
    /// holding `data` under that very id: get-or-create in one atomic step, so callers racing
    /// to create the same id (two instances, one caller's concurrent first calls) end with one
    /// handle, and each gets it. Returns the handle and whether this call created it.
    ///
    /// For ids derived from a name ([`Handles::keyed`]); a random id is
    /// [`create`](Self::create)'s. A handle gone from `id` (deleted, expired) is replaced. An
    /// existing handle keeps its data, version and expiry; a creation counts toward the
    /// [`CallerQuota`] like any, and a read of an existing one does not.
    ///
    /// The default answers [`HandleError::Invalid`]: a store written before keyed handles
    /// existed keeps compiling and says plainly that it cannot hold them.
    ///
    /// # Errors
    ///
    /// As [`create`](Self::create); [`HandleError::Unavailable`] also when the id is held
    /// by a live handle of another owner (only a hash collision can do that).
    fn get_or_create<'a>(
        &'a self,
        owner: &'a str,
        kind: &'a str,
        id: HandleId,
        data: serde_json::Value,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(Handle, bool), HandleError>> {
        let _ = (owner, kind, id, data, ttl);
        Box::pin(futures::future::ready(Err(HandleError::Invalid(
            "this handle store does not keep keyed handles (HandleStore::get_or_create)".into(),
        ))))
    }
}

/// A fresh in-memory store, shared by everything that clones the `Arc`.
///
/// Handles live as long as the process: right for local runs and tests, wrong for Lambda
/// (each instance would have its own baskets).
///
/// ```
/// let store = mcp_lambda::handles::memory();
/// let also_store = store.clone(); // same handles
/// # drop(also_store);
/// ```
pub fn memory() -> Arc<dyn HandleStore> {
    Arc::new(MemoryHandleStore::new())
}

/// Checks the arguments every backend must refuse the same way.
pub(crate) fn validate(
    owner: &str,
    kind: Option<&str>,
    data: Option<&serde_json::Value>,
    ttl: Duration,
) -> Result<(), HandleError> {
    validate_names(owner, kind)?;
    if ttl.is_zero() {
        return Err(HandleError::Invalid("ttl must be greater than zero".into()));
    }
    if let Some(data) = data {
        let size = serialized_len(data);
        if size > MAX_DATA_BYTES {
            return Err(HandleError::Invalid(format!(
                "data is {size} bytes as JSON; the limit is {MAX_DATA_BYTES}"
            )));
        }
    }
    Ok(())
}

/// Checks an owner and (when given) a kind: 1 to their maximum bytes.
fn validate_names(owner: &str, kind: Option<&str>) -> Result<(), HandleError> {
    if owner.is_empty() || owner.len() > MAX_OWNER_BYTES {
        return Err(HandleError::Invalid(format!(
            "owner must be 1 to {MAX_OWNER_BYTES} bytes, got {}",
            owner.len()
        )));
    }
    if let Some(kind) = kind
        && (kind.is_empty() || kind.len() > MAX_KIND_BYTES)
    {
        return Err(HandleError::Invalid(format!(
            "kind must be 1 to {MAX_KIND_BYTES} bytes, got {}",
            kind.len()
        )));
    }
    Ok(())
}

/// Checks a [`HandleStore::list`] request the way every backend must refuse it.
pub(crate) fn validate_list(owner: &str, kind: &str, limit: usize) -> Result<(), HandleError> {
    validate_names(owner, Some(kind))?;
    if !(1..=MAX_LIST_PAGE).contains(&limit) {
        return Err(HandleError::Invalid(format!(
            "a page holds 1 to {MAX_LIST_PAGE} handles, not {limit}"
        )));
    }
    Ok(())
}

/// Length of `value` as compact JSON, counted without allocating the text.
fn serialized_len(value: &serde_json::Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to an infallible writer cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// `ttl` in whole milliseconds, rounded up so a tiny non-zero TTL never means "already expired".
pub(crate) fn ttl_ms(ttl: Duration) -> u64 {
    let ms = ttl.as_nanos().div_ceil(1_000_000);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// When something touched at `now_ms` expires after `ttl`.
pub(crate) fn expiry_ms(now_ms: u64, ttl: Duration) -> u64 {
    now_ms.saturating_add(ttl_ms(ttl))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn data_at_the_limit_is_accepted_and_one_byte_more_is_not() {
        // `"…"` adds two bytes of quotes.
        let at_limit = json!("x".repeat(MAX_DATA_BYTES - 2));
        assert_eq!(serialized_len(&at_limit), MAX_DATA_BYTES);
        assert_eq!(
            validate("o", Some("k"), Some(&at_limit), Duration::from_secs(1)),
            Ok(())
        );
        let over = json!("x".repeat(MAX_DATA_BYTES - 1));
        assert!(matches!(
            validate("o", Some("k"), Some(&over), Duration::from_secs(1)),
            Err(HandleError::Invalid(_))
        ));
    }

    #[test]
    fn empty_owner_empty_kind_and_zero_ttl_are_invalid() {
        let ttl = Duration::from_secs(1);
        assert!(matches!(
            validate("", Some("k"), None, ttl),
            Err(HandleError::Invalid(_))
        ));
        assert!(matches!(
            validate("o", Some(""), None, ttl),
            Err(HandleError::Invalid(_))
        ));
        assert!(matches!(
            validate("o", Some("k"), None, Duration::ZERO),
            Err(HandleError::Invalid(_))
        ));
    }

    #[test]
    fn a_handle_error_becomes_an_mcp_error_without_the_backends_words() {
        use rmcp::model::{ErrorCode, ErrorData};
        let error = |e: HandleError| ErrorData::from(e);
        for client in [
            HandleError::NotFound,
            HandleError::Invalid("ttl must be greater than zero".into()),
            HandleError::InvalidKey("it is empty"),
            HandleError::RequestKeyReused {
                key: "k".into(),
                change: "add".into(),
            },
        ] {
            let text = client.to_string();
            let e = error(client);
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{text}");
            assert_eq!(e.message, text, "the client's mistake is said as it is");
            assert_eq!(e.data, None);
        }
        for (server, secret) in [
            (
                HandleError::Unavailable("table arn:aws:dynamodb:eu-west-1:1234:x".into()),
                "arn:aws",
            ),
            (
                HandleError::Indeterminate("DynamoDB UpdateItem timed out".into()),
                "UpdateItem",
            ),
            (
                HandleError::Decode("invalid type: string \"secret note\"".into()),
                "secret note",
            ),
        ] {
            let e = error(server);
            assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
            assert!(!e.message.contains(secret), "{}", e.message);
            assert_eq!(e.data, None);
        }
        let e = error(HandleError::Conflict { current_version: 9 });
        assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
        let e = error(HandleError::CallerLimit {
            max: 2,
            window_secs: 3600,
            retry_after: Duration::from_millis(1500),
        });
        assert_eq!(e.code, ErrorCode::INTERNAL_ERROR);
        assert_eq!(e.data, Some(json!({ "retryAfterSeconds": 1 })));
        assert!(e.message.contains("try again in 1 s"), "{}", e.message);

        // `?` converts in a handler returning rmcp's error.
        fn find() -> Result<(), HandleError> {
            Err(HandleError::NotFound)
        }
        fn handler() -> Result<(), ErrorData> {
            find()?;
            Ok(())
        }
        assert_eq!(handler().unwrap_err().code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn expiry_seconds_round_up() {
        let handle = Handle {
            id: HandleId::random().unwrap(),
            owner: "o".into(),
            kind: "k".into(),
            data: json!(null),
            version: 1,
            created_at_ms: 0,
            expires_at_ms: 1001,
        };
        assert_eq!(handle.expires_at_secs(), 2);
        assert_eq!(ttl_ms(Duration::from_micros(1)), 1);
    }
}
