#!/usr/bin/env bash
# Which profile to build with (issue 30): the basket (the starter's dependencies and more: auth,
# the DynamoDB store, the AWS SDK) built with `release` (fat LTO, one codegen unit: what is
# deployed) and with `quick` (thin LTO, 16 codegen units: for iterating), each from an empty
# target dir, timed; then rebuilt after a one-line change to the basket's own code, timed; then
# both measured on the Lambda runtime path by the same driver as benches/opt-level.sh (auth on,
# handles in DynamoDB Local, under a loopback Runtime API), interleaved round by round: binary
# size raw and zipped, INIT (exec → first /next), CPU per invocation and p50 for tools/list,
# view_basket and add_item, as ratios to `release`.
#
#   benches/profiles.sh     ~25 min on 2 cores (two cold builds, two rebuilds, ~4 min measuring)
#
# Environment: MCP_WORK, BENCH_ROUNDS (default 3), BENCH_BATCH (1000). The two builds go to
# $MCP_WORK/bench/<run>/target-<profile>, emptied first and removed at the end; the driver comes
# from CARGO_TARGET_DIR (default ~/.cache/mcp-lambda-target).
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
ROUNDS="${BENCH_ROUNDS:-3}"
BATCH="${BENCH_BATCH:-1000}"
OUT="$MCP_WORK/bench/$(date -u +%Y%m%dT%H%M%SZ)-profiles"
mkdir -p "$OUT"
echo "bench: build profiles, results in $OUT"
MAIN=basket/src/main.rs
cp "$MAIN" "$OUT/main.rs.orig"
restore() { cp "$OUT/main.rs.orig" "$MAIN"; scripts/dynamodb-local.sh stop >/dev/null 2>&1; }
trap restore EXIT

declare -A BASKET
for profile in release quick; do
  dir="$OUT/target-$profile"
  rm -rf "$dir"
  echo "==> cargo build --profile $profile --bin basket, from an empty target dir"
  start=$(date +%s.%N)
  CARGO_TARGET_DIR="$dir" cargo build --locked --profile "$profile" --bin basket >"$OUT/build-$profile.log" 2>&1 \
    || { tail -20 "$OUT/build-$profile.log"; echo "build failed ($profile)"; exit 1; }
  cold=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$start" "$(date +%s.%N)")
  # A change to the server's own code: what iterating costs.
  printf '\n// changed %s\n' "$(date +%s%N)" >>"$MAIN"
  start=$(date +%s.%N)
  CARGO_TARGET_DIR="$dir" cargo build --locked --profile "$profile" --bin basket >"$OUT/rebuild-$profile.log" 2>&1 \
    || { tail -20 "$OUT/rebuild-$profile.log"; exit 1; }
  again=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$start" "$(date +%s.%N)")
  cp "$OUT/main.rs.orig" "$MAIN"
  echo "{\"profile\": \"$profile\", \"cold_s\": $cold, \"rebuild_s\": $again}" >>"$OUT/builds.jsonl"
  echo "    cold ${cold} s, rebuild ${again} s"
  BASKET[$profile]="$dir/$profile/basket"
done
echo "==> cargo build --release: the driver and the hello function"
cargo build --locked --release -p mcp-lambda-benches --example bench_lambda_runtime --example bench_lambda_hello \
  >"$OUT/build-driver.log" 2>&1 || { tail -20 "$OUT/build-driver.log"; exit 1; }
BIN="$CARGO_TARGET_DIR/release"

export DYNAMODB_LOCAL_STATE="$MCP_WORK/dynamodb-local/bench-profiles-$$"
ENDPOINT=$(scripts/dynamodb-local.sh start 2>"$OUT/dynamodb-local.log" | sed -n 's/^MCP_TEST_DYNAMODB_ENDPOINT=//p')
[ -n "$ENDPOINT" ] || { echo "DynamoDB Local did not start (see $OUT/dynamodb-local.log)"; exit 1; }

order=(release quick)
for round in $(seq 1 "$ROUNDS"); do
  for profile in "${order[@]}"; do
    echo "==> round $round, $profile"
    mkdir -p "$OUT/$profile-$round"
    "$BIN/examples/bench_lambda_runtime" "${BASKET[$profile]}" "$BIN/examples/bench_lambda_hello" \
      "$ENDPOINT" "$OUT/$profile-$round/measured.jsonl" "$OUT/$profile-$round" 1 1 "$BATCH" 0 0 \
      2>"$OUT/$profile-$round/driver.log" || { tail -5 "$OUT/$profile-$round/driver.log"; exit 1; }
  done
  order=("${order[@]:1}" "${order[0]}")
done

python3 - "$OUT" "${BASKET[release]}" "${BASKET[quick]}" <<'PY' | tee "$OUT/report.md"
import io, json, os, statistics, sys, zipfile, glob
out = sys.argv[1]
paths = {"release": sys.argv[2], "quick": sys.argv[3]}
TICK_US = 1e6 / os.sysconf("SC_CLK_TCK")
OPS = ("tools/list", "view_basket", "add_item")
builds = {b["profile"]: b for b in map(json.loads, open(f"{out}/builds.jsonl"))}
def zipped(path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(path, "bootstrap")
    return len(buf.getvalue())
rows = {}
for profile in paths:
    ticks, calls, durations, inits = ({op: 0 for op in OPS}, {op: 0 for op in OPS},
                                      {op: [] for op in OPS}, [])
    for f in glob.glob(f"{out}/{profile}-*/measured.jsonl"):
        for line in open(f):
            r = json.loads(line)
            if r.get("kind") == "invoke" and r["op"] in OPS:
                ticks[r["op"]] += r["cpu_ticks"]; calls[r["op"]] += r["invocations"]
                durations[r["op"]] += r["duration_ms"]
            elif r.get("kind") == "init" and r.get("function") != "hello":
                inits.append(r["init_ms"])
    rows[profile] = dict(raw=os.path.getsize(paths[profile]), zip=zipped(paths[profile]),
                         cpu={op: ticks[op] * TICK_US / calls[op] for op in OPS},
                         p50={op: statistics.median(durations[op]) for op in OPS},
                         init=statistics.median(inits) if inits else float("nan"),
                         calls=calls["tools/list"], **builds[profile])
base = rows["release"]
print("| profile | cold build | rebuild after a change | basket (bytes) | zipped | INIT ms (median) | "
      + " | ".join(f"{op} CPU µs" for op in OPS) + " | " + " | ".join(f"{op} p50 ms" for op in OPS) + " |")
print("|---|---:|---:|---:|---:|---:|" + "---:|" * (2 * len(OPS)))
for profile, r in rows.items():
    cpu = " | ".join(f"{r['cpu'][op]:.0f} ({r['cpu'][op] / base['cpu'][op]:.2f}×)" for op in OPS)
    p50 = " | ".join(f"{r['p50'][op]:.3f}" for op in OPS)
    print(f"| `{profile}` | {r['cold_s'] // 60:.0f} min {r['cold_s'] % 60:.0f} s ({r['cold_s'] / base['cold_s']:.2f}×) "
          f"| {r['rebuild_s']:.0f} s ({r['rebuild_s'] / base['rebuild_s']:.2f}×) | {r['raw']:,} "
          f"| {r['zip']:,} ({r['zip'] / base['zip']:.2f}×) | {r['init']:.1f} | {cpu} | {p50} |")
print(f"\n{base['calls']} invocations per operation per profile; CPU from /proc ticks ({TICK_US:.0f} µs each); "
      f"{os.cpu_count()} cores.")
PY
rm -rf "$OUT/target-release" "$OUT/target-quick"
