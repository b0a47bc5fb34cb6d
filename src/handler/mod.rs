//! The wrapper around the user's `ServerHandler`.
//!
//! [`Hosted`] implements every method of rmcp's `ServerHandler` (rmcp 3.11: each request and
//! notification its dispatch hands a handler, SEP-2640's skills among them), delegating to
//! the user's handler, except where a feature of this crate answers instead: `tasks/*` with
//! the task engine on, `subscriptions/listen` with a change feed, resources served from
//! handles. A method it did not implement would be answered by the trait's default, -32601,
//! whatever the user's handler does: `tests/self_contained/forwarding.rs` sends every method rmcp has on
//! both doors and fails on a new one until it is forwarded here. On top of the user's
//! answers it adds what a hosted 2026-07-28 server owes, in one place, so that JSON and SSE
//! answers get the same treatment:
//! - `_meta["io.modelcontextprotocol/serverInfo"]` on every 2026-07-28 result the handler
//!   returns (`rmcp_gaps::stamp_server_info`); `tasks/update` and `tasks/cancel` return
//!   nothing, and rmcp's empty acknowledgment of them carries none;
//! - `ttlMs`/`cacheScope` from [`cache::CacheHints`](crate::cache::CacheHints) on
//!   `server/discover`, the lists and `resources/read` (rmcp 3.11 fills
//!   `0`/`private`, or `public` from the macros, whatever the deployment wants),
//!   handed to the HTTP front through the request's scope (`request_scope.rs`);
//!   `skills/list` and `skills/get` keep the handler's hints (or rmcp's `0`/`private`):
//!   `MCP_CACHE_*` names no setting for them;
//! - pagination of the four lists with signed, self-contained cursors, one
//!   generic path for all four (`lists.rs`);
//! - the tools a caller may not call left out of `tools/list` when scopes are
//!   configured;
//! - tool schemas every client accepts (`portable_schema.rs`);
//! - the tool and prompt lists' fingerprints, published to the change feed at start-up;
//! - `subscriptions/listen` handed to [`listen`]'s stream, with the filter
//!   the front accepted, and the capabilities listen needs announced (`Announce`);
//! - tools a [`TaskPolicy`](crate::tasks::TaskPolicy) makes durable tasks: the call handed to
//!   the task engine's intake (`tasks/intake.rs`), which accepts it instead of calling it at once;
//! - resources served from typed handles (`handle_resource.rs`).

// Delegating the deprecated 2025-era methods keeps legacy clients working.
#![allow(deprecated)]

mod dispatch;
mod handle_resource;
mod lists;
mod portable_schema;
mod settings;

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CacheScope as RmcpCacheScope, CallToolRequestParams, CallToolResponse,
        CancelledNotificationParam, CompleteRequestParams, CompleteResult, CustomNotification,
        CustomRequest, CustomResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
        GetSkillRequestParams, GetSkillResult, InitializeRequestParams, InitializeResult,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
        ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
        ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
        ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        SubscriptionFilter, Tool, UnsubscribeRequestParams,
    },
    service::{NotificationContext, RequestContext, SubscriptionContext},
};

pub(crate) use dispatch::{InProcess, MakeHosted, Rounds};
pub use handle_resource::HandleResource;
pub use lists::ListSettings;
use lists::{ListContext, strip_cursor};
pub(crate) use settings::{Announce, HostedSettings};

use crate::logging::Sampled;
use crate::{
    auth::Caller,
    listen::{self, ListKind, ListenPlan, StreamLimits},
    request_scope::{self, RequestScope},
    tasks::{Intake, RoundInProcess},
};

/// Records a refusal's `data.retryAfterSecs` (a caller's limit, that waiting lifts) in the
/// request's scope, for the HTTP front to answer 429 with `Retry-After`.
fn record_retry_after(context: &RequestContext<RoleServer>, error: &ErrorData) {
    let secs = error
        .data
        .as_ref()
        .and_then(|d| d.get("retryAfterSecs"))
        .and_then(serde_json::Value::as_u64);
    if let (Some(secs), Some(scope)) = (secs, RequestScope::of(context)) {
        scope.set_retry_after(secs);
    }
}

/// `answer`, with a refusal the client caused (`-32602` for an unknown resource, tool, prompt or
/// task, a bad cursor…) noted at info, at most once per 10 s with the number held back: rmcp
/// logs every error answer at warn, which `rmcp_gaps::QuietRefusals` keeps for server faults.
/// Only the code: a message may echo the arguments.
async fn noted<T>(answer: impl Future<Output = Result<T, ErrorData>>) -> Result<T, ErrorData> {
    static REFUSALS: Sampled = Sampled::per(std::time::Duration::from_secs(10));
    let answer = answer.await;
    if let Err(error) = &answer
        && crate::rmcp_gaps::is_client_refusal(error.code.0)
        && let Some(held_back) = REFUSALS.allow()
    {
        tracing::info!(code = error.code.0, held_back, "request refused");
    }
    answer
}

/// The user's handler, wrapped with serverInfo, cache hints and pagination.
#[derive(Debug)]
pub struct Hosted<H> {
    inner: Arc<H>,
    settings: Arc<HostedSettings>,
}

impl<H> Clone for Hosted<H> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            settings: self.settings.clone(),
        }
    }
}

impl<H> Hosted<H> {
    pub(crate) fn new(inner: Arc<H>, settings: Arc<HostedSettings>) -> Self {
        Self { inner, settings }
    }

    /// The wrapped handler.
    pub fn inner(&self) -> &H {
        &self.inner
    }

    /// Stamps a tool's answer with the cache hints every result carries.
    fn stamp_response(&self, response: &mut CallToolResponse) {
        match response {
            CallToolResponse::Complete(result) => self.settings.stamp(&mut result.meta),
            CallToolResponse::InputRequired(result) => self.settings.stamp(&mut result.meta),
            _ => {}
        }
    }
}

/// Hands the hint just put in the body to the HTTP front, which mirrors it
/// into `Cache-Control` without reading the body again.
pub(crate) fn record(
    request: Option<&RequestScope>,
    ttl_ms: Option<u64>,
    scope: Option<RmcpCacheScope>,
) {
    if let (Some(request), Some(ttl_ms), Some(scope)) = (request, ttl_ms, scope) {
        request.set_cache_hint(ttl_ms, scope == RmcpCacheScope::Public);
    }
}

/// The owner key of the request's caller (tasks are bound to it, like handles).
fn owner_of(context: &RequestContext<RoleServer>) -> String {
    Caller::from_request(context).owner_key().to_owned()
}

impl<H: ServerHandler> ServerHandler for Hosted<H> {
    fn get_info(&self) -> ServerConfig {
        let mut info = self.inner.get_info();
        self.settings.announce.apply(&mut info.capabilities);
        info
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        Box::pin(noted(async move {
            let Some((tasks, _)) = self.settings.tasks()? else {
                return self.inner.get_task(request, context).await;
            };
            let owner = owner_of(&context);
            let mut result = tasks.get(&owner, &request.task_id).await?;
            self.settings.stamp(&mut result.meta);
            Ok(result)
        }))
        .await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(noted(async move {
            let Some((tasks, _)) = self.settings.tasks()? else {
                return self.inner.update_task(request, context).await;
            };
            let owner = owner_of(&context);
            tasks
                .update(&owner, &request.task_id, &request.input_responses)
                .await
        }))
        .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Box::pin(noted(async move {
            let Some((tasks, _)) = self.settings.tasks()? else {
                return self.inner.cancel_task(request, context).await;
            };
            let owner = owner_of(&context);
            tasks.cancel(&owner, &request.task_id).await
        }))
        .await
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        Box::pin(noted(async move {
            let mut result = self.inner.list_skills(request, context).await?;
            self.settings.stamp(&mut result.meta);
            Ok(result)
        }))
        .await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        Box::pin(noted(async move {
            let mut result = self.inner.get_skill(request, context).await?;
            self.settings.stamp(&mut result.meta);
            Ok(result)
        }))
        .await
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        Box::pin(noted(async move {
            let mut result = self.inner.read_resource_directory(request, context).await?;
            self.settings.stamp(&mut result.meta);
            Ok(result)
        }))
        .await
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.initialize(request, context).await
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.negotiate_initialize(request)
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.inner.ping(context).await
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let request_scope = RequestScope::of(&context).cloned();
        let mut result = self.inner.discover(context).await?;
        self.settings.announce.apply(&mut result.capabilities);
        let (ttl, scope) = self.settings.hint("server/discover", true);
        result.ttl_ms = ttl.unwrap_or_default();
        result.cache_scope = scope.unwrap_or(RmcpCacheScope::Private);
        record(
            request_scope.as_ref(),
            Some(result.ttl_ms),
            Some(result.cache_scope),
        );
        self.settings.stamp(&mut result.meta);
        Ok(result)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Box::pin(noted(async move {
            let mut result = self.inner.complete(request, context).await?;
            self.settings.stamp(&mut result.meta);
            Ok(result)
        }))
        .await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.set_level(request, context).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        Box::pin(noted(async move {
            let mut response = self.inner.get_prompt(request, context).await?;
            match &mut response {
                GetPromptResponse::Complete(result) => self.settings.stamp(&mut result.meta),
                GetPromptResponse::InputRequired(result) => self.settings.stamp(&mut result.meta),
                _ => {}
            }
            Ok(response)
        }))
        .await
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Box::pin(noted(async move {
            let list = ListContext::of(&context);
            let result = self
                .inner
                .list_prompts(strip_cursor(&request), context)
                .await?;
            self.settings
                .fingerprint(ListKind::Prompts, &result.prompts)
                .await;
            self.settings.learn_names(|names| {
                names.learn_prompts(result.prompts.iter().map(|p| p.name.as_str()))
            });
            self.settings.page(result, request.as_ref(), list, false)
        }))
        .await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Box::pin(noted(async move {
            let list = ListContext::of(&context);
            // Handles are per caller and never enumerated: a server whose only resources are
            // handle resources lists none.
            let result = if self.settings.inner_resources || self.settings.resources.is_empty() {
                self.inner
                    .list_resources(strip_cursor(&request), context)
                    .await?
            } else {
                ListResourcesResult::with_all_items(Vec::new())
            };
            self.settings.learn_names(|names| {
                names.learn_resources(result.resources.iter().map(|r| r.uri.as_str()))
            });
            self.settings.page(result, request.as_ref(), list, false)
        }))
        .await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Box::pin(noted(async move {
            let list = ListContext::of(&context);
            let mut result = if self.settings.inner_resources || self.settings.resources.is_empty()
            {
                self.inner
                    .list_resource_templates(strip_cursor(&request), context)
                    .await?
            } else {
                ListResourceTemplatesResult::with_all_items(Vec::new())
            };
            result
                .resource_templates
                .extend(self.settings.resources.iter().map(|r| r.template().clone()));
            self.settings.learn_names(|names| {
                names.learn_resource_templates(
                    result
                        .resource_templates
                        .iter()
                        .map(|t| t.uri_template.as_str()),
                )
            });
            self.settings.page(result, request.as_ref(), list, false)
        }))
        .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        Box::pin(noted(async move {
            let modern = lists::is_modern(&context);
            let request_scope = RequestScope::of(&context).cloned();
            let from_handle = self
                .settings
                .handle_resource(&request.uri)
                .and_then(|r| r.read(Caller::from_request(&context), &request.uri));
            let per_caller = from_handle.is_some();
            let mut response = match from_handle {
                Some(read) => ReadResourceResponse::Complete(read.await?),
                None if self.settings.inner_resources || self.settings.resources.is_empty() => {
                    self.inner.read_resource(request, context).await?
                }
                // The handler serves no resources of its own: a URI of no template names nothing.
                None => return Err(handle_resource::not_found(&request.uri)),
            };
            match &mut response {
                ReadResourceResponse::Complete(result) => {
                    (result.ttl_ms, result.cache_scope) =
                        self.settings.hint("resources/read", modern);
                    // A handle is one caller's: no shared cache may keep it, whatever the
                    // deployment configured for resources/read.
                    if per_caller && result.cache_scope.is_some() {
                        result.cache_scope = Some(RmcpCacheScope::Private);
                    }
                    record(request_scope.as_ref(), result.ttl_ms, result.cache_scope);
                    self.settings.stamp(&mut result.meta);
                }
                ReadResourceResponse::InputRequired(result) => {
                    self.settings.stamp(&mut result.meta)
                }
                _ => {}
            }
            Ok(response)
        }))
        .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        match &self.settings.listen {
            // The front already reduced the filter to what this caller may watch.
            Some(_) => Some(requested.clone()),
            None => self.inner.accepted_subscription_filter(requested),
        }
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(listener) = &self.settings.listen else {
            return self.inner.listen(context).await;
        };
        let request = context.request_context();
        let Some(plan) = request_scope::extension::<ListenPlan>(request).cloned() else {
            return Err(ErrorData::internal_error(
                "subscriptions/listen reached the handler without the front's plan",
                None,
            ));
        };
        let limits = request_scope::extension::<StreamLimits>(request)
            .copied()
            .unwrap_or_default();
        // Boxed, as `call_tool`'s body: rmcp holds the handler's futures inline in the task it
        // spawns per request and moves that task whole (tokio's `Cell::new`, `set_stage`), so
        // the largest of them sets what every request copies (benches/history/issue-32.md).
        Box::pin(listen::stream::run(context, listener, plan, limits)).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.subscribe(request, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.inner.unsubscribe(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Box::pin(noted(async move {
            let round = request_scope::extension::<RoundInProcess>(&context).cloned();
            if let Some(round) = round {
                let request_ct = context.ct.clone();
                let call = self.inner.call_tool(request, context);
                let mut response =
                    crate::tasks::until_stopped(&round.stop, &request_ct, call).await?;
                self.stamp_response(&mut response);
                return Ok(response);
            }
            if let Some((tasks, policies)) = self.settings.tasks()? {
                let intake = policies
                    .intake(&tasks, &request, &context)
                    .await
                    .inspect_err(|error| record_retry_after(&context, error))?;
                if let Intake::Task(mut created) = intake {
                    self.settings.stamp(&mut created.meta);
                    return Ok(CallToolResponse::Task(created));
                }
            }
            let mut response = self.inner.call_tool(request, context).await?;
            self.stamp_response(&mut response);
            Ok(response)
        }))
        .await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Box::pin(noted(async move {
            let list = ListContext::of(&context);
            let mut result = self
                .inner
                .list_tools(strip_cursor(&request), context)
                .await?;
            self.settings
                .fingerprint(ListKind::Tools, &result.tools)
                .await;
            self.settings.learn_names(|names| {
                names.learn_tools(result.tools.iter().map(|t| t.name.as_ref()))
            });
            let filtered = self
                .settings
                .filter_tools(list.principal.as_ref(), &mut result.tools);
            // The list depends on who asks: shared caches must not reuse it.
            let mut page = self
                .settings
                .page(result, request.as_ref(), list, filtered)?;
            for tool in &mut page.tools {
                self.settings.portable.apply(tool);
            }
            Ok(page)
        }))
        .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Box::pin(noted(async move {
            self.inner.on_custom_request(request, context).await
        }))
        .await
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_cancelled(notification, context).await
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_progress(notification, context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_initialized(context).await
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_roots_list_changed(context).await
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner
            .on_custom_notification(notification, context)
            .await
    }
}
