#!/usr/bin/env bash
# docs/porting.md's counter, before (compiled) and after (built), each a new crate outside the repository
# (so the page cannot drift); the "after" served by two processes on one DynamoDB Local table
# and called by the Python client (mcp 2.3.0), alternating between them, then one restarted:
# one count throughout. Ends with "porting: N passed, M failed".
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_PAGER=
export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/porting-$$"
WORK="$MCP_WORK/porting"
rm -rf "$WORK" && mkdir -p "$WORK"

passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAILED: $1"; failed=$((failed + 1)); }
finish() { echo "porting: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
SERVERS=()
cleanup() {
  for pid in "${SERVERS[@]}"; do kill "$pid" 2>/dev/null; done
  scripts/dynamodb-local.sh stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The code block after `<!-- porting: NAME -->` in docs/porting.md.
block() {
  awk -v want="<!-- porting: $1 -->" '
    $0 == want { armed = 1; next }
    armed && /^```/ && !inside { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }
  ' docs/porting.md
}
before=$(block before)
after=$(block after)
if [ -z "$before" ] || [ -z "$after" ]; then fail "docs/porting.md has the before and after blocks"; finish; fi
ok "docs/porting.md has the before and after blocks"

# A crate of its own, sharing the repository's lock and target directory (nothing rebuilt that
# the test command built already: scripts/tools.sh, share_builds).
source scripts/tools.sh
export CARGO_TARGET_DIR="$OUTSIDE_TARGET_DIR"   # scripts/tools.sh
new_crate() { # new_crate DIR NAME DEPENDENCIES MAIN
  mkdir -p "$1/src"
  printf '[package]\nname = "%s"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\n%s\n' "$2" "$3" >"$1/Cargo.toml"
  printf '%s\n' "$4" >"$1/src/main.rs"
  share_builds "$1"
}

new_crate "$WORK/before" counter-before \
  'rmcp = { version = "3", features = ["server", "macros", "transport-io"] }
tokio = { version = "1", features = ["macros", "rt-multi-thread", "io-std", "sync"] }' "$before"
# Checked, not built: it is never run, and its rmcp-only features share no build with the rest.
if (cd "$WORK/before" && cargo check 2>&1) >"$WORK/before.log"; then
  ok "the page's rmcp counter (before) compiles"
else
  tail -n 40 "$WORK/before.log"; fail "the page's rmcp counter (before) compiles"
fi

new_crate "$WORK/after" counter-after \
  "mcp-lambda = { path = \"$(pwd)\" }
serde = { version = \"1\", features = [\"derive\"] }
tokio = { version = \"1\", features = [\"macros\", \"rt-multi-thread\"] }" "$after"
if (cd "$WORK/after" && cargo build 2>&1) >"$WORK/after.log"; then
  ok "the page's mcp-lambda counter (after) builds"
else
  tail -n 40 "$WORK/after.log"; fail "the page's mcp-lambda counter (after) builds"; finish
fi
if grep -E '^warning' "$WORK/after.log"; then fail "the after builds without a warning"; else ok "the after builds without a warning"; fi
BIN=$(out_of_tree_bin counter-after)

# The table, made with docs/handles.md's own commands.
TOOLS_LOG="$WORK/pip.log"
install_awscli
install_mcp_client
line=$(scripts/dynamodb-local.sh start) || { fail "DynamoDB Local starts"; finish; }
ENDPOINT=${line#*=}
TABLE="porting-$$"
commands=$(awk '/<!-- create-table -->/{f=1; next} f && /^```bash/{b=1; next} b && /^```/{exit} b' docs/handles.md \
  | sed -e "s/mcp-handles/$TABLE/g" -e "s|^aws dynamodb \([a-z-]*\)|\"$AWS\" dynamodb \1 --endpoint-url $ENDPOINT|")
if bash -c "$commands" >"$WORK/table.log" 2>&1; then ok "the handles table is made"; else tail -n 20 "$WORK/table.log"; fail "the handles table is made"; finish; fi

serve() { # serve LOG: one process of the after on the table; sets PORT, adds to SERVERS
  serve_on_free_port "$BIN" "$1" MCP_HANDLES_TABLE="$TABLE" AWS_ENDPOINT_URL_DYNAMODB="$ENDPOINT"
  SERVERS+=("$SERVER_PID")
}
serve "$WORK/one.log"; ONE=$PORT; ONE_PID=$SERVER_PID
serve "$WORK/two.log"; TWO=$PORT
if "$MCP_PYTHON" scripts/porting_client.py alternate "http://127.0.0.1:$ONE/mcp" "http://127.0.0.1:$TWO/mcp"; then
  ok "two processes keep one count (six increments alternating between them: 1 to 6)"
else
  fail "two processes keep one count (six increments alternating between them: 1 to 6)"
fi
kill "$ONE_PID"; wait "$ONE_PID" 2>/dev/null
serve "$WORK/one-again.log"; AGAIN=$PORT
if "$MCP_PYTHON" scripts/porting_client.py restarted "http://127.0.0.1:$AGAIN/mcp" "http://127.0.0.1:$TWO/mcp"; then
  ok "a restarted process finds the count (6, then 7 on the other)"
else
  fail "a restarted process finds the count (6, then 7 on the other)"
fi
finish
