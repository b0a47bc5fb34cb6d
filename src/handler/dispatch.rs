//! One in-process dispatch: rmcp's handler dispatch (`Service::handle_request`, where rmcp
//! checks the version and the `_meta` and routes the method) called with a typed request, its
//! [`RequestContext`] and a peer, without rmcp's HTTP service or a service loop per request.
//!
//! Three callers, one way in:
//! - the HTTP front's fast path (`http/direct.rs`: which requests may take it, reading the body,
//!   writing the answer), with a peer whose transport is closed (MCP 2026-07-28: no message
//!   but the answer for a request that asked for no stream);
//! - a task's round ([`Rounds`], the engine's [`ToolRunner`]): the `tools/call` the task runs,
//!   as its caller, marked [`RoundInProcess`], with a peer that hands each progress
//!   notification to the engine — no HTTP request built, no SSE read back;
//! - the list probe at start-up (`McpService::probe_lists`).
//!
//! The context is built as rmcp's service loop builds it (`serve_inner`'s request arm): the
//! request's `_meta` and extensions moved into it, the HTTP request's [`Parts`] among them (the
//! one way down to the handler, `request_scope.rs`), a cancellation token cancelled once the
//! answer is in. rmcp's peers come only from a service loop it runs: the two peers here are
//! `rmcp_gaps`' ([`rmcp_gaps::closed_peer`], [`rmcp_gaps::PeerLoop`]).
//!
//! Not carried over: rmcp's task-locals naming the request a handler serves (`pub(crate)` in
//! rmcp). They tag server-to-client requests, which 2026-07-28 forbids (the peer refuses them
//! by its version anyway), and rmcp's own task manager, which the tasks extension here does not
//! use (`crate::tasks`).

use std::{
    future::Future,
    panic::AssertUnwindSafe,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use futures::future::{BoxFuture, FutureExt as _};
use http::request::Parts;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequest, ClientRequest, GetExtensions as _, GetMeta as _, RequestId,
        ServerNotification, ServerResult,
    },
    service::{Peer, RequestContext, Service as _},
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Hosted;
use crate::auth::{Caller, Principal};
use crate::rmcp_gaps;
use crate::tasks::{RoundInProcess, RoundOutput, ToolRunner};

/// Makes the wrapped handler for one request, as rmcp's service factory does.
pub(crate) type MakeHosted<H> = Arc<dyn Fn() -> Hosted<H> + Send + Sync>;

/// What the handler's dispatch answered: its result or error, or `Err` when it panicked (rmcp's
/// service then gets no message).
pub(crate) type Answer = Result<Result<ServerResult, ErrorData>, Box<dyn std::any::Any + Send>>;

/// The handler factory and the closed peer every fast-path context gets (made on first use: it
/// needs the runtime).
pub(crate) struct InProcess<H> {
    make: MakeHosted<H>,
    closed: tokio::sync::OnceCell<Peer<RoleServer>>,
}

impl<H: ServerHandler> InProcess<H> {
    /// The dispatch of the handlers `make` makes.
    pub(crate) fn new(make: MakeHosted<H>) -> Self {
        Self {
            make,
            closed: tokio::sync::OnceCell::new(),
        }
    }

    /// The wrapped handler for one request.
    pub(crate) fn handler(&self) -> Hosted<H> {
        (self.make)()
    }

    /// A peer whose transport is closed: a handler that sends a message anyway gets rmcp's
    /// `TransportClosed`.
    pub(crate) async fn closed_peer(&self) -> Peer<RoleServer> {
        self.closed
            .get_or_init(rmcp_gaps::closed_peer)
            .await
            .clone()
    }

    /// Runs `request` (id `id`, arrived with `parts`) through `service`'s dispatch, polled in
    /// place; if the answer is dropped first, its token is cancelled and it runs on in a task
    /// of its own, as rmcp runs every handler ([`RunsToEnd`]).
    pub(crate) async fn call(
        service: Hosted<H>,
        id: RequestId,
        mut request: ClientRequest,
        parts: Parts,
        peer: Peer<RoleServer>,
    ) -> Answer {
        // As rmcp's service loop: the parts ride in the request's extensions, then `_meta`
        // and the extensions move into the context.
        request.extensions_mut().insert(parts);
        let mut context = RequestContext::new(id.clone(), peer);
        std::mem::swap(&mut context.meta, request.get_meta_mut());
        std::mem::swap(&mut context.extensions, request.extensions_mut());
        let cancel = CancellationToken::new();
        context.ct = cancel.child_token();
        let handled = RunsToEnd {
            handler: Some(Box::pin(async move {
                service.handle_request(request, context).await
            })),
            cancel: cancel.clone(),
        };
        // rmcp cancels the request's token once it has answered, too.
        let _cancel_on_exit = cancel.drop_guard();
        let answer = handled.await;
        if let Ok(Err(error)) = &answer {
            log_fault(&id, error);
        }
        answer
    }
}

/// The handler's future, polled in place rather than in a task of its own; if the answer is
/// dropped before the handler is done (a client gone), the request's token is cancelled and the
/// rest of the handler runs on in a task, as rmcp runs every handler. A panic in the handler is
/// its answer (`Err`), as a task's would be.
///
/// rmcp spawns a task per handler; on the local server's multi-threaded runtime that task may
/// wake the other worker, and every request pays for it (benches/history/issue-32.md).
struct RunsToEnd<T: Send + 'static> {
    handler: Option<BoxFuture<'static, T>>,
    cancel: CancellationToken,
}

impl<T: Send + 'static> Future for RunsToEnd<T> {
    type Output = Result<T, Box<dyn std::any::Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(handler) = self.handler.as_mut() else {
            return Poll::Pending;
        };
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| handler.as_mut().poll(cx)));
        let answer = match polled {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(answer)) => Ok(answer),
            Err(panic) => Err(panic),
        };
        // Done, or a future that panicked and may not be polled again: nothing left to run.
        self.handler = None;
        Poll::Ready(answer)
    }
}

impl<T: Send + 'static> Drop for RunsToEnd<T> {
    fn drop(&mut self) {
        if let Some(handler) = self.handler.take() {
            self.cancel.cancel();
            // Outside a runtime (one shutting down) there is nowhere to run it: it is dropped.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(handler);
            }
        }
    }
}

/// rmcp's warn on an error answer (`response error`), for a server's fault only: a client's
/// refusal is noted by the handler at info (`rmcp_gaps::QuietRefusals` keeps rmcp's own line
/// for it out). The code and message, never the data, which may echo arguments.
fn log_fault(id: &RequestId, error: &ErrorData) {
    if !rmcp_gaps::is_client_refusal(error.code.0) {
        tracing::warn!(%id, code = error.code.0, message = %error.message, "response error");
    }
}

/// A task's rounds, run through [`InProcess`]: the engine's [`ToolRunner`].
///
/// The front's checks already ran when the task was accepted (the caller was authorized then
/// and is the task's owner); the round carries that caller and a [`RoundInProcess`] mark, so
/// the wrapper runs the tool as it is instead of making it a task again, and drops the tool's
/// future when the engine stops the round.
pub(crate) struct Rounds<H>(pub(crate) Arc<InProcess<H>>);

impl<H: ServerHandler> ToolRunner for Rounds<H> {
    fn run_round(
        &self,
        params: Value,
        caller: Option<Principal>,
        progress: Box<dyn Fn(String) + Send + Sync>,
        stop: CancellationToken,
    ) -> BoxFuture<'static, RoundOutput> {
        let dispatch = self.0.clone();
        async move {
            let request = match serde_json::from_value::<CallToolRequest>(
                json!({"method": "tools/call", "params": params}),
            ) {
                Ok(request) => ClientRequest::CallToolRequest(request),
                Err(error) => return failed(&format!("the task's call does not decode: {error}")),
            };
            let (mut parts, ()) = http::Request::new(()).into_parts();
            parts.method = http::Method::POST;
            parts.extensions.insert(RoundInProcess { stop });
            parts.extensions.insert(Caller::from(caller));
            // Each progress notification the tool sends, as the task's status line.
            let peer = rmcp_gaps::PeerLoop::forwarding(move |notification| {
                if let ServerNotification::ProgressNotification(sent) = notification {
                    let params = &sent.params;
                    progress(match (&params.message, params.total) {
                        (Some(message), _) => message.clone(),
                        (None, Some(total)) => format!("{} of {total}", params.progress),
                        (None, None) => format!("{}", params.progress),
                    });
                }
            });
            let answer = InProcess::call(
                dispatch.handler(),
                RequestId::String("task-round".into()),
                request,
                parts,
                peer.peer().clone(),
            )
            .await;
            // Every notification was handed over before the handler answered (a send waits
            // for the transport): the loop may end.
            drop(peer);
            match answer {
                Ok(Ok(result)) => output_of(serde_json::to_value(result).unwrap_or(Value::Null)),
                Ok(Err(error)) => RoundOutput::Error(serde_json::to_value(error).unwrap_or_else(
                    |_| json!({"code": -32603, "message": "the tool's error could not be read"}),
                )),
                Err(_) => failed("the tool round ended without an answer"),
            }
        }
        .boxed()
    }
}

fn failed(why: &str) -> RoundOutput {
    RoundOutput::Error(json!({"code": -32603, "message": why}))
}

/// A round's result: `input_required` parks the task; anything else completes it.
fn output_of(mut result: Value) -> RoundOutput {
    if result["resultType"] == "input_required" {
        return RoundOutput::InputRequired {
            requests: result["inputRequests"].take(),
            request_state: result["requestState"].as_str().map(str::to_owned),
        };
    }
    RoundOutput::Completed(result)
}
