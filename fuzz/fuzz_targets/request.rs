//! Fuzzes the whole request path in-process: the HTTP front (routes, limits,
//! envelope checks, refusals, cache headers), rmcp's decoding and dispatch,
//! and the basket's tools over the in-memory handle store — the same
//! `McpService` the local server and Lambda call.
//!
//! Input: one flags byte, then an optional head, then the body.
//!
//! ```text
//! [flags] [line "\n" line "\n" ... "\n\n"] [body]
//! ```
//!
//! Head lines are `Name: value` headers, or `:method X` / `:path Y`. Without
//! a blank line the whole rest is the body. Flags help the fuzzer past the
//! header checks to the deeper layers:
//!
//! | bit | adds (when absent) |
//! |---|---|
//! | 0x01 | `Content-Type: application/json` |
//! | 0x02 | `MCP-Protocol-Version: 2026-07-28` |
//! | 0x04 | `Mcp-Method` copied from the body's `method` |
//! | 0x08 | `Mcp-Name` copied from `params.name` / `params.uri` |
//! | 0x10 | a valid `params._meta` in the body |
//! | 0x20 | `Accept: application/json, text/event-stream` |
//!
//! A crash is a panic anywhere (libFuzzer aborts on it, tokio tasks too), a
//! 5xx, or an answer that breaks the contract: a JSON body that is not one
//! JSON-RPC response, an error without an integer code, a POST answer on the
//! MCP path without `Cache-Control`.
#![no_main]

use std::{collections::HashMap, sync::OnceLock, time::Duration};

use basket::Basket;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use libfuzzer_sys::fuzz_target;
use mcp_lambda::{App, Config, McpService};
use serde_json::Value;
use tower::ServiceExt as _;

struct Harness {
    runtime: tokio::runtime::Runtime,
    service: McpService<Basket>,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let vars: HashMap<&str, &str> = HashMap::from([
            // A fixed key: cursors and requestState stay reproducible.
            (
                "MCP_REQUEST_STATE_KEY",
                "aw9C5Pf6gzD8Za8qaDXAJvlBHm0BKpbS1aXWFQoBUpE=",
            ),
            ("MCP_PAGE_SIZE", "2"),
            // Baskets expire fast, so the store's sweep keeps memory flat.
            ("MCP_HANDLE_TTL_SECS", "1"),
            ("MCP_MAX_BODY_BYTES", "65536"),
            ("MCP_LOG", "off"),
        ]);
        let config =
            Config::from_lookup(|name| vars.get(name).map(|v| v.to_string())).expect("config");
        let baskets = mcp_lambda::handles::Handles::new(
            mcp_lambda::handles::memory(),
            basket::KIND,
            config.handles().ttl,
        );
        let service = runtime.block_on(async {
            App::new(config)
                .resource(basket::resource::resource(&baskets))
                .server(Basket::new(baskets))
                .service()
        });
        Harness { runtime, service }
    })
}

/// `FUZZ_TRACE=1`: print each answer (to check what the seeds reach).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("FUZZ_TRACE").is_some())
}

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn build(data: &[u8]) -> Option<http::Request<Full<Bytes>>> {
    let (&flags, rest) = data.split_first()?;
    let (head, body) = match rest.windows(2).position(|w| w == b"\n\n") {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (&[][..], rest),
    };
    let mut method = "POST".to_string();
    let mut path = "/mcp".to_string();
    let mut headers = http::HeaderMap::new();
    for line in head.split(|b| *b == b'\n') {
        if let Some(m) = line.strip_prefix(b":method ") {
            method = String::from_utf8_lossy(m).into_owned();
        } else if let Some(p) = line.strip_prefix(b":path ") {
            path = String::from_utf8_lossy(p).into_owned();
        } else if let Some(colon) = line.iter().position(|b| *b == b':') {
            let name = http::HeaderName::from_bytes(&line[..colon]);
            let value = http::HeaderValue::from_bytes(line[colon + 1..].trim_ascii());
            if let (Ok(name), Ok(value)) = (name, value) {
                headers.append(name, value);
            }
        }
    }
    let mut body = body.to_vec();
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    if flags & 0x10 != 0
        && let Some(mut value) = parsed.clone()
        && let Some(params) = value.get_mut("params").and_then(Value::as_object_mut)
        && !params.contains_key("_meta")
    {
        params.insert("_meta".into(), serde_json::from_str(META).unwrap());
        body = serde_json::to_vec(&value).unwrap();
    }
    let mut add = |bit: u8, name: &'static str, value: Option<&str>| {
        if flags & bit != 0
            && !headers.contains_key(name)
            && let Some(value) = value.and_then(|v| http::HeaderValue::from_str(v).ok())
        {
            headers.insert(name, value);
        }
    };
    add(0x01, "content-type", Some("application/json"));
    add(0x02, "mcp-protocol-version", Some("2026-07-28"));
    let field = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let body_method = parsed.as_ref().and_then(|v| field(v, "method"));
    add(0x04, "mcp-method", body_method.as_deref());
    let name = parsed
        .as_ref()
        .and_then(|v| v.get("params"))
        .and_then(|p| field(p, "name").or_else(|| field(p, "uri")));
    add(0x08, "mcp-name", name.as_deref());
    add(0x20, "accept", Some("application/json, text/event-stream"));
    if !headers.contains_key(http::header::HOST) {
        headers.insert(
            http::header::HOST,
            http::HeaderValue::from_static("127.0.0.1"),
        );
    }
    let mut request = http::Request::builder()
        .method(method.as_str())
        .uri(format!("http://127.0.0.1{path}"))
        .body(Full::new(Bytes::from(body)))
        .ok()?;
    *request.headers_mut() = headers;
    Some(request)
}

fuzz_target!(|data: &[u8]| {
    let Some(request) = build(data) else {
        return;
    };
    let on_mcp_post = request.method() == http::Method::POST && request.uri().path() == "/mcp";
    let harness = harness();
    let (status, headers, bytes) = harness.runtime.block_on(async {
        let response = tokio::time::timeout(
            Duration::from_secs(10),
            harness.service.clone().oneshot(request),
        )
        .await
        .expect("the service answered within 10 s")
        .unwrap_or_else(|never| match never {});
        let (parts, body) = response.into_parts();
        let bytes = tokio::time::timeout(Duration::from_secs(10), body.collect())
            .await
            .expect("the body ended within 10 s")
            .map(|c| c.to_bytes())
            .unwrap_or_else(|never| match never {});
        (parts.status, parts.headers, bytes)
    });
    if trace() {
        eprintln!(
            "{status} {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(160)])
        );
    }
    assert!(
        !status.is_server_error(),
        "{status}: {}",
        String::from_utf8_lossy(&bytes)
    );
    let is_json = headers
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json && on_mcp_post {
        let value: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{status} JSON answer does not parse ({e}): {:?}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert_eq!(value["jsonrpc"], "2.0", "{value}");
        assert!(
            value.get("result").is_some() != value.get("error").is_some(),
            "exactly one of result and error: {value}"
        );
        if let Some(error) = value.get("error") {
            assert!(error["code"].is_i64(), "{value}");
            assert!(error["message"].is_string(), "{value}");
        }
    }
    if on_mcp_post && status != http::StatusCode::ACCEPTED && (is_json || status.is_success()) {
        assert!(
            headers.contains_key(http::header::CACHE_CONTROL),
            "{status} answer without Cache-Control: {headers:?}"
        );
    }
});
