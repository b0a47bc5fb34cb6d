//! Multi-round-trip requests (2026-07-28): a tool or prompt that needs the client's input
//! answers `InputRequiredResult` and is called again with the answers (`inputResponses`) and
//! the `requestState` it sealed; nothing is kept between rounds.

use std::{collections::BTreeSet, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, InputRequest, InputRequests,
        InputRequiredResult, InputResponses, JsonObject, SealOptions,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    ConformanceServer,
    capabilities::{Capability, require},
    from_json,
    tools::{complete_text, unknown_tool},
};

/// How long a sealed `requestState` stays valid: one MRTR round trip, with room for a human.
const REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

impl ConformanceServer {
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

    /// Runs a `test_input_required_result_*` tool.
    pub(crate) async fn call_mrtr_tool(
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
}

pub(crate) fn elicit(message: &str, field: &str, kind: &str) -> InputRequest {
    from_json(json!({
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
    from_json(json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
            "maxTokens": max_tokens,
        },
    }))
}

fn list_roots() -> InputRequest {
    from_json(json!({"method": "roots/list", "params": {}}))
}

pub(crate) fn input_required<const N: usize>(
    requests: [(&str, InputRequest); N],
) -> InputRequiredResult {
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
pub(crate) fn accepted_content(
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

pub(crate) fn string_field(content: &JsonObject, field: &str) -> Result<String, ErrorData> {
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

/// The first text of a content block or list of blocks.
pub(crate) fn first_text(content: &Value) -> Option<&str> {
    match content {
        Value::Array(blocks) => blocks.iter().find_map(|block| block["text"].as_str()),
        block => block["text"].as_str(),
    }
}
