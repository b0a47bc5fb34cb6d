#!/usr/bin/env bash
# The official MCP conformance suite's `authorization` command (0.2.0-alpha.12, pinned in
# .conformance/) against the built-in authorization server: the basket with
# MCP_OAUTH_UPSTREAM_ISSUER in front of oidc-provider (registration off, as
# scripts/oauth-tests.sh's test_builtin_as.py runs it), issuer http://127.0.0.1:<port>, one
# configured public client `conformance` (MCP_OAUTH_CLIENTS, loopback redirect on any port).
# The suite's two scenarios:
#
#   authorization-server-metadata-endpoint   RFC 8414 metadata at the issuer's well-known URL:
#       200, application/json, `issuer` equal to the URL asked for, `authorization_endpoint`,
#       `token_endpoint`, `response_types_supported` with `code`,
#       `code_challenge_methods_supported` with `S256`; a WARNING (printed, not counted, as the
#       suite counts it) without `client_id_metadata_document_supported: true`: CIMD is not
#       there yet (docs/auth.md)
#   authorization-code-grant   PKCE S256 with `state` and `resource` (no `scope`), redirected
#       back to http://127.0.0.1:<port>/callback with exactly one `code`, the same `state`, `iss`
#       equal to the issuer, no `error`; the code exchanged as a public client (`none`): 200,
#       application/json, `Cache-Control: no-store`, `access_token` and `token_type`
#
# The suite prints the authorization URL and waits at its callback; the driver
# (tests/oauth/conformance_authorization.py) follows the URL through the consent page and the
# upstream's login forms and loads the final redirect, so the suite receives it as sent.
#
# Usage: scripts/conformance-auth.sh                 (needs npm to install, cargo)
#        BASKET_BIN=path/to/basket scripts/conformance-auth.sh   (skip the build)
#
# Installs (scripts/tools.sh) the suite from .conformance/'s lock, oidc-provider from
# tests/oauth's, and the Python client's venv, each again only when its pins change; network:
# only the npm registry and PyPI, only then. Everything listens on 127.0.0.1 and is stopped on
# exit; results and logs in .conformance/results-authorization. A run takes a few seconds.
# The last line is `conformance-auth: N passed, M failed` (scenarios; one that cannot run
# counts as failed), and the exit status is non-zero if any failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
results="$root/.conformance/results-authorization"
# The pinned suite's authorization scenarios: each is counted even if nothing runs (the driver
# adds any other the suite lists).
scenarios=(authorization-server-metadata-endpoint authorization-code-grant)

abort() {
  echo "conformance-auth: $1"
  echo "conformance-auth: 0 passed, ${#scenarios[@]} failed"
  exit 1
}

command -v npm >/dev/null || abort "npm is not on PATH"
rm -rf "$results" && mkdir -p "$results"

# (1) The suite, oidc-provider and their Nodes, and the Python client (httpx2, for the driver).
# shellcheck source=tools.sh
source "$root/scripts/tools.sh"
install_conformance_suite || abort "the conformance suite did not install"
install_oauth_node || abort "oidc-provider did not install"
TOOLS_LOG="$results/pip.log" install_mcp_client
"$MCP_PYTHON" -c 'import httpx2' 2>/dev/null \
  || { cat "$results/pip.log" 2>/dev/null; abort "the Python client did not install"; }

# (2) The basket, built in debug unless BASKET_BIN names one.
bin=${BASKET_BIN:-}
if [[ -z "$bin" ]]; then
  echo "conformance-auth: building the basket (debug)"
  # --workspace and an example: the features `cargo test --workspace --all-targets` resolves (the
  # dev-dependencies' unified in), so this reuses its build instead of rebuilding tokio and all above it.
  (cd "$root" && cargo build --locked --workspace --bin basket --example hello) >"$results/build.log" 2>&1 \
    || { tail -n 30 "$results/build.log"; abort "cargo build --bin basket failed"; }
  bin="$CARGO_TARGET_DIR/debug/basket"
fi
[[ -x "$bin" ]] || abort "no basket binary at $bin"

# (3) The run: the driver starts the upstream, the basket and the suite, plays the browser, and
# scores every scenario.
(cd "$root/tests/oauth" && env CONFORMANCE_NODE="$CONFORMANCE_NODE" CONFORMANCE_SUITE="$CONFORMANCE_SUITE" \
  OAUTH_NODE="$OAUTH_NODE" OAUTH_NODE_DIR="$OAUTH_NODE_DIR" BASKET_BIN="$bin" OAUTH_LOGS="$results" \
  "$MCP_PYTHON" conformance_authorization.py "${scenarios[@]}") | tee "$results/driver.log"
rc=${PIPESTATUS[0]}
grep -qE '^conformance-auth: [0-9]+ passed, [0-9]+ failed' "$results/driver.log" \
  || abort "the driver ended (exit $rc) without a count"
exit "$rc"
