//! The core crate `cargo pmcp new` generates (`mcp-<name>-core`: `build_<name>_server()`, its
//! typed inputs with schemars schemas), with the three tools of benches/servers/lambda_peer.rs in
//! place of the template's `add`, and the one call pmcp's README ("Protocol Versions") asks of a
//! server to answer 2026-07-28 requests besides 2025-11-25 ones (the default is 2025 only).

use pmcp::types::capabilities::ServerCapabilities;
use pmcp::types::protocol::PROTOCOL_VERSION_2026_07_28;
use pmcp::types::ProtocolVersion;
use pmcp::{Server, TypedTool, LATEST_PROTOCOL_VERSION};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Input of `echo`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct EchoInput {
    /// The text to send back.
    pub message: String,
}

/// Input of `reverse` and `count`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct TextInput {
    /// The text to work on.
    pub text: String,
}

/// A tool's answer: pmcp wraps the value in one text content item.
fn text(text: String) -> serde_json::Value {
    json!(text)
}

/// Build the peer server
pub fn build_peer_server() -> pmcp::Result<Server> {
    Server::builder()
        .name("peer")
        .version("1.0.0")
        .capabilities(ServerCapabilities::tools_only())
        .with_supported_protocol_versions([
            ProtocolVersion(LATEST_PROTOCOL_VERSION.to_string()),
            ProtocolVersion(PROTOCOL_VERSION_2026_07_28.to_string()),
        ])
        .tool(
            "echo",
            TypedTool::new("echo", |input: EchoInput, _extra| {
                Box::pin(async move { Ok(text(input.message)) })
            })
            .with_description("Send back the message"),
        )
        .tool(
            "reverse",
            TypedTool::new("reverse", |input: TextInput, _extra| {
                Box::pin(async move { Ok(text(input.text.chars().rev().collect())) })
            })
            .with_description("Reverse the text, character by character"),
        )
        .tool(
            "count",
            TypedTool::new("count", |input: TextInput, _extra| {
                Box::pin(async move { Ok(text(input.text.chars().count().to_string())) })
            })
            .with_description("Count the text's characters"),
        )
        .build()
}
