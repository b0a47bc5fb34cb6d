#!/usr/bin/env bash
# libFuzzer over the whole request path, in-process: the HTTP front, rmcp's
# decoding and dispatch, the basket's tools (fuzz/fuzz_targets/request.rs).
#
#   scripts/fuzz.sh --smoke      bounded run, FUZZ_SECONDS (default 60) s, no sanitizer;
#                                the test command runs this. Last line: fuzz: N passed, M failed
#   scripts/fuzz.sh [SECONDS]    the long run (default 3600 s) with AddressSanitizer
#   scripts/fuzz.sh --seeds      rewrites fuzz/seeds/request/ from the hostile catalogue
#
# Seeds: fuzz/seeds/request/ (the tests/self_contained/hostile/catalogue.rs cases, committed) plus the HTTP
# requests inside events/*.json (converted at each run). New inputs go to
# $MCP_WORK/fuzz/corpus/request (kept between runs), crashes to $MCP_WORK/fuzz/artifacts/.
# Reproduce a crash: scripts/fuzz.sh --repro <artifact file>
#
# Toolchain: the stable one. The target is built exactly as `cargo fuzz build` builds it
# (same RUSTFLAGS, so the two share artifacts), without needing cargo-fuzz installed;
# AddressSanitizer is a nightly-only flag, which RUSTC_BOOTSTRAP=1 lets stable rustc take (long
# run only).
# With cargo-fuzz (cargo install cargo-fuzz --locked): cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run request
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
work="$MCP_WORK/fuzz"
corpus="$work/corpus/request"
events_seeds="$work/seeds-events"
artifacts="$work/artifacts/request"
mkdir -p "$corpus" "$events_seeds" "$artifacts"

mode=long
seconds=3600
case "${1:-}" in
  --smoke) mode=smoke; seconds="${FUZZ_SECONDS:-60}" ;;
  --seeds) mode=seeds ;;
  --repro) mode=repro ;;
  "") ;;
  *) seconds="$1" ;;
esac

if [[ $mode == seeds ]]; then
  rm -rf fuzz/seeds/request && mkdir -p fuzz/seeds/request
  HOSTILE_SEEDS_DIR="$root/fuzz/seeds/request" cargo test --test self_contained hostile::export_fuzz_seeds -- --exact
  echo "$(ls fuzz/seeds/request | wc -l) seeds in fuzz/seeds/request"
  exit 0
fi

# The Lambda events carry real requests: their method, path, headers and body become seeds.
python3 - "$root/events" "$events_seeds" <<'PY'
import base64, json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
n = 0
for path in sorted(src.glob("*.json")) if src.is_dir() else []:
    try:
        event = json.loads(path.read_text())
    except ValueError:
        continue
    if not isinstance(event, dict):
        continue
    ctx = event.get("requestContext") or {}
    method = event.get("httpMethod") or (ctx.get("http") or {}).get("method") or "POST"
    target = event.get("rawPath") or event.get("path") or "/mcp"
    headers = dict(event.get("headers") or {})
    for k, v in (event.get("multiValueHeaders") or {}).items():
        headers.setdefault(k, v[0] if v else "")
    body = event.get("body") or ""
    body = base64.b64decode(body) if event.get("isBase64Encoded") else body.encode()
    head = f":method {method}\n:path {target}\n" + "".join(
        f"{k}: {v}\n" for k, v in headers.items() if k.lower() != "host")
    (dst / f"event-{path.stem}").write_bytes(b"\0" + head.encode() + b"\n" + body)
    (dst / f"event-{path.stem}-helped").write_bytes(b"\x3f" + body)
    n += 1
print(f"{n} event seeds")
PY

# What cargo-fuzz 0.13 passes (cargo fuzz build --debug-assertions [-s none]).
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0 -Cllvm-args=-sanitizer-coverage-stack-depth"
flags+=" -Cdebug-assertions"
target_dir="$CARGO_TARGET_DIR"
# The long run is optimized as cargo-fuzz builds it (release, one codegen unit). The smoke run
# (and --repro) builds unoptimized with line tables only: the smoke is there to show the target
# builds, runs and finds nothing in a minute, and every dependency is built anew under these
# RUSTFLAGS: in a cold test run the step took 367 s built for release, 193 s unoptimized, each
# with its 60 s of fuzzing (the fuzzer then runs some 250 inputs a second instead of 7 000:
# plenty for a smoke).
build=(--profile dev --config 'profile.dev.debug="line-tables-only"') out=debug
if [[ $mode != long ]]; then
  sanitizer=none
else
  build=(--release --config 'profile.release.debug="line-tables-only"') out=release
  flags+=" -Ccodegen-units=1"
  # Its own target dir: other RUSTFLAGS would rebuild the smoke build's artifacts in place.
  sanitizer=address; flags+=" -Zsanitizer=address"; target_dir="$CARGO_TARGET_DIR/fuzz-asan"
  # -Z on stable rustc. Only here: proc-macro2's build script reruns when RUSTC_BOOTSTRAP
  # changes, and the smoke build shares its build scripts and proc macros with every other
  # build in CARGO_TARGET_DIR (set there, the next plain build rebuilt nearly everything).
  export RUSTC_BOOTSTRAP=1
fi
echo "==> building the fuzz target (sanitizer: $sanitizer)"
# The library's own lock file pins every shared dependency; cargo adds libfuzzer-sys to it.
cp Cargo.lock fuzz/Cargo.lock
if ! RUSTFLAGS="$flags" CARGO_TARGET_DIR="$target_dir" nice cargo build --manifest-path fuzz/Cargo.toml \
    --target x86_64-unknown-linux-gnu "${build[@]}" --bin request >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
binary="$target_dir/x86_64-unknown-linux-gnu/$out/request"

if [[ $mode == repro ]]; then
  exec "$binary" -runs=1 "${2:?usage: scripts/fuzz.sh --repro <artifact>}"
fi

echo "==> fuzzing for ${seconds}s"
log="$work/fuzz-$mode.log"
"$binary" "$corpus" fuzz/seeds/request "$events_seeds" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
status=$?
execs=$(grep -Eo '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -1)
cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1)
echo "executions: ${execs:-?}, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) inputs (log: $log)"
if [[ $status -ne 0 ]]; then
  grep -E 'panicked|ERROR|Test unit written|SUMMARY' "$log" | head -n 20
  echo "reproduce: scripts/fuzz.sh --repro <artifact above>"
  echo "fuzz: 0 passed, 1 failed"
  exit 1
fi
echo "fuzz: 1 passed, 0 failed"
