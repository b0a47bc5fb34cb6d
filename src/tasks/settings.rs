//! The task settings (`MCP_TASK_*`) and opening the engine they describe.

use std::sync::Arc;
use std::time::Duration;

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
use super::LambdaDispatch;
use super::{Dispatch, TaskStore, Tasks};
use crate::aws::TableError;
use crate::env::Unit;

/// The task store, as [`TableError`] names it.
const STORE: &str = "task store";

/// Task settings (`MCP_TASK_*`).
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `MCP_TASK_TTL_SECS` | `3600` | how long a task lives after creation (60–604800) |
/// | `MCP_TASK_POLL_MS` | `1000` | the poll interval clients are told, and how often a worker looks for a cancel (100–60000) |
/// | `MCP_TASK_MAX_PER_CALLER` | `100` | tasks one authenticated caller may create per `MCP_TASK_TTL_SECS` window (1–1000000), so it holds at most twice that; more get 429, -32600 |
/// | `MCP_TASK_LEASE_SECS` | `900` | how long a local worker's claim on a round holds (1–86400); a round still working shortly before it runs out is stopped and recorded `failed` |
///
/// The store follows the handle store: `MCP_HANDLES_TABLE` set → DynamoDB on that table,
/// otherwise in memory ([`TaskSettings::open`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskSettings {
    /// How long a task lives after creation.
    pub ttl: Duration,
    /// How often clients should poll, and how often a worker looks for a cancel.
    pub poll_interval: Duration,
    /// How long a worker's claim on a round holds locally (on Lambda: the invocation's
    /// deadline). A round still working shortly before it runs out is stopped and recorded
    /// `failed`.
    pub lease: Duration,
    /// Tasks one authenticated caller may create per `ttl` window (`MCP_TASK_MAX_PER_CALLER`).
    /// With auth off every client is the same anonymous caller, so only the store's own
    /// limits apply.
    pub max_per_caller: u32,
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_millis(1000),
            lease: Duration::from_secs(900),
            max_per_caller: 100,
        }
    }
}

impl TaskSettings {
    /// Reads `MCP_TASK_TTL_SECS`, `MCP_TASK_POLL_MS`, `MCP_TASK_LEASE_SECS` and
    /// `MCP_TASK_MAX_PER_CALLER`.
    pub(crate) fn from_env(env: &crate::env::Env<'_>) -> Result<Self, crate::env::ConfigError> {
        Ok(Self {
            ttl: env.duration("MCP_TASK_TTL_SECS", Unit::Seconds, 3600, 60..=604_800)?,
            poll_interval: env.duration("MCP_TASK_POLL_MS", Unit::Millis, 1000, 100..=60_000)?,
            lease: env.duration("MCP_TASK_LEASE_SECS", Unit::Seconds, 900, 1..=86_400)?,
            max_per_caller: env.number(
                "MCP_TASK_MAX_PER_CALLER",
                100,
                1..=1_000_000,
                "a whole number between 1 and 1000000, e.g. 100",
            )? as u32,
        })
    }

    /// The tasks of this deployment, for [`App::tasks`](crate::App::tasks) (the server starts
    /// them): the store is DynamoDB on `MCP_HANDLES_TABLE` when it is set (sharing the handle
    /// store's connection), otherwise in memory. Locally rounds run on this process's runtime
    /// ([`Dispatch::Local`]); on Lambda (`AWS_LAMBDA_RUNTIME_API` set) they are handed to the
    /// Lambda service (`Dispatch::Lambda`, which needs the `aws-secrets` feature), and
    /// `MCP_HANDLES_TABLE` is required.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = mcp_lambda::Config::load().await?;
    /// let tasks = config.tasks.open(&config.handles).await?;
    /// # let _ = tasks; Ok(())
    /// # }
    /// ```
    pub async fn open(
        &self,
        handles: &crate::handles::HandleSettings,
    ) -> Result<Tasks, TableError> {
        let on_lambda = std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some();
        if on_lambda && handles.table.is_none() {
            return Err(TableError::new(
                STORE,
                "(MCP_HANDLES_TABLE is not set)",
                "tasks on Lambda need a store every invocation shares: set \
                         MCP_HANDLES_TABLE, or leave tasks off",
            ));
        }
        let store: Arc<dyn TaskStore> = match &handles.table {
            #[cfg(feature = "dynamodb")]
            Some(table) => {
                let sdk = crate::aws::regional_config(&handles.timeouts, STORE, table).await?;
                let store = Arc::new(super::DynamoDbTaskStore::new(
                    crate::aws::dynamodb_client(&sdk),
                    table.clone(),
                ));
                #[cfg(not(feature = "aws-secrets"))]
                if on_lambda {
                    return Err(TableError::new(
                        STORE,
                        table,
                        "tasks on Lambda hand rounds to the Lambda service with a signed \
                                 Invoke, which needs the `aws-secrets` feature",
                    ));
                }
                #[cfg(feature = "aws-secrets")]
                if on_lambda {
                    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").map_err(|_| {
                        TableError::new(
                            STORE,
                            table,
                            "AWS_LAMBDA_FUNCTION_NAME is not set (Lambda sets it): \
                                     rounds are handed to this function",
                        )
                    })?;
                    let dispatch =
                        Dispatch::Lambda(LambdaDispatch::new(function, &sdk, &handles.timeouts));
                    return Ok(Tasks::new(store, dispatch, self.clone()));
                }
                store
            }
            #[cfg(not(feature = "dynamodb"))]
            Some(table) => {
                return Err(TableError::new(
                    STORE,
                    table,
                    "this build lacks the `dynamodb` feature",
                ));
            }
            None => Arc::new(super::MemoryTaskStore::new()),
        };
        Ok(Tasks::new(store, Dispatch::Local, self.clone()))
    }
}
