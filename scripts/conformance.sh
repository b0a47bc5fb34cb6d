#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in .conformance/) against the fixture server
# conformance/ (workspace member mcp-lambda-conformance, binary `conformance`), three times:
#
#   1. 2026-07-28 requirement set, default (stateless) mode, then the tasks and skills
#      extensions' server scenarios (skills: SEP-2640, run one by one)
#                                                                 -> every scored scenario passes
#   2. 2025-11-25 requirement set, MCP_LEGACY_SESSIONS=true       -> every scored scenario passes
#   3. 2025-11-25 requirement set, default mode, gated by
#      .conformance/baseline-2025-stateless.yml                   -> failures match the baseline
#   4. 2026-07-28 requirement set through the Lambda runtime path: the same binary under
#      cargo-lambda's emulator (`cargo lambda watch --only-lambda-apis`: a loopback Runtime
#      API, lambda_http decoding each event), each
#      scored scenario and the three skills scenarios on its own (no tasks on Lambda without a
#      table)
#                                                                 -> every scored scenario passes
#
# The suite's `authorization` command, against the built-in authorization server, is
# scripts/conformance-auth.sh.
#
# Usage: scripts/conformance.sh            (from anywhere; needs cargo, npm, bash)
#        CONFORMANCE_BINARY=path/to/server scripts/conformance.sh   (skip the build)
#
# Network: only the npm registry, and only when .conformance/node_modules is missing or
# older than package-lock.json. The server listens on 127.0.0.1 on a free port and is
# stopped on exit. Results and server logs: .conformance/results-*.
# The last line, `conformance: N passed, M failed`, counts scored scenarios over the three
# runs (in run 3 a scenario passes when its failures are exactly the baseline's).
# Exit status: non-zero if any run fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
suite_dir="$root/.conformance"
# A fixed key (base64, 40 bytes), so a requestState sealed before a restart still opens.
state_key="Y29uZm9ybWFuY2UtZml4dHVyZS1rZXktMDEyMzQ1Njc4OWFiY2RlZg=="

server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# (a) The suite and a Node 22 to run it (Node 20 lacks fs.globSync), from .conformance/'s lock.
MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
# shellcheck source=tools.sh
source "$root/scripts/tools.sh"
install_conformance_suite
node=$CONFORMANCE_NODE
suite=$CONFORMANCE_SUITE

# (b) The fixture server (CONFORMANCE_BINARY skips the build and runs that binary instead).
binary=${CONFORMANCE_BINARY:-}
if [[ -z "$binary" ]]; then
  echo "conformance: building the fixture server (cargo build --bin conformance)"
  # Cargo names the executable it built (<target dir>/debug/conformance), wherever the target
  # directory is (CARGO_TARGET_DIR, relative or not, or a .cargo/config).
  # --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
  # dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
  build_log=$(cd "$root" && cargo build --locked --workspace --bin conformance --example hello \
    --message-format=json-render-diagnostics)
  binary=$(printf '%s\n' "$build_log" | grep '"executable":"[^"]*/conformance"' | tail -n1 \
    | sed 's/.*"executable":"\([^"]*\)".*/\1/')
fi
[[ -x "$binary" ]] || { echo "conformance: no executable fixture server at '$binary'" >&2; exit 1; }

free_port() {
  "$node" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# (c) Start the server with the given extra environment; waits until it accepts connections.
start_server() {
  local log=$1; shift
  port=$(free_port)
  url="http://127.0.0.1:$port/mcp"
  env MCP_BIND="127.0.0.1:$port" MCP_PATH=/mcp MCP_REQUEST_STATE_KEY="$state_key" \
    MCP_LEGACY_SESSIONS=false "$@" "$binary" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "conformance: the server did not start; its log ($log):" >&2
  cat "$log" >&2
  exit 1
}

total_passed=0
total_failed=0
runs_failed=0

# (d) One suite run: label, requirement set, results folder, optional baseline.
run_suite() {
  local label=$1 revision=$2 results=$3 baseline=${4:-}
  local scored="$suite_dir/$results/scored.txt" log="$suite_dir/$results/suite.log" rc=0
  rm -rf "${suite_dir:?}/$results"
  mkdir -p "$suite_dir/$results"
  "$node" "$suite" list --server --requirements "$revision" \
    | awk '/^Server scenarios/ {on=1; next} /^[^ ]/ {on=0} on && /^  - / {print $2}' >"$scored"
  echo "conformance: $label against $url ($(wc -l <"$scored") scored scenarios)"
  local args=(server --url "$url" --requirements "$revision" -o "$suite_dir/$results")
  [[ -n "$baseline" ]] && args+=(--expected-failures "$suite_dir/$baseline")
  (cd "$suite_dir" && "$node" "$suite" "${args[@]}") >"$log" 2>&1 || rc=$?
  sed -n '/^=== SUMMARY ===/,$p' "$log" | grep -v '^$' || true
  local summary counts
  summary=$("$node" "$suite_dir/summarize.mjs" "$label" "$suite_dir/$results" "$scored" \
    ${baseline:+"$suite_dir/$baseline"})
  printf '%s\n' "$summary" | sed '$d'
  counts=$(printf '%s\n' "$summary" | tail -n1)
  total_passed=$((total_passed + ${counts% *}))
  total_failed=$((total_failed + ${counts#* }))
  if [[ $rc -ne 0 || ${counts#* } -ne 0 ]]; then
    echo "conformance: $label FAILED (suite exit $rc); full output: ${log#"$root/"}"
    runs_failed=$((runs_failed + 1))
  fi
}

# The skills extension's three server scenarios (SEP-2640), not in the requirement set's run:
# run one by one against the same server, and counted below.
skills_scenarios=(sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory)

start_server "$suite_dir/results-server-2026.log"
run_suite "2026-07-28 (stateless)" 2026-07-28 results-2026
for scenario in "${skills_scenarios[@]}"; do
  (cd "$suite_dir" && "$node" "$suite" server --url "$url" --scenario "$scenario" -o "$suite_dir/results-2026") \
    >>"$suite_dir/results-2026/skills.log" 2>&1 || true
done
stop_server

# (d2) The tasks extension's ten scenarios ran in that run, unscored by the suite (an
# extension); scored here. tasks-status-notifications is listed, not counted
# (.conformance/tasks-not-implemented.txt): the suite itself skips it.
printf '%s\n' tasks-lifecycle tasks-capability-negotiation tasks-wire-fields \
  tasks-request-state-removal tasks-mrtr-input tasks-request-headers \
  tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition \
  >"$suite_dir/results-2026/tasks.txt"
tasks_summary=$("$node" "$suite_dir/summarize.mjs" "tasks extension (2026-07-28)" \
  "$suite_dir/results-2026" "$suite_dir/results-2026/tasks.txt")
printf '%s\n' "$tasks_summary" | sed '$d'
tasks_counts=$(printf '%s\n' "$tasks_summary" | tail -n1)
total_passed=$((total_passed + ${tasks_counts% *}))
total_failed=$((total_failed + ${tasks_counts#* }))
[[ ${tasks_counts#* } -eq 0 ]] || runs_failed=$((runs_failed + 1))
sed 's/^/conformance: not counted: /' "$suite_dir/tasks-not-implemented.txt"
printf '%s\n' "${skills_scenarios[@]}" >"$suite_dir/results-2026/skills.txt"
skills_summary=$("$node" "$suite_dir/summarize.mjs" "skills extension (2026-07-28)" \
  "$suite_dir/results-2026" "$suite_dir/results-2026/skills.txt")
printf '%s\n' "$skills_summary" | sed '$d'
skills_counts=$(printf '%s\n' "$skills_summary" | tail -n1)
total_passed=$((total_passed + ${skills_counts% *}))
total_failed=$((total_failed + ${skills_counts#* }))
[[ ${skills_counts#* } -eq 0 ]] || runs_failed=$((runs_failed + 1))

start_server "$suite_dir/results-server-2025-sessions.log" MCP_LEGACY_SESSIONS=true
run_suite "2025-11-25 (legacy sessions)" 2025-11-25 results-2025-sessions
stop_server

start_server "$suite_dir/results-server-2025-stateless.log"
run_suite "2025-11-25 (stateless, baseline)" 2025-11-25 results-2025-stateless baseline-2025-stateless.yml
stop_server

# (d3) The Lambda runtime path: the fixture run under cargo-lambda's Lambda emulator
# (scripts/tools.sh: under_lambda_emulator), so every request is a Function URL event through the
# Runtime API and lambda_http, as on AWS. It opens its tasks the way users do: on Lambda only
# with a shared table, so the tasks extension is not served here (the baseline lists its scenarios).
install_cargo_lambda >"$suite_dir/results-lambda-tools.log" 2>&1
port=$(free_port)
url="http://127.0.0.1:$port/mcp"
lambda_log="$suite_dir/results-server-2026-lambda.log"
# On Lambda no browser origin is allowed by default; the suite's DNS-rebinding scenario sends
# loopback Host and Origin headers, so they are allowed here as the local server allows them.
cd "$root"
under_lambda_emulator "$port" "$lambda_log" mcp-lambda-conformance "$binary" MCP_PATH=/mcp \
  MCP_REQUEST_STATE_KEY="$state_key" MCP_ALLOWED_HOSTS="localhost,127.0.0.1,::1" \
  MCP_ALLOWED_ORIGINS="http://localhost:*,http://127.0.0.1:*,http://[::1]:*" MCP_LOG=warn
server_pid=$EMULATOR_PID
stop_lambda() { kill -- "-$server_pid" 2>/dev/null || kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; server_pid=""; }
ready=0
for _ in $(seq 1 900); do
  if [[ "$(curl -s -m 600 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" == 200 ]]; then ready=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 1
done
if [[ $ready -eq 1 ]]; then
  # The scored scenarios one by one: the tasks extension's would call its slow tools as plain
  # tools here (no tasks without a table), holding the one execution environment for a minute.
  results=results-2026-lambda
  rm -rf "${suite_dir:?}/$results" && mkdir -p "$suite_dir/$results"
  "$node" "$suite" list --server --requirements 2026-07-28 \
    | awk '/^Server scenarios/ {on=1; next} /^[^ ]/ {on=0} on && /^  - / {print $2}' >"$suite_dir/$results/scored.txt"
  printf '%s\n' "${skills_scenarios[@]}" >>"$suite_dir/$results/scored.txt"
  label="2026-07-28 (Lambda runtime path, cargo-lambda's emulator)"
  echo "conformance: $label against $url ($(wc -l <"$suite_dir/$results/scored.txt") scored scenarios, one at a time)"
  rc=0
  while read -r scenario; do
    (cd "$suite_dir" && "$node" "$suite" server --url "$url" --scenario "$scenario" -o "$suite_dir/$results") \
      >>"$suite_dir/$results/suite.log" 2>&1 || rc=1
  done <"$suite_dir/$results/scored.txt"
  summary=$("$node" "$suite_dir/summarize.mjs" "$label" "$suite_dir/$results" "$suite_dir/$results/scored.txt")
  printf '%s\n' "$summary" | sed '$d'
  counts=$(printf '%s\n' "$summary" | tail -n1)
  total_passed=$((total_passed + ${counts% *}))
  total_failed=$((total_failed + ${counts#* }))
  if [[ $rc -ne 0 || ${counts#* } -ne 0 ]]; then
    echo "conformance: $label FAILED; full output: .conformance/$results/suite.log"
    runs_failed=$((runs_failed + 1))
  fi
else
  echo "conformance: the fixture did not start under cargo-lambda's emulator; its log (${lambda_log#"$root/"}):"
  tail -n 30 "$lambda_log"
  total_failed=$((total_failed + 1)); runs_failed=$((runs_failed + 1))
fi
stop_lambda

# (e) One line for people and CI.
echo "conformance: $total_passed passed, $total_failed failed"
[[ $runs_failed -eq 0 ]]
