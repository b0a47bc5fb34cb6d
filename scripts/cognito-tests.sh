#!/usr/bin/env bash
# Amazon Cognito tokens, as Cognito issues them, against the basket: moto's cognito-idp emulator
# on loopback holds two user pools (resource servers whose identifier is the basket's canonical
# URL, app clients, users signed in with ADMIN_USER_PASSWORD_AUTH), and the basket verifies
# their tokens against moto's JWKS. The cases are pytest tests in tests/cognito/ (run with the
# Python mcp client's venv); what moto cannot issue (access tokens with resource-server scopes:
# it has no /oauth2/token) is signed with moto's own key in Cognito's documented shape.
# Ends with "cognito: N passed, M failed" (a skipped test counts as failed: a skip proves nothing).
#
#   scripts/cognito-tests.sh
#
# BASKET_BIN=path runs that binary instead of building the basket.
# Installs once: moto[server] (pinned below) in $MCP_WORK/venv-moto, and the Python mcp client
# (scripts/tools.sh install_mcp_client). Caches: CARGO_TARGET_DIR, MCP_WORK as in scripts/test.sh.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
mkdir -p "$MCP_WORK"
DIR=$(mktemp -d /tmp/cognito-tests.XXXXXX)
STARTED=$SECONDS

passed=0
failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
say() { echo "cognito-tests: $*"; }
finish() {
  say "took $((SECONDS - STARTED)) s"
  echo "cognito: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

MOTO_PID=""
cleanup() {
  # The basket processes are the tests' own (conftest stops each); moto is this script's.
  if [ -n "$MOTO_PID" ] && kill -0 "$MOTO_PID" 2>/dev/null; then kill "$MOTO_PID"; wait "$MOTO_PID" 2>/dev/null; fi
  if [ "$failed" -eq 0 ]; then rm -rf "$DIR"; else say "logs kept in $DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# --- what the tests need -------------------------------------------------------------------
source scripts/tools.sh
t=$SECONDS
TOOLS_LOG="$DIR/pip-moto.log" install_moto || { tail -n 30 "$DIR/pip-moto.log"; fail "installing moto[server]==$MOTO_VERSION"; finish; }
say "moto $MOTO_VERSION venv ready ($((SECONDS - t)) s)"
TOOLS_LOG="$DIR/pip-clients.log" install_mcp_client || { tail -n 30 "$DIR/pip-clients.log"; fail "installing the Python mcp client"; finish; }

BASKET="${BASKET_BIN:-$CARGO_TARGET_DIR/debug/basket}"
if [ -z "${BASKET_BIN:-}" ]; then
  # --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
  # dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
  t=$SECONDS
  cargo build --locked --workspace --bin basket --example hello >"$DIR/build.log" 2>&1 \
    || { tail -n 30 "$DIR/build.log"; fail "building the basket"; finish; }
  say "basket built ($((SECONDS - t)) s)"
fi

# --- moto on loopback ------------------------------------------------------------------------
MOTO_PORT=$(free_port)
# -H 127.0.0.1: moto_server 5.2.5 defaults to it, but say it (the rule for tests: loopback only).
"$MOTO_SERVER" -H 127.0.0.1 -p "$MOTO_PORT" >"$DIR/moto.log" 2>&1 &
MOTO_PID=$!
MOTO_URL="http://127.0.0.1:$MOTO_PORT"
for _ in $(seq 150); do
  curl -fsS -o /dev/null -m 1 "$MOTO_URL/moto-api/" 2>/dev/null && break
  kill -0 "$MOTO_PID" 2>/dev/null || break
  sleep 0.1
done
if ! curl -fsS -o /dev/null -m 1 "$MOTO_URL/moto-api/"; then
  tail -n 20 "$DIR/moto.log"; fail "moto_server starts"; finish
fi
say "moto_server $MOTO_VERSION at $MOTO_URL (pid $MOTO_PID)"

# Every socket listening on moto's port must be 127.0.0.1's (none on 0.0.0.0, [::] or another address).
if command -v ss >/dev/null; then
  listening=$(ss -ltnH "sport = :$MOTO_PORT" | awk '{print $4}' | sort -u)
  if [ "$listening" = "127.0.0.1:$MOTO_PORT" ]; then
    pass "moto_server listens on 127.0.0.1:$MOTO_PORT only"
  else
    fail "moto_server listens on: ${listening:-nothing}, not 127.0.0.1:$MOTO_PORT only"
  fi
else
  fail "ss (iproute2) is missing: cannot check that moto_server listens on 127.0.0.1 only"
fi

# --- the cases ---------------------------------------------------------------------------------
# -v -s: each test's name and verdict, and the challenges and descriptions the tests print.
MOTO_URL="$MOTO_URL" MOTO_PYTHON="$MOTO_PYTHON" BASKET_BIN="$BASKET" COGNITO_LOGS="$DIR" \
  "$MCP_PYTHON" -m pytest -v -s -p no:cacheprovider tests/cognito 2>&1 | tee "$DIR/pytest.log"
summary=$(grep -E '^=+ .*( passed| failed| error| skipped).* in [0-9.]+s' "$DIR/pytest.log" | tail -1)
count() { echo "$summary" | grep -Eo "[0-9]+ $1" | awk '{s+=$1} END {print s+0}'; }
p=$(count passed)
f=$(( $(count failed) + $(count 'errors?') + $(count skipped) + $(count xfailed) + $(count xpassed) ))
if [ -z "$summary" ] || [ $((p + f)) -eq 0 ]; then
  fail "pytest ran no test (see above)"
fi
passed=$((passed + p))
failed=$((failed + f))
if [ "$f" -gt 0 ]; then say "basket logs: $DIR/basket-*.log"; fi
finish
