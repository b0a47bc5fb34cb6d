//! Tokens already verified, so a client's next request skips the signature.
//!
//! An RSA or ECDSA verification costs more than the rest of a warm request.
//! A client sends the same token until it expires, so the verified result is
//! kept under the SHA-256 of the token (never the token itself) until the
//! token's own `exp`. The issuer, audience and signature of that exact byte
//! string were checked once; what can change — the time — is checked on every
//! hit, and scopes are decided per request from the cached principal. When
//! the JWKS is replaced (a key may have been withdrawn) the cache starts over.

use std::{collections::HashMap, sync::Mutex};

use ring::digest;

use super::jwt::Verified;

/// How many distinct tokens are remembered; a full cache drops the expired
/// entries, or everything if none has expired (an attacker spraying valid
/// tokens costs us verifications, not memory).
const CAPACITY: usize = 4096;

#[derive(Debug, Default)]
pub(crate) struct VerifiedTokens {
    entries: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// The JWKS generation the entries were verified under.
    generation: u64,
    tokens: HashMap<[u8; 32], Verified>,
}

impl Entries {
    /// The entries of `generation`, starting over for a newer one. `None` for
    /// an older one: a token verified under a replaced key set is not kept.
    fn at(&mut self, generation: u64) -> Option<&mut HashMap<[u8; 32], Verified>> {
        if generation > self.generation {
            self.tokens.clear();
            self.generation = generation;
        }
        (generation == self.generation).then_some(&mut self.tokens)
    }
}

impl VerifiedTokens {
    fn key(token: &str) -> [u8; 32] {
        let digest = digest::digest(&digest::SHA256, token.as_bytes());
        digest.as_ref().try_into().expect("SHA-256 is 32 bytes")
    }

    /// The cached verification of `token`, if it is still inside its window.
    pub(crate) fn get(
        &self,
        token: &str,
        generation: u64,
        now: f64,
        leeway: f64,
    ) -> Option<Verified> {
        let mut entries = self.entries.lock().expect("token cache poisoned");
        entries
            .at(generation)?
            .get(&Self::key(token))
            .filter(|verified| verified.valid_at(now, leeway))
            .cloned()
    }

    pub(crate) fn insert(
        &self,
        token: &str,
        verified: Verified,
        generation: u64,
        now: f64,
        leeway: f64,
    ) {
        let mut guard = self.entries.lock().expect("token cache poisoned");
        let Some(entries) = guard.at(generation) else {
            return;
        };
        if entries.len() >= CAPACITY {
            entries.retain(|_, v| v.valid_at(now, leeway));
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(Self::key(token), verified);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Principal;

    fn verified(expires: f64) -> Verified {
        Verified {
            principal: Principal {
                issuer: "https://issuer".into(),
                subject: "alice".into(),
                scopes: vec![],
                client_id: None,
            },
            not_before: None,
            expires,
        }
    }

    #[test]
    fn a_cached_token_is_served_only_inside_its_window() {
        let cache = VerifiedTokens::default();
        cache.insert("t1", verified(100.0), 1, 50.0, 0.0);
        assert!(cache.get("t1", 1, 99.0, 0.0).is_some());
        assert!(cache.get("t1", 1, 101.0, 0.0).is_none(), "expired");
        assert!(cache.get("t2", 1, 99.0, 0.0).is_none(), "another token");
        assert!(cache.get("t1", 2, 99.0, 0.0).is_none(), "a new key set");
        assert!(
            cache.get("t1", 1, 99.0, 0.0).is_none(),
            "the cache started over"
        );
    }

    #[test]
    fn the_cache_is_bounded() {
        let cache = VerifiedTokens::default();
        for i in 0..CAPACITY + 10 {
            cache.insert(&format!("t{i}"), verified(1e12), 0, 0.0, 0.0);
        }
        assert!(cache.entries.lock().unwrap().tokens.len() <= CAPACITY);
    }
}
