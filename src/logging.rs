//! Logs: JSON lines on Lambda (CloudWatch adds the time), readable text
//! locally. Tokens, tool arguments and handle contents are never logged.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_LOG` | `info` | tracing filter; rmcp is capped at `warn` unless the filter names it, and its warn on a refused client request is left out (the request is noted at info: `request refused`, with its code) |

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::fmt::{self, Write as _};

use tracing::span;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::{FormatFields, FormattedFields, format::Writer};

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

    /// Installs the global tracing subscriber; `false` when one was installed already (by
    /// the program, or an earlier call), which is then kept and this one dropped.
    pub fn init(&self) -> bool {
        let filter = tracing_subscriber::EnvFilter::try_new(self.directives())
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        let builder = tracing_subscriber::fmt().with_env_filter(filter);
        let quiet = crate::rmcp_gaps::QuietRefusals;
        let installed = match self.mode {
            Mode::Lambda => builder
                .json()
                .without_time()
                .with_current_span(false)
                .fmt_fields(SplicedJsonFields)
                .finish()
                .with(quiet)
                .try_init(),
            // Colours for a person at a terminal only: a log file, journald or a pipe gets
            // plain text, and no request pays for styling its span's fields (benches/history/issue-32.md:
            // most of what the fields cost).
            Mode::Local => builder
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .finish()
                .with(quiet)
                .try_init(),
        };
        installed.is_ok()
    }
}

/// A span's fields as a JSON object, as tracing-subscriber's `JsonFields` writes them, with a
/// field recorded later spliced into the object. `JsonFields` parses the object into a map and
/// writes it anew on every `Span::record` (about 8,700 instructions each), and the request span
/// records three or four on every request (benches/history/issue-32.md, "The request span's fields on Lambda"). A field
/// recorded twice is written twice; the JSON line formatter reads the object into a map, where
/// the later value wins, as `JsonFields`' own map made it.
#[derive(Debug, Default)]
struct SplicedJsonFields;

impl<'w> FormatFields<'w> for SplicedJsonFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut object = String::from("{");
        fields.record(&mut JsonMembers(&mut object));
        object.push('}');
        writer.write_str(&object)
    }

    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &span::Record<'_>,
    ) -> fmt::Result {
        let object = &mut current.fields;
        if !object.ends_with('}') {
            object.clear();
            object.push('{');
        } else {
            object.pop();
        }
        fields.record(&mut JsonMembers(object));
        object.push('}');
        Ok(())
    }
}

/// Writes each field as one `"name":value` member of the JSON object being written, as
/// `JsonFields`' visitor renders it: numbers and booleans as JSON's, strings escaped, bytes as
/// an array of numbers, anything else by its `Debug` form (tracing's macros have already taken
/// `r#` off a name; `JsonFields` takes it off a `Debug` field's, and so does this, off any).
struct JsonMembers<'a>(&'a mut String);

impl JsonMembers<'_> {
    fn member(&mut self, name: &str, value: impl FnOnce(&mut String)) {
        if !self.0.ends_with('{') {
            self.0.push(',');
        }
        push_json_string(self.0, name.strip_prefix("r#").unwrap_or(name));
        self.0.push(':');
        value(self.0);
    }
}

impl tracing::field::Visit for JsonMembers<'_> {
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        // NaN and the infinities have no JSON number: `null`, as serde_json writes them.
        self.member(field.name(), |out| {
            out.push_str(&serde_json::Value::from(value).to_string())
        });
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.member(field.name(), |out| {
            let _ = write!(out, "{value}");
        });
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.member(field.name(), |out| {
            let _ = write!(out, "{value}");
        });
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.member(field.name(), |out| {
            out.push_str(if value { "true" } else { "false" })
        });
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.member(field.name(), |out| push_json_string(out, value));
    }

    fn record_bytes(&mut self, field: &tracing::field::Field, value: &[u8]) {
        self.member(field.name(), |out| {
            out.push_str(&serde_json::Value::from(value).to_string())
        });
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.member(field.name(), |out| {
            push_json_string(out, &format!("{value:?}"))
        });
    }
}

/// `text` as a JSON string: as it is when nothing in it needs escaping, else by serde_json.
fn push_json_string(out: &mut String, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        // Serializing a `str` cannot fail; were it to, the member stays valid JSON.
        out.push_str(&serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into()));
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

    /// The JSON lines `events` log under the Lambda formatter, with `fields` as its span fields'
    /// formatter.
    fn lambda_lines<N>(fields: N, events: impl FnOnce()) -> Vec<serde_json::Value>
    where
        N: for<'w> FormatFields<'w> + Send + Sync + 'static,
    {
        let path = std::env::temp_dir().join(format!(
            "mcp-lambda-log-{}-{}",
            std::process::id(),
            std::any::type_name::<N>().len()
        ));
        let file = std::fs::File::create(&path).unwrap();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(file)
            .json()
            .without_time()
            .with_current_span(false)
            .fmt_fields(fields)
            .finish();
        tracing::subscriber::with_default(subscriber, events);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).expect("each line is one JSON object"))
            .collect()
    }

    /// A span made with every kind of field empty, logged, then recorded field by field (one
    /// twice), and logged again.
    fn span_recorded_field_by_field() {
        let span = tracing::info_span!(
            "mcp.request",
            mcp.method = tracing::field::Empty,
            mcp.name = tracing::field::Empty,
            status = tracing::field::Empty,
            mcp.legacy = tracing::field::Empty,
            ratio = tracing::field::Empty,
            nan = tracing::field::Empty,
            delta = tracing::field::Empty,
            big = tracing::field::Empty,
            raw = tracing::field::Empty,
            error = tracing::field::Empty,
            trace_id = None::<&str>,
        );
        let _entered = span.enter();
        tracing::info!("before");
        span.record("mcp.method", "tools/call");
        span.record("mcp.name", "say \"hi\"\n\u{1}");
        span.record("status", 200);
        span.record("status", 429);
        span.record("mcp.legacy", true);
        span.record("ratio", 0.5);
        span.record("nan", f64::NAN);
        span.record("delta", -3);
        span.record("big", u128::MAX);
        span.record("raw", &b"\x00\xff"[..]);
        span.record("error", tracing::field::debug(vec!["a\tb"]));
        tracing::info!(count = 2, "after");
    }

    #[test]
    fn spliced_fields_read_as_tracing_subscribers_own_json_fields() {
        let spliced = lambda_lines(SplicedJsonFields, span_recorded_field_by_field);
        let rewritten = lambda_lines(
            tracing_subscriber::fmt::format::JsonFields::new(),
            span_recorded_field_by_field,
        );
        assert_eq!(spliced, rewritten);
        assert_eq!(spliced.len(), 2, "{spliced:?}");
        assert_eq!(
            spliced[0]["spans"][0],
            serde_json::json!({"name": "mcp.request"})
        );
        assert_eq!(
            spliced[1]["spans"][0],
            serde_json::json!({
                "name": "mcp.request",
                "mcp.method": "tools/call",
                "mcp.name": "say \"hi\"\n\u{1}",
                "status": 429,
                "mcp.legacy": true,
                "ratio": 0.5,
                "nan": null,
                "delta": -3,
                "big": u128::MAX.to_string(),
                "raw": [0, 255],
                "error": "[\"a\\tb\"]",
            })
        );
    }

    #[test]
    fn rmcp_is_capped_at_warn_unless_named_or_already_quieter() {
        assert_eq!(settings("info").directives(), "info,rmcp=warn");
        assert_eq!(settings("debug,rmcp=info").directives(), "debug,rmcp=info");
        assert_eq!(settings("error").directives(), "error");
    }
}
