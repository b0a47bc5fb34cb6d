#!/usr/bin/env bash
# The side-by-side benchmark: the same three tools with the same JSON answers on
#   mcp-lambda       benches/servers/mcp_lambda.rs (example bench_server), local mode, auth off
#   mcp-lambda+auth  the same with auth on (RS256 bearer token, warm JWKS from a loopback issuer)
#   rmcp             benches/servers/rmcp.rs (bench_rmcp): bare rmcp StreamableHttpService,
#                    stateless, JSON
#   ts-sdk           benches/ts/server.mjs: @modelcontextprotocol/server 2.4.0, createMcpHandler
#   py-sdk           benches/py/server.py: mcp 2.3.0, stateless, JSON responses, uvicorn
#   hyper            benches/servers/hyper.rs (bench_hyper): hyper + serde_json, no MCP logic
#                    (the floor)
# (cold starts and the loopback OAuth issuer: benches/servers/harness.rs, example bench_harness)
# all on 127.0.0.1, measuring cold start (exec → first server/discover 200), requests/s, server
# CPU per request (/proc/<pid>/stat), p50/p99 at 1 and 16 connections for tools/list and
# tools/call (wrk), and peak RSS (VmHWM) under 64 connections. Runs are interleaved
# (A B C … A B C …) and reported as ratios to mcp-lambda.
#
#   benches/side-by-side.sh            the full run (~15 min): release builds, 20 cold starts,
#                                      3 rounds × 5 s per cell; writes the table and chart into
#                                      BENCHMARKS.md (between the results markers)
#   benches/side-by-side.sh --smoke    a few seconds per server (debug builds): asserts every
#                                      server answers and the harness produces numbers; ends with
#                                      "bench-smoke: N passed, M failed"
#
# Installs what it needs: wrk (Debian), the TypeScript SDK (npm ci in benches/ts), a Python venv
# with mcp 2.3.0 (and matplotlib for the chart) in $MCP_WORK/venv-bench.
# Environment: CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target), MCP_WORK (default
# ~/.cache/mcp-lambda-work), BENCH_ROUNDS, BENCH_SECONDS, BENCH_STARTS (override the full run),
# BENCH_BEFORE (a folder with an older tree's bench_server, built the same way: measured as
# "before" in the same run, for a change's before/after), BENCH_PROFILE (the cargo profile of the
# servers: release for the full run, debug for the smoke; quick for a faster before/after). Only a
# full release run without BENCH_BEFORE writes BENCHMARKS.md; any other keeps report.md in its folder.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SMOKE_NAME=bench-smoke
source benches/common.sh "$@"

if [ "$MODE" = smoke ]; then
  ROUNDS=${BENCH_ROUNDS:-1}; SECONDS_PER_RUN=${BENCH_SECONDS:-1}; STARTS=${BENCH_STARTS:-3}
  CONNS="1 16"; PROFILE=debug
else
  ROUNDS=${BENCH_ROUNDS:-3}; SECONDS_PER_RUN=${BENCH_SECONDS:-5}; STARTS=${BENCH_STARTS:-20}
  CONNS="1 16"; PROFILE=release
fi
PROFILE=${BENCH_PROFILE:-$PROFILE}
new_run "$MODE" "$MODE run"
RESULTS="$OUT/results.jsonl"
: >"$RESULTS"

# --- Everything the run needs -------------------------------------------------
VENV="$MCP_WORK/venv-bench"
PY_PKGS=("mcp==2.3.0" "uvicorn[standard]==0.54.0")
[ "$MODE" = full ] && PY_PKGS+=("matplotlib==3.11.2")
setup() {
  if ! command -v wrk >/dev/null; then
    echo "==> installing wrk (Debian)"
    { apt-get update -q && apt-get install -y -q wrk; } >"$OUT/apt.log" 2>&1 || { cat "$OUT/apt.log"; return 1; }
  fi
  if [ ! -d benches/ts/node_modules/@modelcontextprotocol/server ] \
    || [ benches/ts/package-lock.json -nt benches/ts/node_modules/.package-lock.json ]; then
    echo "==> npm ci (benches/ts)"
    (cd benches/ts && npm ci --no-audit --no-fund) >"$OUT/npm.log" 2>&1 || { cat "$OUT/npm.log"; return 1; }
  fi
  # The venv is shared by both modes: install only what is missing from it.
  local pkg missing=()
  for pkg in "${PY_PKGS[@]}"; do
    grep -qxF "$pkg" "$VENV/.bench-pkgs" 2>/dev/null || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "==> Python venv ($VENV): ${missing[*]}"
    { [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"; } && "$VENV/bin/pip" install -q "${missing[@]}" \
      >"$OUT/pip.log" 2>&1 || { cat "$OUT/pip.log"; return 1; }
    printf '%s\n' "${missing[@]}" >>"$VENV/.bench-pkgs"
  fi
  echo "==> cargo build ($PROFILE): bench_server bench_rmcp bench_hyper bench_harness"
  # A debug (smoke) build selects the whole workspace, whose features the cargo test steps have
  # built already; an optimized one the benches' package alone, as measured.
  local flags=(--workspace)
  [ "$PROFILE" != debug ] && flags=(--profile "$PROFILE" -p mcp-lambda-benches)
  cargo build --locked "${flags[@]}" --example bench_server --example bench_rmcp \
    --example bench_hyper --example bench_harness >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  if [ "$MODE" = full ] && [ "$PROFILE" = release ] && [ -z "${BENCH_BEFORE:-}" ]; then
    echo "==> cargo build --release --bin basket (the Lambda binary, for its size)"
    cargo build --locked --release --bin basket >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; return 1; }
  fi
}
if setup; then pass "setup (wrk, npm ci, venv, cargo build)"; else fail "setup"; finish; fi
BIN="$CARGO_TARGET_DIR/$PROFILE/examples"
PY="$VENV/bin/python"

# --- The servers -----------------------------------------------------------------
SERVERS=(mcp-lambda mcp-lambda+auth rmcp ts-sdk py-sdk hyper)
declare -A PORT=([mcp-lambda]=3100 [mcp-lambda+auth]=3105 [rmcp]=3101 [ts-sdk]=3102 [py-sdk]=3103 [hyper]=3104 [before]=3106)
# BENCH_BEFORE=DIR: also runs DIR/bench_server (an older tree's, built the same way) as the
# server "before", beside everything else in the same interleaved run: a change's before/after.
if [ -n "${BENCH_BEFORE:-}" ]; then
  [ -x "$BENCH_BEFORE/bench_server" ] || { fail "BENCH_BEFORE: no $BENCH_BEFORE/bench_server"; finish; }
  SERVERS=(mcp-lambda before mcp-lambda+auth rmcp ts-sdk py-sdk hyper)
fi
QUIET_LOG="warn,rmcp=warn"

# The issuer for mcp-lambda+auth: a JWKS on loopback and one RS256 token for the audience.
AUDIENCE="http://127.0.0.1:${PORT[mcp-lambda+auth]}/mcp"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
}
trap cleanup EXIT
"$BIN/bench_harness" issuer RS256 "$AUDIENCE" "$OUT/issuer.json" 2>"$OUT/issuer.log" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$OUT/issuer.json" ] && break; sleep 0.1; done
ISSUER=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["issuer"])' "$OUT/issuer.json" 2>/dev/null)
TOKEN=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$OUT/issuer.json" 2>/dev/null)
if [ -n "$TOKEN" ]; then pass "issuer on $ISSUER"; else fail "issuer (see $OUT/issuer.log)"; fi

# command SERVER: the argv that starts it (through env, so the PID is the server's own).
command_of() {
  case "$1" in
    mcp-lambda) echo env MCP_BIND=127.0.0.1:${PORT[$1]} MCP_LOG=$QUIET_LOG "$BIN/bench_server" ;;
    before) echo env MCP_BIND=127.0.0.1:${PORT[$1]} MCP_LOG=$QUIET_LOG "$BENCH_BEFORE/bench_server" ;;
    mcp-lambda+auth) echo env MCP_BIND=127.0.0.1:${PORT[$1]} MCP_LOG=$QUIET_LOG \
      MCP_AUTH_ISSUER="$ISSUER" MCP_AUTH_AUDIENCE="$AUDIENCE" "$BIN/bench_server" ;;
    rmcp) echo env BENCH_BIND=127.0.0.1:${PORT[$1]} "$BIN/bench_rmcp" ;;
    ts-sdk) echo env PORT=${PORT[$1]} node "$ROOT/benches/ts/server.mjs" ;;
    py-sdk) echo env PORT=${PORT[$1]} "$PY" "$ROOT/benches/py/server.py" ;;
    hyper) echo env BENCH_BIND=127.0.0.1:${PORT[$1]} "$BIN/bench_hyper" ;;
  esac
}
token_of() { [ "$1" = mcp-lambda+auth ] && echo "$TOKEN"; }

declare -A PID
start() { # start SERVER: runs it in the background and waits for its port
  local cmd
  if (exec 3<>"/dev/tcp/127.0.0.1/${PORT[$1]}") 2>/dev/null; then
    echo "  port ${PORT[$1]} is already taken (by another process): cannot measure $1" >&2
    return 1
  fi
  read -r -a cmd <<<"$(command_of "$1")"
  "${cmd[@]}" >"$OUT/$1.log" 2>&1 &
  PID[$1]=$!
  PIDS+=($!)
  for _ in $(seq 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${PORT[$1]}") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  return 1
}
stop() { kill "${PID[$1]}" 2>/dev/null; wait "${PID[$1]}" 2>/dev/null; }

mcp_post() { # mcp_post SERVER METHOD PARAMS-JSON [NAME]: prints the answer body
  local meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
  local params="{${3:+$3,}$meta}" token
  token=$(token_of "$1")
  curl -s --max-time 10 "http://127.0.0.1:${PORT[$1]}/mcp" -H 'content-type: application/json' \
    -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
    -H "mcp-method: $2" ${4:+-H "mcp-name: $4"} ${token:+-H "authorization: Bearer $token"} \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$2\",\"params\":$params}"
}

verify() { # verify SERVER: the same answers everywhere, and bound to loopback only
  local list call add
  list=$(mcp_post "$1" tools/list "")
  call=$(mcp_post "$1" tools/call '"name":"echo","arguments":{"message":"hello"}' echo)
  add=$(mcp_post "$1" tools/call '"name":"add","arguments":{"a":2,"b":40}' add)
  "$PY" - "$list" "$call" "$add" <<'EOF' || return 1
import json, sys
lst, call, add = (json.loads(a)["result"] for a in sys.argv[1:])
names = [t["name"] for t in lst["tools"]]
assert names == ["echo", "add", "upper"], names
assert lst["tools"][1]["inputSchema"]["required"] == ["a", "b"], lst["tools"][1]
assert call["content"] == [{"type": "text", "text": "hello"}], call
assert add["content"] == [{"type": "text", "text": "42"}], add
EOF
  ss -ltnH "sport = :${PORT[$1]}" | awk '{print $4}' | grep -qvE '^127\.0\.0\.1:' && return 1
  return 0
}

record() { echo "$1" >>"$RESULTS"; }

# --- The machine ------------------------------------------------------------------
record "$("$PY" - "$MODE" "$ROUNDS" "$SECONDS_PER_RUN" "$STARTS" <<'EOF'
import json, os, platform, subprocess, sys
def out(*cmd):
    try: return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError: return ""
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
print(json.dumps({"kind": "machine", "mode": sys.argv[1], "rounds": int(sys.argv[2]),
    "seconds": int(sys.argv[3]), "starts": int(sys.argv[4]), "cpu": cpu, "cores": os.cpu_count(),
    "mem_gib": round(int(mem) / 2**20, 1), "kernel": platform.release(),
    "loadavg_start": open("/proc/loadavg").read().split()[:3],
    "rustc": out("rustc", "--version"), "node": out("node", "--version"),
    "python": platform.python_version(), "wrk": out("wrk", "-v").splitlines()[0] if out("wrk", "-v") else "wrk"}))
EOF
)"

# --- 1. Every server answers the same ------------------------------------------------
echo "==> answers"
for s in "${SERVERS[@]}"; do
  if start "$s" && verify "$s"; then pass "$s answers echo/add/tools/list the same, on 127.0.0.1 only"
  else fail "$s answers (log: $OUT/$s.log)"; fi
  stop "$s"
done

# --- 2. Cold start, interleaved ---------------------------------------------------
echo "==> cold start: $STARTS starts per server, interleaved"
per_round=$(( (STARTS + 3) / 4 ))
[ "$MODE" = smoke ] && per_round=$STARTS
declare -A STARTED
for s in "${SERVERS[@]}"; do STARTED[$s]=0; done
while :; do
  more=0
  for s in "${SERVERS[@]}"; do
    left=$((STARTS - STARTED[$s]))
    [ "$left" -le 0 ] && continue
    n=$(( left < per_round ? left : per_round ))
    read -r -a cmd <<<"$(command_of "$s")"
    line=$("$BIN/bench_harness" coldstart "127.0.0.1:${PORT[$s]}" "$n" -- "${cmd[@]}" 2>>"$OUT/coldstart.log")
    if [ -n "$line" ]; then
      record "{\"kind\":\"coldstart\",\"server\":\"$s\",\"result\":$line}"
    else
      echo "  cold start of $s failed (see $OUT/coldstart.log)"
      STARTED[$s]=$STARTS; record "{\"kind\":\"coldstart_failed\",\"server\":\"$s\"}"; continue
    fi
    STARTED[$s]=$((STARTED[$s] + n))
    more=1
  done
  [ "$more" -eq 0 ] && break
done
for s in "${SERVERS[@]}"; do
  if grep -q "\"kind\":\"coldstart\",\"server\":\"$s\"" "$RESULTS"; then pass "$s cold start measured"
  else fail "$s cold start"; fi
done

# --- 3. Throughput, CPU per request, latency: interleaved rounds -----------------------
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
load_run() { # load_run SERVER METHOD CONNS ROUND
  local pid=${PID[$1]} before after line
  before=$(cpu_ticks "$pid")
  line=$(BENCH_METHOD=$2 BENCH_TOKEN=$(token_of "$1") timeout $((SECONDS_PER_RUN + 30)) \
    wrk -t1 -c"$3" -d"${SECONDS_PER_RUN}s" --timeout 5s -s benches/wrk/mcp.lua \
    "http://127.0.0.1:${PORT[$1]}/mcp" 2>>"$OUT/wrk.log" | grep '^{')
  after=$(cpu_ticks "$pid")
  [ -n "$line" ] || return 1
  record "{\"kind\":\"load\",\"server\":\"$1\",\"method\":\"$2\",\"conns\":$3,\"round\":$4,\"cpu_ticks\":$((after - before)),\"clk_tck\":$CLK_TCK,\"loadavg\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"wrk\":$line}"
}
echo "==> load: $ROUNDS round(s) × ${SECONDS_PER_RUN}s per cell, servers interleaved"
ok=1
for s in "${SERVERS[@]}"; do start "$s" || { fail "$s did not start for the load runs"; ok=0; }; done
for round in $(seq "$ROUNDS"); do
  for method in tools/list tools/call; do
    for c in $CONNS; do
      # Rotate the order each round, so no server always runs right after the same one.
      for i in "${!SERVERS[@]}"; do
        s=${SERVERS[$(( (i + round - 1) % ${#SERVERS[@]} ))]}
        load_run "$s" "$method" "$c" "$round" || { echo "  wrk failed: $s $method c=$c"; ok=0; }
      done
    done
  done
  echo "  round $round done (load average $(cut -d' ' -f1-3 /proc/loadavg))"
done
for s in "${SERVERS[@]}"; do stop "$s"; done
for s in "${SERVERS[@]}"; do
  if "$PY" - "$RESULTS" "$s" <<'EOF'; then pass "$s load numbers (requests, CPU, p50/p99; no errors)"; else fail "$s load numbers"; fi
import json, sys
runs = [r for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "load" and r["server"] == sys.argv[2]]
assert runs, "no load runs"
for r in runs:
    w = r["wrk"]
    assert w["requests"] > 0 and w["errors"] == 0 and w["non2xx"] == 0, r
    assert w["p50_us"] > 0 and w["p99_us"] >= w["p50_us"], r
EOF
done

# --- 4. Peak RSS under 64 connections (fresh processes) ----------------------------
echo "==> peak RSS: 64 connections, tools/list then tools/call"
for s in "${SERVERS[@]}"; do
  if start "$s"; then
    idle=$(awk '/VmRSS/ {print $2}' "/proc/${PID[$s]}/status")
    for method in tools/list tools/call; do
      BENCH_METHOD=$method BENCH_TOKEN=$(token_of "$s") timeout $((SECONDS_PER_RUN + 30)) wrk -t1 -c64 \
        -d"${SECONDS_PER_RUN}s" --timeout 5s -s benches/wrk/mcp.lua "http://127.0.0.1:${PORT[$s]}/mcp" \
        >>"$OUT/wrk.log" 2>&1
    done
    hwm=$(awk '/VmHWM/ {print $2}' "/proc/${PID[$s]}/status")
    stop "$s"
    record "{\"kind\":\"rss\",\"server\":\"$s\",\"idle_kb\":${idle:-0},\"hwm_kb\":${hwm:-0}}"
    if [ "${hwm:-0}" -gt 0 ]; then pass "$s peak RSS ${hwm} kB"; else fail "$s peak RSS"; fi
  else
    fail "$s did not start for the RSS run"
  fi
done

# --- 5. Binary sizes ----------------------------------------------------------------
for b in "$CARGO_TARGET_DIR/release/basket" "$CARGO_TARGET_DIR/$PROFILE/examples/bench_server"; do
  [ "$MODE" = smoke ] && [ "$b" = "$CARGO_TARGET_DIR/release/basket" ] && continue
  [ -f "$b" ] && record "{\"kind\":\"binary\",\"name\":\"$(basename "$b")\",\"profile\":\"$PROFILE\",\"bytes\":$(stat -c %s "$b"),\"stripped\":$(file "$b" | grep -q 'not stripped' && echo false || echo true)}"
done
record "{\"kind\":\"end\",\"loadavg_end\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}"

# --- 6. The report ------------------------------------------------------------------
echo "==> report"
report_args=("$RESULTS" --out "$OUT")
# A before/after run (BENCH_BEFORE) or another profile keeps its report in its folder: the section
# in BENCHMARKS.md is the release build's standing table.
if [ "$MODE" = full ] && [ "$PROFILE" = release ] && [ -z "${BENCH_BEFORE:-}" ]; then
  report_args+=(--chart benches/side-by-side.png --doc BENCHMARKS.md)
fi
if "$PY" benches/report.py "${report_args[@]}"; then pass "report (table$([ "$MODE" = full ] && echo ', chart, BENCHMARKS.md'))"
else fail "report"; fi
finish
