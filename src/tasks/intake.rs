//! What a `tools/call` becomes when tasks are on: a task (stored before anything is answered),
//! a refusal (-32021: the tool runs only as a task and the client did not declare the
//! extension), or a call answered in the request as usual.
//!
//! The handler's [`TaskPolicy`] per tool decides, with the client's declaration on this request.
//! A call a worker runs in process (a round) is marked [`RoundInProcess`] and never comes here.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer,
    model::{CallToolRequestParams, ClientCapabilities, CreateTaskResult},
    service::RequestContext,
};

use super::{Engine, TaskPolicy};
use crate::auth::Caller;

/// Which tools may run as tasks, per tool name and caller (the handler's choice,
/// [`App::tasks`](crate::App::tasks)).
#[derive(Clone)]
pub(crate) struct TaskPolicies(Arc<PolicyFn>);

/// A tool's [`TaskPolicy`] for the caller asking.
type PolicyFn = dyn Fn(&str, &Caller) -> TaskPolicy + Send + Sync;

impl std::fmt::Debug for TaskPolicies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskPolicies")
    }
}

/// Marks a `tools/call` a task worker runs in process: it runs as it is, never as a task, and
/// the tool's future is dropped when `stop` fires ([`until_stopped`](super::until_stopped)).
#[derive(Debug, Clone)]
pub(crate) struct RoundInProcess {
    pub(crate) stop: tokio_util::sync::CancellationToken,
}

/// How one `tools/call` is served.
#[derive(Debug)]
pub(crate) enum Intake {
    /// Accepted as a task: the answer is the task, the call runs in a worker's round.
    Task(CreateTaskResult),
    /// Answered in the request, as without tasks.
    InRequest,
}

impl TaskPolicies {
    /// The policies `policy` gives each tool.
    pub(crate) fn new(
        policy: impl Fn(&str, &Caller) -> TaskPolicy + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(policy))
    }

    /// Decides how `request` is served and, for a task, accepts it durably on `tasks`.
    ///
    /// # Errors
    ///
    /// -32021 for a task-only tool called by a client that did not declare the extension;
    /// the engine's errors when the task cannot be stored (its `retryAfterSecs` for a caller
    /// over its share).
    pub(crate) async fn intake(
        &self,
        tasks: &Arc<Engine>,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Intake, ErrorData> {
        let caller = Caller::from_request(context);
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        // Input gathered MRTR style in the request comes first; the answers' call is the task.
        let policy = match (self.0)(&request.name, &caller) {
            TaskPolicy::RequiredAfterInput if declared && request.input_responses.is_none() => {
                TaskPolicy::Never
            }
            TaskPolicy::RequiredAfterInput => TaskPolicy::Required,
            other => other,
        };
        match (policy, declared) {
            (TaskPolicy::Optional | TaskPolicy::Required, true) => {
                let owner = caller.owner_key().to_owned();
                let mut params = serde_json::to_value(request)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                // rmcp keeps the request's `_meta` in the context: the worker's call needs it
                // (the version, the client's capabilities, a progress token).
                params["_meta"] = serde_json::to_value(&context.meta)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                let created = tasks
                    .accept(&owner, caller.principal().cloned(), params)
                    .await?;
                Ok(Intake::Task(created))
            }
            (TaskPolicy::Required, false) => Err(ErrorData::missing_required_client_capability(
                ClientCapabilities::builder().enable_tasks().build(),
            )),
            _ => Ok(Intake::InRequest),
        }
    }
}
