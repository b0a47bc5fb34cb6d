//! Request-state keys kept in SSM Parameter Store or Secrets Manager, fetched once at start-up
//! (Lambda INIT) with one signed call each.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{KeySource, RequestStateKeys, decode_key};
use crate::aws::{
    AwsTimeouts, loader,
    secrets::ssm_parameter,
    signed::{AwsCallError, SignedJsonClient},
};
use crate::env::ConfigError;

/// Fetches the request-state keys `sources` name, in keyring order (the first one signs).
///
/// One signed call per key in AWS; a Secrets Manager key's optional `AWSPREVIOUS` stage is
/// skipped when the secret has never been rotated.
pub(super) async fn fetch(
    sources: &[KeySource],
    timeouts: &AwsTimeouts,
) -> Result<RequestStateKeys, ConfigError> {
    let first_variable = sources
        .iter()
        .find_map(|s| match s {
            KeySource::Ssm { variable, .. } | KeySource::SecretsManager { variable, .. } => {
                Some(*variable)
            }
            KeySource::Inline(_) => None,
        })
        .unwrap_or("MCP_REQUEST_STATE_KEY");
    let sdk = loader(timeouts).load().await;
    let fetcher = SignedJsonClient::new(&sdk, timeouts)
        .await
        .map_err(|reason| ConfigError {
            variable: first_variable,
            value: String::new(),
            reason,
        })?;

    let mut keys: Vec<Vec<u8>> = Vec::new();
    for source in sources {
        let key = match source {
            KeySource::Inline(key) => Some(key.clone()),
            KeySource::Ssm { variable, name } => {
                let fail = |reason: String| ConfigError {
                    variable,
                    value: name.clone(),
                    reason,
                };
                let value = ssm_parameter(&fetcher, name).await.map_err(fail)?;
                Some(decode_key(&value).ok_or_else(|| {
                    fail(
                        "the parameter's value is not standard base64 of at least 32 bytes \
                         (store the output of `openssl rand -base64 32` as a SecureString)"
                            .into(),
                    )
                })?)
            }
            KeySource::SecretsManager {
                variable,
                id,
                stage,
                optional,
            } => {
                let fail = |reason: String| ConfigError {
                    variable,
                    value: id.clone(),
                    reason,
                };
                let answer = fetcher
                    .call(
                        "Secrets Manager",
                        "secretsmanager",
                        id,
                        "secretsmanager.GetSecretValue",
                        json!({ "SecretId": id, "VersionStage": stage }),
                    )
                    .await;
                match answer {
                    Err(AwsCallError::Service { code, .. })
                        if *optional && code == "ResourceNotFoundException" =>
                    {
                        None
                    }
                    Err(e) => {
                        return Err(fail(format!(
                            "cannot read the secret's {stage} version: {e}"
                        )));
                    }
                    Ok(answer) => Some(secret_key(&answer).ok_or_else(|| {
                        fail(format!(
                            "the secret's {stage} value is not a key: store standard base64 of at \
                             least 32 bytes as SecretString (`openssl rand -base64 32`), or at \
                             least 32 raw bytes as SecretBinary"
                        ))
                    })?),
                }
            }
        };
        if let Some(key) = key
            && !keys.contains(&key)
        {
            keys.push(key);
        }
    }
    RequestStateKeys::new(keys).map_err(|reason| ConfigError {
        variable: first_variable,
        value: String::new(),
        reason: reason.into(),
    })
}

/// The key in a `GetSecretValue` answer: base64 text in `SecretString`, or raw `SecretBinary`.
fn secret_key(answer: &Value) -> Option<Vec<u8>> {
    if let Some(text) = answer["SecretString"].as_str() {
        return decode_key(text);
    }
    let binary = base64::engine::general_purpose::STANDARD
        .decode(answer["SecretBinary"].as_str()?)
        .ok()?;
    (binary.len() >= RequestStateKeys::MIN_LEN).then_some(binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_values_are_base64_text_or_raw_bytes_of_at_least_32() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let key = [7u8; 32];
        assert_eq!(
            secret_key(&json!({ "SecretString": b64.encode(key) })),
            Some(key.to_vec())
        );
        assert_eq!(
            secret_key(&json!({ "SecretBinary": b64.encode(key) })),
            Some(key.to_vec())
        );
        assert_eq!(
            secret_key(&json!({ "SecretString": b64.encode([7u8; 31]) })),
            None
        );
        assert_eq!(secret_key(&json!({ "SecretString": "hunter2" })), None);
        assert_eq!(secret_key(&json!({})), None);
    }
}
