//! `MCP_LISTEN_*`: how often listeners poll, how long a stream lives, and which feed.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_LISTEN_POLL_MS` | `1000` | how often a listener reads the feed (100–60000); a change arrives within two intervals |
//! | `MCP_LISTEN_MAX_SECS` | `300` | the longest a listen stream stays open (1–900) before it ends with its result |
//! | `MCP_LISTEN_MAX_STREAMS` | `1000` | the most listen streams one process holds open (1–100000); more get 503 |
//! | `MCP_LISTEN_MAX_STREAMS_PER_CALLER` | `10`, at most half the total | the most one authenticated caller holds open on one process, below the total so no caller can take them all; more get 429 |
//!
//! The feed follows the handle store: `MCP_HANDLES_TABLE` set → the DynamoDB feed on that
//! table, otherwise in memory.

use std::sync::Arc;
use std::time::Duration;

use super::{Changes, MemoryFeed};
use crate::aws::TableError;
use crate::env::{ConfigError, Env, Unit};
use crate::handles::{HandleSettings, HandleStore};

/// The listen settings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListenSettings {
    /// How often a listener reads the feed (`MCP_LISTEN_POLL_MS`).
    pub poll: Duration,
    /// The longest a listen stream stays open (`MCP_LISTEN_MAX_SECS`).
    pub max: Duration,
    /// The most listen streams one process holds open (`MCP_LISTEN_MAX_STREAMS`).
    pub max_streams: usize,
    /// The most of them one authenticated caller holds (`MCP_LISTEN_MAX_STREAMS_PER_CALLER`).
    /// With auth off every client is the same anonymous caller, so only the total applies.
    pub max_streams_per_caller: usize,
}

impl Default for ListenSettings {
    fn default() -> Self {
        Self {
            poll: Duration::from_millis(1000),
            max: Duration::from_secs(300),
            max_streams: 1000,
            max_streams_per_caller: 10,
        }
    }
}

impl ListenSettings {
    /// Reads `MCP_LISTEN_POLL_MS`, `MCP_LISTEN_MAX_SECS`, `MCP_LISTEN_MAX_STREAMS` and
    /// `MCP_LISTEN_MAX_STREAMS_PER_CALLER`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut settings = Self {
            poll: env.duration("MCP_LISTEN_POLL_MS", Unit::Millis, 1000, 100..=60_000)?,
            max: env.duration("MCP_LISTEN_MAX_SECS", Unit::Seconds, 300, 1..=900)?,
            max_streams: env.number(
                "MCP_LISTEN_MAX_STREAMS",
                1000,
                1..=100_000,
                "a whole number between 1 and 100000, e.g. 1000",
            )? as usize,
            max_streams_per_caller: 0,
        };
        // Below the total, so one caller never holds every stream (a total of 1 is shared).
        let most = (settings.max_streams - 1).max(1);
        let default = 10.min((settings.max_streams / 2).max(1));
        settings.max_streams_per_caller = env.number(
            "MCP_LISTEN_MAX_STREAMS_PER_CALLER",
            default as u64,
            1..=most as u64,
            &format!(
                "a whole number from 1 to {most}, below MCP_LISTEN_MAX_STREAMS ({})",
                settings.max_streams
            ),
        )? as usize;
        Ok(settings)
    }

    /// The change feed for this deployment: DynamoDB on `MCP_HANDLES_TABLE` when it is set,
    /// otherwise in memory beside `handles` (the store [`HandleSettings::open`] returned).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = mcp_lambda::Config::load().await?;
    /// let handles = config.handles.open().await?;
    /// let changes = config.listen.open(&config.handles, handles.clone()).await?;
    /// # let _ = changes; Ok(())
    /// # }
    /// ```
    pub async fn open(
        &self,
        handles: &HandleSettings,
        store: Arc<dyn HandleStore>,
    ) -> Result<Changes, TableError> {
        match &handles.table {
            #[cfg(feature = "dynamodb")]
            Some(table) => super::dynamodb::open(table, &handles.timeouts).await,
            #[cfg(not(feature = "dynamodb"))]
            Some(table) => Err(TableError::new(
                super::STORE,
                table,
                "this build lacks the `dynamodb` feature",
            )),
            None => Ok(Changes::new(MemoryFeed::new(Some(store)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(
        vars: &'static [(&'static str, &'static str)],
    ) -> Result<ListenSettings, ConfigError> {
        let lookup = move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        ListenSettings::from_env(&Env::new(&lookup))
    }

    #[test]
    fn one_caller_gets_less_than_the_whole_process() {
        assert_eq!(settings(&[]).unwrap().max_streams_per_caller, 10);
        let small = settings(&[("MCP_LISTEN_MAX_STREAMS", "4")]).unwrap();
        assert_eq!(small.max_streams_per_caller, 2, "half of a small total");
        let one = settings(&[("MCP_LISTEN_MAX_STREAMS", "1")]).unwrap();
        assert_eq!(one.max_streams_per_caller, 1, "a total of one is shared");
        let all = settings(&[
            ("MCP_LISTEN_MAX_STREAMS", "5"),
            ("MCP_LISTEN_MAX_STREAMS_PER_CALLER", "5"),
        ])
        .unwrap_err();
        assert_eq!(all.variable, "MCP_LISTEN_MAX_STREAMS_PER_CALLER");
        assert!(all.to_string().contains("from 1 to 4"), "{all}");
    }
}
