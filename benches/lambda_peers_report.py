#!/usr/bin/env python3
"""The peers section of BENCHMARKS.md, from one run of benches/lambda-peers.sh.

    python3 benches/lambda_peers_report.py RESULTS.jsonl                  print the section
    python3 benches/lambda_peers_report.py RESULTS.jsonl --write FILE     replace it in FILE,
                                                                          between the
                                                                          lambda-peers markers

Every number comes from RESULTS.jsonl, the prices from benches/lambda-prices.json; every ratio
is to mcp-lambda in the same run. The cost columns use the formula of the lambda-runtime
section (benches/lambda_report.py): full core and CPU share, 128 MB arm64.
"""

import math
import statistics
import sys

import sections
from sections import fmt, pct, ratio

SECTION = "lambda-peers"
OPS = ["tools/list", "tools/call"]
BASE = "mcp-lambda"
MB = 128
LABELS = {
    "mcp-lambda": "mcp-lambda",
    "pmcp": "pmcp (cargo-pmcp's Lambda wrapper)",
    "turul": "turul-mcp-aws-lambda",
}


def mib(kib):
    return kib / 1024


def report(results_path):
    rows = sections.records(results_path)
    machine = next(r for r in rows if r["kind"] == "machine")
    end = next((r for r in rows if r["kind"] == "end"), {})
    clk = machine["clk_tck"]
    servers = machine["servers"]
    prices = sections.prices()
    lam = prices["lambda"]
    gbs, req, vcpu_mb = lam["arm64_usd_per_gb_second"], lam["usd_per_million_requests"], lam["vcpu_at_mb"]

    out = []
    w = out.append
    w(sections.run_header(results_path, machine, end, "invocations per server and request kind after "
                          "20 of warm-up, the servers and kinds in a rotated order each round"))
    w("")
    w("Versions (from `Cargo.lock` and `benches/peers/Cargo.lock`):")
    w("")
    for name in servers:
        parts = ", ".join(
            f"{k} {' and '.join(v)}" for k, v in machine["versions"][name].items() if v
        )
        w(f"- **{LABELS[name]}**: {parts}")
    w("")

    # --- INIT, memory, size ---
    inits = {s: [r for r in rows if r["kind"] == "init" and r["server"] == s] for s in servers}
    memory = {r["server"]: r for r in rows if r["kind"] == "memory"}
    med_init = {s: statistics.median(r["init_ms"] for r in inits[s]) for s in servers}
    med_first = {s: statistics.median(r["first_duration_ms"] for r in inits[s]) for s in servers}
    w("### Start, memory and size")
    w("")
    w(
        "| server | INIT median ms | INIT p90 ms | first `tools/list` median ms | INIT + first × mcp-lambda "
        "| peak RSS after the first, MiB | peak RSS warm, MiB | binary MB | zip MB |"
    )
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    cold = {s: med_init[s] + med_first[s] for s in servers}
    for s in servers:
        ms = [r["init_ms"] for r in inits[s]]
        first_rss = statistics.median(r["first_peak_rss_kib"] for r in inits[s])
        size = machine["sizes"][s]
        warm_rss = memory.get(s, {}).get("peak_rss_kib")
        zipped = f"{size['zip_bytes'] / 1e6:.1f}" if size["zip_bytes"] else "— (debug)"
        w(
            f"| {LABELS[s]} | {fmt(med_init[s])} | {fmt(pct(ms, 0.9))} | {fmt(med_first[s])} | "
            f"{ratio(cold[s], cold[BASE])} | {fmt(mib(first_rss), 1)} | "
            f"{fmt(mib(warm_rss), 1) if warm_rss else '—'} | {size['binary_bytes'] / 1e6:.1f} | "
            f"{zipped} |"
        )
    w("")
    growth = []
    for s in servers:
        rs = [r for r in rows if r["kind"] == "invoke" and r["server"] == s and r.get("rss_kib")]
        if len(rs) > 1:
            n = sum(r["invocations"] for r in rs[1:])
            growth.append(
                f"{LABELS[s]} {fmt(mib(rs[0]['rss_kib']), 1)} → {fmt(mib(rs[-1]['rss_kib']), 1)} MiB "
                f"over {n:,} invocations ({(rs[-1]['rss_kib'] - rs[0]['rss_kib']) / n * 1e3:,.0f} KiB per 1,000)"
            )
    if growth:
        w(
            "Resident memory (`VmRSS`) of the warm process after its first measured batch and after "
            "its last: " + "; ".join(growth) + "."
        )
        w("")

    # --- Invocations ---
    stats = {}
    for s in servers:
        for op in OPS:
            rs = [r for r in rows if r["kind"] == "invoke" and r["server"] == s and r["op"] == op]
            d = [x for r in rs for x in r["duration_ms"]]
            n = sum(r["invocations"] for r in rs)
            cpu_ms = sum(r["cpu_ticks"] for r in rs) / clk * 1e3 / n
            stats[(s, op)] = {"d": d, "n": n, "cpu_ms": cpu_ms,
                              "round_p50": [statistics.median(r["duration_ms"]) for r in rs]}

    def billed(key, share):
        s = stats[key]
        extra = s["cpu_ms"] * (vcpu_mb / MB - 1) if share else 0.0
        return statistics.mean(math.ceil(x + extra) for x in s["d"])

    def usd(ms):
        return req + ms / 1000 * MB / 1024 * gbs * 1e6

    w("### Per invocation (event out on `/next` → the function's next `/next`) and cost")
    w("")
    w(
        f"| server | request | p50 ms | p99 ms | CPU µs/inv | p50 × mcp-lambda | CPU × mcp-lambda | "
        f"USD per 1 M, {MB} MB, full core | USD per 1 M, {MB} MB, CPU share | invocations |"
    )
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for op in OPS:
        for s in servers:
            st, base = stats[(s, op)], stats[(BASE, op)]
            full, share = billed((s, op), False), billed((s, op), True)
            w(
                f"| {LABELS[s]} | `{op}` | {fmt(pct(st['d'], 0.5), 3)} | {fmt(pct(st['d'], 0.99), 3)} | "
                f"{fmt(st['cpu_ms'] * 1e3, 0)} | {ratio(pct(st['d'], 0.5), pct(base['d'], 0.5))} | "
                f"{ratio(st['cpu_ms'], base['cpu_ms'])} | ${usd(full):.3f} ({full:.2f} ms) | "
                f"${usd(share):.3f} ({share:.2f} ms) | {st['n']:,} |"
            )
    w("")
    spread = "; ".join(
        f"{s} `{op}` {min(st['round_p50']):.3f}–{max(st['round_p50']):.3f}"
        for (s, op), st in stats.items()
    )
    w(f"p50 of each round, ms (spread across the {machine['rounds']} rounds): {spread}.")
    w("")
    tails = []
    for s in servers:
        rs = [r for r in rows if r["kind"] == "invoke" and r["server"] == s]
        slow = [sum(1 for x in r["duration_ms"] if x > 1.0) for r in rs]
        pairs = [(d, l) for r in rs for d, l in zip(r["duration_ms"], r["latency_ms"]) if d > 1.0]
        after = sum(d - l for d, l in pairs) / sum(d for d, _ in pairs) if pairs else 0
        tails.append(
            f"{s} {sum(slow):,} of {sum(r['invocations'] for r in rs):,} (in "
            f"{sum(1 for n in slow if n)} of {len(rs)} batches, at most {max(slow)} in one; "
            f"{after:.0%} of their time after the answer was posted, before the next `/next`)"
        )
    w(
        "Invocations over 1 ms, where the p99 comes from: " + "; ".join(tails) + ". The machine "
        "is shared with other builds, and how many a batch has varies with them."
    )
    w("")
    init_usd = {s: (med_init[s] + med_first[s]) / 1000 * MB / 1024 * gbs * 1e6 for s in servers}
    w(
        f"USD per 1 M = $0.20 + mean ⌈billed ms⌉ / 1000 × {MB}/1024 GB × ${gbs:.10f} per GB-s "
        f"({lam['arm64_tier']}, {prices['region']}, read {prices['read']}) × 10⁶; *full core*: the "
        f"measured duration; *CPU share*: + CPU per invocation × ({vcpu_mb} / {MB} − 1), the CPU "
        f"time stretched to the vCPU share Lambda gives {MB} MB. In brackets the mean billed ms. "
        f"CPU per invocation is `utime + stime` of the function's process over a batch, in whole "
        f"{1000 // clk} ms ticks (within ±{1000 / clk / machine['batch'] * 1e3:.0f} µs here). A "
        "cold start adds its INIT and its first invocation, billed alike: at the medians above "
        + ", ".join(f"{s} ${init_usd[s]:.3f}" for s in servers)
        + f" per million cold starts at {MB} MB, full core."
    )
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    if not args or len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--write"):
        sys.exit(__doc__)
    section = report(args[0])
    if len(args) == 1:
        print(section)
        return
    sections.write_section(args[2], SECTION, section)


if __name__ == "__main__":
    main()
