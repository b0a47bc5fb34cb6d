//! The JSON-RPC and MCP envelope checks that run before rmcp.
//!
//! rmcp 3.11 validates the 2026-07-28 envelope too, but in another order and,
//! for some faults, with plain-text bodies (`rmcp_gaps.rs`). These checks run
//! first and answer in the reference order of MCP 2026-07-28 §3:
//! 1. no `MCP-Protocol-Version` → -32020;
//! 2. `_meta` `protocolVersion`/`clientCapabilities` missing → -32602;
//! 3. header version ≠ `_meta` version → -32020;
//! 4. unsupported version → -32022 with `supported`/`requested`;
//! 5. `Mcp-Method`/`Mcp-Name` missing or ≠ body → -32020;
//! 6. methods removed in 2026-07-28 (`initialize`, `ping`, …) → 404, -32601.
//!
//! A request is *legacy* (2025-era, served statelessly by rmcp) when its
//! `_meta` has no protocol version and its header is absent or names a
//! 2025-era revision; it then skips the header checks.
//!
//! Before any of that, a body that repeats a key in any object is refused
//! (-32600): every layer must read the same request, and parsers disagree on
//! which duplicate wins. After it, every request that passed is decoded the way
//! rmcp will decode it, so what rmcp would refuse with a plain-text 415, or
//! quietly turn into an unknown method (-32601) or drop (a list `cursor` of the
//! wrong type), is refused here instead: -32600 for an unreadable message,
//! -32602 for `params` that do not fit the method's schema.

use base64::{Engine as _, engine::general_purpose::STANDARD};
use http::HeaderMap;
use serde_json::{Map, Value};

use super::refusal::Rejection;
use super::strict_json::StrictValue;
use crate::rmcp_gaps;

const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
const LEGACY_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const REMOVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// Which protocol era a request belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2026-07-28: self-describing, stateless.
    Modern,
    /// 2025-era `initialize` lifecycle.
    Legacy,
}

/// What the front learned from a request that passed.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The JSON-RPC method; `None` never happens for requests that pass.
    pub(crate) method: String,
    /// `params.name` of `tools/call` and `prompts/get`, `params.uri` of `resources/read`.
    pub(crate) name: Option<String>,
    pub(crate) era: Era,
    /// The request id, to echo in a refusal made after rmcp answered.
    pub(crate) id: Option<Value>,
    /// Whether the body had `params`.
    pub(crate) has_params: bool,
    /// The message as parsed, without its id, kept for a 2026-07-28 request: the steps after
    /// this that read more of the body read it here instead of parsing the body again, and
    /// take it out (`listen.rs` the listen filter, `direct.rs` the request it decodes, which
    /// moves its strings instead of copying them). Every other request frees it here, as soon
    /// as it is checked.
    pub(crate) message: Option<Map<String, Value>>,
}

/// A POST body read as one JSON object, parsed once refusing a repeated key, with its id
/// taken out: what the rest of the front reads instead of parsing the body again.
#[derive(Debug)]
pub(crate) struct Message {
    /// The request id, to echo in any refusal from here on.
    pub(crate) id: Option<Value>,
    /// The message without its id.
    object: Map<String, Value>,
}

/// Reads one POST body: JSON (-32700), not a batch, an object whose id is a string or an
/// i64 (-32600).
pub(crate) fn read(body: &[u8]) -> Result<Message, Rejection> {
    let value = match serde_json::from_slice::<StrictValue>(body) {
        Ok(StrictValue(value)) => value,
        // Our visitor's only refusal is a repeated key; anything else is syntax.
        Err(error) if error.classify() == serde_json::error::Category::Data => {
            return Err(Rejection::InvalidRequest(
                "the body repeats a key in one of its objects",
            ));
        }
        Err(_) => return Err(Rejection::ParseError),
    };
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => return Err(Rejection::Batch),
        _ => {
            return Err(Rejection::InvalidRequest(
                "the body must be a JSON-RPC request object",
            ));
        }
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id),
        // rmcp reads integer ids as i64.
        Some(Value::Number(n)) if n.is_i64() => Some(Value::Number(n)),
        Some(_) => {
            return Err(Rejection::InvalidRequest(
                "id must be a string or a 64-bit signed integer",
            ));
        }
    };
    Ok(Message { id, object })
}

/// Checks one message (`body`, as [`read`]) and its headers.
///
/// `session_replies`: a JSON-RPC response is the client's answer to a
/// server-to-client request inside a legacy session (sampling, elicitation);
/// it passes to rmcp instead of being refused.
pub(crate) fn check(
    headers: &HeaderMap,
    body: &[u8],
    message: Message,
    supported: &[String],
    session_replies: bool,
) -> Result<Checked, Rejection> {
    let Message { id, object } = message;
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(Rejection::InvalidRequest(r#"jsonrpc must be "2.0""#));
    }
    let method = match object.get("method") {
        Some(Value::String(method)) => method.clone(),
        Some(_) => return Err(Rejection::InvalidRequest("method must be a string")),
        None if (object.contains_key("result") || object.contains_key("error"))
            && session_replies =>
        {
            rmcp_gaps::decodes_like_rmcp(body, false, false).map_err(Rejection::from)?;
            return Ok(Checked {
                method: String::new(),
                name: None,
                era: Era::Legacy,
                id,
                has_params: false,
                message: None,
            });
        }
        None if object.contains_key("result") || object.contains_key("error") => {
            return Err(Rejection::InvalidRequest(
                "a stateless server accepts no JSON-RPC responses",
            ));
        }
        None => return Err(Rejection::InvalidRequest("method is required")),
    };
    let params = match object.get("params") {
        None => None,
        Some(Value::Object(params)) => Some(params),
        Some(_) => {
            return Err(Rejection::InvalidParams("params must be an object".into()));
        }
    };

    let name = name_field(&method)
        .and_then(|field| params.and_then(|p| p.get(field)))
        .and_then(Value::as_str)
        .map(str::to_string);

    let header_version = single_header(headers, "mcp-protocol-version")?;
    let meta = params.and_then(|p| p.get("_meta"));
    let meta_version = meta.and_then(|m| m.get(VERSION_KEY));

    let legacy = meta_version.is_none()
        && header_version
            .as_deref()
            .is_none_or(|v| LEGACY_VERSIONS.contains(&v));
    // Notifications have no header rules at 2026-07-28; rmcp answers 202.
    let has_params = params.is_some();
    if legacy || id.is_none() {
        let era = if legacy { Era::Legacy } else { Era::Modern };
        rmcp_gaps::decodes_like_rmcp(body, era == Era::Modern, has_params)
            .map_err(Rejection::from)?;
        return Ok(Checked {
            method,
            name,
            era,
            id,
            has_params,
            message: None,
        });
    }

    // rmcp 3.11: an unknown header version with no `_meta` gets a plain-text 400.
    if meta_version.is_none()
        && let Some(requested) = &header_version
        && !supported.iter().any(|s| s == requested)
    {
        return Err(unsupported(requested, supported));
    }

    // 1. The header is required.
    let Some(header_version) = header_version else {
        return Err(Rejection::HeaderMismatch(
            "the MCP-Protocol-Version header is required".into(),
        ));
    };
    // 2. `_meta` must carry the version and the capabilities.
    let meta_version = match (meta_version, meta.and_then(|m| m.get(CAPABILITIES_KEY))) {
        (Some(Value::String(version)), Some(Value::Object(_))) => version,
        _ => {
            return Err(Rejection::InvalidParams(format!(
                "params._meta must carry {VERSION_KEY} (a string) and {CAPABILITIES_KEY} (an object)"
            )));
        }
    };
    // ... and its optional keys must have their schema types.
    if let Some(why) = meta.and_then(malformed_optional_meta) {
        return Err(Rejection::InvalidParams(why));
    }
    // 3. Header and body must agree.
    if *meta_version != header_version {
        return Err(Rejection::HeaderMismatch(format!(
            "MCP-Protocol-Version {header_version:?} differs from _meta {meta_version:?}"
        )));
    }
    // 4. The version must be one we serve.
    if !supported.iter().any(|s| s == meta_version) {
        return Err(unsupported(meta_version, supported));
    }
    // 5. The routing headers must copy the body.
    match single_header(headers, "mcp-method")? {
        None => {
            return Err(Rejection::HeaderMismatch(
                "the Mcp-Method header is required".into(),
            ));
        }
        Some(m) if m != method => {
            return Err(Rejection::HeaderMismatch(format!(
                "Mcp-Method {m:?} differs from the body's method {method:?}"
            )));
        }
        Some(_) => {}
    }
    if let (Some(field), Some(expected)) = (name_field(&method), name.as_deref()) {
        let name = single_header(headers, "mcp-name")?.ok_or_else(|| {
            Rejection::HeaderMismatch(format!("the Mcp-Name header is required for {method}"))
        })?;
        let decoded = decode_sentinel(&name).ok_or_else(|| {
            Rejection::HeaderMismatch("Mcp-Name has a malformed =?base64?…?= value".into())
        })?;
        if decoded != expected {
            return Err(Rejection::HeaderMismatch(format!(
                "Mcp-Name differs from params.{field}"
            )));
        }
    }
    // 6. Methods 2026-07-28 removed. rmcp 3.11 answers `initialize` in a
    // modern envelope with -32022.
    if REMOVED_METHODS.contains(&method.as_str()) {
        return Err(Rejection::MethodNotFound(method));
    }
    // The rest of rmcp's decoding gaps show up as refusals and are explained
    // by `Checked::explain_refusal` on the error path only.
    if rmcp_gaps::list_cursor_is_not_a_string(&method, params) {
        return Err(Rejection::InvalidParams("cursor must be a string".into()));
    }
    Ok(Checked {
        method,
        name,
        era: Era::Modern,
        id,
        has_params,
        message: Some(object),
    })
}

impl Checked {
    /// The spec's answer when rmcp refused this request (`status`) for one of
    /// its decoding gaps (`rmcp_gaps.rs`), or `None` when rmcp's own refusal
    /// stands (e.g. -32601 for a capability not offered).
    pub(crate) fn explain_refusal(
        &self,
        body: &[u8],
        status: http::StatusCode,
    ) -> Option<Rejection> {
        let modern = self.era == Era::Modern;
        if !modern || !rmcp_gaps::may_hide_decoding_gap(&self.method, modern, status) {
            return None;
        }
        rmcp_gaps::decodes_like_rmcp(body, modern, self.has_params)
            .err()
            .map(Rejection::from)
    }
}

/// The logging levels of `io.modelcontextprotocol/logLevel`.
const LOG_LEVELS: &[&str] = &[
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// Why an optional `_meta` key breaks its schema type, if one does.
fn malformed_optional_meta(meta: &Value) -> Option<String> {
    if let Some(info) = meta.get("io.modelcontextprotocol/clientInfo")
        && !info.is_object()
    {
        return Some("_meta io.modelcontextprotocol/clientInfo must be an object".into());
    }
    if let Some(level) = meta.get("io.modelcontextprotocol/logLevel")
        && !level.as_str().is_some_and(|l| LOG_LEVELS.contains(&l))
    {
        return Some(format!(
            "_meta io.modelcontextprotocol/logLevel must be one of {}",
            LOG_LEVELS.join(", ")
        ));
    }
    if let Some(token) = meta.get("progressToken")
        && !(token.is_string() || token.is_number())
    {
        return Some("_meta progressToken must be a string or a number".into());
    }
    None
}

fn unsupported(requested: &str, supported: &[String]) -> Rejection {
    Rejection::UnsupportedVersion {
        requested: requested.chars().take(64).collect(),
        supported: supported.to_vec(),
    }
}

/// The body field `Mcp-Name` copies, for the methods that need one.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// One header value, trimmed of optional whitespace; repeated or non-ASCII
/// values are refused.
fn single_header(headers: &HeaderMap, name: &'static str) -> Result<Option<String>, Rejection> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Rejection::HeaderMismatch(format!("{name} is repeated")));
    }
    let value = value.to_str().map_err(|_| {
        Rejection::HeaderMismatch(format!("{name} must be ASCII; use =?base64?…?="))
    })?;
    Ok(Some(value.trim_matches([' ', '\t']).to_string()))
}

/// Reverses the `=?base64?{Base64(UTF-8)}?=` header encoding.
fn decode_sentinel(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(method: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        h.insert("mcp-method", method.parse().unwrap());
        h
    }

    /// Both envelope steps, as the pipeline runs them: a refusal with the id it echoes (none
    /// when the id was not read).
    fn envelope(headers: &HeaderMap, body: &str) -> Result<Checked, (Rejection, Option<Value>)> {
        let supported = ["2026-07-28".to_string()];
        let message = read(body.as_bytes()).map_err(|rejection| (rejection, None))?;
        let id = message.id.clone();
        check(headers, body.as_bytes(), message, &supported, false)
            .map_err(|rejection| (rejection, id))
    }

    fn refusal(method: &str, body: &str) -> (i32, Option<Value>) {
        match envelope(&headers(method), body) {
            Ok(_) => panic!("accepted: {body}"),
            Err((rejection, id)) => (rejection.json_rpc_code().unwrap(), id),
        }
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn a_repeated_key_at_any_depth_is_an_invalid_request() {
        for body in [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list","params":{{{META}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META},"cursor":"a","cursor":"b"}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META},"x":[{{"a":1,"a":1}}]}}}}"#
            ),
        ] {
            assert_eq!(refusal("tools/list", &body), (-32600, None), "{body}");
        }
        let unique = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META},"x":[{{"a":1}},{{"a":1}}]}}}}"#
        );
        assert!(envelope(&headers("tools/list"), &unique).is_ok());
    }

    #[test]
    fn params_that_do_not_fit_the_method_are_invalid_params() {
        for (method, params) in [
            ("tools/call", r#""name":5"#),
            ("tools/call", r#""name":"5","arguments":[]"#),
            ("tools/list", r#""cursor":5"#),
            ("prompts/get", r#""arguments":{}"#),
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"r","method":"{method}","params":{{{META},{params}}}}}"#
            );
            let mut h = headers(method);
            h.insert("mcp-name", "5".parse().unwrap());
            // Refused up front (a list cursor), or explained once rmcp has
            // refused the request (its -32601 for a method it knows).
            let (rejection, id) = match envelope(&h, &body) {
                Err(refusal) => refusal,
                Ok(checked) => {
                    let rejection = checked
                        .explain_refusal(body.as_bytes(), http::StatusCode::NOT_FOUND)
                        .unwrap_or_else(|| panic!("{body} was not explained"));
                    (rejection, checked.id)
                }
            };
            assert_eq!(rejection.json_rpc_code(), Some(-32602), "{body}");
            assert_eq!(id, Some(Value::from("r")));
        }
    }

    #[test]
    fn ids_beyond_i64_and_malformed_optional_meta_are_refused() {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/list","params":{{{META}}}}}"#
        );
        assert_eq!(refusal("tools/list", &body), (-32600, None));
        for extra in [
            r#""io.modelcontextprotocol/logLevel":"loud""#,
            r#""io.modelcontextprotocol/clientInfo":"me""#,
            r#""progressToken":{}"#,
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}},{extra}}}}}}}"#
            );
            assert_eq!(
                refusal("tools/list", &body),
                (-32602, Some(Value::from(1))),
                "{extra}"
            );
        }
    }
}
