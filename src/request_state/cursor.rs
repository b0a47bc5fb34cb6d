//! Self-contained, signed list cursors.
//!
//! A cursor carries the list it belongs to and where the next page starts (an offset in a
//! server list, a position in a caller's handles), signed with an HMAC under a key derived
//! from the server's request-state key. Any instance holding the key can continue any list (no
//! session, no table), and a client can neither forge a position nor reuse a `tools/list`
//! cursor on `prompts/list`. A list of one caller's things also signs who it belongs to (its
//! scope), so one caller's cursor is refused on another's list.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{digest, hmac};

const VERSION: u8 = 1;
const TAG_LEN: usize = 32;
/// The version and kind bytes before the position.
const HEAD_LEN: usize = 2;
/// The longest position a cursor carries (a handle list's: a time and an id).
const MAX_POSITION_LEN: usize = 24;
/// Longest cursor accepted; anything longer is garbage by construction.
const MAX_ENCODED_LEN: usize = (HEAD_LEN + MAX_POSITION_LEN + TAG_LEN).div_ceil(3) * 4;

/// Which list a cursor pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools = 1,
    Prompts = 2,
    Resources = 3,
    ResourceTemplates = 4,
    /// One caller's handles of one kind (`Handles::list`).
    Handles = 5,
}

/// Signs with the current key and verifies with every configured key, so a
/// key rotation does not break a client half-way through a list.
#[derive(Clone)]
pub(crate) struct CursorSigner {
    keys: Vec<hmac::Key>,
}

impl std::fmt::Debug for CursorSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorSigner(<redacted>)")
    }
}

impl CursorSigner {
    /// Derives the cursor keys from the request-state keys (signing key
    /// first), so cursors and `requestState` never share a MAC key.
    pub(crate) fn new<K: AsRef<[u8]>>(request_state_keys: &[K]) -> Self {
        let keys = request_state_keys
            .iter()
            .map(|key| {
                let master = hmac::Key::new(hmac::HMAC_SHA256, key.as_ref());
                let derived = hmac::sign(&master, b"mcp-lambda list cursor v1");
                hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref())
            })
            .collect();
        Self { keys }
    }

    /// A cursor at `offset` of a server list.
    pub(crate) fn encode(&self, kind: ListKind, offset: u32) -> String {
        self.seal(kind, &[], &offset.to_be_bytes())
    }

    /// The offset a cursor points at, or `None` for a garbage, tampered or
    /// foreign cursor.
    pub(crate) fn decode(&self, kind: ListKind, cursor: &str) -> Option<u32> {
        let position = self.open(kind, &[], cursor)?;
        Some(u32::from_be_bytes(position.as_slice().try_into().ok()?))
    }

    /// A cursor at `position` (at most 24 bytes) of the list `scope` names (empty for a server
    /// list; the owner and kind for a caller's handles). The scope is signed, not carried.
    pub(crate) fn seal(&self, kind: ListKind, scope: &[u8], position: &[u8]) -> String {
        debug_assert!(position.len() <= MAX_POSITION_LEN);
        let mut bytes = Vec::with_capacity(HEAD_LEN + position.len() + TAG_LEN);
        bytes.push(VERSION);
        bytes.push(kind as u8);
        bytes.extend_from_slice(position);
        let tag = hmac::sign(&self.keys[0], &signed(&bytes, scope));
        bytes.extend_from_slice(tag.as_ref());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position a cursor of `kind` on the list `scope` names points at, or `None` for a
    /// garbage, tampered or foreign cursor (another list's, another scope's, another key's).
    pub(crate) fn open(&self, kind: ListKind, scope: &[u8], cursor: &str) -> Option<Vec<u8>> {
        if cursor.len() > MAX_ENCODED_LEN {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        let body_len = bytes.len().checked_sub(TAG_LEN)?;
        if body_len < HEAD_LEN {
            return None;
        }
        let (body, tag) = bytes.split_at(body_len);
        let message = signed(body, scope);
        // ring compares the tag in constant time.
        self.keys
            .iter()
            .any(|key| hmac::verify(key, &message, tag).is_ok())
            .then_some(())?;
        if body[0] != VERSION || body[1] != kind as u8 {
            return None;
        }
        Some(body[HEAD_LEN..].to_vec())
    }
}

/// What the tag covers: the cursor's body, then the scope's digest (fixed-length, so no body
/// and scope can be cut differently into the same message).
fn signed(body: &[u8], scope: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(body.len() + 32);
    message.extend_from_slice(body);
    message.extend_from_slice(digest::digest(&digest::SHA256, scope).as_ref());
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_on_any_instance_with_the_same_key() {
        let a = CursorSigner::new(&[[9u8; 32]]);
        let b = CursorSigner::new(&[[9u8; 32]]);
        let cursor = a.encode(ListKind::Tools, 200);
        assert_eq!(b.decode(ListKind::Tools, &cursor), Some(200));
    }

    #[test]
    fn cursors_signed_before_a_key_rotation_still_continue() {
        let old = CursorSigner::new(&[[1u8; 32]]);
        let rotated = CursorSigner::new(&[[2u8; 32], [1u8; 32]]);
        let cursor = old.encode(ListKind::Prompts, 7);
        assert_eq!(rotated.decode(ListKind::Prompts, &cursor), Some(7));
    }

    #[test]
    fn tampered_foreign_and_garbage_cursors_are_refused() {
        let signer = CursorSigner::new(&[[9u8; 32]]);
        let cursor = signer.encode(ListKind::Tools, 100);
        assert_eq!(signer.decode(ListKind::Prompts, &cursor), None);
        assert_eq!(
            CursorSigner::new(&[[8u8; 32]]).decode(ListKind::Tools, &cursor),
            None
        );
        let mut bytes = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        bytes[5] ^= 1;
        assert_eq!(
            signer.decode(ListKind::Tools, &URL_SAFE_NO_PAD.encode(bytes)),
            None
        );
        for garbage in ["", "abc", "!!!!", &"A".repeat(1000)] {
            assert_eq!(signer.decode(ListKind::Tools, garbage), None);
        }
    }

    #[test]
    fn a_scoped_cursor_opens_only_on_its_own_scope_and_kind() {
        let signer = CursorSigner::new(&[[9u8; 32]]);
        let position = [7u8; 24];
        let cursor = signer.seal(ListKind::Handles, b"alice", &position);
        assert!(cursor.len() <= MAX_ENCODED_LEN, "{}", cursor.len());
        assert_eq!(
            signer.open(ListKind::Handles, b"alice", &cursor),
            Some(position.to_vec())
        );
        assert_eq!(signer.open(ListKind::Handles, b"bob", &cursor), None);
        assert_eq!(signer.open(ListKind::Handles, b"", &cursor), None);
        assert_eq!(signer.open(ListKind::Tools, b"alice", &cursor), None);
        // A server list's cursor is not a handle list's, whatever its scope.
        let offset = signer.encode(ListKind::Tools, 3);
        assert_eq!(signer.open(ListKind::Handles, b"", &offset), None);
    }
}
