//! Run with:
//!
//! ```sh
//! MCP_BIND=127.0.0.1:3000 MCP_REQUEST_STATE_KEY=Y29uZm9ybWFuY2UtZml4dHVyZS1rZXktMDEyMzQ1Njc4OWFiY2RlZg== \
//!     cargo run -p mcp-lambda-conformance
//! curl -s http://127.0.0.1:3000/mcp -H 'content-type: application/json' \
//!     -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
//!     -H 'mcp-method: tools/call' -H 'mcp-name: test_simple_text' \
//!     -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//!
//! Add `MCP_LEGACY_SESSIONS=true` for the legacy leg (sessions, server-to-client requests).
//! `scripts/conformance.sh` runs the official suite against this server;
//! `cargo test -p mcp-lambda-conformance` runs `conformance/tests/request_state.rs`, which starts
//! it as separate processes sharing one request-state key.
//!
//! The fixture server the MCP conformance suite
//! (`@modelcontextprotocol/conformance@0.2.0-alpha.12`) expects: every tool, prompt, resource,
//! completion and MRTR fixture it names, with the exact texts it looks for, for both the
//! 2026-07-28 (stateless) wire and the 2025-11-25 (`initialize`) wire.
//!
//! - 2026-07-28 asks for client input with MRTR (`InputRequiredResult`, `mrtr.rs`); `requestState`
//!   is sealed with the deployment's `RequestStateCodec`, so a tampered state is refused (-32602).
//! - 2025-11-25 asks with real JSON-RPC requests (`sampling/createMessage`, `elicitation/create`,
//!   `legacy.rs`), which need a legacy session (`MCP_LEGACY_SESSIONS=true`).
//! - skills (SEP-2640): one skill with a file in a subdirectory (`skills.rs`).
//! - `test_trigger_tool_change` / `test_trigger_prompt_change` change the lists and tell every
//!   open `subscriptions/listen` stream in this process.
//!
//! This file holds start-up and the `ServerHandler` impl; each MCP feature is a module of its own.

// Sampling, elicitation, roots and logging are deprecated by SEP-2577 but still part of the
// fixtures the suite calls.
#![allow(deprecated)]

use std::sync::{Arc, atomic::AtomicBool};

mod capabilities;
mod completion;
mod legacy;
mod logging;
mod media;
mod mrtr;
mod prompts;
mod resources;
mod skills;
mod tasks;
mod tools;

use mcp_lambda::config::Mode;
use mcp_lambda::listen::{Changes, MemoryFeed};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
        GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams, GetSkillResult,
        Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        ListSkillsResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
        ReadResourceResponse, RequestStateCodec, ServerCapabilities, ServerConfig,
        SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
    },
    service::RequestContext,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = mcp_lambda::Config::load().await?;
    // Tools that outlive the request run as durable tasks (the tasks extension), opened the way
    // a user's server opens them: in this process locally; on Lambda only with a table every
    // invocation shares (MCP_HANDLES_TABLE), since each round then runs in an invocation of its
    // own. Without one, the Lambda path serves every scenario but the tasks extension's.
    let tasks = match config.mode() {
        Mode::Lambda if config.handles().table.is_none() => None,
        _ => Some(config.open_tasks().await?),
    };
    // List changes reach `subscriptions/listen` streams through the library's feed (one
    // process: in memory), which serves listen for this handler.
    let changes = Changes::new(MemoryFeed::new(None));
    let server = ConformanceServer::new(config.request_state_codec(), changes.clone());
    let mut app = mcp_lambda::App::new(config)
        .changes(&changes)
        .watch_resources(resources::watch);
    if let Some(tasks) = tasks {
        app = app.tasks(tasks, tasks::policy);
    }
    app.server(server).run().await?;
    Ok(())
}

/// The MCP conformance suite's fixture server. Cheap to clone: all state is shared.
#[derive(Clone)]
pub struct ConformanceServer {
    shared: Arc<Shared>,
}

struct Shared {
    codec: RequestStateCodec,
    /// List changes for open `subscriptions/listen` streams.
    changes: Changes,
    /// Toggled by `test_trigger_tool_change`: adds or removes `test_dynamic_tool`.
    dynamic_tool: AtomicBool,
    /// Toggled by `test_trigger_prompt_change`: adds or removes `test_dynamic_prompt`.
    dynamic_prompt: AtomicBool,
    /// Legacy `resources/subscribe` targets.
    subscriptions: resources::Subscriptions,
}

impl ConformanceServer {
    /// A server whose MRTR `requestState` is sealed and opened with `codec`.
    pub fn new(codec: RequestStateCodec, changes: Changes) -> Self {
        Self {
            shared: Arc::new(Shared {
                codec,
                changes,
                dynamic_tool: AtomicBool::new(false),
                dynamic_prompt: AtomicBool::new(false),
                subscriptions: resources::Subscriptions::default(),
            }),
        }
    }
}

impl ServerHandler for ConformanceServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_completions()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_skills_with_directory_read()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("mcp-lambda-conformance", env!("CARGO_PKG_VERSION"))
                    .with_title("mcp-lambda conformance fixture"),
            )
            .with_instructions("Fixture server for the MCP conformance suite.")
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(answer) = tasks::call(&request.name, &request).await {
            return answer;
        }
        self.run_tool(request, context).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(self.prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.prompt(request, &context)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut listed = resources::list();
        listed.push(skills::listed());
        Ok(ListResourcesResult::with_all_items(listed))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        match skills::read(&request.uri) {
            Some(file) => Ok(file),
            None => resources::read(&request.uri),
        }
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        Ok(skills::list())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        skills::get(&request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        skills::directory(&request.uri)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        completion::complete(&request)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        logging::set_level(&request);
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.subscriptions.add(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.subscriptions.remove(&request.uri);
        Ok(())
    }
}

/// The rmcp model of a fixture written as JSON (the suite's texts, easiest to check as JSON).
fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("fixture JSON matches the rmcp model")
}
