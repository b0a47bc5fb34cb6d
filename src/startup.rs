//! Start-up's fetches, as one step: the values the settings keep in AWS (the built-in
//! authorization server's signing keys and upstream client secret, the introspection client's
//! secret and the request-state keys, from SSM Parameter Store or Secrets Manager;
//! feature `aws-secrets`) and the issuer's keys, ordered so that Lambda INIT waits for the
//! slowest of these chains rather than for their sum.
//!
//! The secret comes first, because the authenticator is made of it. Then, when asked, the
//! issuer's key fetch starts ([`Warming`]) and the task yields once: on a current-thread runtime
//! (`runtime()` on Lambda) a spawned fetch runs only when the running task yields, and what
//! follows starts with milliseconds of synchronous work (the AWS SDK reading the system's root
//! certificates), so the fetch opens its connections first. The request-state keys are fetched
//! while the issuer's keys are. [`App::load`](crate::App::load) runs this step with the warm-up,
//! [`Config::load`](crate::Config::load) without it.

use crate::auth::{AuthSettings, Warming};
use crate::env::{ConfigError, Env};
use crate::oauth::OAuthSettings;
use crate::request_state::RequestStateKeys;

/// The settings with nothing left to fetch, and the issuer's key fetch, if it was started.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) auth: Option<AuthSettings>,
    pub(crate) oauth: Option<OAuthSettings>,
    pub(crate) request_state_keys: RequestStateKeys,
    pub(crate) warming: Option<Warming>,
}

/// Fetches what `auth` and `request_state_keys` keep in AWS (one signed call each; none when
/// everything is inline) and, with `warm`, starts the issuer's key fetch between the two.
///
/// # Errors
///
/// A [`ConfigError`] naming the variable whose value could not be fetched (missing parameter,
/// no permission, unreachable endpoint, not a usable key).
pub(crate) async fn fetch(
    env: &Env<'_>,
    auth: Option<AuthSettings>,
    oauth: Option<OAuthSettings>,
    request_state_keys: RequestStateKeys,
    warm: bool,
) -> Result<Fetched, ConfigError> {
    // The built-in authorization server's keys first: the resource server verifies with them.
    let oauth = match oauth {
        Some(oauth) => Some(oauth.fetch_pending(env).await?),
        None => None,
    };
    let mut auth = match auth {
        Some(auth) => Some(auth.fetch_pending_secret(env).await?),
        None => None,
    };
    if let (Some(auth), Some(oauth)) = (auth.as_mut(), oauth.as_ref()) {
        auth.issuer_keys = Some(oauth.public_jwks());
    }
    let warming = auth.as_ref().filter(|_| warm).map(Warming::start);
    if warming.is_some() {
        tokio::task::yield_now().await;
    }
    let request_state_keys = request_state_keys.fetch_pending(env).await?;
    Ok(Fetched {
        auth,
        oauth,
        request_state_keys,
        warming,
    })
}
