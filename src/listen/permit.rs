//! A stream's places: one among the process's `MCP_LISTEN_MAX_STREAMS`, one among its caller's
//! `MCP_LISTEN_MAX_STREAMS_PER_CALLER`; both given back when the stream ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ListenRefusal;
use crate::auth::Caller;

/// The open streams of this process, overall and per authenticated caller (by owner key).
#[derive(Debug)]
pub(crate) struct StreamPermits {
    streams: Arc<Semaphore>,
    per_caller: PerCaller,
    max_per_caller: usize,
}

/// Open streams per authenticated caller (by owner key), on this process.
type PerCaller = Arc<Mutex<HashMap<String, usize>>>;

/// A stream's two places, held for as long as it is open.
#[derive(Debug)]
pub(crate) struct Permit {
    _stream: OwnedSemaphorePermit,
    _caller: Option<CallerPermit>,
}

impl StreamPermits {
    pub(crate) fn new(max_streams: usize, max_per_caller: usize) -> Self {
        Self {
            streams: Arc::new(Semaphore::new(max_streams)),
            per_caller: PerCaller::default(),
            max_per_caller,
        }
    }

    /// Places for one more stream of `caller`. The caller's own limit is checked first: a
    /// greedy caller is told so, never that the server is full. The anonymous caller (auth
    /// off) has no limit of its own.
    pub(crate) fn take(&self, caller: &Caller) -> Result<Permit, ListenRefusal> {
        let caller = match caller.is_anonymous() {
            true => None,
            false => Some(
                CallerPermit::take(&self.per_caller, caller.owner_key(), self.max_per_caller)
                    .ok_or(ListenRefusal::TooManyStreamsForCaller {
                        max: self.max_per_caller,
                    })?,
            ),
        };
        let stream = self
            .streams
            .clone()
            .try_acquire_owned()
            .map_err(|_| ListenRefusal::TooManyStreams)?;
        Ok(Permit {
            _stream: stream,
            _caller: caller,
        })
    }
}

/// One open stream of a caller; given back when dropped.
#[derive(Debug)]
struct CallerPermit {
    open: PerCaller,
    owner: String,
}

impl CallerPermit {
    /// A place for `owner`, unless it already holds `max`.
    fn take(open: &PerCaller, owner: &str, max: usize) -> Option<Self> {
        let mut counts = open.lock().expect("per-caller lock");
        let held = counts.entry(owner.to_owned()).or_insert(0);
        if *held >= max {
            return None;
        }
        *held += 1;
        Some(Self {
            open: open.clone(),
            owner: owner.to_owned(),
        })
    }
}

impl Drop for CallerPermit {
    fn drop(&mut self) {
        let mut counts = self.open.lock().expect("per-caller lock");
        if let Some(held) = counts.get_mut(&self.owner) {
            *held -= 1;
            if *held == 0 {
                counts.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(subject: &str) -> Caller {
        Caller::from(crate::Principal {
            issuer: "https://issuer.example".into(),
            subject: subject.into(),
            scopes: vec![],
            client_id: None,
        })
    }

    #[test]
    fn a_caller_is_held_to_its_share_before_the_process_is_and_places_come_back() {
        let permits = StreamPermits::new(3, 2);
        let (ada, bob) = (caller("ada"), caller("bob"));
        let first = permits.take(&ada).unwrap();
        let _second = permits.take(&ada).unwrap();
        assert_eq!(
            permits.take(&ada).unwrap_err(),
            ListenRefusal::TooManyStreamsForCaller { max: 2 }
        );
        let _third = permits.take(&bob).unwrap();
        assert_eq!(
            permits.take(&bob).unwrap_err(),
            ListenRefusal::TooManyStreams
        );
        drop(first);
        let _again = permits.take(&ada).unwrap();
        assert_eq!(
            permits.take(&Caller::anonymous()).unwrap_err(),
            ListenRefusal::TooManyStreams
        );
    }
}
