//! OAuth resource-server auth with real keys, real signatures and a real
//! JWKS endpoint on loopback: the attack suite, scope challenges, rotation,
//! the metadata document and scope-filtered lists.

use mcp_lambda_test_support as support;

use std::sync::atomic::Ordering;

use serde_json::{Value, json};
use support::{fixture::*, jwt::*};

const AUDIENCE: &str = "http://127.0.0.1:3000/mcp";

struct Setup {
    issuer: Issuer,
    keys: Vec<TestKey>,
    service: mcp_lambda::McpService<Fixture>,
}

async fn setup(extra: &[(&str, &str)]) -> Setup {
    let keys = vec![
        TestKey::rsa("rsa-1"),
        TestKey::p256("ec-1"),
        TestKey::ed25519("ed-1"),
    ];
    let issuer = Issuer::start(&keys.iter().collect::<Vec<_>>()).await;
    let mut vars = vec![
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_AUTH_TOOL_SCOPES", "echo_0=admin,*=basic"),
        ("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "3600"),
    ];
    vars.extend_from_slice(extra);
    let service = service(&vars);
    Setup {
        issuer,
        keys,
        service,
    }
}

impl Setup {
    fn token(&self, scope: &str) -> String {
        self.keys[0].sign(&self.issuer.claims(AUDIENCE, "alice", scope))
    }

    /// The status a `basic` caller's `echo_1` gets: the key-cache tests ask it again and again.
    async fn basic_echo_1_status(&self) -> http::StatusCode {
        post(&self.service, bearer(call("echo_1"), &self.token("basic")))
            .await
            .status
    }
}

fn call(tool: &str) -> (Vec<(String, String)>, Vec<u8>) {
    modern(json!(1), "tools/call", json!({"name": tool}))
}

fn bearer(
    request: (Vec<(String, String)>, Vec<u8>),
    token: &str,
) -> (Vec<(String, String)>, Vec<u8>) {
    with_header(request, "authorization", Some(&format!("Bearer {token}")))
}

fn challenge(a: &Answer) -> String {
    a.header("www-authenticate")
        .unwrap_or_else(|| panic!("no challenge: {} {}", a.status, a.text))
        .to_string()
}

#[tokio::test]
async fn every_algorithm_verifies_with_a_real_key() {
    let s = setup(&[]).await;
    for (key, alg) in [
        (&s.keys[0], "RS256"),
        (&s.keys[0], "PS256"),
        (&s.keys[1], "ES256"),
        (&s.keys[2], "EdDSA"),
    ] {
        let token = key.sign_with(
            json!({"alg": alg, "kid": key.kid}),
            &s.issuer.claims(AUDIENCE, "alice", "basic"),
        );
        let a = post(&s.service, bearer(call("echo_1"), &token)).await;
        assert_eq!(a.status, 200, "{alg}: {}", a.text);
        assert_eq!(a.json()["result"]["content"][0]["text"], "echo_1");
    }
}

#[tokio::test]
async fn a_missing_token_gets_401_with_the_metadata_url_and_scopes() {
    let s = setup(&[]).await;
    let a = post(&s.service, call("echo_1")).await;
    assert_eq!(a.status, 401);
    let c = challenge(&a);
    assert!(c.starts_with("Bearer "), "{c}");
    assert!(
        c.contains(
            r#"resource_metadata="http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp""#
        ),
        "{c}"
    );
    assert!(c.contains(r#"scope="basic""#), "{c}");
    assert!(!c.contains("error="), "no error code without a token: {c}");
}

#[tokio::test]
async fn attacks_are_answered_401_invalid_token() {
    let s = setup(&[]).await;
    let (rsa, ec) = (&s.keys[0], &s.keys[1]);
    let good = s.issuer.claims(AUDIENCE, "alice", "basic");
    let with = |patch: Value| {
        let mut c = good.clone();
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() {
                c.as_object_mut().unwrap().remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        c
    };
    let b64 = |v: &Value| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    };
    // HS256 "signed" with the RSA public key material as the HMAC secret.
    let hs256 = {
        let input = format!(
            "{}.{}",
            b64(&json!({"alg":"HS256","kid":"rsa-1"})),
            b64(&good)
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, rsa.jwk().to_string().as_bytes());
        use base64::Engine as _;
        format!(
            "{input}.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(ring::hmac::sign(&key, input.as_bytes()))
        )
    };
    let valid = rsa.sign(&good);
    let mut flipped = valid.clone().into_bytes();
    let last = flipped.len() - 5;
    flipped[last] = if flipped[last] == b'A' { b'B' } else { b'A' };
    let cases: Vec<(&str, String)> = vec![
        (
            "alg none",
            format!("{}.{}.", b64(&json!({"alg":"none"})), b64(&good)),
        ),
        ("HS256 with the public key", hs256),
        (
            "unknown kid",
            rsa.sign_with(json!({"alg":"RS256","kid":"nope"}), &good),
        ),
        (
            "kid with path and SQL",
            rsa.sign_with(
                json!({"alg":"RS256","kid":"../../etc/passwd' OR '1'='1"}),
                &good,
            ),
        ),
        (
            "alg the key's kty cannot make",
            rsa.sign_with(json!({"alg":"ES256","kid":"rsa-1"}), &good),
        ),
        (
            "crit header",
            rsa.sign_with(json!({"alg":"RS256","kid":"rsa-1","crit":["exp"]}), &good),
        ),
        ("expired", rsa.sign(&with(json!({"exp": now() - 3600})))),
        (
            "nbf in the future",
            rsa.sign(&with(json!({"nbf": now() + 3600}))),
        ),
        (
            "wrong aud",
            rsa.sign(&with(json!({"aud": "https://other.example.com/mcp"}))),
        ),
        (
            "aud array without ours",
            rsa.sign(&with(
                json!({"aud": ["https://a.example", "https://b.example"]}),
            )),
        ),
        (
            "wrong iss",
            rsa.sign(&with(json!({"iss": "https://evil.example.com"}))),
        ),
        ("missing exp", rsa.sign(&with(json!({"exp": null})))),
        ("missing sub", ec.sign(&with(json!({"sub": null})))),
        ("bad signature", String::from_utf8(flipped).unwrap()),
        ("truncated", valid[..valid.len() / 2].to_string()),
        ("bad base64", valid.replacen('.', ".!!", 1)),
        ("padded base64", format!("{}=", valid)),
        ("10 MB token", "a".repeat(10 * 1024 * 1024)),
    ];
    for (what, token) in cases {
        let a = post(&s.service, bearer(call("echo_1"), &token)).await;
        assert_eq!(a.status, 401, "{what}: {}", a.text);
        let c = challenge(&a);
        assert!(c.contains(r#"error="invalid_token""#), "{what}: {c}");
        assert!(c.contains("resource_metadata="), "{what}: {c}");
        assert!(
            !a.text.contains(&token[..token.len().min(40)]) || token.len() < 20,
            "{what}: the token is echoed"
        );
    }
}

#[tokio::test]
async fn an_audience_array_that_names_us_is_accepted_in_any_case() {
    let s = setup(&[]).await;
    let claims = {
        let mut c = s.issuer.claims(AUDIENCE, "alice", "basic");
        c["aud"] = json!(["https://other.example", "HTTP://127.0.0.1:3000/mcp/"]);
        c
    };
    let a = post(&s.service, bearer(call("echo_1"), &s.keys[1].sign(&claims))).await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn tokens_in_the_query_string_or_other_schemes_are_refused() {
    let s = setup(&[]).await;
    let token = s.token("basic");
    let (headers, body) = call("echo_1");
    let a = send(
        &s.service,
        "POST",
        &format!("/mcp?access_token={token}"),
        &headers,
        body,
    )
    .await;
    assert_eq!(a.status, 401);
    assert!(challenge(&a).contains(r#"error="invalid_request""#));
    let a = post(
        &s.service,
        with_header(
            call("echo_1"),
            "authorization",
            Some(&format!("Basic {token}")),
        ),
    )
    .await;
    assert_eq!(a.status, 401);
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let s = setup(&[]).await;
    let a = post(
        &s.service,
        with_header(
            call("echo_1"),
            "authorization",
            Some(&format!("bearer {}", s.token("basic"))),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn insufficient_scope_is_403_naming_every_needed_scope() {
    let s = setup(&[("MCP_AUTH_METHOD_SCOPES", "tools/call=mcp")]).await;
    let a = post(&s.service, bearer(call("echo_0"), &s.token("basic mcp"))).await;
    assert_eq!(a.status, 403, "{}", a.text);
    let c = challenge(&a);
    assert!(c.contains(r#"error="insufficient_scope""#), "{c}");
    assert!(c.contains(r#"scope="mcp admin""#), "{c}");
    assert!(c.contains("resource_metadata="), "{c}");
    let a = post(&s.service, bearer(call("echo_0"), &s.token("admin mcp"))).await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn routing_headers_cannot_dodge_a_scope_check() {
    // Claiming server/discover (no token needed) in Mcp-Method while the body
    // calls a tool is a header mismatch, refused before any handler runs.
    let s = setup(&[]).await;
    let a = post(
        &s.service,
        with_header(call("echo_0"), "mcp-method", Some("server/discover")),
    )
    .await;
    assert_eq!((a.status.as_u16(), a.code()), (400, -32020), "{}", a.text);
    // A lying Mcp-Name cannot borrow another tool's scopes either.
    let a = post(
        &s.service,
        bearer(
            with_header(call("echo_0"), "mcp-name", Some("echo_1")),
            &s.token("basic"),
        ),
    )
    .await;
    assert_eq!((a.status.as_u16(), a.code()), (400, -32020), "{}", a.text);
}

#[tokio::test]
async fn discover_is_open_by_default_and_can_require_a_token() {
    let s = setup(&[]).await;
    let a = post(&s.service, modern(json!(1), "server/discover", json!({}))).await;
    assert_eq!(a.status, 200, "{}", a.text);
    let s = setup(&[("MCP_AUTH_DISCOVER_REQUIRES_TOKEN", "true")]).await;
    let a = post(&s.service, modern(json!(1), "server/discover", json!({}))).await;
    assert_eq!(a.status, 401);
}

#[tokio::test]
async fn lists_show_only_callable_tools_and_are_private() {
    let s = setup(&[]).await;
    let list = |token: String| {
        post(
            &s.service,
            bearer(modern(json!(1), "tools/list", json!({})), &token),
        )
    };
    let a = list(s.token("basic")).await;
    let names: Vec<_> = a.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["echo_1", "echo_2", "echo_3", "echo_4"]);
    assert_eq!(a.json()["result"]["cacheScope"], "private");
    assert!(
        a.header("cache-control").unwrap().starts_with("private"),
        "{:?}",
        a.header("cache-control")
    );
    assert_eq!(a.header("vary"), Some("Authorization"));
    let a = list(s.token("basic admin")).await;
    assert_eq!(a.json()["result"]["tools"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn a_rotated_key_is_accepted_after_one_refresh_and_bursts_are_rate_limited() {
    let s = setup(&[]).await;
    // Warm: the first token loads the JWKS once.
    assert_eq!(s.basic_echo_1_status().await, 200);
    let warm = s.issuer.fetches();
    assert_eq!(warm, 1);
    for _ in 0..20 {
        assert_eq!(s.basic_echo_1_status().await, 200);
    }
    assert_eq!(
        s.issuer.fetches(),
        warm,
        "a warm request with a known kid made a network call"
    );

    // The issuer rotates to a new key.
    let new = TestKey::ed25519("ed-2");
    s.issuer.set_keys(&[&s.keys[0], &new]);
    let token = new.sign(&s.issuer.claims(AUDIENCE, "alice", "basic"));
    // The min refresh interval (1 h here) has not passed since the warm-up
    // fetch, so the new kid cannot trigger a refetch yet …
    assert_eq!(
        post(&s.service, bearer(call("echo_1"), &token))
            .await
            .status,
        401
    );
    assert_eq!(s.issuer.fetches(), warm);

    // … while with a zero interval it is accepted after exactly one refresh,
    // and a burst of unknown kids costs at most one fetch per interval.
    let s = setup(&[("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "0")]).await;
    assert_eq!(s.basic_echo_1_status().await, 200);
    let new = TestKey::p256("ec-2");
    s.issuer.set_keys(&[&s.keys[0], &new]);
    let before = s.issuer.fetches();
    let a = post(
        &s.service,
        bearer(
            call("echo_1"),
            &new.sign(&s.issuer.claims(AUDIENCE, "alice", "basic")),
        ),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(s.issuer.fetches(), before + 1);
}

#[tokio::test]
async fn a_burst_of_unknown_kids_fetches_at_most_once_per_interval() {
    let s = setup(&[("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "60")]).await;
    let claims = s.issuer.claims(AUDIENCE, "mallory", "basic");
    let burst = (0..50).map(|i| {
        let token = s.keys[0].sign_with(
            json!({"alg": "RS256", "kid": format!("unknown-{i}")}),
            &claims,
        );
        let service = s.service.clone();
        async move { post(&service, bearer(call("echo_1"), &token)).await.status }
    });
    let statuses = futures::future::join_all(burst).await;
    assert!(statuses.iter().all(|s| *s == 401));
    assert_eq!(
        s.issuer.fetches(),
        1,
        "50 unknown kids cost more than one fetch"
    );
}

#[tokio::test]
async fn cached_keys_keep_verifying_while_the_issuer_is_down() {
    let s = setup(&[("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "0")]).await;
    assert_eq!(s.basic_echo_1_status().await, 200);
    s.issuer.down.store(true, Ordering::SeqCst);
    assert_eq!(s.basic_echo_1_status().await, 200);
    // An unknown kid now finds the issuer down: refused, and the cache survives.
    let stray = TestKey::ed25519("stray");
    let a = post(
        &s.service,
        bearer(
            call("echo_1"),
            &stray.sign(&s.issuer.claims(AUDIENCE, "alice", "basic")),
        ),
    )
    .await;
    assert_eq!(a.status, 401);
    assert_eq!(s.basic_echo_1_status().await, 200);
}

/// Issue 41, point 8: a fetch that failed is no key set, so it does not hold the next fetch back
/// for `MCP_AUTH_JWKS_MIN_REFRESH_SECS`; only for the second that keeps a dead issuer from
/// being asked on every request.
#[tokio::test]
async fn a_failed_key_fetch_does_not_hold_the_next_back_for_the_refresh_interval() {
    let key = TestKey::p256("ec-1");
    let issuer = Issuer::start(&[&key]).await;
    issuer.down.store(true, Ordering::SeqCst);
    let service = service(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "60"),
    ]);
    let token = key.sign(&issuer.claims(AUDIENCE, "alice", ""));
    let status = || async { post(&service, bearer(call("echo_1"), &token)).await.status };
    assert_eq!(status().await, 401, "no keys while the issuer is down");
    // Start-up's fetch (begun when the service was built) has failed too by now.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    issuer.down.store(false, Ordering::SeqCst);
    assert_eq!(
        status().await,
        401,
        "asked again within a second of a failure"
    );
    assert_eq!(issuer.fetches(), 0);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        status().await,
        200,
        "the issuer is back, a second after the failure and well within the refresh interval"
    );
    assert_eq!(issuer.fetches(), 1);
}

/// Issue 41, point 8, as on Lambda: the function is stopped between invocations (SIGSTOP), the
/// network forgets its idle connection to the issuer meanwhile (a NAT gateway's reset to the
/// next packet: `support::nat`), and the issuer rotates its key. After the thaw the first token
/// signed with the new key is accepted: the key fetch meets the dead pooled connection and is
/// sent again on a new one.
#[tokio::test]
async fn a_key_rotated_while_the_function_was_frozen_is_fetched_past_the_connection_the_network_forgot()
 {
    use support::{basket::Server, nat::Nat};
    let (old, new) = (TestKey::p256("before"), TestKey::p256("after"));
    let issuer = Issuer::start(&[&old]).await;
    let nat = Nat::start(&issuer.url).await;
    let jwks_url = format!("{}/jwks.json", nat.url);
    let server = Server::start(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_AUTH_JWKS_URL", jwks_url.as_str()),
        ("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "1"),
    ])
    .await;
    let signed_by = |key: &TestKey| {
        *server.token.lock().unwrap() = Some(key.sign(&issuer.claims(AUDIENCE, "alice", "")));
    };
    signed_by(&old);
    let (status, answer) = server.status_of("tools/list", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(issuer.fetches(), 1, "start-up's fetch");
    assert_eq!(nat.connections(), 1);

    let signal = |name: &str| {
        let status = std::process::Command::new("kill")
            .args([name, &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {name}");
    };
    signal("-STOP");
    nat.forget();
    issuer.set_keys(&[&old, &new]);
    // Past MCP_AUTH_JWKS_MIN_REFRESH_SECS since start-up's fetch, so the new kid may refresh.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    signal("-CONT");

    signed_by(&new);
    let (status, answer) = server.status_of("tools/list", json!({})).await;
    assert_eq!(
        status, 200,
        "the first token signed with the new key after the thaw: {answer}"
    );
    assert_eq!(issuer.fetches(), 2);
    assert_eq!(nat.connections(), 2, "the keys came on a new connection");
}

#[tokio::test]
async fn the_protected_resource_metadata_is_served_at_both_paths() {
    let s = setup(&[("MCP_AUTH_SCOPES_SUPPORTED", "basic admin")]).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let a = send(&s.service, "GET", path, &[], vec![]).await;
        assert_eq!(a.status, 200, "{path}");
        let doc = a.json();
        assert_eq!(doc["resource"], AUDIENCE);
        assert_eq!(doc["authorization_servers"], json!([s.issuer.url]));
        assert_eq!(doc["scopes_supported"], json!(["basic", "admin"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        assert!(
            a.header("cache-control")
                .unwrap()
                .starts_with("public, max-age=")
        );
    }
    assert_eq!(
        send(
            &s.service,
            "GET",
            "/.well-known/oauth-protected-resource/other",
            &[],
            vec![]
        )
        .await
        .status,
        404
    );
    // Auth off: no document.
    assert_eq!(
        send(
            &service(&[]),
            "GET",
            "/.well-known/oauth-protected-resource",
            &[],
            vec![]
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn browsers_can_read_the_challenge() {
    let s = setup(&[]).await;
    let a = post(
        &s.service,
        with_header(call("echo_1"), "origin", Some("http://localhost:6274")),
    )
    .await;
    assert_eq!(a.status, 401);
    assert_eq!(
        a.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert!(
        a.header("access-control-expose-headers")
            .unwrap()
            .contains("WWW-Authenticate")
    );
    let pre = send(
        &s.service,
        "OPTIONS",
        "/mcp",
        &[("origin".into(), "http://localhost:6274".into())],
        vec![],
    )
    .await;
    assert_eq!(pre.status, 204);
    assert!(
        pre.header("access-control-allow-headers")
            .unwrap()
            .contains("authorization")
    );
}

#[tokio::test]
async fn a_token_verified_once_is_refused_once_it_expires() {
    // The second request is served from the verified-token cache; the third
    // comes after `exp` and must not be.
    let s = setup(&[("MCP_AUTH_LEEWAY_SECS", "0")]).await;
    let mut claims = s.issuer.claims(AUDIENCE, "alice", "basic");
    claims["exp"] = json!(now() + 2);
    let token = s.keys[1].sign(&claims);
    for _ in 0..2 {
        assert_eq!(
            post(&s.service, bearer(call("echo_1"), &token))
                .await
                .status,
            200
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(3100)).await;
    let a = post(&s.service, bearer(call("echo_1"), &token)).await;
    assert_eq!(a.status, 401, "{}", a.text);
    assert!(challenge(&a).contains("expired"), "{}", challenge(&a));
}

#[tokio::test]
async fn a_withdrawn_key_stops_working_even_for_tokens_already_verified() {
    let s = setup(&[("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "0")]).await;
    let old = s.token("basic");
    assert_eq!(
        post(&s.service, bearer(call("echo_1"), &old)).await.status,
        200
    );
    // The issuer withdraws rsa-1; a token from the new key makes us refetch.
    let new = TestKey::ed25519("ed-new");
    s.issuer.set_keys(&[&new]);
    let fresh = new.sign(&s.issuer.claims(AUDIENCE, "alice", "basic"));
    assert_eq!(
        post(&s.service, bearer(call("echo_1"), &fresh))
            .await
            .status,
        200
    );
    let a = post(&s.service, bearer(call("echo_1"), &old)).await;
    assert_eq!(
        a.status, 401,
        "a cached token outlived its withdrawn key: {}",
        a.text
    );
}

#[tokio::test]
async fn the_test_client_sends_its_token_and_without_one_is_refused_like_any_client() {
    use mcp_lambda::testing::TestClient;
    let keys = [TestKey::rsa("rsa-1")];
    let issuer = Issuer::start(&keys.iter().collect::<Vec<_>>()).await;
    let server = mcp_lambda::App::new(config(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
    ]))
    .server(Fixture);
    let anonymous = TestClient::new(&server)
        .call_tool("echo_1", json!({}))
        .await;
    assert_eq!(anonymous.status, 401);
    assert!(anonymous.header("www-authenticate").is_some());
    let token = keys[0].sign(&issuer.claims(AUDIENCE, "alice", ""));
    let alice = TestClient::new(&server).with_token(token);
    let answer = alice.call_tool("echo_1", json!({})).await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.result()["content"][0]["text"], "echo_1");
}

#[tokio::test]
async fn start_up_asks_both_metadata_documents_at_once_and_fetches_the_keys_while_the_request_state_key_is_read()
 {
    use mcp_lambda::testing::TestClient;
    let key = TestKey::rsa("rsa-1");
    let delay = std::time::Duration::from_millis(400);
    let issuer = Issuer::start_slow_openid(&[&key], delay).await.url;
    let vars = [
        ("MCP_AUTH_ISSUER", issuer.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
    ];
    let started = std::time::Instant::now();
    // `App::load` starts the key fetch, and the first request with a token waits for it
    // (rather than fetching again).
    let app = mcp_lambda::App::load_from_lookup(lookup(&vars))
        .await
        .unwrap();
    assert!(
        started.elapsed() < delay,
        "App::load does not wait for the issuer"
    );
    let server = app.server(Fixture);
    let claims = json!({"iss": issuer, "aud": AUDIENCE, "sub": "alice", "scope": "",
        "exp": now() + 600, "nbf": now() - 10, "iat": now() - 10});
    let answer = TestClient::new(&server)
        .with_token(key.sign(&claims))
        .call_tool("echo_1", json!({}))
        .await;
    assert_eq!(answer.status, 200);
    let took = started.elapsed();
    // Discovery (both candidates at once: one round trip) and the key set: two round trips.
    // One candidate after the other would be three.
    assert!(
        took >= 2 * delay && took < 2 * delay + delay * 3 / 4,
        "the keys took {took:?} with {delay:?} per answer"
    );
}

/// A listener on its own thread that only counts the connections made to it (an issuer that
/// never answers): what a test can read while the runtime's one thread is busy.
fn counting_listener() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    (url, accepted)
}

/// On one thread (what `mcp_lambda::runtime()` builds on Lambda) the key fetch runs only when
/// start-up yields; start-up then does synchronous work (the AWS SDK reading the system's root
/// certificates, building clients), which must not hold the issuer's chain back: the fetch has
/// opened its connection by the time `App::load` returns, and by the time `App::open` does
/// when the app starts the fetch itself. `Config::load`, settings only, starts nothing.
#[tokio::test(flavor = "current_thread")]
async fn on_one_thread_the_key_fetch_is_under_way_before_start_up_goes_on() {
    let busy = std::time::Duration::from_millis(200);
    let keys_served_at = |jwks: &str| {
        let jwks_url = format!("{jwks}/jwks.json");
        [
            ("MCP_AUTH_ISSUER", "https://issuer.example".to_owned()),
            ("MCP_AUTH_AUDIENCE", AUDIENCE.to_owned()),
            ("MCP_AUTH_JWKS_URL", jwks_url),
        ]
    };

    let (jwks, accepted) = counting_listener();
    let vars = keys_served_at(&jwks);
    let _app = mcp_lambda::App::load_from_lookup(lookup(&vars))
        .await
        .unwrap();
    // Synchronous start-up work: nothing else runs on this thread meanwhile.
    std::thread::sleep(busy);
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "App::load returned before the key fetch opened its connection"
    );

    // Settings are data: reading them starts nothing.
    let (jwks, accepted) = counting_listener();
    let vars = keys_served_at(&jwks);
    let _config = mcp_lambda::Config::load_from_lookup(lookup(&vars))
        .await
        .unwrap();
    tokio::task::yield_now().await;
    std::thread::sleep(busy);
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "Config::load started a fetch"
    );

    let (jwks, accepted) = counting_listener();
    let config = mcp_lambda::Config::from_lookup(lookup(&keys_served_at(&jwks))).unwrap();
    let _app = mcp_lambda::App::open(config).await.unwrap();
    std::thread::sleep(busy);
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "App::open returned before the key fetch it started opened its connection"
    );
}

#[tokio::test]
async fn a_private_issuer_over_https_is_trusted_through_mcp_auth_ca_file_and_only_then() {
    use mcp_lambda::testing::TestClient;
    let key = TestKey::rsa("rsa-private");
    let (issuer, ca_pem) = Issuer::start_tls(&[&key]).await;
    let issuer = issuer.url;
    let dir = std::env::temp_dir().join(format!("mcp-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("issuer-ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let claims = json!({"iss": issuer, "aud": AUDIENCE, "sub": "alice", "scope": "",
        "exp": now() + 600, "nbf": now() - 10, "iat": now() - 10});
    let token = key.sign(&claims);
    let status = |vars: Vec<(&'static str, String)>| {
        let token = token.clone();
        async move {
            let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let server = mcp_lambda::App::open(config(&vars))
                .await
                .unwrap()
                .server(Fixture);
            TestClient::new(&server)
                .with_token(token)
                .call_tool("echo_1", json!({}))
                .await
                .status
        }
    };
    let base = vec![
        ("MCP_AUTH_ISSUER", issuer.clone()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE.to_owned()),
    ];
    // The public roots alone do not trust it: no keys, so the token is refused.
    assert_eq!(status(base.clone()).await, 401);
    // With its CA named, the keys load and the same token is served.
    let mut trusted = base.clone();
    trusted.push(("MCP_AUTH_CA_FILE", ca_file.display().to_string()));
    assert_eq!(status(trusted).await, 200);

    // A file that is not a CA's PEM is refused at start-up, naming the variable.
    let not_pem = dir.join("not.pem");
    std::fs::write(&not_pem, "hello").unwrap();
    for path in [
        not_pem.display().to_string(),
        dir.join("missing.pem").display().to_string(),
    ] {
        let error = mcp_lambda::Config::from_lookup(|name| match name {
            "MCP_AUTH_ISSUER" => Some(issuer.clone()),
            "MCP_AUTH_AUDIENCE" => Some(AUDIENCE.to_owned()),
            "MCP_AUTH_CA_FILE" => Some(path.clone()),
            _ => None,
        })
        .unwrap_err();
        assert_eq!(error.variable, "MCP_AUTH_CA_FILE", "{error}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

const COGNITO_POOL: &str = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC123";

/// A Cognito user-pool issuer, keys served from loopback (`MCP_AUTH_JWKS_URL`): the claims
/// are Cognito's documented access-token shape (no `aud`; `client_id`, `token_use`, scopes
/// `<resource-server-identifier>/<scope>`). `scripts/cognito-tests.sh` runs the same cases
/// with the tokens moto's `cognito-idp` emulator issues.
async fn cognito(extra: &[(&str, &str)]) -> (Setup, impl Fn(&str, &str) -> Value) {
    let keys = vec![TestKey::rsa("cognito-1")];
    let issuer = Issuer::start(&keys.iter().collect::<Vec<_>>()).await;
    let jwks = format!("{}/jwks.json", issuer.url);
    let read = format!("*={AUDIENCE}/basket:read");
    let mut vars = vec![
        ("MCP_AUTH_ISSUER", COGNITO_POOL),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_AUTH_JWKS_URL", jwks.as_str()),
        ("MCP_AUTH_TOOL_SCOPES", read.as_str()),
    ];
    vars.extend_from_slice(extra);
    let service = service(&vars);
    let claims = |token_use: &str, scope: &str| {
        json!({"sub": "5f1c0b1e-ada", "iss": COGNITO_POOL, "client_id": "app-client-1",
               "token_use": token_use, "scope": scope, "auth_time": now() - 5,
               "iat": now() - 5, "exp": now() + 600, "jti": "j-1", "version": 2,
               "username": "ada"})
    };
    (
        Setup {
            issuer,
            keys,
            service,
        },
        claims,
    )
}

#[tokio::test]
async fn a_cognito_access_token_is_bound_to_this_server_by_its_resource_server_scopes() {
    let (s, claims) = cognito(&[]).await;
    let key = &s.keys[0];
    let ours = format!("{AUDIENCE}/basket:read");
    let ok = post(
        &s.service,
        bearer(call("echo_1"), &key.sign(&claims("access", &ours))),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);

    let mut id_token = claims("id", "");
    id_token["aud"] = json!("app-client-1");
    let cases = [
        ("an ID token", key.sign(&id_token), "ID token"),
        (
            "moto's own scope only",
            key.sign(&claims("access", "aws.cognito.signin.user.admin")),
            "create a resource server with the identifier",
        ),
        (
            "a scope of another resource server",
            key.sign(&claims(
                "access",
                "https://other.example.com/mcp/basket:read",
            )),
            "no scope of the resource server",
        ),
        (
            "no token_use",
            {
                let mut c = claims("access", &ours);
                c.as_object_mut().unwrap().remove("token_use");
                key.sign(&c)
            },
            "token_use",
        ),
        (
            "another user pool",
            {
                let mut c = claims("access", &ours);
                c["iss"] = json!("https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Other9");
                key.sign(&c)
            },
            "issuer",
        ),
    ];
    for (what, token, says) in cases {
        let a = post(&s.service, bearer(call("echo_1"), &token)).await;
        assert_eq!(a.status, 401, "{what}: {}", a.text);
        let c = challenge(&a);
        assert!(c.contains(r#"error="invalid_token""#), "{what}: {c}");
        assert!(a.text.contains(says), "{what}: {}", a.text);
        assert!(
            !a.text.contains("resource="),
            "{what}: Cognito ignores resource=: {}",
            a.text
        );
    }
}

#[tokio::test]
async fn cognito_scope_names_work_in_full_in_the_scope_maps_and_the_metadata() {
    let write = format!("{AUDIENCE}/basket:write");
    let tools = format!("echo_0={write},*={AUDIENCE}/basket:read");
    let extra = [("MCP_AUTH_TOOL_SCOPES", tools.as_str())];
    let (s, claims) = cognito(&extra).await;
    let reader = s.keys[0].sign(&claims("access", &format!("{AUDIENCE}/basket:read")));
    let a = post(&s.service, bearer(call("echo_0"), &reader)).await;
    assert_eq!(a.status, 403, "{}", a.text);
    assert!(
        challenge(&a).contains(&format!(r#"scope="{write}""#)),
        "{}",
        challenge(&a)
    );
    let writer = s.keys[0].sign(&claims(
        "access",
        &format!("{write} {AUDIENCE}/basket:read"),
    ));
    assert_eq!(
        post(&s.service, bearer(call("echo_0"), &writer))
            .await
            .status,
        200
    );
    let metadata = send(
        &s.service,
        "GET",
        "/.well-known/oauth-protected-resource/mcp",
        &[],
        vec![],
    )
    .await;
    let document = metadata.json();
    assert_eq!(document["authorization_servers"][0], COGNITO_POOL);
    assert!(
        document["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!(write)),
        "{document}"
    );
}

#[tokio::test]
async fn only_the_clients_mcp_auth_client_ids_lists_are_accepted() {
    let s = setup(&[("MCP_AUTH_CLIENT_IDS", "web, tests")]).await;
    let listed = s.token("basic");
    assert_eq!(
        post(&s.service, bearer(call("echo_1"), &listed))
            .await
            .status,
        200
    );
    let mut claims = s.issuer.claims(AUDIENCE, "alice", "basic");
    claims["client_id"] = json!("rogue-client");
    let rogue = s.keys[0].sign(&claims);
    let a = post(&s.service, bearer(call("echo_1"), &rogue)).await;
    assert_eq!(a.status, 401, "{}", a.text);
    assert!(
        a.text.contains("rogue-client") && a.text.contains("MCP_AUTH_CLIENT_IDS"),
        "{}",
        a.text
    );
    claims.as_object_mut().unwrap().remove("client_id");
    claims["azp"] = json!("web");
    let by_azp = s.keys[0].sign(&claims);
    assert_eq!(
        post(&s.service, bearer(call("echo_1"), &by_azp))
            .await
            .status,
        200
    );
}

/// An opaque token is never accepted unchecked: with the introspection endpoint unreachable
/// the answer is 503 with `Retry-After`, and a JWT is still verified locally meanwhile.
#[tokio::test]
async fn an_opaque_token_the_issuer_cannot_be_asked_about_is_answered_503() {
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/introspect", listener.local_addr().unwrap())
    };
    let s = setup(&[
        ("MCP_AUTH_INTROSPECTION_URL", dead.as_str()),
        ("MCP_AUTH_INTROSPECTION_CLIENT_ID", "mcp-server"),
        ("MCP_AUTH_INTROSPECTION_CLIENT_SECRET", "s3cret"),
    ])
    .await;
    let a = post(&s.service, bearer(call("echo_1"), "2YotnFZFEjr1zCsicMWpAA")).await;
    assert_eq!(a.status, 503, "{}", a.text);
    assert_eq!(a.header("retry-after"), Some("1"));
    assert!(!a.text.contains("s3cret") && !a.text.contains("2YotnFZFEjr1zCsicMWpAA"));
    let jwt = s.token("basic");
    assert_eq!(
        post(&s.service, bearer(call("echo_1"), &jwt)).await.status,
        200
    );
}
