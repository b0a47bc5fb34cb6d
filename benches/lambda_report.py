#!/usr/bin/env python3
"""The Lambda runtime-path section of BENCHMARKS.md, from one run of benches/lambda-runtime.sh.

    python3 benches/lambda_report.py RESULTS.jsonl                  print the section
    python3 benches/lambda_report.py RESULTS.jsonl --write FILE     replace it in FILE, between
                                                                    the lambda-runtime markers

Every number comes from RESULTS.jsonl (and the basket's log beside it, for the DynamoDB requests
its metrics counted), the prices from benches/lambda-prices.json, and the TypeScript and Python
SDKs' CPU per request from the side-by-side table already in FILE (or BENCHMARKS.md).
"""

import json
import math
import os
import re
import statistics
import sys

import sections
from sections import fmt, pct, ratio

HERE = os.path.dirname(os.path.abspath(__file__))
SECTION = "lambda-runtime"
OPS = ["hello", "hello-one-thread", "tools/list", "view_basket", "add_item"]
# DynamoDB requests per operation, from basket/src/tools.rs and src/handles/dynamodb.rs:
# view_basket is a store touch (one conditional UpdateItem, ReturnValues ALL_NEW); add_item reads
# the basket (GetItem, ConsistentRead) and writes it back on its version (one conditional
# UpdateItem); tools/list and hello touch no table. Checked below against the metrics' count.
DYNAMODB = {
    "hello": {"reads": 0, "writes": 0},
    "hello-one-thread": {"reads": 0, "writes": 0},
    "tools/list": {"reads": 0, "writes": 0},
    "view_basket": {"reads": 0, "writes": 1},
    "add_item": {"reads": 1, "writes": 1},
}
MEMORY_MB = [128, 256]


def side_by_side_cpu(markdown):
    """CPU µs per request at 1 connection, `tools/list`, from the side-by-side table."""
    m = re.search(r"### `tools/list`, 1 connection\n(.*?)\n\n", markdown, re.S)
    if not m:
        return {}
    cpu = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 2 and re.match(r"^[\d.,]+$", cells[2]):
            cpu[cells[0]] = float(cells[2].replace(",", ""))
    return cpu


def side_by_side_coldstart(markdown):
    """Cold start × mcp-lambda per server, from the side-by-side cold-start table."""
    m = re.search(r"### Cold start.*?\n(.*?)\n\n", markdown, re.S)
    found = {}
    if m:
        for line in m.group(1).splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) > 5 and cells[-1].endswith("×"):
                try:
                    found[cells[0]] = float(cells[-1].rstrip("×"))
                except ValueError:
                    pass
    return found


def warm_up_ms(log_path):
    """The DynamoDB warm-up time of each basket start, from its INFO line."""
    found = []
    try:
        lines = open(log_path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return found
    for line in lines:
        if "connection warmed" in line:
            try:
                found.append(json.loads(line)["fields"]["elapsed_ms"])
            except (ValueError, KeyError):
                pass
    return found


def emf_counts(log_path):
    """Per tool name: (records, DynamoDB requests) from the basket's EMF metric lines."""
    counts = {}
    try:
        lines = open(log_path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return counts
    for line in lines:
        if '"_aws"' not in line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        name = rec.get("Name") or rec.get("Method") or "?"
        n, total = counts.get(name, (0, 0))
        counts[name] = (n + 1, total + int(rec.get("DynamoDbRequests", 0) or 0))
    return counts


def report(results_path, markdown):
    rows = sections.records(results_path)
    machine = next(r for r in rows if r["kind"] == "machine")
    end = next((r for r in rows if r["kind"] == "end"), {})
    done = next((r for r in rows if r["kind"] == "done"), {})
    clk = machine["clk_tck"]
    prices = sections.prices()
    lam, ddb = prices["lambda"], prices["dynamodb_on_demand"]

    out = []
    w = out.append
    w(sections.run_header(results_path, machine, end, "invocations of each operation after 20 of warm-up"))
    w("")

    # --- INIT ---
    inits = {f: [r for r in rows if r["kind"] == "init" and r["function"] == f] for f in ("hello", "basket")}
    w("### INIT (exec → first `GET /runtime/invocation/next`)")
    w("")
    w("| function | median ms | p90 ms | min ms | CPU ms by INIT's end | first invocation, median ms | starts | × hello |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|")
    med = {}
    for f in ("hello", "basket"):
        rs = inits[f]
        ms = [r["init_ms"] for r in rs]
        med[f] = statistics.median(ms)
    for f in ("hello", "basket"):
        rs = inits[f]
        ms = [r["init_ms"] for r in rs]
        ticks = [r["init_cpu_ticks"] for r in rs]
        tick_ms = 1000 / clk
        # /proc/<pid>/stat counts whole ticks: a start under one tick reads 0.
        cpu = ", ".join(
            (f"under {tick_ms:.0f} in {ticks.count(t)}" if t == 0 else f"{t * tick_ms:.0f} in {ticks.count(t)}")
            for t in sorted(set(ticks))
        ) + f" of {len(rs)}"
        first = statistics.median(r["first_duration_ms"] for r in rs)
        label = "hello (`lambda_http`, nothing else)" if f == "hello" else "basket (auth on: JWKS fetch; DynamoDB warm-up)"
        w(
            f"| {label} | {fmt(med[f])} | {fmt(pct(ms, 0.9))} | {fmt(min(ms))} | {cpu} | "
            f"{fmt(first)} | {len(rs)} | {ratio(med[f], med['hello'])} |"
        )
    w("")
    warmups = warm_up_ms(os.path.join(os.path.dirname(results_path), "basket.log"))
    if warmups:
        w(
            f"Of the basket's INIT, the DynamoDB warm-up (one `GetItem` through a new connection, as "
            f"the basket logs it) took a median {statistics.median(warmups):.0f} ms "
            f"(min {min(warmups)}, max {max(warmups)}, {len(warmups)} starts, whole ms) against "
            "DynamoDB Local, a JVM on the same cores; against DynamoDB it is one in-region TLS "
            "connection and one request."
        )
        w("")
    w(
        f"The issuer's JWKS was fetched {done.get('jwks_fetches', '?')} times in the run (one per basket "
        "process: each INIT fetches it once). CPU by INIT's end is `utime + stime` when the first "
        f"`/next` arrived, which the kernel reports in whole {1000 // clk} ms ticks. The first "
        "invocation is a `tools/list`."
    )
    w("")

    # --- INIT on an emulated network ---
    emulated = {f: [r for r in rows if r["kind"] == "init_emulated" and r["function"] == f] for f in ("hello", "basket")}
    if emulated["hello"] and emulated["basket"]:
        issuer_rtt = emulated["basket"][0]["issuer_rtt_ms"]
        aws_rtt = emulated["basket"][0]["aws_rtt_ms"]
        hello_ms = statistics.median(r["init_ms"] for r in emulated["hello"])
        basket_ms = [r["init_ms"] for r in emulated["basket"]]
        # The chains INIT waits for, in round trips of their path: the issuer's is the TCP
        # handshake, the TLS 1.3 handshake, the two metadata documents asked at once, then the
        # JWKS on a pooled connection; DynamoDB's the handshake, the warm-up read, the
        # fingerprint read; SSM's the handshake and the key. (The AWS stand-ins speak plain HTTP:
        # on AWS their TLS handshakes add one round trip each, in-region.)
        # As measured through the proxies (their timer rounding included).
        paths = next(r for r in rows if r["kind"] == "emulated_paths")
        chains = {"issuer": paths["issuer_chain_ms"], "DynamoDB": paths["dynamodb_chain_ms"],
                  "SSM key": paths["ssm_chain_ms"]}
        slowest = max(chains, key=chains.get)
        goal = hello_ms + chains[slowest] + 5
        w("### INIT on an emulated network")
        w("")
        w(
            f"The basket's dependencies each behind a loopback proxy that delays every byte by half a "
            f"round trip each way and every new connection by one (its TCP handshake): the issuer "
            f"over HTTPS (a test CA, `MCP_AUTH_CA_FILE`; metadata found by discovery) at "
            f"{issuer_rtt:.0f} ms, DynamoDB Local and an SSM stand-in (the request-state key) at "
            f"{aws_rtt:.0f} ms. The hello has no dependency."
        )
        w("")
        w("| function | median ms | p90 ms | min ms | starts |")
        w("|---|---:|---:|---:|---:|")
        for f, label in (("hello", "hello (`lambda_http`)"), ("basket", "basket (auth with discovery, DynamoDB, key from SSM)")):
            ms = [r["init_ms"] for r in emulated[f]]
            w(f"| {label} | {fmt(statistics.median(ms))} | {fmt(pct(ms, 0.9))} | {fmt(min(ms))} | {len(ms)} |")
        w("")
        verdict = "met" if statistics.median(basket_ms) <= goal else "missed"
        w(
            "The chains INIT waits for, as measured through the same proxies (a new connection and "
            "one-byte exchanges with an echo server, median of 7): the issuer "
            f"{chains['issuer']:.1f} ms (TCP, then three exchanges: the TLS 1.3 handshake, both "
            "metadata documents at once, the JWKS on a pooled connection), DynamoDB "
            f"{chains['DynamoDB']:.1f} ms (TCP, warm-up read, fingerprint read), the SSM key "
            f"{chains['SSM key']:.1f} ms (TCP, the call). Goal: hello + the slowest chain ({slowest}) + "
            f"5 ms = **{goal:.1f} ms**; the basket's median is **{statistics.median(basket_ms):.1f} ms**: "
            f"**{verdict}**."
        )
        w("")

    # --- Invocations ---
    inv = {op: [r for r in rows if r["kind"] == "invoke" and r["op"] == op] for op in OPS}
    stats = {}
    for op in OPS:
        rs = inv[op]
        d = [x for r in rs for x in r["duration_ms"]]
        lat = [x for r in rs for x in r["latency_ms"]]
        n = sum(r["invocations"] for r in rs)
        cpu_ms = sum(r["cpu_ticks"] for r in rs) / clk * 1e3 / n
        round_p50 = [statistics.median(r["duration_ms"]) for r in rs]
        stats[op] = {"d": d, "lat": lat, "n": n, "cpu_ms": cpu_ms, "round_p50": round_p50}
    hello = stats["hello"]
    w("### Duration of an invocation (event out on `/next` → the function's next `/next`)")
    w("")
    w(
        "| operation | DynamoDB | p50 ms | p99 ms | mean ms | response p50 ms | CPU µs/inv | invocations | "
        "p50 × hello | CPU × hello |"
    )
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    names = {
        "hello": "hello (`lambda_http`, fixed JSON)",
        "hello-one-thread": "hello on one thread (current-thread runtime)",
        "tools/list": "`tools/list`",
        "view_basket": "`view_basket` (handle read)",
        "add_item": "`add_item` (handle write)",
    }
    for op in OPS:
        s = stats[op]
        io = DYNAMODB[op]
        dd = "—" if not (io["reads"] or io["writes"]) else " + ".join(
            x for x in (["GetItem"] * io["reads"] + ["UpdateItem"] * io["writes"]))
        w(
            f"| {names[op]} | {dd} | {fmt(pct(s['d'], 0.5), 3)} | {fmt(pct(s['d'], 0.99), 3)} | "
            f"{fmt(statistics.mean(s['d']), 3)} | {fmt(pct(s['lat'], 0.5), 3)} | {fmt(s['cpu_ms'] * 1e3, 0)} | "
            f"{s['n']:,} | {ratio(pct(s['d'], 0.5), pct(hello['d'], 0.5))} | "
            f"{ratio(s['cpu_ms'], hello['cpu_ms'])} |"
        )
    w("")
    spread = ", ".join(
        f"{names[op].split(' (')[0]} {min(s['round_p50']):.3f}–{max(s['round_p50']):.3f}"
        for op, s in stats.items()
    )
    w(f"p50 of each round, ms (its spread across the {machine['rounds']} rounds): {spread}.")
    w("")
    one = stats["hello-one-thread"]
    w(
        "The hello runs on tokio's multi-threaded runtime, as `#[tokio::main]` and cargo-lambda's "
        "template build it; the basket on the runtime `mcp_lambda::runtime()` builds on on-demand "
        "Lambda, one thread. The same hello on one thread costs "
        f"{fmt(one['cpu_ms'] * 1e3, 0)} µs of CPU per invocation: against that floor `tools/list` "
        f"is {ratio(stats['tools/list']['cpu_ms'], one['cpu_ms'])}."
    )
    w("")
    w(
        f"CPU per invocation is read in whole {1000 // clk} ms ticks at each end of a batch, so it is "
        f"within ±{1000 / clk / machine['batch'] * 1e3:.0f} µs of the truth here (one tick per "
        f"batch of {machine['batch']:,})."
    )
    w("")

    emf = emf_counts(os.path.join(os.path.dirname(results_path), "basket.log"))
    checks = []
    for op in ("view_basket", "add_item"):
        n, total = emf.get(op, (0, 0))
        expected = DYNAMODB[op]["reads"] + DYNAMODB[op]["writes"]
        if n:
            checks.append(f"`{op}` {total / n:.2f} per call over {n:,} calls (expected {expected})")
    if checks:
        w(
            "DynamoDB requests per call as the basket's own metrics (EMF `DynamoDbRequests`) counted "
            "them over the whole run: " + "; ".join(checks) + "."
        )
        w("")

    # --- Cost ---
    gbs = lam["arm64_usd_per_gb_second"]
    req = lam["usd_per_million_requests"]
    vcpu_mb = lam["vcpu_at_mb"]

    def billed(op, mb, share):
        s = stats[op]
        extra = s["cpu_ms"] * (vcpu_mb / mb - 1) if share else 0.0
        return statistics.mean(math.ceil(x + extra) for x in s["d"])

    def duration_cost(ms, mb):
        return ms / 1000 * mb / 1024 * gbs * 1e6

    largest = done.get("largest_item_bytes")
    # Request units per request for the largest item the run left in the table (1 if unknown).
    rru = max(1, math.ceil((largest or 1) / ddb["strongly_consistent_read_unit_bytes"]))
    wru = max(1, math.ceil((largest or 1) / ddb["write_unit_bytes"]))

    def units(op):
        return DYNAMODB[op]["reads"] * rru, DYNAMODB[op]["writes"] * wru

    def ddb_cost(op):
        r, wr = units(op)
        return (r * ddb["usd_per_million_read_request_units"]
                + wr * ddb["usd_per_million_write_request_units"])

    w("### Cost per million requests (arm64, on-demand Lambda)")
    w("")
    w(
        f"Prices read {prices['read']}, {prices['region']}: duration ${gbs:.10f} per GB-s "
        f"({lam['arm64_tier']}), requests ${req:.2f} per million; DynamoDB on demand "
        f"${ddb['usd_per_million_read_request_units']} per million read request units (a strongly "
        f"consistent read up to 4 KB) and ${ddb['usd_per_million_write_request_units']} per million "
        "write request units (a write up to 1 KB). "
        + (f"The largest item in the table after the run was {largest:,} bytes (names and values, as "
           f"DynamoDB sizes items): {rru} read unit(s) per read, {wru} write unit(s) per write. "
           if largest else "")
        + "The prices are kept in `benches/lambda-prices.json`, their sources below the table."
    )
    w("")
    w("USD per 1 M requests = requests + duration + DynamoDB, with")
    w("")
    w("- requests = $0.20;")
    w("- duration = mean over the invocations of ⌈billed ms⌉ / 1000 × memory GB × $/GB-s × 10⁶ "
      "(Lambda rounds each invocation up to 1 ms);")
    w("- billed ms, *full core*: the measured duration (this machine's core, as if the function had "
      "a whole vCPU); *CPU share*: the measured duration + CPU per invocation × (1769 / memory MB − 1), "
      "the CPU time stretched to the share of a vCPU Lambda gives that memory (1,769 MB = one vCPU), "
      "the waits (DynamoDB, the Runtime API) unchanged. Neither column has Lambda's own Runtime "
      "API in it, nor the difference between this CPU and a Graviton core;")
    w("- DynamoDB = read units × $0.125 + write units × $0.625.")
    w("")
    w("| operation | DynamoDB RRU + WRU | 128 MB, full core | 128 MB, CPU share | 256 MB, full core | 256 MB, CPU share | of which DynamoDB |")
    w("|---|---|---:|---:|---:|---:|---:|")
    costs = {}
    for op in OPS:
        cells = []
        for mb in MEMORY_MB:
            for share in (False, True):
                ms = billed(op, mb, share)
                total = req + duration_cost(ms, mb) + ddb_cost(op)
                costs[(op, mb, share)] = (total, ms)
                cells.append(f"${total:.3f} ({ms:.2f} ms)")
        r, wr = units(op)
        w(f"| {names[op]} | {r} + {wr} | " + " | ".join(cells) + f" | ${ddb_cost(op):.3f} |")
    w("")
    w("(In brackets: the mean billed milliseconds per invocation.)")
    w("")
    w(f"Sources (read {prices['read']}; AWS's own pricing pages fill their rate tables in client-side, "
      "so the rates come from the copies quoting them, named below):")
    w("")
    for part in ("lambda", "dynamodb_on_demand", "managed_instances"):
        for source in prices[part]["sources"]:
            w(f"- {source}")
    w("")
    init_cost = {
        mb: duration_cost(statistics.mean(math.ceil(r["init_ms"]) for r in inits["basket"]), mb)
        for mb in MEMORY_MB
    }
    w(
        f"A cold start adds its INIT, billed since 2025-08-01: at the median measured here "
        f"({fmt(med['basket'])} ms, full core) ${init_cost[128]:.3f} per million cold starts at 128 MB "
        f"and ${init_cost[256]:.3f} at 256 MB ({init_cost[128] / req:.0%} and {init_cost[256] / req:.0%} "
        "of the request fee, were every request a cold start). Lambda's own part of a cold start, "
        "before the process runs, is not in this figure."
    )
    w("")

    # --- Peers ---
    cpu_local = side_by_side_cpu(markdown)
    cold_local = side_by_side_coldstart(markdown)
    if {"mcp-lambda+auth", "ts-sdk", "py-sdk"} <= cpu_local.keys():
        base = cpu_local["mcp-lambda+auth"]
        ours = stats["tools/list"]["cpu_ms"] * 1e3
        w("### Against the TypeScript and Python SDKs (an estimate)")
        w("")
        w(
            "The peers were not run through the Lambda runtime. The side-by-side table above measured "
            "their CPU per `tools/list` on the local HTTP path (1 connection): "
            + ", ".join(f"{k} {cpu_local[k]:.1f} µs" for k in ("mcp-lambda+auth", "ts-sdk", "py-sdk"))
            + f". This run's `tools/list` costs {ours:,.0f} µs of CPU on the runtime path, of which "
            f"the `lambda_http` loop alone (hello) is {hello['cpu_ms'] * 1e3:,.0f} µs. Two ways to carry "
            "the peers over: *scaled*, this run's CPU × their local-path ratio (as if the whole "
            "invocation cost scaled with the SDK); *added*, this run's CPU + their local-path "
            "difference (as if only the MCP handling differed). With a CPU-bound invocation "
            "(billed ms = ⌈CPU ÷ the memory's vCPU share⌉, no waits):"
        )
        w("")
        w("| server | local CPU × mcp-lambda+auth | est. CPU µs/inv, scaled / added | 128 MB: USD per 1 M, scaled / added | 256 MB: USD per 1 M, scaled / added |")
        w("|---|---:|---:|---:|---:|")
        fee_dominates = True
        for name in ("mcp-lambda+auth", "ts-sdk", "py-sdk"):
            scaled = ours * cpu_local[name] / base
            added = ours + cpu_local[name] - base
            cells = []
            for mb in MEMORY_MB:
                usd = [req + duration_cost(max(1, math.ceil(c / 1e3 * vcpu_mb / mb)), mb) for c in (scaled, added)]
                fee_dominates = fee_dominates and max(usd) - req < req
                cells.append(f"${usd[0]:.3f} / ${usd[1]:.3f}")
            label = "mcp-lambda (this run)" if name == "mcp-lambda+auth" else name
            w(
                f"| {label} | {cpu_local[name] / base:.2f}× | {scaled:,.0f} / {added:,.0f} | "
                + " | ".join(cells) + " |"
            )
        w("")
        cold = ""
        if {"ts-sdk", "py-sdk"} <= cold_local.keys():
            cold = (
                f" Their cold starts on the local path were {cold_local['ts-sdk']:.0f}× and "
                f"{cold_local['py-sdk']:.0f}× mcp-lambda's (side-by-side table); INIT is billed, so a "
                "cold start costs them as much more."
            )
        w(
            "Both ignore each runtime's own invocation loop (Node's and Python's Lambda runtime "
            "clients, not `node:http`/uvicorn) and the different CPUs (this machine, not Graviton)."
            + (" Per million requests the $0.20 request fee is more than the duration in every row "
               "above; what the SDKs change is the duration part." if fee_dominates else "")
            + cold
        )
        w("")

    # --- Managed Instances ---
    mi = prices["managed_instances"]
    w("### Lambda Managed Instances")
    w("")
    w(
        "On Managed Instances there is no per-GB-s duration charge: you pay the EC2 instances "
        f"(on-demand price, or Savings Plans / Reserved Instances) plus a {mi['management_fee_of_ec2_on_demand_price']:.0%} "
        f"management fee on the on-demand price, and ${mi['usd_per_million_requests']:.2f} per million "
        "requests. One execution environment serves up to `AWS_LAMBDA_MAX_CONCURRENCY` invocations at "
        "once (the basket supports it), so an invocation waiting on DynamoDB does not hold a vCPU: "
        "what a request costs is its CPU, not its wall time. From the CPU per invocation measured "
        "here, the vCPU-hours a million requests need (at 100 % CPU use of the instances):"
    )
    w("")
    w("| operation | CPU µs/inv | vCPU-hours per 1 M | USD per 1 M = $0.20 + DynamoDB + vCPU-h × (EC2 $/vCPU-h × 1.15) ÷ utilisation |")
    w("|---|---:|---:|---|")
    # Managed Instances run tokio's multi-threaded runtime: the one-thread hello is not one of them.
    for op in (o for o in OPS if o != "hello-one-thread"):
        c = stats[op]["cpu_ms"]
        w(
            f"| {names[op]} | {c * 1e3:,.0f} | {c / 1e3 * 1e6 / 3600:.3f} | "
            f"${req + ddb_cost(op):.3f} + {c / 1e3 * 1e6 / 3600:.3f} × (EC2 $/vCPU-h × 1.15) ÷ utilisation |"
        )
    w("")
    conc = [r for r in rows if r["kind"] == "concurrent"]
    if conc:
        n_conc = conc[0]["concurrency"]
        w(
            f"Measured with `AWS_LAMBDA_MAX_CONCURRENCY={n_conc}`: one basket process, "
            f"{conc[0]['invocations']:,} invocations of each operation queued at once (after a "
            "warm-up burst of `tools/list`), on the same 2 shared cores, against DynamoDB Local. "
            "Under it `mcp_lambda::runtime()` builds tokio's multi-threaded runtime; the one-at-a-time "
            "column is the warm run above, on one thread:"
        )
        w("")
        w("| operation | CPU µs/inv, concurrent | CPU µs/inv, one at a time | invocations/s | response p50 ms | response p99 ms |")
        w("|---|---:|---:|---:|---:|---:|")
        for r in conc:
            cpu_us = r["cpu_ticks"] / clk * 1e6 / r["invocations"]
            w(
                f"| {names[r['op']]} | {cpu_us:,.0f} | {stats[r['op']]['cpu_ms'] * 1e3:,.0f} | "
                f"{r['invocations'] / r['wall_ms'] * 1e3:,.0f} | {fmt(pct(r['latency_ms'], 0.5), 3)} | "
                f"{fmt(pct(r['latency_ms'], 0.99), 3)} |"
            )
        w("")
        w(
            f"(CPU within ±{1000 / clk / conc[0]['invocations'] * 1e3:.0f} µs: one tick per burst. "
            "Response times run from the event handed out on `/next` to its answer, with up to "
            f"{n_conc} in flight on the 2 cores, DynamoDB Local's JVM among them.)"
        )
        w("")
        w(
            f"The benchmark's {4 * n_conc} baskets take the adds in turn, so two adds to one basket are "
            f"{4 * n_conc} places apart in the queue and rarely overlap (an overlap would be retried: "
            "one more read and write). The basket's own DynamoDB metric cannot tell here: its "
            "counter is process-wide, so overlapping invocations share what was sent while both ran."
        )
        w("")
    w(
        "Not priced here: the EC2 price depends on the instance type and purchase option, and the "
        "fleet's utilisation (AWS keeps a minimum of instances running) on the traffic."
    )
    return "\n".join(out)


def ab(folder):
    """The before/after of `lambda-runtime.sh` with BENCH_BEFORE: each pass's CPU per invocation
    of every operation, and its ratio to the hello of the same pass, before and after."""
    import glob
    ticks_per_s = os.sysconf("SC_CLK_TCK")
    rows = {}
    for path in sorted(glob.glob(os.path.join(folder, "before-*.jsonl")) + glob.glob(os.path.join(folder, "after-*.jsonl"))):
        side, pass_no = os.path.basename(path)[:-len(".jsonl")].split("-")
        cpu = {}
        for rec in map(json.loads, open(path)):
            if rec.get("kind") != "invoke":
                continue
            ticks, n = cpu.get(rec["op"], (0, 0))
            cpu[rec["op"]] = (ticks + rec["cpu_ticks"], n + rec["invocations"])
        for op, (ticks, n) in cpu.items():
            rows.setdefault(op, {}).setdefault(side, []).append((int(pass_no), ticks / ticks_per_s / n * 1e6, n))
        rows.setdefault("_hello", {}).setdefault(side, []).append((int(pass_no), cpu.get("hello", (0, 1))[0] / ticks_per_s / cpu.get("hello", (0, 1))[1] * 1e6, 0))
    out = ["| operation | side | CPU µs/inv per pass | mean | × hello of the same pass (mean) |", "|---|---|---|---:|---:|"]
    summary = {}
    for op in sorted(k for k in rows if k != "_hello"):
        for side in ("before", "after"):
            passes = sorted(rows[op].get(side, []))
            if not passes:
                continue
            hello = dict((p, c) for p, c, _ in rows["_hello"].get(side, []))
            ratios = [c / hello[p] for p, c, _ in passes if hello.get(p)]
            mean = statistics.mean(c for _, c, _ in passes)
            summary[(op, side)] = (mean, statistics.mean(ratios) if ratios else None)
            out.append(f"| {op} | {side} | {', '.join(f'{c:.0f}' for _, c, _ in passes)} | {mean:.0f} | "
                       f"{summary[(op, side)][1]:.2f}× |" if ratios else f"| {op} | {side} | — | {mean:.0f} | — |")
    out.append("")
    for op in sorted(k for k in rows if k not in ("_hello", "hello")):
        b, a = summary.get((op, "before")), summary.get((op, "after"))
        if b and a:
            out.append(f"- {op}: after ÷ before, CPU per invocation {a[0] / b[0]:.2f}; as a ratio to the hello {a[1]:.2f}× against {b[1]:.2f}×.")
    out += ["", ab_starts(folder)]
    return "\n".join(out)


def ab_starts(folder):
    """The starts of the before/after passes: the basket's INIT (exec → first /next), its CPU by
    INIT's end, its resident memory at INIT's end and after its cold tools/list (when the driver
    records them), medians over every pass, after ÷ before; the hello's INIT beside them."""
    import glob
    starts = {}
    for path in glob.glob(os.path.join(folder, "before-*.jsonl")) + glob.glob(os.path.join(folder, "after-*.jsonl")):
        side = os.path.basename(path).split("-")[0]
        for rec in map(json.loads, open(path)):
            if rec.get("kind") == "init":
                starts.setdefault((rec["function"], side), []).append(rec)
    ms_per_tick = 1e3 / os.sysconf("SC_CLK_TCK")
    fields = [
        ("INIT ms", "init_ms", 1, ".2f"),
        ("CPU by INIT's end (whole 10 ms ticks: the mean), ms", "init_cpu_ticks", ms_per_tick, ".1f"),
        ("first invocation (cold tools/list), ms", "first_duration_ms", 1, ".2f"),
        ("RSS at INIT's end, KiB", "init_rss_kib", 1, ",.0f"),
        ("peak RSS after the cold tools/list, KiB", "first_peak_rss_kib", 1, ",.0f"),
    ]
    out = ["| start, median (min–max), starts | function | before | after | after ÷ before |", "|---|---|---:|---:|---:|"]
    for label, key, scale, f in fields:
        for fn in ("basket", "hello"):
            if fn == "hello" and key != "init_ms":
                continue
            cols = []
            for side in ("before", "after"):
                vs = [r[key] * scale for r in starts.get((fn, side), []) if key in r]
                mid = statistics.mean if key == "init_cpu_ticks" else statistics.median
                cols.append((mid(vs), min(vs), max(vs), len(vs)) if vs else None)
            if not all(cols):
                continue
            (bm, bl, bh, bn), (am, al, ah, an) = cols
            ratio = f"{am / bm:.3f}" if bm else "—"
            out.append(f"| {label} | {fn} | {bm:{f}} ({bl:{f}}–{bh:{f}}), {bn} | {am:{f}} ({al:{f}}–{ah:{f}}), {an} | {ratio} |")
    return "\n".join(out)


def main():
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--ab":
        print(ab(args[1]))
        return
    if not args or len(args) not in (1, 3) or (len(args) == 3 and args[1] != "--write"):
        sys.exit(__doc__)
    target = args[2] if len(args) == 3 else os.path.join(HERE, "..", "BENCHMARKS.md")
    markdown = open(target).read()
    section = report(args[0], markdown)
    if len(args) == 1:
        print(section)
        return
    sections.write_section(target, SECTION, section)


if __name__ == "__main__":
    main()
