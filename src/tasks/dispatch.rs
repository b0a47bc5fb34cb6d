//! How a round reaches a worker: on this process's runtime, or handed to the Lambda service
//! as an asynchronous invocation of this function.

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
use std::sync::Arc;

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
use serde_json::{Value, json};

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
use super::now_ms;

/// How a round reaches a worker.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Dispatch {
    /// On this process's runtime (the local server; tests).
    Local,
    /// Handed to the Lambda service: an asynchronous invocation (`InvocationType: Event`) of
    /// this same function, whose event is a Function URL request for `POST <MCP_PATH>` carrying
    /// the round's token in `x-mcp-task-round`. The invocation that accepted the task answers at
    /// once; the worker invocation runs the round until its own deadline.
    #[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
    Lambda(LambdaDispatch),
}

/// Where [`Dispatch::Lambda`] sends rounds: the function and a signed client for its Invoke.
#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
#[derive(Debug, Clone)]
pub struct LambdaDispatch {
    /// The function to invoke (a name or an ARN): this one, `AWS_LAMBDA_FUNCTION_NAME`.
    pub(super) function: String,
    pub(super) client: Arc<crate::aws::signed::SignedJsonClient>,
}

#[cfg(all(feature = "dynamodb", feature = "aws-secrets"))]
impl LambdaDispatch {
    /// Rounds go to `function` (a name or an ARN), signed with `sdk`'s credentials; the
    /// endpoint follows `AWS_ENDPOINT_URL_LAMBDA`.
    pub fn new(
        function: impl Into<String>,
        sdk: &aws_config::SdkConfig,
        timeouts: &crate::aws::AwsTimeouts,
    ) -> Self {
        Self {
            function: function.into(),
            client: Arc::new(crate::aws::signed::SignedJsonClient::unchecked(
                sdk, timeouts,
            )),
        }
    }

    /// The event a worker invocation receives: a Function URL (payload 2.0) `POST <path>`.
    pub(super) fn event(path: &str, token: &str, task_id: &str, round: u32) -> Value {
        let body = json!({ "taskId": task_id, "round": round }).to_string();
        let now = now_ms();
        json!({
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": "",
            "headers": {
                "content-type": "application/json",
                "host": "localhost",
                super::round_token::HEADER: token,
            },
            "requestContext": {
                "accountId": "self",
                "apiId": "self",
                "domainName": "localhost",
                "domainPrefix": "localhost",
                "http": {
                    "method": "POST",
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": "mcp-lambda-task-round",
                },
                "requestId": format!("task-round-{task_id}-{round}"),
                "routeKey": "$default",
                "stage": "$default",
                "time": "",
                "timeEpoch": now,
            },
            "isBase64Encoded": false,
            "body": body,
        })
    }
}
