#!/usr/bin/env bash
# The nginx recipe of docs/vps.md, run for real: two basket processes on loopback sharing a DynamoDB
# Local table, behind nginx configured with docs/vps.md's fenced nginx block, through a rolling
# restart, with a subscriptions/listen stream open through nginx. Ends with
# "nginx: N passed, M failed" (a skipped check is counted as neither).
#
#   scripts/nginx-tests.sh
#
# The recipe is the fenced block after the line `<!-- nginx-recipe ... -->` in docs/vps.md, used
# as written except for three addresses, each of which must appear exactly as below:
#   `listen 80;`       -> `listen 127.0.0.1:<free port>;`
#   `127.0.0.1:3001`   -> process A's address,  `127.0.0.1:3002` -> process B's address.
# It is included in a small main configuration of its own (prefix, pid, logs and temp paths in
# a temporary folder; an access log with $upstream_addr), and nginx runs in the foreground.
#
# BASKET_BIN=path runs that binary instead of building the basket.
# Needs: nginx (installed with apt-get if missing), python3, Java for DynamoDB Local (see
# scripts/dynamodb-local.sh). Caches: CARGO_TARGET_DIR, MCP_WORK as in scripts/test.sh.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
mkdir -p "$MCP_WORK"
export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/nginx-$$"

HOST=mcp.example.com            # the recipe's server_name; the servers allow only it
KEY="aw9C5Pf6gzD8Za8qaDXAJvlBHm0BKpbS1aXWFQoBUpE="
TABLE=mcp-handles-nginx-test
DIR=$(mktemp -d /tmp/nginx-tests.XXXXXX)
chmod 755 "$DIR"
CLIENT=(python3 scripts/nginx_client.py)

passed=0
failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
say() { echo "nginx-tests: $*"; }

declare -A PID PORT
NGINX_PID=""
cleanup() {
  for name in A B; do
    if [ -n "${PID[$name]:-}" ] && kill -0 "${PID[$name]}" 2>/dev/null; then kill "${PID[$name]}"; fi
  done
  if [ -n "$NGINX_PID" ] && kill -0 "$NGINX_PID" 2>/dev/null; then kill "$NGINX_PID"; fi
  if [ -n "${LISTEN_PID:-}" ] && kill -0 "$LISTEN_PID" 2>/dev/null; then kill "$LISTEN_PID"; fi
  wait 2>/dev/null
  scripts/dynamodb-local.sh stop >/dev/null 2>&1 || true
  if [ "$failed" -eq 0 ]; then rm -rf "$DIR"; else say "logs kept in $DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

finish() {
  echo "nginx: $passed passed, $failed failed"
  [ "$failed" -eq 0 ]
  exit
}

# --- what the test needs -------------------------------------------------------------------
if ! command -v nginx >/dev/null 2>&1; then
  say "nginx not found: installing it with apt-get"
  (export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq nginx || { apt-get update -qq && apt-get install -y -qq nginx; }) >"$DIR/apt.log" 2>&1 \
    || { tail -n 20 "$DIR/apt.log"; fail "installing nginx"; finish; }
fi
say "$(nginx -v 2>&1)"
# BASKET_BIN runs another build (e.g. an older one, to see what this test catches).
BASKET="${BASKET_BIN:-$CARGO_TARGET_DIR/debug/basket}"
if [ -z "${BASKET_BIN:-}" ]; then
  # --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
  # dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
  cargo build --locked --workspace --bin basket --example hello >"$DIR/build.log" 2>&1 || { tail -n 30 "$DIR/build.log"; fail "building the basket"; finish; }
fi

line=$(scripts/dynamodb-local.sh start) || { fail "starting DynamoDB Local"; finish; }
ENDPOINT=${line#*=}
say "DynamoDB Local at $ENDPOINT"
# The table from infra/handles-table.json. DynamoDB Local checks that a request is signed, not
# the signature, so a well-formed header with any signature will do.
python3 - "$ENDPOINT" "$TABLE" <<'EOF' || { fail "creating the table"; finish; }
import json, sys, urllib.request
endpoint, table = sys.argv[1], sys.argv[2]
definition = json.load(open("infra/handles-table.json"))
body = {"TableName": table, "BillingMode": definition["BillingMode"],
        "AttributeDefinitions": definition["AttributeDefinitions"], "KeySchema": definition["KeySchema"],
        "GlobalSecondaryIndexes": definition["GlobalSecondaryIndexes"]}
urllib.request.urlopen(urllib.request.Request(endpoint + "/", json.dumps(body).encode(), {
    "Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "DynamoDB_20120810.CreateTable",
    "Authorization": "AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, "
                     "SignedHeaders=host, Signature=0"}), timeout=10).read()
EOF

# --- the two processes ---------------------------------------------------------------------
start_basket() { # NAME: start it on its port and wait until /healthz answers
  local name=$1
  env -i PATH="$PATH" HOME="$HOME" MCP_BIND="127.0.0.1:${PORT[$name]}" MCP_ALLOWED_HOSTS="$HOST" MCP_REQUEST_STATE_KEY="$KEY" \
    MCP_HANDLES_TABLE="$TABLE" AWS_ENDPOINT_URL_DYNAMODB="$ENDPOINT" AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local MCP_LOG=info MCP_DRAIN_SECS=10 MCP_LISTEN_POLL_MS=500 \
    "$BASKET" >>"$DIR/basket-$name.log" 2>&1 </dev/null &
  PID[$name]=$!
  for _ in $(seq 200); do
    if curl -fsS -o /dev/null -m 1 "http://127.0.0.1:${PORT[$name]}/healthz" 2>/dev/null; then return 0; fi
    kill -0 "${PID[$name]}" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$DIR/basket-$name.log"
  return 1
}

# docs/vps.md's protocol probe, sent straight to one process.
probe() { # NAME
  local answer
  answer=$(curl -fsS -m 5 "http://127.0.0.1:${PORT[$1]}/mcp" -H "Host: $HOST" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: server/discover' \
    -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{
         "io.modelcontextprotocol/protocolVersion":"2026-07-28",
         "io.modelcontextprotocol/clientCapabilities":{}}}}') || return 1
  [[ "$answer" == *'"supportedVersions"'* && "$answer" == *'/serverInfo"'* ]]
}

for name in A B; do
  PORT[$name]=$(free_port)
  start_basket "$name" || { fail "starting basket $name"; finish; }
done
say "basket A on ${PORT[A]} (pid ${PID[A]}), B on ${PORT[B]} (pid ${PID[B]})"

# --- nginx with the README's recipe ----------------------------------------------------------
NGINX_PORT=$(free_port)
awk '/^<!-- nginx-recipe/ {armed = 1; next}
     armed && /^```nginx/ {inside = 1; next}
     inside && /^```/ {exit}
     inside {print}' docs/vps.md >"$DIR/recipe.conf"
for pattern in 'listen 80;' '127.0.0.1:3001' '127.0.0.1:3002'; do
  if [ "$(grep -cF "$pattern" "$DIR/recipe.conf")" != 1 ]; then
    fail "the nginx recipe in docs/vps.md must contain '$pattern' exactly once (see the top of this script)"
    finish
  fi
done
sed -e "s/listen 80;/listen 127.0.0.1:$NGINX_PORT;/" -e "s/127\.0\.0\.1:3001/127.0.0.1:${PORT[A]}/" \
  -e "s/127\.0\.0\.1:3002/127.0.0.1:${PORT[B]}/" "$DIR/recipe.conf" >"$DIR/mcp.conf"
user=""
if [ "$(id -u)" = 0 ]; then user="user root;"; fi
cat >"$DIR/nginx.conf" <<EOF
$user
worker_processes 1;
pid $DIR/nginx.pid;
error_log $DIR/error.log info;
events { worker_connections 512; }
http {
    log_format upstreams '\$request_uri \$status \$upstream_addr \$upstream_status';
    access_log $DIR/access.log upstreams;
    client_body_temp_path $DIR/client_body;
    proxy_temp_path $DIR/proxy;
    fastcgi_temp_path $DIR/fastcgi;
    uwsgi_temp_path $DIR/uwsgi;
    scgi_temp_path $DIR/scgi;
    include $DIR/mcp.conf;
}
EOF
if ! nginx -t -p "$DIR" -c "$DIR/nginx.conf" >"$DIR/nginx-t.log" 2>&1; then
  cat "$DIR/nginx-t.log"; fail "nginx -t accepts the recipe of docs/vps.md"; finish
fi
pass "nginx -t accepts the recipe of docs/vps.md"
nginx -p "$DIR" -c "$DIR/nginx.conf" -g 'daemon off;' >"$DIR/nginx.out" 2>&1 &
NGINX_PID=$!
URL="http://127.0.0.1:$NGINX_PORT/mcp"
for _ in $(seq 50); do
  curl -fsS -o /dev/null -m 1 "http://127.0.0.1:$NGINX_PORT/healthz" 2>/dev/null && break
  sleep 0.1
done
say "nginx pid $NGINX_PID on $NGINX_PORT"

# --- (a) both processes serve, in turn; a basket is shared ----------------------------------
if curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$NGINX_PORT/healthz"; then pass "/healthz through nginx"; else fail "/healthz through nginx"; fi
if probe A && probe B; then pass "docs/vps.md's protocol probe answers on both processes"; else fail "the protocol probe"; fi
# The Host check is on, so calls through nginx succeeding below means nginx forwards the Host.
code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:${PORT[A]}/mcp" -H 'Host: elsewhere.example' \
  -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/list' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{
       "io.modelcontextprotocol/protocolVersion":"2026-07-28",
       "io.modelcontextprotocol/clientCapabilities":{}}}}')
if [ "$code" = 403 ]; then pass "a foreign Host is refused (403), so the Host nginx forwards is checked"; else fail "a foreign Host got $code, not 403"; fi

before=$(wc -l <"$DIR/access.log")
if "${CLIENT[@]}" lists "$URL" "$HOST" 10; then
  pass "10 tools/list calls through nginx"
  upstreams=$(tail -n +"$((before + 1))" "$DIR/access.log" | grep '^/mcp 200' | awk '{print $3}')
  a=$(echo "$upstreams" | grep -c ":${PORT[A]}$"); b=$(echo "$upstreams" | grep -c ":${PORT[B]}$")
  repeats=$(echo "$upstreams" | uniq -d | wc -l)
  if [ "$a" = 5 ] && [ "$b" = 5 ] && [ "$repeats" = 0 ]; then
    pass "the calls alternate between the two processes (5 and 5, by \$upstream_addr)"
  else
    fail "the calls did not alternate: $(echo $upstreams)"
  fi
else
  fail "10 tools/list calls through nginx"
fi

shared() {
  local basket view
  basket=$("${CLIENT[@]}" call "http://127.0.0.1:${PORT[A]}/mcp" "$HOST" create_basket '{}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["basket_id"])') || return 1
  "${CLIENT[@]}" call "http://127.0.0.1:${PORT[B]}/mcp" "$HOST" add_item "{\"basket_id\":\"$basket\",\"sku\":\"tea\",\"quantity\":2}" >/dev/null || return 1
  for _ in 1 2; do # through nginx: one view on each process
    view=$("${CLIENT[@]}" call "$URL" "$HOST" view_basket "{\"basket_id\":\"$basket\"}") || return 1
    [[ "$view" == *'"tea"'* ]] || return 1
  done
}
if shared; then pass "a basket created on A is changed on B and read on both through nginx"; else fail "a basket shared by the two processes"; fi

# --- subscriptions/listen through nginx -----------------------------------------------------
# A listen stream through nginx hears of a change sent straight to either process (so at least
# one of the two is "through the other process") within 2 s (MCP_LISTEN_POLL_MS=500: a change
# arrives within two polls). The stream stays open through the rolling restart below, and must
# end there with its result when its process drains (check_listen_ends_with_its_result).
LISTEN_PID=""
LISTEN_OUT="$DIR/listen.out"
check_listen_through_nginx() {
  local answer basket uri name before deadline
  answer=$("${CLIENT[@]}" listen-probe "$URL" "$HOST" 2>&1)
  if [ "$answer" = unsupported ]; then
    say "SKIPPED (not counted): check_listen_through_nginx: the basket answers subscriptions/listen with -32601"
    return
  fi
  if [ "$answer" != supported ]; then fail "listen: subscriptions/listen through nginx: $answer"; return; fi
  basket=$("${CLIENT[@]}" call "http://127.0.0.1:${PORT[A]}/mcp" "$HOST" create_basket '{}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["basket_id"])') || { fail "listen: creating a basket"; return; }
  uri="basket://$basket"
  "${CLIENT[@]}" listen "$URL" "$HOST" "$uri" "$LISTEN_OUT" &
  LISTEN_PID=$!
  deadline=$((SECONDS + 10))
  until grep -q 'notifications/subscriptions/acknowledged' "$LISTEN_OUT" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ] || grep -qE '^(END|ERROR)' "$LISTEN_OUT" 2>/dev/null; then
      cat "$LISTEN_OUT" 2>/dev/null; fail "listen: a stream through nginx is acknowledged"; return
    fi
    sleep 0.05
  done
  grep 'acknowledged' "$LISTEN_OUT" | grep -qF "\"$uri\"" || { cat "$LISTEN_OUT"; fail "listen: the acknowledgment keeps the basket"; return; }
  for name in A B; do
    before=$(grep -c "notifications/resources/updated.*$uri" "$LISTEN_OUT")
    "${CLIENT[@]}" call "http://127.0.0.1:${PORT[$name]}/mcp" "$HOST" add_item \
      "{\"basket_id\":\"$basket\",\"sku\":\"tea\",\"quantity\":1}" >/dev/null || { fail "listen: add_item on $name"; return; }
    deadline=$(python3 -c 'import time; print(time.time() + 2)')
    while [ "$(grep -c "notifications/resources/updated.*$uri" "$LISTEN_OUT")" -le "$before" ]; do
      if python3 -c "import sys, time; sys.exit(time.time() < $deadline)"; then
        cat "$LISTEN_OUT"; fail "listen: no notifications/resources/updated within 2 s of an add_item on $name"; return
      fi
      sleep 0.05
    done
  done
  pass "listen through nginx: notifications/resources/updated within 2 s of add_item on either process"
}

# After the rolling restart: the stream ended with its result, not a cut connection.
check_listen_ends_with_its_result() {
  [ -n "$LISTEN_PID" ] || return
  local deadline=$((SECONDS + 15))
  while kill -0 "$LISTEN_PID" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
  if kill -0 "$LISTEN_PID" 2>/dev/null; then
    kill "$LISTEN_PID"; fail "listen: the stream was still open after both processes restarted"; return
  fi
  local last
  last=$(grep -vE '^(END|ERROR)' "$LISTEN_OUT" | tail -n 1)
  if tail -n 1 "$LISTEN_OUT" | grep -qx END && [[ "$last" == *'"id": "nginx-listen"'* && "$last" == *'"resultType": "complete"'* ]]; then
    pass "listen: the stream ended with its result {\"resultType\":\"complete\"} when its process drained"
  else
    tail -n 3 "$LISTEN_OUT"; fail "listen: the stream did not end with its result"
  fi
}
check_listen_through_nginx

# --- (b) a rolling restart under load --------------------------------------------------------
restart() { # NAME
  local name=$1 rc
  kill -TERM "${PID[$name]}"
  wait "${PID[$name]}"; rc=$?
  if [ "$rc" = 0 ]; then pass "basket $name exits 0 after SIGTERM"; else fail "basket $name exited $rc after SIGTERM"; fi
  grep -q "drained" "$DIR/basket-$name.log" || say "note: basket $name did not log 'drained'"
  if start_basket "$name" && probe "$name"; then pass "basket $name is back (healthz, protocol probe)"; else fail "restarting basket $name"; fi
  # nginx's passive check may have marked the process down when its connect was refused:
  # wait out fail_timeout (5 s in the recipe) so it is in the rotation again.
  sleep 6
}
"${CLIENT[@]}" adds "$URL" "$HOST" "$DIR/stop" "$DIR/adds.json" 200 >"$DIR/adds.log" 2>&1 &
adds_pid=$!
sleep 1
restart A
restart B
touch "$DIR/stop"
wait "$adds_pid"
check_listen_ends_with_its_result
cat "$DIR/adds.log"
if out=$("${CLIENT[@]}" tally "$DIR/adds.json" "$URL" "$HOST" 2>&1); then
  pass "rolling restart: $out, no call failed"
else
  echo "$out"
  fail "rolling restart: calls failed or counts differ"
fi
served=$(grep -c '^/mcp 200' "$DIR/access.log")
retried=$(grep -cE '^/mcp 200 [^ ]+, ' "$DIR/access.log")
say "nginx answered $served MCP calls with 200; $retried went to the second process after a refused connect"

finish
