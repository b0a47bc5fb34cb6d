//! Server-to-client requests (2025-11-25): the legacy leg asks with real JSON-RPC requests
//! (`sampling/createMessage`, `elicitation/create`), which need a legacy session
//! (`MCP_LEGACY_SESSIONS=true`). Failures are tool errors, as the suite expects.

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolResult, ClientResult, ContentBlock, CreateMessageRequestParams, ElicitRequest,
        ElicitResult, JsonObject, ServerRequest,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    capabilities::{Capability, declares},
    from_json,
    mrtr::first_text,
};

/// `test_sampling`: asks the client's model the `prompt` argument.
pub(crate) async fn sampling(
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    if let Some(refused) = undeclared(context, Capability::Sampling, "test_sampling") {
        return Ok(refused);
    }
    let prompt = arguments
        .get("prompt")
        .and_then(Value::as_str)
        .unwrap_or("Hello");
    let params: CreateMessageRequestParams = from_json(json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100,
    }));
    let answer = match context.peer.create_message(params).await {
        Ok(result) => {
            let reply = serde_json::to_value(&result).unwrap_or_default();
            let text = first_text(&reply["content"]).unwrap_or("No response");
            Ok(format!("LLM response: {text}"))
        }
        Err(error) => Err(format!("Sampling failed: {error}")),
    };
    Ok(reply(answer))
}

/// The elicitation fixtures (`test_elicitation*`): each sends one form and reports the answer.
/// `None` when `name` is not one.
pub(crate) async fn elicitation(
    name: &str,
    arguments: &JsonObject,
    context: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResult, ErrorData>> {
    let (message, schema, result_prefix) = match name {
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
            (message, schema, "User response")
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
            (
                "Please review and update the form fields with defaults",
                schema,
                "Elicitation completed",
            )
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
            (
                "Please select options from the enum fields",
                schema,
                "Elicitation completed",
            )
        }
        _ => return None,
    };
    Some(elicit(message, schema, result_prefix, context).await)
}

async fn elicit(
    message: &str,
    requested_schema: Value,
    result_prefix: &str,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, ErrorData> {
    if let Some(refused) = undeclared(context, Capability::Elicitation, "elicitation") {
        return Ok(refused);
    }
    let request: ElicitRequest = serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": requested_schema},
    }))
    .map_err(|error| ErrorData::internal_error(format!("bad elicitation schema: {error}"), None))?;
    let request = ServerRequest::ElicitRequest(request);
    let answer = match context.peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(result)) => Ok(summary(result_prefix, &result)),
        Ok(_) => Err(
            "Elicitation failed: the client answered with something other than an ElicitResult"
                .to_owned(),
        ),
        Err(error) => Err(format!("Elicitation failed: {error}")),
    };
    Ok(reply(answer))
}

/// A tool error naming what `fixture` needs, unless this session's client declared `capability`.
fn undeclared(
    context: &RequestContext<RoleServer>,
    capability: Capability,
    fixture: &str,
) -> Option<CallToolResult> {
    let name = capability.name();
    (!declares(context, capability)).then(|| {
        CallToolResult::error(vec![ContentBlock::text(format!(
            "{fixture} needs a client that declared the {name} capability in a legacy session \
             (MCP_LEGACY_SESSIONS=true); at 2026-07-28 use test_input_required_result_{name}"
        ))])
    })
}

/// The client's answer as the tool's text, or why there is none as a tool error.
fn reply(answer: Result<String, String>) -> CallToolResult {
    match answer {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
    }
}

fn summary(prefix: &str, result: &ElicitResult) -> String {
    let result = serde_json::to_value(result).unwrap_or_default();
    let action = result["action"].as_str().unwrap_or("unknown");
    let content = result.get("content").cloned().unwrap_or_else(|| json!({}));
    format!("{prefix}: action={action}, content={content}")
}
