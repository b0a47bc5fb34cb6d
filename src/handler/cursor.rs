//! Self-contained, signed list cursors.
//!
//! A cursor carries the list it belongs to and the offset of the next page,
//! signed with an HMAC under a key derived from the server's request-state
//! key. Any instance holding the key can continue any list (no session, no
//! table), and a client can neither forge an offset nor reuse a `tools/list`
//! cursor on `prompts/list`.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::hmac;

const VERSION: u8 = 1;
const TAG_LEN: usize = 32;
const BODY_LEN: usize = 1 + 1 + 4;
/// Longest cursor accepted; anything longer is garbage by construction.
const MAX_ENCODED_LEN: usize = 96;

/// Which list a cursor pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListKind {
    Tools = 1,
    Prompts = 2,
    Resources = 3,
    ResourceTemplates = 4,
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

    pub(crate) fn encode(&self, kind: ListKind, offset: u32) -> String {
        let mut bytes = Vec::with_capacity(BODY_LEN + TAG_LEN);
        bytes.push(VERSION);
        bytes.push(kind as u8);
        bytes.extend_from_slice(&offset.to_be_bytes());
        let tag = hmac::sign(&self.keys[0], &bytes);
        bytes.extend_from_slice(tag.as_ref());
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The offset a cursor points at, or `None` for a garbage, tampered or
    /// foreign cursor.
    pub(crate) fn decode(&self, kind: ListKind, cursor: &str) -> Option<u32> {
        if cursor.len() > MAX_ENCODED_LEN {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
        if bytes.len() != BODY_LEN + TAG_LEN {
            return None;
        }
        let (body, tag) = bytes.split_at(BODY_LEN);
        // ring compares the tag in constant time.
        self.keys
            .iter()
            .any(|key| hmac::verify(key, body, tag).is_ok())
            .then_some(())?;
        if body[0] != VERSION || body[1] != kind as u8 {
            return None;
        }
        Some(u32::from_be_bytes(body[2..6].try_into().ok()?))
    }
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
}
