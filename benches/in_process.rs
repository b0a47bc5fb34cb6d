//! In-process requests through the whole tower stack, no sockets: what one request costs in
//! mcp-lambda compared with the same handler on bare rmcp, with auth off and on (per signing
//! algorithm, warm JWKS), and what the front costs when it refuses a request by itself.
//!
//! Run with: `cargo bench --bench in_process` (needs `openssl` for the RSA test key; signing the
//! 5000 distinct RS256 and PS256 tokens for `auth/authorize_new` takes a few seconds).
//!
//! The front's pieces (envelope checks, cache-header mapping) are private, so they are measured
//! through the public service: refusals never reach rmcp, so `front/*` is the front alone; the
//! answer's size is what the cache-hint and list layers could scale with, so
//! `request/*/tools_list_53` (a 7 KB list) against `tools_list` (3 tools) shows whether they do.

use mcp_lambda_test_support::{jwt, tools};
use std::{collections::HashMap, hint::black_box, sync::Arc};

use bytes::Bytes;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use http::Request;
use http_body_util::{BodyExt, Full};
use mcp_lambda::{App, Config, auth::Authenticator};
use rmcp::transport::{
    StreamableHttpServerConfig, StreamableHttpService,
    streamable_http_server::session::local::LocalSessionManager,
};
use serde_json::{Value, json};
use tokio::runtime::Runtime;
use tools::BenchTools;
use tower::ServiceExt as _;

const AUDIENCE: &str = "https://bench.example/mcp";

fn config(vars: &[(&str, &str)]) -> Config {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|name| vars.get(name).cloned()).expect("a valid bench config")
}

fn bare_rmcp(tools: BenchTools) -> StreamableHttpService<BenchTools, LocalSessionManager> {
    StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true),
    )
}

/// One request as a client sends it (the library's own builder, `testing::request`), with
/// headers replaced or, when the value is `None`, removed, or another body.
#[derive(Clone)]
struct Shape {
    headers: http::HeaderMap,
    body: Bytes,
}

impl Shape {
    fn modern(method: &'static str, mut params: Value) -> Self {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}
        });
        let (parts, body) = mcp_lambda::testing::request(json!(1), method, params).into_parts();
        let body = futures::FutureExt::now_or_never(body.collect())
            .expect("a full body is ready at once")
            .unwrap_or_else(|never| match never {})
            .to_bytes();
        Self {
            headers: parts.headers,
            body,
        }
    }

    fn with(mut self, header: &'static str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.headers.insert(header, value.parse().unwrap()),
            None => self.headers.remove(header),
        };
        self
    }

    fn with_body(mut self, body: &'static [u8]) -> Self {
        self.body = Bytes::from_static(body);
        self
    }

    fn request(&self) -> Request<Full<Bytes>> {
        let mut request = Request::post("http://127.0.0.1:3000/mcp")
            .body(Full::new(self.body.clone()))
            .unwrap();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// Sends one request and collects the answer; the status is checked once, before timing.
macro_rules! send {
    ($service:expr, $request:expr) => {{
        let response = $service.clone().oneshot($request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, body)
    }};
}

fn shapes() -> Vec<(&'static str, Shape)> {
    vec![
        ("discover", Shape::modern("server/discover", json!({}))),
        ("tools_list", Shape::modern("tools/list", json!({}))),
        (
            "tools_call",
            Shape::modern(
                "tools/call",
                json!({"name": "echo", "arguments": {"message": "hello"}}),
            ),
        ),
    ]
}

fn requests(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for (label, tools) in [
        ("", BenchTools::new()),
        ("_53", BenchTools::with_extra_tools(50)),
    ] {
        let ours = App::new(config(&[])).server_per_request({
            let tools = tools.clone();
            move || tools.clone()
        });
        let ours = ours.service();
        let bare = bare_rmcp(tools);
        let mut group = c.benchmark_group("request");
        for (name, shape) in shapes() {
            if !label.is_empty() && name != "tools_list" {
                continue;
            }
            let (status, body) = rt.block_on(async { send!(ours, shape.request()) });
            assert_eq!(status, 200, "mcp-lambda {name}: {body:?}");
            let (status, body) = rt.block_on(async { send!(bare, shape.request()) });
            assert_eq!(status, 200, "bare rmcp {name}: {body:?}");
            group.bench_function(format!("mcp_lambda/{name}{label}"), |b| {
                b.iter_batched(
                    || shape.request(),
                    |request| rt.block_on(async { send!(ours, request) }),
                    BatchSize::SmallInput,
                )
            });
            group.bench_function(format!("bare_rmcp/{name}{label}"), |b| {
                b.iter_batched(
                    || shape.request(),
                    |request| rt.block_on(async { send!(bare, request) }),
                    BatchSize::SmallInput,
                )
            });
        }
        group.finish();
    }
}

fn front_refusals(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = BenchTools::new();
    let ours = App::new(config(&[]))
        .server_per_request(move || tools.clone())
        .service();
    let list = Shape::modern("tools/list", json!({}));
    let cases = [
        ("parse_error_400", list.clone().with_body(b"{\"jsonrpc\":")),
        (
            "missing_version_header_400",
            list.clone().with("mcp-protocol-version", None),
        ),
        (
            "unsupported_version_400",
            list.clone()
                .with("mcp-protocol-version", Some("2099-01-01")),
        ),
        (
            "unsupported_media_type_415",
            list.clone().with("content-type", Some("text/plain")),
        ),
        (
            "body_too_large_413",
            list.clone().with("content-length", Some("2000000")),
        ),
    ];
    let mut group = c.benchmark_group("front");
    for (name, shape) in cases {
        let expected: u16 = name.rsplit('_').next().unwrap().parse().unwrap();
        let (status, body) = rt.block_on(async { send!(ours, shape.request()) });
        assert_eq!(status.as_u16(), expected, "{name}: {body:?}");
        group.bench_function(name, |b| {
            b.iter_batched(
                || shape.request(),
                |request| rt.block_on(async { send!(ours, request) }),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

struct Keys {
    rsa: jwt::TestKey,
    p256: jwt::TestKey,
    ed25519: jwt::TestKey,
}

impl Keys {
    fn token(&self, alg: &str, claims: &Value) -> String {
        let key = match alg {
            "RS256" | "PS256" => &self.rsa,
            "ES256" => &self.p256,
            _ => &self.ed25519,
        };
        key.sign_with(json!({"alg": alg, "typ": "JWT", "kid": key.kid}), claims)
    }
}

const ALGS: [&str; 4] = ["RS256", "PS256", "ES256", "EdDSA"];

/// Distinct tokens per algorithm for `auth/authorize_new`: more than the 4096 verified tokens
/// the authenticator remembers.
const NEW_TOKENS: usize = 5000;

fn auth(c: &mut Criterion) {
    let rt: Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let keys = Keys {
        rsa: jwt::TestKey::rsa("rsa"),
        p256: jwt::TestKey::p256("p256"),
        ed25519: jwt::TestKey::ed25519("ed25519"),
    };
    let issuer = rt.block_on(jwt::Issuer::start(&[&keys.rsa, &keys.p256, &keys.ed25519]));
    let claims = issuer.claims(AUDIENCE, "bench-user", "");
    let vars = [
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
    ];
    let settings = config(&vars).auth().cloned().expect("auth is on");

    // The verification alone: bearer header → principal, as the front calls it.
    let authenticator = Authenticator::new(Arc::new(settings));
    rt.block_on(authenticator.warm());
    let uri: http::Uri = "http://127.0.0.1:3000/mcp".parse().unwrap();
    let authorize = |token: &str| {
        let mut headers = http::HeaderMap::new();
        let bearer = format!("Bearer {token}");
        headers.insert(http::header::AUTHORIZATION, bearer.parse().unwrap());
        headers
    };
    // A token seen before: the authenticator remembers it (by SHA-256, until `exp`).
    let mut group = c.benchmark_group("auth/authorize_repeat");
    for alg in ALGS {
        let headers = authorize(&keys.token(alg, &claims));
        rt.block_on(authenticator.authorize(&headers, &uri, "tools/list", None))
            .expect("a valid token");
        group.bench_function(alg, |b| {
            b.iter(|| {
                rt.block_on(authenticator.authorize(black_box(&headers), &uri, "tools/list", None))
                    .unwrap()
            })
        });
    }
    group.finish();
    // A token never seen: the signature is checked. A pool of distinct tokens (a `jti` each)
    // larger than the authenticator's memory of 4096, cycled, so every request misses it.
    let mut group = c.benchmark_group("auth/authorize_new");
    for alg in ALGS {
        let pool: Vec<http::HeaderMap> = (0..NEW_TOKENS)
            .map(|i| {
                let mut claims = claims.clone();
                claims["jti"] = json!(format!("bench-{i}"));
                authorize(&keys.token(alg, &claims))
            })
            .collect();
        let mut next = pool.iter().cycle();
        group.bench_function(alg, |b| {
            b.iter(|| {
                let headers = next.next().unwrap();
                rt.block_on(authenticator.authorize(black_box(headers), &uri, "tools/list", None))
                    .unwrap()
            })
        });
    }
    group.finish();

    // The whole request, auth off and on (the same token each time, as a client sends it):
    // the ratio is what auth adds to a request.
    let tools = BenchTools::new();
    let off = App::new(config(&[])).server_per_request({
        let tools = tools.clone();
        move || tools.clone()
    });
    let off = off.service();
    let on = App::new(config(&vars))
        .server_per_request(move || tools.clone())
        .service();
    let mut group = c.benchmark_group("auth/tools_list");
    let list = Shape::modern("tools/list", json!({}));
    group.bench_function("off", |b| {
        b.iter_batched(
            || list.request(),
            |request| rt.block_on(async { send!(off, request) }),
            BatchSize::SmallInput,
        )
    });
    for alg in ALGS {
        let shape = list.clone().with(
            "authorization",
            Some(&format!("Bearer {}", keys.token(alg, &claims))),
        );
        let (status, body) = rt.block_on(async { send!(on, shape.request()) });
        assert_eq!(status, 200, "{alg}: {body:?}");
        group.bench_function(alg, |b| {
            b.iter_batched(
                || shape.request(),
                |request| rt.block_on(async { send!(on, request) }),
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    drop(issuer);
}

criterion_group!(benches, requests, front_refusals, auth);
criterion_main!(benches);
