//! One secret's text read from SSM Parameter Store or Secrets Manager at start-up, with one
//! signed call: what a setting that may name a secret kept in AWS resolves through (the
//! introspection client's secret; the request-state keys read their own, binary-aware, in
//! `request_state/from_aws.rs`).

use serde_json::json;

use super::{AwsTimeouts, loader, signed::SignedJsonClient};

/// Where a secret is kept.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SecretIn<'a> {
    /// An SSM parameter's name or ARN, read `WithDecryption` (a SecureString).
    Ssm(&'a str),
    /// A Secrets Manager secret's ARN, its `AWSCURRENT` `SecretString`.
    SecretsManager(&'a str),
}

/// The secret's text; the error says what failed (never the value).
pub(crate) async fn read_text(
    secret: SecretIn<'_>,
    timeouts: &AwsTimeouts,
) -> Result<String, String> {
    let sdk = loader(timeouts).load().await;
    let client = SignedJsonClient::new(&sdk, timeouts).await?;
    let text = match secret {
        SecretIn::Ssm(name) => ssm_parameter(&client, name).await?,
        SecretIn::SecretsManager(id) => {
            let answer = client
                .call(
                    "Secrets Manager",
                    "secretsmanager",
                    id,
                    "secretsmanager.GetSecretValue",
                    json!({ "SecretId": id, "VersionStage": "AWSCURRENT" }),
                )
                .await
                .map_err(|e| format!("cannot read the secret's AWSCURRENT version: {e}"))?;
            answer["SecretString"]
                .as_str()
                .ok_or("the secret has no SecretString: store the client secret as text")?
                .to_string()
        }
    };
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err("the stored value is empty".into());
    }
    Ok(text)
}

/// The decrypted value of the SSM parameter `name` (a `SecureString`): one signed
/// `GetParameter`.
///
/// # Errors
///
/// What went wrong, in words for a [`ConfigError`](crate::config::ConfigError)'s reason.
pub(crate) async fn ssm_parameter(client: &SignedJsonClient, name: &str) -> Result<String, String> {
    let answer = client
        .call(
            "SSM",
            "ssm",
            name,
            "AmazonSSM.GetParameter",
            json!({ "Name": name, "WithDecryption": true }),
        )
        .await
        .map_err(|e| format!("cannot read the SSM parameter: {e}"))?;
    answer["Parameter"]["Value"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "the SSM answer carries no Parameter.Value".to_owned())
}
