# Sourced by benches/lambda-runtime.sh and benches/listeners.sh: the step counters and the
# DynamoDB Local each run starts for itself. Set MODE (full or smoke), SMOKE_NAME (the name of
# the smoke run's summary line, which scripts/test.sh reads) and OUT (the run's folder) first.

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
