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
//! - 2026-07-28 asks for client input with MRTR (`InputRequiredResult`); `requestState` is
//!   sealed with the deployment's `RequestStateCodec`, so a tampered state is refused (-32602).
//! - 2025-11-25 asks with real JSON-RPC requests (`sampling/createMessage`, `elicitation/create`),
//!   which need a legacy session (`MCP_LEGACY_SESSIONS=true`).
//! - `test_trigger_tool_change` / `test_trigger_prompt_change` change the lists and tell every
//!   open `subscriptions/listen` stream in this process.

// Sampling, elicitation, roots and logging are deprecated by SEP-2577 but still part of the
// fixtures the suite calls.
#![allow(deprecated)]

use std::{
    collections::{BTreeSet, HashSet},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

mod tasks;

use mcp_lambda::config::Mode;
use mcp_lambda::listen::{Changes, MemoryFeed, Watch};
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientResult,
        CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock,
        CreateMessageRequestParams, ElicitRequest, ElicitResult, GetPromptRequestParams,
        GetPromptResponse, GetPromptResult, Implementation, InputRequest, InputRequests,
        InputRequiredResult, InputResponses, JsonObject, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
        LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam, Prompt,
        PromptMessage, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
        ReadResourceResult, Reference, RequestStateCodec, Resource, ResourceContents,
        ResourceTemplate, Role, SealOptions, ServerCapabilities, ServerConfig, ServerRequest,
        SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = mcp_lambda::Config::load().await?;
    // Tools that outlive the request run as durable tasks (the tasks extension), opened the way
    // a user's server opens them: in this process locally; on Lambda only with a table every
    // invocation shares (MCP_HANDLES_TABLE), since each round then runs in an invocation of its
    // own. Without one, the Lambda path serves every scenario but the tasks extension's.
    let tasks = match config.mode {
        Mode::Lambda if config.handles.table.is_none() => None,
        _ => Some(config.tasks.open(&config.handles).await?),
    };
    // List changes reach `subscriptions/listen` streams through the library's feed (one
    // process: in memory), which serves listen for this handler.
    let changes = Changes::new(MemoryFeed::new(None));
    let server = ConformanceServer::new(config.request_state_codec(), changes.clone());
    let mut app = mcp_lambda::App::new(config)
        .changes(&changes)
        .watch_resources(|uri: &str, _caller: &mcp_lambda::Caller| {
            // Updates can only concern resources that exist; anyone may watch them.
            (RESOURCE_URIS.contains(&uri) || template_id(uri).is_some())
                .then(|| Watch::Resource(uri.to_owned()))
        });
    if let Some(tasks) = tasks {
        app = app.tasks(tasks, tasks::policy);
    }
    app.server(server).run().await?;
    Ok(())
}

/// A 1x1 red PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with one silent 16-bit sample (8 kHz, mono).
const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA==";

/// The direct resources `resources/list` returns.
const RESOURCE_URIS: [&str; 3] = [
    "test://static-text",
    "test://static-binary",
    "test://watched-resource",
];

/// How long a sealed `requestState` stays valid: one MRTR round trip, with room for a human.
const REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

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
    subscriptions: Mutex<HashSet<String>>,
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
                subscriptions: Mutex::new(HashSet::new()),
            }),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        let mut tools: Vec<Tool> = TOOLS
            .iter()
            .chain(tasks::TOOLS)
            .map(|(name, description, schema)| tool(name, description, schema()))
            .collect();
        if self.shared.dynamic_tool.load(Ordering::SeqCst) {
            tools.push(tool(
                "test_dynamic_tool",
                "Appears and disappears with test_trigger_tool_change",
                no_arguments(),
            ));
        }
        tools
    }

    fn prompts(&self) -> Vec<Prompt> {
        let mut prompts = vec![
            json!({"name": "test_simple_prompt", "title": "Simple Test Prompt",
                   "description": "A simple prompt without arguments"}),
            json!({"name": "test_prompt_with_arguments", "title": "Prompt With Arguments",
                   "description": "A prompt with required arguments",
                   "arguments": [
                       {"name": "arg1", "description": "First test argument", "required": true},
                       {"name": "arg2", "description": "Second test argument", "required": true}]}),
            json!({"name": "test_prompt_with_embedded_resource",
                   "title": "Prompt With Embedded Resource",
                   "description": "A prompt that includes an embedded resource",
                   "arguments": [{"name": "resourceUri",
                                  "description": "URI of the resource to embed", "required": true}]}),
            json!({"name": "test_prompt_with_image", "title": "Prompt With Image",
                   "description": "A prompt that includes image content"}),
            json!({"name": "test_input_required_result_prompt",
                   "description": "Asks the client for context (MRTR) before returning its messages"}),
        ];
        if self.shared.dynamic_prompt.load(Ordering::SeqCst) {
            prompts.push(json!({"name": "test_dynamic_prompt",
                                "description": "Appears and disappears with test_trigger_prompt_change"}));
        }
        from_json(Value::Array(prompts))
    }

    // ---- MRTR (2026-07-28) ----

    /// Seals `payload` as a `requestState` bound to one tool or prompt.
    fn seal(&self, scope: &str, payload: &Value) -> Result<String, ErrorData> {
        let options = SealOptions::new()
            .associated_data(scope.as_bytes())
            .ttl(REQUEST_STATE_TTL);
        self.shared
            .codec
            .seal_json_with(payload, &options)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    /// Opens a `requestState` sealed for `scope`. Every failure (forged, tampered, expired,
    /// sealed for another tool) gets the same -32602: the details are not the client's business.
    fn open(&self, scope: &str, state: &str) -> Result<Value, ErrorData> {
        self.shared
            .codec
            .open_json_with(state, scope.as_bytes())
            .map_err(|error| {
                tracing::debug!(%error, scope, "requestState refused");
                ErrorData::invalid_params(
                    "requestState failed integrity verification",
                    Some(json!({"reason": "invalid_request_state"})),
                )
            })
    }

    async fn call_mrtr_tool(
        &self,
        name: &str,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let scope = format!("tools/call:{name}");
        let responses = request.input_responses.as_ref();
        let state = request.request_state.as_deref();
        match name {
            "test_input_required_result_elicitation" => {
                require(context, Capability::Elicitation)?;
                match accepted_content(responses, "user_name")? {
                    Some(content) => Ok(complete_text(format!(
                        "Hello, {}!",
                        string_field(&content, "name")?
                    ))
                    .into()),
                    None => Ok(input_required([(
                        "user_name",
                        elicit("What is your name?", "name", "string"),
                    )])
                    .into()),
                }
            }
            "test_input_required_result_sampling" => {
                require(context, Capability::Sampling)?;
                match sampled_text(responses, "capital_question")? {
                    Some(text) => Ok(complete_text(format!("Sampling response: {text}")).into()),
                    None => Ok(input_required([(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    )])
                    .into()),
                }
            }
            "test_input_required_result_list_roots" => {
                require(context, Capability::Roots)?;
                match root_uris(responses, "client_roots")? {
                    Some(uris) => {
                        Ok(complete_text(format!("Client roots: {}", uris.join(", "))).into())
                    }
                    None => Ok(input_required([("client_roots", list_roots())]).into()),
                }
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                require(context, Capability::Elicitation)?;
                let round_one = || -> Result<CallToolResponse, ErrorData> {
                    let state = self.seal(&scope, &json!({"step": "confirm"}))?;
                    Ok(
                        input_required([("confirm", elicit("Please confirm", "ok", "boolean"))])
                            .with_state(state)
                            .into(),
                    )
                };
                let Some(state) = state else {
                    return round_one();
                };
                let payload = self.open(&scope, state)?;
                if payload["step"] != "confirm" {
                    return Err(ErrorData::invalid_params(
                        "requestState is for another step",
                        None,
                    ));
                }
                match accepted_content(responses, "confirm")? {
                    Some(content) => Ok(complete_text(format!(
                        "state-ok: requestState verified, confirmed={}",
                        content.get("ok").unwrap_or(&Value::Null)
                    ))
                    .into()),
                    None => round_one(),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                require(context, Capability::Elicitation)?;
                require(context, Capability::Sampling)?;
                require(context, Capability::Roots)?;
                if let Some(state) = state {
                    self.open(&scope, state)?;
                }
                let name = accepted_content(responses, "user_name")?;
                let greeting = sampled_text(responses, "greeting")?;
                let roots = root_uris(responses, "client_roots")?;
                if let (Some(name), Some(greeting), Some(roots)) = (&name, &greeting, &roots) {
                    return Ok(complete_text(format!(
                        "Received all inputs: name={}, greeting={greeting}, roots={}",
                        string_field(name, "name")?,
                        roots.join(", ")
                    ))
                    .into());
                }
                // Ask again for whatever is still missing.
                let mut requests = InputRequests::new();
                if name.is_none() {
                    requests.insert(
                        "user_name".into(),
                        elicit("What is your name?", "name", "string"),
                    );
                }
                if greeting.is_none() {
                    requests.insert("greeting".into(), sample("Generate a greeting", 50));
                }
                if roots.is_none() {
                    requests.insert("client_roots".into(), list_roots());
                }
                let state = self.seal(&scope, &json!({"step": "gather"}))?;
                Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
            }
            "test_input_required_result_multi_round" => {
                require(context, Capability::Elicitation)?;
                let round_one = || -> Result<CallToolResponse, ErrorData> {
                    let state = self.seal(&scope, &json!({"round": 1}))?;
                    Ok(input_required([(
                        "step1",
                        elicit("Step 1: What is your name?", "name", "string"),
                    )])
                    .with_state(state)
                    .into())
                };
                let Some(state) = state else {
                    return round_one();
                };
                let payload = self.open(&scope, state)?;
                match payload["round"].as_u64() {
                    Some(1) => match accepted_content(responses, "step1")? {
                        Some(content) => {
                            let name = string_field(&content, "name")?;
                            let state = self.seal(&scope, &json!({"round": 2, "name": name}))?;
                            Ok(input_required([(
                                "step2",
                                elicit("Step 2: What is your favorite color?", "color", "string"),
                            )])
                            .with_state(state)
                            .into())
                        }
                        None => round_one(),
                    },
                    Some(2) => {
                        let name = payload["name"].as_str().unwrap_or_default();
                        match accepted_content(responses, "step2")? {
                            Some(content) => Ok(complete_text(format!(
                                "{name}'s favorite color is {}",
                                string_field(&content, "color")?
                            ))
                            .into()),
                            None => Ok(input_required([(
                                "step2",
                                elicit("Step 2: What is your favorite color?", "color", "string"),
                            )])
                            .with_state(state.to_owned())
                            .into()),
                        }
                    }
                    _ => Err(ErrorData::invalid_params(
                        "requestState names no known round",
                        None,
                    )),
                }
            }
            "test_input_required_result_capabilities" => {
                let capabilities = context.client_capabilities().unwrap_or_default();
                let answered: Vec<&str> = responses
                    .map(|responses| responses.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if !answered.is_empty() {
                    return Ok(complete_text(format!(
                        "Received input for: {}",
                        answered.join(", ")
                    ))
                    .into());
                }
                // Ask only for what this request's client declared it can do.
                let mut requests = InputRequests::new();
                if capabilities.sampling.is_some() {
                    requests.insert(
                        "capital_question".into(),
                        sample("What is the capital of France?", 100),
                    );
                }
                if capabilities.elicitation.is_some() {
                    requests.insert(
                        "user_name".into(),
                        elicit("What is your name?", "name", "string"),
                    );
                }
                if capabilities.roots.is_some() {
                    requests.insert("client_roots".into(), list_roots());
                }
                if requests.is_empty() {
                    return Err(ErrorData::missing_required_client_capability(
                        ClientCapabilities::builder().enable_sampling().build(),
                    ));
                }
                Ok(InputRequiredResult::from_input_requests(requests).into())
            }
            _ => Err(unknown_tool(name)),
        }
    }

    // ---- server-to-client requests (2025-11-25, legacy sessions only) ----

    async fn legacy_sampling(
        &self,
        arguments: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if !declares(context, Capability::Sampling) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "test_sampling needs a client that declared the sampling capability in a legacy \
                 session (MCP_LEGACY_SESSIONS=true); at 2026-07-28 use \
                 test_input_required_result_sampling",
            )]));
        }
        let prompt = arguments
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or("Hello");
        let params: CreateMessageRequestParams = from_json(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
            "maxTokens": 100,
        }));
        match context.peer.create_message(params).await {
            Ok(result) => {
                let reply = serde_json::to_value(&result).unwrap_or_default();
                let text = first_text(&reply["content"]).unwrap_or("No response");
                Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "LLM response: {text}"
                ))]))
            }
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Sampling failed: {error}"
            ))])),
        }
    }

    async fn legacy_elicitation(
        &self,
        message: &str,
        requested_schema: Value,
        result_prefix: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if !declares(context, Capability::Elicitation) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "elicitation needs a client that declared the elicitation capability in a legacy \
                 session (MCP_LEGACY_SESSIONS=true); at 2026-07-28 use \
                 test_input_required_result_elicitation",
            )]));
        }
        let request: ElicitRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message, "requestedSchema": requested_schema},
        }))
        .map_err(|error| {
            ErrorData::internal_error(format!("bad elicitation schema: {error}"), None)
        })?;
        match context
            .peer
            .send_request(ServerRequest::ElicitRequest(request))
            .await
        {
            Ok(ClientResult::ElicitResult(result)) => {
                Ok(CallToolResult::success(vec![ContentBlock::text(
                    elicit_summary(result_prefix, &result),
                )]))
            }
            Ok(_) => Ok(CallToolResult::error(vec![ContentBlock::text(
                "Elicitation failed: the client answered with something other than an ElicitResult",
            )])),
            Err(error) => Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Elicitation failed: {error}"
            ))])),
        }
    }

    async fn call_tool_inner(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.clone().unwrap_or_default();
        let name = request.name.to_string();
        let result = match name.as_str() {
            "test_simple_text" => complete_text("This is a simple text response for testing."),
            "test_image_content" => {
                CallToolResult::success(vec![ContentBlock::image(PNG_BASE64, "image/png")])
            }
            "test_audio_content" => {
                CallToolResult::success(vec![ContentBlock::audio(WAV_BASE64, "audio/wav")])
            }
            "test_embedded_resource" => {
                CallToolResult::success(vec![ContentBlock::resource(ResourceContents::text(
                    "This is an embedded resource content.",
                    "test://embedded-resource",
                ))])
            }
            "test_multiple_content_types" => CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG_BASE64, "image/png"),
                ContentBlock::resource(
                    ResourceContents::text(
                        r#"{"test":"data","value":123}"#,
                        "test://mixed-content-resource",
                    )
                    .with_mime_type("application/json"),
                ),
            ]),
            "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )]),
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if step > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    if let Some(token) = &token {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), progress)
                                    .with_total(100.0)
                                    .with_message(format!("Completed step {progress} of 100")),
                            )
                            .await;
                    }
                }
                complete_text("Progress test completed")
            }
            "test_missing_capability" => {
                require(&context, Capability::Sampling)?;
                complete_text("Success")
            }
            "test_logging_tool" => {
                log(
                    &context,
                    LoggingLevel::Info,
                    "test_logging_tool evaluated the request",
                )
                .await;
                complete_text("Logging evaluated")
            }
            "test_streaming_elicitation" => {
                // Streams progress (only when asked for) and never a request: at 2026-07-28 a
                // server asks for input with InputRequiredResult, not on the response stream.
                if let Some(token) = context.meta.get_progress_token() {
                    for progress in [0.0, 100.0] {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), progress)
                                    .with_total(100.0),
                            )
                            .await;
                    }
                }
                complete_text("Streaming complete")
            }
            "test_trigger_tool_change" => {
                self.shared.dynamic_tool.fetch_xor(true, Ordering::SeqCst);
                let _ = self.shared.changes.tools_list_changed().await;
                complete_text("Mutation triggered")
            }
            "test_trigger_prompt_change" => {
                self.shared.dynamic_prompt.fetch_xor(true, Ordering::SeqCst);
                let _ = self.shared.changes.prompts_list_changed().await;
                complete_text("Mutation triggered")
            }
            "test_dynamic_tool" if self.shared.dynamic_tool.load(Ordering::SeqCst) => {
                complete_text("Dynamic tool called")
            }
            name if name.starts_with("test_input_required_result_") => {
                return self.call_mrtr_tool(name, &request, &context).await;
            }
            "test_tool_with_logging" => {
                let messages = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (step, message) in messages.into_iter().enumerate() {
                    if step > 0 {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    log(&context, LoggingLevel::Info, message).await;
                }
                complete_text("Tool with logging executed successfully")
            }
            "test_sampling" => self.legacy_sampling(&arguments, &context).await?,
            "test_elicitation" => {
                let message = arguments
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("Please provide your information");
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"},
                    },
                    "required": ["username", "email"],
                });
                self.legacy_elicitation(message, schema, "User response", &context)
                    .await?
            }
            "test_elicitation_sep1034_defaults" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "User name", "default": "John Doe"},
                        "age": {"type": "integer", "description": "User age", "default": 30},
                        "score": {"type": "number", "description": "User score", "default": 95.5},
                        "status": {"type": "string", "description": "User status",
                                   "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "description": "Verification status", "default": true},
                    },
                });
                self.legacy_elicitation(
                    "Please review and update the form fields with defaults",
                    schema,
                    "Elicitation completed",
                    &context,
                )
                .await?
            }
            "test_elicitation_sep1330_enums" => {
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "description": "Select one option",
                                           "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "description": "Select one option with titles",
                                         "oneOf": [{"const": "value1", "title": "First Option"},
                                                   {"const": "value2", "title": "Second Option"},
                                                   {"const": "value3", "title": "Third Option"}]},
                        "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                                       "enum": ["opt1", "opt2", "opt3"],
                                       "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array", "description": "Select multiple options",
                                          "minItems": 1, "maxItems": 3,
                                          "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                                        "minItems": 1, "maxItems": 3,
                                        "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                            {"const": "value2", "title": "Second Choice"},
                                                            {"const": "value3", "title": "Third Choice"}]}},
                    },
                });
                self.legacy_elicitation(
                    "Please select options from the enum fields",
                    schema,
                    "Elicitation completed",
                    &context,
                )
                .await?
            }
            "test_custom_header" => complete_text(format!(
                "Region: {}",
                arguments
                    .get("region")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            )),
            "json_schema_2020_12_tool" => complete_text(format!(
                "JSON Schema 2020-12 tool called with: {}",
                Value::Object(arguments)
            )),
            _ => return Err(unknown_tool(&name)),
        };
        Ok(result.into())
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
        self.call_tool_inner(request, context).await
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
        let arguments = request.arguments.clone().unwrap_or_default();
        let argument = |name: &str| -> Result<String, ErrorData> {
            match arguments.get(name) {
                Some(Value::String(value)) => Ok(value.clone()),
                Some(other) => Ok(other.to_string()),
                None => Err(ErrorData::invalid_params(
                    format!("prompt {} needs argument {name}", request.name),
                    None,
                )),
            }
        };
        let messages = match request.name.as_str() {
            "test_simple_prompt" => vec![PromptMessage::new_text(
                Role::User,
                "This is a simple prompt for testing.",
            )],
            "test_prompt_with_arguments" => vec![PromptMessage::new_text(
                Role::User,
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    argument("arg1")?,
                    argument("arg2")?
                ),
            )],
            "test_prompt_with_embedded_resource" => vec![
                PromptMessage::new(
                    Role::User,
                    ContentBlock::resource(ResourceContents::text(
                        "Embedded resource content for testing.",
                        argument("resourceUri")?,
                    )),
                ),
                PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
            ],
            "test_prompt_with_image" => vec![
                PromptMessage::new(Role::User, ContentBlock::image(PNG_BASE64, "image/png")),
                PromptMessage::new_text(Role::User, "Please analyze the image above."),
            ],
            "test_input_required_result_prompt" => {
                require(&context, Capability::Elicitation)?;
                match accepted_content(request.input_responses.as_ref(), "user_context")? {
                    Some(content) => vec![PromptMessage::new_text(
                        Role::User,
                        format!(
                            "Prompt generated with context: {}",
                            string_field(&content, "context")?
                        ),
                    )],
                    None => {
                        return Ok(input_required([(
                            "user_context",
                            elicit("What context should the prompt use?", "context", "string"),
                        )])
                        .into());
                    }
                }
            }
            "test_dynamic_prompt" if self.shared.dynamic_prompt.load(Ordering::SeqCst) => {
                vec![PromptMessage::new_text(
                    Role::User,
                    "This prompt was added at run time.",
                )]
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown prompt: {other}"),
                    Some(json!({"name": other})),
                ));
            }
        };
        Ok(GetPromptResult::new(messages).into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources: Vec<Resource> = from_json(json!([
            {"uri": "test://static-text", "name": "static-text", "title": "Static Text Resource",
             "description": "A static text resource for testing", "mimeType": "text/plain"},
            {"uri": "test://static-binary", "name": "static-binary", "title": "Static Binary Resource",
             "description": "A static binary resource (image) for testing", "mimeType": "image/png"},
            {"uri": "test://watched-resource", "name": "watched-resource", "title": "Watched Resource",
             "description": "A resource clients can subscribe to", "mimeType": "text/plain"},
        ]));
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<ResourceTemplate> = from_json(json!([
            {"uriTemplate": "test://template/{id}/data", "name": "template", "title": "Resource Template",
             "description": "A resource template with parameter substitution", "mimeType": "application/json"},
        ]));
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri.as_str();
        let contents = match uri {
            "test://static-text" => {
                ResourceContents::text("This is the content of the static text resource.", uri)
            }
            "test://static-binary" => {
                ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png")
            }
            "test://watched-resource" => ResourceContents::text("Watched resource content", uri),
            _ => match template_id(uri) {
                Some(id) => ResourceContents::text(
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                        .to_string(),
                    uri,
                )
                .with_mime_type("application/json"),
                // 2026-07-28 peers get -32602 (rmcp rewrites the code); older peers -32002.
                None => {
                    return Err(ErrorData::resource_not_found(
                        "Resource not found",
                        Some(json!({"uri": uri})),
                    ));
                }
            },
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(prompt), "arg1") if prompt.name == "test_prompt_with_arguments" => {
                &["paris", "park", "party"]
            }
            (Reference::Prompt(prompt), "arg2") if prompt.name == "test_prompt_with_arguments" => {
                &["world", "wonder", "work"]
            }
            (Reference::Resource(template), "id")
                if template.uri == "test://template/{id}/data" =>
            {
                &["1", "2", "3", "123"]
            }
            _ => &[],
        };
        let prefix = request.argument.value.as_str();
        let values: Vec<String> = candidates
            .iter()
            .filter(|candidate| candidate.starts_with(prefix))
            .map(|candidate| candidate.to_string())
            .collect();
        let completion = CompletionInfo::with_all_values(values)
            .map_err(|error| ErrorData::internal_error(error, None))?;
        Ok(CompleteResult::new(completion))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Legacy only (rmcp answers -32601 at 2026-07-28, where the level travels in `_meta`).
        // A stateless server keeps no per-client level: legacy requests log at info and above.
        tracing::debug!(level = ?request.level, "logging/setLevel");
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared
            .subscriptions
            .lock()
            .expect("subscriptions lock")
            .insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared
            .subscriptions
            .lock()
            .expect("subscriptions lock")
            .remove(&request.uri);
        Ok(())
    }
}

// ---- tool definitions ----

type Schema = fn() -> Value;

/// The fixture tools, in the order `tools/list` returns them.
const TOOLS: &[(&str, &str, Schema)] = &[
    // Scored for 2026-07-28 and 2025-11-25.
    (
        "test_simple_text",
        "Tests simple text content response",
        no_arguments,
    ),
    (
        "test_image_content",
        "Tests image content response",
        no_arguments,
    ),
    (
        "test_audio_content",
        "Tests audio content response",
        no_arguments,
    ),
    (
        "test_embedded_resource",
        "Tests embedded resource content response",
        no_arguments,
    ),
    (
        "test_multiple_content_types",
        "Tests response with multiple content types (text, image, resource)",
        no_arguments,
    ),
    (
        "test_error_handling",
        "Tests error response handling",
        no_arguments,
    ),
    (
        "test_tool_with_progress",
        "Tests tool that reports progress notifications",
        no_arguments,
    ),
    // 2026-07-28 diagnostics (server-stateless).
    (
        "test_missing_capability",
        "Requires the sampling client capability; answers -32021 without it",
        empty_object,
    ),
    (
        "test_logging_tool",
        "Logs only when the request sets _meta io.modelcontextprotocol/logLevel",
        no_arguments,
    ),
    (
        "test_streaming_elicitation",
        "Streams its response and never sends a request on it",
        no_arguments,
    ),
    (
        "test_trigger_tool_change",
        "Changes the tool list and notifies subscriptions/listen streams",
        no_arguments,
    ),
    (
        "test_trigger_prompt_change",
        "Changes the prompt list and notifies subscriptions/listen streams",
        no_arguments,
    ),
    // 2026-07-28 MRTR.
    (
        "test_input_required_result_elicitation",
        "Asks for the user's name with elicitation (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_sampling",
        "Asks the client's model a question with sampling (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_list_roots",
        "Asks for the client's roots (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_request_state",
        "Round-trips a sealed requestState (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_multiple_inputs",
        "Asks for elicitation, sampling and roots at once (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_multi_round",
        "Asks twice, carrying the answers in requestState (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_tampered_state",
        "Refuses a requestState that fails verification (MRTR)",
        no_arguments,
    ),
    (
        "test_input_required_result_capabilities",
        "Asks only for what the request's client capabilities allow (MRTR)",
        no_arguments,
    ),
    // 2025-11-25 legacy leg (server-to-client requests need a legacy session).
    (
        "test_tool_with_logging",
        "Tests tool that emits log messages during execution",
        no_arguments,
    ),
    (
        "test_sampling",
        "Tests server-initiated sampling (LLM completion request)",
        sampling_arguments,
    ),
    (
        "test_elicitation",
        "Tests server-initiated elicitation (user input request)",
        elicitation_arguments,
    ),
    (
        "test_elicitation_sep1034_defaults",
        "Tests elicitation with default values per SEP-1034",
        no_arguments,
    ),
    (
        "test_elicitation_sep1330_enums",
        "Tests elicitation with enum schema improvements per SEP-1330",
        no_arguments,
    ),
    // Not scored (json-schema-2020-12 and http-custom-header-server-validation, pending).
    (
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
        json_schema_2020_12,
    ),
    (
        "test_custom_header",
        "Echoes region, which is mirrored in the Mcp-Param-Region header",
        custom_header_arguments,
    ),
];

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!("tool schemas are objects")
    };
    Tool::new(name, description, schema)
}

fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn empty_object() -> Value {
    json!({"type": "object", "properties": {}})
}

fn sampling_arguments() -> Value {
    json!({"type": "object",
           "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
           "required": ["prompt"]})
}

fn elicitation_arguments() -> Value {
    json!({"type": "object",
           "properties": {"message": {"type": "string", "description": "The message to show the user"}},
           "required": ["message"]})
}

/// The schema `json-schema-2020-12` (SEP-1613, SEP-2106) expects to find unchanged in `tools/list`.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            },
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false,
    })
}

/// `region` travels in the body and, mirrored, in the `Mcp-Param-Region` header (SEP-2243).
fn custom_header_arguments() -> Value {
    json!({"type": "object",
           "properties": {"region": {"type": "string", "description": "Where to run",
                                     "x-mcp-header": "Region"}},
           "required": ["region"]})
}

// ---- helpers ----

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("fixture JSON matches the rmcp model")
}

fn complete_text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), Some(json!({"name": name})))
}

/// `test://template/{id}/data` → `id`.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

fn first_text(content: &Value) -> Option<&str> {
    match content {
        Value::Array(blocks) => blocks.iter().find_map(|block| block["text"].as_str()),
        block => block["text"].as_str(),
    }
}

fn elicit_summary(prefix: &str, result: &ElicitResult) -> String {
    let result = serde_json::to_value(result).unwrap_or_default();
    let action = result["action"].as_str().unwrap_or("unknown");
    let content = result.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("{prefix}: action={action}, content={content}")
}

/// Sends a `notifications/message` if this request may receive one: at 2026-07-28 only when
/// `_meta["io.modelcontextprotocol/logLevel"]` is set and `level` reaches it; legacy requests
/// always (a stateless server keeps no `logging/setLevel` state).
async fn log(context: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
    let allowed = if is_modern(context) {
        context
            .meta
            .log_level()
            .is_some_and(|minimum| level as u8 >= minimum as u8)
    } else {
        true
    };
    if allowed {
        let _ = context
            .peer
            .notify_logging_message(
                LoggingMessageNotificationParam::new(level, json!(message))
                    .with_logger("conformance-server"),
            )
            .await;
    }
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

#[derive(Clone, Copy)]
enum Capability {
    Elicitation,
    Sampling,
    Roots,
}

/// Whether this request's client declared `capability` (per request at 2026-07-28; from
/// `initialize` in a legacy session).
fn declares(context: &RequestContext<RoleServer>, capability: Capability) -> bool {
    let capabilities = context.client_capabilities().unwrap_or_default();
    match capability {
        Capability::Elicitation => capabilities.elicitation.is_some(),
        Capability::Sampling => capabilities.sampling.is_some(),
        Capability::Roots => capabilities.roots.is_some(),
    }
}

/// -32021 naming `capability` unless this request's client declared it.
fn require(context: &RequestContext<RoleServer>, capability: Capability) -> Result<(), ErrorData> {
    if declares(context, capability) {
        return Ok(());
    }
    let builder = ClientCapabilities::builder();
    let required = match capability {
        Capability::Elicitation => builder.enable_elicitation().build(),
        Capability::Sampling => builder.enable_sampling().build(),
        Capability::Roots => builder.enable_roots().build(),
    };
    Err(ErrorData::missing_required_client_capability(required))
}

fn input_request(value: Value) -> InputRequest {
    from_json(value)
}

fn elicit(message: &str, field: &str, kind: &str) -> InputRequest {
    input_request(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": kind}},
                "required": [field],
            },
        },
    }))
}

fn sample(question: &str, max_tokens: u32) -> InputRequest {
    input_request(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
            "maxTokens": max_tokens,
        },
    }))
}

fn list_roots() -> InputRequest {
    input_request(json!({"method": "roots/list", "params": {}}))
}

fn input_required<const N: usize>(requests: [(&str, InputRequest); N]) -> InputRequiredResult {
    InputRequiredResult::from_input_requests(
        requests
            .into_iter()
            .map(|(key, request)| (key.to_owned(), request))
            .collect(),
    )
}

trait WithState {
    fn with_state(self, state: String) -> Self;
}

impl WithState for InputRequiredResult {
    fn with_state(mut self, state: String) -> Self {
        self.request_state = Some(state);
        self
    }
}

fn malformed(key: &str, expected: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("inputResponses.{key} is not {expected}"),
        Some(json!({"inputResponse": key})),
    )
}

/// The `content` of an accepted `ElicitResult` under `key`; `None` when the key is missing or
/// the user declined/cancelled (the caller asks again). A malformed answer is -32602.
fn accepted_content(
    responses: Option<&InputResponses>,
    key: &str,
) -> Result<Option<JsonObject>, ErrorData> {
    let Some(response) = responses.and_then(|responses| responses.get(key)) else {
        return Ok(None);
    };
    let object = response
        .as_object()
        .ok_or_else(|| malformed(key, "an ElicitResult object"))?;
    match object.get("action").and_then(Value::as_str) {
        Some("accept") => match object.get("content") {
            Some(Value::Object(content)) => Ok(Some(content.clone())),
            _ => Err(malformed(
                key,
                "an accepted ElicitResult with object content",
            )),
        },
        Some("decline" | "cancel") => Ok(None),
        _ => Err(malformed(
            key,
            "an ElicitResult (action accept, decline or cancel)",
        )),
    }
}

fn string_field(content: &JsonObject, field: &str) -> Result<String, ErrorData> {
    match content.get(field) {
        Some(Value::String(value)) => Ok(value.clone()),
        _ => Err(ErrorData::invalid_params(
            format!("elicitation answer has no string field {field}"),
            None,
        )),
    }
}

/// The text of a `CreateMessageResult` under `key`.
fn sampled_text(
    responses: Option<&InputResponses>,
    key: &str,
) -> Result<Option<String>, ErrorData> {
    let Some(response) = responses.and_then(|responses| responses.get(key)) else {
        return Ok(None);
    };
    if !response.is_object() || response.get("role").is_none() {
        return Err(malformed(key, "a CreateMessageResult"));
    }
    first_text(&response["content"])
        .map(|text| Some(text.to_owned()))
        .ok_or_else(|| malformed(key, "a CreateMessageResult with text content"))
}

/// The root URIs of a `ListRootsResult` under `key`.
fn root_uris(
    responses: Option<&InputResponses>,
    key: &str,
) -> Result<Option<Vec<String>>, ErrorData> {
    let Some(response) = responses.and_then(|responses| responses.get(key)) else {
        return Ok(None);
    };
    let roots = response["roots"]
        .as_array()
        .ok_or_else(|| malformed(key, "a ListRootsResult"))?;
    let uris: BTreeSet<String> = roots
        .iter()
        .filter_map(|root| root["uri"].as_str().map(str::to_owned))
        .collect();
    Ok(Some(uris.into_iter().collect()))
}
