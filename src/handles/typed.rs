//! Typed handles bound to the caller: [`Handles<T>`] over any [`HandleStore`].

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Serialize, de::DeserializeOwned};

use super::{Handle, HandleError, HandleId, HandleStore, ListPosition, MAX_LIST_PAGE};
use crate::auth::Caller;
use crate::request_state::RequestStateKeys;
use crate::request_state::cursor::{CursorSigner, ListKind};

/// How many handles a [`Handles::list`] page holds unless set with
/// [`Handles::with_page_size`].
pub const DEFAULT_PAGE_SIZE: usize = 50;

/// Attempts at a read-modify-write before a contended handle answers
/// [`HandleError::Conflict`].
pub const MAX_ATTEMPTS: u32 = 16;

/// The request keys a handle remembers (its latest changes made with one).
pub const MAX_REQUEST_KEYS: usize = 32;

/// The longest request key id, in bytes.
pub const MAX_REQUEST_KEY_BYTES: usize = 64;

/// Told of every write that changes a handle, so listeners of a resource backed by it hear of
/// it. [`Changes`](crate::listen::Changes) is one; [`App::handles`](crate::App::handles)
/// connects it for you.
pub trait HandleWrites: Send + Sync + 'static {
    /// `id` was just changed or deleted. Failures are the implementation's to log: the write
    /// itself has landed.
    fn handle_written(&self, id: HandleId) -> BoxFuture<'_, ()>;
}

/// One typed handle as the store holds it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Stored<T> {
    /// The id the client holds.
    pub id: HandleId,
    /// The state.
    pub value: T,
    /// 1 at creation, +1 on every write and touch.
    pub version: u64,
    /// When the handle was created, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// When it stops existing unless used again, in milliseconds since the Unix epoch.
    pub expires_at_ms: u64,
}

impl<T> Stored<T> {
    /// The expiry in whole seconds since the Unix epoch, rounded up.
    pub fn expires_at_secs(&self) -> u64 {
        self.expires_at_ms.div_ceil(1000)
    }
}

/// One page of a caller's handles, as [`Handles::list`] returns it: newest first.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The handles, newest first. A page may be shorter than the page size (even empty) with
    /// more to come: follow [`next_cursor`](Self::next_cursor) until it is `None`.
    pub items: Vec<Stored<T>>,
    /// Where the next page starts, signed for this caller and this kind; `None` on the last
    /// page. Hand it to the client as it is (an MCP list's `nextCursor`).
    pub next_cursor: Option<String>,
}

/// A client-chosen key that makes a change safe to repeat: a handle remembers the latest
/// [`MAX_REQUEST_KEYS`] it was changed with, and a change repeating one is not applied again.
///
/// `change` describes what the key was used for (`"add TEA 2"`), so a key reused for another
/// change is refused instead of silently skipped.
///
/// ```
/// use mcp_lambda::handles::RequestKey;
/// assert!(RequestKey::new("7f0c-retry-1", "add TEA 2").is_ok());
/// assert!(RequestKey::new("has space", "add TEA 2").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RequestKey {
    id: String,
    change: String,
}

impl RequestKey {
    /// A key `id` (1 to [`MAX_REQUEST_KEY_BYTES`] of letters, digits, `_` and `-`; a UUID
    /// works) for the change `change` describes.
    ///
    /// # Errors
    ///
    /// [`HandleError::Invalid`] for an id outside that alphabet or length.
    pub fn new(id: impl Into<String>, change: impl Into<String>) -> Result<Self, HandleError> {
        let id = id.into();
        let ok = (1..=MAX_REQUEST_KEY_BYTES).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(HandleError::Invalid(format!(
                "a request key must be 1 to {MAX_REQUEST_KEY_BYTES} characters of letters, \
                 digits, '_' and '-' (a UUID works)"
            )));
        }
        Ok(Self {
            id,
            change: change.into(),
        })
    }

    /// The client's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// What a typed handle's `data` holds: the value and the request keys it remembers.
#[derive(Serialize, serde::Deserialize)]
struct Envelope<T> {
    value: T,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    requests: Vec<RequestKey>,
}

/// Typed, owner-bound state kept between calls: any `Serialize + DeserializeOwned` type in a
/// [`HandleStore`].
///
/// Every operation takes the [`Caller`], whose owner key the handle is bound to: another
/// caller's handle answers [`HandleError::NotFound`], exactly like a missing or expired one.
/// Each is one store request, but for the read-modify-writes ([`modify`](Self::modify),
/// [`take`](Self::take)), which read and then write conditionally on the version read,
/// retrying on a concurrent change (up to [`MAX_ATTEMPTS`], with jittered backoff). Every
/// write that changes a handle tells the [`HandleWrites`] it publishes to, so listeners of a
/// resource backed by it hear of it.
///
/// The store keeps `{"value": <T>}` (and the remembered [`RequestKey`]s) as the handle's
/// data, under the kind given here: a handle of another kind is not found.
///
/// ```
/// use std::time::Duration;
/// use mcp_lambda::{Caller, handles::{self, Handles}};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Counter {
///     n: u64,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), handles::HandleError> {
/// let counters: Handles<Counter> =
///     Handles::new(handles::memory(), "counter", Duration::from_secs(3600));
/// let ada = Caller::anonymous();
/// let counter = counters.create(&ada, Counter { n: 0 }).await?;
/// let counter = counters.modify(&ada, counter.id, |c| c.n += 1).await?;
/// assert_eq!((counter.value.n, counter.version), (1, 2));
/// # Ok(())
/// # }
/// ```
pub struct Handles<T> {
    store: Arc<dyn HandleStore>,
    kind: Arc<str>,
    ttl: Duration,
    writes: Option<Arc<dyn HandleWrites>>,
    cursors: Arc<CursorSigner>,
    page_size: usize,
    state: PhantomData<fn() -> T>,
}

impl<T> Clone for Handles<T> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            kind: self.kind.clone(),
            ttl: self.ttl,
            writes: self.writes.clone(),
            cursors: self.cursors.clone(),
            page_size: self.page_size,
            state: PhantomData,
        }
    }
}

/// The cursor signer of handles given no keys: one random key per process, so cursors work
/// within it (a local server) and nowhere else.
fn process_cursors() -> Arc<CursorSigner> {
    static SIGNER: OnceLock<Arc<CursorSigner>> = OnceLock::new();
    SIGNER
        .get_or_init(|| Arc::new(CursorSigner::new(RequestStateKeys::generate().all())))
        .clone()
}

impl<T> fmt::Debug for Handles<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handles")
            .field("kind", &self.kind)
            .field("ttl", &self.ttl)
            .field("publishes", &self.writes.is_some())
            .field("page_size", &self.page_size)
            .finish_non_exhaustive()
    }
}

impl<T> Handles<T>
where
    T: Serialize + DeserializeOwned + Send + 'static,
{
    /// Handles of `kind` (1 to 64 bytes, e.g. `"note"`) in `store`, expiring `ttl` after their
    /// last write or touch. [`App::handles`](crate::App::handles) builds one from the
    /// configuration, publishing to the app's listeners and signing [`list`](Self::list)
    /// cursors with the server's request-state key. Built here, cursors are signed with a key
    /// made for this process: give the server's with
    /// [`signing_cursors_with`](Self::signing_cursors_with) when several instances serve.
    pub fn new(store: Arc<dyn HandleStore>, kind: &str, ttl: Duration) -> Self {
        Self {
            store,
            kind: kind.into(),
            ttl,
            writes: None,
            cursors: process_cursors(),
            page_size: DEFAULT_PAGE_SIZE,
            state: PhantomData,
        }
    }

    /// Signs [`list`](Self::list) cursors with `keys` (and accepts cursors signed with any of
    /// them), so every instance holding the same keys continues every list. The same keys as
    /// the server's list cursors, under a key derived for cursors alone.
    pub fn signing_cursors_with(mut self, keys: &RequestStateKeys) -> Self {
        self.cursors = Arc::new(CursorSigner::new(keys.all()));
        self
    }

    /// Sets how many handles a [`list`](Self::list) page holds: 1 to
    /// [`MAX_LIST_PAGE`](super::MAX_LIST_PAGE) (a size outside is brought inside);
    /// [`DEFAULT_PAGE_SIZE`] unless set.
    pub fn with_page_size(mut self, size: usize) -> Self {
        self.page_size = size.clamp(1, MAX_LIST_PAGE);
        self
    }

    /// Tells `writes` of every write that changes a handle.
    pub fn publishing_to(mut self, writes: Arc<dyn HandleWrites>) -> Self {
        self.writes = Some(writes);
        self
    }

    /// The kind these handles are stored under.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// How long a handle lives without a write or touch.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The untyped store underneath.
    pub fn store(&self) -> &Arc<dyn HandleStore> {
        &self.store
    }

    /// Stores `value` as a new handle of `caller`'s, at version 1.
    ///
    /// # Errors
    ///
    /// As [`HandleStore::create`]; [`HandleError::Invalid`] also when `value` does not
    /// serialize to JSON.
    pub async fn create(&self, caller: &Caller, value: T) -> Result<Stored<T>, HandleError> {
        let data = encode(&value, &[])?;
        let handle = self
            .store
            .create(caller.owner_key(), &self.kind, data, self.ttl)
            .await?;
        Ok(stored(&handle, value))
    }

    /// Reads `caller`'s handle `id` without using it: its expiry stays where it is.
    ///
    /// # Errors
    ///
    /// [`HandleError::NotFound`] unless a live handle of this kind belongs to `caller`;
    /// [`HandleError::Decode`] when the stored data is not a `T`.
    pub async fn read(&self, caller: &Caller, id: HandleId) -> Result<Stored<T>, HandleError> {
        let handle = self.store.get(caller.owner_key(), id).await?;
        Ok(self.decode(handle)?.0)
    }

    /// Uses `caller`'s handle `id` without changing it: slides its expiry and bumps its
    /// version, so a write whose answer was lost can no longer land after it (see
    /// [`HandleStore::touch`]). Not a change: listeners are not told.
    ///
    /// # Errors
    ///
    /// As [`read`](Self::read); [`HandleError::Indeterminate`] when the answer was lost.
    pub async fn touch(&self, caller: &Caller, id: HandleId) -> Result<Stored<T>, HandleError> {
        let handle = self.store.touch(caller.owner_key(), id, self.ttl).await?;
        Ok(self.decode(handle)?.0)
    }

    /// Changes `caller`'s handle `id` with `change`, retrying on concurrent changes: reads,
    /// applies `change` to the value read, writes back conditionally on its version. Returns
    /// the handle as stored.
    ///
    /// # Errors
    ///
    /// As [`read`](Self::read); [`HandleError::Conflict`] after [`MAX_ATTEMPTS`] concurrent
    /// changes (nothing was changed); [`HandleError::Indeterminate`] when the write's answer
    /// was lost (look with [`touch`](Self::touch) before repeating it).
    pub async fn modify(
        &self,
        caller: &Caller,
        id: HandleId,
        mut change: impl FnMut(&mut T) + Send,
    ) -> Result<Stored<T>, HandleError> {
        self.try_modify(caller, id, None, |value: &mut T| {
            change(value);
            Ok::<_, HandleError>(())
        })
        .await
    }

    /// [`modify`](Self::modify) with a change that may refuse (its error is returned, nothing
    /// is written), and an optional [`RequestKey`]: a change made with a key the handle
    /// remembers is not applied again, and the handle is returned as it is.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_lambda::{Caller, handles::{self, HandleError, Handles, RequestKey}};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), HandleError> {
    /// let stock: Handles<u32> = Handles::new(handles::memory(), "stock", Duration::from_secs(60));
    /// let caller = Caller::anonymous();
    /// let item = stock.create(&caller, 3).await?;
    /// let take_one = |n: &mut u32| match n.checked_sub(1) {
    ///     Some(left) => Ok(*n = left),
    ///     None => Err(HandleError::Invalid("sold out".into())),
    /// };
    /// let key = RequestKey::new("order-1", "take 1")?;
    /// stock.try_modify(&caller, item.id, Some(key.clone()), take_one).await?;
    /// // The same order again (a client retrying after a lost answer) takes nothing.
    /// let again = stock.try_modify(&caller, item.id, Some(key), take_one).await?;
    /// assert_eq!(again.value, 2);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// `change`'s own error; the store's, as for [`modify`](Self::modify), converted into
    /// `E`; [`HandleError::RequestKeyReused`] when `key` was already used on this handle for
    /// another change.
    pub async fn try_modify<E: From<HandleError>>(
        &self,
        caller: &Caller,
        id: HandleId,
        key: Option<RequestKey>,
        change: impl FnMut(&mut T) -> Result<(), E> + Send,
    ) -> Result<Stored<T>, E> {
        self.modify_from(caller.owner_key(), id, None, key, change)
            .await
    }

    /// [`try_modify`](Self::try_modify), whose first attempt starts from `first` when given
    /// (a handle just read), sparing a read.
    async fn modify_from<E: From<HandleError>>(
        &self,
        owner: &str,
        id: HandleId,
        mut first: Option<Handle>,
        key: Option<RequestKey>,
        mut change: impl FnMut(&mut T) -> Result<(), E> + Send,
    ) -> Result<Stored<T>, E> {
        let mut current_version = 0;
        for attempt in 0..MAX_ATTEMPTS {
            let handle = match first.take() {
                Some(handle) => handle,
                None => self.store.get(owner, id).await?,
            };
            let (mut stored, mut requests) = self.decode(handle)?;
            if let Some(key) = &key {
                match requests.iter().find(|done| done.id == key.id) {
                    Some(done) if done.change == key.change => return Ok(stored),
                    Some(done) => {
                        return Err(HandleError::RequestKeyReused {
                            key: key.id.clone(),
                            change: done.change.clone(),
                        }
                        .into());
                    }
                    None => {}
                }
            }
            change(&mut stored.value)?;
            if let Some(key) = &key {
                requests.push(key.clone());
                let excess = requests.len().saturating_sub(MAX_REQUEST_KEYS);
                requests.drain(..excess);
            }
            let data = encode(&stored.value, &requests)?;
            match self
                .store
                .update(owner, id, stored.version, data, self.ttl)
                .await
            {
                Ok(handle) => {
                    self.written(id).await;
                    return Ok(self::stored(&handle, stored.value));
                }
                Err(HandleError::Conflict { current_version: v }) => {
                    current_version = v;
                    backoff(attempt).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        tracing::warn!(
            attempts = MAX_ATTEMPTS,
            kind = %self.kind,
            "a handle kept changing under a read-modify-write"
        );
        Err(HandleError::Conflict { current_version }.into())
    }

    /// Removes `caller`'s handle `id` if `check` accepts its value, and returns what it held:
    /// the delete is conditional on the version read, so what is returned is exactly what was
    /// removed (a concurrent change makes it read and check again).
    ///
    /// # Errors
    ///
    /// `check`'s error (nothing is removed); otherwise as for [`try_modify`](Self::try_modify).
    pub async fn take<E: From<HandleError>>(
        &self,
        caller: &Caller,
        id: HandleId,
        mut check: impl FnMut(&T) -> Result<(), E> + Send,
    ) -> Result<Stored<T>, E> {
        let owner = caller.owner_key();
        let mut current_version = 0;
        for attempt in 0..MAX_ATTEMPTS {
            let handle = self.store.get(owner, id).await?;
            let (stored, _) = self.decode(handle)?;
            check(&stored.value)?;
            match self.store.delete(owner, id, Some(stored.version)).await {
                Ok(()) => {
                    self.written(id).await;
                    return Ok(stored);
                }
                Err(HandleError::Conflict { current_version: v }) => {
                    current_version = v;
                    backoff(attempt).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(HandleError::Conflict { current_version }.into())
    }

    /// Deletes `caller`'s handle `id`, whatever it holds.
    ///
    /// # Errors
    ///
    /// As [`HandleStore::delete`].
    pub async fn delete(&self, caller: &Caller, id: HandleId) -> Result<(), HandleError> {
        self.store.delete(caller.owner_key(), id, None).await?;
        self.written(id).await;
        Ok(())
    }

    /// One page of `caller`'s handles of this kind, newest first: the first page without a
    /// cursor, the next with the [`next_cursor`](Page::next_cursor) of the one before. One
    /// store request per page (for DynamoDB one `Query` on the owner index, which trails each
    /// write by a moment). Expired and deleted handles are never listed, nor anyone else's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_lambda::{Caller, handles::{self, Handles}};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), handles::HandleError> {
    /// let notes: Handles<String> = Handles::new(handles::memory(), "note", Duration::from_secs(60))
    ///     .with_page_size(2);
    /// let ada = Caller::anonymous();
    /// for text in ["one", "two", "three"] {
    ///     notes.create(&ada, text.to_owned()).await?;
    /// }
    /// let first = notes.list(&ada, None).await?;
    /// assert_eq!(first.items.len(), 2);
    /// let rest = notes.list(&ada, first.next_cursor.as_deref()).await?;
    /// assert_eq!(rest.items.len(), 1);
    /// assert_eq!(rest.next_cursor, None);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`HandleError::Invalid`] for a cursor this list did not give `caller` (another
    /// caller's, another kind's, a forged or garbled one, one signed with a key no longer
    /// configured); [`HandleError::Unavailable`] as for [`HandleStore::list`];
    /// [`HandleError::Decode`] when a listed handle's data is not a `T`.
    pub async fn list(
        &self,
        caller: &Caller,
        cursor: Option<&str>,
    ) -> Result<Page<T>, HandleError> {
        let owner = caller.owner_key();
        let after = cursor
            .map(|cursor| self.open_cursor(owner, cursor))
            .transpose()?;
        let page = self
            .store
            .list(owner, &self.kind, after, self.page_size)
            .await?;
        let items = page
            .handles
            .into_iter()
            .map(|handle| Ok(self.decode(handle)?.0))
            .collect::<Result<_, HandleError>>()?;
        let next_cursor = page.next.map(|position| {
            let mut bytes = [0u8; 24];
            bytes[..8].copy_from_slice(&position.created_at_ms.to_be_bytes());
            bytes[8..].copy_from_slice(position.id.as_bytes());
            self.cursors
                .seal(ListKind::Handles, &self.cursor_scope(owner), &bytes)
        });
        Ok(Page { items, next_cursor })
    }

    /// `caller`'s own handle named `key`: "this caller's one X" (their settings, their cart,
    /// their counter), for a tool that takes no id. No request is made here; the handle is
    /// created by the first [`Keyed`] operation that needs it.
    ///
    /// One handle per (caller, kind, key), at an id derived from the three: calls racing to
    /// create it (a new caller's first calls, spread over instances) all end with the same
    /// one, since the store creates at that id only if no live handle holds it. Beyond that it
    /// is a handle like any: read, modified with retries, deleted, listed by
    /// [`list`](Self::list), expiring `ttl` after its last write, and counted once toward the
    /// caller's [`CallerQuota`](super::CallerQuota), when it is created.
    ///
    /// `key` is 1 to [`MAX_KEY_BYTES`](super::MAX_KEY_BYTES) characters of ASCII letters,
    /// digits, `_`, `-`, `.` and `:` (otherwise every operation answers
    /// [`HandleError::InvalidKey`]). A constant key (`"default"`) gives each caller one; a key
    /// from the client (a cart name) gives each caller one per name.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_lambda::{Caller, handles::{self, Handles}};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), handles::HandleError> {
    /// let counters: Handles<i64> =
    ///     Handles::new(handles::memory(), "counter", Duration::from_secs(3600));
    /// let ada = Caller::anonymous();
    /// // Read mine, or the default: nothing is created.
    /// assert_eq!(counters.keyed(&ada, "default").value_or(0).await?, 0);
    /// // Modify mine, creating it at 0 the first time.
    /// let counter = counters.keyed(&ada, "default").modify_or_create(0, |n| *n += 1).await?;
    /// assert_eq!(counter.value, 1);
    /// let counter = counters.keyed(&ada, "default").modify_or_create(0, |n| *n += 1).await?;
    /// assert_eq!(counter.value, 2);
    /// assert_eq!(counters.list(&ada, None).await?.items.len(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn keyed<'a>(&'a self, caller: &'a Caller, key: &'a str) -> Keyed<'a, T> {
        Keyed {
            handles: self,
            caller,
            key,
        }
    }

    /// What a list cursor is signed for: this owner's handles of this kind.
    fn cursor_scope(&self, owner: &str) -> Vec<u8> {
        let mut scope = Vec::with_capacity(self.kind.len() + 1 + owner.len());
        scope.extend_from_slice(self.kind.as_bytes());
        scope.push(0);
        scope.extend_from_slice(owner.as_bytes());
        scope
    }

    fn open_cursor(&self, owner: &str, cursor: &str) -> Result<ListPosition, HandleError> {
        let refused = || {
            HandleError::Invalid(format!(
                "this cursor does not continue your list of {}: pass the nextCursor of the \
                 page before, or none to start from the newest",
                self.kind
            ))
        };
        let bytes = self
            .cursors
            .open(ListKind::Handles, &self.cursor_scope(owner), cursor)
            .ok_or_else(refused)?;
        let bytes: [u8; 24] = bytes.try_into().map_err(|_| refused())?;
        let (time, id) = bytes.split_at(8);
        Ok(ListPosition {
            created_at_ms: u64::from_be_bytes(time.try_into().map_err(|_| refused())?),
            id: HandleId::from_bytes(id.try_into().map_err(|_| refused())?).ok_or_else(refused)?,
        })
    }

    /// A stored handle as this type, with the request keys it remembers. Another kind is not
    /// found: to a caller it is not one of these.
    fn decode(&self, handle: Handle) -> Result<(Stored<T>, Vec<RequestKey>), HandleError> {
        if handle.kind != *self.kind {
            return Err(HandleError::NotFound);
        }
        let Handle {
            id,
            data,
            version,
            created_at_ms,
            expires_at_ms,
            ..
        } = handle;
        let envelope: Envelope<T> = serde_json::from_value(data).map_err(|e| {
            tracing::error!(error = %e, kind = %self.kind, "a stored handle does not decode");
            HandleError::Decode(format!(
                "the stored {} does not decode as this type: {e}",
                self.kind
            ))
        })?;
        Ok((
            Stored {
                id,
                value: envelope.value,
                version,
                created_at_ms,
                expires_at_ms,
            },
            envelope.requests,
        ))
    }

    async fn written(&self, id: HandleId) {
        if let Some(writes) = &self.writes {
            writes.handle_written(id).await;
        }
    }
}

/// One caller's handle named by a key, as [`Handles::keyed`] returns it: created at first
/// use, at an id derived from the caller, the kind and the key.
pub struct Keyed<'a, T> {
    handles: &'a Handles<T>,
    caller: &'a Caller,
    key: &'a str,
}

impl<T> Clone for Keyed<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Keyed<'_, T> {}

impl<T> fmt::Debug for Keyed<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key may be the client's words; the owner is the caller's identity.
        f.debug_struct("Keyed")
            .field("kind", &self.handles.kind)
            .finish_non_exhaustive()
    }
}

impl<T> Keyed<'_, T>
where
    T: Serialize + DeserializeOwned + Send + 'static,
{
    /// The handle's id, whether or not it exists yet: the same for this caller, kind and key
    /// on every instance and across restarts. Usable with the id operations of [`Handles`]
    /// (and as a resource URI's id); another caller holding it reaches nothing.
    ///
    /// # Errors
    ///
    /// [`HandleError::InvalidKey`] for a key outside the alphabet or length.
    pub fn id(&self) -> Result<HandleId, HandleError> {
        validate_key(self.key)?;
        Ok(HandleId::derived(
            self.caller.owner_key(),
            &self.handles.kind,
            self.key,
        ))
    }

    /// The handle, or `None` when this caller has none by this key yet (or it expired, or was
    /// deleted). Creates nothing, and leaves the expiry where it is.
    ///
    /// # Errors
    ///
    /// [`HandleError::InvalidKey`]; otherwise as for [`Handles::read`], but for a missing
    /// handle, which is `Ok(None)`.
    pub async fn read(&self) -> Result<Option<Stored<T>>, HandleError> {
        match self.handles.read(self.caller, self.id()?).await {
            Err(HandleError::NotFound) => Ok(None),
            other => other.map(Some),
        }
    }

    /// The handle's value, or `default` when there is none yet: "mine, or the default".
    /// Creates nothing.
    ///
    /// # Errors
    ///
    /// As for [`read`](Self::read).
    pub async fn value_or(&self, default: T) -> Result<T, HandleError> {
        Ok(self.read().await?.map_or(default, |stored| stored.value))
    }

    /// The handle, created holding `default` if there is none: get-or-create in one atomic
    /// step of the store ([`HandleStore::get_or_create`]). An existing handle is returned as
    /// it is (its expiry unchanged).
    ///
    /// # Errors
    ///
    /// [`HandleError::InvalidKey`]; as for [`Handles::create`] (a creation may meet the
    /// [`CallerQuota`](super::CallerQuota): [`HandleError::CallerLimit`]); and as for
    /// [`Handles::read`].
    pub async fn get_or_create(&self, default: T) -> Result<Stored<T>, HandleError> {
        let (handle, created) = self.get_or_create_raw(default).await?;
        if created {
            self.handles.written(handle.id).await;
        }
        Ok(self.handles.decode(handle)?.0)
    }

    /// Changes the handle with `change`, creating it holding `default` first if there is none:
    /// "modify mine, starting from `default`". The change is applied exactly once per call,
    /// with retries on concurrent changes as [`Handles::modify`] does, so ten concurrent first
    /// calls of `|n| *n += 1` from `0` leave one handle holding 10.
    ///
    /// # Errors
    ///
    /// As for [`get_or_create`](Self::get_or_create) and [`Handles::modify`].
    pub async fn modify_or_create(
        &self,
        default: T,
        mut change: impl FnMut(&mut T) + Send,
    ) -> Result<Stored<T>, HandleError> {
        self.try_modify_or_create(default, None, |value: &mut T| {
            change(value);
            Ok::<_, HandleError>(())
        })
        .await
    }

    /// [`modify_or_create`](Self::modify_or_create) with a change that may refuse (nothing is
    /// written, and a handle created for it stays holding `default`) and an optional
    /// [`RequestKey`], as [`Handles::try_modify`].
    ///
    /// # Errors
    ///
    /// `change`'s own error; otherwise as for [`modify_or_create`](Self::modify_or_create) and
    /// [`Handles::try_modify`], converted into `E`.
    pub async fn try_modify_or_create<E: From<HandleError>>(
        &self,
        default: T,
        key: Option<RequestKey>,
        change: impl FnMut(&mut T) -> Result<(), E> + Send,
    ) -> Result<Stored<T>, E> {
        let (handle, created) = self.get_or_create_raw(default).await?;
        let id = handle.id;
        let result = self
            .handles
            .modify_from(self.caller.owner_key(), id, Some(handle), key, change)
            .await;
        if created && result.is_err() {
            // The creation landed even if the change did not.
            self.handles.written(id).await;
        }
        result
    }

    /// Deletes the handle.
    ///
    /// # Errors
    ///
    /// [`HandleError::InvalidKey`]; as for [`Handles::delete`] ([`HandleError::NotFound`] when
    /// there is none).
    pub async fn delete(&self) -> Result<(), HandleError> {
        self.handles.delete(self.caller, self.id()?).await
    }

    async fn get_or_create_raw(&self, default: T) -> Result<(Handle, bool), HandleError> {
        let id = self.id()?;
        let data = encode(&default, &[])?;
        self.handles
            .store
            .get_or_create(
                self.caller.owner_key(),
                &self.handles.kind,
                id,
                data,
                self.handles.ttl,
            )
            .await
    }
}

/// Checks a keyed handle's key: 1 to [`MAX_KEY_BYTES`](super::MAX_KEY_BYTES) of ASCII
/// letters, digits, `_ - . :`. A small alphabet, so a key is safe in a log line, a URI and a
/// DynamoDB attribute, and one name has one spelling (no Unicode look-alikes).
fn validate_key(key: &str) -> Result<(), HandleError> {
    if key.is_empty() {
        return Err(HandleError::InvalidKey("it is empty"));
    }
    if key.len() > super::MAX_KEY_BYTES {
        return Err(HandleError::InvalidKey("it is too long"));
    }
    if !key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
    {
        return Err(HandleError::InvalidKey("it holds another character"));
    }
    Ok(())
}

fn stored<T>(handle: &Handle, value: T) -> Stored<T> {
    Stored {
        id: handle.id,
        value,
        version: handle.version,
        created_at_ms: handle.created_at_ms,
        expires_at_ms: handle.expires_at_ms,
    }
}

fn encode<T: Serialize>(
    value: &T,
    requests: &[RequestKey],
) -> Result<serde_json::Value, HandleError> {
    #[derive(Serialize)]
    struct EnvelopeRef<'a, T> {
        value: &'a T,
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        requests: &'a [RequestKey],
    }
    serde_json::to_value(EnvelopeRef { value, requests })
        .map_err(|e| HandleError::Invalid(format!("the value does not serialize to JSON: {e}")))
}

/// Waits before retry `attempt` (0-based): full jitter over an exponential window, 2 ms
/// doubling up to 256 ms, so concurrent writers spread out instead of colliding again.
async fn backoff(attempt: u32) {
    let window = Duration::from_millis(2u64 << attempt.min(7));
    tokio::time::sleep(crate::aws::pause::up_to(window) + Duration::from_millis(1)).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Note {
        text: String,
    }

    fn notes() -> Handles<Note> {
        Handles::new(super::super::memory(), "note", Duration::from_secs(60))
    }

    #[tokio::test]
    async fn another_kind_and_another_caller_read_as_missing() {
        let notes = notes();
        let ada = Caller::anonymous();
        let note = notes
            .create(&ada, Note { text: "hi".into() })
            .await
            .unwrap();
        let other: Handles<Note> = Handles::new(notes.store().clone(), "memo", notes.ttl());
        assert_eq!(
            other.read(&ada, note.id).await.unwrap_err(),
            HandleError::NotFound
        );
        let mallory = Caller::from(crate::Principal {
            issuer: "i".into(),
            subject: "mallory".into(),
            scopes: vec![],
            client_id: None,
        });
        assert_eq!(
            notes.read(&mallory, note.id).await.unwrap_err(),
            HandleError::NotFound
        );
        assert_eq!(notes.read(&ada, note.id).await.unwrap().value.text, "hi");
    }

    #[tokio::test]
    async fn data_of_another_shape_is_a_decode_error_not_a_panic() {
        let notes = notes();
        let ada = Caller::anonymous();
        let raw = notes
            .store()
            .create(
                "anonymous",
                "note",
                serde_json::json!({"value": 7}),
                notes.ttl(),
            )
            .await
            .unwrap();
        assert!(matches!(
            notes.read(&ada, raw.id).await,
            Err(HandleError::Decode(_))
        ));
    }

    #[tokio::test]
    async fn a_refused_change_writes_nothing_and_a_reused_key_is_refused() {
        let notes = notes();
        let ada = Caller::anonymous();
        let note = notes.create(&ada, Note { text: "a".into() }).await.unwrap();
        let refused = notes
            .try_modify(&ada, note.id, None, |_| {
                Err(HandleError::Invalid("no".into()))
            })
            .await;
        assert!(matches!(refused, Err(HandleError::Invalid(_))));
        assert_eq!(notes.read(&ada, note.id).await.unwrap().version, 1);

        let key = RequestKey::new("k1", "append b").unwrap();
        let append = |n: &mut Note| {
            n.text.push('b');
            Ok::<_, HandleError>(())
        };
        let once = notes
            .try_modify(&ada, note.id, Some(key.clone()), append)
            .await
            .unwrap();
        let twice = notes
            .try_modify(&ada, note.id, Some(key), append)
            .await
            .unwrap();
        assert_eq!((once.value.text.as_str(), once.version), ("ab", 2));
        assert_eq!((twice.value.text.as_str(), twice.version), ("ab", 2));
        let reused = RequestKey::new("k1", "append c").unwrap();
        let err = notes
            .try_modify(&ada, note.id, Some(reused), append)
            .await
            .unwrap_err();
        assert!(
            matches!(err, HandleError::RequestKeyReused { ref change, .. } if change == "append b")
        );
    }
}
