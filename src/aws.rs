//! AWS plumbing shared by the DynamoDB handle store and the request-state key loader.
//!
//! One HTTP stack for the SDK (hyper 1 + rustls on `ring`: no `aws-lc-sys`, no second TLS
//! library), the configured timeouts on every call, and the SDK's standard retries (throttling
//! and transient errors, with backoff) inside the operation timeout.
//!
//! The endpoint, region and credentials come from the standard AWS environment, read by the
//! SDK's loader: `AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`/`AWS_SESSION_TOKEN`
//! (Lambda sets these), `AWS_ENDPOINT_URL_DYNAMODB` (or `AWS_ENDPOINT_URL`) for a local
//! stand-in, and so on.
//!
//! Request-state keys in SSM Parameter Store or Secrets Manager are fetched with one SigV4-signed
//! JSON call each, through `aws-sigv4` (already part of the SDK): the full `aws-sdk-ssm` and
//! `aws-sdk-secretsmanager` crates would add about 1 minute to a cold debug build and 2 min 20 s
//! to a cold release build, for two calls made once at start-up.

use std::time::{Duration, SystemTime};

use aws_config::{BehaviorVersion, SdkConfig, retry::RetryConfig, timeout::TimeoutConfig};
use aws_credential_types::{Credentials, provider::ProvideCredentials as _};
use aws_smithy_http_client::tls::{Provider, rustls_provider::CryptoMode};
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::config::{AwsTimeouts, ConfigError, KeySource, RequestStateKeys, parse_arn};

/// Attempts of one SDK call (the first try and two retries), all within
/// [`AwsTimeouts::operation`].
pub const MAX_ATTEMPTS: u32 = 3;

/// The SDK configuration loader with this crate's HTTP client, timeouts and retries, reading
/// region, credentials and endpoints from the standard AWS environment.
///
/// Override what you need before `load()`; tests point it at a local endpoint:
///
/// ```no_run
/// # async fn demo() {
/// use aws_config::Region;
/// use aws_credential_types::Credentials;
/// let timeouts = mcp_lambda::config::AwsTimeouts::default();
/// let sdk = mcp_lambda::aws::loader(&timeouts)
///     .endpoint_url("http://127.0.0.1:8000")
///     .region(Region::new("us-east-1"))
///     .credentials_provider(Credentials::new("local", "local", None, None, "static"))
///     .load()
///     .await;
/// let client = aws_sdk_dynamodb::Client::new(&sdk);
/// # drop(client);
/// # }
/// ```
pub fn loader(timeouts: &AwsTimeouts) -> aws_config::ConfigLoader {
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https();
    let timeout_config = TimeoutConfig::builder()
        .connect_timeout(timeouts.connect)
        .read_timeout(timeouts.read)
        .operation_attempt_timeout(timeouts.connect + timeouts.read)
        .operation_timeout(timeouts.operation)
        .build();
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .timeout_config(timeout_config)
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
}

/// Fetches the request-state keys `sources` name, in keyring order (the first one signs).
///
/// One signed call per key in AWS; a Secrets Manager key's optional `AWSPREVIOUS` stage is
/// skipped when the secret has never been rotated.
pub(crate) async fn fetch_request_state_keys(
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
    let fetcher = Fetcher::new(&sdk, timeouts)
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
                let answer = fetcher
                    .call(
                        "SSM",
                        "ssm",
                        name,
                        "AmazonSSM.GetParameter",
                        json!({ "Name": name, "WithDecryption": true }),
                    )
                    .await
                    .map_err(|e| fail(format!("cannot read the SSM parameter: {e}")))?;
                let value = answer["Parameter"]["Value"]
                    .as_str()
                    .ok_or_else(|| fail("the SSM answer carries no Parameter.Value".to_string()))?;
                Some(decode_key(value).ok_or_else(|| {
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

fn decode_key(value: &str) -> Option<Vec<u8>> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .ok()?;
    (key.len() >= RequestStateKeys::MIN_LEN).then_some(key)
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

/// Why a signed AWS call failed.
#[derive(Debug)]
enum AwsCallError {
    /// AWS answered with an error (`ParameterNotFound`, `AccessDeniedException`, …).
    Service { code: String, message: String },
    /// No usable answer: connection, timeout, or not JSON.
    Transport(String),
}

impl std::fmt::Display for AwsCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Service { code, message } => write!(f, "{code}: {message}"),
            Self::Transport(reason) => f.write_str(reason),
        }
    }
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Makes SigV4-signed AWS JSON 1.1 calls (the protocol of SSM and Secrets Manager).
struct Fetcher<'a> {
    sdk: &'a SdkConfig,
    credentials: Credentials,
    client: HttpsClient,
    timeouts: AwsTimeouts,
}

impl<'a> Fetcher<'a> {
    async fn new(sdk: &'a SdkConfig, timeouts: &AwsTimeouts) -> Result<Self, String> {
        let provider = sdk.credentials_provider().ok_or(
            "no AWS credentials provider (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \
             run with a role)",
        )?;
        let credentials = tokio::time::timeout(timeouts.operation, provider.provide_credentials())
            .await
            .map_err(|_| "no AWS credentials within the operation timeout".to_string())?
            .map_err(|e| format!("no AWS credentials: {e}"))?;
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(timeouts.connect));
        http.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Ok(Self {
            sdk,
            credentials,
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeouts: *timeouts,
        })
    }

    /// Calls `target` on the service, retrying transient failures within the operation timeout.
    ///
    /// `service_id` names the service for `AWS_ENDPOINT_URL_<SERVICE>`; `resource` (an ARN or a
    /// name) sets the region when it is an ARN.
    async fn call(
        &self,
        service_id: &str,
        signing_name: &str,
        resource: &str,
        target: &str,
        body: Value,
    ) -> Result<Value, AwsCallError> {
        let region = match parse_arn(resource) {
            Some(_) => resource.split(':').nth(3).map(str::to_owned),
            None => self.sdk.region().map(|r| r.to_string()),
        }
        .ok_or_else(|| {
            AwsCallError::Transport("no AWS region: set AWS_REGION (Lambda sets it)".into())
        })?;
        let endpoint = self.endpoint(service_id, signing_name, &region);
        let body = serde_json::to_vec(&body).expect("JSON values serialize");
        let attempts = async {
            let mut attempt = 0u32;
            loop {
                attempt += 1;
                let result = tokio::time::timeout(
                    self.timeouts.connect + self.timeouts.read,
                    self.once(&endpoint, signing_name, &region, target, &body),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(AwsCallError::Transport(format!(
                        "no answer from {endpoint} within {} ms",
                        (self.timeouts.connect + self.timeouts.read).as_millis()
                    )))
                });
                let retry = match &result {
                    Err(AwsCallError::Transport(_)) => true,
                    Err(AwsCallError::Service { code, .. }) => {
                        code.contains("Throttl") || code.contains("InternalServer")
                    }
                    Ok(_) => false,
                };
                if !retry || attempt >= MAX_ATTEMPTS {
                    return result;
                }
                tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
            }
        };
        tokio::time::timeout(self.timeouts.operation, attempts)
            .await
            .unwrap_or_else(|_| {
                Err(AwsCallError::Transport(format!(
                    "{endpoint} did not answer within {} ms",
                    self.timeouts.operation.as_millis()
                )))
            })
    }

    /// `AWS_ENDPOINT_URL_<SERVICE>`, else `AWS_ENDPOINT_URL`, else the regional AWS endpoint.
    fn endpoint(&self, service_id: &str, prefix: &str, region: &str) -> String {
        let configured = aws_types::service_config::ServiceConfigKey::builder()
            .service_id(service_id)
            .env("AWS_ENDPOINT_URL")
            .profile("endpoint_url")
            .build()
            .ok()
            .and_then(|key| self.sdk.service_config()?.load_config(key))
            .or_else(|| self.sdk.endpoint_url().map(str::to_owned));
        configured.unwrap_or_else(|| {
            let domain = if region.starts_with("cn-") {
                "amazonaws.com.cn"
            } else {
                "amazonaws.com"
            };
            format!("https://{prefix}.{region}.{domain}")
        })
    }

    async fn once(
        &self,
        endpoint: &str,
        signing_name: &str,
        region: &str,
        target: &str,
        body: &[u8],
    ) -> Result<Value, AwsCallError> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        use aws_sigv4::sign::v4;

        let uri = format!("{}/", endpoint.trim_end_matches('/'));
        let mut request = http::Request::post(&uri)
            .header("content-type", "application/x-amz-json-1.1")
            .header("x-amz-target", target)
            .body(Full::new(Bytes::copy_from_slice(body)))
            .map_err(|e| AwsCallError::Transport(format!("bad endpoint {endpoint}: {e}")))?;

        let identity = self.credentials.clone().into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(signing_name)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| AwsCallError::Transport(format!("cannot sign: {e}")))?
            .into();
        let headers = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        let signable =
            SignableRequest::new("POST", uri.clone(), headers, SignableBody::Bytes(body))
                .map_err(|e| AwsCallError::Transport(format!("cannot sign: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| AwsCallError::Transport(format!("cannot sign: {e}")))?
            .into_parts();
        instructions.apply_to_request_http1x(&mut request);

        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| AwsCallError::Transport(format!("cannot reach {endpoint}: {e}")))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| AwsCallError::Transport(format!("answer from {endpoint} cut: {e}")))?
            .to_bytes();
        let json: Value = serde_json::from_slice(&bytes).map_err(|_| {
            AwsCallError::Transport(format!(
                "{endpoint} answered {status} with a body that is not JSON"
            ))
        })?;
        if status.is_success() {
            return Ok(json);
        }
        let code = json["__type"]
            .as_str()
            .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
            .unwrap_or_else(|| format!("HTTP {status}"));
        let message = json["message"]
            .as_str()
            .or(json["Message"].as_str())
            .unwrap_or("")
            .to_string();
        Err(AwsCallError::Service { code, message })
    }
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
