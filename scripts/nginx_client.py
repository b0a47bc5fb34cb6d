#!/usr/bin/env python3
"""The client side of scripts/nginx-tests.sh: plain MCP 2026-07-28 requests, standard library only.

    nginx_client.py call URL HOST TOOL ARGS_JSON   one tools/call; prints its structuredContent
    nginx_client.py lists URL HOST N               N tools/list calls; all must answer
    nginx_client.py adds URL HOST STOP OUT MIN     two loops of add_item calls, back to back, each
                                                   on its own basket, until the file STOP exists
                                                   and at least MIN calls were made; writes the
                                                   counts and every failure to OUT (JSON)
    nginx_client.py tally OUT URL HOST             reads OUT back: zero failures, and each basket
                                                   holds exactly its successful adds
    nginx_client.py listen-probe URL HOST          prints "unsupported" if subscriptions/listen
                                                   answers -32601, else "supported"
    nginx_client.py listen URL HOST URI OUT        a listen stream on resource URI: appends each
                                                   message to OUT as "<unix time> <json>", then
                                                   "END" when the stream ends (or "ERROR ...")

HOST is sent as the Host header (the servers check it against MCP_ALLOWED_HOSTS). Exits non-zero
with a message naming what was wrong.
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


class CallFailed(Exception):
    pass


def rpc(url, host, method, params=None, name=None, timeout=30):
    """One request; the JSON-RPC response (the last SSE data line for a stream)."""
    params = dict(params or {})
    params["_meta"] = META
    headers = {
        "Host": host,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": method,
    }
    if name:
        headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    request = urllib.request.Request(url, body, headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
            sse = response.headers.get("Content-Type", "").startswith("text/event-stream")
    except urllib.error.HTTPError as error:
        raise CallFailed(f"{method}: HTTP {error.code}: {error.read().decode()[:300]}")
    except OSError as error:
        raise CallFailed(f"{method}: {error!r}")
    if sse:
        data = [l[5:].strip() for l in text.splitlines() if l.startswith("data:") and l[5:].strip()]
        if not data:
            raise CallFailed(f"{method}: no data in the SSE answer: {text[:300]}")
        text = data[-1]
    return json.loads(text)


def call(url, host, tool, arguments):
    answer = rpc(url, host, "tools/call", {"name": tool, "arguments": arguments}, name=tool)
    if "error" in answer:
        raise CallFailed(f"{tool}: JSON-RPC error {answer['error']}")
    result = answer["result"]
    if result.get("isError"):
        raise CallFailed(f"{tool}: tool error {result['content'][0]['text']}")
    return result["structuredContent"]


def adds(url, host, stop, out, minimum):
    minimum = int(minimum)
    report = {"ok": 0, "failed": 0, "failures": [], "baskets": []}
    lock = threading.Lock()

    def loop():
        basket = call(url, host, "create_basket", {})["basket_id"]
        mine = {"basket_id": basket, "ok": 0}
        with lock:
            report["baskets"].append(mine)
        made = 0
        while made < minimum // 2 or not os.path.exists(stop):
            made += 1
            try:
                # Spread over 50 SKUs: one SKU caps at 1000 units, which a fast machine reaches
                # while the two processes restart.
                sku = f"sku-{made % 50}"
                call(url, host, "add_item", {"basket_id": basket, "sku": sku, "quantity": 1})
                with lock:
                    mine["ok"] += 1
                    report["ok"] += 1
            except CallFailed as error:
                with lock:
                    report["failed"] += 1
                    report["failures"].append(f"{time.strftime('%H:%M:%S')} {error}")

    threads = [threading.Thread(target=loop) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with open(out, "w") as f:
        json.dump(report, f, indent=1)
    print(f"adds: {report['ok']} succeeded, {report['failed']} failed")


def tally(out, url, host):
    report = json.load(open(out))
    problems = list(report["failures"])
    if report["ok"] + report["failed"] < 200:
        problems.append(f"only {report['ok'] + report['failed']} calls were made (200 expected)")
    for basket in report["baskets"]:
        view = call(url, host, "view_basket", {"basket_id": basket["basket_id"]})
        held = sum(line["quantity"] for line in view["items"])
        if held != basket["ok"]:
            problems.append(f"basket {basket['basket_id']} holds {held} items, {basket['ok']} adds succeeded")
    if problems:
        sys.exit("\n".join(problems))
    print(f"tally: {report['ok']} adds, all in their baskets")


def listen(url, host, uri, out):
    params = {"_meta": META, "notifications": {"resourceSubscriptions": [uri]}}
    body = json.dumps({"jsonrpc": "2.0", "id": "nginx-listen", "method": "subscriptions/listen",
                       "params": params}).encode()
    headers = {
        "Host": host,
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "subscriptions/listen",
    }
    with open(out, "a", buffering=1) as log:
        try:
            # Keep-alive comments come every 15 s; a minute of silence is a failure.
            with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=60) as response:
                data = []
                for raw in response:
                    line = raw.decode().rstrip("\r\n")
                    if line.startswith("data:"):
                        data.append(line[5:].strip())
                    elif not line and data:
                        log.write(f"{time.time():.3f} {json.dumps(json.loads(chr(10).join(data)))}\n")
                        data = []
            log.write("END\n")
        except Exception as error:  # noqa: BLE001 - any failure is reported in OUT
            log.write(f"ERROR {error!r}\n")


def listen_probe(url, host):
    """"unsupported" for -32601, "supported" for an event stream (closed at once)."""
    params = {"_meta": META, "notifications": {"toolsListChanged": True}}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                       "params": params}).encode()
    headers = {"Host": host, "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": VERSION, "Mcp-Method": "subscriptions/listen"}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=10) as response:
            if response.headers.get("Content-Type", "").startswith("text/event-stream"):
                return "supported"
            answer = json.loads(response.read())
    except urllib.error.HTTPError as error:
        answer = json.loads(error.read() or b"{}")
    code = answer.get("error", {}).get("code")
    return "unsupported" if code == -32601 else f"answered {answer}"


def main(argv):
    command, args = argv[1], argv[2:]
    try:
        if command == "call":
            url, host, tool, arguments = args
            print(json.dumps(call(url, host, tool, json.loads(arguments))))
        elif command == "lists":
            url, host, n = args
            for _ in range(int(n)):
                answer = rpc(url, host, "tools/list")
                if "error" in answer or not answer["result"]["tools"]:
                    sys.exit(f"tools/list: {answer}")
        elif command == "adds":
            adds(*args)
        elif command == "tally":
            tally(*args)
        elif command == "listen":
            listen(*args)
        elif command == "listen-probe":
            url, host = args
            print(listen_probe(url, host))
        else:
            sys.exit(f"unknown command {command}")
    except CallFailed as error:
        sys.exit(str(error))


if __name__ == "__main__":
    main(sys.argv)
