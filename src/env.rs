//! Reading settings from the environment: where the process runs, the small
//! parsers every concept shares, [`ConfigError`], and the wall clock the stores
//! and the task engine read (epoch milliseconds).
//!
//! Each concept reads its own variables into its own settings type (the HTTP
//! front in `http::settings`, handles in `handles::settings`, auth in
//! `auth::settings`, …) through an [`Env`]; [`Config`](crate::Config) only
//! assembles them. The parsers here return a [`ConfigError`] that already
//! names the variable, so a bad value stops start-up with one line that says
//! what was expected.

use std::time::{SystemTime, UNIX_EPOCH};
use std::{fmt, ops::RangeInclusive, time::Duration};

use thiserror::Error;

/// `time` in milliseconds since the Unix epoch (0 for times before it).
pub(crate) fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Now, in milliseconds since the Unix epoch: every expiry, lease and timestamp the stores
/// write.
pub(crate) fn now_ms() -> u64 {
    epoch_ms(SystemTime::now())
}

/// Where the process is running, decided by `AWS_LAMBDA_RUNTIME_API`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A plain HTTP server on `MCP_BIND`.
    Local,
    /// Inside the AWS Lambda runtime.
    Lambda,
}

/// A configuration value that could not be used.
///
/// ```
/// let err = mcp_lambda::Config::from_lookup(|name| {
///     (name == "MCP_PAGE_SIZE").then(|| "0".to_string())
/// })
/// .unwrap_err();
/// assert_eq!(err.variable, "MCP_PAGE_SIZE");
/// assert!(err.to_string().starts_with("MCP_PAGE_SIZE=\"0\": expected"));
/// ```
#[derive(Debug, Error)]
#[error("{variable}={value:?}: {reason}")]
pub struct ConfigError {
    /// The environment variable.
    pub variable: &'static str,
    /// The value found (secrets are never echoed: they show as `<redacted>`).
    pub value: String,
    /// What was expected.
    pub reason: String,
}

impl ConfigError {
    /// `variable` holds the unusable `value`; `reason` says what was expected.
    pub(crate) fn new(
        variable: &'static str,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            variable,
            value: value.into(),
            reason: reason.into(),
        }
    }

    /// Like [`new`](Self::new) for a secret: the value is never shown.
    pub(crate) fn redacted(variable: &'static str, reason: impl Into<String>) -> Self {
        Self::new(variable, "<redacted>", reason)
    }
}

/// The Levenshtein distance between `a` and `b` (bytes), for "did you mean …?".
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The unit a duration variable is written in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Unit {
    Seconds,
    Millis,
}

/// The variables of one configuration, read through a lookup function (the
/// process environment, or a map in tests). Blank values count as unset.
pub(crate) struct Env<'a> {
    lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl fmt::Debug for Env<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Env(..)")
    }
}

impl<'a> Env<'a> {
    pub(crate) fn new(lookup: &'a dyn Fn(&str) -> Option<String>) -> Self {
        Self { lookup }
    }

    /// The value of `name`, unless unset or blank.
    pub(crate) fn get(&self, name: &str) -> Option<String> {
        (self.lookup)(name).filter(|v| !v.trim().is_empty())
    }

    /// Lambda when `AWS_LAMBDA_RUNTIME_API` is set (the runtime sets it), else local.
    pub(crate) fn mode(&self) -> Mode {
        if self.get("AWS_LAMBDA_RUNTIME_API").is_some() {
            Mode::Lambda
        } else {
            Mode::Local
        }
    }

    /// A whole number in `range`, `default` when unset; `expected` completes
    /// "expected …" in the error, e.g. "whole seconds between 1 and 300, e.g. 15".
    pub(crate) fn number(
        &self,
        name: &'static str,
        default: u64,
        range: RangeInclusive<u64>,
        expected: &str,
    ) -> Result<u64, ConfigError> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) if range.contains(&n) => Ok(n),
                _ => Err(ConfigError::new(name, v, format!("expected {expected}"))),
            },
        }
    }

    /// Whole `unit`s in `range`, `default` when unset; the error says what it expects in the
    /// unit and the range, with the default as the example ("expected whole seconds between 1
    /// and 900, e.g. 300").
    pub(crate) fn duration(
        &self,
        name: &'static str,
        unit: Unit,
        default: u64,
        range: RangeInclusive<u64>,
    ) -> Result<Duration, ConfigError> {
        let (unit_name, of): (_, fn(u64) -> Duration) = match unit {
            Unit::Seconds => ("seconds", Duration::from_secs),
            Unit::Millis => ("milliseconds", Duration::from_millis),
        };
        let expected = format!(
            "whole {unit_name} between {} and {}, e.g. {default}",
            range.start(),
            range.end()
        );
        self.number(name, default, range, &expected).map(of)
    }

    /// `true`/`1`/`yes` or `false`/`0`/`no`; `false` when unset.
    pub(crate) fn flag(&self, name: &'static str) -> Result<bool, ConfigError> {
        match self.get(name).as_deref().map(str::trim) {
            None => Ok(false),
            Some("true" | "1" | "yes") => Ok(true),
            Some("false" | "0" | "no") => Ok(false),
            Some(other) => Err(ConfigError::new(name, other, "expected true or false")),
        }
    }
}

/// Splits a comma-separated list, trimming entries and dropping empty ones.
pub(crate) fn split_list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// `arn:PARTITION:SERVICE:REGION:ACCOUNT:RESOURCE` → (service, resource).
pub(crate) fn parse_arn(arn: &str) -> Option<(&str, &str)> {
    let mut parts = arn.splitn(6, ':');
    let (prefix, partition, service, region, _account, resource) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    (prefix == "arn" && !partition.is_empty() && !region.is_empty() && !resource.is_empty())
        .then_some((service, resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn blank_values_count_as_unset() {
        let lookup = env(&[("A", "  ")]);
        let env = Env::new(&lookup);
        assert_eq!(env.get("A"), None);
        assert_eq!(env.number("A", 7, 1..=10, "x").unwrap(), 7);
        assert!(!env.flag("A").unwrap());
    }

    #[test]
    fn numbers_out_of_range_name_the_variable_and_the_expectation() {
        let lookup = env(&[("N", "11"), ("F", "maybe")]);
        let env = Env::new(&lookup);
        let err = env.number("N", 1, 1..=10, "a number up to 10").unwrap_err();
        assert_eq!(err.to_string(), "N=\"11\": expected a number up to 10");
        assert_eq!(env.flag("F").unwrap_err().variable, "F");
    }

    #[test]
    fn the_runtime_api_variable_means_lambda() {
        let lookup = env(&[("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001")]);
        assert_eq!(Env::new(&lookup).mode(), Mode::Lambda);
        let nothing = env(&[]);
        assert_eq!(Env::new(&nothing).mode(), Mode::Local);
    }

    #[test]
    fn arns_split_into_service_and_resource() {
        assert_eq!(
            parse_arn("arn:aws:ssm:eu-west-1:1:parameter/x"),
            Some(("ssm", "parameter/x"))
        );
        assert_eq!(parse_arn("arn:aws:s3:::bucket"), None);
    }
}
