//! Builds the service once and runs it on Lambda or locally.

use std::sync::Arc;

use rmcp::{
    ServerHandler,
    transport::{
        StreamableHttpService, streamable_http_server::session::local::LocalSessionManager,
    },
};

use crate::{
    auth::Authenticator,
    config::Config,
    env::Mode,
    error::Error,
    handler::{Hosted, HostedSettings},
    http::{Front, McpService, OriginSecretCheck},
    listen::{Announced, ChangeFeed, Changes, Listener, ResourceWatch},
    metrics::Metrics,
    shutdown::Shutdown,
    tasks::{TaskPolicy, Tasks},
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
pub struct App {
    config: Config,
    changes: Option<Arc<dyn ChangeFeed>>,
    resources: Option<Arc<dyn ResourceWatch>>,
    tasks: Option<(Arc<Tasks>, crate::handler::TaskPolicies)>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("config", &self.config)
            .field("changes", &self.changes)
            .finish_non_exhaustive()
    }
}

impl App {
    /// Starts from a configuration.
    pub fn new(config: Config) -> Self {
        Self {
            config,
            changes: None,
            resources: None,
            tasks: None,
        }
    }

    /// Runs tools as durable tasks (the tasks extension) on `tasks`, as `policy` says per
    /// tool name; the server advertises the extension.
    ///
    /// ```no_run
    /// # #[derive(Clone)] struct MyServer;
    /// # impl rmcp::ServerHandler for MyServer {}
    /// use mcp_lambda::tasks::{Dispatch, MemoryTaskStore, TaskPolicy, TaskSettings, Tasks};
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = mcp_lambda::Config::load().await?;
    /// let tasks = Tasks::new(
    ///     std::sync::Arc::new(MemoryTaskStore::new()),
    ///     Dispatch::Local,
    ///     TaskSettings::default(),
    /// );
    /// let handler = MyServer;
    /// mcp_lambda::App::new(config)
    ///     .tasks(tasks, |tool: &str| match tool {
    ///         "report" => TaskPolicy::Optional,
    ///         _ => TaskPolicy::Never,
    ///     })
    ///     .server(move || handler.clone())
    ///     .run()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn tasks(
        mut self,
        tasks: Arc<Tasks>,
        policy: impl Fn(&str) -> TaskPolicy + Send + Sync + 'static,
    ) -> Self {
        self.tasks = Some((tasks, crate::handler::TaskPolicies(Arc::new(policy))));
        self
    }

    /// Serves `subscriptions/listen` from `changes`, the feed the handler publishes to (see
    /// [`listen`](crate::listen)): list changes for every listener that asks, as the handler's
    /// capabilities advertise them. Without it, listen is left to the handler.
    ///
    /// ```no_run
    /// # #[derive(Clone)] struct MyServer;
    /// # impl rmcp::ServerHandler for MyServer {}
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let config = mcp_lambda::Config::load().await?;
    /// let handles = config.handles.open().await?;
    /// let changes = config.listen.open(&config.handles, handles).await?;
    /// let handler = MyServer; // keeps a clone of `changes` and publishes to it
    /// mcp_lambda::App::new(config)
    ///     .changes(&changes)
    ///     .server(move || handler.clone())
    ///     .run()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn changes(mut self, changes: &Changes) -> Self {
        self.changes = Some(changes.feed().clone());
        self
    }

    /// Lets listeners subscribe to resources: `resources` decides, per caller, which URIs
    /// may be watched and through which item. Without it every URI is dropped from the
    /// accepted filter. Needs [`changes`](Self::changes).
    pub fn watch_resources(mut self, resources: impl ResourceWatch) -> Self {
        self.resources = Some(Arc::new(resources));
        self
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
        let shutdown = Shutdown::new();
        let probe = factory();
        let info = probe.get_info();
        let listen = self.changes.map(|feed| {
            Arc::new(Listener::new(
                feed,
                self.resources,
                Announced::of(&info.capabilities),
                config.listen.clone(),
                shutdown.clone(),
                self.tasks.is_some(),
            ))
        });
        if let (Some(listener), Some((tasks, _))) = (&listen, &self.tasks) {
            listener.feed.attach_task_store(tasks.store().clone());
        }
        let supported_versions = probe
            .supported_protocol_versions()
            .iter()
            .map(|v| v.as_str().to_string())
            .collect();
        drop(probe);
        let metrics = config
            .metrics
            .enabled
            .then(|| Arc::new(Metrics::new(config.metrics.clone())));
        let auth = config
            .auth
            .clone()
            .map(|settings| Arc::new(Authenticator::new(Arc::new(settings))));
        let hosted = Arc::new(
            HostedSettings::new(
                &config.cache,
                &config.lists,
                config.request_state_keys.all(),
                config.auth.as_ref(),
                &info,
                listen.clone(),
                self.tasks.clone(),
            )
            .with_metrics(metrics.clone()),
        );
        let rmcp = StreamableHttpService::new(
            move || Ok(Hosted::new(factory(), hosted.clone())),
            Arc::new(LocalSessionManager::default()),
            config.http.rmcp_config(),
        );
        let (listen_on, metrics_on) = (listen.is_some(), metrics.is_some());
        let front = Front {
            settings: config.http.clone(),
            origin_secret: config
                .http
                .origin_secret
                .as_ref()
                .map(OriginSecretCheck::new),
            auth: auth.clone(),
            supported_versions,
            listen,
            // Tool and prompt lists are fingerprinted for listeners; metrics learn the names on
            // every list.
            probed_lists: [
                (
                    "tools/list",
                    info.capabilities.tools.is_some() && (listen_on || metrics_on),
                ),
                (
                    "prompts/list",
                    info.capabilities.prompts.is_some() && (listen_on || metrics_on),
                ),
                (
                    "resources/list",
                    info.capabilities.resources.is_some() && metrics_on,
                ),
                (
                    "resources/templates/list",
                    info.capabilities.resources.is_some() && metrics_on,
                ),
            ]
            .into_iter()
            .filter_map(|(method, probed)| probed.then_some(method))
            .collect(),
            tasks: self.tasks.as_ref().map(|(tasks, _)| tasks.clone()),
            metrics,
        };
        let service = McpService::new(rmcp, front);
        if let Some((tasks, _)) = &self.tasks {
            tasks.set_runner(
                Arc::new(service.clone()),
                &config.http.path,
                config.request_state_keys.all(),
            );
        }
        Server {
            local_tasks: self
                .tasks
                .as_ref()
                .is_some_and(|(tasks, _)| tasks.runs_locally()),
            service,
            config,
            auth,
            shutdown,
        }
    }
}

/// A configured server, ready to [`run`](Server::run) or to be called in-process.
pub struct Server<H> {
    service: McpService<H>,
    config: Config,
    auth: Option<Arc<Authenticator>>,
    shutdown: Shutdown,
    /// Tasks run on this process's runtime (`Dispatch::Local`).
    local_tasks: bool,
}

impl<H: ServerHandler> Server<H> {
    /// The tower service, for tests or custom hosting (e.g. `ServiceExt::oneshot`).
    pub fn service(&self) -> McpService<H> {
        self.service.clone()
    }

    /// The signal that ends [`run`](Self::run) gracefully, as SIGTERM does: the local server
    /// stops taking new work, drains, and every listen stream ends with its result.
    pub fn shutdown(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Serves until stopped: on Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
    /// otherwise on [`LocalSettings::bind`](crate::serve::LocalSettings::bind).
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
        // This instance's list fingerprints, published before the first listener arrives, and
        // the names metrics count as themselves.
        self.service.probe_lists().await;
        if self.config.request_state_keys.is_generated() {
            tracing::warn!(
                "MCP_REQUEST_STATE_KEY is not set: using a random key, so requestState and cursors do not survive a restart or cross instances"
            );
        }
        match self.config.mode {
            // A round dispatched on the accepting invocation's runtime freezes with it.
            Mode::Lambda if self.local_tasks => Err(Error::Tasks(
                "Dispatch::Local runs rounds on this process's runtime, which Lambda freezes \
                 between invocations; on Lambda use Dispatch::Lambda (TaskSettings::open picks \
                 it there), which hands each round to the Lambda service",
            )),
            Mode::Lambda => crate::serve::lambda::serve(self.service, &self.config.lambda).await,
            Mode::Local => {
                crate::serve::local::serve(
                    self.service,
                    &self.config.local,
                    &self.config.http.path,
                    self.shutdown,
                )
                .await
            }
        }
    }
}

/// Installs the tracing subscriber: JSON lines on Lambda (CloudWatch adds the
/// time), readable text locally, filtered by `MCP_LOG` with rmcp capped at
/// warn. Tokens and tool arguments are never logged.
pub fn init_tracing(config: &Config) {
    config.log.init();
}
