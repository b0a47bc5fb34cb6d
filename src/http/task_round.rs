//! A task worker's round: the `tools/call` a task runs, sent through rmcp in process.
//!
//! The front's checks already ran when the task was accepted (the caller was authorized then
//! and is the task's owner); the round carries that caller and a [`RoundInProcess`] mark, so the
//! wrapper runs the tool as it is instead of making it a task again, and drops the tool's future
//! when the engine stops the round.

use futures::future::{BoxFuture, FutureExt};
use http::header;
use rmcp::ServerHandler;
use serde_json::{Value, json};

use super::{McpService, in_process};
use crate::auth::{Caller, Principal};
use crate::tasks::{RoundInProcess, RoundOutput, ToolRunner};

impl<H: ServerHandler> ToolRunner for McpService<H> {
    fn run_round(
        &self,
        params: Value,
        caller: Option<Principal>,
        progress: Box<dyn Fn(String) + Send + Sync>,
        stop: tokio_util::sync::CancellationToken,
    ) -> BoxFuture<'static, RoundOutput> {
        let service = self.clone();
        async move {
            let host = service.host_for_internal_requests();
            let mut request = match in_process::request(
                service.path(),
                &host,
                json!("task-round"),
                "tools/call",
                params,
            ) {
                Ok(request) => request,
                Err(error) => return failed(&error.to_string()),
            };
            request.extensions_mut().insert(RoundInProcess { stop });
            request.extensions_mut().insert(Caller::from(caller));
            let response = service.rmcp_handle(request).await;
            let (parts, body) = response.into_parts();
            let mut messages =
                in_process::Messages::new(parts.headers.get(header::CONTENT_TYPE), body);
            let mut last: Option<Value> = None;
            while let Some(message) = messages.next().await {
                if message["method"] == "notifications/progress" {
                    let params = &message["params"];
                    let text = params["message"]
                        .as_str()
                        .map(str::to_owned)
                        .unwrap_or_else(|| {
                            match (params["progress"].as_f64(), params["total"].as_f64()) {
                                (Some(p), Some(t)) => format!("{p} of {t}"),
                                (Some(p), None) => format!("{p}"),
                                _ => "working".into(),
                            }
                        });
                    progress(text);
                } else if message.get("id").is_some() {
                    last = Some(message);
                }
            }
            match last {
                Some(message) => output_of(message),
                None => failed("the tool round ended without an answer"),
            }
        }
        .boxed()
    }
}

fn failed(why: &str) -> RoundOutput {
    RoundOutput::Error(json!({"code": -32603, "message": why}))
}

fn output_of(mut message: Value) -> RoundOutput {
    if let Some(error) = message.get_mut("error") {
        return RoundOutput::Error(error.take());
    }
    let mut result = message["result"].take();
    if result["resultType"] == "input_required" {
        return RoundOutput::InputRequired {
            requests: result["inputRequests"].take(),
            request_state: result["requestState"].as_str().map(str::to_owned),
        };
    }
    RoundOutput::Completed(result)
}
