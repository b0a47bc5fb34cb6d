//! One caller's share of what a store keeps: at most so many creations per window.

use std::time::Duration;

/// At most `max` items created by one owner per `window` (windows aligned to the epoch): what
/// one caller holds is then at most `2 × max` while items live no longer than a window.
///
/// ```
/// use std::time::Duration;
/// use mcp_lambda::handles::{CallerQuota, MemoryHandleStore};
///
/// let store = MemoryHandleStore::new().with_caller_quota(CallerQuota {
///     max: 1000,
///     window: Duration::from_secs(3600),
/// });
/// # let _ = store;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallerQuota {
    /// Creations per window.
    pub max: u32,
    /// The window.
    pub window: Duration,
}

impl CallerQuota {
    /// The window `now_ms` falls in, and how long until it turns.
    pub(crate) fn window_at(&self, now_ms: u64) -> (u64, Duration) {
        let length = (self.window.as_millis() as u64).max(1);
        let index = now_ms / length;
        (index, Duration::from_millis((index + 1) * length - now_ms))
    }

    /// Whether `owner` is counted: with auth off every client is the one anonymous caller, so
    /// a share would be everyone's.
    pub(crate) fn counts(owner: &str) -> bool {
        owner != crate::auth::ANONYMOUS_OWNER
    }

    /// The owner as a key part: fixed length (a subject can be long), and no subject in a key.
    #[cfg(feature = "dynamodb")]
    pub(crate) fn owner_digest(owner: &str) -> String {
        ring::digest::digest(&ring::digest::SHA256, owner.as_bytes())
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_aligned_and_say_when_they_turn() {
        let quota = CallerQuota {
            max: 1,
            window: Duration::from_secs(10),
        };
        assert_eq!(quota.window_at(25_000), (2, Duration::from_secs(5)));
        assert_eq!(quota.window_at(30_000), (3, Duration::from_secs(10)));
        assert!(!CallerQuota::counts("anonymous"));
        assert!(CallerQuota::counts("https://issuer#alice"));
    }
}
