//! Every error row of MCP 2026-07-28 §3–4 and each rmcp 3.11 gap the front
//! closes, through the same service the local server and Lambda call.

use mcp_lambda_test_support as support;

use serde_json::{Value, json};
use support::fixture::*;

fn headers_only(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn raw(body: &str) -> (Vec<(String, String)>, Vec<u8>) {
    (
        headers_only(&[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/list"),
        ]),
        body.as_bytes().to_vec(),
    )
}

#[tokio::test]
async fn invalid_json_is_a_400_parse_error() {
    // rmcp 3.11: bad JSON gets a plain-text 415.
    let a = post(&service(&[]), raw("{not json")).await;
    assert_eq!(a.status, 400);
    assert_eq!(a.code(), -32700);
    assert!(a.json().get("id").is_none());
}

#[tokio::test]
async fn batches_are_a_400_invalid_request() {
    // rmcp 3.11: batch arrays get a plain-text 415.
    let a = post(
        &service(&[]),
        raw(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#),
    )
    .await;
    assert_eq!(a.status, 400);
    assert_eq!(a.code(), -32600);
}

#[tokio::test]
async fn malformed_envelopes_are_400_invalid_request_echoing_a_readable_id() {
    let s = service(&[]);
    for (body, id) in [
        ("42", None),
        (r#""text""#, None),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list","params":{}}"#,
            None,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list","params":{}}"#,
            None,
        ),
        (
            r#"{"id":7,"method":"tools/list","params":{}}"#,
            Some(json!(7)),
        ),
        (
            r#"{"jsonrpc":"1.0","id":"x","method":"tools/list","params":{}}"#,
            Some(json!("x")),
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":5,"params":{}}"#,
            Some(json!(8)),
        ),
        (r#"{"jsonrpc":"2.0","id":9,"result":{}}"#, Some(json!(9))),
    ] {
        let a = post(&s, raw(body)).await;
        assert_eq!(a.status, 400, "{body}: {}", a.text);
        assert_eq!(a.code(), -32600, "{body}");
        assert_eq!(a.json().get("id").cloned(), id, "{body}");
    }
}

#[tokio::test]
async fn a_missing_version_header_is_a_400_header_mismatch() {
    let request = with_header(
        modern(json!(1), "tools/list", json!({})),
        "mcp-protocol-version",
        None,
    );
    let a = post(&service(&[]), request).await;
    assert_eq!((a.status.as_u16(), a.code()), (400, -32020));
    assert_eq!(a.json()["id"], 1);
}

#[tokio::test]
async fn missing_meta_fields_are_a_400_invalid_params() {
    let s = service(&[]);
    for strip in ["_meta", "protocolVersion", "clientCapabilities"] {
        let (headers, body) = modern(json!("req-1"), "tools/list", json!({}));
        let mut value: Value = serde_json::from_slice(&body).unwrap();
        match strip {
            "_meta" => {
                value["params"].as_object_mut().unwrap().remove("_meta");
            }
            key => {
                value["params"]["_meta"]
                    .as_object_mut()
                    .unwrap()
                    .remove(&format!("io.modelcontextprotocol/{key}"));
            }
        }
        let a = post(&s, (headers, serde_json::to_vec(&value).unwrap())).await;
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (400, -32602),
            "without {strip}: {}",
            a.text
        );
        assert_eq!(a.json()["id"], "req-1");
    }
}

#[tokio::test]
async fn a_header_that_disagrees_with_meta_is_checked_before_support() {
    // Reference order: header ≠ _meta (-32020) wins over an unsupported version.
    let (headers, body) = modern(json!(2), "tools/list", json!({}));
    let body = String::from_utf8(body)
        .unwrap()
        .replace("\"2026-07-28\"", "\"v999.0.0\"");
    let a = post(&service(&[]), (headers, body.into_bytes())).await;
    assert_eq!((a.status.as_u16(), a.code()), (400, -32020), "{}", a.text);
}

#[tokio::test]
async fn an_unsupported_version_is_a_400_with_supported_and_requested() {
    let (headers, body) = modern(json!(3), "tools/list", json!({}));
    let body = String::from_utf8(body)
        .unwrap()
        .replace("\"2026-07-28\"", "\"v999.0.0\"");
    let request = with_header(
        (headers, body.into_bytes()),
        "mcp-protocol-version",
        Some("v999.0.0"),
    );
    let a = post(&service(&[]), request).await;
    assert_eq!((a.status.as_u16(), a.code()), (400, -32022));
    let data = &a.json()["error"]["data"];
    assert_eq!(data["requested"], "v999.0.0");
    assert!(
        data["supported"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert_eq!(a.json()["id"], 3);
}

#[tokio::test]
async fn an_unknown_header_version_without_meta_is_json_rpc_32022() {
    // rmcp 3.11: answered with a plain-text 400.
    let (headers, _) = modern(json!(4), "tools/list", json!({}));
    let body = br#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{}}"#.to_vec();
    let a = post(
        &service(&[]),
        with_header((headers, body), "mcp-protocol-version", Some("2099-01-01")),
    )
    .await;
    assert_eq!((a.status.as_u16(), a.code()), (400, -32022), "{}", a.text);
    assert_eq!(a.json()["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(a.json()["id"], 4);
}

#[tokio::test]
async fn mcp_method_and_name_headers_must_copy_the_body() {
    let s = service(&[]);
    let call = || modern(json!(5), "tools/call", json!({"name": "echo_1"}));
    for (name, value) in [
        ("mcp-method", None),
        ("mcp-method", Some("tools/list")),
        ("mcp-name", None),
        ("mcp-name", Some("echo_2")),
        ("mcp-name", Some("=?base64?!!!?=")),
    ] {
        let a = post(&s, with_header(call(), name, value)).await;
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (400, -32020),
            "{name}={value:?}: {}",
            a.text
        );
        assert_eq!(a.json()["id"], 5);
    }
    // The base64 sentinel and surrounding whitespace are accepted.
    let a = post(
        &s,
        with_header(call(), "mcp-name", Some("=?base64?ZWNob18x?=")),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let a = post(&s, with_header(call(), "mcp-name", Some("  echo_1 "))).await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn removed_methods_in_a_modern_envelope_are_404_method_not_found() {
    // rmcp 3.11: `initialize` with the modern envelope gets -32022.
    let s = service(&[]);
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "unknown/method",
    ] {
        let a = post(&s, modern(json!(method), method, json!({}))).await;
        assert_eq!(
            (a.status.as_u16(), a.code()),
            (404, -32601),
            "{method}: {}",
            a.text
        );
        assert_eq!(a.json()["id"], method);
    }
}

#[tokio::test]
async fn a_bare_legacy_initialize_is_served_statelessly() {
    let body = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"old","version":"1"}}});
    let headers = headers_only(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]);
    let a = post(&service(&[]), (headers, serde_json::to_vec(&body).unwrap())).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(a.json()["result"]["protocolVersion"], "2025-06-18");
    assert!(a.header("mcp-session-id").is_none());
}

#[tokio::test]
async fn an_oversized_body_is_413_with_a_json_rpc_error() {
    let s = service(&[("MCP_MAX_BODY_BYTES", "1024")]);
    let big = "x".repeat(2048);
    let a = post(
        &s,
        modern(
            json!(1),
            "tools/call",
            json!({"name": "echo_1", "arguments": {"pad": big}}),
        ),
    )
    .await;
    assert_eq!(a.status, 413);
    assert_eq!(a.code(), -32600);
    assert_eq!(a.json()["error"]["data"]["limit"], 1024);
}

#[tokio::test]
async fn a_non_json_content_type_is_415() {
    let request = with_header(
        modern(json!(1), "tools/list", json!({})),
        "content-type",
        Some("text/plain"),
    );
    let a = post(&service(&[]), request).await;
    assert_eq!((a.status.as_u16(), a.code()), (415, -32600));
}

#[tokio::test]
async fn accept_must_allow_json_and_sse_but_may_be_absent() {
    let s = service(&[]);
    let a = post(
        &s,
        with_header(
            modern(json!(1), "tools/list", json!({})),
            "accept",
            Some("text/html"),
        ),
    )
    .await;
    assert_eq!((a.status.as_u16(), a.code()), (406, -32600));
    let a = post(
        &s,
        with_header(modern(json!(1), "tools/list", json!({})), "accept", None),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn get_and_delete_on_the_mcp_path_are_405_allow_post() {
    let s = service(&[]);
    for method in ["GET", "DELETE", "PUT"] {
        let a = send(&s, method, "/mcp", &[], vec![]).await;
        assert_eq!(a.status, 405, "{method}");
        assert_eq!(a.header("allow"), Some("POST"));
    }
}

#[tokio::test]
async fn healthz_is_200_and_other_paths_are_404() {
    let s = service(&[]);
    assert_eq!(send(&s, "GET", "/healthz", &[], vec![]).await.status, 200);
    assert_eq!(send(&s, "GET", "/nope", &[], vec![]).await.status, 404);
    assert_eq!(
        send(&s, "POST", "/mcp/extra", &[], vec![]).await.status,
        404
    );
}

#[tokio::test]
async fn notifications_are_accepted_with_202() {
    let body = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    let (headers, _) = modern(json!(1), "notifications/cancelled", json!({}));
    let a = post(&service(&[]), (headers, serde_json::to_vec(&body).unwrap())).await;
    assert_eq!(a.status, 202, "{}", a.text);
}

#[tokio::test]
async fn every_result_carries_server_info() {
    let s = service(&[]);
    for (method, params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("tools/call", json!({"name": "echo_3"})),
    ] {
        let a = post(&s, modern(json!(1), method, params)).await;
        assert_eq!(a.status, 200, "{method}: {}", a.text);
        let info = &a.json()["result"]["_meta"]["io.modelcontextprotocol/serverInfo"];
        assert_eq!(info["name"], "fixture", "{method}: {}", a.text);
        assert_eq!(info["version"], "1.2.3");
    }
}

#[tokio::test]
async fn cache_hints_come_from_config_and_mirror_into_cache_control() {
    let s = service(&[
        ("MCP_CACHE_TOOLS_LIST", "120,public"),
        ("MCP_CACHE_SERVER_DISCOVER", "30,private"),
    ]);
    let a = post(&s, modern(json!(1), "tools/list", json!({}))).await;
    assert_eq!(a.json()["result"]["ttlMs"], 120_000);
    assert_eq!(a.json()["result"]["cacheScope"], "public");
    assert_eq!(a.header("cache-control"), Some("public, max-age=120"));
    assert_eq!(a.header("vary"), None);

    let a = post(&s, modern(json!(2), "server/discover", json!({}))).await;
    assert_eq!(a.json()["result"]["ttlMs"], 30_000);
    assert_eq!(a.json()["result"]["cacheScope"], "private");
    assert_eq!(a.header("cache-control"), Some("private, max-age=30"));
    assert_eq!(a.header("vary"), Some("Authorization"));

    let a = post(
        &s,
        modern(json!(3), "tools/call", json!({"name": "echo_1"})),
    )
    .await;
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let a = post(&s, modern(json!(4), "tools/call", json!({"name": "nope"}))).await;
    assert_eq!(a.code(), -32602);
    assert_eq!(a.header("cache-control"), Some("no-store"));
    let a = post(&s, raw("{")).await;
    assert_eq!(a.header("cache-control"), Some("no-store"));
}

#[tokio::test]
async fn lists_page_with_signed_cursors_any_instance_can_continue() {
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let vars = [("MCP_PAGE_SIZE", "2"), ("MCP_REQUEST_STATE_KEY", key)];
    let (first, second) = (service(&vars), service(&vars));
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        // Alternate instances: cursors are self-contained.
        let s = if page % 2 == 0 { &first } else { &second };
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let a = post(s, modern(json!(page), "tools/list", params)).await;
        let result = &a.json()["result"];
        for tool in result["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_string());
        }
        cursor = result["nextCursor"].as_str().map(str::to_string);
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(names, ["echo_0", "echo_1", "echo_2", "echo_3", "echo_4"]);
}

#[tokio::test]
async fn garbage_tampered_and_foreign_cursors_are_invalid_params() {
    let s = service(&[("MCP_PAGE_SIZE", "2")]);
    let a = post(&s, modern(json!(1), "tools/list", json!({}))).await;
    let cursor = a.json()["result"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    let mut tampered = cursor.clone().into_bytes();
    tampered[3] = if tampered[3] == b'A' { b'B' } else { b'A' };
    let other_key = service(&[("MCP_PAGE_SIZE", "2")]);
    for (s, bad) in [
        (&s, "garbage".to_string()),
        (&s, String::from_utf8(tampered).unwrap()),
        (&other_key, cursor),
    ] {
        let a = post(s, modern(json!(2), "tools/list", json!({"cursor": bad}))).await;
        assert_eq!(a.code(), -32602, "{}", a.text);
        assert_eq!(a.json()["error"]["message"], "Invalid cursor");
    }
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let s = service(&[]);
    let a = post(
        &s,
        with_header(
            modern(json!(1), "tools/list", json!({})),
            "origin",
            Some("https://evil.example.com"),
        ),
    )
    .await;
    assert_eq!(a.status, 403, "{}", a.text);
    let a = post(
        &s,
        with_header(
            modern(json!(1), "tools/list", json!({})),
            "origin",
            Some("http://localhost:6274"),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
}

/// The CORS preflight for `origin`, asking to send `request_headers`.
async fn preflight(
    service: &mcp_lambda::McpService<Fixture>,
    origin: &str,
    request_headers: &str,
) -> Answer {
    let headers = headers_only(&[
        ("origin", origin),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", request_headers),
    ]);
    send(service, "OPTIONS", "/mcp", &headers, Vec::new()).await
}

#[tokio::test]
async fn an_allowed_origin_is_echoed_however_the_list_writes_its_port() {
    // Browsers never send a default port (RFC 6454 §6.2); the list may name it, leave it
    // out, or name any port with `:*`; scheme and host compare without case.
    for (allowed, origin, echoed) in [
        (
            "https://app.example.com:443",
            "https://app.example.com",
            true,
        ),
        ("https://app.example.com", "https://app.example.com", true),
        (
            "HTTPS://App.Example.com:443",
            "https://app.example.com",
            true,
        ),
        ("http://app.example.com:80", "http://app.example.com", true),
        ("https://app.example.com:*", "https://app.example.com", true),
        (
            "https://app.example.com:*",
            "https://app.example.com:8443",
            true,
        ),
        // A port-less entry is read as rmcp 3.11 reads it: any port.
        (
            "https://app.example.com",
            "https://app.example.com:8443",
            true,
        ),
        ("null", "null", true),
        (
            "https://app.example.com:443",
            "https://app.example.com:8443",
            false,
        ),
        (
            "https://app.example.com:443",
            "http://app.example.com",
            false,
        ),
        (
            "http://app.example.com:443",
            "https://app.example.com",
            false,
        ),
        (
            "https://app.example.com:443",
            "https://evil.example.com",
            false,
        ),
    ] {
        let s = service(&[("MCP_ALLOWED_ORIGINS", allowed)]);
        let call = with_header(
            modern(json!(1), "tools/list", json!({})),
            "origin",
            Some(origin),
        );
        let a = post(&s, call).await;
        let p = preflight(&s, origin, "content-type, mcp-protocol-version").await;
        let what = format!("Origin {origin} against {allowed}");
        if echoed {
            assert_eq!(a.status, 200, "{what}: {}", a.text);
            assert_eq!(
                a.header("access-control-allow-origin"),
                Some(origin),
                "{what}"
            );
            assert_eq!(p.status, 204, "{what}");
            assert_eq!(
                p.header("access-control-allow-origin"),
                Some(origin),
                "{what}"
            );
        } else {
            assert_eq!(a.status, 403, "{what}: {}", a.text);
            assert_eq!(a.header("access-control-allow-origin"), None, "{what}");
            assert_eq!(p.header("access-control-allow-origin"), None, "{what}");
        }
    }
}

#[tokio::test]
async fn the_preflight_admits_the_mcp_param_headers_a_browser_asks_for() {
    let s = service(&[("MCP_ALLOWED_ORIGINS", "https://app.example.com:443")]);
    let p = preflight(
        &s,
        "https://app.example.com",
        "Content-Type, Mcp-Method, Mcp-Param-Region, mcp-param-tenant-id, x-other",
    )
    .await;
    assert_eq!(p.status, 204);
    let allowed: Vec<&str> = p
        .header("access-control-allow-headers")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .collect();
    for name in [
        "content-type",
        "mcp-method",
        "mcp-param-region",
        "mcp-param-tenant-id",
    ] {
        assert!(allowed.contains(&name), "{name} in {allowed:?}");
    }
    assert!(!allowed.contains(&"x-other"), "{allowed:?}");
}

#[tokio::test]
async fn every_2025_era_client_is_served_without_a_session() {
    let s = service(&[]);
    let plain = headers_only(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]);
    for version in ["2025-03-26", "2025-06-18", "2025-11-25"] {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": version, "capabilities":{}, "clientInfo":{"name":"old","version":"1"}}});
        let a = post(&s, (plain.clone(), serde_json::to_vec(&init).unwrap())).await;
        assert_eq!(a.status, 200, "{version}: {}", a.text);
        assert_eq!(a.json()["result"]["protocolVersion"], version);
        assert!(
            a.header("mcp-session-id").is_none(),
            "{version} minted a session"
        );

        // The next request carries only the negotiated version header (none for 2025-03-26).
        let mut headers = plain.clone();
        if version != "2025-03-26" {
            headers.push(("mcp-protocol-version".into(), version.into()));
        }
        let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo_4","arguments":{}}});
        let a = post(&s, (headers, serde_json::to_vec(&call).unwrap())).await;
        assert_eq!(a.status, 200, "{version}: {}", a.text);
        assert_eq!(
            a.json()["result"]["content"][0]["text"],
            "echo_4",
            "{version}"
        );
        assert!(
            a.json()["result"].get("resultType").is_none(),
            "{version} got a 2026 field"
        );
    }
}

#[tokio::test]
async fn legacy_sessions_can_be_switched_on_for_local_use() {
    let s = service(&[("MCP_LEGACY_SESSIONS", "true")]);
    let plain = headers_only(&[
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ]);
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": "2025-11-25", "capabilities":{}, "clientInfo":{"name":"old","version":"1"}}});
    let a = post(&s, (plain.clone(), serde_json::to_vec(&init).unwrap())).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let session = a
        .header("mcp-session-id")
        .expect("no session minted")
        .to_string();

    // The client's answer to a server-to-client request reaches rmcp's session.
    let mut headers = plain;
    headers.push(("mcp-session-id".into(), session));
    headers.push(("mcp-protocol-version".into(), "2025-11-25".into()));
    let reply = json!({"jsonrpc":"2.0","id":0,"result":{}});
    let a = post(&s, (headers, serde_json::to_vec(&reply).unwrap())).await;
    assert_eq!(a.status, 202, "{}", a.text);
}
