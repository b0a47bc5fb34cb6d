//! The token that lets one invocation run a task round: `<expires_ms>.<hex HMAC-SHA256>` over
//! `task-round|<taskId>|<round>|<expires_ms>`, under a key derived from each request-state key
//! (so rotating `MCP_REQUEST_STATE_KEY` rotates it too).

use ring::hmac;

/// How long a dispatched round's token stays good.
pub(crate) const TOKEN_LIFETIME_MS: u64 = 15 * 60 * 1000;

/// The header a self-invocation carries its token in.
pub(crate) const HEADER: &str = "x-mcp-task-round";

/// Round-token keys: the first signs, every one verifies.
#[derive(Clone)]
pub(crate) struct RoundKeys(Vec<hmac::Key>);

impl std::fmt::Debug for RoundKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RoundKeys({} keys)", self.0.len())
    }
}

impl RoundKeys {
    /// Derives one key from each request-state key (signing key first).
    pub(crate) fn derive(request_state_keys: &[Vec<u8>]) -> Self {
        Self(
            request_state_keys
                .iter()
                .map(|secret| {
                    let outer = hmac::Key::new(hmac::HMAC_SHA256, secret);
                    let derived = hmac::sign(&outer, b"mcp-lambda task-round key v1");
                    hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref())
                })
                .collect(),
        )
    }

    /// A token for `round` of `task_id`, good until `expires_ms`.
    #[cfg_attr(
        not(all(feature = "dynamodb", feature = "aws-secrets")),
        allow(dead_code)
    )]
    pub(crate) fn sign(&self, task_id: &str, round: u32, expires_ms: u64) -> Option<String> {
        let key = self.0.first()?;
        let tag = hmac::sign(key, message(task_id, round, expires_ms).as_bytes());
        Some(format!("{expires_ms}.{}", hex(tag.as_ref())))
    }

    /// Whether `token` names `round` of `task_id` and is still good at `now_ms` (the tag is
    /// compared in constant time).
    pub(crate) fn verify(&self, token: &str, task_id: &str, round: u32, now_ms: u64) -> bool {
        let Some((expires, tag)) = token.split_once('.') else {
            return false;
        };
        let Ok(expires_ms) = expires.parse::<u64>() else {
            return false;
        };
        let Some(tag) = unhex(tag) else {
            return false;
        };
        if expires_ms < now_ms || expires_ms > now_ms + TOKEN_LIFETIME_MS + 60_000 {
            return false;
        }
        let message = message(task_id, round, expires_ms);
        self.0
            .iter()
            .any(|key| hmac::verify(key, message.as_bytes(), &tag).is_ok())
    }
}

fn message(task_id: &str, round: u32, expires_ms: u64) -> String {
    format!("task-round|{task_id}|{round}|{expires_ms}")
}

#[cfg_attr(
    not(all(feature = "dynamodb", feature = "aws-secrets")),
    allow(dead_code)
)]
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_for_its_round_only_and_until_it_expires() {
        let keys = RoundKeys::derive(&[b"0123456789abcdef0123456789abcdef".to_vec()]);
        let token = keys.sign("t1", 0, 10_000).unwrap();
        assert!(keys.verify(&token, "t1", 0, 9_000));
        assert!(!keys.verify(&token, "t1", 1, 9_000), "another round");
        assert!(!keys.verify(&token, "t2", 0, 9_000), "another task");
        assert!(!keys.verify(&token, "t1", 0, 10_001), "expired");
        let forged = token.replace("10000.", "20000.");
        assert!(!keys.verify(&forged, "t1", 0, 9_000), "a moved expiry");
        assert!(!keys.verify("", "t1", 0, 9_000));
        assert!(!keys.verify("10000.zz", "t1", 0, 9_000));
        let other = RoundKeys::derive(&[b"another key, another deployment!".to_vec()]);
        assert!(!other.verify(&token, "t1", 0, 9_000), "another key");
        // Rotation: the old key still verifies as the second one.
        let rotated = RoundKeys::derive(&[
            b"another key, another deployment!".to_vec(),
            b"0123456789abcdef0123456789abcdef".to_vec(),
        ]);
        assert!(rotated.verify(&token, "t1", 0, 9_000));
    }
}
