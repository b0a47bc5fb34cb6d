//! Every Lambda event in `events/` through `lambda_http`'s own decoding into the app — the path
//! Lambda uses — answered by the basket example (its tools, in-memory handles), once through the
//! buffered adapter and once through the streaming one.
//!
//! The expected answer is keyed by the file's case (`<source>_<case>.json`); a file with a case
//! missing from [`expected`] fails, so a new event cannot go unchecked.

use std::{collections::HashMap, time::Duration};

use basket::Basket;
use bytes::Bytes;
use http::StatusCode;
use http_body_util::BodyExt;
use lambda_http::Body as LambdaBody;
use mcp_lambda::serve::{Buffered as LambdaBuffered, Streaming as LambdaStreaming};
use mcp_lambda::{App, Config, McpService};
use mcp_lambda_test_support as support;
use serde_json::Value;
use tower::ServiceExt as _;

const SOURCES: [&str; 4] = ["function_url", "rest_v1", "http_v2", "alb"];

/// The secret `events/function_url_cdn_*.json` carry (or not) in `x-origin-secret`.
const CDN_SECRET: &str = "events-cdn-secret-0123456789abcdef";

/// The auth settings the `*_protected_resource_metadata` events are answered with.
const ISSUER: &str = "https://auth.example.com";
const AUDIENCE: &str = "https://mcp.example.com/mcp";

/// What one case must answer.
struct Expect {
    status: StatusCode,
    /// The JSON-RPC error code, or `None` for a result (or a non-JSON answer).
    code: Option<i64>,
    /// The id echoed in the JSON-RPC answer.
    id: Option<i64>,
    /// `false` for answers that are not JSON-RPC (405, healthz, 202, 403).
    json_rpc: bool,
}

fn expected(case: &str) -> Option<Expect> {
    let rpc = |status: u16, code: Option<i64>, id: Option<i64>| Expect {
        status: StatusCode::from_u16(status).unwrap(),
        code,
        id,
        json_rpc: true,
    };
    let plain = |status: u16| Expect {
        status: StatusCode::from_u16(status).unwrap(),
        code: None,
        id: None,
        json_rpc: false,
    };
    Some(match case {
        "discover" | "named_stage_discover" | "cdn_secret_ok" => rpc(200, None, Some(1)),
        "tools_list" => rpc(200, None, Some(2)),
        "tools_call" => rpc(200, None, Some(3)),
        "tools_call_base64" => rpc(200, None, Some(4)),
        "parse_error" => rpc(400, Some(-32700), None),
        "batch" => rpc(400, Some(-32600), None),
        "missing_version_header" => rpc(400, Some(-32020), Some(6)),
        "unsupported_version" => rpc(400, Some(-32022), Some(7)),
        "initialize_modern" => rpc(404, Some(-32601), Some(8)),
        "body_too_large" => rpc(413, Some(-32600), None),
        "unsupported_media_type" => rpc(415, Some(-32600), None),
        "legacy_initialize" => rpc(200, None, Some(11)),
        "legacy_notification" => plain(202),
        "get_mcp" => plain(405),
        "healthz" | "protected_resource_metadata" => plain(200),
        "cdn_secret_wrong" | "cdn_secret_missing" => plain(403),
        _ => return None,
    })
}

fn config(vars: &[(&str, &str)]) -> Config {
    let vars: HashMap<&str, &str> = vars.iter().copied().collect();
    Config::from_lookup(|name| vars.get(name).map(|v| v.to_string())).expect("valid test config")
}

/// Which configuration a case is answered with.
#[derive(Clone, Copy, PartialEq)]
enum Setup {
    Plain,
    CdnSecret,
    Auth,
}

impl Setup {
    fn for_case(case: &str) -> Setup {
        if case.starts_with("cdn_") {
            Setup::CdnSecret
        } else if case == "protected_resource_metadata" {
            Setup::Auth
        } else {
            Setup::Plain
        }
    }
}

fn service(setup: Setup) -> McpService<Basket> {
    let hosts = [
        "abcdefghij1234567890klmnopqrstuv.lambda-url.us-east-1.on.aws",
        "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
        "f6g7h8i9j0.execute-api.us-east-1.amazonaws.com",
        "mcp-alb-1234567890.us-east-1.elb.amazonaws.com",
    ]
    .join(",");
    let mut vars = vec![
        ("MCP_ALLOWED_HOSTS", hosts.as_str()),
        ("MCP_MAX_BODY_BYTES", "4096"),
    ];
    match setup {
        Setup::Plain => {}
        Setup::CdnSecret => vars.push(("MCP_ORIGIN_SECRET", CDN_SECRET)),
        Setup::Auth => vars.extend([
            ("MCP_AUTH_ISSUER", ISSUER),
            ("MCP_AUTH_AUDIENCE", AUDIENCE),
            ("MCP_AUTH_JWKS_URL", "https://auth.example.com/jwks.json"),
            ("MCP_AUTH_SCOPES_SUPPORTED", "basket:read basket:write"),
        ]),
    }
    let baskets = mcp_lambda::handles::Handles::new(
        mcp_lambda::handles::memory(),
        basket::KIND,
        Duration::from_secs(86_400),
    );
    App::new(config(&vars))
        .resource(basket::resource::resource(&baskets))
        .server(Basket::new(baskets))
        .service()
}

fn events() -> Vec<(String, String, String)> {
    let dir = support::package_dir().join("events");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("events/ exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let source = SOURCES
            .iter()
            .find(|s| name.starts_with(&format!("{s}_")))
            .unwrap_or_else(|| panic!("{name}.json: the name must start with one of {SOURCES:?}"));
        let case = name[source.len() + 1..].to_string();
        found.push((name, case, std::fs::read_to_string(&path).unwrap()));
    }
    found.sort();
    found
}

/// A decoded answer.
struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Bytes,
}

async fn buffered(service: &McpService<Basket>, event: &str) -> Answer {
    let request = lambda_http::request::from_str(event).expect("lambda_http decodes the event");
    let response = LambdaBuffered(service.clone())
        .oneshot(request)
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = match body {
        LambdaBody::Empty => Bytes::new(),
        LambdaBody::Text(text) => Bytes::from(text),
        LambdaBody::Binary(bytes) => Bytes::from(bytes),
        _ => panic!("unexpected body variant"),
    };
    Answer {
        status: parts.status,
        headers: parts.headers,
        body,
    }
}

async fn streamed(service: &McpService<Basket>, event: &str) -> Answer {
    let request = lambda_http::request::from_str(event).expect("lambda_http decodes the event");
    let response = LambdaStreaming(service.clone())
        .oneshot(request)
        .await
        .unwrap();
    let (parts, body) = response.into_parts();
    Answer {
        status: parts.status,
        headers: parts.headers,
        body: body.collect().await.unwrap().to_bytes(),
    }
}

fn check(name: &str, expect: &Expect, answer: &Answer, event: &str) {
    let text = String::from_utf8_lossy(&answer.body);
    assert_eq!(
        answer.status, expect.status,
        "{name}: status {} (body {text:?}) given {event}",
        answer.status
    );
    if !expect.json_rpc {
        return;
    }
    let json: Value = serde_json::from_slice(&answer.body)
        .unwrap_or_else(|e| panic!("{name}: answer is not JSON ({e}): {text:?}"));
    assert_eq!(json["jsonrpc"], "2.0", "{name}: {json}");
    assert_eq!(
        json["error"]["code"].as_i64(),
        expect.code,
        "{name}: {json}"
    );
    assert_eq!(json["id"].as_i64(), expect.id, "{name}: {json}");
    if expect.code.is_none() {
        assert!(json["result"].is_object(), "{name}: no result in {json}");
    }
}

#[tokio::test]
async fn every_event_gets_its_status_code_and_id_buffered_and_streamed() {
    let services = [Setup::Plain, Setup::CdnSecret, Setup::Auth].map(|s| (s, service(s)));
    let events = events();
    assert!(events.len() >= 60, "only {} events found", events.len());
    for (name, case, event) in &events {
        let expect = expected(case)
            .unwrap_or_else(|| panic!("{name}.json: no expectation for case {case:?}"));
        let setup = Setup::for_case(case);
        let service = &services.iter().find(|(s, _)| *s == setup).unwrap().1;

        let answer = buffered(service, event).await;
        check(name, &expect, &answer, event);

        let answer = streamed(service, event).await;
        assert!(
            !answer.body.is_empty(),
            "{name}: an empty body was streamed"
        );
        if expect.status == StatusCode::NO_CONTENT {
            assert_eq!(answer.status, StatusCode::OK, "{name}");
        } else {
            check(name, &expect, &answer, event);
        }
    }
}

#[tokio::test]
async fn every_source_has_every_case() {
    let events = events();
    let cases: Vec<&str> = events
        .iter()
        .filter(|(name, ..)| name.starts_with("alb_"))
        .map(|(_, case, _)| case.as_str())
        .collect();
    for source in SOURCES {
        for case in &cases {
            assert!(
                events
                    .iter()
                    .any(|(name, ..)| name == &format!("{source}_{case}")),
                "events/{source}_{case}.json is missing"
            );
        }
    }
    assert!(cases.len() >= 15, "{cases:?}");
}

#[tokio::test]
async fn tool_calls_create_a_basket_whatever_the_envelope() {
    let service = service(Setup::Plain);
    for (name, case, event) in events() {
        if !case.starts_with("tools_call") {
            continue;
        }
        let answer = buffered(&service, &event).await;
        let json: Value = serde_json::from_slice(&answer.body).unwrap();
        let text = json["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("basket_id"), "{name}: {json}");
        assert_ne!(json["result"]["isError"], true, "{name}: {json}");
        assert_eq!(answer.headers["cache-control"], "no-store", "{name}");
    }
}

#[tokio::test]
async fn discover_is_cacheable_and_405_names_post() {
    let service = service(Setup::Plain);
    for (name, case, event) in events() {
        let answer = buffered(&service, &event).await;
        match case.as_str() {
            "discover" => assert_eq!(
                answer.headers["cache-control"], "public, max-age=3600",
                "{name}"
            ),
            "get_mcp" => assert_eq!(answer.headers["allow"], "POST", "{name}"),
            "healthz" => assert_eq!(&answer.body[..], b"ok\n", "{name}"),
            _ => {}
        }
    }
}

#[tokio::test]
async fn the_cdn_secret_header_never_reaches_the_handler_and_is_checked_on_every_route() {
    let cdn = service(Setup::CdnSecret);
    // The same healthz event without the header is refused when a secret is configured.
    let event =
        std::fs::read_to_string(support::package_dir().join("events/function_url_healthz.json"))
            .unwrap();
    assert_eq!(buffered(&cdn, &event).await.status, StatusCode::FORBIDDEN);
    let mut with_secret: Value = serde_json::from_str(&event).unwrap();
    with_secret["headers"]["x-origin-secret"] = CDN_SECRET.into();
    let answer = buffered(&cdn, &with_secret.to_string()).await;
    assert_eq!(answer.status, StatusCode::OK);
}

#[tokio::test]
async fn the_protected_resource_metadata_names_the_issuer_and_is_cacheable() {
    let auth = service(Setup::Auth);
    let plain = service(Setup::Plain);
    for (name, case, event) in events() {
        if case != "protected_resource_metadata" {
            continue;
        }
        let answer = buffered(&auth, &event).await;
        let doc: Value = serde_json::from_slice(&answer.body).unwrap();
        assert_eq!(doc["resource"], AUDIENCE, "{name}: {doc}");
        assert_eq!(doc["authorization_servers"][0], ISSUER, "{name}: {doc}");
        assert!(
            answer.headers["cache-control"]
                .to_str()
                .unwrap()
                .starts_with("public"),
            "{name}"
        );
        // Auth off: there is no document.
        assert_eq!(
            buffered(&plain, &event).await.status,
            StatusCode::NOT_FOUND,
            "{name}"
        );
    }
}

/// The function's side of docs/deploy.md's "Auth by entry point" table: through every source, a
/// request without a token gets a 401 whose `WWW-Authenticate` challenge and JSON body both name
/// the RFC 9728 document at the host root of the resource (the audience: the URL clients use),
/// so a client still finds it where API Gateway REST renames the header, and that document is
/// served for the path each source delivers it on.
#[tokio::test]
async fn every_entry_point_challenges_with_the_host_root_metadata_document() {
    let auth = service(Setup::Auth);
    let all = events();
    for source in SOURCES {
        let (name, _, event) = all
            .iter()
            .find(|(name, ..)| *name == format!("{source}_tools_call"))
            .unwrap_or_else(|| panic!("events/{source}_tools_call.json"));
        let answer = buffered(&auth, event).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{name}");
        let resource = AUDIENCE
            .strip_suffix("/mcp")
            .expect("the audience is <origin>/mcp");
        let document = format!("{resource}/.well-known/oauth-protected-resource/mcp");
        let challenge = answer.headers["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with("Bearer ")
                && challenge.contains(&format!("resource_metadata=\"{document}\"")),
            "{name}: {challenge}"
        );
        let body: Value = serde_json::from_slice(&answer.body).unwrap();
        assert!(
            body.to_string().contains(&document),
            "{name}: the body names the document too: {body}"
        );
        let (_, _, metadata) = all
            .iter()
            .find(|(name, ..)| *name == format!("{source}_protected_resource_metadata"))
            .unwrap();
        let served = buffered(&auth, metadata).await;
        assert_eq!(served.status, StatusCode::OK, "{source}: the document");
    }
}
