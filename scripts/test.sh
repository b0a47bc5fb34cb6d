#!/usr/bin/env bash
# The one test command: installs what the tests need, starts it on loopback,
# runs every test, stops what it started, and ends with "N passed, M failed".
#
#   scripts/test.sh            everything (what CI runs)
#
# Caches (reused across runs, safe to delete):
#   CARGO_TARGET_DIR  default ~/.cache/mcp-lambda-target
#   MCP_WORK          default ~/.cache/mcp-lambda-work (Python venv, Node clients, logs)
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
# Incremental compilation pays off when one edits and rebuilds, not on a run of every test: off here,
# it builds faster cold and keeps gigabytes of session caches out of the target directory.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
mkdir -p "$MCP_WORK" "$CARGO_TARGET_DIR"

# A run that fills the disk fails every step after, each for a reason that hides the cause: refuse
# to start instead, and say what would free room (a cold run's footprint: README.md, "The two
# commands"). Room = free space on CARGO_TARGET_DIR's disk + what the caches hold that a run reuses
# (not incremental caches, which this run does not read), and never less than MIN_FREE_GB free: a
# warm run still writes test binaries and logs, and builds made under another profile stay beside
# the new ones. MCP_WORK is counted as if on the same disk.
NEEDED_GB="${MCP_TEST_DISK_GB:-24}"
MIN_FREE_GB=4
disk_refused() {
  echo "scripts/test.sh: $1"
  echo "all: 0 passed, 1 failed"
  exit 1
}
case "$NEEDED_GB" in
  '' | *[!0-9]*) disk_refused "MCP_TEST_DISK_GB=$NEEDED_GB: expected a whole number of GB, e.g. 24" ;;
esac
have_kb=$(df -Pk "$CARGO_TARGET_DIR/" | awk 'NR == 2 {print $4 + 0}')
used_kb=$(du -sk --exclude=incremental "$CARGO_TARGET_DIR/" "$MCP_WORK/" 2>/dev/null | awk '{s += $1} END {print s + 0}')
if [ $((have_kb + used_kb)) -lt $((NEEDED_GB * 1024 * 1024)) ] || [ "$have_kb" -lt $((MIN_FREE_GB * 1024 * 1024)) ]; then
  disk_refused "not enough disk. A cold run needs about $NEEDED_GB GB for CARGO_TARGET_DIR and MCP_WORK (at least $MIN_FREE_GB free);
  they hold $((used_kb / 1024 / 1024)) GB and $(df -Pk "$CARGO_TARGET_DIR/" | awk 'NR == 2 {print $6}') has $((have_kb / 1024 / 1024)) GB free.
  Free some (an old target directory: cargo clean --target-dir DIR), or point CARGO_TARGET_DIR
  and MCP_WORK at a larger disk, then run again. MCP_TEST_DISK_GB=N overrides the estimate."
fi
LOGS="$MCP_WORK/logs"
rm -rf "$LOGS" && mkdir -p "$LOGS"

passed=0
failed=0
failures=()
count() { # count NAME PASSED FAILED
  passed=$((passed + $2))
  failed=$((failed + $3))
  if [ "$3" -gt 0 ]; then failures+=("$1"); fi
}
check() { # check NAME CMD... : a step that is one check
  echo "==> $1"
  if "${@:2}" >"$LOGS/$1.log" 2>&1; then count "$1" 1 0; else cat "$LOGS/$1.log"; count "$1" 0 1; fi
}
suite() { # suite NAME CMD... : a script that ends with "NAME: N passed, M failed"
  echo "==> $1"
  "${@:2}" >"$LOGS/$1.log" 2>&1
  local rc=$? line p f
  line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$LOGS/$1.log" | tail -1)
  if [ -z "$line" ]; then
    tail -n 40 "$LOGS/$1.log"; count "$1" 0 1; return
  fi
  p=$(echo "$line" | grep -Eo '[0-9]+ passed' | awk '{print $1}')
  f=$(echo "$line" | grep -Eo '[0-9]+ failed' | awk '{print $1}')
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
  if [ "$f" -gt 0 ]; then tail -n 40 "$LOGS/$1.log"; fi
  echo "$line"
  count "$1" "$p" "$f"
}

# --- Rust, the whole workspace (the library, conformance/): format, lints, unit +
#     integration + doc tests ----------------------------------------------------
check fmt cargo fmt --all --check
check clippy cargo clippy --workspace --all-targets --locked -- -D warnings
# The crate docs, broken intra-doc links denied; the library without the AWS features
# (in-memory handles, auth) builds and its own tests pass (the feature-gated errors).
check docs env RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps
check no-default-features bash -c 'cargo build --locked --no-default-features --lib --bins --example hello && cargo test --locked --no-default-features --lib && cargo test --locked --no-default-features --doc && RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --no-default-features'
# Each AWS feature alone builds and its doc tests compile.
check feature-dynamodb cargo test --locked --no-default-features --features dynamodb --doc
check feature-aws-secrets cargo test --locked --no-default-features --features aws-secrets --doc
# The crate as crates.io would take it: packaged (the `include` list), then built from the
# package alone (no workspace, no dev-dependencies). Not uploaded.
check publish-dry-run cargo publish --dry-run --allow-dirty --locked -p mcp-lambda
echo "==> cargo test (with DynamoDB Local on loopback for the DynamoDB tests)"
scripts/dynamodb-tests.sh --locked --workspace --all-targets 2>&1 | tee "$LOGS/cargo-test.log" | grep -E '^test result|FAILED|panicked' || true
cargo test --locked --workspace --doc 2>&1 | tee "$LOGS/cargo-doctest.log" | grep -E '^test result|FAILED' || true
for log in "$LOGS/cargo-test.log" "$LOGS/cargo-doctest.log"; do
  p=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s+=$1} END {print s+0}')
  f=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
  if ! grep -q '^test result' "$log" || grep -qE '^error(\[|:)' "$log"; then f=$((f + 1)); fi
  count "$(basename "$log" .log)" "$p" "$f"
done

# --- An independent client: Python mcp 2.3.0 -------------------------------
echo "==> python client (mcp 2.3.0)"
VENV="$MCP_WORK/venv-clients"
if ! "$VENV/bin/python" -c 'import mcp, pytest, importlib.metadata as m; assert m.version("mcp") == "2.3.0"' 2>/dev/null; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install -q 'mcp==2.3.0' 'pytest==8.3.4' >"$LOGS/pip.log" 2>&1 \
    || { cat "$LOGS/pip.log"; }
fi
# --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
# dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
cargo build --locked --workspace --bin basket --example hello >"$LOGS/build-basket.log" 2>&1
BASKET_BIN="$CARGO_TARGET_DIR/debug/basket" "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/clients \
  2>&1 | tee "$LOGS/pytest.log" | tail -n 15
p=$(grep -Eo '[0-9]+ passed' "$LOGS/pytest.log" | tail -1 | awk '{print $1+0}')
f=$(grep -Eo '[0-9]+ (failed|error)' "$LOGS/pytest.log" | awk '{s+=$1} END {print s+0}')
[ "${p:-0}" -gt 0 ] || f=$((f + 1))
count python-client "${p:-0}" "$f"

# --- The README's quick start as a user builds it: a new crate outside the repository, called
#     by the Python client
suite quickstart scripts/quickstart-tests.sh
# docs/handles.md's AWS CLI commands for the table, run against DynamoDB Local.
suite table-command scripts/table-command-tests.sh

# --- The Node clients: TS SDK v2 client 2.4.0 and inspector 2.12.0 --cli, 0 warnings each
suite node-clients scripts/node-clients.sh

# --- A real authorization server (oidc-provider 9.13) and two real clients' OAuth: registration,
#     PKCE with resource, refresh, step-up; opaque tokens introspected through a counting proxy
suite oauth scripts/oauth-tests.sh
# --- Amazon Cognito tokens as Cognito issues them (moto's cognito-idp) against the basket
suite cognito scripts/cognito-tests.sh

# --- The official conformance suite (0.2.0-alpha.12, Node 22 from npm) -----
suite conformance scripts/conformance.sh
# --- Its `authorization` command against the built-in authorization server (both scenarios:
#     RFC 8414 metadata; the code grant through the consent page and oidc-provider's login)
suite conformance-auth scripts/conformance-auth.sh

# --- Deployment: cfn-lint, sam validate --lint, cargo-lambda build/watch/invoke
suite lambda scripts/lambda-tests.sh
# --- The starter a user copies: out of tree, its test, a real client, cargo-lambda, both lints
suite starter scripts/starter-tests.sh

# --- The benchmark harness, smoke mode (every server answers, numbers come out)
suite bench-smoke benches/side-by-side.sh --smoke
# --- The instruction-count driver of BENCHMARKS.md's "CPU per request", each kind once (it
#     asserts every answer is the kind it counts), and tools/call once configured as on Lambda
check instructions-smoke bash -c 'for kind in tools_list tools_call listen refused; do cargo run --locked --quiet --example bench_instructions -- "$kind" 20 || exit 1; done && BENCH_MODE=lambda cargo run --locked --quiet --example bench_instructions -- tools_call 20 >/dev/null'
# --- The Lambda runtime-path benchmark, smoke mode (the basket and a lambda_http hello under
#     loopback Runtime APIs, DynamoDB Local; numbers come out)
suite lambda-runtime-smoke benches/lambda-runtime.sh --smoke
# --- The peers benchmark, smoke mode (mcp-lambda, pmcp and turul-mcp-aws-lambda built from
#     crates.io in debug, each under a loopback Runtime API; every answer checked): about 4
#     minutes cold, the peers' own builds (benches/peers/, a workspace of its own)
suite lambda-peers-smoke benches/lambda-peers.sh --smoke
# --- The listener benchmark, smoke mode (1, 10, 100 streams on one process; DynamoDB Local
#     behind a request-counting proxy: requests per poll and delivery within two polls)
suite listeners-smoke benches/listeners.sh --smoke

# --- Load on loopback (2 000 requests per store, memory and DynamoDB Local) and a 60 s fuzz
suite load scripts/soak.sh --short
suite fuzz scripts/fuzz.sh --smoke

# --- The README's nginx recipe: two basket processes behind nginx, a rolling restart
suite nginx scripts/nginx-tests.sh

echo
if [ ${#failures[@]} -gt 0 ]; then echo "failing steps: ${failures[*]} (logs in $LOGS)"; fi
echo "all: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
