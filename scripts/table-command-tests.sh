#!/usr/bin/env bash
# docs/handles.md's AWS CLI commands for the handles table, run as written (plus an endpoint)
# against DynamoDB Local, and the table they made checked against infra/handles-table.json: the
# key, the owner index, the billing mode, TTL on the same attribute. Ends with "table-command: N passed, M failed".
# Caches: MCP_WORK (the AWS CLI's venv, DynamoDB Local).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local AWS_PAGER=
export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/table-command-$$"
LOGS="$MCP_WORK/logs/table-command"
rm -rf "$LOGS" && mkdir -p "$LOGS"
passed=0
failed=0
check() { # check NAME CMD...
  if "${@:2}" >"$LOGS/$1.log" 2>&1; then echo "  ok   $1"; passed=$((passed + 1));
  else echo "  FAIL $1 (see $LOGS/$1.log)"; tail -n 20 "$LOGS/$1.log"; failed=$((failed + 1)); fi
}
trap 'scripts/dynamodb-local.sh stop >/dev/null 2>&1 || true' EXIT

TOOLS_LOG="$LOGS/pip.log"
source scripts/tools.sh
install_awscli

line=$(scripts/dynamodb-local.sh start) || { echo "table-command: 0 passed, 1 failed"; exit 1; }
ENDPOINT=${line#*=}
TABLE="cli-made-$$"
# The block, as written, the table renamed and every call pointed at DynamoDB Local.
commands=$(awk '/<!-- create-table -->/{f=1; next} f && /^```bash/{b=1; next} b && /^```/{exit} b' docs/handles.md \
  | sed -e "s/mcp-handles/$TABLE/g" -e "s|^aws dynamodb \([a-z-]*\)|\"$AWS\" dynamodb \1 --endpoint-url $ENDPOINT|")
check the-block-is-there test -n "$commands"
check the-commands-run bash -c "$commands"
check the-table-is-the-definition python3 - "$AWS" "$ENDPOINT" "$TABLE" <<'PY'
import json, subprocess, sys
aws, endpoint, table = sys.argv[1:]
def call(*args):
    return json.loads(subprocess.check_output([aws, "dynamodb", *args, "--endpoint-url", endpoint, "--table-name", table]))
made = call("describe-table")["Table"]
ttl = call("describe-time-to-live")["TimeToLiveDescription"]
want = json.load(open("infra/handles-table.json"))
assert made["KeySchema"] == want["KeySchema"], made["KeySchema"]
norm = lambda items: sorted(json.dumps(i, sort_keys=True) for i in items)
assert norm(made["AttributeDefinitions"]) == norm(want["AttributeDefinitions"]), made["AttributeDefinitions"]
indexes = [{k: i[k] for k in ("IndexName", "KeySchema", "Projection")} for i in made.get("GlobalSecondaryIndexes", [])]
assert norm(indexes) == norm(want["GlobalSecondaryIndexes"]), indexes
assert made["BillingModeSummary"]["BillingMode"] == want["BillingMode"], made.get("BillingModeSummary")
assert ttl.get("AttributeName") == want["TimeToLiveSpecification"]["AttributeName"], ttl
assert ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"), ttl
PY
echo "table-command: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
