#!/usr/bin/env bash
# The peers benchmark (issue 32): mcp-lambda against the two Rust MCP SDKs a user would pick
# instead, each with a Lambda path of its own, built from crates.io as their docs say
# (benches/peers/, a cargo workspace of its own): pmcp 2.23 as `cargo pmcp new` + `cargo pmcp
# deploy init --target aws-lambda` (cargo-pmcp 0.29) generate it, and turul-mcp-aws-lambda 0.4
# as its README's quick start writes it; mcp-lambda's side is benches/servers/lambda_peer.rs.
# The same three tools (echo, reverse, count) on each; all three run as Lambda functions under
# the same loopback Runtime API emulator (test-support/src/lambda_runtime.rs), interleaved, by
# benches/servers/lambda_peers_bench.rs: INIT, then per invocation the duration p50/p99, CPU and
# peak RSS for tools/list and tools/call (2026-07-28 requests: every server speaks it), plus
# binary and zip sizes; benches/lambda_peers_report.py turns them into ratios to mcp-lambda and
# a cost per million requests at 128 MB arm64.
#
#   benches/lambda-peers.sh            the full run (release builds, as each peer deploys; the
#                                      peers' first build takes minutes): writes the section
#                                      between the lambda-peers markers of BENCHMARKS.md
#   benches/lambda-peers.sh --smoke    debug builds, 2 starts and 5 invocations of each kind per
#                                      server: checks every answer and that the report can be
#                                      made; ends with "lambda-peers-smoke: N passed, M failed"
#
# Environment: CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target, shared by both
# workspaces), MCP_WORK (default ~/.cache/mcp-lambda-work), BENCH_INITS, BENCH_ROUNDS,
# BENCH_BATCH (the run's size), BENCH_PROFILE (release or debug, overriding the mode's; release
# means each server's own deployed profile), BENCH_SERVERS (default mcp-lambda,pmcp,turul: the
# servers to build and run, mcp-lambda always among them). scripts/test.sh runs the smoke with
# all three: cold, the peers' debug builds take about 4 minutes on 2 cores (pmcp 136 s, turul
# 87 s after it, measured in a fresh target directory), the run itself seconds.
set -uo pipefail
cd "$(dirname "$0")/.."
SMOKE_NAME=lambda-peers-smoke
source benches/common.sh "$@"

if [ "$MODE" = smoke ]; then
  INITS=${BENCH_INITS:-2}; ROUNDS=${BENCH_ROUNDS:-1}; BATCH=${BENCH_BATCH:-5}; PROFILE=${BENCH_PROFILE:-debug}
else
  INITS=${BENCH_INITS:-20}; ROUNDS=${BENCH_ROUNDS:-5}; BATCH=${BENCH_BATCH:-1000}; PROFILE=${BENCH_PROFILE:-release}
fi
SERVERS=${BENCH_SERVERS:-mcp-lambda,pmcp,turul}
new_run "peers-$MODE" "lambda peers ($SERVERS), $MODE run"
RESULTS="$OUT/results.jsonl"

has() { [[ ",$SERVERS," == *",$1,"* ]]; }
if ! has mcp-lambda; then
  fail "BENCH_SERVERS=$SERVERS: mcp-lambda is the baseline every ratio is taken against"; finish
fi

# mcp-lambda's function and the driver, in the main workspace: built with its release profile,
# as benches/lambda-runtime.sh builds the basket.
echo "==> cargo build ($PROFILE): bench_lambda_peer, bench_lambda_peers"
# Debug (smoke): the workspace's features, as the cargo test steps built them; release: the
# benches' package alone, as measured.
flags=(--workspace)
[ "$PROFILE" = release ] && flags=(--release -p mcp-lambda-benches)
if cargo build --locked "${flags[@]}" --example bench_lambda_peer --example bench_lambda_peers \
  >"$OUT/build.log" 2>&1; then
  pass "build mcp-lambda's function and the driver"
else
  tail -30 "$OUT/build.log"; fail "build (see $OUT/build.log)"; finish
fi
BIN="$CARGO_TARGET_DIR/$PROFILE"
args=("mcp-lambda=$BIN/examples/bench_lambda_peer")

# The peers, in benches/peers/ (its own workspace and Cargo.lock): each with the profile its
# Lambda build uses (benches/peers/Cargo.toml says which and why), or all in debug.
peer_build() { # peer_build NAME PACKAGE BINARY RELEASE_PROFILE
  local profile=dev dir=debug
  [ "$PROFILE" = release ] && profile=$4 dir=$4
  echo "==> cargo build --profile $profile -p $2 (benches/peers)"
  local started=$SECONDS
  if (cd benches/peers && cargo build --locked --profile "$profile" -p "$2") >"$OUT/build-$1.log" 2>&1; then
    pass "build $1 ($profile, $((SECONDS - started)) s)"
    args+=("$1=$CARGO_TARGET_DIR/$dir/$3")
  else
    tail -30 "$OUT/build-$1.log"; fail "build $1 (see $OUT/build-$1.log)"
  fi
}
has pmcp && peer_build pmcp peer-pmcp-lambda bootstrap-pmcp pmcp
has turul && peer_build turul peer-turul-lambda bootstrap-turul turul
[ "$failed" -eq 0 ] || finish

# The machine, the versions (from the two Cargo.lock files) and the sizes: each binary as
# built, and zipped alone as `bootstrap` (what `cargo lambda build --output-format zip` uploads).
python3 - "$MODE" "$PROFILE" "$INITS" "$ROUNDS" "$BATCH" "$OUT" "${args[@]}" >"$RESULTS" <<'EOF_PY'
import json, os, platform, subprocess, sys, zipfile
mode, profile, inits, rounds, batch, out = sys.argv[1:7]
servers = dict(a.split("=", 1) for a in sys.argv[7:])
def run(*cmd):
    try: return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError: return ""
def tree(directory, package):
    """Each crate's versions in `package`'s normal dependency tree, as its Cargo.lock has it."""
    found = {}
    lines = subprocess.run(["cargo", "tree", "--locked", "--offline", "-p", package, "-e", "normal",
                            "--prefix", "none", "--format", "{p}"], cwd=directory,
                           capture_output=True, text=True).stdout.splitlines()
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[1].startswith("v"):
            versions = found.setdefault(parts[0], [])
            if parts[1][1:] not in versions:
                versions.append(parts[1][1:])
    return found
def pick(found, names):
    return {k: found.get(k) for k in names}
versions = {
    "mcp-lambda": pick(tree(".", "mcp-lambda"), ("mcp-lambda", "rmcp", "lambda_http", "lambda_runtime", "tokio")),
    "pmcp": pick(tree("benches/peers", "peer-pmcp-lambda"),
                 ("pmcp", "lambda_http", "lambda_runtime", "reqwest", "tokio")),
    "turul": pick(tree("benches/peers", "peer-turul-lambda"),
                  ("turul-mcp-aws-lambda", "turul-mcp-server", "turul-mcp-derive", "lambda_http",
                   "lambda_runtime", "tokio")),
}
versions["pmcp"]["cargo-pmcp (templates)"] = ["0.29.0"]
sizes = {}
for name, path in servers.items():
    sizes[name] = {"binary_bytes": os.path.getsize(path), "zip_bytes": None}
    if profile == "debug":
        continue  # a debug binary's zip says nothing, and deflating ~600 MB takes seconds
    archive = os.path.join(out, f"{name}.zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path, "bootstrap")
    sizes[name]["zip_bytes"] = os.path.getsize(archive)
    os.remove(archive)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(json.dumps({"kind": "machine", "mode": mode, "profile": profile, "inits": int(inits),
    "rounds": int(rounds), "batch": int(batch), "cpu": cpu, "cores": os.cpu_count(),
    "kernel": platform.release(), "clk_tck": os.sysconf("SC_CLK_TCK"),
    "loadavg_start": open("/proc/loadavg").read().split()[:3], "rustc": run("rustc", "--version"),
    "commit": run("git", "describe", "--always", "--dirty"), "servers": list(servers),
    "versions": versions, "sizes": sizes}))
EOF_PY

echo "==> measuring ${args[*]%%=*}: $INITS starts of each, $ROUNDS round(s) × $BATCH invocations per server and request kind"
measure "every invocation answered 200 with the expected result (tools/list, tools/call echo, reverse, count)" \
  "$BIN/examples/bench_lambda_peers" "$OUT/measured.jsonl" "$OUT" "$INITS" "$ROUNDS" "$BATCH" "${args[@]}"
report benches/lambda_peers_report.py "$RESULTS"
finish
