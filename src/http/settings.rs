//! The HTTP front's settings: where MCP is served, who may call it, how big a
//! request may be, and rmcp's transport configuration derived from them.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_PATH` | `/mcp` | the MCP endpoint path |
//! | `MCP_ALLOWED_HOSTS` | loopback names | comma-separated `Host` values accepted (DNS-rebinding guard), without case or IPv6 brackets; an entry's port, when it names one, must match; `*` disables the check |
//! | `MCP_ALLOWED_ORIGINS` | loopback in local mode, none on Lambda | comma-separated browser origins (`https://app.example.com:443`, `http://localhost:*`, `null`), compared as RFC 6454 origins: scheme and host without case, a port left out of an `Origin` the scheme's default (so `https://app.example.com` is `https://app.example.com:443`), `:*` any port, an entry without a port any port (as rmcp 3.11 reads it); a request with any other `Origin` gets 403 |
//! | `MCP_MAX_BODY_BYTES` | `1048576` | request bodies above this get 413 |
//! | `MCP_LEGACY_SESSIONS` | `false` | in-memory sessions for 2025-era clients (local mode only) |
//! | `MCP_SSE_KEEP_ALIVE_SECS` | `15` | seconds between `:` keep-alive comments on an idle SSE answer (keep it under the 30 s idle timeouts of CloudFront and edge API Gateway) |
//! | `MCP_ORIGIN_SECRET`, `MCP_ORIGIN_SECRET_HEADER` | none | see [`OriginSecret`] |

use std::time::Duration;

use rmcp::transport::StreamableHttpServerConfig;

use super::origin_secret::OriginSecret;
use crate::env::{ConfigError, Env, Mode, split_list};

/// What the HTTP front enforces, read once at start-up.
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert_eq!(config.http.path, "/mcp");
/// assert_eq!(config.http.max_body_bytes, 1024 * 1024);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HttpSettings {
    /// The MCP endpoint path (`MCP_PATH`), starting with `/`.
    pub path: String,
    /// Accepted `Host` values; empty means any host (`MCP_ALLOWED_HOSTS=*`).
    pub allowed_hosts: Vec<String>,
    /// Accepted browser origins: `MCP_ALLOWED_ORIGINS`, or when it names none, the loopback
    /// origins in local mode and no origin on Lambda. This is the list in force: an empty
    /// list allows no browser origin.
    pub allowed_origins: Vec<String>,
    /// Body cap in bytes (`MCP_MAX_BODY_BYTES`).
    pub max_body_bytes: usize,
    /// In-memory sessions for legacy clients (`MCP_LEGACY_SESSIONS`, local only).
    pub legacy_sessions: bool,
    /// Interval of `:` keep-alive comments on an idle SSE answer
    /// (`MCP_SSE_KEEP_ALIVE_SECS`).
    pub sse_keep_alive: Duration,
    /// The secret header a CDN in front adds; `None` = no check.
    pub origin_secret: Option<OriginSecret>,
}

impl HttpSettings {
    /// Reads the front's variables.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mode = env.mode();
        let path = env.get("MCP_PATH").unwrap_or_else(|| "/mcp".into());
        if !path.starts_with('/')
            || path.len() < 2
            || path.contains(['?', '#', ' '])
            || path.ends_with('/')
        {
            return Err(ConfigError::new(
                "MCP_PATH",
                path,
                "expected an absolute path without query or trailing slash, e.g. /mcp",
            ));
        }

        let allowed_hosts = match env.get("MCP_ALLOWED_HOSTS") {
            Some(v) if v.trim() == "*" => Vec::new(),
            Some(v) => {
                let hosts = split_list(&v);
                if hosts
                    .iter()
                    .any(|h| h.contains(['/', ' ']) || h.contains("://"))
                {
                    return Err(ConfigError::new(
                        "MCP_ALLOWED_HOSTS",
                        v,
                        "expected comma-separated host names or host:port, e.g. \
                         abc.lambda-url.us-east-1.on.aws,d111.cloudfront.net (or * for any)",
                    ));
                }
                hosts
            }
            None => ["localhost", "127.0.0.1", "::1", "[::1]"]
                .map(String::from)
                .to_vec(),
        };

        let mut allowed_origins = match env.get("MCP_ALLOWED_ORIGINS") {
            Some(v) => {
                let origins = split_list(&v);
                if origins.iter().any(|o| {
                    let lower = o.to_ascii_lowercase();
                    let web = lower.starts_with("http://") || lower.starts_with("https://");
                    (lower != "null" && !web) || super::host::invalid_origin_entry(o)
                }) {
                    return Err(ConfigError::new(
                        "MCP_ALLOWED_ORIGINS",
                        v,
                        "expected comma-separated origins with a scheme, e.g. \
                         https://app.example.com:443,http://localhost:*",
                    ));
                }
                origins
            }
            None => Vec::new(),
        };
        if allowed_origins.is_empty() && mode == Mode::Local {
            // Browser clients on this machine, for local development only.
            allowed_origins = ["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]
                .map(String::from)
                .to_vec();
        }

        let max_body_bytes = env.number(
            "MCP_MAX_BODY_BYTES",
            1024 * 1024,
            1..=64 * 1024 * 1024,
            "a whole number of bytes between 1 and 67108864, e.g. 1048576",
        )? as usize;

        let legacy_sessions = env.flag("MCP_LEGACY_SESSIONS")?;
        if legacy_sessions && mode == Mode::Lambda {
            return Err(ConfigError::new(
                "MCP_LEGACY_SESSIONS",
                "true",
                "in-memory sessions cannot work on Lambda (each instance has its own memory); \
                 leave it unset so legacy clients are served statelessly",
            ));
        }

        let sse_keep_alive = env
            .number(
                "MCP_SSE_KEEP_ALIVE_SECS",
                15,
                1..=300,
                "whole seconds between 1 and 300, e.g. 15 (stay under the 30 s idle timeout of \
                 CloudFront)",
            )
            .map(Duration::from_secs)?;

        Ok(Self {
            path,
            allowed_hosts,
            allowed_origins,
            max_body_bytes,
            legacy_sessions,
            sse_keep_alive,
            origin_secret: OriginSecret::from_env(env)?,
        })
    }

    /// A host name the front accepts that is not this machine's own (`*` when any is):
    /// requests for it come through a proxy or from elsewhere, though the server may listen on
    /// loopback.
    pub(crate) fn name_beyond_loopback(&self) -> Option<&str> {
        if self.allowed_hosts.is_empty() {
            return Some("*");
        }
        self.allowed_hosts
            .iter()
            .map(String::as_str)
            .find(|entry| !super::host::names_this_machine(entry))
    }

    /// rmcp's transport configuration: JSON answers, our body cap and keep-alives, and its
    /// `Host` and `Origin` allow-lists off: the front's *host* step (`host.rs`) has judged both
    /// before any request reaches rmcp, by the same rules, and is the one judge CORS and the
    /// direct door follow too. (rmcp still reads `Host` to refuse a missing or malformed one,
    /// which the front has refused first.)
    pub(crate) fn rmcp_config(&self) -> StreamableHttpServerConfig {
        let mut config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(self.legacy_sessions)
            .with_json_response(true)
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_sse_keep_alive(Some(self.sse_keep_alive));
        if !self.legacy_sessions {
            // No resumable streams without sessions: no SSE priming events.
            config = config.with_sse_retry(None);
        }
        config.disable_allowed_hosts().disable_allowed_origins()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(hosts: Option<&'static str>) -> HttpSettings {
        let lookup = |name: &str| {
            (name == "MCP_ALLOWED_HOSTS")
                .then(|| hosts.map(String::from))
                .flatten()
        };
        HttpSettings::from_env(&Env::new(&lookup)).unwrap()
    }

    #[test]
    fn a_host_name_beyond_loopback_is_found_in_the_allowed_hosts() {
        assert_eq!(
            settings(None).name_beyond_loopback(),
            None,
            "the default: loopback names"
        );
        for own in [
            "localhost:3000,127.0.0.1",
            "[::1]:3001,::1",
            "LOCALHOST,127.0.0.2:80",
        ] {
            assert_eq!(settings(Some(own)).name_beyond_loopback(), None, "{own}");
        }
        assert_eq!(settings(Some("*")).name_beyond_loopback(), Some("*"));
        assert_eq!(
            settings(Some("localhost,mcp.example.com")).name_beyond_loopback(),
            Some("mcp.example.com")
        );
        assert_eq!(
            settings(Some("127.0.0.1:3001,10.0.0.5:3001")).name_beyond_loopback(),
            Some("10.0.0.5:3001")
        );
    }
}
