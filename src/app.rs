//! Builds the service once and runs it on Lambda or locally.

use std::sync::{Arc, Weak};

use rmcp::{
    ServerHandler,
    model::{ServerCapabilities, ServerConfig},
    transport::{
        StreamableHttpService, streamable_http_server::session::local::LocalSessionManager,
    },
};

use crate::{
    auth::{Caller, Warming},
    config::Config,
    env::Mode,
    error::Error,
    handler::{Announce, HandleResource, Hosted, HostedSettings, InProcess, MakeHosted, Rounds},
    handles::{HandleStore, Handles},
    http::{Front, McpService},
    listen::{Announced, Changes, Listener, ResourceWatch, Watch},
    metrics::Metrics,
    oauth::{AuthorizationServer, MemoryOAuthStore, OAuthStore},
    shutdown::Shutdown,
    tasks::{Engine, TaskPolicies, TaskPolicy, Tasks},
};

/// The application: configuration first, then the server, then [`Server::run`].
///
/// One way to build it: [`App::load`] reads the configuration from the environment (or
/// [`App::open`] takes one you built, e.g. [`Config::local_default`] in tests), and opens the
/// handle store and the change feed it names, so tools keep typed state in
/// [`handles`](Self::handles), [`resource`](Self::resource) serves it as resources, and
/// `subscriptions/listen` works with no more plumbing. No constructor installs a log subscriber:
/// [`Server::run`] does (or [`init_tracing`], to log earlier).
///
/// ```no_run
/// # #[derive(Clone)] struct MyServer;
/// # impl mcp_lambda::rmcp::ServerHandler for MyServer {}
/// # async fn demo() -> Result<(), mcp_lambda::Error> {
/// mcp_lambda::App::load().await?.server(MyServer).run().await
/// # }
/// ```
pub struct App {
    config: Config,
    changes: Option<Changes>,
    handles: Option<Arc<dyn HandleStore>>,
    resources: Option<Arc<dyn ResourceWatch>>,
    handle_resources: Vec<HandleResource>,
    tasks: Option<(Tasks, TaskPolicies)>,
    /// The authenticator, its keys' fetch started by [`load`](Self::load) or [`open`](Self::open).
    auth: Option<Warming>,
    /// Where the built-in authorization server keeps its state; `None` = in memory.
    oauth_store: Option<Arc<dyn OAuthStore>>,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("config", &self.config)
            .field("changes", &self.changes)
            .field("handle_resources", &self.handle_resources)
            .finish_non_exhaustive()
    }
}

impl App {
    /// An app on `config` with no handle store opened and no change feed: for the crate's own
    /// in-process tests and benchmarks, which serve a handler without them. A server uses
    /// [`load`](Self::load) or [`open`](Self::open), which open both.
    #[doc(hidden)]
    pub fn new(config: Config) -> Self {
        let auth = config.auth.as_ref().map(Warming::start);
        let mut app = Self::started(config, auth);
        if app.config.handles.table.is_none() {
            app.handles = Some(app.config.handles.in_memory());
        }
        app
    }

    /// The app of `config`, the issuer's key fetch `auth` under way.
    fn started(config: Config, auth: Option<Warming>) -> Self {
        Self {
            config,
            changes: None,
            handles: None,
            resources: None,
            handle_resources: Vec::new(),
            tasks: None,
            auth,
            oauth_store: None,
        }
    }

    /// Starts from a configuration: opens the handle store and the change feed the configuration
    /// names (`MCP_HANDLES_TABLE`: DynamoDB, one warm-up read; otherwise in memory), and
    /// serves `subscriptions/listen` from that feed.
    ///
    /// # Errors
    ///
    /// [`Error::Table`] when the table is unusable (the message says
    /// what to fix).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// let app = mcp_lambda::App::open(mcp_lambda::Config::load().await?).await?;
    /// # drop(app); Ok(())
    /// # }
    /// ```
    pub async fn open(config: Config) -> Result<Self, Error> {
        let auth = config.auth.as_ref().map(Warming::start);
        let app = Self::started(config, auth);
        // Let the fetch just started open its connections before the store's synchronous
        // set-up (a current-thread runtime runs it only when this task yields).
        if app.auth.is_some() {
            tokio::task::yield_now().await;
        }
        app.open_stores().await
    }

    /// Start-up in one step: reads every `MCP_*` variable, fetches what they keep in AWS
    /// (request-state keys, an introspection secret: one call each) while the issuer's keys
    /// are being fetched, then opens the handle store and the change feed as
    /// [`open`](Self::open) does: Lambda INIT waits for the slowest of these, not for their sum.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the variable whose value is unusable or could not be fetched;
    /// [`Error::Table`] when the table is unusable.
    ///
    /// ```no_run
    /// # #[derive(Clone)] struct MyServer;
    /// # impl mcp_lambda::rmcp::ServerHandler for MyServer {}
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// mcp_lambda::App::load().await?.server(MyServer).run().await
    /// # }
    /// ```
    pub async fn load() -> Result<Self, Error> {
        Self::load_with(|name| std::env::var(name).ok(), true).await
    }

    /// [`load`](Self::load) through `lookup` for the `MCP_*` variables (the crate's own tests).
    /// The AWS endpoint,
    /// region and credentials still come from the process environment (the AWS SDK's loader).
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    #[doc(hidden)]
    pub async fn load_from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        Self::load_with(lookup, false).await
    }

    async fn load_with(
        lookup: impl Fn(&str) -> Option<String>,
        process_environment: bool,
    ) -> Result<Self, Error> {
        let env = crate::env::Env::new(&lookup);
        let mut config = Config::read(&env)?;
        if process_environment {
            config.note_unknown_process_variables();
        }
        let (config, warming) = config.fetched(&env, true).await?;
        Self::started(config, warming).open_stores().await
    }

    /// Opens the handle store and the change feed the configuration names.
    async fn open_stores(mut self) -> Result<Self, Error> {
        if self.config.oauth.is_some() {
            let handles = &self.config.handles;
            self.oauth_store =
                Some(crate::oauth::open_store(handles.table.as_deref(), &handles.timeouts).await?);
        }
        let handles = self.config.handles.open().await?;
        let changes = self
            .config
            .listen
            .open(&self.config.handles, handles.clone())
            .await?;
        self.handles = Some(handles);
        self.changes = Some(changes);
        Ok(self)
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Typed handles of `kind` (1 to 64 bytes, e.g. `"note"`) in the app's store, expiring
    /// after `MCP_HANDLE_TTL_SECS` of inactivity and telling the app's listeners of every
    /// change. Clone it into the handler.
    ///
    /// ```no_run
    /// #[derive(serde::Serialize, serde::Deserialize)]
    /// struct Note {
    ///     text: String,
    /// }
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// let app = mcp_lambda::App::open(mcp_lambda::Config::load().await?).await?;
    /// let notes: mcp_lambda::handles::Handles<Note> = app.handles("note");
    /// # drop(notes); Ok(())
    /// # }
    /// ```
    ///
    pub fn handles<T>(&self, kind: &str) -> Handles<T>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static,
    {
        // Only the hidden `App::new` on a configured table leaves the store unopened.
        let store = self.handles.clone().expect(
            "App::handles needs the handle store: build the app with App::open(config).await?",
        );
        let mut handles = Handles::new(store, kind, self.config.handles.ttl)
            .signing_cursors_with(&self.config.request_state_keys)
            .with_page_size(self.config.handles.page_size);
        if let Some(changes) = &self.changes {
            handles = handles.publishing_to(Arc::new(changes.clone()));
        }
        handles
    }

    /// Where the handler publishes list and resource changes for listeners (`None` unless
    /// the app was [`open`](Self::open)ed or given [`changes`](Self::changes)).
    pub fn changes_feed(&self) -> Option<&Changes> {
        self.changes.as_ref()
    }

    /// Serves a resource template from typed handles (see [`HandleResource`]): listed in
    /// `resources/templates/list`, read by its owner, watched by listen. The server announces
    /// `resources` (and `resources.subscribe` when it serves listen) for the handler.
    ///
    /// ```no_run
    /// # #[derive(Clone)] struct MyServer;
    /// # impl mcp_lambda::rmcp::ServerHandler for MyServer {}
    /// # #[derive(serde::Serialize, serde::Deserialize)] struct Note { text: String }
    /// use mcp_lambda::handler::HandleResource;
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// let app = mcp_lambda::App::open(mcp_lambda::Config::load().await?).await?;
    /// let notes = app.handles::<Note>("note");
    /// app.resource(HandleResource::new("notes://{id}", &notes))
    ///     .server(MyServer)
    ///     .run()
    ///     .await
    /// # }
    /// ```
    pub fn resource(mut self, resource: HandleResource) -> Self {
        self.handle_resources.push(resource);
        self
    }

    /// Runs tools as durable tasks (the tasks extension) as `tasks` describes them (or
    /// [`Config::open_tasks`] opens them), as `policy` says per tool name; the server starts
    /// the engine and advertises the extension.
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
    /// mcp_lambda::App::open(config)
    ///     .await?
    ///     .tasks(tasks, |tool: &str, _caller: &mcp_lambda::Caller| match tool {
    ///         "report" => TaskPolicy::Optional,
    ///         _ => TaskPolicy::Never,
    ///     })
    ///     .server(handler)
    ///     .run()
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn tasks(
        mut self,
        tasks: Tasks,
        policy: impl Fn(&str, &Caller) -> TaskPolicy + Send + Sync + 'static,
    ) -> Self {
        self.tasks = Some((tasks, TaskPolicies::new(policy)));
        self
    }

    /// Serves `subscriptions/listen` from `changes` in place of the feed [`open`](Self::open)
    /// opened (the crate's own tests; a server publishes to [`changes_feed`](Self::changes_feed)).
    #[doc(hidden)]
    pub fn changes(mut self, changes: &Changes) -> Self {
        self.changes = Some(changes.clone());
        self
    }

    /// Lets listeners subscribe to resources the handler serves itself: `resources` decides,
    /// per caller, which URIs may be watched and through which item. Resources served with
    /// [`resource`](Self::resource) need no rule. Needs a change feed ([`open`](Self::open)
    /// or [`changes`](Self::changes)).
    pub fn watch_resources(mut self, resources: impl ResourceWatch) -> Self {
        self.resources = Some(Arc::new(resources));
        self
    }

    /// Serves `handler`: one value shared by every request of this instance (never cloned,
    /// never made again), as rmcp's stdio transport serves one.
    ///
    /// State kept in the handler's own fields lives in this instance's memory only: on Lambda
    /// (and behind a load balancer) every instance has its own copy, and a restart loses it.
    /// State that must outlive a request or be the same for every instance belongs in
    /// [`handles`](Self::handles) — a caller's one counter, settings or cart in a keyed handle
    /// ([`Handles::keyed`](crate::handles::Handles::keyed)).
    ///
    /// ```
    /// # #[derive(Clone)] struct MyServer;
    /// # impl mcp_lambda::rmcp::ServerHandler for MyServer {}
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), mcp_lambda::Error> {
    /// let config = mcp_lambda::Config::local_default();
    /// let server = mcp_lambda::App::open(config).await?.server(MyServer);
    /// # drop(server); Ok(())
    /// # }
    /// ```
    ///
    /// A factory is not a handler: rmcp's per-session habit, `.server(Counter::new)`, does not
    /// compile here (it would have reset the counter at every request);
    /// [`server_per_request`](Self::server_per_request) says so when that is what you mean.
    ///
    /// ```compile_fail
    /// # #[derive(Clone, Default)] struct Counter;
    /// # impl mcp_lambda::rmcp::ServerHandler for Counter {}
    /// # async fn demo() -> Result<(), mcp_lambda::Error> {
    /// let server = mcp_lambda::App::load().await?.server(Counter::default);
    /// # Ok(()) }
    /// ```
    pub fn server<H: ServerHandler>(self, handler: H) -> Server<H> {
        let shared = Arc::new(handler);
        self.serve(Arc::new(move || shared.clone()))
    }

    /// Serves a handler made afresh by `make` for **every request**: nothing a handler keeps
    /// survives its request.
    ///
    /// Not rmcp's per-session factory: `StreamableHttpService::new(|| Ok(Counter::new()), …)`
    /// makes a handler per session, which MCP 2026-07-28 no longer has, so a counter kept in a
    /// field here would start again at every call. Serve a shared handler with
    /// [`server`](Self::server), and keep what must last in [`handles`](Self::handles).
    ///
    /// ```
    /// # #[derive(Clone, Default)] struct MyServer;
    /// # impl mcp_lambda::rmcp::ServerHandler for MyServer {}
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), mcp_lambda::Error> {
    /// let config = mcp_lambda::Config::local_default();
    /// let server = mcp_lambda::App::open(config).await?.server_per_request(MyServer::default);
    /// # drop(server); Ok(())
    /// # }
    /// ```
    pub fn server_per_request<H: ServerHandler>(
        self,
        make: impl Fn() -> H + Send + Sync + 'static,
    ) -> Server<H> {
        self.serve(Arc::new(move || Arc::new(make())))
    }

    /// The service for the handlers `factory` gives, one per request.
    fn serve<H: ServerHandler>(self, factory: Arc<dyn Fn() -> Arc<H> + Send + Sync>) -> Server<H> {
        let shutdown = Shutdown::new();
        let (inner_info, supported_versions) = described(&*factory());
        let announce = self.announce();
        let mut capabilities = inner_info.capabilities.clone();
        announce.apply(&mut capabilities);
        let listen = self.listener(&capabilities, &shutdown);
        let config = self.config;
        let metrics =
            (config.metrics.enabled).then(|| Arc::new(Metrics::new(config.metrics.clone())));
        // The handler's dispatch; its settings hold the task engine weakly, since the engine
        // holds the dispatch as its runner.
        let dispatch_with = |tasks| {
            let hosted = Arc::new(
                HostedSettings::new(
                    &config.cache,
                    &config.lists,
                    config.request_state_keys.all(),
                    config.auth.as_ref(),
                    &inner_info,
                    listen.clone(),
                    tasks,
                )
                .with_resources(self.handle_resources, announce)
                .with_metrics(metrics.clone()),
            );
            let make_hosted: MakeHosted<H> =
                Arc::new(move || Hosted::new(factory(), hosted.clone()));
            Arc::new(InProcess::new(make_hosted))
        };
        let (engine, dispatch) = match self.tasks {
            None => (None, dispatch_with(None)),
            Some((tasks, policies)) => {
                // Built whole around its runner: nothing is set after the fact.
                let (engine, dispatch) = cyclic(|engine: &Weak<Engine>| {
                    let dispatch = dispatch_with(Some((engine.clone(), policies)));
                    let runner = Arc::new(Rounds(dispatch.clone()));
                    let keys = config.request_state_keys.all();
                    (tasks.start(runner, &config.http.path, keys), dispatch)
                });
                (Some(engine), dispatch)
            }
        };
        let rmcp = StreamableHttpService::new(
            {
                let dispatch = dispatch.clone();
                move || Ok(dispatch.handler())
            },
            Arc::new(LocalSessionManager::default()),
            config.http.rmcp_config(),
        );
        let auth = self.auth.as_ref().map(|w| w.authenticator().clone());
        let front = Front::new(
            &config.http,
            auth,
            &capabilities,
            supported_versions,
            listen,
            engine.clone(),
            metrics,
        );
        let oauth = config.oauth.as_ref().map(|settings| {
            let scopes = config
                .auth
                .as_ref()
                .map(|auth| auth.scopes_supported.clone())
                .unwrap_or_default();
            let roots = config
                .auth
                .as_ref()
                .map(|auth| auth.extra_roots.clone())
                .unwrap_or_default();
            Arc::new(AuthorizationServer::new(
                settings,
                &config.http.path,
                scopes,
                self.oauth_store
                    .clone()
                    .unwrap_or_else(|| Arc::new(MemoryOAuthStore::default())),
                &roots,
            ))
        });
        let front = front.with_oauth(oauth);
        let service = McpService::new(rmcp, dispatch, front);
        Server {
            tasks: engine,
            service,
            config,
            auth_warming: self.auth,
            shutdown,
        }
    }

    /// What the library adds to the handler's capabilities.
    fn announce(&self) -> Announce {
        Announce {
            tasks: self.tasks.is_some(),
            handle_resources: !self.handle_resources.is_empty(),
            listen: self.changes.is_some(),
            resources_watchable: !self.handle_resources.is_empty() || self.resources.is_some(),
        }
    }

    /// The listener of `subscriptions/listen` on the app's feed (none without one), reading
    /// the task store too when tasks are on.
    fn listener(
        &self,
        capabilities: &ServerCapabilities,
        shutdown: &Shutdown,
    ) -> Option<Arc<Listener>> {
        let changes = self.changes.as_ref()?;
        let feed = changes.feed();
        // A feed that cannot read the task store's records itself reads them through a view
        // that has the store.
        let feed = match &self.tasks {
            Some((tasks, _)) => feed.reading_tasks_from(tasks.store().clone()),
            None => None,
        }
        .unwrap_or_else(|| feed.clone());
        let listener = Listener::new(
            feed,
            resource_watch(&self.handle_resources, self.resources.clone()),
            Announced::of(capabilities),
            self.config.listen.clone(),
            shutdown.clone(),
            self.tasks.is_some(),
        );
        Some(Arc::new(listener))
    }
}

/// `Arc::new_cyclic` for a value built together with something else that holds it weakly.
fn cyclic<T, U>(build: impl FnOnce(&Weak<T>) -> (T, U)) -> (Arc<T>, U) {
    let mut other = None;
    let value = Arc::new_cyclic(|weak| {
        let (value, built) = build(weak);
        other = Some(built);
        value
    });
    let other = other.expect("Arc::new_cyclic calls its closure once, before it returns");
    (value, other)
}

/// The handler's own description, asked once at start-up (and warned of when rmcp's default),
/// and the protocol versions it serves.
fn described<H: ServerHandler>(handler: &H) -> (ServerConfig, Vec<String>) {
    let info = handler.get_info();
    warn_if_unnamed(&info.server_info);
    let versions = handler
        .supported_protocol_versions()
        .iter()
        .map(|v| v.as_str().to_string())
        .collect();
    (info, versions)
}

/// The handle resources' URIs first, then the app's own rule.
fn resource_watch(
    handle_resources: &[HandleResource],
    rule: Option<Arc<dyn ResourceWatch>>,
) -> Option<Arc<dyn ResourceWatch>> {
    if handle_resources.is_empty() {
        return rule;
    }
    let handle_resources = handle_resources.to_vec();
    Some(Arc::new(
        move |uri: &str, caller: &Caller| -> Option<Watch> {
            match handle_resources.iter().find_map(|r| r.watch(uri, caller)) {
                Some(watch) => watch,
                None => rule.as_ref().and_then(|rule| rule.watch(uri, caller)),
            }
        },
    ))
}

/// A configured server, ready to [`run`](Server::run) or to be called in-process.
pub struct Server<H> {
    service: McpService<H>,
    config: Config,
    /// The issuer's keys, being fetched since start-up.
    auth_warming: Option<Warming>,
    shutdown: Shutdown,
    /// The task engine, when tools run as tasks.
    tasks: Option<Arc<Engine>>,
}

impl<H: ServerHandler> Server<H> {
    /// The tower service, for tests or custom hosting (e.g. `ServiceExt::oneshot`).
    pub fn service(&self) -> McpService<H> {
        self.service.clone()
    }

    /// The running task engine, when tools run as tasks (the crate's own tests, which run a
    /// round as a second delivery would).
    #[doc(hidden)]
    pub fn tasks(&self) -> Option<Arc<Engine>> {
        self.tasks.clone()
    }

    /// The signal that ends [`run`](Self::run) gracefully, as SIGTERM does: the local server
    /// stops taking new work, drains, and every listen stream ends with its result.
    pub fn shutdown(&self) -> Shutdown {
        self.shutdown.clone()
    }

    /// Serves until stopped: on Lambda when `AWS_LAMBDA_RUNTIME_API` is set,
    /// otherwise on [`LocalSettings::bind`](crate::serve::LocalSettings::bind).
    pub async fn run(self) -> Result<(), Error> {
        self.start_logging();
        match &self.auth_warming {
            Some(warming) => {
                let settings = warming.authenticator().settings();
                tracing::info!(issuer = %settings.issuer, audience = %settings.audience, "auth is on: every request needs a bearer token for this audience");
            }
            None => tracing::warn!(
                "auth is off (MCP_AUTH_ISSUER is not set): anyone who can reach this server can call it"
            ),
        }
        if let Some(oauth) = &self.config.oauth {
            tracing::info!(issuer = %oauth.issuer, upstream = %oauth.upstream.issuer, "the built-in authorization server is on: clients register here and people log in with the upstream");
            if oauth.keys_are_per_process() {
                tracing::warn!(
                    "MCP_OAUTH_SIGNING_KEYS is not set: this process signs access tokens with a key of its own, so another instance (or this one after a restart) refuses them; set it wherever more than one process serves"
                );
            }
        }
        // Everything expensive happens before the first request (Lambda INIT), and at once:
        // this instance's list fingerprints (published before the first listener arrives;
        // also the names metrics count as themselves) while the issuer's keys arrive.
        let keys = async {
            if let Some(warming) = &self.auth_warming {
                warming.wait().await;
            }
        };
        tokio::join!(self.service.probe_lists(), keys);
        if self.config.request_state_keys.is_generated() {
            tracing::warn!(
                "MCP_REQUEST_STATE_KEY is not set: using a random key, so requestState and cursors do not survive a restart or cross instances"
            );
        }
        let local_tasks = self.tasks.as_ref().is_some_and(|t| t.runs_locally());
        match self.config.mode {
            // A round dispatched on the accepting invocation's runtime freezes with it.
            Mode::Lambda if local_tasks => Err(Error::Tasks(
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

impl<H> Server<H> {
    /// Installs the log subscriber `MCP_LOG` describes, or says that the program's own is kept,
    /// then the start-up warnings the configuration holds, through whichever is installed.
    fn start_logging(&self) {
        if !self.config.log.init() {
            tracing::info!(
                "a tracing subscriber was installed before Server::run, so it is kept: MCP_LOG \
                 is not applied and the log lines are formatted as that subscriber says (on \
                 Lambda, JSON lines need mcp_lambda::init_tracing in place of your own)"
            );
        }
        self.config.warn_of_unknown_variables();
        self.config.handles.warn_if_per_instance(
            self.config.local.bind,
            self.config.http.name_beyond_loopback(),
        );
    }
}

/// Installs the tracing subscriber: JSON lines on Lambda (CloudWatch adds the
/// time), readable text locally, filtered by `MCP_LOG` with rmcp capped at
/// warn. Tokens and tool arguments are never logged.
///
/// [`Server::run`] installs it; call this only to log before it (a constructor
/// never installs one). A subscriber installed first (this one, or the
/// program's own) is kept, and `false` says so.
///
/// ```
/// let config = mcp_lambda::Config::local_default();
/// mcp_lambda::init_tracing(&config);
/// tracing::info!("logged as MCP_LOG says, before the app is built");
/// ```
pub fn init_tracing(config: &Config) -> bool {
    config.log.init()
}

/// Whether `info` is rmcp's default `serverInfo`: rmcp's own name and version.
fn names_rmcp(info: &rmcp::model::Implementation) -> bool {
    let rmcp = rmcp::model::Implementation::from_build_env();
    info.name == rmcp.name && info.version == rmcp.version
}

/// rmcp names a handler that names nothing after rmcp itself (`Implementation::from_build_env`
/// expands in rmcp's crate), so its `serverInfo` would say `rmcp 3.11.0` to every client: say
/// how to name it, once, at start-up.
fn warn_if_unnamed(info: &rmcp::model::Implementation) {
    if names_rmcp(info) {
        tracing::warn!(
            server_info = %format_args!("{} {}", info.name, info.version),
            "this server names itself after rmcp: name it in its handler, \
             #[tool_handler(router = self.tool_router, name = \"my-server\")] (the version \
             is your crate's), or in get_info (docs/your-server.md)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_s_default_server_info_is_told_from_a_named_one() {
        assert!(names_rmcp(&rmcp::model::Implementation::from_build_env()));
        assert!(!names_rmcp(&rmcp::model::Implementation::new(
            "notes",
            env!("CARGO_PKG_VERSION")
        )));
    }
}
