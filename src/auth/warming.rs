//! The issuer's keys fetched as early as start-up allows, awaited only before serving.
//!
//! Start-up's one step (`startup.rs`, through [`App::load`](crate::App::load)) starts the fetch
//! while it fetches the request-state keys, [`App::new`](crate::App::new) starts it when the
//! configuration came from elsewhere, and `Server::run` waits for it next to the list
//! fingerprints, so Lambda INIT waits for the slowest of these chains rather than for their
//! sum.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::{AuthSettings, Authenticator};

/// An [`Authenticator`] whose key fetch may already be running.
#[derive(Clone)]
pub(crate) struct Warming {
    auth: Arc<Authenticator>,
    fetch: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for Warming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warming").finish_non_exhaustive()
    }
}

impl Warming {
    /// An authenticator for `settings`, its key fetch started now when there is a runtime to
    /// run it on (otherwise at [`wait`](Self::wait)).
    pub(crate) fn start(settings: &AuthSettings) -> Self {
        let auth = Arc::new(Authenticator::new(Arc::new(settings.clone())));
        let fetch = tokio::runtime::Handle::try_current().ok().map(|runtime| {
            let auth = auth.clone();
            runtime.spawn(async move { auth.warm().await })
        });
        Self {
            auth,
            fetch: Arc::new(Mutex::new(fetch)),
        }
    }

    pub(crate) fn authenticator(&self) -> &Arc<Authenticator> {
        &self.auth
    }

    /// Until the keys are fetched (or the fetch failed, which it logs); at once after the
    /// first call. Without a runtime at [`start`](Self::start) nothing was started: requests
    /// fetch the keys on first use, as after a failed fetch.
    pub(crate) async fn wait(&self) {
        let fetch = self.fetch.lock().expect("warming lock").take();
        if let Some(fetch) = fetch {
            let _ = fetch.await;
        }
    }
}
