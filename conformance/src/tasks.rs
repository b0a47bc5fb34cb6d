//! The tasks extension's fixture tools (the conformance suite's ten `tasks-*` scenarios), run
//! by the library's durable task engine. Each is an ordinary MRTR-style tool: the engine turns
//! its `input_required` rounds into the task's `inputRequests` and `tasks/update` answers.

use std::time::Duration;

use mcp_lambda::tasks::TaskPolicy;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
};
use serde_json::{Value, json};

use crate::{
    mrtr::{USER_NAME, elicit, input_required},
    tools::{Schema, complete_text},
};

/// The fixture tools and their schemas.
pub(crate) const TOOLS: &[(&str, &str, Schema)] = &[
    (
        "greet",
        "Greets someone; never a task",
        || json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
    ),
    (
        "slow_compute",
        "Computes for `seconds`; a task when the client allows one",
        || json!({"type": "object", "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}}}),
    ),
    (
        "failing_job",
        "Only as a task: ends completed with isError after about a second",
        || json!({"type": "object", "properties": {}}),
    ),
    (
        "protocol_error_job",
        "A task that fails with a JSON-RPC error",
        || json!({"type": "object", "properties": {}}),
    ),
    (
        "confirm_delete",
        "Asks the user to confirm a deletion (input_required inside a task)",
        || json!({"type": "object", "properties": {"filename": {"type": "string"}}}),
    ),
    (
        "multi_input",
        "Asks two questions at once inside a task",
        || json!({"type": "object", "properties": {}}),
    ),
];

/// How each fixture tool may run.
pub(crate) fn policy(tool: &str, _caller: &mcp_lambda::Caller) -> TaskPolicy {
    match tool {
        "slow_compute" | "protocol_error_job" | "confirm_delete" | "multi_input" => {
            TaskPolicy::Optional
        }
        "failing_job" => TaskPolicy::Required,
        "test_tool_with_task" => TaskPolicy::RequiredAfterInput,
        _ => TaskPolicy::Never,
    }
}

fn text(text: impl Into<String>) -> CallToolResponse {
    complete_text(text).into()
}

/// The `content` of an accepted answer under `key`.
fn accepted(request: &CallToolRequestParams, key: &str) -> Option<Value> {
    let answer = request.input_responses.as_ref()?.get(key)?;
    (answer["action"] == "accept").then(|| answer["content"].clone())
}

/// Runs a fixture tool; `None` when `name` is not one.
pub(crate) async fn call(
    name: &str,
    request: &CallToolRequestParams,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let arguments = request.arguments.clone().unwrap_or_default();
    let answer = match name {
        "greet" => {
            let who = arguments
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("world");
            Ok(text(format!("Hello, {who}!")))
        }
        "slow_compute" => {
            let seconds = arguments
                .get("seconds")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let label = arguments
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or("job");
            tokio::time::sleep(Duration::from_secs_f64(seconds.clamp(0.0, 600.0))).await;
            Ok(text(format!("computed {label} in {seconds} s")))
        }
        "failing_job" => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(
                CallToolResult::error(vec![ContentBlock::text("the job failed (as a tool error)")])
                    .into(),
            )
        }
        "protocol_error_job" => Err(ErrorData::internal_error(
            "the job failed with a protocol error",
            None,
        )),
        "confirm_delete" => {
            let file = arguments
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or("the file");
            match accepted(request, "confirm") {
                Some(content) if content["confirm"] == true => Ok(text(format!("Deleted {file}"))),
                Some(_) => Ok(text(format!("Kept {file}"))),
                None => Ok(input_required([(
                    "confirm",
                    elicit(&format!("Delete {file}?"), "confirm", "boolean"),
                )])
                .into()),
            }
        }
        "test_tool_with_task" => {
            // The harness answers the first key it was asked, with `content.name`.
            let name = request
                .input_responses
                .as_ref()
                .and_then(|r| r.values().next())
                .filter(|answer| answer["action"] == "accept")
                .and_then(|answer| answer["content"]["name"].as_str().map(str::to_owned));
            match name {
                Some(name) => Ok(text(format!("Hello, {name}! (from a task)"))),
                None => Ok(USER_NAME.ask().into()),
            }
        }
        "multi_input" => match (accepted(request, "first"), accepted(request, "second")) {
            (Some(first), Some(second)) => Ok(text(format!("Answers: {first} and {second}"))),
            _ => Ok(input_required([
                ("first", elicit("First question?", "answer", "string")),
                ("second", elicit("Second question?", "answer", "string")),
            ])
            .into()),
        },
        _ => return None,
    };
    Some(answer)
}
