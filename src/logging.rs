//! Logs: JSON lines on Lambda (CloudWatch adds the time), readable text
//! locally. Tokens, tool arguments and handle contents are never logged.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_LOG` | `info` | tracing filter; rmcp is capped at `warn` unless the filter names it |

use crate::env::{ConfigError, Env, Mode};

/// What to log, and how.
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert_eq!(config.log.filter, "info");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogSettings {
    /// Tracing filter (`MCP_LOG`).
    pub filter: String,
    /// JSON lines without time on Lambda, text on stderr locally.
    pub mode: Mode,
}

impl LogSettings {
    /// Reads `MCP_LOG`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let filter = env.get("MCP_LOG").unwrap_or_else(|| "info".into());
        if tracing_subscriber::EnvFilter::try_new(&filter).is_err() {
            return Err(ConfigError::new(
                "MCP_LOG",
                filter,
                "expected a tracing filter, e.g. info or mcp_lambda=debug,info",
            ));
        }
        Ok(Self {
            filter,
            mode: env.mode(),
        })
    }

    /// The filter in force: `filter`, with rmcp capped at warn unless it names rmcp.
    ///
    /// rmcp logs three INFO lines per request (measured: +45 % CPU, and three
    /// CloudWatch lines per invocation) and traces whole messages, arguments
    /// included, at debug/trace. Only a cap: under a quieter filter (error)
    /// rmcp stays as quiet.
    fn directives(&self) -> String {
        let louder_than_warn = tracing_subscriber::EnvFilter::try_new(&self.filter)
            .ok()
            .and_then(|f| f.max_level_hint())
            .is_none_or(|level| level > tracing_subscriber::filter::LevelFilter::WARN);
        if self.filter.contains("rmcp") || !louder_than_warn {
            self.filter.clone()
        } else {
            format!("{},rmcp=warn", self.filter)
        }
    }

    /// Installs the global tracing subscriber (once; later calls do nothing).
    pub fn init(&self) {
        let filter = tracing_subscriber::EnvFilter::try_new(self.directives())
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
        let builder = tracing_subscriber::fmt().with_env_filter(filter);
        let _ = match self.mode {
            Mode::Lambda => builder
                .json()
                .without_time()
                .with_current_span(false)
                .try_init(),
            Mode::Local => builder.with_writer(std::io::stderr).try_init(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(filter: &str) -> LogSettings {
        LogSettings {
            filter: filter.into(),
            mode: Mode::Local,
        }
    }

    #[test]
    fn rmcp_is_capped_at_warn_unless_named_or_already_quieter() {
        assert_eq!(settings("info").directives(), "info,rmcp=warn");
        assert_eq!(settings("debug,rmcp=info").directives(), "debug,rmcp=info");
        assert_eq!(settings("error").directives(), "error");
    }
}
