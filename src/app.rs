//! Builds the service once and runs it on Lambda or locally.

use std::sync::Arc;

use rmcp::{
    ServerHandler,
    transport::{
        StreamableHttpServerConfig, StreamableHttpService,
        streamable_http_server::session::local::LocalSessionManager,
    },
};

use crate::{
    Config, Error, McpService,
    auth::Authenticator,
    config::Mode,
    handler::{Hosted, HostedSettings},
    http::FrontSettings,
};

/// The application: configuration first, then the server, then [`Server::run`].
///
/// ```no_run
/// # #[derive(Clone)] struct MyServer;
/// # impl rmcp::ServerHandler for MyServer {}
/// # async fn demo() -> Result<(), mcp_lambda::Error> {
/// let config = mcp_lambda::Config::from_env()?;
/// let handler = MyServer;
/// mcp_lambda::App::new(config).server(move || handler.clone()).run().await
/// # }
/// ```
#[derive(Debug)]
pub struct App {
    config: Config,
}

impl App {
    /// Starts from a configuration.
    pub fn new(config: Config) -> Self {
        Self { config }
    }

    /// Sets the MCP server. `factory` is called once per request and should
    /// clone a handler built once (rebuilding a tool router per request costs
    /// up to half the CPU of a request).
    pub fn server<H, F>(self, factory: F) -> Server<H>
    where
        H: ServerHandler,
        F: Fn() -> H + Send + Sync + 'static,
    {
        let config = self.config;
        let probe = factory();
        let info = probe.get_info();
        let supported_versions = probe
            .supported_protocol_versions()
            .iter()
            .map(|v| v.as_str().to_string())
            .collect();
        drop(probe);
        let auth = config
            .auth
            .clone()
            .map(|settings| Arc::new(Authenticator::new(Arc::new(settings))));
        let settings = Arc::new(HostedSettings::new(&config, &info));

        let mut rmcp_config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(config.legacy_sessions)
            .with_json_response(true)
            .with_max_request_body_bytes(config.max_body_bytes)
            .with_sse_keep_alive(Some(config.sse_keep_alive));
        if !config.legacy_sessions {
            // No resumable streams without sessions: no SSE priming events.
            rmcp_config = rmcp_config.with_sse_retry(None);
        }
        rmcp_config = if config.allowed_hosts.is_empty() {
            rmcp_config.disable_allowed_hosts()
        } else {
            rmcp_config.with_allowed_hosts(config.allowed_hosts.clone())
        };
        let origins = if config.allowed_origins.is_empty() && config.mode == Mode::Local {
            vec![
                "http://localhost:*".to_string(),
                "http://127.0.0.1:*".to_string(),
                "http://[::1]:*".to_string(),
            ]
        } else {
            config.allowed_origins.clone()
        };
        rmcp_config = rmcp_config
            .with_allowed_origins(origins.clone())
            .enforce_origin_validation();

        let rmcp = StreamableHttpService::new(
            move || Ok(Hosted::new(factory(), settings.clone())),
            Arc::new(LocalSessionManager::default()),
            rmcp_config,
        );
        let front = Arc::new(FrontSettings {
            path: config.path.clone(),
            max_body_bytes: config.max_body_bytes,
            legacy_sessions: config.legacy_sessions,
            supported_versions,
            origin_secret: config
                .origin_secret
                .as_ref()
                .map(crate::http::OriginSecretCheck::new),
            auth: auth.clone(),
            allowed_origins: origins,
        });
        Server {
            service: McpService::new(rmcp, front),
            config,
            auth,
        }
    }
}

/// A configured server, ready to [`run`](Server::run) or to be called in-process.
pub struct Server<H> {
    service: McpService<H>,
    config: Config,
    auth: Option<Arc<Authenticator>>,
}

impl<H: ServerHandler> Server<H> {
    /// The tower service, for tests or custom hosting (e.g. `ServiceExt::oneshot`).
    pub fn service(&self) -> McpService<H> {
        self.service.clone()
    }

    /// Serves until stopped: on Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
    /// otherwise on [`Config::bind`].
    pub async fn run(self) -> Result<(), Error> {
        match &self.auth {
            // Everything expensive happens before the first request (Lambda INIT).
            Some(auth) => {
                let settings = auth.settings();
                tracing::info!(issuer = %settings.issuer, audience = %settings.audience, "auth is on: every request needs a bearer token for this audience");
                auth.warm().await;
            }
            None => tracing::warn!(
                "auth is off (MCP_AUTH_ISSUER is not set): anyone who can reach this server can call it"
            ),
        }
        if self.config.request_state_keys.is_generated() {
            tracing::warn!(
                "MCP_REQUEST_STATE_KEY is not set: using a random key, so requestState and cursors do not survive a restart or cross instances"
            );
        }
        match self.config.mode {
            Mode::Lambda => {
                crate::serve::lambda::serve(self.service, self.config.lambda_streaming).await
            }
            Mode::Local => {
                crate::serve::local::serve(
                    self.service,
                    self.config.bind,
                    &self.config.path,
                    self.config.read_timeout,
                )
                .await
            }
        }
    }
}

/// Installs the tracing subscriber: JSON lines on Lambda (CloudWatch adds the
/// time), readable text locally. Tokens and tool arguments are never logged.
pub fn init_tracing(config: &Config) {
    // rmcp logs three INFO lines per request (measured: +45 % CPU, and three
    // CloudWatch lines per invocation) and traces whole messages, arguments
    // included, at debug/trace. Cap it at warn unless MCP_LOG names rmcp.
    // Only a cap: under a quieter MCP_LOG (error) rmcp stays as quiet.
    let louder_than_warn = tracing_subscriber::EnvFilter::try_new(&config.log_filter)
        .ok()
        .and_then(|f| f.max_level_hint())
        .is_none_or(|level| level > tracing_subscriber::filter::LevelFilter::WARN);
    let directives = if config.log_filter.contains("rmcp") || !louder_than_warn {
        config.log_filter.clone()
    } else {
        format!("{},rmcp=warn", config.log_filter)
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,rmcp=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let _ = match config.mode {
        Mode::Lambda => builder
            .json()
            .without_time()
            .with_current_span(false)
            .try_init(),
        Mode::Local => builder.with_writer(std::io::stderr).try_init(),
    };
}
