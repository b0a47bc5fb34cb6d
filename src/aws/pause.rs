//! Random pauses between attempts, one source for every retry loop (the store calls in
//! `retry.rs`, a task round's writes, transaction conflicts, a handle's read-modify-write), so
//! callers that failed together do not come back together.

use std::time::Duration;

/// A uniformly random fraction in `[0, 1]`; `0.5` when the system has no randomness to give.
fn fraction() -> f64 {
    let mut bytes = [0u8; 2];
    match ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes) {
        Ok(()) => f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    }
}

/// Between half and all of `pause` ("equal jitter"): spread, yet never much shorter.
pub(crate) fn jittered(pause: Duration) -> Duration {
    pause.mul_f64(0.5 + fraction() / 2.0)
}

/// Anywhere between nothing and `window` ("full jitter"): the widest spread, for writers
/// contending on one item.
pub(crate) fn up_to(window: Duration) -> Duration {
    window.mul_f64(fraction())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_stay_in_their_range_and_vary() {
        let pause = Duration::from_millis(1000);
        let equal: Vec<_> = (0..64).map(|_| jittered(pause)).collect();
        assert!(equal.iter().all(|p| *p >= pause / 2 && *p <= pause));
        assert!(equal.iter().any(|p| *p != equal[0]), "not all equal");
        let full: Vec<_> = (0..64).map(|_| up_to(pause)).collect();
        assert!(full.iter().all(|p| *p <= pause));
        assert!(full.iter().any(|p| *p < pause / 2), "some short ones");
    }
}
