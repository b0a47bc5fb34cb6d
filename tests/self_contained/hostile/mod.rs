//! Hostile input over real HTTP: the basket binary on a loopback port, fed a
//! named catalogue of malformed, oversized, duplicated and slow requests over
//! raw TCP (so duplicate headers, non-ASCII bytes and broken framing reach the
//! server exactly as written).
//!
//! Every case asserts the exact HTTP status and, where the answer is JSON-RPC,
//! the exact code and the echoed `id`. No case may get a 5xx, a panic (the
//! connection would drop) or a hang (every exchange has a deadline). Where
//! neither docs/http-front.md nor the spec fixes an answer, the case says which
//! answer was chosen and why (`// silent:` comments).
//!
//! Figures: `cargo test --test self_contained -- hostile:: --nocapture` prints the number of
//! cases run.
//!
//! This file holds the tests; `catalogue.rs` the named cases, `runner.rs` the
//! raw-TCP exchange, the checks of each answer and the servers the cases run
//! against.

mod catalogue;
mod runner;

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use catalogue::*;
use mcp_lambda_test_support as support;
use runner::*;
use serde_json::json;
use support::jwt::{Issuer, TestKey};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

// ---------------------------------------------------------------------------
// The catalogue (auth off)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_hostile_catalogue_gets_exact_answers_and_no_5xx_panic_or_hang() {
    let server = catalogue_server(&[]).await;
    let mut table = Vec::new();
    table.extend(envelope_cases());
    table.extend(meta_cases());
    table.extend(header_cases());
    table.extend(size_and_params_cases());
    table.extend(method_and_path_cases());
    table.extend(framing_cases());
    let count = run_table(server.addr, &table).await;
    still_serving(server.addr).await;
    println!("hostile catalogue: {count} cases passed");
    assert!(count >= 80, "the catalogue shrank to {count} cases");
}

// ---------------------------------------------------------------------------
// Cases that need state, a connection kept open, or time
// ---------------------------------------------------------------------------

#[tokio::test]
async fn a_tampered_cursor_is_invalid_and_a_real_one_pages_on() {
    let server = catalogue_server(&[]).await;
    let first = server.rpc("tools/list", None, json!({})).await;
    let cursor = first["result"]["nextCursor"]
        .as_str()
        .expect("page size 2 leaves more tools")
        .to_string();
    let second = server
        .rpc("tools/list", None, json!({"cursor": cursor}))
        .await;
    assert!(second["result"]["tools"].is_array(), "{second}");
    let mut tampered = cursor.clone().into_bytes();
    let last = tampered.len() - 2;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    for bad in [
        String::from_utf8(tampered).unwrap(),
        format!("{cursor}x"),
        cursor[1..].to_string(),
    ] {
        let answer = server.rpc("tools/list", None, json!({"cursor": bad})).await;
        assert_eq!(answer["error"]["code"], -32602, "{bad}: {answer}");
    }
}

#[tokio::test]
async fn keep_alive_connections_survive_refusals_and_pipelining() {
    let server = catalogue_server(&[]).await;
    let mut bytes = list_body("{not json").bytes(false);
    bytes.extend(
        rpc("tools/list", json!({}))
            .set("Host", "evil.example.com")
            .bytes(false),
    );
    bytes.extend(rpc("ping", json!({})).bytes(false));
    bytes.extend(rpc_with_id(json!("last"), "tools/list", json!({})).bytes(true));
    let Outcome::Replies(replies) = exchange(server.addr, bytes, HANG).await else {
        panic!("no answers");
    };
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [400, 403, 404, 200],
        "four pipelined requests, four answers in order"
    );
    assert_eq!(replies[3].json().unwrap()["id"], "last");
}

#[tokio::test]
async fn slowloris_heads_are_cut_off_at_the_read_timeout() {
    let server = catalogue_server(&[]).await;
    let mut stream = dangle(
        server.addr,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl",
    )
    .await;
    let (received, elapsed) = wait_closed(&mut stream).await;
    // hyper closes a connection whose head did not arrive; there is no request to answer.
    assert!(
        received.is_empty() || received.starts_with(b"HTTP/1.1 408"),
        "{:?}",
        String::from_utf8_lossy(&received)
    );
    within_read_timeout(elapsed);
}

#[tokio::test]
async fn slow_and_trickled_bodies_get_408() {
    let server = catalogue_server(&[]).await;
    // Stalled: the head promises 100 bytes, two arrive.
    let mut stalled = dangle(
        server.addr,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{}",
    )
    .await;
    // Trickled: one byte every 200 ms would take 200 s.
    let (mut trickled, trickle_start) = dangle(
        server.addr,
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n",
    )
    .await;
    let (mut reader, mut writer) = trickled.split();
    let trickle = async {
        for _ in 0..100 {
            if writer.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let read = async {
        let start = trickle_start;
        let mut received = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(HANG, reader.read(&mut buf)).await {
                Err(_) => panic!("trickled body held the connection for {HANG:?}"),
                Ok(Ok(0)) | Ok(Err(_)) => break,
                Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
            }
        }
        (received, start.elapsed())
    };
    let ((trickled_reply, trickled_elapsed), ()) = tokio::select! {
        r = read => (r, ()),
        () = trickle => panic!("the trickle finished before the server gave up"),
    };
    let (stalled_reply, stalled_elapsed) = wait_closed(&mut stalled).await;
    for (what, reply, elapsed) in [
        ("stalled", stalled_reply, stalled_elapsed),
        ("trickled", trickled_reply, trickled_elapsed),
    ] {
        let replies = parse_replies(&reply);
        assert_eq!(
            replies.len(),
            1,
            "{what}: {:?}",
            String::from_utf8_lossy(&reply)
        );
        assert_eq!(replies[0].status, 408, "{what}: {}", replies[0].text());
        assert_eq!(
            replies[0].json().unwrap()["error"]["code"],
            -32600,
            "{what}"
        );
        assert_eq!(replies[0].header("connection"), Some("close"), "{what}");
        within_read_timeout(elapsed);
    }
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let server = catalogue_server(&[]).await;
    let mut stream = dangle(
        server.addr,
        b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    )
    .await;
    let (received, elapsed) = wait_closed(&mut stream).await;
    assert!(
        received.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&received)
    );
    within_read_timeout(elapsed);
}

#[tokio::test]
async fn five_hundred_slowloris_connections_do_not_starve_real_clients() {
    let server = catalogue_server(&[]).await;
    let mut dangling = Vec::new();
    for i in 0..500 {
        let bytes: &[u8] = if i % 2 == 0 {
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        } else {
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
        };
        dangling.push(dangle(server.addr, bytes).await);
    }
    // Real requests are answered at once while the slow ones wait.
    for _ in 0..20 {
        let start = Instant::now();
        still_serving(server.addr).await;
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "a good request took {:?}",
            start.elapsed()
        );
    }
    // And the slow ones are all gone after the read timeout.
    let start = Instant::now();
    for stream in &mut dangling {
        let _ = wait_closed(stream).await;
    }
    assert!(
        start.elapsed() < Duration::from_secs(READ_TIMEOUT_SECS + 5),
        "500 slow connections lingered {:?}",
        start.elapsed()
    );
    still_serving(server.addr).await;
}

// ---------------------------------------------------------------------------
// Auth on: hostile tokens over HTTP, and the issuer going down
// ---------------------------------------------------------------------------

#[tokio::test]
async fn hostile_tokens_are_refused_with_a_challenge() {
    let key = TestKey::p256("k1");
    let stranger = TestKey::p256("k1");
    let issuer = Issuer::start(&[&key]).await;
    let server = catalogue_server(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
    ])
    .await;
    let table = token_cases(&issuer, &key, &stranger);
    let count = run_table(server.addr, &table).await;
    println!("hostile tokens: {count} cases passed");
}

#[tokio::test]
async fn a_warm_basket_keeps_verifying_while_the_issuer_is_down() {
    let key = TestKey::p256("k1");
    let issuer = Issuer::start(&[&key]).await;
    let server = catalogue_server(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_AUTH_JWKS_MIN_REFRESH_SECS", "0"),
    ])
    .await;
    let token = |who: &str| key.sign(&issuer.claims(AUDIENCE, who, ""));
    *server.token.lock().unwrap() = Some(token("alice"));
    let basket = server.ok("create_basket", json!({})).await["basket_id"]
        .as_str()
        .unwrap()
        .to_string();
    let fetched = issuer.fetches();
    assert!(fetched >= 1, "the JWKS was fetched at start-up");

    issuer.down.store(true, Ordering::SeqCst);
    // Fresh tokens from the same key, for old and new subjects, keep working.
    for who in ["alice", "bob", "carol"] {
        *server.token.lock().unwrap() = Some(token(who));
        server.ok("create_basket", json!({})).await;
    }
    *server.token.lock().unwrap() = Some(token("alice"));
    server
        .ok(
            "add_item",
            json!({"basket_id": basket, "sku": "TEA", "quantity": 1}),
        )
        .await;
    // A burst, concurrently, all verified from the cache.
    let calls = (0..32).map(|_| server.ok("view_basket", json!({"basket_id": basket})));
    futures::future::join_all(calls).await;

    // A token from a key the cache does not know: a refetch is tried, fails fast, and it is refused.
    let rotated = TestKey::p256("k2");
    let start = Instant::now();
    let answer = exchange(
        server.addr,
        call("create_basket", json!({}))
            .set(
                "Authorization",
                &format!(
                    "Bearer {}",
                    rotated.sign(&issuer.claims(AUDIENCE, "alice", ""))
                ),
            )
            .bytes(true),
        HANG,
    )
    .await;
    let Outcome::Replies(replies) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(replies[0].status, 401);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "refusal took {:?}",
        start.elapsed()
    );
    // ... and the cached key still verifies afterwards.
    server.ok("view_basket", json!({"basket_id": basket})).await;

    // The issuer comes back with the rotated key: it is picked up.
    issuer.set_keys(&[&key, &rotated]);
    issuer.down.store(false, Ordering::SeqCst);
    *server.token.lock().unwrap() = Some(rotated.sign(&issuer.claims(AUDIENCE, "alice", "")));
    server.ok("view_basket", json!({"basket_id": basket})).await;
}

// ---------------------------------------------------------------------------
// CloudFront origin protection: the secret header, over HTTP
// ---------------------------------------------------------------------------

#[tokio::test]
async fn without_the_cdn_secret_every_path_is_403() {
    let server = bare(&[
        ("MCP_ORIGIN_SECRET", ORIGIN_SECRET),
        ("MCP_READ_TIMEOUT_SECS", "2"),
    ])
    .await;
    let table = origin_secret_cases();
    let count = run_table(server.addr, &table).await;
    println!("origin secret: {count} cases passed");
}

// ---------------------------------------------------------------------------
// The catalogue as the fuzzer's seed corpus
// ---------------------------------------------------------------------------

/// With `HOSTILE_SEEDS_DIR` set, writes every catalogue case (and each body
/// again with the fuzzer's header-helper flags) in the input format of
/// `fuzz/fuzz_targets/request.rs`; `scripts/fuzz.sh --seeds` runs it. Without
/// the variable it only checks that every case can be written.
#[test]
fn export_fuzz_seeds() {
    let dir = std::env::var_os("HOSTILE_SEEDS_DIR").map(std::path::PathBuf::from);
    let mut cases = Vec::new();
    cases.extend(envelope_cases());
    cases.extend(meta_cases());
    cases.extend(header_cases());
    cases.extend(size_and_params_cases());
    cases.extend(method_and_path_cases());
    let mut written = 0;
    for case in cases
        .iter()
        .filter(|c| c.req.raw.is_none() && c.req.body.len() <= 16 * 1024)
    {
        let req = &case.req;
        let mut exact = vec![0u8];
        exact.extend(format!(":method {}\n:path {}\n", req.method, req.target).into_bytes());
        for (k, v) in &req.headers {
            exact.extend_from_slice(k.as_bytes());
            exact.extend_from_slice(b": ");
            exact.extend_from_slice(v);
            exact.push(b'\n');
        }
        exact.push(b'\n');
        exact.extend_from_slice(&req.body);
        let mut helped = vec![0x3f];
        helped.extend_from_slice(&req.body);
        let slug: String = case
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join(format!("hostile-{slug}")), &exact).unwrap();
            std::fs::write(dir.join(format!("hostile-{slug}-helped")), &helped).unwrap();
        }
        written += 1;
    }
    assert!(written >= 80, "only {written} seeds");
}
