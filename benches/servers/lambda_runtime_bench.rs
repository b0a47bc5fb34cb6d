//! Run with `benches/lambda-runtime.sh` (which builds it and starts DynamoDB Local), or:
//! `bench_lambda_runtime BASKET HELLO DYNAMODB_ENDPOINT OUT.jsonl LOG_DIR INITS ROUNDS BATCH
//! CONCURRENCY BURST [EMULATED]`.
//!
//! The basket binary and a minimal `lambda_http` function (`bench_lambda_hello`), each run as a
//! Lambda function under its own loopback Runtime API (2018-06-01: the emulator
//! `tests/dynamodb_local/lambda_runtime.rs` runs against too, `mcp_lambda_test_support::lambda_runtime`), measured
//! the way Lambda measures them:
//!
//! - **INIT**: from exec to the function's first `GET /runtime/invocation/next` (where Lambda's
//!   INIT phase ends), `INITS` fresh processes of each, interleaved; with the process's CPU time
//!   (`utime + stime`) at that moment, and the duration of the first (cold) invocation after it.
//!   The basket runs with auth on (an RS256 issuer on loopback, so INIT fetches its JWKS) and its
//!   handles in DynamoDB Local (`MCP_HANDLES_TABLE`, so INIT warms the table up).
//! - **Duration of an invocation**: from the event handed out on `/next` to the function's next
//!   `/next` (where Lambda's Invoke phase, and its billed duration, ends), and the response
//!   latency (event out → `/response` body received), for `tools/list`, `view_basket` (a handle
//!   read; a DynamoDB `UpdateItem` that slides the expiry), `add_item` (a handle write: a
//!   consistent `GetItem` and a conditional `UpdateItem`) and the hello function. `ROUNDS` rounds
//!   of `BATCH` invocations per operation, the order rotated each round, after a warm-up; with
//!   each function's CPU time over every batch.
//!
//! - **INIT on an emulated network** (when `EMULATED` is `ISSUER_RTT_MS,AWS_RTT_MS`, e.g. `40,4`):
//!   the basket's dependencies each behind a loopback proxy that delays every byte by half the
//!   round trip each way and a new connection by one round trip (the TCP handshake): the issuer
//!   over HTTPS with a test CA (`MCP_AUTH_CA_FILE`), its metadata found by discovery; DynamoDB
//!   Local; and the request-state key from an SSM stand-in (`MCP_REQUEST_STATE_KEY_SSM_PARAMETER`),
//!   against the hello, `INITS` starts of each.
//!
//! Every answer is checked (status 200, a JSON-RPC result, not a tool error). Writes one JSON
//! line per measurement to `OUT.jsonl`; the functions' logs go to `LOG_DIR`. Tokens are never
//! written anywhere.

use mcp_lambda_test_support::basket::REQUEST_STATE_KEY;
use mcp_lambda_test_support::lambda_runtime::MeasuredFunction as Function;
use mcp_lambda_test_support::{dynamodb, jwt};

use std::{
    convert::Infallible,
    fs::File,
    io::Write as _,
    net::SocketAddr,
    path::PathBuf,
    process::ExitCode,
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The audience the basket is configured with and the bench token is issued for.
const AUDIENCE: &str = "https://bench.example/mcp";
/// The table the benchmark keeps its baskets in (created if missing).
const TABLE: &str = "mcp-handles-bench";
/// A Function URL event; its body and MCP headers are replaced per invocation.
const EVENT: &str = include_str!("../../events/function_url_tools_call.json");
/// Invocations of each operation before measuring.
const WARM_UP: usize = 20;
/// `add_item` calls per basket before a new one is made (4 SKUs × at most 1000 units each).
const ADDS_PER_BASKET: usize = 2000;
const SKUS: [&str; 4] = ["TEA", "COFFEE", "SUGAR", "MILK"];

/// `env` as [`Function::start`] takes it.
fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// The operations measured.
#[derive(Clone, Copy, PartialEq)]
enum Op {
    Hello,
    /// The hello on a current-thread runtime (`BENCH_HELLO_THREADS=one`).
    HelloOneThread,
    ToolsList,
    ViewBasket,
    AddItem,
}

impl Op {
    const ALL: [Op; 5] = [
        Op::Hello,
        Op::HelloOneThread,
        Op::ToolsList,
        Op::ViewBasket,
        Op::AddItem,
    ];

    fn is_hello(self) -> bool {
        matches!(self, Op::Hello | Op::HelloOneThread)
    }

    fn name(self) -> &'static str {
        match self {
            Op::Hello => "hello",
            Op::HelloOneThread => "hello-one-thread",
            Op::ToolsList => "tools/list",
            Op::ViewBasket => "view_basket",
            Op::AddItem => "add_item",
        }
    }
}

/// A Function URL event carrying one MCP request, as the given bearer.
fn mcp_event(id: u64, method: &str, params: Value, token: &str) -> String {
    let mut event: Value = serde_json::from_str(EVENT).expect("the event file is JSON");
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    event["body"] = body.to_string().into();
    event["isBase64Encoded"] = false.into();
    let headers = event["headers"].as_object_mut().unwrap();
    headers.remove("content-length");
    headers.remove("mcp-name");
    headers.insert("mcp-method".into(), method.into());
    if let Some(name) = params["name"].as_str() {
        headers.insert("mcp-name".into(), name.into());
    }
    headers.insert("authorization".into(), format!("Bearer {token}").into());
    event.to_string()
}

/// The JSON-RPC result inside a buffered `lambda_http` answer, or why there is none.
fn result_of(body: &[u8]) -> Result<Value, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    if doc["statusCode"] != 200 {
        return Err(format!("status {}: {}", doc["statusCode"], doc["body"]));
    }
    let rpc: Value = serde_json::from_str(doc["body"].as_str().unwrap_or_default())
        .map_err(|e| format!("body not JSON: {e}"))?;
    let result = rpc
        .get("result")
        .ok_or_else(|| format!("no result: {rpc}"))?;
    if result["isError"] == true {
        return Err(format!("tool error: {result}"));
    }
    Ok(result.clone())
}

struct Bench {
    basket: PathBuf,
    hello: PathBuf,
    basket_env: Vec<(String, String)>,
    token: String,
    out: File,
    logs: PathBuf,
    next_rpc: u64,
}

impl Bench {
    fn record(&mut self, line: Value) -> Result<(), String> {
        writeln!(self.out, "{line}").map_err(|e| e.to_string())
    }

    fn event(&mut self, method: &str, params: Value) -> String {
        self.next_rpc += 1;
        mcp_event(self.next_rpc, method, params, &self.token)
    }

    async fn start(&self, hello: bool) -> Result<Function, String> {
        if hello {
            Function::start(&self.hello, &[], &self.logs.join("hello.log")).await
        } else {
            Function::start(
                &self.basket,
                &pairs(&self.basket_env),
                &self.logs.join("basket.log"),
            )
            .await
        }
    }

    /// `inits` fresh processes of each function, interleaved.
    async fn inits(&mut self, inits: usize) -> Result<(), String> {
        let (env, token) = (self.basket_env.clone(), self.token.clone());
        self.starts(inits, &env, &token, "basket.log", "init", json!({}))
            .await
    }

    /// `inits` fresh processes of each function, interleaved, the basket with `env` and its
    /// cold `tools/list` as `token`: one `kind` record per start, with `extra` fields.
    async fn starts(
        &mut self,
        inits: usize,
        env: &[(String, String)],
        token: &str,
        log: &str,
        kind: &str,
        extra: Value,
    ) -> Result<(), String> {
        for run in 0..inits {
            for hello in [true, false] {
                let mut function = if hello {
                    Function::start(&self.hello, &[], &self.logs.join("hello.log")).await?
                } else {
                    Function::start(&self.basket, &pairs(env), &self.logs.join(log)).await?
                };
                let (init, ticks) = function.init().await?;
                let (_, init_rss_kib) = function.memory_kib();
                self.next_rpc += 1;
                let event = mcp_event(self.next_rpc, "tools/list", json!({}), token);
                let (duration, latency, body) = function.invoke(&event).await?;
                let (first_peak_rss_kib, first_rss_kib) = function.memory_kib();
                if !hello {
                    result_of(&body).map_err(|e| format!("cold tools/list ({kind}): {e}"))?;
                }
                drop(function);
                let mut record = json!({
                    "kind": kind,
                    "function": if hello { "hello" } else { "basket" },
                    "run": run,
                    "init_ms": init.as_secs_f64() * 1e3,
                    "init_cpu_ticks": ticks,
                    "first_duration_ms": duration.as_secs_f64() * 1e3,
                    "first_latency_ms": latency.as_secs_f64() * 1e3,
                    "init_rss_kib": init_rss_kib,
                    "first_peak_rss_kib": first_peak_rss_kib,
                    "first_rss_kib": first_rss_kib,
                });
                if let (Some(record), Some(extra)) = (record.as_object_mut(), extra.as_object()) {
                    record.extend(extra.clone());
                }
                self.record(record)?;
                // Let the page cache and the ports settle between starts.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// INIT with every dependency of the basket behind a network of `issuer_rtt` (the issuer,
    /// over HTTPS) and `aws_rtt` (DynamoDB, SSM) round trips; the hello has none.
    async fn inits_emulated(
        &mut self,
        inits: usize,
        key: &jwt::TestKey,
        dynamodb: &str,
        issuer_rtt: Duration,
        aws_rtt: Duration,
    ) -> Result<(), String> {
        let (issuer, ca) = jwt::Issuer::start_tls(&[key]).await;
        let ca_file = self.logs.join("issuer-ca.pem");
        std::fs::write(&ca_file, ca).map_err(|e| format!("{}: {e}", ca_file.display()))?;
        let issuer_addr = issuer.url.trim_start_matches("https://").to_owned();
        let issuer_url = format!("https://{}", delay_proxy(&issuer_addr, issuer_rtt).await?);
        let dynamodb_url = format!(
            "http://{}",
            delay_proxy(dynamodb.trim_start_matches("http://"), aws_rtt).await?
        );
        let ssm_url = format!(
            "http://{}",
            delay_proxy(&ssm_stand_in().await?, aws_rtt).await?
        );
        let mut env = dynamodb::basket_env(&dynamodb_url, TABLE);
        env.extend(
            [
                ("MCP_AUTH_ISSUER", issuer_url.as_str()),
                ("MCP_AUTH_AUDIENCE", AUDIENCE),
                ("MCP_AUTH_CA_FILE", &ca_file.display().to_string()),
                ("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", SSM_PARAMETER),
                ("AWS_ENDPOINT_URL_SSM", ssm_url.as_str()),
                ("MCP_ALLOWED_HOSTS", "*"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        // What each chain costs on these proxies (timer rounding included), measured.
        let issuer_chain = path_time(issuer_rtt, 3).await?;
        let dynamodb_chain = path_time(aws_rtt, 2).await?;
        let ssm_chain = path_time(aws_rtt, 1).await?;
        self.record(json!({
            "kind": "emulated_paths",
            "issuer_chain_ms": issuer_chain.as_secs_f64() * 1e3,
            "dynamodb_chain_ms": dynamodb_chain.as_secs_f64() * 1e3,
            "ssm_chain_ms": ssm_chain.as_secs_f64() * 1e3,
        }))?;
        let mut claims = issuer.claims(AUDIENCE, "bench", "");
        claims["iss"] = json!(issuer_url);
        claims["exp"] = json!(jwt::now() + 3600);
        let token = key.sign_with(
            json!({"alg": "RS256", "typ": "JWT", "kid": key.kid}),
            &claims,
        );
        let rtts = json!({
            "issuer_rtt_ms": issuer_rtt.as_secs_f64() * 1e3,
            "aws_rtt_ms": aws_rtt.as_secs_f64() * 1e3,
        });
        self.starts(
            inits,
            &env,
            &token,
            "basket-emulated.log",
            "init_emulated",
            rtts,
        )
        .await
    }

    /// Managed Instances: one basket process with `AWS_LAMBDA_MAX_CONCURRENCY=concurrency`,
    /// sent `burst` invocations of each operation at once; its CPU per invocation and the
    /// response latency (no billed duration: Managed Instances bill the instance, not the time).
    async fn concurrent(&mut self, concurrency: usize, burst: usize) -> Result<(), String> {
        let mut env = self.basket_env.clone();
        env.push(("AWS_LAMBDA_MAX_CONCURRENCY".into(), concurrency.to_string()));
        let mut function = Function::start(
            &self.basket,
            &pairs(&env),
            &self.logs.join("basket-concurrent.log"),
        )
        .await?;
        function.init().await?;
        // Enough baskets that concurrent adds rarely meet on one (a meeting is retried, and
        // counted by the metrics as one more read and write).
        let mut baskets = Vec::new();
        for _ in 0..concurrency * 4 {
            let event = self.event(
                "tools/call",
                json!({"name": "create_basket", "arguments": {}}),
            );
            let (_, _, body) = function.invoke(&event).await?;
            let created = result_of(&body).map_err(|e| format!("create_basket: {e}"))?;
            baskets.push(created["structuredContent"]["basket_id"].clone());
        }
        for (pass, op) in [Op::ToolsList, Op::ViewBasket, Op::AddItem, Op::ToolsList]
            .into_iter()
            .enumerate()
        {
            let mut receivers = Vec::with_capacity(burst);
            let ticks = function.cpu_ticks();
            let started = Instant::now();
            for k in 0..burst {
                let basket_id = &baskets[k % baskets.len()];
                let event = match op {
                    Op::ViewBasket => self.event(
                        "tools/call",
                        json!({"name": "view_basket", "arguments": {"basket_id": basket_id}}),
                    ),
                    Op::AddItem => self.event(
                        "tools/call",
                        json!({"name": "add_item", "arguments":
                            {"basket_id": basket_id, "sku": SKUS[k % SKUS.len()], "quantity": 1}}),
                    ),
                    _ => self.event("tools/list", json!({})),
                };
                receivers.push(function.enqueue(&event));
            }
            let mut latencies = Vec::with_capacity(burst);
            for rx in receivers {
                let done = tokio::time::timeout(Duration::from_secs(120), rx)
                    .await
                    .map_err(|_| "no answer within 120 s".to_string())?
                    .map_err(|_| "the emulator lost the invocation".to_string())?;
                if done.error {
                    return Err(format!("{}: posted an error", op.name()));
                }
                result_of(&done.body()).map_err(|e| format!("{} (concurrent): {e}", op.name()))?;
                latencies.push((done.answered - done.out).as_secs_f64() * 1e3);
            }
            let wall = started.elapsed();
            let ticks = function.cpu_ticks().saturating_sub(ticks);
            // The first pass warms the process up and is not recorded.
            if pass > 0 {
                self.record(json!({
                    "kind": "concurrent",
                    "op": op.name(),
                    "concurrency": concurrency,
                    "invocations": burst,
                    "cpu_ticks": ticks,
                    "wall_ms": wall.as_secs_f64() * 1e3,
                    "latency_ms": latencies,
                }))?;
            }
        }
        Ok(())
    }

    /// Warm invocations: one basket process and two hello processes (tokio's multi-threaded
    /// runtime, and one thread), `rounds` × `batch` of each operation.
    async fn warm(&mut self, rounds: usize, batch: usize) -> Result<(), String> {
        let mut hello = self.start(true).await?;
        let mut hello_one_thread = Function::start(
            &self.hello,
            &[("BENCH_HELLO_THREADS", "one")],
            &self.logs.join("hello-one-thread.log"),
        )
        .await?;
        let mut basket = self.start(false).await?;
        hello.init().await?;
        hello_one_thread.init().await?;
        basket.init().await?;
        let mut basket_id = Value::Null;
        let mut adds = ADDS_PER_BASKET;
        for round in 0..=rounds {
            // Round 0 is the warm-up, not recorded.
            let per_op = if round == 0 { WARM_UP } else { batch };
            for k in 0..Op::ALL.len() {
                let op = Op::ALL[(k + round) % Op::ALL.len()];
                // `BENCH_OPS=hello,tools/list`: only these (for a profile of one operation).
                if let Ok(only) = std::env::var("BENCH_OPS")
                    && !only.split(',').any(|name| name == op.name())
                {
                    continue;
                }
                let function = match op {
                    Op::Hello => &mut hello,
                    Op::HelloOneThread => &mut hello_one_thread,
                    _ => &mut basket,
                };
                let mut durations = Vec::with_capacity(per_op);
                let mut latencies = Vec::with_capacity(per_op);
                let mut setup = Vec::new();
                let mut ticks = function.cpu_ticks();
                let mut invocations = 0usize;
                while durations.len() < per_op {
                    if !op.is_hello() && adds >= ADDS_PER_BASKET {
                        // A new basket (not measured): its CPU is left out of the batch's.
                        let before = function.cpu_ticks();
                        self.next_rpc += 1;
                        let event = mcp_event(
                            self.next_rpc,
                            "tools/call",
                            json!({"name": "create_basket", "arguments": {}}),
                            &self.token,
                        );
                        let (_, _, body) = function.invoke(&event).await?;
                        let created =
                            result_of(&body).map_err(|e| format!("create_basket: {e}"))?;
                        basket_id = created["structuredContent"]["basket_id"].clone();
                        if !basket_id.is_string() {
                            return Err(format!("create_basket gave no basket_id: {created}"));
                        }
                        adds = 0;
                        setup.push(function.cpu_ticks().saturating_sub(before));
                    }
                    let event = match op {
                        Op::Hello | Op::HelloOneThread | Op::ToolsList => {
                            self.event("tools/list", json!({}))
                        }
                        Op::ViewBasket => self.event(
                            "tools/call",
                            json!({"name": "view_basket", "arguments": {"basket_id": basket_id}}),
                        ),
                        Op::AddItem => {
                            adds += 1;
                            let sku = SKUS[adds % SKUS.len()];
                            self.event(
                                "tools/call",
                                json!({"name": "add_item", "arguments":
                                    {"basket_id": basket_id, "sku": sku, "quantity": 1}}),
                            )
                        }
                    };
                    let (duration, latency, body) = function.invoke(&event).await?;
                    invocations += 1;
                    let checked = if op.is_hello() {
                        serde_json::from_slice::<Value>(&body)
                            .ok()
                            .filter(|doc| doc["statusCode"] == 200)
                            .map(|_| ())
                            .ok_or_else(|| String::from_utf8_lossy(&body).into_owned())
                    } else {
                        result_of(&body).map(drop)
                    };
                    checked.map_err(|e| format!("{}: {e}", op.name()))?;
                    durations.push(duration.as_secs_f64() * 1e3);
                    latencies.push(latency.as_secs_f64() * 1e3);
                }
                ticks = function
                    .cpu_ticks()
                    .saturating_sub(ticks + setup.iter().sum::<u64>());
                if round > 0 {
                    self.record(json!({
                        "kind": "invoke",
                        "op": op.name(),
                        "round": round,
                        "invocations": invocations,
                        "cpu_ticks": ticks,
                        "duration_ms": durations,
                        "latency_ms": latencies,
                    }))?;
                }
            }
        }
        Ok(())
    }
}

async fn run(args: &[String]) -> Result<(), String> {
    let [
        basket,
        hello,
        endpoint,
        out,
        logs,
        inits,
        rounds,
        batch,
        concurrency,
        burst,
        emulated @ ..,
    ] = args
    else {
        return Err(
            "usage: BASKET HELLO DYNAMODB_ENDPOINT OUT.jsonl LOG_DIR INITS ROUNDS BATCH \
                    CONCURRENCY BURST [ISSUER_RTT_MS,AWS_RTT_MS]"
                .into(),
        );
    };
    let emulated = match emulated {
        [] => None,
        [rtts] => {
            let (issuer, aws) = rtts
                .split_once(',')
                .ok_or_else(|| format!("{rtts}: expected ISSUER_RTT_MS,AWS_RTT_MS"))?;
            let ms = |s: &str| {
                s.trim()
                    .parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|e| format!("{s}: {e}"))
            };
            Some((ms(issuer)?, ms(aws)?))
        }
        _ => return Err("one EMULATED argument at most".into()),
    };
    let number = |s: &String| s.parse::<usize>().map_err(|e| format!("{s}: {e}"));
    let (inits, rounds, batch) = (number(inits)?, number(rounds)?, number(batch)?);
    let (concurrency, burst) = (number(concurrency)?, number(burst)?);

    let key = jwt::TestKey::rsa("bench-rsa");
    let issuer = jwt::Issuer::start(&[&key]).await;
    let mut claims = issuer.claims(AUDIENCE, "bench", "");
    claims["exp"] = json!(jwt::now() + 3 * 3600);
    let token = key.sign_with(
        json!({"alg": "RS256", "typ": "JWT", "kid": key.kid}),
        &claims,
    );

    let client = dynamodb::client(endpoint, &dynamodb::timeouts()).await;
    mcp_lambda::handles::DynamoDbHandleStore::create_table(&client, TABLE)
        .await
        .map_err(|e| format!("creating the table {TABLE}: {e}"))?;
    let mut basket_env = dynamodb::basket_env(endpoint, TABLE);
    basket_env.extend(
        [
            ("MCP_AUTH_ISSUER", issuer.url.as_str()),
            ("MCP_AUTH_AUDIENCE", AUDIENCE),
            ("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY),
            ("MCP_ALLOWED_HOSTS", "*"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string())),
    );

    // `BENCH_BASKET_ENV=MCP_LOG=warn;MCP_METRICS=off`: settings of the basket to compare.
    if let Ok(extra) = std::env::var("BENCH_BASKET_ENV") {
        for pair in extra.split(';').filter(|p| !p.is_empty()) {
            let (name, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("BENCH_BASKET_ENV: {pair:?} is not NAME=VALUE"))?;
            basket_env.push((name.to_owned(), value.to_owned()));
        }
    }
    let mut bench = Bench {
        basket: basket.into(),
        hello: hello.into(),
        basket_env,
        token,
        out: File::create(out).map_err(|e| format!("{out}: {e}"))?,
        logs: logs.into(),
        next_rpc: 0,
    };
    bench.inits(inits).await?;
    if let Some((issuer_rtt, aws_rtt)) = emulated {
        bench
            .inits_emulated(inits, &key, endpoint, issuer_rtt, aws_rtt)
            .await?;
    }
    bench.warm(rounds, batch).await?;
    if concurrency > 0 {
        bench.concurrent(concurrency, burst).await?;
    }
    let largest = largest_item(&client).await?;
    bench.record(json!({
        "kind": "done",
        "jwks_fetches": issuer.fetches(),
        "largest_item_bytes": largest,
    }))
}

/// The size of an attribute value as DynamoDB counts it for capacity units: strings and binary
/// by their bytes, numbers by about one byte per two digits plus one, lists and maps 3 bytes
/// plus their elements (each map entry with its name), 1 byte for a boolean or null.
fn attribute_bytes(value: &aws_sdk_dynamodb::types::AttributeValue) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    match value {
        A::S(s) => s.len(),
        A::N(n) => n.trim_start_matches('-').len().div_ceil(2) + 1,
        A::B(b) => b.as_ref().len(),
        A::Bool(_) | A::Null(_) => 1,
        A::L(items) => 3 + items.iter().map(|v| 1 + attribute_bytes(v)).sum::<usize>(),
        A::M(map) => {
            3 + map
                .iter()
                .map(|(k, v)| 1 + k.len() + attribute_bytes(v))
                .sum::<usize>()
        }
        A::Ss(set) => set.iter().map(String::len).sum(),
        A::Ns(set) => set.iter().map(|n| n.len().div_ceil(2) + 1).sum(),
        A::Bs(set) => set.iter().map(|b| b.as_ref().len()).sum(),
        _ => 0,
    }
}

/// The largest item in the bench table, in bytes as DynamoDB sizes items (names + values): what
/// decides how many request units a read (4 KB each) or a write (1 KB each) of it takes.
async fn largest_item(client: &aws_sdk_dynamodb::Client) -> Result<usize, String> {
    let mut largest = 0;
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(TABLE)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(|e| format!("scanning {TABLE}: {e}"))?;
        for item in page.items() {
            let size: usize = item
                .iter()
                .map(|(name, value)| name.len() + attribute_bytes(value))
                .sum();
            largest = largest.max(size);
        }
        start = page.last_evaluated_key().cloned();
        if start.is_none() {
            return Ok(largest);
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench_lambda_runtime: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The SSM parameter the emulated run keeps the request-state key in.
const SSM_PARAMETER: &str = "/mcp/request-state-key";

/// A loopback proxy to `upstream` that delays every byte by half of `rtt` each way and each new
/// connection by one `rtt` (the TCP handshake a real path costs); returns where it listens.
async fn delay_proxy(upstream: &str, rtt: Duration) -> Result<SocketAddr, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
    async fn pipe(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
        let (tx, mut rx) =
            tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Vec<u8>)>();
        // Bytes keep their order and their spacing: each leaves `delay` after it arrived.
        let writer = tokio::spawn(async move {
            while let Some((due, bytes)) = rx.recv().await {
                tokio::time::sleep_until(due).await;
                if to.write_all(&bytes).await.is_err() {
                    return;
                }
            }
            let _ = to.shutdown().await;
        });
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = from.read(&mut buf).await {
            if n == 0
                || tx
                    .send((tokio::time::Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
            {
                break;
            }
        }
        drop(tx);
        let _ = writer.await;
    }
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let upstream = upstream.trim_end_matches('/').to_owned();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let upstream = upstream.clone();
            tokio::spawn(async move {
                tokio::time::sleep(rtt).await;
                let Ok(server) = tokio::net::TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::join!(
                    pipe(client_read, server_write, rtt / 2),
                    pipe(server_read, client_write, rtt / 2)
                );
            });
        }
    });
    Ok(addr)
}

/// An SSM stand-in on loopback answering `GetParameter` with the request-state key (the
/// signature is checked by `conformance/tests/request_state.rs`; here only the time counts).
async fn ssm_stand_in() -> Result<String, String> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|request: Request<Incoming>| async move {
                    let target = request
                        .headers()
                        .get("x-amz-target")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    let _ = request.into_body().collect().await;
                    let (status, body) = if target == "AmazonSSM.GetParameter" {
                        (
                            200,
                            json!({"Parameter": {"Name": SSM_PARAMETER, "Type": "SecureString",
                                "Value": REQUEST_STATE_KEY, "Version": 1}}),
                        )
                    } else {
                        (400, json!({"__type": "UnknownOperationException"}))
                    };
                    Ok::<_, Infallible>(
                        Response::builder()
                            .status(status)
                            .header("content-type", "application/x-amz-json-1.1")
                            .body(Full::new(Bytes::from(body.to_string())))
                            .expect("a response"),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(addr.to_string())
}

/// The median time, over 7 tries, to open a connection through a [`delay_proxy`] of `rtt` and
/// make `exchanges` request–answer exchanges on it (one byte each way, to an echo server): what
/// a dependency chain of one new connection and that many exchanges costs on the emulated path.
async fn path_time(rtt: Duration, exchanges: usize) -> Result<Duration, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let echo = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let echo_addr = echo.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = echo.accept().await {
            tokio::spawn(async move {
                let mut byte = [0u8; 1];
                while stream.read_exact(&mut byte).await.is_ok() {
                    if stream.write_all(&byte).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let proxy = delay_proxy(&echo_addr.to_string(), rtt).await?;
    let mut times = Vec::new();
    for _ in 0..7 {
        let started = Instant::now();
        let mut stream = tokio::net::TcpStream::connect(proxy)
            .await
            .map_err(|e| e.to_string())?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        let mut byte = [0u8; 1];
        for _ in 0..exchanges {
            stream.write_all(b"x").await.map_err(|e| e.to_string())?;
            stream
                .read_exact(&mut byte)
                .await
                .map_err(|e| e.to_string())?;
        }
        times.push(started.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}
