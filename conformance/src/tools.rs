//! Tools: the `tools/list` table (with the tasks extension's, `tasks.rs`) and `tools/call`.
//! The MRTR tools (`mrtr.rs`) and the legacy server-to-client ones (`legacy.rs`) are called
//! from here and live with their feature.

use std::{sync::atomic::Ordering, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, LoggingLevel,
        ProgressNotificationParam, ResourceContents, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    ConformanceServer,
    capabilities::{Capability, require},
    legacy,
    logging::log,
    media::{PNG_BASE64, WAV_BASE64},
    tasks,
};

impl ConformanceServer {
    pub(crate) fn tools(&self) -> Vec<Tool> {
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

    /// Runs a fixture tool (the tasks extension's are run before, by `tasks::call`).
    pub(crate) async fn run_tool(
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
                return self.call_mrtr_tool(name, &request, &context);
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
            "test_sampling" => legacy::sampling(&arguments, &context).await?,
            name if name.starts_with("test_elicitation") => {
                match legacy::elicitation(name, &arguments, &context).await {
                    Some(result) => result?,
                    None => return Err(unknown_tool(name)),
                }
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

pub(crate) type Schema = fn() -> Value;

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

pub(crate) fn complete_text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

pub(crate) fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), Some(json!({"name": name})))
}
