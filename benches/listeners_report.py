#!/usr/bin/env python3
"""The listener benchmark's table and cost per listener-month (benches/listeners.sh).

    benches/listeners_report.py RESULTS.jsonl [--write BENCHMARKS.md]

Reads what bench_listeners measured (one line per stream count) and the prices in
benches/lambda-prices.json; prints the markdown section, or writes it between the
`<!-- listeners:begin -->` and `<!-- listeners:end -->` markers of BENCHMARKS.md.

Each listener watches its own basket and the tool list, as in the benchmark. Costs per
listener-month (730 h):
- DynamoDB: the read units of the shared polls, shared out: (distinct items / streams) read
  units per poll (one strongly consistent read unit per item of at most 4 KB).
- VPS and Lambda Managed Instances: the measured CPU per stream-second as a share of an m7g.large
  vCPU-month (the instance price / 2), Managed Instances with their 15 % fee, plus one invocation
  per stream lifetime (300 s) at $0.20 per million; plus DynamoDB as above.
- on-demand Lambda: each stream holds an execution environment of its own (128 MB) for its whole
  life, so nothing is shared: 0.125 GB × 730 h of duration, the invocations, and both items read by
  its own poll.
"""
import json
import sys

import sections

HOURS = 730
SECONDS = HOURS * 3600


def section(rows, prices):
    ddb = prices["dynamodb_on_demand"]["usd_per_million_read_request_units"] / 1e6
    ec2 = prices["ec2"]
    vcpu_month = ec2["usd_per_hour"] * HOURS / ec2["vcpus"]
    mi_fee = 1 + prices["managed_instances"]["management_fee_of_ec2_on_demand_price"]
    lam = prices["lambda"]
    requests = SECONDS / 300 * lam["usd_per_million_requests"] / 1e6
    out = []
    poll = rows[0]["poll_ms"] / 1000
    out.append(
        f"Poll every {rows[0]['poll_ms']} ms; each stream watches its own basket and the tool list "
        f"({rows[0]['seconds']:.0f} s quiet window per count, then {10} changes for delivery).\n"
    )
    out.append("| open streams | DynamoDB requests/s | `BatchGetItem` per poll interval (a poll: ⌈items/100⌉) | CPU µs per stream-second | RSS KiB per stream | delivery p50 / max (ms) |")
    out.append("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        out.append(
            f"| {r['streams']:,} | {r['dynamodb_requests_per_sec']:.2f} | {r['batch_get_per_poll']:.2f} ({r['expected_per_poll']:.0f}) "
            f"| {r['cpu_us_per_stream_second']:.1f} | {r['rss_kib_per_stream']:.1f} "
            f"| {r['delivery_p50_ms']:.0f} / {r['delivery_max_ms']:.0f} |"
        )
    out.append("")
    out.append(
        "CPU is `utime + stime` above the idle process, counted by the kernel in 10 ms ticks: over "
        f"a {rows[0]['seconds']:.0f} s window one tick is {10_000 / rows[0]['seconds']:.0f} µs per "
        "stream-second at one stream and a thousandth of that at a thousand, so only the larger "
        "counts measure anything. RSS per stream is the growth over the idle process divided by "
        "the streams (at one stream it is mostly the allocator's first arenas). Fewer requests per "
        "interval than a poll needs means a poll took longer than the interval (ticks are "
        "delayed, never bunched).\n"
    )
    out.append("Cost per listener-month (730 h), from the figures above and `benches/lambda-prices.json`:\n")
    out.append("| open streams per process | DynamoDB reads | VPS (CPU share + reads) | Managed Instances | on-demand Lambda |")
    out.append("|---:|---:|---:|---:|---:|")
    for r in rows:
        n = r["streams"]
        reads = (n + 1) / n * SECONDS / poll * ddb
        cpu = r["cpu_us_per_stream_second"] / 1e6 * vcpu_month
        vps = cpu + reads
        mi = cpu * mi_fee + requests + reads
        on_demand = 0.125 * SECONDS * lam["arm64_usd_per_gb_second"] + requests + 2 * SECONDS / poll * ddb
        out.append(f"| {n:,} | ${reads:.3f} | ${vps:.3f} | ${mi:.3f} | ${on_demand:.2f} |")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    rows = [r for r in rows if r.get("kind") == "listeners"]
    if not rows:
        print("no listener measurements", file=sys.stderr)
        return 1
    prices = sections.prices()
    text = section(rows, prices)
    if len(args) == 3 and args[1] == "--write":
        sections.write_section(args[2], "listeners", text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
