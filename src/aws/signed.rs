//! SigV4-signed AWS JSON 1.1 calls (the protocol of SSM and Secrets Manager), made with the
//! SDK's own signer: one call each for the request-state keys at start-up, without two more
//! SDK crates.

use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::{Credentials, provider::ProvideCredentials as _};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::{AwsTimeouts, MAX_ATTEMPTS};
use crate::env::parse_arn;

/// Why a signed AWS call failed.
#[derive(Debug)]
pub(crate) enum AwsCallError {
    /// AWS answered with an error (`ParameterNotFound`, `AccessDeniedException`, …).
    Service {
        /// The error type, e.g. `ResourceNotFoundException`.
        code: String,
        /// AWS's message.
        message: String,
    },
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
pub(crate) struct SignedJsonClient<'a> {
    sdk: &'a SdkConfig,
    credentials: Credentials,
    client: HttpsClient,
    timeouts: AwsTimeouts,
}

impl<'a> SignedJsonClient<'a> {
    pub(crate) async fn new(sdk: &'a SdkConfig, timeouts: &AwsTimeouts) -> Result<Self, String> {
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
    pub(crate) async fn call(
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
