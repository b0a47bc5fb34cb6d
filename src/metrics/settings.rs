//! `MCP_METRICS` and `MCP_METRICS_NAMESPACE`.

use crate::env::{ConfigError, Env, Mode};

/// Whether to write EMF records, and in which namespace; see the [module docs](super).
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// assert!(!config.metrics.enabled);
/// assert_eq!(config.metrics.namespace, "mcp-lambda");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricsSettings {
    /// `MCP_METRICS`: on by default on Lambda, off locally.
    pub enabled: bool,
    /// `MCP_METRICS_NAMESPACE`.
    pub namespace: String,
}

/// The longest namespace CloudWatch accepts.
const MAX_NAMESPACE: usize = 255;

impl MetricsSettings {
    /// Reads `MCP_METRICS` and `MCP_METRICS_NAMESPACE`.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let enabled = match env.get("MCP_METRICS").as_deref().map(str::trim) {
            None | Some("") => env.mode() == Mode::Lambda,
            Some("on" | "true" | "1") => true,
            Some("off" | "false" | "0") => false,
            Some(other) => {
                return Err(ConfigError::new("MCP_METRICS", other, "expected on or off"));
            }
        };
        let namespace = env
            .get("MCP_METRICS_NAMESPACE")
            .unwrap_or_else(|| "mcp-lambda".into());
        // CloudWatch's rule for a namespace (PutMetricData, `Namespace`): 1 to 255 of these
        // characters, and not AWS's own prefix.
        let allowed = |c: char| c.is_ascii_alphanumeric() || "._-/#: ".contains(c);
        if namespace.is_empty()
            || namespace.len() > MAX_NAMESPACE
            || !namespace.chars().all(allowed)
            || namespace.starts_with("AWS/")
        {
            return Err(ConfigError::new(
                "MCP_METRICS_NAMESPACE",
                namespace,
                "expected 1 to 255 letters, digits or . _ - / # : and space, not starting with AWS/",
            ));
        }
        Ok(Self { enabled, namespace })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(mode_lambda: bool, vars: &[(&str, &str)]) -> Result<MetricsSettings, ConfigError> {
        let mut vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if mode_lambda {
            vars.insert("AWS_LAMBDA_RUNTIME_API".into(), "127.0.0.1:9001".into());
        }
        let lookup = |name: &str| vars.get(name).cloned();
        MetricsSettings::from_env(&Env::new(&lookup))
    }

    #[test]
    fn on_for_lambda_off_locally_and_switchable() {
        assert!(read(true, &[]).unwrap().enabled);
        assert!(!read(false, &[]).unwrap().enabled);
        assert!(!read(true, &[("MCP_METRICS", "off")]).unwrap().enabled);
        assert!(read(false, &[("MCP_METRICS", "on")]).unwrap().enabled);
        let error = read(false, &[("MCP_METRICS", "loud")]).unwrap_err();
        assert!(error.to_string().contains("MCP_METRICS"), "{error}");
    }

    #[test]
    fn a_namespace_cloudwatch_would_refuse_is_refused_at_start_up() {
        for bad in ["AWS/Lambda", "a{b}", &"x".repeat(256)] {
            let error = read(false, &[("MCP_METRICS_NAMESPACE", bad)]).unwrap_err();
            assert!(
                error.to_string().contains("MCP_METRICS_NAMESPACE"),
                "{error}"
            );
        }
        assert_eq!(
            read(false, &[("MCP_METRICS_NAMESPACE", "team/mcp-prod")])
                .unwrap()
                .namespace,
            "team/mcp-prod"
        );
    }
}
