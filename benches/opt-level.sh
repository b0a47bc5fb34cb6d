#!/usr/bin/env bash
# Which opt-level the deployed binary is built with (issue 13): the basket built with the release
# profile at opt-level 3 (as it stands), "s" and "z", each measured by the runtime-path driver
# (benches/servers/lambda_runtime_bench.rs: auth on, handles in DynamoDB Local, under a loopback
# Runtime API) in the same run, the variants interleaved round by round; reports each variant's
# binary size, raw and zipped as cargo-lambda zips it (`bootstrap`, deflate), and its CPU per
# invocation and billed duration for tools/list, view_basket and add_item, as ratios to
# opt-level 3. The rule it applies: the smallest zipped binary that loses at most 10 % of CPU per
# invocation (mean over the three operations) against opt-level 3.
#
#   benches/opt-level.sh      ~35 min cold (three fat-LTO builds), ~8 min once built; prints the
#                             table and keeps the raw numbers in $MCP_WORK/bench/<time>-opt-level/
#
# Environment: CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target; the "s" and "z" builds go to
# $CARGO_TARGET_DIR-opt-s and -opt-z), MCP_WORK, BENCH_ROUNDS (default 5), BENCH_BATCH (1000).
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
ROUNDS="${BENCH_ROUNDS:-5}"
BATCH="${BENCH_BATCH:-1000}"
OUT="$MCP_WORK/bench/$(date -u +%Y%m%dT%H%M%SZ)-opt-level"
mkdir -p "$OUT"
echo "bench: opt-level, results in $OUT"

declare -A BASKET
for level in 3 s z; do
  dir="$CARGO_TARGET_DIR"; [ "$level" = 3 ] || dir="$CARGO_TARGET_DIR-opt-$level"
  echo "==> cargo build --release --bin basket (opt-level $level) in $dir"
  if ! CARGO_TARGET_DIR="$dir" CARGO_PROFILE_RELEASE_OPT_LEVEL="$level" \
      cargo build --locked --release --bin basket >"$OUT/build-$level.log" 2>&1; then
    tail -20 "$OUT/build-$level.log"; echo "build failed (opt-level $level)"; exit 1
  fi
  BASKET[$level]="$dir/release/basket"
done
echo "==> cargo build --release: the driver and the hello function"
cargo build --locked --release -p mcp-lambda-benches --example bench_lambda_runtime --example bench_lambda_hello \
  >"$OUT/build-driver.log" 2>&1 || { tail -20 "$OUT/build-driver.log"; exit 1; }
BIN="$CARGO_TARGET_DIR/release"

export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/bench-opt-$$"
cleanup() { scripts/dynamodb-local.sh stop >/dev/null 2>&1; }
trap cleanup EXIT
ENDPOINT=$(scripts/dynamodb-local.sh start 2>"$OUT/dynamodb-local.log" | sed -n 's/^MCP_TEST_DYNAMODB_ENDPOINT=//p')
[ -n "$ENDPOINT" ] || { echo "DynamoDB Local did not start (see $OUT/dynamodb-local.log)"; exit 1; }

order=(3 s z)
for round in $(seq 1 "$ROUNDS"); do
  for level in "${order[@]}"; do
    echo "==> round $round, opt-level $level"
    mkdir -p "$OUT/$level-$round"
    "$BIN/examples/bench_lambda_runtime" "${BASKET[$level]}" "$BIN/examples/bench_lambda_hello" \
      "$ENDPOINT" "$OUT/$level-$round/measured.jsonl" "$OUT/$level-$round" 1 1 "$BATCH" 0 0 \
      2>"$OUT/$level-$round/driver.log" || { tail -5 "$OUT/$level-$round/driver.log"; exit 1; }
  done
  order=("${order[@]:1}" "${order[0]}")
done

python3 - "$OUT" "${BASKET[3]}" "${BASKET[s]}" "${BASKET[z]}" <<'PY' | tee "$OUT/report.md"
import io, json, os, statistics, sys, zipfile, glob
out, paths = sys.argv[1], dict(zip("3sz", sys.argv[2:5]))
TICK_US = 1e6 / os.sysconf("SC_CLK_TCK")
OPS = ("tools/list", "view_basket", "add_item")
def zipped(path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(path, "bootstrap")
    return len(buf.getvalue())
rows = {}
for level in "3sz":
    ticks, calls, durations = {op: 0 for op in OPS}, {op: 0 for op in OPS}, {op: [] for op in OPS}
    for f in glob.glob(f"{out}/{level}-*/measured.jsonl"):
        for line in open(f):
            r = json.loads(line)
            if r.get("kind") == "invoke" and r["op"] in OPS:
                ticks[r["op"]] += r["cpu_ticks"]; calls[r["op"]] += r["invocations"]
                durations[r["op"]] += r["duration_ms"]
    cpu = {op: ticks[op] * TICK_US / calls[op] for op in OPS}
    p50 = {op: statistics.median(durations[op]) for op in OPS}
    rows[level] = dict(raw=os.path.getsize(paths[level]), zip=zipped(paths[level]), cpu=cpu, p50=p50,
                       calls=calls["tools/list"])
base = rows["3"]
mean_ratio = {l: statistics.mean(r["cpu"][op] / base["cpu"][op] for op in OPS) for l, r in rows.items()}
print(f"| opt-level | basket (bytes) | zipped | zipped × 3 | " + " | ".join(f"{op} CPU µs (× 3)" for op in OPS) + " | mean CPU × 3 | " + " | ".join(f"{op} p50 ms" for op in OPS) + " |")
print("|---|---:|---:|---:|" + "---:|" * len(OPS) + "---:|" + "---:|" * len(OPS))
for level, r in rows.items():
    cells = " | ".join(f"{r['cpu'][op]:.0f} ({r['cpu'][op] / base['cpu'][op]:.2f}×)" for op in OPS)
    p50s = " | ".join(f"{r['p50'][op]:.3f}" for op in OPS)
    print(f"| {level} | {r['raw']:,} | {r['zip']:,} | {r['zip'] / base['zip']:.2f}× | {cells} | {mean_ratio[level]:.2f}× | {p50s} |")
eligible = [l for l in rows if mean_ratio[l] <= 1.10]
best = min(eligible, key=lambda l: rows[l]["zip"])
print(f"\n{rows['3']['calls']} invocations per operation per variant; CPU from /proc ticks "
      f"({TICK_US:.0f} µs each) over each run. Kept by the rule (smallest zipped within 10 % CPU): opt-level {best}.")
PY
