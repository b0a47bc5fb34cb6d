//! Every setting, read once at start-up: [`Config`] assembles the settings of
//! each concept, and each concept reads its own variables.
//!
//! | concept | type | variables |
//! |---|---|---|
//! | where it runs | [`Mode`] | `AWS_LAMBDA_RUNTIME_API` (set by Lambda) |
//! | the HTTP front | [`HttpSettings`] | `MCP_PATH`, `MCP_ALLOWED_HOSTS`, `MCP_ALLOWED_ORIGINS`, `MCP_MAX_BODY_BYTES`, `MCP_LEGACY_SESSIONS`, `MCP_SSE_KEEP_ALIVE_SECS`, `MCP_ORIGIN_SECRET[_HEADER]` |
//! | the local server | [`LocalSettings`] | `MCP_BIND`, `MCP_READ_TIMEOUT_SECS` |
//! | the Lambda adapter | [`LambdaSettings`] | `MCP_LAMBDA_STREAMING` |
//! | list paging | [`ListSettings`] | `MCP_PAGE_SIZE` |
//! | cache hints | [`CacheHints`] | `MCP_CACHE_<METHOD>` |
//! | request state and cursors | [`RequestStateKeys`] | `MCP_REQUEST_STATE_KEY[_SSM_PARAMETER]`, `MCP_REQUEST_STATE_KEY_PREVIOUS` |
//! | handles | [`HandleSettings`] | `MCP_HANDLE_TTL_SECS`, `MCP_HANDLES_TABLE`, `MCP_AWS_*_TIMEOUT_MS` (also used for keys fetched from AWS) |
//! | listen streams | [`ListenSettings`] | `MCP_LISTEN_POLL_MS`, `MCP_LISTEN_MAX_SECS` |
//! | durable tasks | [`TaskSettings`] | `MCP_TASK_TTL_SECS`, `MCP_TASK_POLL_MS`, `MCP_TASK_LEASE_SECS` |
//! | auth | [`AuthSettings`] | `MCP_AUTH_*` |
//! | the built-in authorization server | [`OAuthSettings`] | `MCP_OAUTH_*` |
//! | logs | [`LogSettings`] | `MCP_LOG` |
//! | metrics | [`MetricsSettings`] | `MCP_METRICS`, `MCP_METRICS_NAMESPACE` |
//!
//! Each type's module documents its variables, defaults and meaning. A bad
//! value stops start-up with a [`ConfigError`] that names the variable and
//! says what it expects (secrets are never shown), instead of failing on the
//! first request.
//!
//! The AWS endpoint, region and credentials come from the standard AWS variables
//! (`AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`,
//! `AWS_ENDPOINT_URL_DYNAMODB`, `AWS_ENDPOINT_URL_SSM`, `AWS_ENDPOINT_URL_SECRETS_MANAGER`,
//! `AWS_ENDPOINT_URL`, …), read by the AWS SDK's own loader when a table or a key in AWS is
//! configured, so the same binary talks to AWS or to a local stand-in.

pub use crate::env::{ConfigError, Mode};
use crate::{
    auth::AuthSettings,
    cache::CacheHints,
    env::Env,
    handler::ListSettings,
    handles::HandleSettings,
    http::HttpSettings,
    listen::ListenSettings,
    logging::LogSettings,
    metrics::MetricsSettings,
    oauth::OAuthSettings,
    request_state::RequestStateKeys,
    serve::{LambdaSettings, LocalSettings},
    tasks::TaskSettings,
};

/// Everything the server needs to know, read once at start-up.
///
/// Read from the environment by [`load`](Self::load) (or [`App::load`](crate::App::load));
/// a server reads what it needs through the accessors. The fields are the house's own
/// (hidden: they change with the settings they hold).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Lambda or local.
    #[doc(hidden)]
    pub mode: Mode,
    /// The HTTP front.
    #[doc(hidden)]
    pub http: HttpSettings,
    /// The local server (not used on Lambda).
    #[doc(hidden)]
    pub local: LocalSettings,
    /// The Lambda adapter (not used locally).
    #[doc(hidden)]
    pub lambda: LambdaSettings,
    /// List paging.
    #[doc(hidden)]
    pub lists: ListSettings,
    /// Cache hints per method.
    #[doc(hidden)]
    pub cache: CacheHints,
    /// Keys for `requestState` and cursors.
    #[doc(hidden)]
    pub request_state_keys: RequestStateKeys,
    /// The handle store.
    #[doc(hidden)]
    pub handles: HandleSettings,
    /// `subscriptions/listen` streams and the change feed.
    #[doc(hidden)]
    pub listen: ListenSettings,
    /// Durable tasks.
    #[doc(hidden)]
    pub tasks: TaskSettings,
    /// OAuth resource-server settings (`MCP_AUTH_*`); `None` = auth off.
    #[doc(hidden)]
    pub auth: Option<AuthSettings>,
    /// The built-in authorization server (`MCP_OAUTH_*`); `None` = off. When on, `auth` trusts
    /// its tokens.
    #[doc(hidden)]
    pub oauth: Option<OAuthSettings>,
    /// Logs.
    #[doc(hidden)]
    pub log: LogSettings,
    /// Per-request metrics (EMF).
    #[doc(hidden)]
    pub metrics: MetricsSettings,
    /// The `MCP_` variables of the process environment no concept reads (a misspelt name is
    /// otherwise silently ignored), each with the known name it is closest to; the app warns
    /// of each once its log is up.
    pub(crate) unknown_variables: Vec<(String, Option<&'static str>)>,
}

/// Every variable a concept of this crate reads (the test below checks this list against the
/// source), so that start-up can name the `MCP_` variables it does not know.
const KNOWN_VARIABLES: &[&str] = &[
    "MCP_ALLOWED_HOSTS",
    "MCP_ALLOWED_ORIGINS",
    "MCP_AUTH_AUDIENCE",
    "MCP_AUTH_CA_FILE",
    "MCP_AUTH_CLIENT_IDS",
    "MCP_AUTH_DISCOVER_REQUIRES_TOKEN",
    "MCP_AUTH_INTROSPECTION_CACHE_SECS",
    "MCP_AUTH_INTROSPECTION_CLIENT_ID",
    "MCP_AUTH_INTROSPECTION_CLIENT_SECRET",
    "MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER",
    "MCP_AUTH_INTROSPECTION_URL",
    "MCP_AUTH_ISSUER",
    "MCP_AUTH_JWKS_MIN_REFRESH_SECS",
    "MCP_AUTH_JWKS_URL",
    "MCP_AUTH_LEEWAY_SECS",
    "MCP_AUTH_MAX_TOKEN_BYTES",
    "MCP_AUTH_METHOD_SCOPES",
    "MCP_AUTH_SCOPES_SUPPORTED",
    "MCP_AUTH_TOOL_SCOPES",
    "MCP_AWS_CONNECT_TIMEOUT_MS",
    "MCP_AWS_OPERATION_TIMEOUT_MS",
    "MCP_AWS_READ_TIMEOUT_MS",
    "MCP_BIND",
    "MCP_CACHE_PROMPTS_LIST",
    "MCP_CACHE_RESOURCES_LIST",
    "MCP_CACHE_RESOURCES_READ",
    "MCP_CACHE_RESOURCES_TEMPLATES_LIST",
    "MCP_CACHE_SERVER_DISCOVER",
    "MCP_CACHE_TOOLS_LIST",
    "MCP_DRAIN_SECS",
    "MCP_HANDLES_MAX_PER_CALLER",
    "MCP_HANDLES_PAGE_SIZE",
    "MCP_HANDLES_TABLE",
    "MCP_HANDLE_TTL_SECS",
    "MCP_LAMBDA_STREAMING",
    "MCP_LEGACY_SESSIONS",
    "MCP_LISTEN_MAX_SECS",
    "MCP_LISTEN_MAX_STREAMS",
    "MCP_LISTEN_MAX_STREAMS_PER_CALLER",
    "MCP_LISTEN_POLL_MS",
    "MCP_LOG",
    "MCP_MAX_BODY_BYTES",
    "MCP_METRICS",
    "MCP_METRICS_NAMESPACE",
    "MCP_OAUTH_ACCESS_TOKEN_SECS",
    "MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS",
    "MCP_OAUTH_CLIENTS",
    "MCP_OAUTH_CLIENT_IDLE_DAYS",
    "MCP_OAUTH_MAX_REGISTRATIONS_PER_HOUR",
    "MCP_OAUTH_REFRESH_TOKEN_DAYS",
    "MCP_OAUTH_SIGNING_KEYS",
    "MCP_OAUTH_UPSTREAM_CLIENT_ID",
    "MCP_OAUTH_UPSTREAM_CLIENT_SECRET",
    "MCP_OAUTH_UPSTREAM_ISSUER",
    "MCP_OAUTH_UPSTREAM_SCOPES",
    "MCP_OAUTH_UPSTREAM_TOKENS",
    "MCP_ORIGIN_SECRET",
    "MCP_ORIGIN_SECRET_HEADER",
    "MCP_PAGE_SIZE",
    "MCP_PATH",
    "MCP_READ_TIMEOUT_SECS",
    "MCP_REQUEST_STATE_KEY",
    "MCP_REQUEST_STATE_KEY_PREVIOUS",
    "MCP_REQUEST_STATE_KEY_SSM_PARAMETER",
    "MCP_SSE_KEEP_ALIVE_SECS",
    "MCP_TASK_LEASE_SECS",
    "MCP_TASK_MAX_PER_CALLER",
    "MCP_TASK_POLL_MS",
    "MCP_TASK_TTL_SECS",
];

/// The `MCP_` names among `names` that no concept reads, each with the closest known name
/// (at most a third of its letters away), for the start-up warning.
fn unknown_variables(names: impl Iterator<Item = String>) -> Vec<(String, Option<&'static str>)> {
    let mut unknown: Vec<_> = names
        .filter(|name| name.starts_with("MCP_") && !KNOWN_VARIABLES.contains(&name.as_str()))
        .map(|name| {
            let closest = KNOWN_VARIABLES
                .iter()
                .map(|known| (crate::env::edit_distance(&name, known), *known))
                .min()
                .filter(|(distance, _)| *distance <= name.len() / 3)
                .map(|(_, known)| known);
            (name, closest)
        })
        .collect();
    unknown.sort();
    unknown
}

fn process_variable_names() -> impl Iterator<Item = String> {
    std::env::vars_os().filter_map(|(name, _)| name.into_string().ok())
}

impl Config {
    /// Reads the configuration from the process environment.
    ///
    /// ```no_run
    /// let config = mcp_lambda::Config::from_env()?;
    /// println!("serving {}", config.http.path);
    /// # Ok::<(), mcp_lambda::config::ConfigError>(())
    /// ```
    pub fn from_env() -> Result<Self, ConfigError> {
        let mut config = Self::from_lookup(|name| std::env::var(name).ok())?;
        config.unknown_variables = unknown_variables(process_variable_names());
        Ok(config)
    }

    /// The configuration a local run gets with nothing set.
    pub fn local_default() -> Self {
        Self::from_lookup(|_| None).expect("the embedded defaults are valid")
    }

    /// Reads the configuration through `lookup` (the environment in
    /// [`Config::from_env`]; a map in tests).
    ///
    /// ```
    /// use mcp_lambda::Config;
    /// let config = Config::from_lookup(|name| (name == "MCP_PATH").then(|| "/rpc".to_string())).unwrap();
    /// assert_eq!(config.http.path, "/rpc");
    /// let err = Config::from_lookup(|name| (name == "MCP_PAGE_SIZE").then(|| "0".to_string())).unwrap_err();
    /// assert_eq!(err.variable, "MCP_PAGE_SIZE");
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let config = Self::read(&Env::new(&lookup))?;
        let pending = config
            .request_state_keys
            .first_pending()
            .or_else(|| config.auth.as_ref().and_then(AuthSettings::pending_secret))
            .or_else(|| {
                config
                    .oauth
                    .as_ref()
                    .and_then(OAuthSettings::pending_secret)
            });
        match pending {
            Some(error) => Err(error),
            None => Ok(config),
        }
    }

    /// Reads the configuration from the process environment and fetches the values it keeps
    /// in SSM Parameter Store or Secrets Manager: request-state keys, an introspection secret
    /// (one call each, at start-up: Lambda INIT; feature `aws-secrets`). With nothing in AWS
    /// this is [`Config::from_env`] and makes no call. It starts nothing that outlives it:
    /// [`App::load`](crate::App::load) runs the same step and fetches the issuer's keys
    /// meanwhile, which a server should prefer.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// // MCP_REQUEST_STATE_KEY_SSM_PARAMETER=/mcp/request-state-key
    /// let config = mcp_lambda::Config::load().await?;
    /// assert!(!config.request_state_keys.is_generated());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// A [`ConfigError`] naming the variable when a value is unusable or a key cannot be
    /// fetched (missing parameter, no permission, unreachable endpoint, not base64 of ≥ 32 bytes).
    pub async fn load() -> Result<Self, ConfigError> {
        let mut config = Self::load_from_lookup(|name| std::env::var(name).ok()).await?;
        config.unknown_variables = unknown_variables(process_variable_names());
        Ok(config)
    }

    /// Logs a warning for each `MCP_` variable of the process environment that no setting
    /// reads, naming the known one it is closest to (the app does this at start-up).
    pub(crate) fn warn_of_unknown_variables(&self) {
        for (name, closest) in &self.unknown_variables {
            match closest {
                Some(known) => tracing::warn!(
                    variable = %name,
                    "{name} is not a setting of mcp-lambda and is ignored; did you mean {known}?"
                ),
                None => tracing::warn!(
                    variable = %name,
                    "{name} is not a setting of mcp-lambda and is ignored (docs/configuration.md lists them)"
                ),
            }
        }
    }

    /// [`Config::load`] through `lookup` for the `MCP_*` variables. The AWS endpoint, region
    /// and credentials still come from the process environment (the AWS SDK's loader).
    pub async fn load_from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let env = Env::new(&lookup);
        let (config, _) = Self::read(&env)?.fetched(&env, false).await?;
        Ok(config)
    }

    /// These settings with the values they keep in AWS fetched (start-up's one step,
    /// `startup.rs`), and, with `warm`, the issuer's key fetch it started meanwhile.
    pub(crate) async fn fetched(
        mut self,
        env: &Env<'_>,
        warm: bool,
    ) -> Result<(Self, Option<crate::auth::Warming>), ConfigError> {
        let fetched = crate::startup::fetch(
            env,
            self.auth.take(),
            self.oauth.take(),
            self.request_state_keys,
            warm,
        )
        .await?;
        self.auth = fetched.auth;
        self.oauth = fetched.oauth;
        self.request_state_keys = fetched.request_state_keys;
        Ok((self, fetched.warming))
    }

    /// The `MCP_` variables of the process environment no concept reads, for
    /// [`warn_of_unknown_variables`](Self::warn_of_unknown_variables).
    pub(crate) fn note_unknown_process_variables(&mut self) {
        self.unknown_variables = unknown_variables(process_variable_names());
    }

    /// The settings as `env` gives them, values kept in AWS still to fetch.
    pub(crate) fn read(env: &Env<'_>) -> Result<Self, ConfigError> {
        let oauth = OAuthSettings::from_env(env)?;
        Ok(Self {
            mode: env.mode(),
            http: HttpSettings::from_env(env)?,
            local: LocalSettings::from_env(env)?,
            lambda: LambdaSettings::from_env(env)?,
            lists: ListSettings::from_env(env)?,
            cache: CacheHints::from_env(env)?,
            request_state_keys: RequestStateKeys::from_env(env)?,
            handles: HandleSettings::from_env(env)?,
            listen: ListenSettings::from_env(env)?,
            tasks: TaskSettings::from_env(env)?,
            auth: match &oauth {
                None => AuthSettings::from_env(env)?,
                Some(oauth) => Some(AuthSettings::for_builtin_issuer(
                    env,
                    oauth.issuer.clone(),
                    oauth.public_jwks(),
                    oauth.upstream.issuer.clone(),
                )?),
            },
            oauth,
            log: LogSettings::from_env(env)?,
            metrics: MetricsSettings::from_env(env)?,
            unknown_variables: Vec::new(),
        })
    }

    /// Where the server runs: on Lambda (`AWS_LAMBDA_RUNTIME_API` set) or locally.
    ///
    /// ```
    /// let config = mcp_lambda::Config::local_default();
    /// assert_eq!(config.mode(), mcp_lambda::Mode::Local);
    /// ```
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The handle store's settings (`MCP_HANDLES_*`): its table, if any, and the handles' TTL.
    ///
    /// ```
    /// let config = mcp_lambda::Config::local_default();
    /// assert!(config.handles().table.is_none()); // in memory
    /// ```
    pub fn handles(&self) -> &HandleSettings {
        &self.handles
    }

    /// The change feed's and listen streams' settings (the crate's own tests open a feed with
    /// them; a server's app opens it).
    #[doc(hidden)]
    pub fn listen(&self) -> &ListenSettings {
        &self.listen
    }

    /// The resource server's settings, `None` with auth off (the crate's own benchmarks build an
    /// authenticator from them).
    #[doc(hidden)]
    pub fn auth(&self) -> Option<&AuthSettings> {
        self.auth.as_ref()
    }

    /// Opens durable tasks (the tasks extension) on the store the configuration names: the
    /// handles' DynamoDB table, or memory. On Lambda, where a round runs in another
    /// invocation, only a table every invocation shares keeps them. Hand them to
    /// [`App::tasks`](crate::App::tasks); the server starts them.
    ///
    /// # Errors
    ///
    /// [`Error::Table`](crate::Error::Table) when the table is unusable.
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// let app = mcp_lambda::App::load().await?;
    /// let tasks = app.config().open_tasks().await?;
    /// # drop(tasks); Ok(())
    /// # }
    /// ```
    pub async fn open_tasks(&self) -> Result<crate::tasks::Tasks, crate::Error> {
        Ok(self.tasks.open(&self.handles).await?)
    }

    /// The codec that seals and opens MRTR `requestState` with the configured keys.
    ///
    /// ```
    /// let config = mcp_lambda::Config::local_default();
    /// let codec = config.request_state_codec();
    /// let sealed = codec.seal(b"round-1");
    /// assert_eq!(codec.open(&sealed).unwrap(), b"round-1");
    /// ```
    pub fn request_state_codec(&self) -> rmcp::model::RequestStateCodec {
        crate::request_state::codec(&self.request_state_keys)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::http::OriginSecret;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        Config::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn unknown_mcp_variables_are_named_with_the_closest_known_one() {
        let names = ["MCP_AUTH_CLIENTID", "MCP_BIND", "PATH", "MCP_ZZZZZZZZZZ"];
        let unknown = unknown_variables(names.iter().map(|n| n.to_string()));
        assert_eq!(
            unknown,
            [
                ("MCP_AUTH_CLIENTID".to_string(), Some("MCP_AUTH_CLIENT_IDS")),
                ("MCP_ZZZZZZZZZZ".to_string(), None),
            ]
        );
    }

    /// Every `"MCP_…"` name the library's source spells out is in `KNOWN_VARIABLES`, so a new
    /// setting cannot be warned of as unknown.
    #[test]
    fn every_variable_the_source_reads_is_known() {
        fn visit(dir: &std::path::Path, found: &mut Vec<String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    visit(&path, found);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    // Tests spell out unknown names on purpose; settings are read above them.
                    let text = text.split("#[cfg(test)]").next().unwrap();
                    for (at, _) in text.match_indices("\"MCP_") {
                        let name: String = text[at + 1..]
                            .chars()
                            .take_while(|c| {
                                c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_'
                            })
                            .collect();
                        if name.len() > 4 && text[at + 1 + name.len()..].starts_with('"') {
                            found.push(name);
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        visit(
            // Read when the test runs, not compiled in: a target dir shared by two checkouts
            // keeps the first one's compile-time path.
            &std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo test"))
                .join("src"),
            &mut found,
        );
        assert!(found.len() > 40, "the scan found the settings: {found:?}");
        let missing: Vec<_> = found
            .iter()
            .filter(|name| !KNOWN_VARIABLES.contains(&name.as_str()))
            .collect();
        assert!(missing.is_empty(), "add to KNOWN_VARIABLES: {missing:?}");
    }

    #[test]
    fn embedded_defaults_serve_loopback_on_port_3000() {
        let c = config(&[]).unwrap();
        assert_eq!(c.mode, Mode::Local);
        assert_eq!(c.local.bind.to_string(), "127.0.0.1:3000");
        assert_eq!(c.http.path, "/mcp");
        assert!(c.request_state_keys.is_generated());
        assert!(!c.http.legacy_sessions);
        assert_eq!(c.http.sse_keep_alive, Duration::from_secs(15));
        assert_eq!(c.local.read_timeout, Duration::from_secs(30));
        assert_eq!(c.local.drain, Duration::from_secs(30));
        let c = config(&[("MCP_DRAIN_SECS", "0")]).unwrap();
        assert_eq!(c.local.drain, Duration::ZERO, "0 = do not wait");
    }

    #[test]
    fn bad_values_name_the_variable_and_the_expectation() {
        for (var, value, expect) in [
            ("MCP_BIND", "localhost", "IP address and port"),
            ("MCP_PATH", "mcp", "absolute path"),
            ("MCP_MAX_BODY_BYTES", "10MB", "whole number of bytes"),
            ("MCP_PAGE_SIZE", "0", "between 1 and 10000"),
            ("MCP_CACHE_TOOLS_LIST", "300,shared", "public|private"),
            ("MCP_REQUEST_STATE_KEY", "c2hvcnQ=", "at least 32 bytes"),
            ("MCP_LEGACY_SESSIONS", "maybe", "true or false"),
            ("MCP_ALLOWED_ORIGINS", "example.com", "with a scheme"),
            ("MCP_LOG", "info,[[[", "tracing filter"),
            ("MCP_SSE_KEEP_ALIVE_SECS", "0", "between 1 and 300"),
            ("MCP_READ_TIMEOUT_SECS", "3601", "between 1 and 3600"),
            ("MCP_DRAIN_SECS", "3601", "between 0 and 3600"),
            ("MCP_HANDLE_TTL_SECS", "0", "whole seconds"),
            ("MCP_LAMBDA_STREAMING", "sometimes", "true or false"),
        ] {
            let err = config(&[(var, value)]).unwrap_err();
            assert_eq!(err.variable, var);
            let text = err.to_string();
            assert!(text.starts_with(var), "{text}");
            assert!(text.contains(expect), "{text}");
        }
    }

    #[test]
    fn legacy_sessions_are_refused_on_lambda() {
        use base64::Engine as _;
        let key = &base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let err = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "x"),
            ("MCP_REQUEST_STATE_KEY", key),
            ("MCP_LEGACY_SESSIONS", "true"),
        ])
        .unwrap_err();
        assert_eq!(err.variable, "MCP_LEGACY_SESSIONS");
        let c = config(&[
            ("AWS_LAMBDA_RUNTIME_API", "x"),
            ("MCP_REQUEST_STATE_KEY", key),
        ])
        .unwrap();
        assert_eq!(c.mode, Mode::Lambda);
        assert!(
            c.http.allowed_origins.is_empty(),
            "no loopback origins on Lambda"
        );
    }

    #[test]
    fn origin_secret_is_off_unless_the_secret_is_set() {
        assert!(config(&[]).unwrap().http.origin_secret.is_none());
        let c = config(&[("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn")]).unwrap();
        let secret = c.http.origin_secret.unwrap();
        assert_eq!(secret.header().as_str(), OriginSecret::DEFAULT_HEADER);
        assert_eq!(secret.secret(), b"0123456789abcdef-cdn");
        let c = config(&[
            ("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn"),
            ("MCP_ORIGIN_SECRET_HEADER", "X-From-CDN"),
        ])
        .unwrap();
        assert_eq!(
            c.http.origin_secret.unwrap().header().as_str(),
            "x-from-cdn"
        );
    }

    #[test]
    fn origin_secret_errors_name_the_variable_and_never_echo_the_secret() {
        let err = config(&[("MCP_ORIGIN_SECRET_HEADER", "x-from-cdn")]).unwrap_err();
        assert_eq!(err.variable, "MCP_ORIGIN_SECRET");
        let err = config(&[("MCP_ORIGIN_SECRET", "tooshort")]).unwrap_err();
        assert_eq!(err.variable, "MCP_ORIGIN_SECRET");
        assert!(!err.to_string().contains("tooshort"), "{err}");
        for header in ["authorization", "mcp-method", "x-amz-date", "not a header"] {
            let err = config(&[
                ("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn"),
                ("MCP_ORIGIN_SECRET_HEADER", header),
            ])
            .unwrap_err();
            assert_eq!(err.variable, "MCP_ORIGIN_SECRET_HEADER", "{header}");
            assert!(!err.to_string().contains("0123456789abcdef-cdn"), "{err}");
        }
        let c = config(&[("MCP_ORIGIN_SECRET", "0123456789abcdef-cdn")]).unwrap();
        assert!(!format!("{c:?}").contains("0123456789abcdef-cdn"));
    }

    #[cfg(feature = "aws-secrets")]
    #[test]
    fn request_state_keys_in_aws_need_config_load() {
        let ssm = config(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/state-key")]).unwrap_err();
        assert_eq!(ssm.variable, "MCP_REQUEST_STATE_KEY_SSM_PARAMETER");
        assert!(ssm.to_string().contains("Config::load"), "{ssm}");
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mcp-key-AbCdEf";
        let sm = config(&[("MCP_REQUEST_STATE_KEY", arn)]).unwrap_err();
        assert_eq!(sm.variable, "MCP_REQUEST_STATE_KEY");
        assert!(sm.to_string().contains("Config::load"), "{sm}");
    }
}
