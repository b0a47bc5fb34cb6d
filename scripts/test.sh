#!/usr/bin/env bash
# The one test command: installs what the tests need, starts it on loopback,
# runs every test, stops what it started, and ends with "all: N passed, M failed".
#
#   scripts/test.sh                  everything (what CI runs, .ci/run)
#   scripts/test.sh --tier TIER      the steps of one tier (repeat for several), in order:
#       quick      cargo only, nothing outside the repository: fmt, clippy, the cargo tests
#                  but tests/dynamodb_local/ and the one library test needing DynamoDB Local,
#                  doc tests
#       crate      the crate as others build it: rustdoc, feature subsets, the package
#       services   with a service beside the crate: the DynamoDB Local tests, the AWS CLI's
#                  table commands, load, fuzzing, nginx
#       clients    independent clients and servers: Python, Node, OAuth, Cognito, conformance
#       deploy     cfn-lint/SAM/cargo-lambda, the starter out of tree
#       bench      every benchmark in smoke mode (numbers come out, answers checked; the Rust
#                  peers' side of the peers benchmark only with benches/lambda-peers.sh --smoke)
#   scripts/test.sh --only NAME      one step (repeat for several); e.g. --only oauth
#   scripts/test.sh --list           the steps, each with its tier
#
# Every step reports one line, "NAME: N passed, M failed" (a check counts 1; a cargo test or
# pytest step its tests; a script its own line), and its output is in $MCP_WORK/logs/NAME.log.
#
# Caches (reused across runs, safe to delete):
#   CARGO_TARGET_DIR  default ~/.cache/mcp-lambda-target
#   MCP_WORK          default ~/.cache/mcp-lambda-work (Python venv, Node clients, logs)
set -uo pipefail
cd "$(dirname "$0")/.."

# --- The steps: name, tier, what it runs. The order is the run's order. ----------
STEPS=()
step() { STEPS+=("$1:$2"); }
step fmt quick;                  step clippy quick
step cargo-test quick;           step cargo-doctest quick
step docs crate;                 step no-default-features crate
step feature-dynamodb crate;     step feature-aws-secrets crate
step publish-dry-run crate
step dynamodb services;          step python-client clients
step table-command services;     step node-clients clients
step oauth clients;              step cognito clients
step conformance clients;        step conformance-auth clients
step quickstart clients;         step porting clients
step lambda deploy
step starter deploy;             step criterion-smoke bench
step bench-smoke bench;          step instructions-smoke bench
step lambda-runtime-smoke bench; step lambda-peers-smoke bench
step listeners-smoke bench;      step load services
step fuzz services;              step nginx services

usage() { sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; }
tiers=() only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --tier) [ $# -ge 2 ] || { usage; exit 2; }; tiers+=("$2"); shift 2 ;;
    --only) [ $# -ge 2 ] || { usage; exit 2; }; only+=("$2"); shift 2 ;;
    --list) for s in "${STEPS[@]}"; do printf '%-22s %s\n' "${s%%:*}" "${s#*:}"; done; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument $1"; usage; exit 2 ;;
  esac
done
known() { # known NAME FIELD(1 = step, 2 = tier)
  local s
  for s in "${STEPS[@]}"; do
    if [ "$2" = 1 ] && [ "${s%%:*}" = "$1" ]; then return 0; fi
    if [ "$2" = 2 ] && [ "${s#*:}" = "$1" ]; then return 0; fi
  done
  return 1
}
for t in "${tiers[@]}"; do known "$t" 2 || { echo "scripts/test.sh: no tier $t (--list)"; exit 2; }; done
for o in "${only[@]}"; do known "$o" 1 || { echo "scripts/test.sh: no step $o (--list)"; exit 2; }; done
selected() { # selected NAME: whether this run runs step NAME
  local name=$1 tier s x
  for s in "${STEPS[@]}"; do [ "${s%%:*}" = "$name" ] && tier=${s#*:}; done
  [ ${#tiers[@]} -eq 0 ] && [ ${#only[@]} -eq 0 ] && return 0
  for x in "${only[@]}"; do [ "$x" = "$name" ] && return 0; done
  for x in "${tiers[@]}"; do [ "$x" = "$tier" ] && return 0; done
  return 1
}

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
# The tools installed on demand and where crates outside the repository build (HOST_TRIPLE,
# OUTSIDE_TARGET_DIR).
source scripts/tools.sh
# Incremental compilation pays off when one edits and rebuilds, not on a run of every test: off here,
# it builds faster cold and keeps gigabytes of session caches out of the target directory.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
# No usage data from the SAM CLI in a test run (lambda, starter).
export SAM_CLI_TELEMETRY=0
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

# The tools of the steps after the crate's own (PyPI and npm packages: scripts/tools.sh) install
# in the background, at the lowest priority, while the first steps build: downloads, and CPU
# the compiler leaves idle, some three minutes of a cold run otherwise spent waiting.
# A step of those tiers waits for it first (two pip runs into one venv would break it).
needs_tools() { # needs_tools NAME: whether step NAME uses anything outside the repository
  local s; for s in "${STEPS[@]}"; do
    [ "${s%%:*}" = "$1" ] && case ${s#*:} in quick | crate) return 1 ;; *) return 0 ;; esac
  done
  return 1
}
tools_pid=
for s in "${STEPS[@]}"; do
  if selected "${s%%:*}" && needs_tools "${s%%:*}"; then
    mkdir -p "$LOGS/tools"
    (renice -n 19 "$BASHPID" >/dev/null; install_all_tools "$LOGS/tools") >"$LOGS/tools/all.log" 2>&1 &
    tools_pid=$!
    trap 'pkill -P "$tools_pid" 2>/dev/null; kill "$tools_pid" 2>/dev/null' EXIT
    break
  fi
done
tools_ready() { # tools_ready NAME: before step NAME, the background install is over if it needs it
  [ -n "$tools_pid" ] && needs_tools "$1" || return 0
  wait "$tools_pid" 2>/dev/null
  tools_pid=
}

passed=0
failed=0
failures=()
count() { # count NAME PASSED FAILED: adds a step's result and prints its line
  passed=$((passed + $2))
  failed=$((failed + $3))
  if [ "$3" -gt 0 ]; then failures+=("$1"); fi
  echo "$1: $2 passed, $3 failed ($((SECONDS - step_started)) s)"
}
step_started=$SECONDS
begin() { # begin NAME: the step's header; its time counts from here
  echo "==> $1"
  tools_ready "$1"
  step_started=$SECONDS
}
check() { # check NAME CMD... : a step that is one check
  selected "$1" || return 0
  begin "$1"
  if "${@:2}" >"$LOGS/$1.log" 2>&1; then count "$1" 1 0; else tail -n 40 "$LOGS/$1.log"; count "$1" 0 1; fi
}
# check_behind NAME CMD... : a step that is one check, started in the background at the lowest
# priority; `collect NAME` waits for it and reports it. Only for a build sharing no target
# directory with the steps it runs beside (cargo locks one while it builds).
behind_pid=
check_behind() {
  selected "$1" || return 0
  echo "==> $1 (in the background)"
  behind_started=$SECONDS
  (renice -n 19 "$BASHPID" >/dev/null; "${@:2}" >"$LOGS/$1.log" 2>&1) &
  behind_pid=$!
}
collect() { # collect NAME: the result of NAME (check_behind), its time counted from its start
  [ -n "$behind_pid" ] || return 0
  echo "==> $1 (collected)"
  step_started=$behind_started
  if wait "$behind_pid"; then count "$1" 1 0; else tail -n 40 "$LOGS/$1.log"; count "$1" 0 1; fi
  behind_pid=
}
suite() { # suite NAME CMD... : a script that ends with "NAME: N passed, M failed"
  selected "$1" || return 0
  begin "$1"
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
  count "$1" "$p" "$f"
}
cargo_tests() { # cargo_tests NAME CMD... : cargo test runs; the sum of their "test result" lines
  selected "$1" || return 0
  begin "$1"
  "${@:2}" >"$LOGS/$1.log" 2>&1
  local rc=$? p f
  grep -E '^test result|FAILED|panicked' "$LOGS/$1.log"
  p=$(grep -E '^test result' "$LOGS/$1.log" | grep -Eo '[0-9]+ passed' | awk '{s += $1} END {print s + 0}')
  f=$(grep -E '^test result' "$LOGS/$1.log" | grep -Eo '[0-9]+ failed' | awk '{s += $1} END {print s + 0}')
  # A build error, a crashed test binary or no test run at all is a failure of its own.
  if { [ "$rc" -ne 0 ] || ! grep -q '^test result' "$LOGS/$1.log"; } && [ "$f" -eq 0 ]; then
    tail -n 40 "$LOGS/$1.log"; f=1
  fi
  count "$1" "$p" "$f"
}
criterion_tests() { # criterion_tests NAME CMD... : criterion benches in test mode; each bench's "Success"
  selected "$1" || return 0
  begin "$1"
  "${@:2}" >"$LOGS/$1.log" 2>&1
  local rc=$? p t
  p=$(grep -c '^Success$' "$LOGS/$1.log")
  t=$(grep -c '^Testing ' "$LOGS/$1.log")
  # Each bench prints "Testing NAME" then "Success" once it ran; a panic, a build error or no
  # bench at all is a failure of its own.
  if [ "$rc" -ne 0 ] || [ "$t" -eq 0 ] || [ "$p" -ne "$t" ]; then
    tail -n 40 "$LOGS/$1.log"; count "$1" "$p" $((t - p > 0 ? t - p : 1)); return
  fi
  count "$1" "$p" 0
}
pytest_tests() { # pytest_tests NAME CMD... : a pytest run; its summary line
  selected "$1" || return 0
  begin "$1"
  "${@:2}" >"$LOGS/$1.log" 2>&1
  local rc=$? summary p f
  tail -n 15 "$LOGS/$1.log"
  summary=$(grep -E '[0-9]+ (passed|failed|error)' "$LOGS/$1.log" | tail -1)
  p=$(echo "$summary" | grep -Eo '[0-9]+ passed' | awk '{print $1 + 0}')
  f=$(echo "$summary" | grep -Eo '[0-9]+ (failed|errors?)' | awk '{s += $1} END {print s + 0}')
  p=${p:-0}
  # No test run, or pytest failing without saying which test, is a failure of its own.
  if [ "$p" -eq 0 ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then f=$((f + 1)); fi
  count "$1" "$p" "$f"
}

# --- Rust, the whole workspace (the library, basket/, conformance/, test-support/, benches/):
#     format, lints, unit + integration + doc tests. Every cargo test names --workspace and a
#     test target, so each resolves the same features and reuses one build of the library.
check fmt cargo fmt --all --check
check clippy cargo clippy --workspace --all-targets --locked -- -D warnings
# Every test target but tests/dynamodb_local/ (and the criterion benches, run by
# criterion-smoke), found in the manifests, so a new test target is run without being named here.
# The library's one unit test on DynamoDB Local runs in the `dynamodb` step.
cargo_test_targets() {
  cargo metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "test" in t["kind"] and t["name"] != "dynamodb_local":
            print("--test", t["name"])'
}
# One selection of targets for the steps that build the library's test binary, so they share one
# build of it (another selection unifies other features and builds rustls and above again).
test_targets=()
if selected cargo-test || selected dynamodb; then
  read -r -a test_targets <<<"$(cargo_test_targets | tr '\n' ' ')"
fi
workspace_tests=(--workspace --lib --bins --examples "${test_targets[@]}")
cargo_tests cargo-test cargo test --locked "${workspace_tests[@]}" -- --skip oauth::dynamodb::tests::
cargo_tests cargo-doctest cargo test --locked --workspace --doc
# The crate docs, broken intra-doc links denied; the library without the AWS features
# (in-memory handles, auth) builds and its own tests pass (the feature-gated errors).
check docs env RUSTDOCFLAGS="-D warnings" cargo doc --locked --workspace --no-deps
check no-default-features bash -c 'cargo build --locked --no-default-features --lib --bins --example hello && cargo test --locked --no-default-features --lib && cargo test --locked --no-default-features --doc && RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --no-default-features'
# Each AWS feature alone compiles (checked, not built: the doc tests' gating is proven by the
# run above without either feature and by cargo-doctest with both; a build and doc-test run
# per feature was two minutes of a cold run).
check feature-dynamodb cargo check --locked --no-default-features --features dynamodb --lib
check feature-aws-secrets cargo check --locked --no-default-features --features aws-secrets --lib
# The crate as crates.io would take it: packaged (the `include` list), then built from the
# package alone (no workspace, no dev-dependencies). Not uploaded. Built as the crates outside
# the repository are (scripts/tools.sh: HOST_TRIPLE, OUTSIDE_TARGET_DIR), which reuse its
# dependencies' builds; in their own target directory, so in the background, beside the
# DynamoDB, client and conformance steps (mostly waiting on servers), until the quick start.
check_behind publish-dry-run env CARGO_TARGET_DIR="$OUTSIDE_TARGET_DIR" \
  cargo publish --dry-run --allow-dirty --locked -p mcp-lambda --target "$HOST_TRIPLE"
# --- The tests needing DynamoDB Local (tests/dynamodb_local/ and the library's OAuth store on
#     DynamoDB), with DynamoDB Local on loopback: started, used, stopped
#     Most of these tests wait on DynamoDB Local (a Java server) rather than compute: four at a
#     time halve the step (161 to 81 s on 2 cores). Three run after, with nothing beside them:
#     two measure contention and poll timing (at eight at a time both failed: retries exhausted
#     under 50 racing writes, a stream's update later than the two intervals allowed), and one
#     adds an index to a table of its own, which DynamoDB Local once failed (InternalFailure on
#     DescribeTable) beside the others in a cold run. Each run is counted whatever the one
#     before it did.
alone=(dynamodb::fifty_concurrent_add_item_calls_on_one_basket_make_exactly_fifty
  dynamodb::a_hundred_streams_on_one_process_cost_what_one_stream_watching_their_items_costs
  dynamodb::a_table_made_before_the_owner_index_gains_it_and_says_so_until_then)
cargo_tests dynamodb scripts/dynamodb-tests.sh -- bash -c 'cargo test --locked --workspace --test dynamodb_local \
    -- --test-threads 4'"$(printf ' --skip %s' "${alone[@]}")"'; a=$?
  cargo test --locked --workspace --test dynamodb_local -- --test-threads 1 --exact '"${alone[*]}"'; b=$?
  cargo test --locked '"${workspace_tests[*]}"' -- oauth::dynamodb::tests::; c=$?
  exit $((a | b | c))'

# --- An independent client: Python mcp 2.3.0 -------------------------------
python_client() {
  install_mcp_client || return 1
  # --workspace and an example: the features the cargo test steps resolve (the dev-dependencies'
  # unified in), so this reuses their build instead of rebuilding tokio and all above it.
  cargo build --locked --workspace --bin basket --example hello || return 1
  BASKET_BIN="$CARGO_TARGET_DIR/debug/basket" "$MCP_PYTHON" -m pytest -q -p no:cacheprovider tests/clients
}
pytest_tests python-client python_client

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

# --- The README's quick start as a user builds it: a new crate outside the repository, called
#     by the Python client (its dependencies built by publish-dry-run, in the background
#     since before the DynamoDB step: the steps between mostly wait on servers and clients)
collect publish-dry-run
suite quickstart scripts/quickstart-tests.sh
# docs/porting.md's counter, before and after, as crates of their own; the after on two
# processes over one DynamoDB Local table, one restarted, called by the Python client.
suite porting scripts/porting-tests.sh

# --- Deployment: cfn-lint, sam validate --lint, cargo-lambda build/watch/invoke
suite lambda scripts/lambda-tests.sh
# --- The starter a user copies: out of tree, its test, a real client, cargo-lambda, both lints
suite starter scripts/starter-tests.sh

# --- The criterion benches (benches/in_process.rs, benches/handles.rs) run once each as tests
criterion_tests criterion-smoke cargo test --locked --workspace --benches
# --- The benchmark harness, smoke mode (every server answers, numbers come out)
suite bench-smoke benches/side-by-side.sh --smoke
# --- The instruction-count driver of BENCHMARKS.md's "CPU per request", each kind once (it
#     asserts every answer is the kind it counts), and tools/call once configured as on Lambda;
#     built with the workspace's features, which the cargo test steps built already
instructions_smoke() {
  cargo build --locked --quiet --workspace --example bench_instructions || return 1
  local kind driver="$CARGO_TARGET_DIR/debug/examples/bench_instructions"
  for kind in tools_list tools_call listen refused; do "$driver" "$kind" 20 || return 1; done
  BENCH_MODE=lambda "$driver" tools_call 20 >/dev/null
}
check instructions-smoke instructions_smoke
# --- The Lambda runtime-path benchmark, smoke mode (the basket and a lambda_http hello under
#     loopback Runtime APIs, DynamoDB Local; numbers come out)
suite lambda-runtime-smoke benches/lambda-runtime.sh --smoke
# --- The peers benchmark, smoke mode, mcp-lambda's side (its function and the driver under a
#     loopback Runtime API; every answer checked). The peers themselves (pmcp and
#     turul-mcp-aws-lambda, benches/peers/, a workspace of its own) are built and checked by
#     `benches/lambda-peers.sh --smoke` and by every full run: their debug builds alone took
#     234 s of a 52-minute cold run, for code this repository does not change.
suite lambda-peers-smoke env BENCH_SERVERS=mcp-lambda benches/lambda-peers.sh --smoke
# --- The listener benchmark, smoke mode (1, 10, 100 streams on one process; DynamoDB Local
#     behind a request-counting proxy: requests per poll and delivery within two polls)
suite listeners-smoke benches/listeners.sh --smoke

# --- Load on loopback (2 000 requests per store, memory and DynamoDB Local) and a 60 s fuzz
suite load scripts/soak.sh --short
suite fuzz scripts/fuzz.sh --smoke

# --- The README's nginx recipe: two basket processes behind nginx, a rolling restart
suite nginx scripts/nginx-tests.sh
# A background step no later step collected (e.g. --tier crate runs no quick start).
collect publish-dry-run

echo
if [ ${#failures[@]} -gt 0 ]; then echo "failing steps: ${failures[*]} (logs in $LOGS)"; fi
echo "all: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
