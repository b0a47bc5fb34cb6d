//! The task as a client sees it (`tasks/get`, `notifications/tasks`): its status now, its
//! timestamps in ISO 8601.

use rmcp::model::{DetailedTask, JsonObject, Task, TaskPayload, TaskStatus};
use serde_json::{Value, json};

use super::{TaskRecord, TaskState};

/// The task as a client sees it now: a cancel asked for while it waits for input shows as
/// `cancelled`, and so does one asked for before any worker claimed the round (none can now);
/// a round whose worker's claim ran out shows as `failed`, and so does a round handed out that
/// no worker claimed within [`CLAIM_WINDOW_MS`](super::record::CLAIM_WINDOW_MS) (the
/// invocation was dropped or delayed, or the store was unavailable): none can claim it now, and
/// nothing ran.
fn visible(record: &TaskRecord, now: u64) -> (TaskStatus, Option<Value>) {
    let ready = match record.state {
        TaskState::Working => true,
        TaskState::InputRequired => record.pending.is_empty(),
        _ => false,
    };
    let unclaimed = record.claimed.is_none_or(|(round, _)| round < record.round);
    if ready && unclaimed && record.cancel_requested {
        return (TaskStatus::Cancelled, None);
    }
    if ready && unclaimed && now >= record.updated_at_ms + super::record::CLAIM_WINDOW_MS {
        return (
            TaskStatus::Failed,
            Some(json!({
                "code": -32603,
                "message": "no worker started this task within 60 s (the task store or the workers were unavailable); nothing ran, so it is safe to try again",
            })),
        );
    }
    match record.state {
        TaskState::InputRequired if record.cancel_requested => (TaskStatus::Cancelled, None),
        TaskState::Working if record.claimed.is_some_and(|(_, until)| until < now) => (
            TaskStatus::Failed,
            Some(json!({
                "code": -32603,
                "message": "the worker's claim ran out before its end was recorded (a timeout, a crash, or the task store unavailable); its work may have completed",
            })),
        ),
        TaskState::Working => (TaskStatus::Working, None),
        TaskState::InputRequired => (TaskStatus::InputRequired, None),
        TaskState::Completed => (TaskStatus::Completed, None),
        TaskState::Failed => (TaskStatus::Failed, record.error.clone()),
        TaskState::Cancelled => (TaskStatus::Cancelled, None),
    }
}

pub(super) fn task_of(record: &TaskRecord, status: TaskStatus) -> Task {
    let mut task = Task::new(
        record.id.to_string(),
        status,
        iso(record.created_at_ms),
        iso(record.updated_at_ms),
    )
    .with_ttl_ms(record.ttl_ms)
    .with_poll_interval_ms(record.poll_interval_ms);
    if let Some(message) = &record.status_message {
        task = task.with_status_message(message.clone());
    }
    task
}

/// The task as `tasks/get` shows it at `now` (epoch ms); `notifications/tasks` carries the same.
pub(crate) fn client_view(record: &TaskRecord, now: u64) -> DetailedTask {
    let (status, error) = visible(record, now);
    let task = task_of(record, status);
    let payload = match status {
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        // Only what is still outstanding: an answered request is gone from the next look.
        TaskStatus::InputRequired => TaskPayload::InputRequired {
            input_requests: record
                .input_requests
                .as_ref()
                .and_then(Value::as_object)
                .map(|all| {
                    all.iter()
                        .filter(|(key, _)| record.pending.contains(*key))
                        .filter_map(|(key, request)| {
                            Some((key.clone(), serde_json::from_value(request.clone()).ok()?))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        },
        TaskStatus::Completed => TaskPayload::Completed {
            result: record
                .result
                .clone()
                .and_then(|r| serde_json::from_value::<JsonObject>(r).ok())
                .unwrap_or_default(),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: error
                .and_then(|e| serde_json::from_value::<JsonObject>(e).ok())
                .unwrap_or_else(|| {
                    let mut error = JsonObject::new();
                    error.insert("code".into(), json!(-32603));
                    error.insert("message".into(), json!("the task failed"));
                    error
                }),
        },
        _ => TaskPayload::Working,
    };
    DetailedTask::new(task, payload)
}

/// Epoch milliseconds as an ISO 8601 UTC timestamp (`2026-12-01T06:30:00.123Z`).
fn iso(ms: u64) -> String {
    let (days, rest) = ((ms / 86_400_000) as i64, ms % 86_400_000);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handles::HandleId;

    #[test]
    fn a_round_no_worker_claimed_within_the_window_reads_failed_and_a_cancelled_one_cancelled() {
        let record = TaskRecord::new(
            HandleId::random().unwrap(),
            "o",
            json!({}),
            1000,
            3_600_000,
            1000,
        );
        let window_end = 1000 + super::super::record::CLAIM_WINDOW_MS;
        assert_eq!(visible(&record, window_end - 1).0, TaskStatus::Working);
        let (status, error) = visible(&record, window_end);
        assert_eq!(status, TaskStatus::Failed);
        assert!(
            error.unwrap()["message"]
                .as_str()
                .unwrap()
                .contains("nothing ran")
        );
        let mut claimed = record.clone();
        claimed.claimed = Some((0, u64::MAX));
        assert_eq!(visible(&claimed, window_end).0, TaskStatus::Working);
        let mut cancelled = record.clone();
        cancelled.cancel_requested = true;
        assert_eq!(visible(&cancelled, 1001).0, TaskStatus::Cancelled);
        claimed.cancel_requested = true;
        assert_eq!(
            visible(&claimed, 1001).0,
            TaskStatus::Working,
            "a claimed round stops on its own"
        );
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso(1_796_000_000_123), "2026-11-30T00:53:20.123Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
