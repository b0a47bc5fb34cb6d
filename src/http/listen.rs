//! Step 7b, `subscriptions/listen` only: what the caller may watch, decided before rmcp
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
use serde_json::Value;

use super::envelope::Checked;
use super::errors::{HttpResponse, Rejection};
use crate::auth::{Caller, Principal};
use crate::listen::{ListenRefusal, Listener, TaskIds};

/// Where a request declares the tasks extension (`_meta` client capabilities).
const TASKS_DECLARED: &str = "/params/_meta/io.modelcontextprotocol~1clientCapabilities/extensions/io.modelcontextprotocol~1tasks";

/// Rewrites the body's filter to the accepted one and stores the plan in `parts`; returns the
/// body for rmcp and the accepted `taskIds` (`None` when none were asked for).
pub(super) async fn prepare(
    listener: &Listener,
    parts: &mut Parts,
    body: Bytes,
    checked: &Checked,
) -> Result<(Bytes, Option<Vec<String>>), HttpResponse> {
    let Ok(mut message) = serde_json::from_slice::<Value>(&body) else {
        return Ok((body, None));
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
    let tasks = TaskIds {
        ids: match message.pointer("/params/notifications/taskIds") {
            None => None,
            Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => Some(
                ids.iter()
                    .filter_map(|id| id.as_str().map(str::to_owned))
                    .collect(),
            ),
            Some(_) => {
                return Err(refuse(Rejection::InvalidParams(
                    "params.notifications.taskIds must be an array of task ids (strings)".into(),
                )));
            }
        },
        declared: message
            .pointer(TASKS_DECLARED)
            .is_some_and(Value::is_object),
    };
    let caller = Caller::from(parts.extensions.get::<Principal>().cloned());
    let (accepted, plan) = listener
        .plan(&requested, &tasks, &caller)
        .await
        .map_err(|refusal| match refusal {
            ListenRefusal::Unavailable(error) => {
                // The backend's words (table, account, role) stay in the log.
                tracing::warn!(%error, "listen refused: the change feed is unavailable");
                refuse(Rejection::Unavailable(
                    "the change feed is unavailable; try again shortly".into(),
                ))
            }
            ListenRefusal::TooManyStreams => refuse(Rejection::Unavailable(refusal.to_string())),
            ListenRefusal::TooManyStreamsForCaller { max } => refuse(Rejection::CallerLimit {
                why: refusal.to_string(),
                limit: max,
                // A stream ends within MCP_LISTEN_MAX_SECS, often much sooner.
                retry_after_secs: 10,
            }),
            ListenRefusal::TasksNotDeclared => refuse(Rejection::MissingCapability {
                required: serde_json::json!({
                    "extensions": { crate::tasks::EXTENSION: {} }
                }),
                why: refusal.to_string(),
            }),
            other => refuse(Rejection::InvalidParams(other.to_string())),
        })?;
    message["params"]["notifications"] =
        serde_json::to_value(&accepted.filter).expect("a filter always serializes");
    parts.extensions.insert(plan);
    Ok((
        Bytes::from(serde_json::to_vec(&message).expect("a JSON value always serializes")),
        accepted.task_ids,
    ))
}
