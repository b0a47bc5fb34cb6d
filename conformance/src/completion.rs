//! `completion/complete`: fixed candidates for the prompt and template arguments the suite
//! completes, filtered by the typed prefix.

use rmcp::{
    ErrorData,
    model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference},
};

use crate::resources::TEMPLATE;

pub(crate) fn complete(request: &CompleteRequestParams) -> Result<CompleteResult, ErrorData> {
    let candidates: &[&str] = match (&request.r#ref, request.argument.name.as_str()) {
        (Reference::Prompt(prompt), "arg1") if prompt.name == "test_prompt_with_arguments" => {
            &["paris", "park", "party"]
        }
        (Reference::Prompt(prompt), "arg2") if prompt.name == "test_prompt_with_arguments" => {
            &["world", "wonder", "work"]
        }
        (Reference::Resource(template), "id") if template.uri == TEMPLATE => {
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
