# Sourced by the benchmark scripts (benches/side-by-side.sh, benches/lambda-runtime.sh,
# benches/lambda-peers.sh, benches/listeners.sh) from the repository's root, with the script's own
# arguments:
#
#   SMOKE_NAME=bench-smoke; source benches/common.sh "$@"
#
# the caches (CARGO_TARGET_DIR, MCP_WORK: exported, with their defaults), the mode (MODE=full, or
# smoke with --smoke; anything else prints the usage and exits 2), the run's folder (new_run), the
# step counters (pass, fail, finish; SMOKE_NAME names the smoke run's summary line, which
# scripts/test.sh reads), the DynamoDB Local each run starts for itself, and the last two steps of
# a run: measure (the driver, its records into RESULTS) and report (BENCHMARKS.md's section, or
# the run's report.md on a smoke run; the reports' shared Python is benches/sections.py).

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"

MODE=full
case "${1:-}" in
  --smoke) MODE=smoke ;;
  "") ;;
  *) echo "usage: $0 [--smoke]" >&2; exit 2 ;;
esac

# new_run NAME TITLE: this run's folder, OUT ($MCP_WORK/bench/<UTC time>-NAME), made and announced.
new_run() {
  OUT="$MCP_WORK/bench/$(date -u +%Y%m%dT%H%M%SZ)-$1"
  mkdir -p "$OUT"
  echo "bench: $2, results in $OUT"
}

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "  ok   $1"; }
fail() { failed=$((failed + 1)); echo "  FAIL $1"; }
finish() {
  [ "$MODE" = smoke ] && echo "$SMOKE_NAME: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

# start_dynamodb_local NAME: DynamoDB Local in a state folder of this run's own (NAME-<pid>),
# stopped (and its data deleted) when the script exits; its endpoint in ENDPOINT.
start_dynamodb_local() {
  export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/$1-$$"
  trap 'scripts/dynamodb-local.sh stop >/dev/null 2>&1' EXIT
  ENDPOINT=$(scripts/dynamodb-local.sh start 2>"$OUT/dynamodb-local.log" | sed -n 's/^MCP_TEST_DYNAMODB_ENDPOINT=//p')
  if [ -n "$ENDPOINT" ]; then pass "DynamoDB Local on $ENDPOINT"; else fail "DynamoDB Local (see $OUT/dynamodb-local.log)"; finish; fi
}

# measure CHECKED CMD...: runs the driver CMD, which writes its records to $OUT/measured.jsonl and
# its errors to stderr ($OUT/driver.log); appends the records and an end record (the load average)
# to RESULTS. CHECKED says what a clean exit proves; a failed one ends the run.
measure() {
  if "${@:2}" 2>"$OUT/driver.log"; then
    cat "$OUT/measured.jsonl" >>"$RESULTS"
    pass "$1"
  else
    cat "$OUT/measured.jsonl" >>"$RESULTS" 2>/dev/null
    tail -5 "$OUT/driver.log"; fail "measuring (see $OUT/driver.log)"; finish
  fi
  echo "{\"kind\":\"end\",\"loadavg_end\":\"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >>"$RESULTS"
}

# report SCRIPT RESULTS: the report over RESULTS, written into BENCHMARKS.md on a full run, to
# $OUT/report.md on a smoke run (a smoke run's numbers stand for nothing).
report() {
  if [ "$MODE" = full ]; then
    python3 "$1" "$2" --write BENCHMARKS.md && pass "report written into BENCHMARKS.md" || fail "report"
  else
    python3 "$1" "$2" >"$OUT/report.md" && pass "report (not written: smoke)" || fail "report"
  fi
}
