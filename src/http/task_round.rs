//! A task worker's round: the `tools/call` a task runs, sent through rmcp in process.
//!
//! The front's checks already ran when the task was accepted (the caller was authorized then
//! and is the task's owner); the round carries that caller and a [`TaskRound`] mark, so the
//! wrapper runs the tool as it is instead of making it a task again.

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt};
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use rmcp::ServerHandler;
use serde_json::{Value, json};

use super::McpService;
use crate::auth::Principal;
use crate::handler::TaskRound;
use crate::tasks::{RoundOutput, ToolRunner};

impl<H: ServerHandler> ToolRunner for McpService<H> {
    fn run_round(
        &self,
        params: Value,
        caller: Option<Principal>,
        progress: Box<dyn Fn(String) + Send + Sync>,
    ) -> BoxFuture<'static, RoundOutput> {
        let service = self.clone();
        async move {
            let name = params["name"].as_str().unwrap_or_default().to_owned();
            let body = json!({"jsonrpc": "2.0", "id": "task-round", "method": "tools/call", "params": params});
            let host = service.host_for_internal_requests();
            let mut request = match Request::post(service.path())
                .header(header::HOST, host)
                .header(header::CONTENT_TYPE, "application/json")
                .header(header::ACCEPT, "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", name)
                .body(Full::new(Bytes::from(body.to_string())))
            {
                Ok(request) => request,
                Err(error) => return failed(&error.to_string()),
            };
            request.extensions_mut().insert(TaskRound);
            if let Some(caller) = caller {
                request.extensions_mut().insert(caller);
            }
            let response = service.rmcp_handle(request).await;
            let sse = response
                .headers()
                .get(header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            let mut body = response.into_body();
            let mut last: Option<Value> = None;
            let mut buffer = String::new();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else { continue };
                buffer.push_str(&String::from_utf8_lossy(&data));
                if !sse {
                    continue;
                }
                while let Some(end) = buffer.find("\n\n") {
                    let event: String = buffer.drain(..end + 2).collect();
                    let data: String = event
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim_start)
                        .collect();
                    let Ok(message) = serde_json::from_str::<Value>(&data) else { continue };
                    if message["method"] == "notifications/progress" {
                        let params = &message["params"];
                        let text = params["message"].as_str().map(str::to_owned).unwrap_or_else(|| {
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
            }
            if !sse {
                last = serde_json::from_str(&buffer).ok();
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
