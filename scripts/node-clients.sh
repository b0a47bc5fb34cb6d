#!/usr/bin/env bash
# Two Node clients against the basket server, as a new user would run them, requiring that
# neither prints a warning:
#
#   (a) the TypeScript SDK v2 client, @modelcontextprotocol/client 2.4.0, pinned to 2026-07-28
#       (tests/clients/node/ts_client.mjs): tools/list, create_basket, add_item with and
#       without request_id, view_basket; it warns `unknown format "uint32" ignored ...` for
#       every non-standard `format` in an output schema;
#   (b) the inspector's CLI, @modelcontextprotocol/inspector 2.12.0 `--cli --protocol-era
#       modern`: `tools/list --strict` (its schema-portability lint: type unions, boolean
#       schemas, untyped schemas, remote $refs), `tools/list` without it, and `tools/call`.
#
# Usage: scripts/node-clients.sh           (needs node >= 20, npm, cargo)
#        BASKET_BIN=path/to/basket scripts/node-clients.sh   (skip the build)
#
# Installs from tests/clients/node/package.json and package-lock.json (exact versions, every
# dependency as locked) into $MCP_WORK/node-clients, again only when those change; network:
# only the npm registry, only then. The server runs with a clean environment on a free
# loopback port and is stopped on exit; the inspector gets a scratch HOME.
# Each check is one test; the last line is `node-clients: N passed, M failed`, and the exit
# status is non-zero if any failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
pins="$root/tests/clients/node"
dir="$MCP_WORK/node-clients"
scratch="$dir/run"

passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+: $2}"; failed=$((failed + 1)); }
finish() {
  echo "node-clients: $passed passed, $failed failed"
  exit $((failed > 0))
}
abort() { fail "$1" "$2"; finish; }

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

command -v node >/dev/null || abort setup "node is not on PATH"

# (1) The two clients, exactly as locked.
mkdir -p "$dir"
stamp=$(cat "$pins/package.json" "$pins/package-lock.json" | sha256sum | cut -d' ' -f1)
if [[ "$(cat "$dir/installed" 2>/dev/null)" != "$stamp" || ! -d "$dir/node_modules" ]]; then
  echo "node-clients: installing the clients (npm install from the lock file, in $dir)"
  rm -rf "$dir/node_modules" "$dir/installed"
  cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
  # Not `npm ci`: the lock names an optional Windows-only dependency of vite (under the
  # inspector's web client) that the registry does not serve, which `npm ci` refuses and
  # `npm install` skips; every version installed is still the locked one.
  # --ignore-scripts: the inspector's only install script is a no-op for a dependency.
  (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error) \
    || abort setup "npm install failed"
  echo "$stamp" >"$dir/installed"
fi
versions=$(cd "$dir" && node -p '["client", "inspector"].map((p) =>
  require(`./node_modules/@modelcontextprotocol/${p}/package.json`).version).join(" ")')
[[ "$versions" == "2.4.0 2.12.0" ]] \
  || abort setup "expected client 2.4.0 and inspector 2.12.0, found: $versions"
cp "$pins/ts_client.mjs" "$dir/ts_client.mjs"
inspector="$dir/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

# (2) The basket server, built in debug unless BASKET_BIN names one.
bin=${BASKET_BIN:-}
if [[ -z "$bin" ]]; then
  echo "node-clients: building the basket (debug)"
  # --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
  # dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
  (cd "$root" && cargo build --locked --workspace --bin basket --example hello) >"$dir/build.log" 2>&1 \
    || { tail -n 30 "$dir/build.log"; abort setup "cargo build --bin basket failed"; }
  bin="$CARGO_TARGET_DIR/debug/basket"
fi
[[ -x "$bin" ]] || abort setup "no basket binary at $bin"

rm -rf "$scratch" && mkdir -p "$scratch/home"
port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
url="http://127.0.0.1:$port/mcp"
env -i PATH="$PATH" HOME="$scratch/home" MCP_BIND="127.0.0.1:$port" MCP_LOG=warn \
  "$bin" >"$scratch/server.log" 2>&1 &
server_pid=$!
started=""
for _ in $(seq 1 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then started=1; break; fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$started" ]] || { cat "$scratch/server.log"; abort setup "the basket did not start"; }
echo "node-clients: basket at $url"

# (a) The TypeScript client: one PASS/FAIL line per check.
(cd "$dir" && node ts_client.mjs "$url") >"$scratch/ts.out" 2>"$scratch/ts.err"
rc=$?
cat "$scratch/ts.out"
ts_passed=$(grep -c '^PASS ' "$scratch/ts.out")
ts_failed=$(grep -c '^FAIL ' "$scratch/ts.out")
passed=$((passed + ts_passed))
failed=$((failed + ts_failed))
if [[ $rc -ne 0 && $ts_failed -eq 0 ]] || [[ $ts_passed -eq 0 ]]; then
  fail "ts: the client script ran to the end" "exit $rc; stderr: $(head -c 2000 "$scratch/ts.err")"
fi

# (b) The inspector. inspect NAME ARGS...: stdout in $scratch/<NAME>.json, stderr in .err.
outfile() { echo "$scratch/inspector-${1//[^A-Za-z0-9_-]/_}"; }
inspect() {
  local name=$1
  shift
  HOME="$scratch/home" node "$inspector" --cli "$url" --protocol-era modern "$@" --format json \
    >"$(outfile "$name").json" 2>"$(outfile "$name").err"
}
# judge NAME RC JS: JS gets `out` (the parsed stdout) and `err` (stderr's non-empty lines) and
# returns "" when the check passes, or why it failed.
judge() {
  local name=$1 rc=$2 js=$3 why
  why=$(node -e '
    const fs = require("fs");
    const [file, errFile, rc] = process.argv.slice(1);
    let out = null;
    try { out = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) {}
    const err = fs.readFileSync(errFile, "utf8").split("\n").filter((l) => l.trim() !== "");
    const problems = [];
    if (rc !== "0") problems.push(`exit ${rc}`);
    if (out === null) problems.push("stdout is not JSON");
    const findings = (out?.schemaFindings ?? []).flatMap((t) =>
      t.findings.map((f) => `${f.severity} ${f.rule} in ${t.toolName}: ${f.schema}.${f.path}`));
    if (findings.length) problems.push(`${findings.length} schema findings:\n  ${findings.join("\n  ")}`);
    if (err.length) problems.push(`${err.length} lines on stderr:\n  ${err.join("\n  ")}`);
    if (out !== null) { const why = ('"$js"')(out?.result ?? {}); if (why) problems.push(why); }
    console.log(problems.join("; "));
  ' "$(outfile "$name").json" "$(outfile "$name").err" "$rc")
  if [[ -z "$why" ]]; then pass "inspector: $name"; else fail "inspector: $name" "$why"; fi
}
seven_tools='(r) => (r.tools ?? []).length === 7 ? "" : `expected 7 tools, got ${(r.tools ?? []).length}`'

inspect "tools/list --strict" --method tools/list --strict
judge "tools/list --strict" $? "$seven_tools"

inspect "tools/list" --method tools/list
judge "tools/list" $? "$seven_tools"

inspect "tools/call create_basket" --method tools/call --tool-name create_basket
judge "tools/call create_basket" $? \
  '(r) => typeof r.structuredContent?.basket_id === "string" && !r.isError ? "" : `result ${JSON.stringify(r)}`'
basket_id=$(node -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).result.structuredContent.basket_id' \
  "$(outfile "tools/call create_basket").json" 2>/dev/null || true)

inspect "tools/call add_item with request_id" --method tools/call --tool-name add_item \
  --tool-args-json "{\"basket_id\":\"$basket_id\",\"sku\":\"I-1\",\"quantity\":4,\"request_id\":\"inspector-1\"}"
judge "tools/call add_item with request_id" $? \
  '(r) => r.structuredContent?.total_quantity === 4 && !r.isError ? "" : `result ${JSON.stringify(r)}`'

finish
