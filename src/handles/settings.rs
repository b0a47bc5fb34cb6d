//! Which handle store to open, and how long handles live.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_HANDLE_TTL_SECS` | `86400` | inactivity expiry of handles |
//! | `MCP_HANDLES_TABLE` | none (in memory) | the DynamoDB table (name or ARN) that keeps handles, laid out as `infra/handles-table.json` (feature `dynamodb`) |
//! | `MCP_HANDLES_PAGE_SIZE` | `50` | handles per page of [`Handles::list`](super::Handles::list), 1 to 100 |
//! | `MCP_AWS_*_TIMEOUT_MS` | see [`AwsTimeouts`](crate::aws::AwsTimeouts) | timeouts of every DynamoDB call |

use std::{sync::Arc, time::Duration};

use super::{CallerQuota, HandleStore, MemoryHandleStore};
use crate::aws::TableError;
use crate::env::{ConfigError, Env, Mode, Unit, parse_arn};

/// The handle store's settings, read once at start-up.
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert_eq!(config.handles.ttl.as_secs(), 86_400);
/// assert_eq!(config.handles.table, None); // in memory
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandleSettings {
    /// Inactivity expiry of handles (`MCP_HANDLE_TTL_SECS`).
    pub ttl: Duration,
    /// The DynamoDB table that keeps handles (`MCP_HANDLES_TABLE`); `None` = in memory.
    pub table: Option<String>,
    /// Timeouts of DynamoDB calls (read and checked in every build, so a bad value is
    /// refused the same way with or without the `dynamodb` feature).
    pub timeouts: crate::aws::AwsTimeouts,
    /// Handles one authenticated caller may create per [`ttl`](Self::ttl) window
    /// (`MCP_HANDLES_MAX_PER_CALLER`): what it creates and leaves alone is at most twice that;
    /// handles it keeps using outlive their window, so over time it can hold more. With auth
    /// off every client is the same anonymous caller, so none applies.
    pub max_per_caller: u32,
    /// Handles per page of [`Handles::list`](super::Handles::list)
    /// (`MCP_HANDLES_PAGE_SIZE`, 1 to [`MAX_LIST_PAGE`](super::MAX_LIST_PAGE)).
    pub page_size: usize,
    /// Whether the process runs on Lambda, where in-memory handles do not survive.
    on_lambda: bool,
}

/// Whether handles kept in memory can be missed by a caller ([`HandleSettings::memory_reach`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemoryReach {
    /// A table: every process sees every handle.
    Shared,
    /// On Lambda, without a table.
    LambdaInstance,
    /// Locally, where a proxy may spread callers over several processes.
    ReachableFromElsewhere,
    /// Locally, on loopback, for this machine's names only.
    OneLocalProcess,
}

impl HandleSettings {
    /// Reads `MCP_HANDLE_TTL_SECS`, `MCP_HANDLES_TABLE` and, for DynamoDB, the AWS timeouts.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let ttl = env.duration(
            "MCP_HANDLE_TTL_SECS",
            Unit::Seconds,
            86_400,
            1..=366 * 86_400,
        )?;
        let table = match env.get("MCP_HANDLES_TABLE") {
            Some(v) if !cfg!(feature = "dynamodb") => {
                return Err(ConfigError::new(
                    "MCP_HANDLES_TABLE",
                    v,
                    "this build has no DynamoDB store: enable the `dynamodb` feature of \
                     mcp-lambda, or leave it unset to keep handles in memory",
                ));
            }
            Some(v) if valid_table(v.trim()) => Some(v.trim().to_string()),
            Some(v) => {
                return Err(ConfigError::new(
                    "MCP_HANDLES_TABLE",
                    v,
                    "expected a DynamoDB table name (3 to 255 of A-Z a-z 0-9 _ - .) or a table \
                     ARN, e.g. mcp-handles",
                ));
            }
            None => None,
        };
        Ok(Self {
            ttl,
            table,
            timeouts: crate::aws::AwsTimeouts::from_env(env)?,
            max_per_caller: env.number(
                "MCP_HANDLES_MAX_PER_CALLER",
                1000,
                1..=10_000_000,
                "a whole number between 1 and 10000000, e.g. 1000",
            )? as u32,
            page_size: env.number(
                "MCP_HANDLES_PAGE_SIZE",
                super::DEFAULT_PAGE_SIZE as u64,
                1..=super::MAX_LIST_PAGE as u64,
                "a whole number between 1 and 100, e.g. 50",
            )? as usize,
            on_lambda: env.mode() == Mode::Lambda,
        })
    }

    /// The in-memory store, with these settings' quota.
    pub(crate) fn in_memory(&self) -> Arc<dyn HandleStore> {
        Arc::new(MemoryHandleStore::new().with_caller_quota(self.caller_quota()))
    }

    /// Says, once at start-up, when handles live in this process's memory: a warning on Lambda,
    /// where other instances (and this one after a restart) will not find them, and locally
    /// when callers may be spread over several processes; a note otherwise.
    pub(crate) fn warn_if_per_instance(
        &self,
        local_bind: std::net::SocketAddr,
        name_beyond_loopback: Option<&str>,
    ) {
        match self.memory_reach(local_bind, name_beyond_loopback) {
            MemoryReach::Shared => {}
            MemoryReach::LambdaInstance => tracing::warn!(
                "MCP_HANDLES_TABLE is not set: handles live in this instance's memory, so \
                 other instances (and this one after a restart) will not find them"
            ),
            MemoryReach::ReachableFromElsewhere => tracing::warn!(
                bind = %local_bind,
                served_name = name_beyond_loopback.unwrap_or("-"),
                "MCP_HANDLES_TABLE is not set: handles live in this process's memory, so a \
                 second process behind the same proxy (and this one after a restart) will not \
                 find them; set MCP_HANDLES_TABLE wherever more than one process serves"
            ),
            MemoryReach::OneLocalProcess => tracing::info!(
                "handles live in this process's memory (MCP_HANDLES_TABLE is not set): one \
                 process, kept until it stops; set MCP_HANDLES_TABLE to run more than one"
            ),
        }
    }

    /// Who may miss a handle this process keeps in memory. Locally, callers may be spread over
    /// several processes when the server listens beyond loopback, or when it listens on
    /// loopback but accepts a host name that is not this machine's (`MCP_ALLOWED_HOSTS`): a
    /// reverse proxy on the same machine passes those requests on, often to more than one
    /// process (docs/vps.md).
    fn memory_reach(
        &self,
        local_bind: std::net::SocketAddr,
        name_beyond_loopback: Option<&str>,
    ) -> MemoryReach {
        if self.table.is_some() {
            MemoryReach::Shared
        } else if self.on_lambda {
            MemoryReach::LambdaInstance
        } else if !local_bind.ip().is_loopback() || name_beyond_loopback.is_some() {
            MemoryReach::ReachableFromElsewhere
        } else {
            MemoryReach::OneLocalProcess
        }
    }

    /// Opens the store these settings name: `DynamoDbHandleStore` (feature `dynamodb`)
    /// on [`table`](Self::table) when it is set, else the in-memory store (the embedded default).
    ///
    /// Call it once at start-up (Lambda INIT): it builds the DynamoDB client with the configured
    /// timeouts (endpoint, region and credentials from the standard AWS environment, e.g.
    /// `AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000` for a local stand-in) and reads one
    /// (absent) item, which checks the table, its key and the permission, and opens the
    /// connection before the first request.
    ///
    /// # Errors
    ///
    /// [`TableError`] when the table is missing or has another key schema, or DynamoDB
    /// refuses the call (no region, credentials or permission). An endpoint that cannot be
    /// reached at start-up is only logged: the store serves once it comes back, and each
    /// operation fails with [`HandleError::Unavailable`](super::HandleError::Unavailable) until
    /// then. The in-memory store never fails.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), mcp_lambda::Error> {
    /// let config = mcp_lambda::Config::from_env()?;
    /// let handles = config.handles.open().await?;
    /// # drop(handles);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open(&self) -> Result<Arc<dyn HandleStore>, TableError> {
        let Some(table) = &self.table else {
            return Ok(self.in_memory());
        };
        #[cfg(feature = "dynamodb")]
        {
            super::dynamodb::open(table, &self.timeouts, self.caller_quota()).await
        }
        #[cfg(not(feature = "dynamodb"))]
        {
            Err(TableError::new(
                super::STORE,
                table,
                "this build has no DynamoDB store: enable the `dynamodb` feature of mcp-lambda, \
                 or leave the table unset to keep handles in memory",
            ))
        }
    }

    /// One caller's share of the store.
    fn caller_quota(&self) -> CallerQuota {
        CallerQuota {
            max: self.max_per_caller,
            window: self.ttl,
        }
    }
}

/// A DynamoDB table name, or a table ARN.
fn valid_table(value: &str) -> bool {
    if value.starts_with("arn:") {
        return parse_arn(value).is_some_and(|(service, resource)| {
            service == "dynamodb" && resource.strip_prefix("table/").is_some_and(valid_table)
        });
    }
    (3..=255).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(vars: &[(&'static str, &'static str)]) -> Result<HandleSettings, ConfigError> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        HandleSettings::from_env(&Env::new(&lookup))
    }

    #[cfg(feature = "dynamodb")]
    #[test]
    fn handles_table_selects_dynamodb_and_is_validated() {
        assert_eq!(settings(&[]).unwrap().table, None);
        for good in [
            "mcp-handles",
            "a.b_c-1",
            "arn:aws:dynamodb:eu-west-1:123456789012:table/mcp-handles",
        ] {
            let s = settings(&[("MCP_HANDLES_TABLE", good)]).unwrap();
            assert_eq!(s.table.as_deref(), Some(good));
        }
        for bad in [
            "ab",
            "has space",
            "tab/le",
            "arn:aws:s3:::bucket",
            "arn:aws:dynamodb:eu-west-1:1:index/x",
        ] {
            let err = settings(&[("MCP_HANDLES_TABLE", bad)]).unwrap_err();
            assert_eq!(err.variable, "MCP_HANDLES_TABLE", "{bad}");
            assert!(err.to_string().contains("table name"), "{err}");
        }
    }

    #[cfg(not(feature = "dynamodb"))]
    #[test]
    fn a_table_needs_the_dynamodb_feature() {
        let err = settings(&[("MCP_HANDLES_TABLE", "mcp-handles")]).unwrap_err();
        assert_eq!(err.variable, "MCP_HANDLES_TABLE");
        assert!(err.to_string().contains("`dynamodb` feature"), "{err}");
    }

    #[test]
    fn memory_handles_warn_where_a_second_process_may_serve() {
        let loopback: std::net::SocketAddr = "127.0.0.1:3000".parse().unwrap();
        let everywhere: std::net::SocketAddr = "0.0.0.0:3000".parse().unwrap();
        let local = settings(&[]).unwrap();
        assert_eq!(
            local.memory_reach(loopback, None),
            MemoryReach::OneLocalProcess
        );
        assert_eq!(
            local.memory_reach(loopback, Some("mcp.example.com")),
            MemoryReach::ReachableFromElsewhere,
            "on loopback behind a proxy for a public name"
        );
        assert_eq!(
            local.memory_reach(everywhere, None),
            MemoryReach::ReachableFromElsewhere
        );
        let lambda = HandleSettings {
            on_lambda: true,
            ..local.clone()
        };
        assert_eq!(
            lambda.memory_reach(loopback, None),
            MemoryReach::LambdaInstance
        );
    }

    #[test]
    fn handle_ttl_is_bounded() {
        assert_eq!(settings(&[]).unwrap().ttl, Duration::from_secs(86_400));
        let err = settings(&[("MCP_HANDLE_TTL_SECS", "0")]).unwrap_err();
        assert_eq!(err.variable, "MCP_HANDLE_TTL_SECS");
    }
}
