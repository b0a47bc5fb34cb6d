//! One open listen stream: poll, compare with the last read, notify, and end in time.

use std::time::{Duration, Instant, SystemTime};

use rmcp::model::{DetailedTask, RequestId};
use rmcp::service::{Peer, RoleServer};
use rmcp::{ErrorData, service::SubscriptionContext, service::SubscriptionSendError};

use super::{DEADLINE_MARGIN, ListKind, ListenPlan, Listener, Mark, Observed, Watch};

/// Limits the place a request runs in puts on a listen stream; the Lambda adapter inserts it
/// into the request's extensions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamLimits {
    /// When the invocation ends (the Lambda context's deadline); the stream ends
    /// [`DEADLINE_MARGIN`] before.
    pub deadline: Option<SystemTime>,
    /// The response is sent whole (buffered Lambda): the stream ends after its first
    /// notifications, so the client gets them now (long polling) instead of at the end.
    pub long_poll: bool,
}

impl StreamLimits {
    /// Limits for an invocation that must end by `deadline`.
    pub fn new(deadline: Option<SystemTime>, long_poll: bool) -> Self {
        Self {
            deadline,
            long_poll,
        }
    }
}

/// When a stream opened now must end: `max`, or the deadline minus the margin.
fn end_of_stream(max: Duration, limits: &StreamLimits) -> Instant {
    let now = Instant::now();
    let mut end = now + max;
    if let Some(deadline) = limits.deadline {
        let left = deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .saturating_sub(DEADLINE_MARGIN);
        end = end.min(now + left);
    }
    end
}

/// Whether a watched item changed between two reads that both saw it.
///
/// An item either read did not see (the backend deferred it: throttling) is no change: a
/// throttled read is never told as one.
fn changed(watch: &Watch, before: &Observed, now: &Observed) -> bool {
    let mark = |seen: &Observed| match seen {
        Observed::Present(mark) => Some(mark.clone()),
        Observed::Absent => Some(Mark {
            version: 0,
            tag: None,
        }),
        // Tasks are compared by what a client is shown (`Watching::deliver`), not here.
        Observed::Unknown | Observed::Task(_) => None,
    };
    let (Some(before), Some(now)) = (mark(before), mark(now)) else {
        return false;
    };
    match watch {
        // A fingerprint only ever replaces another: an item without one says nothing about it.
        Watch::List(_) => {
            now.version != before.version || (now.tag.is_some() && now.tag != before.tag)
        }
        _ => now != before,
    }
}

/// Whether only a list's fingerprint moved (a deployment), not its version (a publish).
fn only_fingerprint(before: &Observed, now: &Observed) -> bool {
    match (before, now) {
        (Observed::Present(before), Observed::Present(now)) => before.version == now.version,
        (Observed::Absent, Observed::Present(now)) => now.version == 0,
        _ => false,
    }
}

/// The longest the last read before a stream ends may take (it must fit the deadline margin).
const LAST_READ: Duration = Duration::from_secs(1);

/// What a client is shown of a watched task now (what `tasks/get` would answer).
fn task_view(seen: &Observed) -> Option<DetailedTask> {
    let Observed::Task(record) = seen else {
        return None;
    };
    Some(crate::tasks::client_view(record, crate::tasks::now_ms()))
}

/// Drops the items of `items` whose flag in `drop` is set (both in watch order).
fn remove_flagged<T>(items: &mut Vec<T>, drop: &[bool]) {
    let mut flags = drop.iter();
    items.retain(|_| !flags.next().copied().unwrap_or(false));
}

/// The listener's own state while its stream is open.
struct Watching {
    watched: Vec<super::plan::Watched>,
    watches: Vec<Watch>,
    last: Vec<Observed>,
    /// Per watch: what the client was last shown of it, for tasks (`notifications/tasks`).
    shown: Vec<Option<DetailedTask>>,
    /// Lists already told of a new fingerprint: told once per stream, however often the
    /// stored one flips while two versions run side by side.
    fingerprint_told: Vec<ListKind>,
    /// Where task notifications go (rmcp's sink refuses them) and the stream's id.
    peer: Peer<RoleServer>,
    subscription: RequestId,
    /// Tasks stopped being watched (finished or gone): a stream left with nothing ends.
    released: bool,
    /// Watches released since the shared polls last heard of it.
    left: Vec<Watch>,
}

impl Watching {
    /// Compares a read with the last one and sends what changed; whether anything was sent,
    /// or `Err` when the client has gone.
    async fn deliver(
        &mut self,
        sink: &rmcp::service::SubscriptionSink,
        now: Vec<Observed>,
    ) -> Result<bool, ()> {
        let mut delivered = false;
        let mut release = vec![false; self.watched.len()];
        for (i, ((entry, before), seen)) in self
            .watched
            .iter()
            .zip(self.last.iter_mut())
            .zip(now)
            .enumerate()
        {
            if let Watch::Task { .. } = entry.watch {
                match (&seen, task_view(&seen)) {
                    // Expired or deleted: nothing more to tell of it.
                    (Observed::Absent, _) => release[i] = true,
                    (_, Some(view)) => {
                        release[i] = view.task.status.is_terminal();
                        if self.shown[i].as_ref() != Some(&view) {
                            crate::rmcp_gaps::send_task_status(
                                &self.peer,
                                &self.subscription,
                                view.clone(),
                            )
                            .await
                            .map_err(|_| ())?;
                            self.shown[i] = Some(view);
                            delivered = true;
                        }
                    }
                    _ => {}
                }
                *before = seen;
                continue;
            }
            if matches!(before, Observed::Unknown) {
                // Not read when the listen began (throttled): its first read is the baseline.
                if !matches!(seen, Observed::Unknown) {
                    *before = seen;
                }
                continue;
            }
            if !changed(&entry.watch, before, &seen) {
                continue;
            }
            if let Watch::List(list) = entry.watch
                && only_fingerprint(before, &seen)
            {
                let told = self.fingerprint_told.contains(&list);
                *before = seen;
                if told {
                    continue;
                }
                self.fingerprint_told.push(list);
            } else {
                *before = seen;
            }
            let sent = match (&entry.watch, &entry.uri) {
                (Watch::List(ListKind::Tools), _) => sink.notify_tool_list_changed().await,
                (Watch::List(ListKind::Prompts), _) => sink.notify_prompt_list_changed().await,
                (Watch::List(ListKind::Resources), _) => sink.notify_resource_list_changed().await,
                (_, Some(uri)) => sink.notify_resource_updated(uri.clone()).await,
                (_, None) => Ok(()),
            };
            match sent {
                Ok(()) => delivered = true,
                // The client went away: nobody is left to read a result.
                Err(
                    SubscriptionSendError::SubscriptionClosed | SubscriptionSendError::Service(_),
                ) => {
                    return Err(());
                }
                Err(error) => tracing::debug!(%error, "listen: notification not sent"),
            }
        }
        if release.contains(&true) {
            self.left.extend(
                self.watches
                    .iter()
                    .zip(&release)
                    .filter(|(_, released)| **released)
                    .map(|(watch, _)| watch.clone()),
            );
            remove_flagged(&mut self.watched, &release);
            remove_flagged(&mut self.watches, &release);
            remove_flagged(&mut self.last, &release);
            remove_flagged(&mut self.shown, &release);
            self.released = true;
        }
        Ok(delivered)
    }

    /// Every task it watched is finished and nothing else is watched.
    fn done(&self) -> bool {
        self.released && self.watches.is_empty()
    }
}

/// Runs one accepted listen until it must end; `Ok` makes rmcp send the closing result.
pub(crate) async fn run(
    subscription: SubscriptionContext,
    listener: &Listener,
    plan: ListenPlan,
    limits: StreamLimits,
) -> Result<(), ErrorData> {
    let end = tokio::time::Instant::from_std(end_of_stream(listener.settings.max, &limits));
    // rmcp reduced the filter to what the server advertises: watch only what was accepted.
    let accepted = subscription.accepted().clone();
    let accepted_uris = accepted.resource_subscriptions.unwrap_or_default();
    let mut watching = Watching {
        watched: Vec::new(),
        watches: Vec::new(),
        last: Vec::new(),
        shown: Vec::new(),
        fingerprint_told: Vec::new(),
        peer: subscription.request_context().peer.clone(),
        subscription: subscription.sink().id().clone(),
        released: false,
        left: Vec::new(),
    };
    let read_at = plan.read_at;
    for (entry, seen) in plan.watched.iter().zip(plan.baseline) {
        let seen = match &entry.watch {
            Watch::List(list) => {
                let on = match list {
                    ListKind::Tools => accepted.tools_list_changed == Some(true),
                    ListKind::Prompts => accepted.prompts_list_changed == Some(true),
                    ListKind::Resources => accepted.resources_list_changed == Some(true),
                };
                if !on {
                    continue;
                }
                // Compared with this instance's own fingerprint, a stored one of another
                // deployment is told at the first poll. Not when long polling: every listen
                // would end at once while two versions run side by side.
                match (listener.fingerprint(*list), &seen) {
                    (Some(own), Observed::Present(stored)) if !limits.long_poll => {
                        Observed::Present(Mark {
                            version: stored.version,
                            tag: Some(own),
                        })
                    }
                    _ => seen,
                }
            }
            // Not in rmcp's filter (it has no `taskIds`): the front accepted them.
            Watch::Task { .. } => seen,
            _ if entry
                .uri
                .as_ref()
                .is_some_and(|u| accepted_uris.contains(u)) =>
            {
                seen
            }
            _ => continue,
        };
        // Long polling ends at the first notification: a task's state then is told only if
        // it is final, or every listen would end at once.
        let shown =
            task_view(&seen).filter(|view| limits.long_poll && !view.task.status.is_terminal());
        watching.watches.push(entry.watch.clone());
        watching.watched.push(entry.clone());
        watching.shown.push(shown);
        watching.last.push(seen);
    }
    let sink = subscription.sink().clone();
    // Each watched task's state now, right after the acknowledgment: a task that changed
    // between its `CreateTaskResult` and this listen is not waited for.
    let now = watching.last.clone();
    match watching.deliver(&sink, now).await {
        Err(()) => return Ok(()),
        Ok(delivered) if delivered && limits.long_poll => return Ok(()),
        Ok(_) if watching.done() => return Ok(()),
        Ok(_) => {}
    }
    watching.left.clear();
    // From here on the stream reads nothing itself: it takes its items from the process's
    // shared polls.
    let mut joined = listener.poller.join(&watching.watches);
    let shutdown = &listener.shutdown;
    loop {
        let poll = tokio::select! {
            biased;
            () = subscription.cancelled() => return Ok(()),
            () = shutdown.triggered() => None,
            () = tokio::time::sleep_until(end) => None,
            poll = joined.next() => Some(poll),
        };
        let ending = poll.is_none();
        let now: Vec<Observed> = match poll {
            // A poll sent before this listen's own baseline read may predate it.
            Some(poll) if poll.sent >= read_at => {
                watching.watches.iter().map(|w| poll.get(w)).collect()
            }
            Some(_) => continue,
            None if watching.watches.is_empty() => return Ok(()),
            // One last look of its own, at once, so a change since the previous poll is not
            // lost with the stream (and a stream with no time left answers now, not at the next
            // shared poll): one read per stream's end.
            None => {
                match tokio::time::timeout(LAST_READ, listener.feed.read(&watching.watches)).await {
                    Ok(Ok(now)) => now,
                    _ => return Ok(()),
                }
            }
        };
        if !watching.watches.is_empty() {
            let delivered = watching.deliver(&sink, now).await;
            joined.leave(&std::mem::take(&mut watching.left));
            match delivered {
                Err(()) => return Ok(()),
                Ok(delivered) if delivered && limits.long_poll => return Ok(()),
                Ok(_) if watching.done() => return Ok(()),
                Ok(_) => {}
            }
        }
        if ending {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(version: u64, fingerprint: Option<&str>) -> Observed {
        Observed::Present(Mark {
            version,
            tag: fingerprint.map(str::to_owned),
        })
    }

    #[test]
    fn a_list_changes_with_its_version_or_a_new_fingerprint() {
        let list = Watch::List(ListKind::Tools);
        assert!(!changed(&list, &at(1, Some("a")), &at(1, Some("a"))));
        assert!(changed(&list, &at(1, Some("a")), &at(2, Some("a"))));
        assert!(changed(&list, &at(1, Some("a")), &at(1, Some("b"))));
        // An item nobody fingerprinted yet says nothing about this instance's fingerprint.
        assert!(!changed(&list, &at(0, Some("a")), &Observed::Absent));
        assert!(!changed(&list, &at(1, None), &Observed::Unknown));
        // Not read before (throttled): no change, whatever the read now says.
        assert!(!changed(&list, &Observed::Unknown, &at(1, None)));
        assert!(only_fingerprint(&at(1, Some("a")), &at(1, Some("b"))));
        assert!(!only_fingerprint(&at(1, Some("a")), &at(2, Some("b"))));
    }

    #[test]
    fn a_resource_changes_when_it_appears_disappears_or_moves() {
        let resource = Watch::Resource("file:///a".into());
        assert!(changed(&resource, &Observed::Absent, &at(1, None)));
        assert!(changed(&resource, &at(3, None), &Observed::Absent));
        assert!(changed(&resource, &at(3, None), &at(4, None)));
        assert!(!changed(&resource, &at(3, None), &at(3, None)));
        assert!(!changed(&resource, &at(3, None), &Observed::Unknown));
        assert!(!changed(&resource, &Observed::Unknown, &Observed::Absent));
    }

    #[test]
    fn a_stream_ends_before_the_invocation_deadline() {
        let max = Duration::from_secs(300);
        let soon = SystemTime::now() + Duration::from_secs(10);
        let end = end_of_stream(max, &StreamLimits::new(Some(soon), false));
        let left = end - Instant::now();
        assert!(
            left <= Duration::from_secs(10) - DEADLINE_MARGIN,
            "{left:?}"
        );
        assert!(left >= Duration::from_secs(5), "{left:?}");
        let past = SystemTime::now() - Duration::from_secs(1);
        let end = end_of_stream(max, &StreamLimits::new(Some(past), false));
        assert!(end <= Instant::now());
        let end = end_of_stream(max, &StreamLimits::default());
        assert!(end - Instant::now() > Duration::from_secs(299));
    }
}
