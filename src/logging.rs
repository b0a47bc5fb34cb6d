//! Logs: JSON lines on Lambda (CloudWatch adds the time), readable text
//! locally. Tokens, tool arguments and handle contents are never logged.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_LOG` | `info` | tracing filter; rmcp is capped at `warn` unless the filter names it, and its warn on a refused client request is left out (the request is noted at info: `request refused`, with its code) |

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::env::{ConfigError, Env, Mode};

/// A log line that strangers can cause (a refused token, a forged task round), let through at
/// most once per window, so a scanner hitting the URL cannot fill the logs: the line that goes
/// out says how many were held back. Metrics still count every one.
///
/// ```ignore
/// static REFUSALS: Sampled = Sampled::per(Duration::from_secs(10));
/// if let Some(suppressed) = REFUSALS.allow() {
///     tracing::info!(suppressed, "request refused by auth");
/// }
/// ```
#[derive(Debug)]
pub(crate) struct Sampled {
    window_ms: u64,
    /// When the last line went out (epoch ms; 0 = never).
    last_ms: AtomicU64,
    held_back: AtomicU64,
}

impl Sampled {
    pub(crate) const fn per(window: Duration) -> Self {
        Self {
            window_ms: window.as_millis() as u64,
            last_ms: AtomicU64::new(0),
            held_back: AtomicU64::new(0),
        }
    }

    /// `Some(lines held back since the last one)` when a line may go out now.
    pub(crate) fn allow(&self) -> Option<u64> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .max(1);
        let last = self.last_ms.load(Ordering::Relaxed);
        if (last == 0 || now.saturating_sub(last) >= self.window_ms)
            && self
                .last_ms
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.held_back.swap(0, Ordering::Relaxed));
        }
        self.held_back.fetch_add(1, Ordering::Relaxed);
        None
    }
}

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
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let builder = tracing_subscriber::fmt().with_env_filter(filter);
        let quiet = crate::rmcp_gaps::QuietRefusals;
        let _ = match self.mode {
            Mode::Lambda => builder
                .json()
                .without_time()
                .with_current_span(false)
                .finish()
                .with(quiet)
                .try_init(),
            // Colours for a person at a terminal only: a log file, journald or a pipe gets
            // plain text, and no request pays for styling its span's fields (BENCHMARKS.md,
            // issue 32: most of what the fields cost).
            Mode::Local => builder
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .finish()
                .with(quiet)
                .try_init(),
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
    fn a_flood_of_lines_lets_one_through_per_window_and_counts_the_rest() {
        let sampled = Sampled::per(Duration::from_secs(3600));
        assert_eq!(sampled.allow(), Some(0));
        for _ in 0..1000 {
            assert_eq!(sampled.allow(), None);
        }
        let open = Sampled::per(Duration::ZERO);
        assert_eq!(open.allow(), Some(0));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(open.allow(), Some(0));
    }

    #[test]
    fn rmcp_is_capped_at_warn_unless_named_or_already_quieter() {
        assert_eq!(settings("info").directives(), "info,rmcp=warn");
        assert_eq!(settings("debug,rmcp=info").directives(), "debug,rmcp=info");
        assert_eq!(settings("error").directives(), "error");
    }
}
