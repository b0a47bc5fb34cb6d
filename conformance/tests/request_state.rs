//! The shared request-state key across server processes (as across Lambda instances), with the
//! conformance fixture server (this package's `conformance` binary, which cargo builds before
//! these tests) started as separate processes.
//!
//! - MRTR `requestState` sealed by one fixture process opens in a second process with the same
//!   key, is refused by one with a different key, and still opens after a rotation (new key
//!   signs, the old one in `MCP_REQUEST_STATE_KEY_PREVIOUS` verifies).
//! - Keys kept in SSM Parameter Store and Secrets Manager are fetched once at start-up by
//!   `Config::load` (the fixture's `main` calls it, as the basket's does) with SigV4-signed
//!   calls, checked here by a loopback stand-in that verifies every signature; a key fetched
//!   from SSM and the same key given inline seal and open each other's state (signed list
//!   cursors), a secret's `AWSPREVIOUS` still verifies, and a missing parameter stops start-up
//!   naming the variable.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";

fn b64(key: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(key)
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
}

/// A server binary on a loopback port, killed when dropped.
struct Proc {
    child: Child,
    addr: SocketAddr,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// Starts `binary` with exactly `env` (plus the bind address); `Err(stderr)` if it exits
    /// before serving.
    async fn start(binary: &Path, env: &[(&str, &str)]) -> Result<Proc, String> {
        let addr = free_port();
        let log = std::env::temp_dir().join(format!(
            "mcp-lambda-request-state-{}-{}.log",
            std::process::id(),
            addr.port()
        ));
        let mut command = Command::new(binary);
        for (name, _) in std::env::vars() {
            if name.starts_with("MCP_") || name.starts_with("AWS_") {
                command.env_remove(name);
            }
        }
        let child = command
            .env("MCP_BIND", addr.to_string())
            .env("MCP_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", binary.display()));
        let mut proc = Proc {
            child,
            addr,
            client: Client::builder(TokioExecutor::new()).build_http(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = proc.child.try_wait() {
                let stderr = std::fs::read_to_string(&log).unwrap_or_default();
                let _ = std::fs::remove_file(&log);
                return Err(format!("exited with {status}: {stderr}"));
            }
            let request = http::Request::get(format!("http://{addr}/healthz"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            if let Ok(response) = proc.client.request(request).await
                && response.status() == 200
            {
                let _ = std::fs::remove_file(&log);
                return Ok(proc);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{} did not serve within 20 s", binary.display());
    }

    /// One MCP 2026-07-28 request; the JSON-RPC response.
    async fn rpc(&self, method: &str, name: Option<&str>, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
        });
        // The library's own builder, addressed to this process.
        let (mut parts, body) = mcp_lambda::testing::request(json!(1), method, params).into_parts();
        parts.uri = format!("http://{}/mcp", self.addr).parse().unwrap();
        parts.headers.remove(http::header::HOST);
        parts.headers.remove("mcp-name");
        if let Some(name) = name {
            parts.headers.insert("mcp-name", name.parse().unwrap());
        }
        let response = self
            .client
            .request(http::Request::from_parts(parts, body))
            .await
            .unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
    }
}

/// The fixture server, built by cargo for this package's integration tests.
const CONFORMANCE: &str = env!("CARGO_BIN_EXE_conformance");

const MRTR_TOOL: &str = "test_input_required_result_request_state";

/// Round 1 on `server`: the sealed `requestState` it hands out.
async fn round_one(server: &Proc) -> String {
    let response = server
        .rpc(
            "tools/call",
            Some(MRTR_TOOL),
            json!({ "name": MRTR_TOOL, "arguments": {} }),
        )
        .await;
    assert_eq!(
        response["result"]["resultType"], "input_required",
        "{response}"
    );
    response["result"]["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState: {response}"))
        .to_owned()
}

/// Round 2 on `server` with `state` and the user's answer: the JSON-RPC response.
async fn round_two(server: &Proc, state: &str) -> Value {
    server
        .rpc(
            "tools/call",
            Some(MRTR_TOOL),
            json!({
                "name": MRTR_TOOL,
                "arguments": {},
                "requestState": state,
                "inputResponses": { "confirm": { "action": "accept", "content": { "ok": true } } },
            }),
        )
        .await
}

fn completed(response: &Value) -> bool {
    response["result"]["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.starts_with("state-ok: requestState verified"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_state_sealed_by_one_process_opens_in_another_with_the_same_key_only() {
    let binary = Path::new(CONFORMANCE);
    let (key_a, key_b) = (b64(&[0xA1; 32]), b64(&[0xB2; 32]));

    let first = Proc::start(binary, &[("MCP_REQUEST_STATE_KEY", &key_a)])
        .await
        .unwrap();
    let state = round_one(&first).await;
    drop(first);

    let same_key = Proc::start(binary, &[("MCP_REQUEST_STATE_KEY", &key_a)])
        .await
        .unwrap();
    let answer = round_two(&same_key, &state).await;
    assert!(completed(&answer), "same key, other process: {answer}");

    let other_key = Proc::start(binary, &[("MCP_REQUEST_STATE_KEY", &key_b)])
        .await
        .unwrap();
    let answer = round_two(&other_key, &state).await;
    assert_eq!(answer["error"]["code"], -32602, "other key: {answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("integrity"),
        "{answer}"
    );

    // Rotation: B signs now, A still verifies what was sealed before.
    let rotated = Proc::start(
        binary,
        &[
            ("MCP_REQUEST_STATE_KEY", &key_b),
            ("MCP_REQUEST_STATE_KEY_PREVIOUS", &key_a),
        ],
    )
    .await
    .unwrap();
    let answer = round_two(&rotated, &state).await;
    assert!(completed(&answer), "rotated, old state: {answer}");
    let fresh = round_one(&rotated).await;
    assert!(
        completed(&round_two(&other_key, &fresh).await),
        "new state is sealed with the new key"
    );
    assert!(completed(&round_two(&same_key, &state).await));
    assert_eq!(
        round_two(&same_key, &fresh).await["error"]["code"],
        -32602,
        "a process that only knows the old key refuses state sealed with the new one"
    );
}

// ---- Keys in SSM Parameter Store and Secrets Manager ---------------------------------------

/// A loopback stand-in for SSM `GetParameter` and Secrets Manager `GetSecretValue` that checks
/// each request's SigV4 signature (credentials `local`/`local`, region `us-east-1`).
struct FakeAws {
    url: String,
    calls: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeAws {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Secrets = HashMap<(String, String), String>;

impl FakeAws {
    async fn start(parameters: HashMap<String, String>, secrets: Secrets) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let calls = Arc::new(Mutex::new(Vec::new()));
        let state = Arc::new((parameters, secrets, calls.clone()));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: http::Request<hyper::body::Incoming>| {
                            let state = state.clone();
                            async move {
                                let (parts, body) = http::Request::into_parts(request);
                                let body = body.collect().await?.to_bytes();
                                let (status, answer) =
                                    answer(&state.0, &state.1, &state.2, &parts, &body);
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .status(status)
                                        .header("content-type", "application/x-amz-json-1.1")
                                        .body(Full::new(Bytes::from(answer.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { url, calls, task }
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

fn answer(
    parameters: &HashMap<String, String>,
    secrets: &Secrets,
    calls: &Mutex<Vec<String>>,
    parts: &http::request::Parts,
    body: &[u8],
) -> (u16, Value) {
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let target = header("x-amz-target");
    let service = match target.as_str() {
        "AmazonSSM.GetParameter" => "ssm",
        "secretsmanager.GetSecretValue" => "secretsmanager",
        _ => return (400, json!({ "__type": "UnknownOperationException" })),
    };
    if let Err(why) = verify_signature(parts, body, service) {
        return (
            403,
            json!({ "__type": "SignatureDoesNotMatch", "message": why }),
        );
    }
    let input: Value = serde_json::from_slice(body).unwrap_or_default();
    if service == "ssm" {
        let name = input["Name"].as_str().unwrap_or("");
        calls.lock().unwrap().push(format!("GetParameter {name}"));
        assert_eq!(
            input["WithDecryption"], true,
            "SecureStrings need decryption"
        );
        return match parameters.get(name) {
            Some(value) => (
                200,
                json!({ "Parameter": { "Name": name, "Type": "SecureString", "Value": value, "Version": 1 } }),
            ),
            None => (
                400,
                json!({ "__type": "ParameterNotFound", "message": format!("Parameter {name} not found.") }),
            ),
        };
    }
    let id = input["SecretId"].as_str().unwrap_or("").to_owned();
    let stage = input["VersionStage"]
        .as_str()
        .unwrap_or("AWSCURRENT")
        .to_owned();
    calls
        .lock()
        .unwrap()
        .push(format!("GetSecretValue {stage}"));
    match secrets.get(&(id, stage.clone())) {
        Some(value) => (
            200,
            json!({ "SecretString": value, "VersionStages": [stage] }),
        ),
        None => (
            400,
            json!({ "__type": "ResourceNotFoundException", "message": format!("Secrets Manager can't find the specified secret value for staging label: {stage}") }),
        ),
    }
}

/// Re-signs the request with the expected credentials, region and service and compares.
fn verify_signature(
    parts: &http::request::Parts,
    body: &[u8],
    service: &str,
) -> Result<(), String> {
    use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
    use aws_sigv4::sign::v4;

    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or(format!("no {name} header"))
    };
    let authorization = header("authorization")?;
    let signed_headers = authorization
        .split("SignedHeaders=")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .ok_or("no SignedHeaders")?;
    let signature = authorization
        .split("Signature=")
        .nth(1)
        .ok_or("no Signature")?;
    let date = header("x-amz-date")?;
    let time = parse_amz_date(date).ok_or("bad x-amz-date")?;
    let expected_scope = format!(
        "Credential=local/{}/us-east-1/{service}/aws4_request",
        &date[..8]
    );
    if !authorization.contains(&expected_scope) {
        return Err(format!("scope is not {expected_scope}: {authorization}"));
    }
    let headers: Vec<(&str, &str)> = signed_headers
        .split(';')
        .filter(|name| {
            !matches!(
                *name,
                "x-amz-date" | "x-amz-content-sha256" | "x-amz-security-token"
            )
        })
        .map(|name| Ok((name, header(name)?)))
        .collect::<Result<_, String>>()?;
    let uri = format!("http://{}{}", header("host")?, parts.uri.path());
    let identity =
        aws_credential_types::Credentials::new("local", "local", None, None, "test").into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region("us-east-1")
        .name(service)
        .time(time)
        .settings(SigningSettings::default())
        .build()
        .unwrap()
        .into();
    let signable = SignableRequest::new(
        parts.method.as_str(),
        uri,
        headers.into_iter(),
        SignableBody::Bytes(body),
    )
    .map_err(|e| e.to_string())?;
    let (_, expected) = sign(signable, &params)
        .map_err(|e| e.to_string())?
        .into_parts();
    if expected == signature {
        Ok(())
    } else {
        Err("signature mismatch".into())
    }
}

/// `20261129T143050Z` as a time.
fn parse_amz_date(text: &str) -> Option<SystemTime> {
    let num = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

/// `tools/list`, paged by mcp-lambda with signed cursors: `Ok(next cursor)` or
/// `Err(JSON-RPC error code)`.
async fn tools_page(server: &Proc, cursor: Option<&str>) -> Result<Option<String>, i64> {
    let params = match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    };
    let response = server.rpc("tools/list", None, params).await;
    if let Some(code) = response["error"]["code"].as_i64() {
        return Err(code);
    }
    assert!(response["result"]["tools"].is_array(), "{response}");
    Ok(response["result"]["nextCursor"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_from_ssm_and_secrets_manager_are_fetched_once_at_start_up_and_shared() {
    let (key_a, key_b) = ([0x5A; 32], [0x6B; 40]);
    let secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-state-key-AbCdEf";
    let fresh_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:never-rotated-XyZ";
    let aws = FakeAws::start(
        HashMap::from([
            ("/mcp/key-a".to_owned(), b64(&key_a)),
            ("/mcp/key-b".to_owned(), b64(&key_b)),
            ("/mcp/not-a-key".to_owned(), "hunter2".to_owned()),
        ]),
        HashMap::from([
            ((secret.to_owned(), "AWSCURRENT".to_owned()), b64(&key_b)),
            ((secret.to_owned(), "AWSPREVIOUS".to_owned()), b64(&key_a)),
            (
                (fresh_secret.to_owned(), "AWSCURRENT".to_owned()),
                b64(&key_a),
            ),
        ]),
    )
    .await;
    let server = Path::new(CONFORMANCE);
    let aws_env = [
        ("AWS_ENDPOINT_URL_SSM", aws.url.as_str()),
        ("AWS_ENDPOINT_URL_SECRETS_MANAGER", aws.url.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "local"),
        ("AWS_SECRET_ACCESS_KEY", "local"),
        ("MCP_PAGE_SIZE", "2"),
    ];
    fn join<'a>(
        base: &[(&'a str, &'a str)],
        extra: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        base.iter().chain(extra).copied().collect()
    }
    let with = |extra: &[(&'static str, &'static str)]| join(&aws_env, extra);

    // From SSM: one signed call at start-up.
    let ssm_a = Proc::start(
        server,
        &with(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/key-a")]),
    )
    .await
    .unwrap();
    assert_eq!(aws.calls(), ["GetParameter /mcp/key-a"]);
    let cursor_a = tools_page(&ssm_a, None)
        .await
        .unwrap()
        .expect("a second page");
    assert!(tools_page(&ssm_a, Some(&cursor_a)).await.is_ok());

    // The same key given inline opens it: every instance shares the key.
    let inline_a = b64(&key_a);
    let inline = Proc::start(
        server,
        &join(&aws_env, &[("MCP_REQUEST_STATE_KEY", &inline_a)]),
    )
    .await
    .unwrap();
    assert!(tools_page(&inline, Some(&cursor_a)).await.is_ok());

    // Another key refuses it.
    let ssm_b = Proc::start(
        server,
        &with(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/key-b")]),
    )
    .await
    .unwrap();
    assert_eq!(tools_page(&ssm_b, Some(&cursor_a)).await, Err(-32602));

    // Secrets Manager after a rotation: AWSCURRENT (B) signs, AWSPREVIOUS (A) still verifies.
    let rotated = Proc::start(server, &with(&[("MCP_REQUEST_STATE_KEY", secret)]))
        .await
        .unwrap();
    assert!(tools_page(&rotated, Some(&cursor_a)).await.is_ok());
    let cursor_b = tools_page(&rotated, None).await.unwrap().unwrap();
    assert!(tools_page(&ssm_b, Some(&cursor_b)).await.is_ok());
    assert_eq!(tools_page(&ssm_a, Some(&cursor_b)).await, Err(-32602));

    // A secret never rotated has no AWSPREVIOUS: skipped, not an error.
    let fresh = Proc::start(server, &with(&[("MCP_REQUEST_STATE_KEY", fresh_secret)]))
        .await
        .unwrap();
    assert!(tools_page(&fresh, Some(&cursor_a)).await.is_ok());
    assert_eq!(
        aws.calls(),
        [
            "GetParameter /mcp/key-a",
            "GetParameter /mcp/key-b",
            "GetSecretValue AWSCURRENT",
            "GetSecretValue AWSPREVIOUS",
            "GetSecretValue AWSCURRENT",
            "GetSecretValue AWSPREVIOUS",
        ],
        "one call per key, at start-up only"
    );

    // What cannot be used stops start-up, naming the variable and the cause.
    for (parameter, cause) in [
        ("/mcp/missing", "ParameterNotFound"),
        ("/mcp/not-a-key", "base64"),
    ] {
        let err = Proc::start(
            server,
            &with(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", parameter)]),
        )
        .await
        .err()
        .unwrap_or_else(|| panic!("{parameter}: the server started"));
        assert!(err.contains("MCP_REQUEST_STATE_KEY_SSM_PARAMETER"), "{err}");
        assert!(err.contains(cause), "{parameter}: {err}");
        assert!(!err.contains("hunter2"), "the value is never echoed: {err}");
    }
    // Wrong credentials: the stand-in refuses the signature, and start-up says so.
    let mut wrong = with(&[("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/key-a")]);
    wrong.retain(|(k, _)| *k != "AWS_SECRET_ACCESS_KEY");
    wrong.push(("AWS_SECRET_ACCESS_KEY", "not-the-secret"));
    let err = Proc::start(server, &wrong).await.err().unwrap();
    assert!(err.contains("SignatureDoesNotMatch"), "{err}");

    // An endpoint that does not answer fails start-up within the operation timeout.
    let nowhere = format!("http://{}", free_port());
    let mut away: Vec<(&str, &str)> = with(&[
        ("MCP_REQUEST_STATE_KEY_SSM_PARAMETER", "/mcp/key-a"),
        ("MCP_AWS_OPERATION_TIMEOUT_MS", "1500"),
    ]);
    away.retain(|(k, _)| *k != "AWS_ENDPOINT_URL_SSM");
    away.push(("AWS_ENDPOINT_URL_SSM", &nowhere));
    let started = Instant::now();
    let err = Proc::start(server, &away).await.err().unwrap();
    assert!(err.contains("MCP_REQUEST_STATE_KEY_SSM_PARAMETER"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A loopback issuer for introspection: its JWKS (empty of use: every token here is opaque)
/// and an RFC 7662 endpoint that records each request's `Authorization` and answers `active`
/// for the one token it issued.
struct Introspection {
    url: String,
    authorizations: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Introspection {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Introspection {
    async fn start(audience: &'static str) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let authorizations = Arc::new(Mutex::new(Vec::new()));
        let seen = authorizations.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let seen = seen.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: http::Request<hyper::body::Incoming>| {
                            let seen = seen.clone();
                            async move {
                                let (parts, body) = request.into_parts();
                                let body = body.collect().await?.to_bytes();
                                let answer = if parts.uri.path() == "/introspect" {
                                    seen.lock().unwrap().push(
                                        parts.headers["authorization"].to_str().unwrap().to_owned(),
                                    );
                                    let active = body.as_ref()
                                        == b"token=opaque-1&token_type_hint=access_token";
                                    json!({"active": active, "sub": "ada", "aud": audience,
                                           "exp": SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600})
                                } else {
                                    json!({"keys": []})
                                };
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(answer.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self {
            url,
            authorizations,
            task,
        }
    }
}

/// The introspection client's secret kept in SSM or Secrets Manager is fetched once at
/// start-up (a signed call the stand-in verifies) and sent as `client_secret_basic`; a missing
/// one stops start-up naming the variable and never showing a value.
#[tokio::test]
async fn an_introspection_secret_kept_in_aws_is_fetched_at_start_up_and_sent_to_the_issuer() {
    const AUDIENCE: &str = "https://mcp.example.com/mcp";
    let arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:introspection-AbC";
    let aws = FakeAws::start(
        HashMap::from([("/mcp/introspection".to_owned(), "ssm s3cret".to_owned())]),
        HashMap::from([(
            (arn.to_owned(), "AWSCURRENT".to_owned()),
            "sm-s3cret".to_owned(),
        )]),
    )
    .await;
    let issuer = Introspection::start(AUDIENCE).await;
    let (jwks, introspect) = (
        format!("{}/jwks", issuer.url),
        format!("{}/introspect", issuer.url),
    );
    let env = |secret: (&'static str, &'static str)| {
        vec![
            ("AWS_ENDPOINT_URL_SSM", aws.url.clone()),
            ("AWS_ENDPOINT_URL_SECRETS_MANAGER", aws.url.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "local".into()),
            ("AWS_SECRET_ACCESS_KEY", "local".into()),
            ("MCP_AUTH_ISSUER", "https://auth.example.com".into()),
            ("MCP_AUTH_AUDIENCE", AUDIENCE.into()),
            ("MCP_AUTH_JWKS_URL", jwks.clone()),
            ("MCP_AUTH_INTROSPECTION_URL", introspect.clone()),
            ("MCP_AUTH_INTROSPECTION_CLIENT_ID", "mcp server".into()),
            (secret.0, secret.1.into()),
        ]
    };
    let call = |server: &Proc, token: &'static str| {
        let (mut parts, body) = mcp_lambda::testing::request(
            json!(1),
            "tools/list",
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": {},
            }}),
        )
        .into_parts();
        parts.uri = format!("http://{}/mcp", server.addr).parse().unwrap();
        parts.headers.remove(http::header::HOST);
        parts
            .headers
            .insert("authorization", format!("Bearer {token}").parse().unwrap());
        server
            .client
            .request(http::Request::from_parts(parts, body))
    };
    let basic =
        |id: &str, secret: &str| format!("Basic {}", b64(format!("{id}:{secret}").as_bytes()));

    for (secret, expected) in [
        (
            (
                "MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER",
                "/mcp/introspection",
            ),
            basic("mcp%20server", "ssm%20s3cret"),
        ),
        (
            ("MCP_AUTH_INTROSPECTION_CLIENT_SECRET", arn),
            basic("mcp%20server", "sm-s3cret"),
        ),
    ] {
        let vars = env(secret);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let server = Proc::start(Path::new(CONFORMANCE), &vars).await.unwrap();
        let answer = call(&server, "opaque-1").await.unwrap();
        assert_eq!(answer.status(), 200, "{secret:?}");
        assert_eq!(call(&server, "opaque-2").await.unwrap().status(), 401);
        assert_eq!(
            issuer
                .authorizations
                .lock()
                .unwrap()
                .drain(..)
                .collect::<Vec<_>>(),
            [expected.clone(), expected],
            "{secret:?}: the fetched secret, form-encoded, as client_secret_basic"
        );
    }
    assert_eq!(
        aws.calls(),
        [
            "GetParameter /mcp/introspection",
            "GetSecretValue AWSCURRENT"
        ],
        "one call per secret, at start-up"
    );

    let vars = env((
        "MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER",
        "/mcp/missing",
    ));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let err = Proc::start(Path::new(CONFORMANCE), &vars)
        .await
        .err()
        .unwrap();
    assert!(
        err.contains("MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER"),
        "{err}"
    );
    assert!(err.contains("ParameterNotFound"), "{err}");
}

// ---- The built-in authorization server's secrets in AWS ------------------------------------

/// A P-256 key as `MCP_OAUTH_SIGNING_KEYS` takes it (PKCS#8 DER, base64url), made with
/// `openssl genpkey … | openssl pkcs8 -topk8 -nocrypt -outform DER`, and its public `x`.
const SIGNING_KEY: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgZIlC5XDOaYHC1VoRRHm5mqjvab9JXWywou84IAMoMqGhRANCAAQzrieqDhQAxjg6NxbkgbqN3fdbaWBDHDD2YmWt0k0taBOAKY6YT5MMYgGO83QsMV43skS59_y62U-Bl_fkVdZJ";
const SIGNING_KEY_X: &str = "M64nqg4UAMY4OjcW5IG6jd33W2lgQxww9mJlrdJNLWg";

#[tokio::test]
async fn the_authorization_servers_keys_and_upstream_secret_are_fetched_from_aws_at_start_up() {
    let keys_secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-oauth-keys-AbCdEf";
    let client_secret = "arn:aws:ssm:us-east-1:123456789012:parameter/mcp/facade-secret";
    let not_keys = "arn:aws:ssm:us-east-1:123456789012:parameter/mcp/not-keys";
    let aws = FakeAws::start(
        HashMap::from([
            // SSM takes a parameter's ARN as its name.
            (client_secret.to_owned(), "the-facade-secret".to_owned()),
            (not_keys.to_owned(), "hunter2".to_owned()),
        ]),
        HashMap::from([(
            (keys_secret.to_owned(), "AWSCURRENT".to_owned()),
            SIGNING_KEY.to_owned(),
        )]),
    )
    .await;
    let server = Path::new(CONFORMANCE);
    let base = [
        ("AWS_ENDPOINT_URL_SSM", aws.url.as_str()),
        ("AWS_ENDPOINT_URL_SECRETS_MANAGER", aws.url.as_str()),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ACCESS_KEY_ID", "local"),
        ("AWS_SECRET_ACCESS_KEY", "local"),
        // Never asked at start-up: nothing of the upstream is on the INIT path.
        (
            "MCP_OAUTH_UPSTREAM_ISSUER",
            "http://127.0.0.1:9/unreachable",
        ),
        ("MCP_OAUTH_UPSTREAM_CLIENT_ID", "mcp-facade"),
        ("MCP_AUTH_AUDIENCE", "http://127.0.0.1/mcp"),
    ];
    let mut env = base.to_vec();
    env.push(("MCP_OAUTH_SIGNING_KEYS", keys_secret));
    env.push(("MCP_OAUTH_UPSTREAM_CLIENT_SECRET", client_secret));
    let proc = Proc::start(server, &env).await.expect("the server starts");
    let request = http::Request::get(format!("http://{}/oauth/jwks", proc.addr))
        .header("host", "127.0.0.1")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = proc.client.request(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let jwks: Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(
        jwks["keys"][0]["x"], SIGNING_KEY_X,
        "the tokens are signed with the key kept in Secrets Manager: {jwks}"
    );
    let mut calls = aws.calls();
    calls.sort();
    assert_eq!(
        calls,
        [
            format!("GetParameter {client_secret}"),
            "GetSecretValue AWSCURRENT".to_owned()
        ],
        "one signed call each, at start-up"
    );
    drop(proc);

    // A secret that holds no key stops start-up naming the variable, never echoing the value.
    let mut env = base.to_vec();
    env.push(("MCP_OAUTH_SIGNING_KEYS", not_keys));
    env.push(("MCP_OAUTH_UPSTREAM_CLIENT_SECRET", client_secret));
    let err = Proc::start(server, &env)
        .await
        .err()
        .expect("start-up fails");
    assert!(err.contains("MCP_OAUTH_SIGNING_KEYS"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}
