#!/usr/bin/env python3
"""The client side of scripts/lambda-tests.sh: plain MCP 2026-07-28 requests, standard library only.

    lambda_client.py discover URL          server/discover answers with serverInfo
    lambda_client.py create-basket URL     tools/call create_basket returns a basket_id
    lambda_client.py progress URL          a streamed tools/call: progress events arrive apart, then the result
    lambda_client.py notification URL      a 202 under streaming comes back at once, with a non-empty body
    lambda_client.py check-event NAME FILE the `cargo lambda invoke` answer for events/NAME.json

Exits non-zero with a message naming what was wrong.
"""
import json
import sys
import time
import urllib.error
import urllib.request

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "lambda-tests", "version": "1.0.0"},
}


def request(url, id_, method, params=None, timeout=120):
    params = dict(params or {})
    params["_meta"] = {**META, **params.get("_meta", {})}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    body = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}).encode()
    return urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=timeout)


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def discover(url):
    with request(url, 1, "server/discover") as r:
        answer = json.load(r)
        if r.status != 200 or answer.get("id") != 1:
            fail(f"status {r.status}: {answer}")
    info = answer["result"].get("_meta", {}).get("io.modelcontextprotocol/serverInfo") or answer["result"].get("serverInfo")
    if not info:
        fail(f"no serverInfo in {answer}")
    print(f"discover: {info}, Cache-Control {r.headers.get('Cache-Control')}")


def create_basket(url):
    with request(url, 2, "tools/call", {"name": "create_basket", "arguments": {}}) as r:
        answer = json.load(r)
    text = answer["result"]["content"][0]["text"]
    if "basket_id" not in text or answer["result"].get("isError"):
        fail(f"no basket: {answer}")
    print(f"create_basket: {text}")


def progress(url):
    started = time.monotonic()
    params = {"name": "count", "arguments": {"to": 3, "delay_ms": 1300}, "_meta": {"progressToken": "p-1"}}
    arrivals = []
    with request(url, 3, "tools/call", params) as r:
        if r.headers.get("Content-Type", "").split(";")[0] != "text/event-stream":
            fail(f"not SSE: {r.status} {dict(r.headers)}")
        if r.headers.get("X-Accel-Buffering") != "no":
            fail(f"no X-Accel-Buffering: no in {dict(r.headers)}")
        for raw in r:
            arrivals.append((time.monotonic() - started, raw.decode().rstrip("\n")))
    events = [(at, json.loads(line[6:])) for at, line in arrivals if line.startswith("data: ")]
    comments = [at for at, line in arrivals if line.startswith(":")]
    progress = [(at, e) for at, e in events if e.get("method") == "notifications/progress"]
    results = [(at, e) for at, e in events if e.get("id") == 3]
    if [e["params"]["progress"] for _, e in progress] != [1, 2, 3]:
        fail(f"progress events: {arrivals}")
    if len(results) != 1 or results[0][1]["result"]["content"][0]["text"] != "counted to 3":
        fail(f"result: {arrivals}")
    spread = results[0][0] - progress[0][0]
    if spread < 2.0:
        fail(f"the first progress event came {spread:.2f} s before the result: buffered, not streamed")
    if len(comments) < 2:
        fail(f"no ':' keep-alive comments while idle: {arrivals}")
    print(f"progress: {len(progress)} events over {spread:.1f} s, {len(comments)} keep-alives, result last")


def notification(url):
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25"}
    started = time.monotonic()
    with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=20) as r:
        data = r.read()
        if r.status != 202:
            fail(f"status {r.status}")
    took = time.monotonic() - started
    if not data or took > 5:
        fail(f"202 with body {data!r} after {took:.1f} s")
    print(f"notification: 202 with a {len(data)}-byte body in {took:.2f} s")


EXPECT = {
    # event: (status, JSON-RPC error code or None, id)
    "function_url_discover": (200, None, 1),
    "rest_v1_tools_call": (200, None, 3),
    "http_v2_tools_list": (200, None, 2),
    "alb_unsupported_version": (400, -32022, 7),
    "function_url_legacy_notification": (202, None, None),
}


def check_event(name, path):
    status, code, id_ = EXPECT[name]
    text = open(path).read()
    answer = json.loads(text[text.index("{"):])
    if answer.get("statusCode") != status:
        fail(f"{name}: statusCode {answer.get('statusCode')}, want {status}: {answer}")
    if id_ is not None:
        body = json.loads(answer["body"])
        if body.get("id") != id_ or (body.get("error") or {}).get("code") != code:
            fail(f"{name}: {body}")
    print(f"{name}: {status}")


def main():
    command, *args = sys.argv[1:]
    try:
        {"discover": discover, "create-basket": create_basket, "progress": progress,
         "notification": notification, "check-event": check_event}[command](*args)
    except urllib.error.HTTPError as e:
        fail(f"HTTP {e.code}: {e.read()[:500]!r}")


if __name__ == "__main__":
    main()
