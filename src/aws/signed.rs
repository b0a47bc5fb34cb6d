//! SigV4-signed AWS calls made with the SDK's own signer, without more SDK crates: AWS JSON 1.1
//! (SSM and Secrets Manager, one call each for the request-state keys at start-up) and Lambda's
//! asynchronous Invoke (a task round handed to the Lambda service).

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

/// One request to sign and send.
struct Signed<'r> {
    method: http::Method,
    /// Path and query, from `/`.
    path: &'r str,
    headers: &'r [(&'static str, &'r str)],
    body: &'r [u8],
}

/// Makes SigV4-signed AWS calls: AWS JSON 1.1 ([`call`](Self::call), the protocol of SSM and
/// Secrets Manager) and Lambda's asynchronous Invoke ([`invoke_event`](Self::invoke_event)).
#[derive(Clone)]
pub(crate) struct SignedJsonClient {
    sdk: SdkConfig,
    client: HttpsClient,
    timeouts: AwsTimeouts,
}

impl std::fmt::Debug for SignedJsonClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedJsonClient")
            .field("region", &self.sdk.region())
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}

impl SignedJsonClient {
    /// A client on `sdk`'s credentials and region; fails now when there are no credentials.
    pub(crate) async fn new(sdk: &SdkConfig, timeouts: &AwsTimeouts) -> Result<Self, String> {
        let this = Self::unchecked(sdk, timeouts);
        this.credentials().await.map_err(|e| e.to_string())?;
        Ok(this)
    }

    /// A client whose credentials are looked up at each call.
    pub(crate) fn unchecked(sdk: &SdkConfig, timeouts: &AwsTimeouts) -> Self {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(timeouts.connect));
        http.enforce_http(false);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_webpki_roots()
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        Self {
            sdk: sdk.clone(),
            client: Client::builder(TokioExecutor::new()).build(connector),
            timeouts: *timeouts,
        }
    }

    /// The provider's current credentials (the SDK's providers refresh them as they expire).
    async fn credentials(&self) -> Result<Credentials, AwsCallError> {
        let provider = self.sdk.credentials_provider().ok_or_else(|| {
            AwsCallError::Transport(
                "no AWS credentials provider (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, \
                 or run with a role)"
                    .into(),
            )
        })?;
        tokio::time::timeout(self.timeouts.operation, provider.provide_credentials())
            .await
            .map_err(|_| {
                AwsCallError::Transport("no AWS credentials within the operation timeout".into())
            })?
            .map_err(|e| AwsCallError::Transport(format!("no AWS credentials: {e}")))
    }

    fn region_for(&self, resource: &str) -> Result<String, AwsCallError> {
        match parse_arn(resource) {
            Some(_) => resource.split(':').nth(3).map(str::to_owned),
            None => self.sdk.region().map(|r| r.to_string()),
        }
        .ok_or_else(|| {
            AwsCallError::Transport("no AWS region: set AWS_REGION (Lambda sets it)".into())
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
        let region = self.region_for(resource)?;
        let endpoint = self.endpoint(service_id, signing_name, &region);
        let body = serde_json::to_vec(&body).expect("JSON values serialize");
        let request = Signed {
            method: http::Method::POST,
            path: "/",
            headers: &[
                ("content-type", "application/x-amz-json-1.1"),
                ("x-amz-target", target),
            ],
            body: &body,
        };
        let (status, bytes) = self
            .with_retries(
                &endpoint,
                signing_name,
                &region,
                &request,
                |status, bytes| json_error(&endpoint, status, bytes),
            )
            .await?;
        serde_json::from_slice(&bytes).map_err(|_| {
            AwsCallError::Transport(format!(
                "{endpoint} answered {status} with a body that is not JSON"
            ))
        })
    }

    /// Lambda's asynchronous Invoke (`InvocationType: Event`) of `function` (a name or an ARN)
    /// with `payload`: `POST /2015-03-31/functions/{function}/invocations`, answered 202 once
    /// Lambda has queued the event
    /// (<https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html>).
    #[cfg_attr(not(feature = "dynamodb"), allow(dead_code))] // used by tasks::Dispatch::Lambda
    pub(crate) async fn invoke_event(
        &self,
        function: &str,
        payload: &[u8],
    ) -> Result<(), AwsCallError> {
        let region = self.region_for(function)?;
        let endpoint = self.endpoint("Lambda", "lambda", &region);
        let path = format!(
            "/2015-03-31/functions/{}/invocations",
            percent_encode(function)
        );
        let request = Signed {
            method: http::Method::POST,
            path: &path,
            headers: &[
                ("content-type", "application/json"),
                ("x-amz-invocation-type", "Event"),
            ],
            body: payload,
        };
        let (status, bytes) = self
            .with_retries(&endpoint, "lambda", &region, &request, |status, bytes| {
                if status == http::StatusCode::ACCEPTED {
                    return None;
                }
                Some(json_error(&endpoint, status, bytes).unwrap_or_else(|| {
                    AwsCallError::Service {
                        code: format!("HTTP {status}"),
                        message: "Invoke (Event) answered without queuing the event".into(),
                    }
                }))
            })
            .await?;
        debug_assert_eq!(status, http::StatusCode::ACCEPTED, "{bytes:?}");
        Ok(())
    }

    /// Sends `request` until it succeeds (`refusal` says it did not), a failure is not
    /// transient, or the attempts or the operation timeout run out.
    async fn with_retries(
        &self,
        endpoint: &str,
        signing_name: &str,
        region: &str,
        request: &Signed<'_>,
        refusal: impl Fn(http::StatusCode, &[u8]) -> Option<AwsCallError>,
    ) -> Result<(http::StatusCode, Bytes), AwsCallError> {
        let attempts = async {
            let mut attempt = 0u32;
            loop {
                attempt += 1;
                let result = tokio::time::timeout(
                    self.timeouts.connect + self.timeouts.read,
                    self.once(endpoint, signing_name, region, request),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(AwsCallError::Transport(format!(
                        "no answer from {endpoint} within {} ms",
                        (self.timeouts.connect + self.timeouts.read).as_millis()
                    )))
                })
                .and_then(|(status, bytes)| match refusal(status, &bytes) {
                    Some(error) => Err(error),
                    None => Ok((status, bytes)),
                });
                let retry = match &result {
                    Err(AwsCallError::Transport(_)) => true,
                    Err(AwsCallError::Service { code, .. }) => {
                        code.contains("Throttl")
                            || code.contains("InternalServer")
                            || code.contains("ServiceException")
                            || code.starts_with("HTTP 5")
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

    /// Signs and sends `request` once; the status and body, whatever the status.
    async fn once(
        &self,
        endpoint: &str,
        signing_name: &str,
        region: &str,
        request: &Signed<'_>,
    ) -> Result<(http::StatusCode, Bytes), AwsCallError> {
        use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
        use aws_sigv4::sign::v4;

        let uri = format!("{}{}", endpoint.trim_end_matches('/'), request.path);
        let mut builder = http::Request::builder()
            .method(request.method.clone())
            .uri(&uri);
        for (name, value) in request.headers {
            builder = builder.header(*name, *value);
        }
        let mut http_request = builder
            .body(Full::new(Bytes::copy_from_slice(request.body)))
            .map_err(|e| AwsCallError::Transport(format!("bad endpoint {endpoint}: {e}")))?;

        let identity = self.credentials().await?.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(region)
            .name(signing_name)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|e| AwsCallError::Transport(format!("cannot sign: {e}")))?
            .into();
        let headers = http_request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        let signable = SignableRequest::new(
            request.method.as_str(),
            uri.clone(),
            headers,
            SignableBody::Bytes(request.body),
        )
        .map_err(|e| AwsCallError::Transport(format!("cannot sign: {e}")))?;
        let (instructions, _) = sign(signable, &params)
            .map_err(|e| AwsCallError::Transport(format!("cannot sign: {e}")))?
            .into_parts();
        instructions.apply_to_request_http1x(&mut http_request);

        let response = self
            .client
            .request(http_request)
            .await
            .map_err(|e| AwsCallError::Transport(format!("cannot reach {endpoint}: {e}")))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| AwsCallError::Transport(format!("answer from {endpoint} cut: {e}")))?
            .to_bytes();
        Ok((status, bytes))
    }
}

/// `None` for a success; otherwise AWS's error, from its JSON body (`__type`, `message`).
fn json_error(endpoint: &str, status: http::StatusCode, bytes: &[u8]) -> Option<AwsCallError> {
    if status.is_success() {
        return None;
    }
    let Ok(json) = serde_json::from_slice::<Value>(bytes) else {
        return Some(AwsCallError::Transport(format!(
            "{endpoint} answered {status} with a body that is not JSON"
        )));
    };
    let code = json["__type"]
        .as_str()
        .map(|t| t.rsplit('#').next().unwrap_or(t).to_string())
        .unwrap_or_else(|| format!("HTTP {status}"));
    let message = json["message"]
        .as_str()
        .or(json["Message"].as_str())
        .unwrap_or("")
        .to_string();
    Some(AwsCallError::Service { code, message })
}

/// A path segment, percent-encoded (RFC 3986 unreserved characters stay as they are; an ARN's
/// `:` becomes `%3A`).
#[cfg_attr(not(feature = "dynamodb"), allow(dead_code))] // used by tasks::Dispatch::Lambda
fn percent_encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn function_names_and_arns_are_one_path_segment() {
        assert_eq!(super::percent_encode("mcp-fn_1"), "mcp-fn_1");
        assert_eq!(
            super::percent_encode("arn:aws:lambda:us-east-1:123456789012:function:mcp"),
            "arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Amcp"
        );
    }
}
