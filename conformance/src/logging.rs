//! Log messages to the client. A stateless server keeps no `logging/setLevel` state, so the
//! level each request may receive is read from the request itself.

use rmcp::{
    RoleServer,
    model::{
        LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion, SetLevelRequestParams,
    },
    service::RequestContext,
};
use serde_json::json;

/// Sends a `notifications/message` if this request may receive one: at 2026-07-28 only when
/// `_meta["io.modelcontextprotocol/logLevel"]` is set and `level` reaches it; legacy requests
/// always.
pub(crate) async fn log(context: &RequestContext<RoleServer>, level: LoggingLevel, message: &str) {
    let allowed = if is_modern(context) {
        context
            .meta
            .log_level()
            .is_some_and(|minimum| level as u8 >= minimum as u8)
    } else {
        true
    };
    if allowed {
        let _ = context
            .peer
            .notify_logging_message(
                LoggingMessageNotificationParam::new(level, json!(message))
                    .with_logger("conformance-server"),
            )
            .await;
    }
}

/// `logging/setLevel`: legacy only (rmcp answers -32601 at 2026-07-28, where the level travels
/// in `_meta`). Nothing is kept: legacy requests log at info and above.
pub(crate) fn set_level(request: &SetLevelRequestParams) {
    tracing::debug!(level = ?request.level, "logging/setLevel");
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}
