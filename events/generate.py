#!/usr/bin/env python3
"""Writes the Lambda events in this folder: every case below for every source.

Run with: python3 events/generate.py   (from the repository root; rewrites events/*.json)

The envelopes follow the payloads AWS delivers (see README.md beside this file for where each
shape comes from); only method, path, headers and body change between cases. Fixed ids and
timestamps keep the files stable across runs.
"""
import base64
import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "events", "version": "1.0.0"},
}
CDN_SECRET = "events-cdn-secret-0123456789abcdef"

HOSTS = {
    "function_url": "abcdefghij1234567890klmnopqrstuv.lambda-url.us-east-1.on.aws",
    "rest_v1": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
    "http_v2": "f6g7h8i9j0.execute-api.us-east-1.amazonaws.com",
    "alb": "mcp-alb-1234567890.us-east-1.elb.amazonaws.com",
}


def modern(id_, method, params=None, version=VERSION, meta_version=VERSION):
    params = dict(params or {})
    meta = dict(META)
    meta["io.modelcontextprotocol/protocolVersion"] = meta_version
    params["_meta"] = meta
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": version,
        "Mcp-Method": method,
    }
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    return headers, json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def legacy(id_, method, params=None):
    body = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        body["id"] = id_
    if params is not None:
        body["params"] = params
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return headers, json.dumps(body)


def case_body_too_large():
    # 5 000 bytes of padding: over the 4096-byte cap the tests (and README) configure.
    headers, _ = modern(9, "tools/list")
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list",
                       "params": {"_meta": META, "padding": "x" * 5000}})
    return headers, body


def without(headers, name):
    return {k: v for k, v in headers.items() if k.lower() != name.lower()}


def with_header(pair, name, value):
    headers, body = pair
    headers = without(headers, name)
    headers[name] = value
    return headers, body


# case -> (method, path, (headers, body) or None, base64?)
CASES = {
    "discover": ("POST", "/mcp", modern(1, "server/discover"), False),
    "tools_list": ("POST", "/mcp", modern(2, "tools/list"), False),
    "tools_call": ("POST", "/mcp", modern(3, "tools/call", {"name": "create_basket", "arguments": {}}), False),
    "tools_call_base64": ("POST", "/mcp", modern(4, "tools/call", {"name": "create_basket", "arguments": {}}), True),
    "parse_error": ("POST", "/mcp", (modern(5, "tools/list")[0], '{"jsonrpc":"2.0","id":5,"method":'), False),
    "batch": ("POST", "/mcp", (modern(5, "tools/list")[0], "[" + modern(5, "tools/list")[1] + "]"), False),
    "missing_version_header": ("POST", "/mcp", (without(modern(6, "tools/list")[0], "MCP-Protocol-Version"), modern(6, "tools/list")[1]), False),
    "unsupported_version": ("POST", "/mcp", modern(7, "tools/list", version="2099-01-01", meta_version="2099-01-01"), False),
    "initialize_modern": ("POST", "/mcp", modern(8, "initialize", {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "events", "version": "1.0.0"}}), False),
    "body_too_large": ("POST", "/mcp", case_body_too_large(), False),
    "unsupported_media_type": ("POST", "/mcp", with_header(modern(10, "tools/list"), "Content-Type", "text/plain"), False),
    "legacy_initialize": ("POST", "/mcp", legacy(11, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "events", "version": "1.0.0"}}), False),
    "legacy_notification": ("POST", "/mcp", with_header(legacy(None, "notifications/initialized"), "MCP-Protocol-Version", "2025-11-25"), False),
    "get_mcp": ("GET", "/mcp", ({"Accept": "text/event-stream"}, None), False),
    "healthz": ("GET", "/healthz", ({"Accept": "*/*"}, None), False),
    # RFC 9728 metadata; served when auth is on (the tests configure an issuer for this case).
    "protected_resource_metadata": ("GET", "/.well-known/oauth-protected-resource/mcp", ({"Accept": "application/json"}, None), False),
}

# Cases only one source needs.
EXTRA = {
    # CloudFront in front of the Function URL adds the secret origin header.
    ("function_url", "cdn_secret_ok"): ("POST", "/mcp", with_header(modern(1, "server/discover"), "x-origin-secret", CDN_SECRET), False),
    ("function_url", "cdn_secret_wrong"): ("POST", "/mcp", with_header(modern(1, "server/discover"), "x-origin-secret", CDN_SECRET[:-1] + "X"), False),
    ("function_url", "cdn_secret_missing"): ("POST", "/mcp", modern(1, "server/discover"), False),
    # An HTTP API with a named stage: rawPath carries the stage.
    ("http_v2", "named_stage_discover"): ("POST", "/prod/mcp", modern(1, "server/discover"), False),
}

CLOUDFRONT_HEADERS = {
    "via": "2.0 3f5b1a0e0c8f4e2b9d7a6c5b4a3f2e1d.cloudfront.net (CloudFront)",
    "x-amz-cf-id": "k2Zb3Yf1Tq0lJ0nX8yHcVhM5pQ7sW9eR4uD6iO2aG1bN3mK5jL7hF==",
    "cloudfront-forwarded-proto": "https",
    "cloudfront-viewer-country": "DE",
}


def encode(body, b64):
    if body is None:
        return None
    return base64.b64encode(body.encode()).decode() if b64 else body


def common_headers(source, headers, body, cdn):
    out = dict(headers)
    out.update({
        "Host": HOSTS[source],
        "User-Agent": "mcp-events/1.0",
        "X-Amzn-Trace-Id": "Root=1-674a1b2c-0123456789abcdef01234567",
        "X-Forwarded-For": "203.0.113.7",
        "X-Forwarded-Port": "443",
        "X-Forwarded-Proto": "https",
    })
    if body is not None:
        out["Content-Length"] = str(len(body.encode()))
    if cdn:
        out.update(CLOUDFRONT_HEADERS)
    return out


def function_url(method, path, headers, body, b64, cdn):
    h = {k.lower(): v for k, v in common_headers("function_url", headers, body, cdn).items()}
    h["x-amzn-tls-version"] = "TLSv1.3"
    h["x-amzn-tls-cipher-suite"] = "TLS_AES_128_GCM_SHA256"
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": "",
        "headers": h,
        "requestContext": {
            "accountId": "anonymous",
            "apiId": HOSTS["function_url"].split(".")[0],
            "domainName": HOSTS["function_url"],
            "domainPrefix": HOSTS["function_url"].split(".")[0],
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "mcp-events/1.0"},
            "requestId": "6f3b2c1d-0a9e-4f8b-b7c6-d5e4f3a2b1c0",
            "routeKey": "$default",
            "stage": "$default",
            "time": "29/Nov/2026:14:00:00 +0000",
            "timeEpoch": 1795960800000,
        },
        "isBase64Encoded": b64,
    }
    if body is not None:
        event["body"] = encode(body, b64)
    return event


def http_v2(method, path, headers, body, b64, cdn):
    h = {k.lower(): v for k, v in common_headers("http_v2", headers, body, cdn).items()}
    stage = "prod" if path.startswith("/prod/") else "$default"
    event = {
        "version": "2.0",
        "routeKey": "$default" if stage == "$default" else "ANY /{proxy+}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": h,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": HOSTS["http_v2"].split(".")[0],
            "domainName": HOSTS["http_v2"],
            "domainPrefix": HOSTS["http_v2"].split(".")[0],
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.7", "userAgent": "mcp-events/1.0"},
            "requestId": "Q2xhdWRlRXZlbnRzMQ=",
            "routeKey": "$default" if stage == "$default" else "ANY /{proxy+}",
            "stage": stage,
            "time": "29/Nov/2026:14:00:00 +0000",
            "timeEpoch": 1795960800000,
        },
        "isBase64Encoded": b64,
    }
    if stage != "$default":
        event["pathParameters"] = {"proxy": path.split("/", 2)[2]}
    if body is not None:
        event["body"] = encode(body, b64)
    return event


def rest_v1(method, path, headers, body, b64, cdn):
    # REST APIs keep the client's header case and add CloudFront's headers (edge endpoints).
    h = common_headers("rest_v1", headers, body, True)
    h = {("CloudFront-" + k[len("cloudfront-"):].title() if k.startswith("cloudfront-") else
          "Via" if k == "via" else "X-Amz-Cf-Id" if k == "x-amz-cf-id" else k): v for k, v in h.items()}
    event = {
        "resource": "/{proxy+}",
        "path": path,
        "httpMethod": method,
        "headers": h,
        "multiValueHeaders": {k: [v] for k, v in h.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "resourceId": "abc123",
            "resourcePath": "/{proxy+}",
            "httpMethod": method,
            "extendedRequestId": "BRAkzGJqIAMEYfQ=",
            "requestTime": "29/Nov/2026:14:00:00 +0000",
            "path": "/prod" + path,
            "accountId": "123456789012",
            "protocol": "HTTP/1.1",
            "stage": "prod",
            "domainPrefix": HOSTS["rest_v1"].split(".")[0],
            "requestTimeEpoch": 1795960800000,
            "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
            "identity": {
                "cognitoIdentityPoolId": None, "accountId": None, "cognitoIdentityId": None,
                "caller": None, "sourceIp": "203.0.113.7", "principalOrgId": None,
                "accessKey": None, "cognitoAuthenticationType": None,
                "cognitoAuthenticationProvider": None, "userArn": None,
                "userAgent": "mcp-events/1.0", "user": None,
            },
            "domainName": HOSTS["rest_v1"],
            "apiId": HOSTS["rest_v1"].split(".")[0],
        },
        "body": encode(body, b64),
        "isBase64Encoded": b64,
    }
    return event


def alb(method, path, headers, body, b64, cdn):
    h = {k.lower(): v for k, v in common_headers("alb", headers, body, cdn).items()}
    return {
        "requestContext": {"elb": {"targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/mcp-lambda/6d0ecf831eec9f09"}},
        "httpMethod": method,
        "path": path,
        "queryStringParameters": {},
        "headers": h,
        "body": encode(body, b64) if body is not None else "",
        "isBase64Encoded": b64,
    }


SOURCES = {"function_url": function_url, "rest_v1": rest_v1, "http_v2": http_v2, "alb": alb}


def main():
    for old in HERE.glob("*.json"):
        old.unlink()
    written = 0
    jobs = [(s, c, spec) for s in SOURCES for c, spec in CASES.items()]
    jobs += [(s, c, spec) for (s, c), spec in EXTRA.items()]
    for source, case, (method, path, (headers, body), b64) in jobs:
        cdn = case.startswith("cdn_")
        event = SOURCES[source](method, path, headers, body, b64, cdn)
        (HERE / f"{source}_{case}.json").write_text(json.dumps(event, indent=2) + "\n")
        written += 1
    print(f"wrote {written} events")


if __name__ == "__main__":
    main()
