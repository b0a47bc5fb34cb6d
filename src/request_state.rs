//! The shared key that seals MRTR `requestState` across instances.
//!
//! `requestState` comes back from the client, so it is attacker-controlled:
//! it is sealed (HMAC) with rmcp's [`RequestStateCodec`]. Every Lambda
//! instance must use the same key, so it is configured
//! (`MCP_REQUEST_STATE_KEY`), never generated per instance outside local mode.
//! Keys are named by a fingerprint of their bytes: every instance derives the
//! same key id without extra configuration, and rotation only means moving
//! the old key to `MCP_REQUEST_STATE_KEY_PREVIOUS`.

use ring::digest;
use rmcp::model::RequestStateCodec;

use crate::config::RequestStateKeys;

/// A codec that seals with the signing key and opens with every configured key.
///
/// ```
/// use mcp_lambda::config::RequestStateKeys;
/// let old = RequestStateKeys::new(vec![vec![1u8; 32]]).unwrap();
/// let rotated = RequestStateKeys::new(vec![vec![2u8; 32], vec![1u8; 32]]).unwrap();
/// let sealed = mcp_lambda::request_state::codec(&old).seal(b"step-2");
/// assert_eq!(mcp_lambda::request_state::codec(&rotated).open(&sealed).unwrap(), b"step-2");
/// ```
pub fn codec(keys: &RequestStateKeys) -> RequestStateCodec {
    let mut ring: Vec<(String, Vec<u8>)> = Vec::new();
    for key in keys.all() {
        let id = key_id(key);
        // The same key configured twice (current = previous) is one entry.
        if !ring.iter().any(|(existing, _)| *existing == id) {
            ring.push((id, key.clone()));
        }
    }
    RequestStateCodec::new_with_keyring(key_id(keys.signing()), ring)
        .expect("keys are validated at configuration time")
}

/// A stable, non-secret name for a key: the first 8 bytes of its SHA-256, hex.
pub(crate) fn key_id(key: &[u8]) -> String {
    let digest = digest::digest(&digest::SHA256, key);
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
