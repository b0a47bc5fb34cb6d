//! Multi-round-trip requests (2026-07-28): a tool or prompt that needs the client's input
//! answers `InputRequiredResult` and is called again with the answers (`inputResponses`) and
//! the `requestState` it sealed; nothing is kept between rounds. Each input a fixture asks for
//! is an [`Input`]: its key, its request and how its answer reads, so that asking and reading
//! are written once.

use std::{collections::BTreeSet, time::Duration};

use rmcp::{
    ErrorData, RoleServer,
    model::{
        CallToolRequestParams, CallToolResponse, ClientCapabilities, InputRequest, InputRequests,
        InputRequiredResult, InputResponses, JsonObject, RequestStateCodec, SealOptions,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    ConformanceServer,
    capabilities::{Capability, declares, require},
    from_json,
    tools::{complete_text, unknown_tool},
};

/// How long a sealed `requestState` stays valid: one MRTR round trip, with room for a human.
const REQUEST_STATE_TTL: Duration = Duration::from_secs(600);

/// Asked by `test_input_required_result_*` and the tasks' `test_tool_with_task`.
pub(crate) const USER_NAME: Input<String> = Input {
    key: "user_name",
    request: || elicit("What is your name?", "name", "string"),
    read: |answer, key| named(answer, key, "name"),
};
const CAPITAL_QUESTION: Input<String> = Input {
    key: "capital_question",
    request: || sample("What is the capital of France?", 100),
    read: sampled_text,
};
const GREETING: Input<String> = Input {
    key: "greeting",
    request: || sample("Generate a greeting", 50),
    read: sampled_text,
};
const CLIENT_ROOTS: Input<Vec<String>> = Input {
    key: "client_roots",
    request: list_roots,
    read: root_uris,
};
const STEP_1: Input<String> = Input {
    key: "step1",
    request: || elicit("Step 1: What is your name?", "name", "string"),
    read: |answer, key| named(answer, key, "name"),
};
const STEP_2: Input<String> = Input {
    key: "step2",
    request: || elicit("Step 2: What is your favorite color?", "color", "string"),
    read: |answer, key| named(answer, key, "color"),
};

impl ConformanceServer {
    /// Runs a `test_input_required_result_*` tool.
    pub(crate) fn call_mrtr_tool(
        &self,
        name: &str,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let round = Round {
            codec: &self.shared.codec,
            scope: format!("tools/call:{name}"),
            state: request.request_state.as_deref(),
        };
        let responses = request.input_responses.as_ref();
        match name {
            "test_input_required_result_elicitation" => {
                require(context, Capability::Elicitation)?;
                ask_until(&USER_NAME, responses, |name| {
                    done(format!("Hello, {name}!"))
                })
            }
            "test_input_required_result_sampling" => {
                require(context, Capability::Sampling)?;
                ask_until(&CAPITAL_QUESTION, responses, |text| {
                    done(format!("Sampling response: {text}"))
                })
            }
            "test_input_required_result_list_roots" => {
                require(context, Capability::Roots)?;
                ask_until(&CLIENT_ROOTS, responses, |uris| {
                    done(format!("Client roots: {}", uris.join(", ")))
                })
            }
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                require(context, Capability::Elicitation)?;
                let round_one = || {
                    round.ask_sealed(
                        input_required([("confirm", elicit("Please confirm", "ok", "boolean"))]),
                        &json!({"step": "confirm"}),
                    )
                };
                let Some(payload) = round.opened()? else {
                    return round_one();
                };
                if payload["step"] != "confirm" {
                    return Err(ErrorData::invalid_params(
                        "requestState is for another step",
                        None,
                    ));
                }
                match accepted_content(responses, "confirm")? {
                    Some(content) => done(format!(
                        "state-ok: requestState verified, confirmed={}",
                        content.get("ok").unwrap_or(&Value::Null)
                    )),
                    None => round_one(),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                require(context, Capability::Elicitation)?;
                require(context, Capability::Sampling)?;
                require(context, Capability::Roots)?;
                round.opened()?;
                // The name's field is read only once all three answers are in.
                let name = accepted_content(responses, USER_NAME.key)?;
                let greeting = GREETING.answer(responses)?;
                let roots = CLIENT_ROOTS.answer(responses)?;
                if let (Some(name), Some(greeting), Some(roots)) = (&name, &greeting, &roots) {
                    return done(format!(
                        "Received all inputs: name={}, greeting={greeting}, roots={}",
                        string_field(name, "name")?,
                        roots.join(", ")
                    ));
                }
                // Ask again for whatever is still missing.
                let missing = only([
                    (name.is_none(), USER_NAME.entry()),
                    (greeting.is_none(), GREETING.entry()),
                    (roots.is_none(), CLIENT_ROOTS.entry()),
                ]);
                round.ask_sealed(
                    InputRequiredResult::from_input_requests(missing),
                    &json!({"step": "gather"}),
                )
            }
            "test_input_required_result_multi_round" => {
                require(context, Capability::Elicitation)?;
                let round_one = || round.ask_sealed(STEP_1.ask(), &json!({"round": 1}));
                let Some(payload) = round.opened()? else {
                    return round_one();
                };
                match payload["round"].as_u64() {
                    Some(1) => match STEP_1.answer(responses)? {
                        Some(name) => {
                            round.ask_sealed(STEP_2.ask(), &json!({"round": 2, "name": name}))
                        }
                        None => round_one(),
                    },
                    Some(2) => match STEP_2.answer(responses)? {
                        Some(color) => done(format!(
                            "{}'s favorite color is {color}",
                            payload["name"].as_str().unwrap_or_default()
                        )),
                        // The same question again, with the state it came with.
                        None => Ok(round.ask_again(STEP_2.ask()).into()),
                    },
                    _ => Err(ErrorData::invalid_params(
                        "requestState names no known round",
                        None,
                    )),
                }
            }
            "test_input_required_result_capabilities" => {
                let answered: Vec<&str> = responses
                    .map(|responses| responses.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                if !answered.is_empty() {
                    return done(format!("Received input for: {}", answered.join(", ")));
                }
                // Ask only for what this request's client declared it can do.
                let requests = only([
                    (
                        declares(context, Capability::Sampling),
                        CAPITAL_QUESTION.entry(),
                    ),
                    (
                        declares(context, Capability::Elicitation),
                        USER_NAME.entry(),
                    ),
                    (declares(context, Capability::Roots), CLIENT_ROOTS.entry()),
                ]);
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

fn done(text: String) -> Result<CallToolResponse, ErrorData> {
    Ok(complete_text(text).into())
}

/// Asks for `input` until the client answers it, then finishes with `finish(answer)`.
pub(crate) fn ask_until<T, R: From<InputRequiredResult>>(
    input: &Input<T>,
    responses: Option<&InputResponses>,
    finish: impl FnOnce(T) -> Result<R, ErrorData>,
) -> Result<R, ErrorData> {
    match input.answer(responses)? {
        Some(answer) => finish(answer),
        None => Ok(input.ask().into()),
    }
}

/// One MRTR tool call's state: what it sealed for itself in an earlier round, if anything.
struct Round<'a> {
    codec: &'a RequestStateCodec,
    /// What the state is bound to (`tools/call:<name>`), so one tool's state opens for no other.
    scope: String,
    state: Option<&'a str>,
}

impl Round<'_> {
    /// The payload sealed in an earlier round; `None` in the first. Every failure (forged,
    /// tampered, expired, sealed for another tool) gets the same -32602: the details are not the
    /// client's business.
    fn opened(&self) -> Result<Option<Value>, ErrorData> {
        let Some(state) = self.state else {
            return Ok(None);
        };
        self.codec
            .open_json_with(state, self.scope.as_bytes())
            .map(Some)
            .map_err(|error| {
                tracing::debug!(%error, scope = self.scope.as_str(), "requestState refused");
                ErrorData::invalid_params(
                    "requestState failed integrity verification",
                    Some(json!({"reason": "invalid_request_state"})),
                )
            })
    }

    /// `ask`, carrying `payload` sealed for this tool into the next round.
    fn ask_sealed(
        &self,
        mut ask: InputRequiredResult,
        payload: &Value,
    ) -> Result<CallToolResponse, ErrorData> {
        let options = SealOptions::new()
            .associated_data(self.scope.as_bytes())
            .ttl(REQUEST_STATE_TTL);
        let state = self
            .codec
            .seal_json_with(payload, &options)
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        ask.request_state = Some(state);
        Ok(ask.into())
    }

    /// `ask`, carrying the state this round came with unchanged.
    fn ask_again(&self, mut ask: InputRequiredResult) -> InputRequiredResult {
        ask.request_state = self.state.map(str::to_owned);
        ask
    }
}

// ---- inputs ----

/// Something a fixture asks the client for: the key its answer comes back under, the request,
/// and how the answer reads (`None`: declined, ask again; malformed: -32602).
pub(crate) struct Input<T> {
    pub(crate) key: &'static str,
    pub(crate) request: fn() -> InputRequest,
    pub(crate) read: fn(&Value, &str) -> Result<Option<T>, ErrorData>,
}

impl<T> Input<T> {
    /// The answer in `responses`; `None` when there is none yet or the client declined.
    fn answer(&self, responses: Option<&InputResponses>) -> Result<Option<T>, ErrorData> {
        match responses.and_then(|responses| responses.get(self.key)) {
            Some(answer) => (self.read)(answer, self.key),
            None => Ok(None),
        }
    }

    fn entry(&self) -> (&'static str, InputRequest) {
        (self.key, (self.request)())
    }

    /// An `InputRequiredResult` asking for this input alone.
    pub(crate) fn ask(&self) -> InputRequiredResult {
        input_required([self.entry()])
    }
}

/// An elicitation form with one required `field` of JSON Schema type `kind`.
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

/// The requests whose condition holds.
fn only<const N: usize>(candidates: [(bool, (&str, InputRequest)); N]) -> InputRequests {
    candidates
        .into_iter()
        .filter_map(|(wanted, (key, request))| wanted.then(|| (key.to_owned(), request)))
        .collect()
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
    match responses.and_then(|responses| responses.get(key)) {
        Some(answer) => accepted(answer, key),
        None => Ok(None),
    }
}

fn accepted(answer: &Value, key: &str) -> Result<Option<JsonObject>, ErrorData> {
    let object = answer
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

/// The string `field` of an accepted `ElicitResult`.
pub(crate) fn named(answer: &Value, key: &str, field: &str) -> Result<Option<String>, ErrorData> {
    accepted(answer, key)?
        .map(|content| string_field(&content, field))
        .transpose()
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

/// The text of a `CreateMessageResult`.
fn sampled_text(answer: &Value, key: &str) -> Result<Option<String>, ErrorData> {
    if !answer.is_object() || answer.get("role").is_none() {
        return Err(malformed(key, "a CreateMessageResult"));
    }
    first_text(&answer["content"])
        .map(|text| Some(text.to_owned()))
        .ok_or_else(|| malformed(key, "a CreateMessageResult with text content"))
}

/// The root URIs of a `ListRootsResult`.
fn root_uris(answer: &Value, key: &str) -> Result<Option<Vec<String>>, ErrorData> {
    let roots = answer["roots"]
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
