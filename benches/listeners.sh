#!/usr/bin/env bash
# The listener benchmark: open subscriptions/listen streams on one basket process (local server,
# handles and change feed in DynamoDB Local, reached through a request-counting proxy), run by
# benches/servers/listeners_bench.rs: DynamoDB requests per second and per poll, CPU per
# stream-second, RSS per open stream and delivery time at each stream count;
# benches/listeners_report.py adds the cost per listener-month.
#
#   benches/listeners.sh            the full run (release build; 1 to 10,000 streams, 10 s
#                                   windows): writes the section between the listeners markers of
#                                   BENCHMARKS.md
#   benches/listeners.sh --smoke    seconds (debug build; 1, 10 and 100 streams): requests per poll
#                                   within ⌈items/100⌉ and every change delivered within two polls;
#                                   ends with "listeners-smoke: N passed, M failed"
#
# Starts its own DynamoDB Local (scripts/dynamodb-local.sh, in its own state folder) and stops it.
# Environment: CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target), MCP_WORK (default
# ~/.cache/mcp-lambda-work), BENCH_COUNTS, BENCH_SECONDS, BENCH_POLL_MS (override the run's size).
set -uo pipefail
cd "$(dirname "$0")/.."
SMOKE_NAME=listeners-smoke
source benches/common.sh "$@"

if [ "$MODE" = smoke ]; then
  COUNTS=${BENCH_COUNTS:-1,10,100}; WINDOW=${BENCH_SECONDS:-2}; POLL=${BENCH_POLL_MS:-500}; PROFILE=debug
else
  COUNTS=${BENCH_COUNTS:-1,10,100,1000,3000,10000}; WINDOW=${BENCH_SECONDS:-10}; POLL=${BENCH_POLL_MS:-1000}; PROFILE=release
fi
new_run "listeners-$MODE" "listeners, $MODE run"

echo "==> cargo build ($PROFILE): basket, bench_listeners"
flags=()
[ "$PROFILE" = release ] && flags=(--release)
# As the Lambda benchmark: the full run builds the basket alone (as deployed); the smoke run
# builds with the workspace's feature set, which `cargo test --all-targets` already built.
if [ "$MODE" = full ]; then
  build() { cargo build --locked "${flags[@]}" --bin basket && cargo build --locked "${flags[@]}" -p mcp-lambda-benches --example bench_listeners; }
else
  build() { cargo build --locked --workspace --bin basket --example bench_listeners --example hello; }
fi
if build >"$OUT/build.log" 2>&1; then pass "build"; else tail -30 "$OUT/build.log"; fail "build (see $OUT/build.log)"; finish; fi
BIN="$CARGO_TARGET_DIR/$PROFILE"

start_dynamodb_local bench-listeners

# Two sockets per stream (the driver's and the server's), in two processes.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
echo "==> $COUNTS streams, ${WINDOW} s windows, poll every ${POLL} ms"
if "$BIN/examples/bench_listeners" "$BIN/basket" "$ENDPOINT" "$OUT/results.jsonl" "$OUT/basket.log" \
  "$COUNTS" "$WINDOW" "$POLL" 2>"$OUT/driver.log" | tee "$OUT/table.txt"; then
  pass "every stream acknowledged, requests per poll within ⌈items/100⌉, every change delivered"
else
  tail -5 "$OUT/driver.log"; fail "measuring (see $OUT/driver.log)"
fi
report benches/listeners_report.py "$OUT/results.jsonl"
finish
