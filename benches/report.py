"""Turns a side-by-side run (results.jsonl from benches/side-by-side.sh) into tables, the goal
check of issue 6 and a chart.

    python benches/report.py RESULTS.jsonl --out DIR [--chart PNG] [--doc BENCHMARKS.md]

Prints the Markdown report and writes it to DIR/report.md; with --doc, replaces the text between
the side-by-side markers of that file with it (so the numbers there are the run's, unedited);
with --chart, draws the chart (needs matplotlib).
"""

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import sections

# "before": an older tree's mcp-lambda, when the run was given one (BENCH_BEFORE).
SERVERS = ["mcp-lambda", "before", "mcp-lambda+auth", "rmcp", "ts-sdk", "py-sdk", "hyper"]
BASE = "mcp-lambda"
PEERS = ["ts-sdk", "py-sdk"]


def load(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by_kind = defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
    return by_kind


def summarize(by_kind):
    cold = defaultdict(list)
    for r in by_kind["coldstart"]:
        cold[r["server"]].extend(r["result"]["samples_ms"])
    cells = defaultdict(list)
    for r in by_kind["load"]:
        w = r["wrk"]
        secs = w["duration_us"] / 1e6
        cpu_s = r["cpu_ticks"] / r["clk_tck"]
        cells[(r["server"], r["method"], r["conns"])].append(
            {
                "rps": w["requests"] / secs,
                "cpu_us": cpu_s * 1e6 / w["requests"],
                "p50_us": w["p50_us"],
                "p99_us": w["p99_us"],
                "round": r["round"],
            }
        )
    load_summary = {}
    for key, runs in cells.items():
        med = {k: statistics.median(run[k] for run in runs) for k in ("rps", "cpu_us", "p50_us", "p99_us")}
        med["per_core"] = 1e6 / med["cpu_us"] if med["cpu_us"] > 0 else float("inf")
        med["rounds"] = len(runs)
        load_summary[key] = med
    rss = {r["server"]: r for r in by_kind["rss"]}
    binaries = {r["name"]: r for r in by_kind["binary"]}
    return cold, load_summary, rss, binaries


def fmt(x, digits=0):
    if x is None:
        return "—"
    if x == float("inf"):
        return "∞"
    return f"{x:,.{digits}f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fx(x):
    return "—" if x is None else f"{x:.2f}×"


def report(by_kind, results_path):
    machine = by_kind["machine"][0]
    end = by_kind["end"][0] if by_kind["end"] else {}
    cold, loads, rss, binaries = summarize(by_kind)
    servers = [s for s in SERVERS if s in cold or any(k[0] == s for k in loads)]
    cold_med = {s: statistics.median(v) for s, v in cold.items() if v}
    lines = []
    w = lines.append
    w(f"Run: `{machine['mode']}` mode, {machine['rounds']} round(s) × {machine['seconds']} s per cell, "
      f"{machine['starts']} cold starts per server; results file `{results_path}`.")
    w("")
    w(f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['mem_gib']} GiB, Linux {machine['kernel']}; "
      f"{machine['rustc']}, Node {machine['node']}, Python {machine['python']}, {' '.join(machine['wrk'].split()[:2])}. "
      f"Load average at start {' '.join(machine['loadavg_start'])}, at end {end.get('loadavg_end', '?')} "
      "(the machine is shared with other builds: ratios come from interleaved runs of the same round).")
    loadavgs = sorted(float(r["loadavg"]) for r in by_kind["load"] if r.get("loadavg"))
    if loadavgs:
        w("")
        w(f"1-minute load average at the end of each load run: median {statistics.median(loadavgs):.2f}, "
          f"range {loadavgs[0]:.2f}–{loadavgs[-1]:.2f} (2 cores; the server and wrk account for up to 2 of it).")
    w("")
    w("### Cold start (process exec → first `server/discover` 200)")
    w("")
    w("| server | median ms | p90 ms | min ms | starts | × mcp-lambda |")
    w("|---|---:|---:|---:|---:|---:|")
    for s in servers:
        v = sorted(cold.get(s, []))
        if not v:
            w(f"| {s} | failed | | | | |")
            continue
        p90 = v[min(len(v) - 1, round((len(v) - 1) * 0.9))]
        w(f"| {s} | {fmt(cold_med[s], 2)} | {fmt(p90, 2)} | {fmt(v[0], 2)} | {len(v)} | {fx(ratio(cold_med[s], cold_med.get(BASE)))} |")
    w("")
    for method in ("tools/list", "tools/call"):
        for conns in (1, 16):
            if not any(k[1] == method and k[2] == conns for k in loads):
                continue
            w(f"### `{method}`, {conns} connection{'s' if conns > 1 else ''}")
            w("")
            w("| server | req/s | CPU µs/req | req/s per core | p50 µs | p99 µs | req/s × mcp-lambda | CPU/req × mcp-lambda |")
            w("|---|---:|---:|---:|---:|---:|---:|---:|")
            base = loads.get((BASE, method, conns))
            for s in servers:
                m = loads.get((s, method, conns))
                if not m:
                    continue
                w(f"| {s} | {fmt(m['rps'])} | {fmt(m['cpu_us'], 1)} | {fmt(m['per_core'])} | {fmt(m['p50_us'])} | "
                  f"{fmt(m['p99_us'])} | {fx(ratio(m['rps'], base and base['rps']))} | {fx(ratio(m['cpu_us'], base and base['cpu_us']))} |")
            w("")
    w("### Memory (64 connections, tools/list then tools/call) and binaries")
    w("")
    w("| server | RSS idle MB | peak RSS (VmHWM) MB |")
    w("|---|---:|---:|")
    for s in servers:
        if s in rss:
            w(f"| {s} | {fmt(rss[s]['idle_kb'] / 1024, 1)} | {fmt(rss[s]['hwm_kb'] / 1024, 1)} |")
    w("")
    for name, b in binaries.items():
        w(f"- `{name}` ({b['profile']}, {'stripped' if b['stripped'] else 'not stripped'}): {fmt(b['bytes'] / 2**20, 2)} MiB")
    w("")

    # The goals of issue 6.
    def cell(s, method="tools/list", conns=16, key="per_core"):
        m = loads.get((s, method, conns))
        return m and m[key]

    goals = []
    c = cold_med.get(BASE)
    goals.append(("cold start median ≤ 10 ms", f"{fmt(c, 2)} ms", c is not None and c <= 10))
    peer_cold = [ratio(cold_med.get(p), c) for p in PEERS if p in cold_med]
    worst = min(peer_cold) if peer_cold and None not in peer_cold else None
    goals.append(("cold start ≥ 10× faster than the TS and Python peers",
                  ", ".join(f"{p} {fx(ratio(cold_med.get(p), c))}" for p in PEERS), worst is not None and worst >= 10))
    for peer, target in (("ts-sdk", 5), ("py-sdk", 15)):
        for conns in (16, 1):
            r = ratio(cell(BASE, conns=conns), cell(peer, conns=conns))
            goals.append((f"tools/list throughput per core ≥ {target}× {peer} ({conns} conn)", fx(r),
                          r is not None and r >= target))
    for method in ("tools/list", "tools/call"):
        for conns in (16, 1):
            r = ratio(cell("mcp-lambda+auth", method, conns, "cpu_us"), cell("rmcp", method, conns, "cpu_us"))
            goals.append((f"mcp-lambda layers, auth on (RS256): CPU/req ≤ 1.2× bare rmcp — {method}, {conns} conn",
                          fx(r), r is not None and r <= 1.2))
    for method in ("tools/list", "tools/call"):
        r = ratio(cell(BASE, method, 16, "cpu_us"), cell("hyper", method, 16, "cpu_us"))
        goals.append((f"CPU/req ≤ 1.2× minimal hyper (auth off; issue 32, was 1.5× at issue 6) — {method}, 16 conn", fx(r),
                      r is not None and r <= 1.2))
    if "before" in [k[0] for k in loads]:
        for method in ("tools/list", "tools/call"):
            for conns in (16, 1):
                r = ratio(cell(BASE, method, conns, "cpu_us"), cell("before", method, conns, "cpu_us"))
                goals.append((f"CPU/req after ÷ before (BENCH_BEFORE) — {method}, {conns} conn", fx(r),
                              r is not None and r <= 1.0))
    for s in (BASE, "mcp-lambda+auth"):
        if s in rss:
            mb = rss[s]["hwm_kb"] / 1024
            goals.append((f"peak RSS ≤ 30 MB under 64 clients ({s})", f"{fmt(mb, 1)} MB", mb <= 30))
    if "basket" in binaries:
        mb = binaries["basket"]["bytes"] / 2**20
        goals.append(("stripped Lambda binary (basket, release) ≤ 8 MB", f"{fmt(mb, 2)} MiB", mb <= 8))
    w("### Goals (issue 6)")
    w("")
    w("| goal | measured | met |")
    w("|---|---:|:---:|")
    for name, value, met in goals:
        w(f"| {name} | {value} | {'yes' if met else '**no**'} |")
    return "\n".join(lines) + "\n", cold_med, loads, servers


def chart(path, cold_med, loads, servers):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"mcp-lambda": "#1f77b4", "before": "#9edae5", "mcp-lambda+auth": "#6baed6", "rmcp": "#2ca02c",
              "ts-sdk": "#ff7f0e", "py-sdk": "#d62728", "hyper": "#7f7f7f"}
    fig, axes = plt.subplots(1, 3, figsize=(16, 5.2))
    ax = axes[0]
    names = [s for s in servers if s in cold_med]
    bars = ax.bar(names, [cold_med[s] for s in names], color=[colors[s] for s in names])
    ax.bar_label(bars, labels=[f"{cold_med[s]:.1f}" for s in names], fontsize=8)
    ax.set_yscale("log")
    ax.set_title("Cold start, median ms (exec → discover 200)\nlower is better")
    for i, (method, title) in enumerate((("tools/list", "tools/list"), ("tools/call", "tools/call (echo)"))):
        ax = axes[i + 1]
        width = 0.4
        xs = range(len(servers))
        for j, (conns, key, label) in enumerate(((16, "per_core", "req/s per CPU core, 16 conn"),
                                                 (16, "rps", "req/s, 16 conn (wrk on the same 2 cores)"))):
            vals = [(loads.get((s, method, conns)) or {}).get(key, 0) for s in servers]
            b = ax.bar([x + (j - 0.5) * width for x in xs], vals, width, label=label,
                       color=[colors[s] for s in servers], alpha=1.0 if j == 0 else 0.45,
                       edgecolor="black", linewidth=0.4)
            ax.bar_label(b, labels=[f"{v / 1000:.1f}k" if v else "" for v in vals], fontsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(servers)
        ax.set_yscale("log")
        ax.set_title(f"{title}: throughput\nhigher is better (solid: per CPU core; light: absolute)")
        ax.legend(fontsize=7, loc="lower left")
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=30, labelsize=8)
        ax.grid(axis="y", which="both", alpha=0.2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("--out", required=True)
    p.add_argument("--chart")
    p.add_argument("--doc")
    a = p.parse_args()
    by_kind = load(a.results)
    results = Path(a.results)
    text, cold_med, loads, servers = report(by_kind, f"{results.parent.name}/{results.name}")
    print(text)
    Path(a.out, "report.md").write_text(text)
    if a.chart:
        chart(a.chart, cold_med, loads, servers)
        print(f"chart: {a.chart}")
    if a.doc:
        sections.write_section(a.doc, "side-by-side", text)
        print(f"updated {a.doc}")
    if not loads or not cold_med:
        sys.exit("no numbers in the results")


if __name__ == "__main__":
    main()
