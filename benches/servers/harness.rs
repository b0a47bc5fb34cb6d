//! Run with: `cargo run --release -p mcp-lambda-benches --example bench_harness -- coldstart 127.0.0.1:3100 20 -- CMD ARGS…`
//! or `… -- issuer RS256 https://bench.example/mcp OUT.json`.
//!
//! Helpers for `benches/side-by-side.sh`:
//!
//! - `coldstart ADDR RUNS -- CMD ARGS…` starts `CMD` `RUNS` times and measures process exec →
//!   the first `server/discover` answered 200 on `ADDR` (polling every 100 µs), then kills it.
//!   Prints one JSON line: median, p10, p90, min, max in milliseconds and every sample.
//! - `issuer ALG AUDIENCE OUT` starts an OAuth issuer on 127.0.0.1 (RFC 8414 metadata and a
//!   JWKS with one key for `ALG`: RS256, PS256, ES256 or EdDSA), writes
//!   `{"issuer": URL, "token": JWT}` to `OUT` (the token valid for three hours, for `AUDIENCE`)
//!   and serves until killed.

use mcp_lambda_test_support::jwt;
use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    process::{Command, ExitCode, Stdio},
    time::{Duration, Instant},
};

use serde_json::json;

const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// One `server/discover` over a fresh connection: `Ok(true)` on a 200.
fn discover(addr: SocketAddr) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{DISCOVER}",
        DISCOVER.len()
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    Ok(&head[9..12] == b"200")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[rank]
}

fn coldstart(addr: SocketAddr, runs: usize, command: &[String]) -> Result<(), String> {
    let mut samples = Vec::with_capacity(runs);
    for run in 0..runs {
        let start = Instant::now();
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", command[0]))?;
        let ready = loop {
            if matches!(discover(addr), Ok(true)) {
                break Some(start.elapsed());
            }
            if start.elapsed() > Duration::from_secs(30)
                || child.try_wait().ok().flatten().is_some()
            {
                break None;
            }
            std::thread::sleep(Duration::from_micros(100));
        };
        let _ = child.kill();
        let _ = child.wait();
        let ready = ready
            .ok_or_else(|| format!("run {run}: no 200 to server/discover on {addr} within 30 s"))?;
        samples.push(ready.as_secs_f64() * 1000.0);
        // Let the port and the page cache settle between starts.
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "{}",
        json!({
            "runs": runs,
            "median_ms": percentile(&sorted, 0.5),
            "p10_ms": percentile(&sorted, 0.1),
            "p90_ms": percentile(&sorted, 0.9),
            "min_ms": sorted[0],
            "max_ms": sorted[sorted.len() - 1],
            "samples_ms": samples,
        })
    );
    Ok(())
}

fn issuer(alg: &str, audience: &str, out: &str) -> Result<(), String> {
    let key = match alg {
        "RS256" | "PS256" => jwt::TestKey::rsa("bench-rsa"),
        "ES256" => jwt::TestKey::p256("bench-p256"),
        "EdDSA" => jwt::TestKey::ed25519("bench-ed25519"),
        other => {
            return Err(format!(
                "unknown alg {other:?}: use RS256, PS256, ES256 or EdDSA"
            ));
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let issuer = jwt::Issuer::start(&[&key]).await;
        let mut claims = issuer.claims(audience, "bench", "");
        claims["exp"] = json!(jwt::now() + 3 * 3600);
        let token = key.sign_with(json!({"alg": alg, "typ": "JWT", "kid": key.kid}), &claims);
        std::fs::write(
            out,
            json!({"issuer": issuer.url, "token": token}).to_string(),
        )
        .map_err(|e| format!("cannot write {out}: {e}"))?;
        std::future::pending::<()>().await;
        Ok(())
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["coldstart", addr, runs, "--", ..] if args.len() > 4 => match (addr.parse(), runs.parse())
        {
            (Ok(addr), Ok(runs)) if runs > 0 => coldstart(addr, runs, &args[4..]),
            _ => Err("coldstart ADDR RUNS -- CMD ARGS…: ADDR like 127.0.0.1:3100, RUNS ≥ 1".into()),
        },
        ["issuer", alg, audience, out] => issuer(alg, audience, out),
        _ => Err("usage: coldstart ADDR RUNS -- CMD ARGS… | issuer ALG AUDIENCE OUT".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench_harness: {message}");
            ExitCode::FAILURE
        }
    }
}
