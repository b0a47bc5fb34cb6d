#!/usr/bin/env bash
# The basket as an OAuth 2.1 resource server, against a real authorization server and two
# real MCP clients' own OAuth:
#
#   - the AS: oidc-provider 9 (a certified OpenID Provider; tests/oauth/provider.mjs) with
#     dynamic registration, PKCE S256, resource indicators (at+jwt access tokens with
#     aud = the basket's URL, or opaque ones for the introspection tests), introspection,
#     revocation, client_credentials, refresh tokens and dev login/consent forms;
#   - the Python mcp 2.3.0 client's OAuthClientProvider (tests/oauth/test_oauth_python.py):
#     401 -> RFC 9728 metadata -> AS metadata -> registration -> PKCE authorization with
#     `resource` -> token -> the call; a second connection on the stored token; a refresh
#     after expiry; a step-up after 403 insufficient_scope;
#   - the TypeScript SDK v2 client 2.4.0's auth (tests/oauth/ts_oauth_client.mjs, run by
#     test_oauth_ts.py): the same flow, the second connection, the step-up, no warnings;
#   - the built-in authorization server (test_builtin_as.py): the basket as its own AS in front
#     of a second oidc-provider with registration off (one static client, `mcp-facade`), the
#     Python client by DCR through the consent page and the upstream login to a tool call, the
#     same handles from two clients, no upstream call on warm requests, refresh rotation and
#     reuse, revocation, and the attacks, each refused without a redirect; Client ID Metadata
#     Documents served over https on loopback (test_builtin_cimd.py); and the TypeScript client
#     (tests/oauth/ts_builtin_client.mjs, run by test_builtin_ts.py) by DCR and by CIMD, from
#     the first 401 through the consent page and the upstream login to a tool call, a refresh,
#     no warnings;
#   - the built-in authorization server in front of an emulated Amazon Cognito user pool
#     (MiniStack 1.5.33, test_builtin_cognito.py): the Python client by DCR through the consent
#     page and Cognito's managed sign-in to a tool call as the Cognito user, the pool found by its
#     real issuer name `https://cognito-idp.<region>.amazonaws.com/<pool>`, which resolves to the
#     emulator only inside a network namespace of the test's own (`unshare`: unprivileged user
#     namespaces, and iproute2's `ip`);
#   - the built-in authorization server's consent page in headless Chromium with JavaScript off
#     (test_consent_browser.py, Selenium and Debian's chromedriver): what it names, its buttons
#     by keyboard and mouse, approval through the upstream's login to the client's redirect URI,
#     denial, framing refused, and axe-core's accessibility check;
#   - RFC 7662 introspection of opaque tokens through a counting proxy in front of the AS
#     (test_oauth_introspection.py): one request per token per window, refusals, revocation
#     after the window, 503 + Retry-After when the AS cannot be asked, JWTs still local,
#     client_credentials tokens owned by their client.
#
# Usage: scripts/oauth-tests.sh                 (needs node >= 20 and npm to install, cargo)
#        BASKET_BIN=path/to/basket scripts/oauth-tests.sh   (skip the build)
#        scripts/oauth-tests.sh -k introspection            (extra arguments go to pytest)
#
# Installs from tests/oauth/package.json and package-lock.json (exact versions, a Node 22 among
# them: oidc-provider 9 supports Node 22 LTS and later) into $MCP_WORK/oauth-node, again only
# when those change, the Python client and Selenium into the venv of scripts/tools.sh, and
# Debian's chromium and chromium-driver with apt-get when /usr/bin has none, MiniStack into a venv
# of its own; network: only the npm registry, PyPI and Debian's packages, only then. The AS,
# each basket (a clean environment, a free port, audience = its own URL), the proxy and MiniStack
# (in its namespace) listen on 127.0.0.1 only and are stopped on exit.
# Each test is one check; the last line is `oauth: N passed, M failed` (a skipped test counts
# as failed), and the exit status is non-zero if any failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
dir="$MCP_WORK/oauth-node"
scratch="$dir/run"

passed=0
failed=0
finish() {
  echo "oauth: $passed passed, $failed failed"
  exit $((failed > 0))
}
abort() { echo "FAIL $1: $2"; failed=$((failed + 1)); finish; }

as_pid=""
stop_as() {
  if [[ -n "$as_pid" ]]; then
    kill "$as_pid" 2>/dev/null || true
    wait "$as_pid" 2>/dev/null || true
    as_pid=""
  fi
}
trap stop_as EXIT
trap 'exit 130' INT TERM

command -v npm >/dev/null || abort setup "npm is not on PATH"

# (1) The AS, the TS client and their Node, exactly as locked (scripts/tools.sh), and (2) the
# Python client and pytest (scripts/tools.sh's venv, shared with the other suites).
# shellcheck source=tools.sh
source "$root/scripts/tools.sh"
install_oauth_node || abort setup "oidc-provider and the TS client did not install"
node=$OAUTH_NODE
TOOLS_LOG="$MCP_WORK/oauth-pip.log" install_mcp_client
"$MCP_PYTHON" -c 'import mcp, pytest' 2>/dev/null \
  || { cat "$MCP_WORK/oauth-pip.log" 2>/dev/null; abort setup "the Python client did not install"; }

# (2a) MiniStack, the Cognito emulator of test_builtin_cognito.py (scripts/tools.sh's venv). If it
# cannot be installed, that module's tests fail, never skip.
TOOLS_LOG="$MCP_WORK/oauth-ministack.log" install_ministack \
  || { tail -n 20 "$MCP_WORK/oauth-ministack.log" 2>/dev/null; echo "oauth: MiniStack did not install: the Cognito tests will fail"; }

# (2b) The browser of test_consent_browser.py. If it cannot be installed the other suites still
# run; that module's tests fail (each names what is missing), never skip.
[[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] \
  || echo "oauth: installing Debian's chromium and chromium-driver (apt-get)"
if ! TOOLS_LOG="$MCP_WORK/oauth-browser.log" install_browser; then
  tail -n 20 "$MCP_WORK/oauth-browser.log" 2>/dev/null
  echo "oauth: chromium, chromium-driver or selenium did not install: the consent page's browser tests will fail"
fi

# (3) The basket server, built in debug unless BASKET_BIN names one.
bin=${BASKET_BIN:-}
if [[ -z "$bin" ]]; then
  echo "oauth: building the basket (debug)"
  # --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
  # dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
  (cd "$root" && cargo build --locked --workspace --bin basket --example hello --example upstream_profile) >"$dir/build.log" 2>&1 \
    || { tail -n 30 "$dir/build.log"; abort setup "cargo build --bin basket failed"; }
  bin="$CARGO_TARGET_DIR/debug/basket"
fi
[[ -x "$bin" ]] || abort setup "no basket binary at $bin"
# The example whose tool calls the identity provider as the person (test_builtin_upstream.py).
profile_bin=${PROFILE_BIN:-$(dirname "$bin")/examples/upstream_profile}
[[ -x "$profile_bin" ]] || abort setup "no upstream_profile example at $profile_bin"

# (4) The AS on a free loopback port. A clean environment but PATH: nothing of the caller's
# (NODE_OPTIONS, proxies) reaches it.
rm -rf "$scratch" && mkdir -p "$scratch/logs"
port=$("$node" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
issuer="http://127.0.0.1:$port"
(cd "$dir" && exec env -i PATH="$PATH" HOME="$scratch" "$node" provider.mjs "$port") \
  >"$scratch/logs/as.out" 2>"$scratch/logs/as.err" &
as_pid=$!
started=""
for _ in $(seq 1 100); do
  if grep -q "^listening $issuer" "$scratch/logs/as.out" 2>/dev/null \
    && curl -sf "$issuer/.well-known/oauth-authorization-server" >/dev/null; then
    started=1
    break
  fi
  kill -0 "$as_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$started" ]] || { cat "$scratch/logs/as.err"; abort setup "the AS did not start"; }
echo "oauth: AS at $issuer"

# (5) The tests. Counted from pytest's JUnit report: every test is in it, skipped ones too.
# -p no:cacheprovider: nothing written into the checkout.
(cd "$root/tests/oauth" && env OAUTH_ISSUER="$issuer" OAUTH_NODE="$node" OAUTH_NODE_DIR="$dir" \
  OAUTH_LOGS="$scratch/logs" BASKET_BIN="$bin" PROFILE_BIN="$profile_bin" \
  MINISTACK="$MINISTACK" MINISTACK_PYTHON="$MINISTACK_PYTHON" \
  "$MCP_PYTHON" -m pytest -q -p no:cacheprovider -rfEs --junitxml="$scratch/junit.xml" . "$@")
rc=$?
counts=$("$MCP_PYTHON" - "$scratch/junit.xml" <<'EOF'
import sys
import xml.etree.ElementTree as ET
try:
    cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
except (OSError, ET.ParseError):
    cases = []
bad = sum(1 for c in cases if any(x.tag in ("failure", "error", "skipped") for x in c))
print(len(cases) - bad, bad)
EOF
)
read -r p f <<<"$counts"
passed=$((passed + p))
failed=$((failed + f))
# pytest failing outside any test (a collection error, a crash) or collecting nothing is a failure.
if [[ $rc -ne 0 && $f -eq 0 ]] || [[ $((p + f)) -eq 0 ]]; then
  echo "FAIL pytest: exit $rc with no failed test (logs in $scratch/logs)"
  failed=$((failed + 1))
fi
if [[ $f -gt 0 ]]; then echo "oauth: server and AS logs in $scratch/logs"; fi
finish
