//! The hostile catalogue: every named case, what it sends and the answer it
//! must get. Where neither docs/http-front.md nor the spec fixes an answer, the
//! case says which answer was chosen and why (`// silent:` comments).

use serde_json::{Value, json};

use super::runner::*;
use super::support::jwt::{Issuer, TestKey, now};

/// A well-formed basket id that names no basket.
pub const NO_BASKET: &str = "00000000-0000-4000-8000-000000000000";

/// The audience the auth-on baskets are configured with.
pub const AUDIENCE: &str = "https://basket.test/mcp";

/// The secret a CloudFront distribution sends in `X-Origin-Secret`.
pub const ORIGIN_SECRET: &str = "0123456789abcdef-from-cloudfront";

// ---------------------------------------------------------------------------
// Auth off
// ---------------------------------------------------------------------------

pub fn envelope_cases() -> Vec<Case> {
    let big_id = "i".repeat(10_000);
    vec![
        // Bodies that are not JSON: 400, -32700, no id.
        case("body empty", list_body(""), err_no_id(400, -32700)),
        case("body whitespace only", list_body(" \r\n\t "), err_no_id(400, -32700)),
        case("body not UTF-8", list_body(b"\xff\xfe{\"a\":1}".to_vec()), err_no_id(400, -32700)),
        // silent: RFC 8259 lets a parser ignore a BOM; we do not (JSON text MUST NOT start with one).
        case("body with UTF-8 BOM", list_body(format!("\u{feff}{}", list_text("", ""))), err_no_id(400, -32700)),
        case("body truncated", list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/l"#), err_no_id(400, -32700)),
        case("body with trailing garbage", list_body(format!("{} x", list_text("", ""))), err_no_id(400, -32700)),
        case("two JSON objects", list_body(format!("{}{{}}", list_text("", ""))), err_no_id(400, -32700)),
        case("NUL byte", list_body(b"\x00".to_vec()), err_no_id(400, -32700)),
        case("lone surrogate escape", list_body(list_text(r#""cursor":"\ud800""#, "")), err_no_id(400, -32700)),
        case("invalid escape", list_body(list_text(r#""cursor":"\x41""#, "")), err_no_id(400, -32700)),
        case("single quotes", list_body("{'jsonrpc':'2.0'}"), err_no_id(400, -32700)),
        case("gzip bytes (Content-Encoding ignored)", list_body(b"\x1f\x8b\x08\x00\x00\x00\x00\x00".to_vec()).set("Content-Encoding", "gzip"), err_no_id(400, -32700)),
        // silent: serde_json cannot hold 1e400 (beyond f64), so the body does not parse.
        case("number beyond f64", list_body(list_text(r#""x":1e400"#, "")), err_no_id(400, -32700)),
        case("10 000 nested arrays", list_body(nested(10_000, "[", "]", "")), err_no_id(400, -32700)),
        case("10 000 nested objects in params", list_body(list_text(&format!(r#""x":{}"#, nested(10_000, r#"{"a":"#, "}", "1")), "")), err_no_id(400, -32700)),
        case("10 000 nested arrays in arguments", call_text("add_item", &format!(r#"{{"basket_id":"{NO_BASKET}","sku":"A","quantity":1,"x":{}}}"#, nested(10_000, "[", "]", ""))), err_no_id(400, -32700)),
        // JSON, but not one request object: 400, -32600.
        case("JSON null", list_body("null"), err_no_id(400, -32600)),
        case("JSON number", list_body("42"), err_no_id(400, -32600)),
        case("JSON string", list_body(r#""tools/list""#), err_no_id(400, -32600)),
        case("JSON true", list_body("true"), err_no_id(400, -32600)),
        case("empty batch", list_body("[]"), err_no_id(400, -32600)),
        case("batch of one", list_body(format!("[{}]", list_text("", ""))), err_no_id(400, -32600)),
        case("empty object", list_body("{}"), err_no_id(400, -32600)),
        // jsonrpc: the id is readable, so it is echoed.
        case("jsonrpc missing", list_body(r#"{"id":1,"method":"tools/list","params":{}}"#), err(400, -32600)),
        case("jsonrpc 1.0", list_body(r#"{"jsonrpc":"1.0","id":1,"method":"tools/list","params":{}}"#), err(400, -32600)),
        case("jsonrpc number 2.0", list_body(r#"{"jsonrpc":2.0,"id":1,"method":"tools/list","params":{}}"#), err(400, -32600)),
        case("jsonrpc null", list_body(r#"{"jsonrpc":null,"id":1,"method":"tools/list","params":{}}"#), err(400, -32600)),
        case("jsonrpc with a space", list_body(r#"{"jsonrpc":"2.0 ","id":1,"method":"tools/list","params":{}}"#), err(400, -32600)),
        // id: string or integer, never null (MCP §1); an unusable id is not echoed.
        case("id null", list_body(list_text("", "").replace(r#""id":1"#, r#""id":null"#)), err_no_id(400, -32600)),
        case("id object", list_body(list_text("", "").replace(r#""id":1"#, r#""id":{"a":1}"#)), err_no_id(400, -32600)),
        case("id array", list_body(list_text("", "").replace(r#""id":1"#, r#""id":[1]"#)), err_no_id(400, -32600)),
        case("id float", list_body(list_text("", "").replace(r#""id":1"#, r#""id":1.5"#)), err_no_id(400, -32600)),
        // silent: 1.0 is a JSON float; JSON-RPC ids SHOULD NOT be fractional and rmcp reads integers only.
        case("id 1.0", list_body(list_text("", "").replace(r#""id":1"#, r#""id":1.0"#)), err_no_id(400, -32600)),
        case("id boolean", list_body(list_text("", "").replace(r#""id":1"#, r#""id":true"#)), err_no_id(400, -32600)),
        // silent: rmcp's ids are i64; 2^64-1 was a plain-text 415 from rmcp before the front refused it.
        case("id u64 max", list_body(list_text("", "").replace(r#""id":1"#, r#""id":18446744073709551615"#)), err_no_id(400, -32600)),
        case("id 10^30", list_body(list_text("", "").replace(r#""id":1"#, r#""id":1000000000000000000000000000000"#)), err_no_id(400, -32600)),
        case("id negative", rpc_with_id(json!(-5), "tools/list", json!({})), Expect::Result(json!(-5))),
        case("id empty string", rpc_with_id(json!(""), "tools/list", json!({})), Expect::Result(json!(""))),
        case("id 10 KB string", rpc_with_id(json!(big_id), "tools/list", json!({})), Expect::Result(json!(big_id))),
        case("id i64 min", rpc_with_id(json!(i64::MIN), "tools/list", json!({})), Expect::Result(json!(i64::MIN))),
        // method
        case("method missing", list_body(r#"{"jsonrpc":"2.0","id":1,"params":{}}"#), err(400, -32600)),
        case("method number", list_body(r#"{"jsonrpc":"2.0","id":1,"method":5,"params":{}}"#), err(400, -32600)),
        case("method null", list_body(r#"{"jsonrpc":"2.0","id":1,"method":null,"params":{}}"#), err(400, -32600)),
        case("method object", list_body(r#"{"jsonrpc":"2.0","id":1,"method":{"x":1},"params":{}}"#), err(400, -32600)),
        // silent: an empty method is just a method no server has.
        case("method empty", rpc("", json!({})), err(404, -32601)),
        case("method 10 KB", rpc(&"m".repeat(10_000), json!({})), err(404, -32601)),
        // Responses are not requests here (MCP §3: clients MUST NOT send them).
        case("a response object", list_body(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), err(400, -32600)),
        case("an error object", list_body(r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#), err(400, -32600)),
        case("method and result at once", list_body(list_text("", r#","result":{}"#)), err(400, -32600)),
        // Duplicate keys: serde_json keeps the last, other parsers the first; refused everywhere.
        case("duplicate id", list_body(list_text("", r#","id":2"#)), err_no_id(400, -32600)),
        case("duplicate method (smuggling)", list_body(list_text("", "").replace(r#""method":"tools/list""#, r#""method":"tools/call","method":"tools/list""#)), err_no_id(400, -32600)),
        case("duplicate jsonrpc", list_body(list_text("", r#","jsonrpc":"2.0""#)), err_no_id(400, -32600)),
        case("duplicate params", list_body(list_text("", &format!(r#","params":{{"_meta":{META}}}"#))), err_no_id(400, -32600)),
        case("duplicate _meta", list_body(list_text(&format!(r#""_meta":{META}"#), "")), err_no_id(400, -32600)),
        case("duplicate key inside _meta", list_meta(&META.replace("{}", r#"{},"io.modelcontextprotocol/clientCapabilities":{}"#)), err_no_id(400, -32600)),
        case("duplicate tool name", call_text("checkout", "{}").body(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{META},"name":"checkout","name":"create_basket","arguments":{{}}}}}}"#)), err_no_id(400, -32600)),
        case("duplicate key inside arguments", call_text("view_basket", &format!(r#"{{"basket_id":"{NO_BASKET}","basket_id":"x"}}"#)), err_no_id(400, -32600)),
        // silent: JSON-RPC 2.0 names no other members; unknown ones are ignored, as every MCP SDK does.
        case("extra top-level member", list_body(list_text("", r#","extra":{"a":1}"#)), ok()),
        // params
        case("params array", list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}"#), err(400, -32602)),
        case("params null", list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":null}"#), err(400, -32602)),
        case("params string", list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":"x"}"#), err(400, -32602)),
        case("params missing (modern headers)", list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), err(400, -32602)),
    ]
}

pub fn meta_cases() -> Vec<Case> {
    let v = "io.modelcontextprotocol/protocolVersion";
    let c = "io.modelcontextprotocol/clientCapabilities";
    let long = "9".repeat(10_000);
    vec![
        case(
            "_meta missing",
            list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#),
            err(400, -32602),
        ),
        case("_meta null", list_meta("null"), err(400, -32602)),
        case("_meta array", list_meta("[]"), err(400, -32602)),
        case(
            "_meta string",
            list_meta(r#""2026-07-28""#),
            err(400, -32602),
        ),
        case("_meta empty", list_meta("{}"), err(400, -32602)),
        case(
            "protocolVersion missing",
            list_meta(&format!(r#"{{"{c}":{{}}}}"#)),
            err(400, -32602),
        ),
        case(
            "clientCapabilities missing",
            list_meta(&format!(r#"{{"{v}":"{VERSION}"}}"#)),
            err(400, -32602),
        ),
        case(
            "protocolVersion number",
            list_meta(&format!(r#"{{"{v}":20260728,"{c}":{{}}}}"#)),
            err(400, -32602),
        ),
        case(
            "protocolVersion null",
            list_meta(&format!(r#"{{"{v}":null,"{c}":{{}}}}"#)),
            err(400, -32602),
        ),
        case(
            "clientCapabilities string",
            list_meta(&format!(r#"{{"{v}":"{VERSION}","{c}":"all"}}"#)),
            err(400, -32602),
        ),
        case(
            "clientCapabilities null",
            list_meta(&format!(r#"{{"{v}":"{VERSION}","{c}":null}}"#)),
            err(400, -32602),
        ),
        case(
            "clientCapabilities array",
            list_meta(&format!(r#"{{"{v}":"{VERSION}","{c}":[]}}"#)),
            err(400, -32602),
        ),
        case(
            "clientCapabilities.elicitation a number",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{"elicitation":5}}}}"#
            )),
            err(400, -32602),
        ),
        case(
            "_meta version differs from header",
            list_meta(&format!(r#"{{"{v}":"2025-11-25","{c}":{{}}}}"#)),
            err(400, -32020),
        ),
        case(
            "unknown version in both",
            list_meta(&format!(r#"{{"{v}":"2099-01-01","{c}":{{}}}}"#))
                .set("MCP-Protocol-Version", "2099-01-01"),
            err(400, -32022),
        ),
        case(
            "10 KB version in both",
            list_meta(&format!(r#"{{"{v}":"{long}","{c}":{{}}}}"#))
                .set("MCP-Protocol-Version", &long),
            err(400, -32022),
        ),
        case(
            "empty version in both",
            list_meta(&format!(r#"{{"{v}":"","{c}":{{}}}}"#)).set("MCP-Protocol-Version", ""),
            err(400, -32022),
        ),
        // Spec order: header ≠ _meta (-32020) before unsupported (-32022).
        case(
            "unknown header version, modern _meta",
            rpc("tools/list", json!({})).set("MCP-Protocol-Version", "v999.0.0"),
            err(400, -32020),
        ),
        // rmcp 3.11 answered a header-only unknown version with plain text.
        case(
            "unknown header version, no _meta",
            list_body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
                .set("MCP-Protocol-Version", "2099-01-01"),
            err(400, -32022),
        ),
        // Optional keys with the wrong type (schema.ts RequestMetaObject).
        case(
            "clientInfo a number",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{}},"io.modelcontextprotocol/clientInfo":7}}"#
            )),
            err(400, -32602),
        ),
        case(
            "logLevel unknown",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{}},"io.modelcontextprotocol/logLevel":"loud"}}"#
            )),
            err(400, -32602),
        ),
        case(
            "progressToken an object",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{}},"progressToken":{{}}}}"#
            )),
            err(400, -32602),
        ),
        case(
            "progressToken a float",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{}},"progressToken":1.5}}"#
            )),
            ok(),
        ),
        case(
            "logLevel debug",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{}},"io.modelcontextprotocol/logLevel":"debug"}}"#
            )),
            ok(),
        ),
        case(
            "vendor _meta keys",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{}},"com.example/x":[1],"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}"#
            )),
            ok(),
        ),
        case(
            "unknown capabilities",
            list_meta(&format!(
                r#"{{"{v}":"{VERSION}","{c}":{{"extensions":{{"com.example/x":{{}}}},"experimental":{{"y":{{}}}}}}}}"#
            )),
            ok(),
        ),
    ]
}

pub fn header_cases() -> Vec<Case> {
    let create = || call("create_basket", json!({}));
    let cafe = || call("café", json!({})).drop("Mcp-Name");
    vec![
        case(
            "no MCP-Protocol-Version",
            rpc("tools/list", json!({})).drop("MCP-Protocol-Version"),
            err(400, -32020),
        ),
        case(
            "MCP-Protocol-Version repeated",
            rpc("tools/list", json!({})).add("MCP-Protocol-Version", VERSION),
            err(400, -32020),
        ),
        case(
            "MCP-Protocol-Version padded (OWS trimmed)",
            rpc("tools/list", json!({})).set("MCP-Protocol-Version", "  2026-07-28\t"),
            ok(),
        ),
        case(
            "MCP-Protocol-Version non-ASCII",
            rpc("tools/list", json!({}))
                .set_bytes("MCP-Protocol-Version", "2026-07-28é".as_bytes()),
            err(400, -32020),
        ),
        case(
            "MCP-Protocol-Version empty",
            rpc("tools/list", json!({})).set("MCP-Protocol-Version", ""),
            err(400, -32020),
        ),
        case(
            "header names in odd case",
            rpc("tools/list", json!({}))
                .drop("MCP-Protocol-Version")
                .drop("Mcp-Method")
                .set("mCp-PrOtOcOl-VeRsIoN", VERSION)
                .set("MCP-METHOD", "tools/list"),
            ok(),
        ),
        case(
            "no Mcp-Method",
            rpc("tools/list", json!({})).drop("Mcp-Method"),
            err(400, -32020),
        ),
        case(
            "Mcp-Method differs",
            rpc("tools/list", json!({})).set("Mcp-Method", "tools/call"),
            err(400, -32020),
        ),
        case(
            "Mcp-Method in upper case",
            rpc("tools/list", json!({})).set("Mcp-Method", "TOOLS/LIST"),
            err(400, -32020),
        ),
        case(
            "Mcp-Method repeated",
            rpc("tools/list", json!({})).add("Mcp-Method", "tools/list"),
            err(400, -32020),
        ),
        case(
            "Mcp-Method repeated, second differs",
            rpc("tools/list", json!({})).add("Mcp-Method", "tools/call"),
            err(400, -32020),
        ),
        // silent: only Mcp-Name and Mcp-Param-* are base64-decoded (spec §3); method names are plain ASCII.
        case(
            "Mcp-Method base64 sentinel",
            rpc("tools/list", json!({})).set("Mcp-Method", "=?base64?dG9vbHMvbGlzdA==?="),
            err(400, -32020),
        ),
        case(
            "Mcp-Method non-ASCII",
            rpc("tools/list", json!({})).set_bytes("Mcp-Method", "tools/listé".as_bytes()),
            err(400, -32020),
        ),
        case(
            "Mcp-Method padded (OWS trimmed)",
            rpc("tools/list", json!({})).set("Mcp-Method", " tools/list "),
            ok(),
        ),
        case(
            "no Mcp-Name on tools/call",
            create().drop("Mcp-Name"),
            err(400, -32020),
        ),
        case(
            "Mcp-Name differs",
            create().set("Mcp-Name", "checkout"),
            err(400, -32020),
        ),
        case(
            "Mcp-Name repeated",
            create().add("Mcp-Name", "create_basket"),
            err(400, -32020),
        ),
        case(
            "Mcp-Name padded (OWS trimmed)",
            create().set("Mcp-Name", "  create_basket  "),
            ok(),
        ),
        case(
            "Mcp-Name base64 sentinel",
            create().set("Mcp-Name", "=?base64?Y3JlYXRlX2Jhc2tldA==?="),
            ok(),
        ),
        case(
            "Mcp-Name sentinel, bad base64",
            create().set("Mcp-Name", "=?base64?!!!?="),
            err(400, -32020),
        ),
        case(
            "Mcp-Name sentinel, not UTF-8",
            create().set("Mcp-Name", "=?base64?/w==?="),
            err(400, -32020),
        ),
        // The markers are exact and lower case; anything else is a literal value.
        case(
            "Mcp-Name sentinel in upper case",
            create().set("Mcp-Name", "=?BASE64?Y3JlYXRlX2Jhc2tldA==?="),
            err(400, -32020),
        ),
        case(
            "Mcp-Name sentinel unterminated",
            create().set("Mcp-Name", "=?base64?Y3JlYXRlX2Jhc2tldA=="),
            err(400, -32020),
        ),
        case(
            "Mcp-Name raw UTF-8",
            cafe().set_bytes("Mcp-Name", "café".as_bytes()),
            err(400, -32020),
        ),
        // Encoded correctly, the header passes; the tool does not exist.
        case(
            "Mcp-Name base64 of a UTF-8 name",
            cafe().set("Mcp-Name", "=?base64?Y2Fmw6k=?="),
            err(200, -32602),
        ),
        case(
            "a name that looks like the sentinel, encoded",
            call("=?base64?eA==?=", json!({})).set("Mcp-Name", "=?base64?PT9iYXNlNjQ/ZUE9PT89?="),
            err(200, -32602),
        ),
        case(
            "a name that looks like the sentinel, sent bare",
            call("=?base64?eA==?=", json!({})).set("Mcp-Name", "=?base64?eA==?="),
            err(400, -32020),
        ),
        // A control character is not a valid header value: hyper refuses the request line-up.
        case(
            "Mcp-Name with a control byte",
            create().set_bytes("Mcp-Name", b"create\x01basket"),
            Expect::Status(400),
        ),
        case(
            "Mcp-Name on tools/list is ignored",
            rpc("tools/list", json!({})).set("Mcp-Name", "whatever"),
            ok(),
        ),
        case(
            "Mcp-Session-Id is ignored",
            rpc("tools/list", json!({})).set("Mcp-Session-Id", "deadbeef"),
            ok(),
        ),
        case(
            "Last-Event-ID is ignored",
            rpc("tools/list", json!({})).set("Last-Event-ID", "5"),
            ok(),
        ),
        case(
            "Authorization ignored when auth is off",
            rpc("tools/list", json!({})).set("Authorization", "Bearer nonsense"),
            ok(),
        ),
        // Media types.
        case(
            "no Content-Type",
            rpc("tools/list", json!({})).drop("Content-Type"),
            err_no_id(415, -32600),
        ),
        case(
            "Content-Type text/plain",
            rpc("tools/list", json!({})).set("Content-Type", "text/plain"),
            err_no_id(415, -32600),
        ),
        case(
            "Content-Type application/json-seq",
            rpc("tools/list", json!({})).set("Content-Type", "application/json-seq"),
            err_no_id(415, -32600),
        ),
        case(
            "Content-Type with charset",
            rpc("tools/list", json!({})).set("Content-Type", "application/json; charset=utf-8"),
            ok(),
        ),
        case(
            "Content-Type in upper case",
            rpc("tools/list", json!({})).set("Content-Type", "APPLICATION/JSON"),
            ok(),
        ),
        case(
            "Content-Type repeated",
            rpc("tools/list", json!({})).add("Content-Type", "text/plain"),
            err_no_id(415, -32600),
        ),
        case(
            "Accept text/html",
            rpc("tools/list", json!({})).set("Accept", "text/html"),
            err_no_id(406, -32600),
        ),
        case(
            "Accept JSON only",
            rpc("tools/list", json!({})).set("Accept", "application/json"),
            err_no_id(406, -32600),
        ),
        case(
            "Accept SSE at q=0",
            rpc("tools/list", json!({})).set("Accept", "application/json, text/event-stream;q=0"),
            err_no_id(406, -32600),
        ),
        // silent: an empty Accept lists nothing acceptable; a missing one means anything (RFC 9110 §12.5.1).
        case(
            "Accept empty",
            rpc("tools/list", json!({})).set("Accept", ""),
            err_no_id(406, -32600),
        ),
        case(
            "Accept */*",
            rpc("tools/list", json!({})).set("Accept", "*/*"),
            ok(),
        ),
        case(
            "Accept wildcards by type",
            rpc("tools/list", json!({})).set("Accept", "application/*, text/*"),
            ok(),
        ),
        case(
            "no Accept",
            rpc("tools/list", json!({})).drop("Accept"),
            ok(),
        ),
        // DNS rebinding and browsers.
        case(
            "foreign Host",
            rpc("tools/list", json!({})).set("Host", "evil.example.com"),
            Expect::Status(403),
        ),
        case(
            "foreign Host with a loopback port",
            rpc("tools/list", json!({})).set("Host", "evil.example.com:3000"),
            Expect::Status(403),
        ),
        case(
            "Host repeated",
            rpc("tools/list", json!({})).add("Host", "evil.example.com"),
            Expect::Status(400),
        ),
        case(
            "no Host",
            rpc("tools/list", json!({})).drop("Host"),
            Expect::Status(400),
        ),
        case(
            "Host localhost:port",
            rpc("tools/list", json!({})).set("Host", "localhost:3000"),
            ok(),
        ),
        case(
            "absolute-form target, foreign authority",
            rpc("tools/list", json!({})).target("http://evil.example.com/mcp"),
            Expect::Status(403),
        ),
        case(
            "absolute-form target, loopback",
            rpc("tools/list", json!({})).target("http://127.0.0.1/mcp"),
            ok(),
        ),
        case(
            "foreign Origin",
            rpc("tools/list", json!({})).set("Origin", "http://evil.example.com"),
            Expect::Status(403),
        ),
        case(
            "Origin null",
            rpc("tools/list", json!({})).set("Origin", "null"),
            Expect::Status(403),
        ),
        case(
            "Origin non-ASCII",
            rpc("tools/list", json!({})).set_bytes("Origin", "http://évil.example".as_bytes()),
            Expect::Status(403),
        ),
        case(
            "Origin loopback, other port",
            rpc("tools/list", json!({})).set("Origin", "http://localhost:5173"),
            ok(),
        ),
        case(
            "head over 64 KiB",
            rpc("tools/list", json!({})).set("X-Padding", &"a".repeat(70_000)),
            Expect::Status(431),
        ),
        case(
            "more than 100 headers",
            (0..120).fold(rpc("tools/list", json!({})), |r, i| {
                r.add(&format!("X-H{i}"), "v")
            }),
            Expect::Status(431),
        ),
        case(
            "target over 64 KiB",
            rpc("tools/list", json!({})).target(&format!("/mcp?{}", "a".repeat(70_000))),
            Expect::Status(431),
        ),
    ]
}

pub fn size_and_params_cases() -> Vec<Case> {
    let limit = 1024 * 1024;
    let over = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META},"x":"{}"}}}}"#,
        "a".repeat(limit)
    );
    let mut chunked = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for piece in over.as_bytes().chunks(64 * 1024) {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let good = list_text("", "");
    let good_chunked = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{good}\r\n0\r\n\r\n",
        good.len()
    );
    let huge_sku = "A".repeat(900_000);
    let many_keys: String = (0..50_000).map(|i| format!(r#""k{i}":{i},"#)).collect();
    vec![
        case("body over the limit (Content-Length)", list_body(over.clone()), err_no_id(413, -32600)),
        case("body over the limit (chunked)", raw(chunked), err_no_id(413, -32600)),
        case("Content-Length claims 10^14 bytes", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000000000000\r\nConnection: close\r\n\r\n{}".to_vec()), err_no_id(413, -32600)),
        case("chunked body", raw(good_chunked.into_bytes()), ok()),
        case("900 KB string argument", call("add_item", json!({"basket_id": NO_BASKET, "sku": huge_sku, "quantity": 1})), Expect::ToolError),
        case("50 000 keys in arguments", call_text("view_basket", &format!(r#"{{{many_keys}"basket_id":"{NO_BASKET}"}}"#)), Expect::ToolError),
        case("100 nested arrays in arguments", call_text("view_basket", &format!(r#"{{"basket_id":"{NO_BASKET}","x":{}}}"#, nested(100, "[", "]", ""))), Expect::ToolError),
        case("quantity 10^30", call_text("add_item", &format!(r#"{{"basket_id":"{NO_BASKET}","sku":"A","quantity":1000000000000000000000000000000}}"#)), Expect::ToolError),
        case("quantity 1.5", call("add_item", json!({"basket_id": NO_BASKET, "sku": "A", "quantity": 1.5})), Expect::ToolError),
        case("quantity -1", call("add_item", json!({"basket_id": NO_BASKET, "sku": "A", "quantity": -1})), Expect::ToolError),
        case("quantity a string", call("add_item", json!({"basket_id": NO_BASKET, "sku": "A", "quantity": "1"})), Expect::ToolError),
        case("basket_id not a UUID", call("view_basket", json!({"basket_id": "../../etc/passwd"})), Expect::ToolError),
        case("basket_id missing", call("view_basket", json!({})), Expect::ToolError),
        case("sku with a NUL", call("add_item", json!({"basket_id": NO_BASKET, "sku": "A\u{0}B", "quantity": 1})), Expect::ToolError),
        // params that break the method's schema: rmcp 3.11 answered -32601 (404) or dropped them.
        case("tools/call name a number", rpc("tools/call", json!({"name": 5})).set("Mcp-Name", "5"), err(400, -32602)),
        case("tools/call name missing", rpc("tools/call", json!({"arguments": {}})), err(400, -32602)),
        case("tools/call arguments an array", call("create_basket", json!([])), err(400, -32602)),
        case("tools/call arguments a string", call("create_basket", json!("x")), err(400, -32602)),
        case("tools/call arguments null", call("create_basket", Value::Null), ok()),
        case("tools/list cursor a number", rpc("tools/list", json!({"cursor": 5})), err(400, -32602)),
        case("tools/list cursor garbage", rpc("tools/list", json!({"cursor": "zzz"})), err(200, -32602)),
        // silent: "" is a valid cursor only if the server handed it out; this one never does.
        case("tools/list cursor empty", rpc("tools/list", json!({"cursor": ""})), err(200, -32602)),
        case("tools/list cursor 10 KB", rpc("tools/list", json!({"cursor": "c".repeat(10_000)})), err(200, -32602)),
        case("unknown tool", call("no_such_tool", json!({})), err(200, -32602)),
        case("tool name 10 KB", call(&"t".repeat(10_000), json!({})), err(200, -32602)),
        case("requestState on a tool without rounds", rpc("tools/call", json!({"name": "create_basket", "requestState": "forged"})), ok()),
        // silent: unknown params are ignored, as everywhere else (spec §7 asks the same of MRTR retries).
        case("server/discover with an unknown param", rpc("server/discover", json!({"x": 1})), ok()),
    ]
}

pub fn method_and_path_cases() -> Vec<Case> {
    let r = |m: &str, p: &str| Req::new(m, p);
    vec![
        case("server/discover", rpc("server/discover", json!({})), ok()),
        case("initialize in a 2026 envelope", rpc("initialize", json!({})), err(404, -32601)),
        case("ping", rpc("ping", json!({})), err(404, -32601)),
        case("logging/setLevel", rpc("logging/setLevel", json!({"level": "info"})), err(404, -32601)),
        case("resources/subscribe", rpc("resources/subscribe", json!({"uri": "x://y"})), err(404, -32601)),
        case("unknown method", rpc("foo/bar", json!({})), err(404, -32601)),
        // The basket offers basket://{basket_id} only: anything else is the spec's not-found.
        case("resources/read outside basket://", rpc("resources/read", json!({"uri": "file:///etc/passwd"})), err(200, -32602)),
        case("prompts/list (not advertised)", rpc("prompts/list", json!({})), err(404, -32601)),
        // The basket serves listen (the library's change feed); a filter it cannot honour is refused before any stream opens.
        case("subscriptions/listen asking for nothing", rpc("subscriptions/listen", json!({"notifications": {}})), err(400, -32602)),
        case("subscriptions/listen with only unknown keys", rpc("subscriptions/listen", json!({"notifications": {"everything": true}})), err(400, -32602)),
        case("subscriptions/listen with 65 URIs", rpc("subscriptions/listen", json!({"notifications": {"resourceSubscriptions": (0..65).map(|i| format!("basket://{i}")).collect::<Vec<_>>()}})), err(400, -32602)),
        case("subscriptions/listen filter a string", rpc("subscriptions/listen", json!({"notifications": "all"})), err(400, -32602)),
        case("legacy subscriptions/listen", legacy(json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"notifications": {"toolsListChanged": true}}})).set("MCP-Protocol-Version", "2025-11-25"), err(200, -32601)),
        case("completion/complete (not advertised)", rpc("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}})), err(404, -32601)),
        case("a notification", mcp_headers("notifications/cancelled").body(format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"_meta":{META},"requestId":1}}}}"#)), Expect::Status(202)),
        case("an unknown notification", mcp_headers("x/y").body(r#"{"jsonrpc":"2.0","method":"x/y"}"#), Expect::Status(202)),
        // 2025-era clients are served statelessly on the same endpoint.
        case("legacy initialize", legacy(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}})), ok()),
        case("legacy initialize without capabilities", legacy(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})), err(400, -32602)),
        case("legacy tools/call name a number", legacy(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}})).set("MCP-Protocol-Version", "2025-11-25"), err(400, -32602)),
        // silent: without header and _meta a request is 2025-era, where server/discover does not exist.
        case("server/discover with no header and no _meta", legacy(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"})), err(200, -32601)),
        case("GET /mcp", r("GET", "/mcp"), Expect::Status(405)),
        case("DELETE /mcp", r("DELETE", "/mcp"), Expect::Status(405)),
        case("PUT /mcp", rpc("tools/list", json!({})).method("PUT"), Expect::Status(405)),
        case("PATCH /mcp", rpc("tools/list", json!({})).method("PATCH"), Expect::Status(405)),
        case("HEAD /mcp", r("HEAD", "/mcp"), Expect::Status(405)),
        case("TRACE /mcp", r("TRACE", "/mcp"), Expect::Status(405)),
        case("made-up method FOO", r("FOO", "/mcp"), Expect::Status(405)),
        case("OPTIONS /mcp (preflight)", r("OPTIONS", "/mcp").set("Origin", "http://localhost:5173").set("Access-Control-Request-Method", "POST"), Expect::Status(204)),
        case("POST /", rpc("tools/list", json!({})).target("/"), Expect::Status(404)),
        case("POST /mcp/", rpc("tools/list", json!({})).target("/mcp/"), Expect::Status(404)),
        case("POST /MCP", rpc("tools/list", json!({})).target("/MCP"), Expect::Status(404)),
        case("POST //mcp", rpc("tools/list", json!({})).target("//mcp"), Expect::Status(404)),
        case("POST /%6dcp (no percent-decoding)", rpc("tools/list", json!({})).target("/%6dcp"), Expect::Status(404)),
        case("POST /mcp/../mcp", rpc("tools/list", json!({})).target("/mcp/../mcp"), Expect::Status(404)),
        case("POST /mcp?query", rpc("tools/list", json!({})).target("/mcp?x=1&access_token=abc"), ok()),
        case("GET /healthz", r("GET", "/healthz"), Expect::Status(200)),
        case("POST /healthz", r("POST", "/healthz").body("{}"), Expect::Status(404)),
        case("GET metadata with auth off", r("GET", "/.well-known/oauth-protected-resource"), Expect::Status(404)),
        case("OPTIONS * ", r("OPTIONS", "*"), Expect::Status(404)),
    ]
}

pub fn framing_cases() -> Vec<Case> {
    let good = list_text("", "");
    vec![
        case("TLS ClientHello", raw(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03".to_vec()), Expect::Status(400)),
        case("request line garbage", raw(b"HELLO\r\n\r\n".to_vec()), Expect::Status(400)),
        case("HTTP/2 preface (HTTP/1 only)", raw(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec()), Expect::Closed),
        case("Content-Length and chunked", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n".to_vec()), err_no_id(400, -32700)),
        case("two different Content-Length", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}".to_vec()), Expect::Status(400)),
        case("negative Content-Length", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: -1\r\nConnection: close\r\n\r\n{}".to_vec()), Expect::Status(400)),
        case("Transfer-Encoding gzip", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n{}".to_vec()), Expect::Status(400)),
        case("bad chunk size", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n".to_vec()), err_no_id(400, -32600)),
        case("Expect: 100-continue", list_body(good).set("Expect", "100-continue"), ok()),
        case("HTTP/1.0 without Host", raw(b"POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".to_vec()), Expect::Status(400)),
        case("obsolete line folding", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nMcp-Method: tools/list\r\n  folded\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec()), Expect::Status(400)),
        case("header without a colon", raw(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}".to_vec()), Expect::Status(400)),
        case("body shorter than Content-Length is cut off", list_body("{}").unframed().set("Content-Length", "100"), err_no_id(408, -32600)),
    ]
}

// ---------------------------------------------------------------------------
// Auth on: hostile tokens
// ---------------------------------------------------------------------------

/// Tokens over HTTP against a basket whose issuer holds `key`: missing,
/// malformed, forged, signed by `stranger` (another key with the same `kid`),
/// for another audience or issuer, expired; and the one good token.
pub fn token_cases(issuer: &Issuer, key: &TestKey, stranger: &TestKey) -> Vec<Case> {
    let good = key.sign(&issuer.claims(AUDIENCE, "alice", ""));
    let claims = |f: &dyn Fn(&mut Value)| {
        let mut c = issuer.claims(AUDIENCE, "alice", "");
        f(&mut c);
        key.sign(&c)
    };
    let b64 = |v: &Value| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": "k1"})),
        b64(&issuer.claims(AUDIENCE, "alice", ""))
    );
    let bob = key.sign(&issuer.claims(AUDIENCE, "bob", ""));
    let forged = format!(
        "{}.{}",
        bob.rsplit_once('.').unwrap().0,
        good.rsplit_once('.').unwrap().1
    );
    let bearer =
        |t: &str| call("create_basket", json!({})).set("Authorization", &format!("Bearer {t}"));
    vec![
        case(
            "no token",
            call("create_basket", json!({})),
            Expect::Challenge(401, None),
        ),
        case(
            "discover is open without a token",
            rpc("server/discover", json!({})),
            ok(),
        ),
        case("a good token", bearer(&good), ok()),
        case(
            "garbage token",
            bearer("not.a.jwt"),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            // HTTP trims the trailing space: what is left names no token at all.
            "empty bearer",
            call("create_basket", json!({})).set("Authorization", "Bearer "),
            Expect::Challenge(401, Some("invalid_request")),
        ),
        case(
            "Basic scheme",
            call("create_basket", json!({})).set("Authorization", "Basic YWxpY2U6cHc="),
            Expect::Challenge(401, Some("invalid_request")),
        ),
        case(
            "two Authorization headers",
            bearer(&good).add("Authorization", &format!("Bearer {good}")),
            Expect::Challenge(401, Some("invalid_request")),
        ),
        case(
            "token in the query string",
            bearer(&good).target(&format!("/mcp?access_token={good}")),
            Expect::Challenge(401, Some("invalid_request")),
        ),
        case(
            "token over 8 KiB",
            bearer(&format!("{good}{}", "A".repeat(9000))),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "Authorization non-ASCII",
            call("create_basket", json!({})).set_bytes("Authorization", "Bearer é".as_bytes()),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "alg none",
            bearer(&unsigned),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "signed by another key with the same kid",
            bearer(&stranger.sign(&issuer.claims(AUDIENCE, "alice", ""))),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "bob's claims under alice's signature",
            bearer(&forged),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "another audience",
            bearer(&key.sign(&issuer.claims("https://other.test/mcp", "alice", ""))),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "another issuer",
            bearer(&claims(&|c| c["iss"] = json!("https://evil.example.com"))),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "expired",
            bearer(&claims(&|c| c["exp"] = json!(now() - 3600))),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "not yet valid",
            bearer(&claims(&|c| c["nbf"] = json!(now() + 3600))),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "no subject",
            bearer(&claims(&|c| {
                c.as_object_mut().unwrap().remove("sub");
            })),
            Expect::Challenge(401, Some("invalid_token")),
        ),
        case(
            "Authorization over the 64 KiB head",
            bearer(&"A".repeat(70_000)),
            Expect::Status(431),
        ),
        // The envelope is checked before the token: a bad body is a 400 for anyone.
        case(
            "bad body, no token",
            list_body("{not json"),
            err_no_id(400, -32700),
        ),
    ]
}

// ---------------------------------------------------------------------------
// CloudFront origin protection: the secret header
// ---------------------------------------------------------------------------

/// Requests with and without [`ORIGIN_SECRET`] against a basket that requires it.
pub fn origin_secret_cases() -> Vec<Case> {
    let with = |r: Req| r.set("X-Origin-Secret", ORIGIN_SECRET);
    vec![
        case(
            "no secret",
            rpc("tools/list", json!({})),
            Expect::Status(403),
        ),
        case(
            "no secret, /healthz",
            Req::new("GET", "/healthz"),
            Expect::Status(403),
        ),
        case(
            "no secret, bad body (refused before reading it)",
            list_body("{not json"),
            Expect::Status(403),
        ),
        case(
            "wrong secret",
            rpc("tools/list", json!({})).set("X-Origin-Secret", "0123456789abcdef-from-cloudfronT"),
            Expect::Status(403),
        ),
        case(
            "secret prefix",
            rpc("tools/list", json!({})).set("X-Origin-Secret", &ORIGIN_SECRET[..16]),
            Expect::Status(403),
        ),
        case(
            "secret with more after it",
            rpc("tools/list", json!({})).set("X-Origin-Secret", &format!("{ORIGIN_SECRET}x")),
            Expect::Status(403),
        ),
        case(
            "secret repeated",
            with(rpc("tools/list", json!({}))).add("X-Origin-Secret", ORIGIN_SECRET),
            Expect::Status(403),
        ),
        case(
            "secret empty",
            rpc("tools/list", json!({})).set("X-Origin-Secret", ""),
            Expect::Status(403),
        ),
        case(
            "secret in another header",
            rpc("tools/list", json!({})).set("X-Origin-Secrets", ORIGIN_SECRET),
            Expect::Status(403),
        ),
        case("the secret", with(rpc("tools/list", json!({}))), ok()),
        case(
            "the secret, header name in upper case",
            rpc("tools/list", json!({})).set("X-ORIGIN-SECRET", ORIGIN_SECRET),
            ok(),
        ),
        case(
            "the secret, /healthz",
            with(Req::new("GET", "/healthz")),
            Expect::Status(200),
        ),
    ]
}
