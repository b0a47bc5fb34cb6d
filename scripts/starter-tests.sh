#!/usr/bin/env bash
# starter/, as a user takes it: rendered by `cargo lambda new todo-server --template starter`
# (the folder, and a zip of it) into a temporary folder outside the repository, every file
# checked to arrive and be named for the crate; its templates checked (the same as
# template.yaml but for the binary's name, both lints); mcp-lambda pointed at this checkout (by
# path, and as the git dependency the starter writes, resolved offline); its test run, the
# server run and called by a real client (Python mcp 2.3.0), and built with cargo-lambda as
# scripts/lambda-tests.sh builds the basket.
# Ends with "starter: N passed, M failed". Caches: CARGO_TARGET_DIR, MCP_WORK (the tools' venvs).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
export AWS_REGION=us-east-1 SAM_CLI_TELEMETRY=0
LOGS="$MCP_WORK/logs/starter"
rm -rf "$LOGS" && mkdir -p "$LOGS"
NAME=todo-server
WORK=$(mktemp -d /tmp/mcp-starter.XXXXXX)
CRATE=$WORK/$NAME
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

passed=0
failed=0
check() { # check NAME CMD... : one check, output in $LOGS/NAME.log
  if "${@:2}" >"$LOGS/$1.log" 2>&1; then echo "  ok   $1"; passed=$((passed + 1));
  else echo "  FAIL $1 (see $LOGS/$1.log)"; tail -n 30 "$LOGS/$1.log"; failed=$((failed + 1)); fi
}

TOOLS_LOG="$LOGS/pip.log"
source scripts/tools.sh
export CARGO_TARGET_DIR="$OUTSIDE_TARGET_DIR"   # scripts/tools.sh
install_deploy_tools
install_mcp_client

check template-is-generated python3 scripts/templates.py --check
check cfn-lint "$CFN_LINT" starter/template.yaml starter/template-managed-instances.yaml
sam_metadata_existed=0; [ -e "$HOME/.aws-sam/metadata.json" ] && sam_metadata_existed=1
check sam-validate-lint "$SAM" validate --lint --template starter/template.yaml
check sam-validate-lint-managed-instances "$SAM" validate --lint --template starter/template-managed-instances.yaml
[ "$sam_metadata_existed" = 1 ] || rm -f "$HOME/.aws-sam/metadata.json"
check samconfig-sets-build-and-deploy python3 - <<'PY'
import tomllib
config = tomllib.load(open("starter/samconfig.toml", "rb"))["default"]
assert config["build"]["parameters"]["parameter_overrides"] == config["deploy"]["parameters"]["parameter_overrides"], config
assert config["deploy"]["parameters"]["capabilities"].split() == ["CAPABILITY_IAM"], "the templates make IAM roles and use no macro but SAM's"
PY
check profiles-are-mcp-lambdas python3 - <<'PY'
import tomllib
ours = tomllib.load(open("Cargo.toml", "rb"))["profile"]
theirs = tomllib.load(open("starter/Cargo.toml", "rb"))["profile"]
for name in ("release", "quick", "dev"):
    assert theirs.get(name) == ours.get(name), (name, theirs.get(name), ours.get(name))
assert theirs["quick"]["inherits"] == "release" and theirs["quick"]["lto"] == "thin", theirs["quick"]
PY

# The copy, its registry requirement pointed at this checkout.
# Rendered as a user renders it: every file of starter/ but the template's own configuration
# arrives, named for the crate, with nothing left unrendered.
rendered_like_starter() { # rendered_like_starter DIR
  diff <(cd starter && find . -type f ! -name CargoLambda.toml | sort) <(cd "$1" && find . -type f | sort) \
    && grep -qx "name = \"$NAME\"" "$1/Cargo.toml" \
    && grep -qx "stack_name = \"$NAME\"" "$1/samconfig.toml" \
    && grep -qx "# $NAME" "$1/README.md" \
    && ! grep -rlF -e '{{' -e '{%' "$1"
}
check render-from-the-folder bash -c "cd '$WORK' && cargo lambda new '$NAME' --template '$REPO/starter' 2>&1 </dev/null"
check rendered-from-the-folder-whole rendered_like_starter "$CRATE"
(cd starter && python3 -m zipfile -c "$WORK/starter.zip" $(ls -A))
check render-from-a-zip bash -c "mkdir -p '$WORK/zipped' && cd '$WORK/zipped' && cargo lambda new '$NAME' --template '$WORK/starter.zip' 2>&1 </dev/null"
check rendered-from-a-zip-whole rendered_like_starter "$WORK/zipped/$NAME"

# The dependency line as the starter writes it (a git dependency on the repository) resolves:
# against this checkout's repository (its committed HEAD), offline, to this package with the
# features the starter asks for. Resolved, not built: the build below is of the same tree by
# path (CI's checkout is a fresh clone, so no file is there that git lacks, and
# publish-dry-run builds the crate from its packaged files alone); a check build here would
# be a third build of every dependency, one minute cold.
point_at_checkout "$WORK/zipped/$NAME" git
git_dependency_resolves() (
  cd "$WORK/zipped/$NAME" && grep -q "git = \"file://$REPO\"" Cargo.toml \
    && cargo metadata --format-version 1 >"$WORK/git-metadata.json" \
    && python3 - "$WORK/git-metadata.json" "$REPO" <<'PY'
import json, sys
meta, repo = json.load(open(sys.argv[1])), sys.argv[2]
ours = [p for p in meta["packages"] if p["name"] == "mcp-lambda"]
assert len(ours) == 1 and ours[0]["source"].startswith("git+file://" + repo), ours
node = next(n for n in meta["resolve"]["nodes"] if n["id"] == ours[0]["id"])
assert "dynamodb" in node["features"] and "aws-secrets" in node["features"], node["features"]
print("mcp-lambda", ours[0]["version"], "from", ours[0]["source"], "features", node["features"])
PY
)
check git-dependency-resolves git_dependency_resolves
point_at_checkout "$CRATE"
check copy-depends-on-this-checkout grep -q "path = \"$REPO\"" "$CRATE/Cargo.toml"

check cargo-test bash -c "cd '$CRATE' && cargo test 2>&1"
if grep -E '^warning' "$LOGS/cargo-test.log"; then echo "  FAIL builds-without-warnings"; failed=$((failed + 1)); else echo "  ok   builds-without-warnings"; passed=$((passed + 1)); fi
check cargo-build bash -c "cd '$CRATE' && cargo build 2>&1"

serve_on_free_port "$(out_of_tree_bin "$NAME")" "$LOGS/server.log"
check real-client "$MCP_PYTHON" scripts/starter_client.py "http://127.0.0.1:$PORT/mcp"
kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=

check cargo-lambda-build bash -c "cd '$CRATE' && cargo lambda build --compiler cargo --x86-64 2>&1"
bootstrap="$CARGO_TARGET_DIR/lambda/$NAME/bootstrap"
check bootstrap-is-an-x86_64-elf python3 -c 'import sys; h = open(sys.argv[1], "rb").read(20); sys.exit(not (h[:5] == b"\x7fELF\x02" and h[18] == 62))' "$bootstrap"

echo "starter: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
