#!/usr/bin/env bash
# The Lambda runtime-path benchmark: the basket binary (auth on, handles in DynamoDB Local) and
# a minimal lambda_http function (benches/servers/lambda_hello.rs), each run as a Lambda function
# under a loopback Runtime API by benches/servers/lambda_runtime_bench.rs, measuring INIT (exec →
# first /next, with the JWKS fetch and the DynamoDB warm-up), the duration of each invocation
# (event out on /next → the next /next, what Lambda bills) for tools/list, view_basket (a handle
# read), add_item (a handle write) and hello, p50/p99, and the functions' CPU per invocation; then
# the basket under AWS_LAMBDA_MAX_CONCURRENCY (Managed Instances), sent a burst of each at once;
# and INIT again on an emulated network (BENCH_EMULATED=ISSUER_RTT_MS,AWS_RTT_MS, default 40,4:
# the issuer over HTTPS, DynamoDB Local and an SSM stand-in each behind a delaying proxy).
# benches/lambda_report.py turns the numbers into ratios to hello and a cost table.
#
#   benches/lambda-runtime.sh            the full run (release builds, ~2 min once built): writes
#                                        the section between the lambda-runtime markers of
#                                        BENCHMARKS.md
#   benches/lambda-runtime.sh --smoke    seconds (debug builds; 2 starts, 5 invocations per
#                                        operation): checks every answer and that the report can
#                                        be made; ends with "lambda-runtime-smoke: N passed, M failed"
#
# Starts its own DynamoDB Local (scripts/dynamodb-local.sh, in its own state folder) and stops it.
# Environment: CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target), MCP_WORK (default
# ~/.cache/mcp-lambda-work), BENCH_INITS, BENCH_ROUNDS, BENCH_BATCH, BENCH_CONCURRENCY, BENCH_BURST
# (override the run's size),
# BENCH_PROFILE (release, quick or debug, overriding the mode's), BENCH_BEFORE (a before/after of a
# change: below).
set -uo pipefail
cd "$(dirname "$0")/.."
SMOKE_NAME=lambda-runtime-smoke
source benches/common.sh "$@"

if [ "$MODE" = smoke ]; then
  INITS=${BENCH_INITS:-2}; ROUNDS=${BENCH_ROUNDS:-1}; BATCH=${BENCH_BATCH:-5}; PROFILE=${BENCH_PROFILE:-debug}
  CONCURRENCY=${BENCH_CONCURRENCY:-4}; BURST=${BENCH_BURST:-8}; EMULATED=${BENCH_EMULATED:-40,4}
else
  INITS=${BENCH_INITS:-20}; ROUNDS=${BENCH_ROUNDS:-5}; BATCH=${BENCH_BATCH:-1000}; PROFILE=${BENCH_PROFILE:-release}
  CONCURRENCY=${BENCH_CONCURRENCY:-8}; BURST=${BENCH_BURST:-2000}; EMULATED=${BENCH_EMULATED:-40,4}
fi
new_run "lambda-$MODE" "lambda runtime, $MODE run"
RESULTS="$OUT/results.jsonl"

echo "==> cargo build ($PROFILE): basket, bench_lambda_runtime, bench_lambda_hello"
flags=()
[ "$PROFILE" != debug ] && flags=(--profile "$PROFILE")
# The full run builds the basket alone, as it is deployed (built together with the drivers, their
# features would be unified into it); the smoke run builds all three at once with the
# workspace's features, as `cargo test --workspace --all-targets` has already built them.
if [ "$MODE" = full ]; then
  build() {
    cargo build --locked "${flags[@]}" --bin basket \
      && cargo build --locked "${flags[@]}" -p mcp-lambda-benches --example bench_lambda_runtime --example bench_lambda_hello
  }
else
  build() {
    cargo build --locked "${flags[@]}" --workspace --bin basket --example bench_lambda_runtime \
      --example bench_lambda_hello --example hello
  }
fi
if build >"$OUT/build.log" 2>&1; then
  pass "build"
else
  tail -30 "$OUT/build.log"; fail "build (see $OUT/build.log)"; finish
fi
BIN="$CARGO_TARGET_DIR/$PROFILE"

# DynamoDB Local in a state folder of this run's own, stopped (and its data deleted) at the end.
start_dynamodb_local bench-lambda

python3 - "$MODE" "$PROFILE" "$INITS" "$ROUNDS" "$BATCH" "$BIN" >"$RESULTS" <<'EOF'
import json, os, platform, subprocess, sys
mode, profile, inits, rounds, batch, bin_dir = sys.argv[1:]
def out(*cmd):
    try: return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError: return ""
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
sizes = {name: os.path.getsize(path) for name, path in
         [("basket", f"{bin_dir}/basket"), ("bench_lambda_hello", f"{bin_dir}/examples/bench_lambda_hello")]
         if os.path.exists(path)}
print(json.dumps({"kind": "machine", "mode": mode, "profile": profile, "inits": int(inits),
    "rounds": int(rounds), "batch": int(batch), "cpu": cpu, "cores": os.cpu_count(),
    "kernel": platform.release(), "clk_tck": os.sysconf("SC_CLK_TCK"),
    "loadavg_start": open("/proc/loadavg").read().split()[:3], "rustc": out("rustc", "--version"),
    "commit": out("git", "describe", "--always", "--dirty"), "binary_bytes": sizes}))
EOF

# BENCH_BEFORE=DIR: a before/after of a change instead of the run above: DIR/basket (an older
# tree's, built the same way) and this tree's basket, each beside the same hello, in alternating
# passes of the driver (BENCH_AB_PASSES, 3; BENCH_AB_INITS starts of each function per pass, 2;
# BENCH_OPS as set, hello and tools/list by default), CPU per invocation read as a ratio to the
# hello of the same pass, and the starts' INIT and resident memory as medians over the passes.
# Its report stays in the run's folder (ab.md); BENCHMARKS.md is not touched.
if [ -n "${BENCH_BEFORE:-}" ]; then
  [ -x "$BENCH_BEFORE/basket" ] || { fail "BENCH_BEFORE: no $BENCH_BEFORE/basket"; finish; }
  export BENCH_OPS=${BENCH_OPS:-hello,tools/list}
  for pass_no in $(seq "${BENCH_AB_PASSES:-3}"); do
    for side in before after; do
      basket="$BIN/basket"; [ "$side" = before ] && basket="$BENCH_BEFORE/basket"
      echo "==> pass $pass_no, $side: $basket ($BENCH_OPS)"
      if "$BIN/examples/bench_lambda_runtime" "$basket" "$BIN/examples/bench_lambda_hello" \
        "$ENDPOINT" "$OUT/$side-$pass_no.jsonl" "$OUT" "${BENCH_AB_INITS:-2}" "$ROUNDS" "$BATCH" 0 0 \
        2>"$OUT/driver-$side-$pass_no.log"; then
        pass "$side, pass $pass_no: every invocation answered"
      else
        tail -5 "$OUT/driver-$side-$pass_no.log"; fail "$side, pass $pass_no (see $OUT/driver-$side-$pass_no.log)"
      fi
    done
  done
  python3 benches/lambda_report.py --ab "$OUT" >"$OUT/ab.md" && cat "$OUT/ab.md" && pass "before/after report ($OUT/ab.md)" \
    || fail "before/after report"
  finish
fi

echo "==> measuring: $INITS starts of each function, $ROUNDS round(s) × $BATCH invocations per operation, then $BURST at once per operation with AWS_LAMBDA_MAX_CONCURRENCY=$CONCURRENCY, then $INITS starts each on an emulated network ($EMULATED ms round trips)"
measure "every invocation answered 200 with a result (tools/list, view_basket, add_item, hello)" \
  "$BIN/examples/bench_lambda_runtime" "$BIN/basket" "$BIN/examples/bench_lambda_hello" \
  "$ENDPOINT" "$OUT/measured.jsonl" "$OUT" "$INITS" "$ROUNDS" "$BATCH" "$CONCURRENCY" "$BURST" \
  "$EMULATED"
report benches/lambda_report.py "$RESULTS"
finish
