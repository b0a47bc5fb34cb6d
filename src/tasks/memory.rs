//! Tasks in this process's memory: `cargo run`, tests, and one local server.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use futures::future::{BoxFuture, FutureExt};
use serde_json::Value;

use super::{CallerQuota, RoundEnd, TaskError, TaskRecord, TaskState, TaskStore, now_ms};
use crate::handles::HandleId;

/// The most tasks kept at once; creating more answers [`TaskError::Unavailable`] until some
/// expire.
pub const MAX_MEMORY_TASKS: usize = 10_000;

/// A [`TaskStore`] in memory.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    tasks: Mutex<HashMap<HandleId, TaskRecord>>,
    /// Tasks created per (owner, quota window), current windows only.
    created: Mutex<HashMap<(String, u64), u32>>,
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<HandleId, TaskRecord>) -> T) -> T {
        let mut tasks = self.tasks.lock().expect("task store lock");
        let now = now_ms();
        tasks.retain(|_, task| task.expires_at_ms() > now);
        f(&mut tasks)
    }

    fn owned<'t>(
        tasks: &'t mut HashMap<HandleId, TaskRecord>,
        owner: &str,
        id: HandleId,
    ) -> Result<&'t mut TaskRecord, TaskError> {
        match tasks.get_mut(&id) {
            Some(task) if task.owner == owner => Ok(task),
            _ => Err(TaskError::NotFound),
        }
    }
}

impl TaskStore for MemoryTaskStore {
    fn create<'a>(
        &'a self,
        task: &'a TaskRecord,
        quota: Option<CallerQuota>,
    ) -> BoxFuture<'a, Result<(), TaskError>> {
        let result = self.with(|tasks| {
            let mut created = self.created.lock().expect("task quota lock");
            let now = now_ms();
            let counted = quota.map(|quota| {
                let (window, _) = quota.window_at(now);
                created.retain(|(_, w), _| *w >= window);
                (quota, (task.owner.clone(), window))
            });
            if let Some((quota, key)) = &counted
                && created.get(key).copied().unwrap_or(0) >= quota.max
            {
                return Err(super::store::over_quota(quota, now));
            }
            if tasks.len() >= MAX_MEMORY_TASKS {
                return Err(TaskError::Unavailable(format!(
                    "{MAX_MEMORY_TASKS} tasks are kept in memory already"
                )));
            }
            if tasks.contains_key(&task.id) {
                return Err(TaskError::Invalid("task id already in use".into()));
            }
            tasks.insert(task.id, task.clone());
            if let Some((_, key)) = counted {
                *created.entry(key).or_insert(0) += 1;
            }
            Ok(())
        });
        futures::future::ready(result).boxed()
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>> {
        let result = self.with(|tasks| Self::owned(tasks, owner, id).map(|t| t.clone()));
        futures::future::ready(result).boxed()
    }

    fn answer<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
        responses: &'a BTreeMap<String, Value>,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>> {
        let result = self.with(|tasks| {
            let task = Self::owned(tasks, owner, id)?;
            if task.state == TaskState::InputRequired {
                for (key, value) in responses {
                    if task.pending.remove(key) {
                        task.responses.insert(key.clone(), value.clone());
                    }
                }
                task.updated_at_ms = now_ms();
            }
            Ok(task.clone())
        });
        futures::future::ready(result).boxed()
    }

    fn cancel<'a>(
        &'a self,
        owner: &'a str,
        id: HandleId,
    ) -> BoxFuture<'a, Result<TaskRecord, TaskError>> {
        let result = self.with(|tasks| {
            let task = Self::owned(tasks, owner, id)?;
            if !task.state.is_terminal() {
                task.cancel_requested = true;
                task.updated_at_ms = now_ms();
            }
            Ok(task.clone())
        });
        futures::future::ready(result).boxed()
    }

    fn claim<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        lease_until_ms: u64,
    ) -> BoxFuture<'a, Result<Option<TaskRecord>, TaskError>> {
        let result = self.with(|tasks| {
            let Some(task) = tasks.get_mut(&id) else {
                return Ok(None);
            };
            let ready = match task.state {
                TaskState::Working => true,
                TaskState::InputRequired => task.pending.is_empty(),
                _ => false,
            };
            let unclaimed = task.claimed.is_none_or(|(r, _)| r < round);
            let in_window = task.updated_at_ms + super::record::CLAIM_WINDOW_MS > now_ms();
            if !(ready && unclaimed && in_window && task.round == round && !task.cancel_requested) {
                return Ok(None);
            }
            task.state = TaskState::Working;
            task.claimed = Some((round, lease_until_ms));
            task.updated_at_ms = now_ms();
            Ok(Some(task.clone()))
        });
        futures::future::ready(result).boxed()
    }

    fn check<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        status_message: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, TaskError>> {
        let result = self.with(|tasks| {
            let Some(task) = tasks.get_mut(&id) else {
                return Err(TaskError::NotFound);
            };
            if let Some(message) = status_message
                && task.claimed.is_some_and(|(r, _)| r == round)
                && task.state == TaskState::Working
            {
                task.status_message = Some(message.to_owned());
                task.updated_at_ms = now_ms();
            }
            Ok(task.cancel_requested)
        });
        futures::future::ready(result).boxed()
    }

    fn finish<'a>(
        &'a self,
        id: HandleId,
        round: u32,
        end: &'a RoundEnd,
    ) -> BoxFuture<'a, Result<bool, TaskError>> {
        let result = self.with(|tasks| {
            let Some(task) = tasks.get_mut(&id) else {
                return Ok(false);
            };
            // A worker whose claim ran out was already reported `failed`: it changes nothing.
            let now = now_ms();
            if task.state != TaskState::Working
                || task
                    .claimed
                    .is_none_or(|(r, until)| r != round || until < now)
            {
                return Ok(false);
            }
            super::apply_end(task, round, end, now_ms());
            Ok(true)
        });
        futures::future::ready(result).boxed()
    }
}
