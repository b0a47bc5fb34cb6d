#!/usr/bin/env bash
# The README's "Your own server" (and its test, in docs/your-server.md), built as a user builds it: a new crate in a temporary folder
# outside the repository, `mcp-lambda` by path, no `rmcp` dependency, its Cargo.toml and
# src/main.rs taken from the README's marked code blocks. It must build without a warning, pass
# its own test (the in-process TestClient), run, and answer a real client (Python mcp 2.3.0).
# examples/notes.rs must be the same program, so the example and the page cannot drift apart.
#
# Ends with "quickstart: N passed, M failed". Caches: CARGO_TARGET_DIR, MCP_WORK (the venv).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
CRATE=$(mktemp -d /tmp/mcp-quickstart.XXXXXX)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$CRATE" "$CRATE.server.log"
}
trap cleanup EXIT

passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAILED: $1"; failed=$((failed + 1)); }
finish() { echo "quickstart: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }

# The code block after `<!-- quickstart: NAME -->` in FILE.
block() { # block NAME FILE
  awk -v want="<!-- quickstart: $1 -->" '
    $0 == want { armed = 1; next }
    armed && /^```/ && !inside { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }
  ' "$2"
}

manifest=$(block "Cargo.toml" README.md)
main=$(block "src/main.rs" README.md)
tests=$(block "src/main.rs (tests)" docs/your-server.md)
if [ -z "$manifest" ] || [ -z "$main" ] || [ -z "$tests" ]; then
  fail "README.md and docs/your-server.md have the three quickstart blocks"; finish
fi
ok "README.md and docs/your-server.md have the three quickstart blocks"

if diff <(printf '%s\n\n%s\n' "$main" "$tests") examples/notes.rs >"$CRATE.diff"; then
  ok "examples/notes.rs is the README's quick start"
else
  cat "$CRATE.diff"; fail "examples/notes.rs is the README's quick start"
fi
rm -f "$CRATE.diff"
if grep -Eq '^rmcp|^anyhow' <<<"$manifest"; then fail "the quick start needs no rmcp or anyhow"; else ok "the quick start needs no rmcp or anyhow"; fi

mkdir -p "$CRATE/src"
{
  printf '[package]\nname = "notes-quickstart"\nversion = "0.1.0"\nedition = "2024"\n\n'
  printf '%s\n' "$manifest"
  # `-D warnings` for the crate, as a user's CI builds it: through its lints table, not
  # RUSTFLAGS, which would rebuild every dependency. mcp-lambda's own warnings, a path
  # dependency's (so not capped), fail the check on the build's output below.
  printf '\n[lints.rust]\nwarnings = "deny"\n'
} >"$CRATE/Cargo.toml"
printf '%s\n\n%s\n' "$main" "$tests" >"$CRATE/src/main.rs"
source scripts/tools.sh
export CARGO_TARGET_DIR="$OUTSIDE_TARGET_DIR"   # scripts/tools.sh
point_at_checkout "$CRATE"

if (cd "$CRATE" && cargo test 2>&1) >"$CRATE.test.log"; then
  ok "the quick start builds and its test passes"
else
  tail -n 60 "$CRATE.test.log"; fail "the quick start builds and its test passes"
fi
if grep -E '^warning' "$CRATE.test.log"; then fail "the quick start builds with -D warnings and no warning"; else ok "the quick start builds with -D warnings and no warning"; fi
grep -E '^test result' "$CRATE.test.log"
rm -f "$CRATE.test.log"

if ! (cd "$CRATE" && cargo build 2>&1 | tail -n 5); then fail "the quick start binary builds"; finish; fi
BIN=$(out_of_tree_bin notes-quickstart)

install_mcp_client
serve_on_free_port "$BIN" "$CRATE.server.log"
if "$MCP_PYTHON" scripts/quickstart_client.py "http://127.0.0.1:$PORT/mcp"; then
  ok "the quick start answers a real client (Python mcp 2.3.0): tools, a note kept between calls, an unknown id"
else
  fail "the quick start answers a real client (Python mcp 2.3.0): tools, a note kept between calls, an unknown id"
fi
finish
