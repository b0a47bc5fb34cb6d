//! Cache hints: `ttlMs`/`cacheScope` per cacheable method, and the `Cache-Control` value a
//! hint becomes.
//!
//! The [`Hosted`](crate::handler::Hosted) wrapper writes the hint into the result body and into the
//! request's scope (`request_scope.rs`); the front mirrors it into `Cache-Control` without
//! reading the body again.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_CACHE_SERVER_DISCOVER` | `3600,public` | `<ttl seconds>[,public\|private]` of `server/discover` |
//! | `MCP_CACHE_TOOLS_LIST`, `MCP_CACHE_PROMPTS_LIST`, `MCP_CACHE_RESOURCES_LIST`, `MCP_CACHE_RESOURCES_TEMPLATES_LIST` | `300,public` | the same for each list |
//! | `MCP_CACHE_RESOURCES_READ` | `0,private` | the same for `resources/read` (contents are often per user) |

use std::time::Duration;

use http::HeaderValue;

use crate::env::{ConfigError, Env};

/// Who may reuse a cached answer, mirrored into `Cache-Control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// Any client or shared cache may reuse the answer.
    Public,
    /// Only the same authorization context may reuse the answer.
    Private,
}

/// A cache hint: freshness and scope, as `ttlMs`/`cacheScope` in the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheHint {
    /// How long the answer stays fresh.
    pub ttl: Duration,
    /// Who may reuse it.
    pub scope: CacheScope,
}

impl CacheHint {
    const fn public(secs: u64) -> Self {
        Self {
            ttl: Duration::from_secs(secs),
            scope: CacheScope::Public,
        }
    }
}

/// Cache hints per cacheable method.
///
/// Defaults: `server/discover` 1 h public; lists 5 min public;
/// `resources/read` 0 s private (resource contents are often per user).
///
/// ```
/// use mcp_lambda::cache::{CacheHints, CacheScope};
/// let hints = CacheHints::default();
/// assert_eq!(hints.for_method("tools/list").unwrap().scope, CacheScope::Public);
/// assert!(hints.for_method("tools/call").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheHints {
    /// `server/discover` (`MCP_CACHE_SERVER_DISCOVER`).
    pub discover: CacheHint,
    /// `tools/list` (`MCP_CACHE_TOOLS_LIST`).
    pub tools_list: CacheHint,
    /// `prompts/list` (`MCP_CACHE_PROMPTS_LIST`).
    pub prompts_list: CacheHint,
    /// `resources/list` (`MCP_CACHE_RESOURCES_LIST`).
    pub resources_list: CacheHint,
    /// `resources/templates/list` (`MCP_CACHE_RESOURCES_TEMPLATES_LIST`).
    pub resource_templates_list: CacheHint,
    /// `resources/read` (`MCP_CACHE_RESOURCES_READ`).
    pub resources_read: CacheHint,
}

impl Default for CacheHints {
    fn default() -> Self {
        Self {
            discover: CacheHint::public(3600),
            tools_list: CacheHint::public(300),
            prompts_list: CacheHint::public(300),
            resources_list: CacheHint::public(300),
            resource_templates_list: CacheHint::public(300),
            resources_read: CacheHint {
                ttl: Duration::ZERO,
                scope: CacheScope::Private,
            },
        }
    }
}

impl CacheHints {
    /// Reads the `MCP_CACHE_*` variables.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let mut hints = Self::default();
        for (variable, slot) in [
            ("MCP_CACHE_SERVER_DISCOVER", &mut hints.discover),
            ("MCP_CACHE_TOOLS_LIST", &mut hints.tools_list),
            ("MCP_CACHE_PROMPTS_LIST", &mut hints.prompts_list),
            ("MCP_CACHE_RESOURCES_LIST", &mut hints.resources_list),
            (
                "MCP_CACHE_RESOURCES_TEMPLATES_LIST",
                &mut hints.resource_templates_list,
            ),
            ("MCP_CACHE_RESOURCES_READ", &mut hints.resources_read),
        ] {
            if let Some(v) = env.get(variable) {
                *slot = parse_hint(&v, slot.scope).ok_or_else(|| {
                    ConfigError::new(
                        variable,
                        v,
                        "expected <ttl seconds>[,public|private], e.g. 300,public",
                    )
                })?;
            }
        }
        Ok(hints)
    }

    /// The hint for a JSON-RPC method, if the method's result is cacheable.
    pub fn for_method(&self, method: &str) -> Option<CacheHint> {
        Some(match method {
            "server/discover" => self.discover,
            "tools/list" => self.tools_list,
            "prompts/list" => self.prompts_list,
            "resources/list" => self.resources_list,
            "resources/templates/list" => self.resource_templates_list,
            "resources/read" => self.resources_read,
            _ => return None,
        })
    }
}

fn parse_hint(value: &str, default_scope: CacheScope) -> Option<CacheHint> {
    let mut parts = value.split(',').map(str::trim);
    let secs: u64 = parts.next()?.parse().ok()?;
    if secs > 31_536_000 {
        return None;
    }
    let scope = match parts.next() {
        None => default_scope,
        Some("public") => CacheScope::Public,
        Some("private") => CacheScope::Private,
        Some(_) => return None,
    };
    if parts.next().is_some() {
        return None;
    }
    Some(CacheHint {
        ttl: Duration::from_secs(secs),
        scope,
    })
}

/// The `Cache-Control` value for a hint.
pub(crate) fn cache_control(ttl_ms: u64, public: bool) -> HeaderValue {
    let scope = if public { "public" } else { "private" };
    HeaderValue::from_str(&format!("{scope}, max-age={}", ttl_ms / 1000))
        .expect("ASCII digits and letters")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(vars: &'static [(&'static str, &'static str)]) -> Result<CacheHints, ConfigError> {
        let lookup = move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        CacheHints::from_env(&Env::new(&lookup))
    }

    #[test]
    fn cache_hints_parse_ttl_and_scope() {
        let c = hints(&[
            ("MCP_CACHE_TOOLS_LIST", "60,private"),
            ("MCP_CACHE_SERVER_DISCOVER", "10"),
        ])
        .unwrap();
        assert_eq!(c.tools_list.ttl, Duration::from_secs(60));
        assert_eq!(c.tools_list.scope, CacheScope::Private);
        assert_eq!(c.discover.scope, CacheScope::Public);
        assert_eq!(c.for_method("tools/call"), None);
        let err = hints(&[("MCP_CACHE_TOOLS_LIST", "300,shared")]).unwrap_err();
        assert_eq!(err.variable, "MCP_CACHE_TOOLS_LIST");
        assert!(err.to_string().contains("public|private"), "{err}");
    }

    #[test]
    fn cache_control_names_the_scope_and_whole_seconds() {
        assert_eq!(cache_control(1_999, false), "private, max-age=1");
        assert_eq!(cache_control(60_000, true), "public, max-age=60");
    }
}
