//! The step *listen filter*, `subscriptions/listen` only: what the caller may watch, decided before rmcp
//! acknowledges it.
//!
//! rmcp asks the handler for the accepted filter without the request (so without the caller),
//! and acknowledges it before the handler runs. This step therefore decides first, with the
//! caller's principal and one read of the feed (handle ownership and the baseline), and hands
//! rmcp a request whose filter is exactly what will be honoured; the plan for the stream goes
//! along in the request's extensions.
//!
//! The tasks extension's `taskIds` are read here too (rmcp 3.11's filter type drops them); the
//! accepted ones are returned for [`rmcp_gaps::acknowledge_task_ids`](crate::rmcp_gaps) to add
//! to rmcp's acknowledgment.

use bytes::Bytes;
use http::request::Parts;
use rmcp::model::SubscriptionFilter;
use serde::Deserialize as _;
use serde_json::Value;

use super::envelope::Checked;
use super::refusal::Rejection;
use crate::auth::Caller;
use crate::listen::{ListenRefusal, Listener, TaskIds};

/// Where a request declares the tasks extension (`_meta` client capabilities).
const TASKS_DECLARED: &str = "/params/_meta/io.modelcontextprotocol~1clientCapabilities/extensions/io.modelcontextprotocol~1tasks";

/// Rewrites the message's filter to the accepted one and stores the plan in `parts`; returns the
/// body for rmcp, written from the message the envelope step parsed (taken out of `checked`),
/// and the accepted `taskIds` (`None` when none were asked for).
pub(super) async fn prepare(
    listener: &Listener,
    caller: &Caller,
    parts: &mut Parts,
    checked: &mut Checked,
) -> Result<(Bytes, Option<Vec<String>>), Rejection> {
    let mut message = Value::Object(checked.message.take().unwrap_or_default());
    let Some(requested) = message
        .pointer("/params/notifications")
        .and_then(|f| SubscriptionFilter::deserialize(f).ok())
    else {
        return Err(Rejection::InvalidParams(
            "params.notifications must be a subscription filter object".into(),
        ));
    };
    let tasks = TaskIds {
        ids: match message.pointer("/params/notifications/taskIds") {
            None => None,
            Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => Some(
                ids.iter()
                    .filter_map(|id| id.as_str().map(str::to_owned))
                    .collect(),
            ),
            Some(_) => {
                return Err(Rejection::InvalidParams(
                    "params.notifications.taskIds must be an array of task ids (strings)".into(),
                ));
            }
        },
        declared: message
            .pointer(TASKS_DECLARED)
            .is_some_and(Value::is_object),
    };
    let (accepted, plan) = listener
        .plan(&requested, &tasks, caller)
        .await
        .inspect_err(|refusal| {
            if let ListenRefusal::Unavailable(error) = refusal {
                // The backend's words (table, account, role) stay in the log.
                tracing::warn!(%error, "listen refused: the change feed is unavailable");
            }
        })?;
    message["params"]["notifications"] =
        serde_json::to_value(&accepted.filter).expect("a filter always serializes");
    if let Some(id) = &checked.id {
        message["id"] = id.clone();
    }
    parts.extensions.insert(plan);
    Ok((
        Bytes::from(serde_json::to_vec(&message).expect("a JSON value always serializes")),
        accepted.task_ids,
    ))
}
