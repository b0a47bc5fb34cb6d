//! Step 7b, `subscriptions/listen` only: what the caller may watch, decided before rmcp
//! acknowledges it.
//!
//! rmcp asks the handler for the accepted filter without the request (so without the caller),
//! and acknowledges it before the handler runs. This step therefore decides first, with the
//! caller's principal and one read of the feed (handle ownership and the baseline), and hands
//! rmcp a request whose filter is exactly what will be honoured; the plan for the stream goes
//! along in the request's extensions.

use bytes::Bytes;
use http::request::Parts;
use rmcp::model::SubscriptionFilter;
use serde_json::Value;

use super::envelope::Checked;
use super::errors::{HttpResponse, Rejection};
use crate::auth::Principal;
use crate::listen::{ListenRefusal, Listener};

/// Rewrites the body's filter to the accepted one and stores the plan in `parts`.
pub(super) async fn prepare(
    listener: &Listener,
    parts: &mut Parts,
    body: Bytes,
    checked: &Checked,
) -> Result<Bytes, HttpResponse> {
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return Ok(body);
    };
    let refuse = |rejection: Rejection| rejection.into_response(checked.id.as_ref());
    let Some(requested) = message
        .pointer("/params/notifications")
        .and_then(|f| serde_json::from_value::<SubscriptionFilter>(f.clone()).ok())
    else {
        return Err(refuse(Rejection::InvalidParams(
            "params.notifications must be a subscription filter object".into(),
        )));
    };
    let caller = parts.extensions.get::<Principal>();
    let (accepted, plan) =
        listener
            .plan(&requested, caller)
            .await
            .map_err(|refusal| match refusal {
                ListenRefusal::Unavailable(error) => {
                    // The backend's words (table, account, role) stay in the log.
                    tracing::warn!(%error, "listen refused: the change feed is unavailable");
                    refuse(Rejection::Unavailable(
                        "the change feed is unavailable; try again shortly".into(),
                    ))
                }
                ListenRefusal::TooManyStreams => {
                    refuse(Rejection::Unavailable(refusal.to_string()))
                }
                other => refuse(Rejection::InvalidParams(other.to_string())),
            })?;
    message["params"]["notifications"] =
        serde_json::to_value(&accepted).expect("a filter always serializes");
    parts.extensions.insert(plan);
    Ok(Bytes::from(
        serde_json::to_vec(&message).expect("a JSON value always serializes"),
    ))
}
