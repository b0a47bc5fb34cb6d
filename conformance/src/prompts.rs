//! Prompts: the suite's fixed prompts, one that asks for input first (MRTR), and one that
//! `test_trigger_prompt_change` adds and removes.

use std::sync::atomic::Ordering;

use rmcp::{
    ErrorData, RoleServer,
    model::{
        ContentBlock, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Prompt,
        PromptMessage, ResourceContents, Role,
    },
    service::RequestContext,
};
use serde_json::{Value, json};

use crate::{
    ConformanceServer,
    capabilities::{Capability, require},
    from_json,
    media::PNG_BASE64,
    mrtr::{Input, ask_until, elicit, named},
};

const USER_CONTEXT: Input<String> = Input {
    key: "user_context",
    request: || elicit("What context should the prompt use?", "context", "string"),
    read: |answer, key| named(answer, key, "context"),
};

impl ConformanceServer {
    pub(crate) fn prompts(&self) -> Vec<Prompt> {
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

    pub(crate) fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
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
                require(context, Capability::Elicitation)?;
                return ask_until(&USER_CONTEXT, request.input_responses.as_ref(), |given| {
                    let message = PromptMessage::new_text(
                        Role::User,
                        format!("Prompt generated with context: {given}"),
                    );
                    Ok(GetPromptResult::new(vec![message]).into())
                });
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
}
