#!/usr/bin/env bash
# The deployment checks, offline, no AWS account: lints the SAM template, builds the function
# and runs it under cargo-lambda's Lambda emulator (`cargo lambda watch --only-lambda-apis`) on
# loopback, drives it over HTTP and with `cargo lambda invoke`, then stops what it started. Ends with "lambda: N passed, M failed".
#
#   scripts/lambda-tests.sh          (scripts/test.sh calls it)
#
# Installs into $MCP_WORK (default ~/.cache/mcp-lambda-work), from PyPI:
#   venv-lambda  cargo-lambda 1.9.2     venv-sam  aws-sam-cli 1.170.0, cfn-lint 1.58.0
# Builds x86_64 only: the arm64 std comes from outside the package registries.
set -uo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/mcp-lambda-target}"
export MCP_WORK="${MCP_WORK:-$HOME/.cache/mcp-lambda-work}"
export AWS_REGION=us-east-1 SAM_CLI_TELEMETRY=0
mkdir -p "$MCP_WORK"
LOGS="$MCP_WORK/logs/lambda"
rm -rf "$LOGS" && mkdir -p "$LOGS"

passed=0
failed=0
failures=()
pass() { echo "  ok   $1"; passed=$((passed + 1)); }
fail() { echo "  FAIL $1${2:+: $2}"; failed=$((failed + 1)); failures+=("$1"); }
check() { # check NAME CMD... : one check, output in $LOGS/NAME.log
  if "${@:2}" >"$LOGS/$1.log" 2>&1; then pass "$1"; else fail "$1" "see $LOGS/$1.log"; tail -n 20 "$LOGS/$1.log"; fi
}

# --- tools from PyPI ----------------------------------------------------------
echo "==> tools (cargo-lambda, aws-sam-cli, cfn-lint from PyPI)"
TOOLS_LOG="$LOGS/pip.log"
source scripts/tools.sh
install_deploy_tools
check tools-installed bash -c "cargo lambda --version && '$SAM' --version && '$CFN_LINT' --version"

# --- the template ---------------------------------------------------------------
echo "==> template"
# template-managed-instances.yaml is generated from template.yaml (scripts/templates.py).
check templates-generated python3 scripts/templates.py --check
templates=(template.yaml template-managed-instances.yaml)
for f in infra/*.yaml infra/*.yml; do [ -e "$f" ] && templates+=("$f"); done
check cfn-lint "$CFN_LINT" "${templates[@]}"
sam_metadata_existed=0; [ -e "$HOME/.aws-sam/metadata.json" ] && sam_metadata_existed=1
check sam-validate-lint "$SAM" validate --lint --template template.yaml
check sam-validate-lint-managed-instances "$SAM" validate --lint --template template-managed-instances.yaml
[ "$sam_metadata_existed" = 1 ] || rm -f "$HOME/.aws-sam/metadata.json"
# What no lint can see: the role grants exactly the DynamoDB actions the handle store and the
# change feed send (a listen poll is one BatchGetItem), and a listen stream's limit is the
# function timeout (the stream ends 3 s before the invocation's deadline) except behind a
# buffered REST integration, which gives up after 29 s, an HTTP API (30 s), or a buffered answer
# behind CloudFront (60 s origin read timeout).
check template-listen "$MCP_WORK/venv-sam/bin/python" - <<'PY'
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
res = template["Resources"]
statements = res["McpRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
items = [s for s in statements if isinstance(s, dict) and s.get("Sid") == "HandlesItems"][0]
assert sorted(items["Action"]) == ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"], items["Action"]
env = res["McpFunction"]["Properties"]["Environment"]["Variables"]
limit = env["MCP_LISTEN_MAX_SECS"]
assert limit == {"Fn::If": ["ApiGatewayBuffered", 25, {"Fn::If": ["BufferedBehindCloudFront", 55, {"Ref": "Timeout"}]}]}, limit
assert template["Conditions"]["BufferedBehindCloudFront"] == {"Fn::And": [{"Condition": "UseCloudFront"}, {"Fn::Not": [{"Condition": "IsStreaming"}]}]}
assert env["MCP_LISTEN_POLL_MS"] == {"Ref": "ListenPollMs"}
assert template["Conditions"]["ApiGatewayBuffered"] == {"Fn::Or": [{"Fn::And": [{"Condition": "UseRestApi"}, {"Fn::Not": [{"Condition": "IsStreaming"}]}]}, {"Condition": "UseHttpApi"}]}, \
    "a listen behind a buffered REST integration (29 s) or any HTTP API (30 s) must end within 25 s"
keep_alive_max = template["Parameters"]["SseKeepAliveSecs"].get("MaxValue", 10**9)
assert keep_alive_max < 60, f"keep-alives must stay under CloudFront's 60 s OriginReadTimeout: MaxValue {keep_alive_max}"
assert template["Parameters"]["Timeout"]["MaxValue"] <= 900
# Task rounds: the role may invoke this one function and nothing else, and send failed rounds to
# its own queue; rounds older than their token (15 min) are not retried.
self_invoke = res["SelfInvokePolicy"]["Properties"]
assert self_invoke["Roles"] == [{"Ref": "McpRole"}], self_invoke["Roles"]
by_sid = {s["Sid"]: s for s in self_invoke["PolicyDocument"]["Statement"]}
assert sorted(by_sid) == ["FailedRoundsQueue", "InvokeSelfForTaskRounds"], sorted(by_sid)
assert by_sid["InvokeSelfForTaskRounds"]["Action"] == "lambda:InvokeFunction"
assert by_sid["InvokeSelfForTaskRounds"]["Resource"] == {"Fn::GetAtt": ["McpFunction", "Arn"]}
assert by_sid["FailedRoundsQueue"]["Action"] == "sqs:SendMessage"
assert by_sid["FailedRoundsQueue"]["Resource"] == {"Fn::GetAtt": ["FailedRoundsQueue", "Arn"]}
invoke_config = res["TaskRoundInvokeConfig"]["Properties"]
assert invoke_config["FunctionName"] == {"Ref": "McpFunction"}
assert invoke_config["MaximumEventAgeInSeconds"] <= 900
assert invoke_config["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": ["FailedRoundsQueue", "Arn"]}
assert not any("lambda:" in str(s.get("Action")) for s in statements if isinstance(s, dict)), "self-invoke belongs in SelfInvokePolicy only"
print("role actions, self-invoke scope, listen limit and keep-alive bounds as documented")
PY
# CloudFront and what a stack update may drop: the documents' cache key carries Origin (their
# CORS headers depend on it; a header in the cache key is the one way it reaches the origin),
# every entry point behind CloudFront needs the origin secret (each stays public at its own URL),
# and the handles table (callers' state) and the log group survive deletion and replacement.
check template-cloudfront-and-retention "$MCP_WORK/venv-sam/bin/python" - <<'PY'
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
res = template["Resources"]
headers = res["DocumentsCachePolicy"]["Properties"]["CachePolicyConfig"]["ParametersInCacheKeyAndForwardedToOrigin"]["HeadersConfig"]
assert headers.get("HeaderBehavior") == "whitelist" and "Origin" in headers.get("Headers", []), \
    f"the documents' cache policy must key on (and so forward) Origin, or their CORS headers are lost: {headers}"
behaviours = res["McpDistribution"]["Properties"]["DistributionConfig"]["CacheBehaviors"]
# A behaviour present only under a condition (the built-in authorization server's) is checked as
# it deploys when present.
behaviours = [b["Fn::If"][1] if "Fn::If" in b else b for b in behaviours]
for b in behaviours:
    assert b.get("CachePolicyId") == {"Ref": "DocumentsCachePolicy"} or "OriginRequestPolicyId" in b, \
        f"{b['PathPattern']}: neither the Origin-keyed cache policy nor an origin request policy"
rules = template["Rules"]
secret_rules = [r for r in rules.values()
                if any(a.get("Assert") == {"Fn::Not": [{"Fn::Equals": [{"Ref": "OriginSecret"}, ""]}]} for a in r["Assertions"])]
assert secret_rules, "no rule requires OriginSecret"
assert any(r.get("RuleCondition") == {"Fn::Equals": [{"Ref": "CloudFront"}, "true"]} for r in secret_rules), \
    "the origin secret must be required for every entry point behind CloudFront, not only a Function URL: " + str([r.get("RuleCondition") for r in secret_rules])
for name in ("HandlesTable", "McpLogGroup"):
    for policy in ("DeletionPolicy", "UpdateReplacePolicy"):
        assert res[name].get(policy) == "Retain", f"{name} needs {policy}: Retain, or a stack deletion or replacement drops it"
print("documents keyed on Origin, origin secret behind CloudFront for every entry point, table and logs retained")
PY
# The REST entry: every stack update reaches stage prod (a fixed AWS::ApiGateway::Deployment is a
# snapshot that never changes; SAM's hash of the definition is taken before parameters resolve,
# so only AlwaysDeploy redeploys a flipped Streaming), the integration waits as long as a stream
# may last (the default 29 s cut streams), and auth is refused on the bare execute-api URL (the
# challenge is renamed, the RFC 9728 fallback URL is outside the stage).
check template-rest "$MCP_WORK/venv-sam/bin/python" - <<'PY'
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
res = template["Resources"]
raw = [k for k, v in res.items() if v["Type"] == "AWS::ApiGateway::Deployment"]
assert not raw, f"a fixed AWS::ApiGateway::Deployment never redeploys stage prod after a method change: {raw}"
api = res["McpRestApi"]
assert api["Type"] == "AWS::Serverless::Api", api["Type"]
assert api["Properties"].get("AlwaysDeploy") is True, "without AlwaysDeploy a Streaming flip never reaches stage prod"
assert api["Properties"]["StageName"] == "prod"
integration = api["Properties"]["DefinitionBody"]["paths"]["/{proxy+}"]["x-amazon-apigateway-any-method"]["x-amazon-apigateway-integration"]
assert integration["type"] == "aws_proxy"
assert integration["responseTransferMode"] == {"Fn::If": ["IsStreaming", "STREAM", "BUFFERED"]}, integration["responseTransferMode"]
timeout = integration.get("timeoutInMillis")
assert isinstance(timeout, dict) and timeout.get("Fn::If", [None])[0] == "IsStreaming", f"no timeoutInMillis per mode: the default 29 s cuts streams: {timeout}"
streamed, buffered = timeout["Fn::If"][1], timeout["Fn::If"][2]
function_max_ms = template["Parameters"]["Timeout"]["MaxValue"] * 1000
assert function_max_ms <= streamed <= 900000, f"streamed integration timeout {streamed} ms must cover Timeout up to {function_max_ms} ms, within the documented 15 min"
assert 50 <= buffered <= 29000, f"buffered integration timeout {buffered} ms is outside the default quota (50 ms to 29 s)"
rule = template["Rules"]["RestApiAuthNeedsCloudFront"]
assert rule["RuleCondition"] == {"Fn::And": [{"Fn::Equals": [{"Ref": "EntryPoint"}, "ApiGatewayRest"]}, {"Fn::Or": [
    {"Fn::Not": [{"Fn::Equals": [{"Ref": "AuthIssuer"}, ""]}]}, {"Fn::Equals": [{"Ref": "CreateCognitoUserPool"}, "true"]},
    {"Fn::Not": [{"Fn::Equals": [{"Ref": "BuiltInAuthorizationServer"}, "none"]}]}]}]}, rule["RuleCondition"]
assert rule["Assertions"][0]["Assert"] == {"Fn::Equals": [{"Ref": "CloudFront"}, "true"]}
origin = res["McpDistribution"]["Properties"]["DistributionConfig"]["Origins"][0]
assert origin["OriginPath"] == {"Fn::If": ["UseRestApi", "/prod", {"Ref": "AWS::NoValue"}]}, "behind CloudFront the host root must map into stage prod"
print("REST: redeployed on every update, integration timeouts per mode, auth only behind CloudFront")
PY
# The HTTP API entry: payload 2.0 on the $default route and stage (the function routes every path,
# and rawPath then has no stage prefix), 30 s at most (the quota), never streamed (HTTP APIs
# cannot: a rule refuses Streaming=true and the function is told false anyway), invoked only by
# this API, and CloudFront's origin is its execute-api host with no origin path.
check template-http-api "$MCP_WORK/venv-sam/bin/python" - <<'PY'
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
res = template["Resources"]
assert "HttpApi" in template["Parameters"]["EntryPoint"]["AllowedValues"]
integration = res["McpHttpIntegration"]["Properties"]
assert integration["IntegrationType"] == "AWS_PROXY" and integration["PayloadFormatVersion"] == "2.0", integration
assert integration["IntegrationUri"] == {"Fn::GetAtt": ["McpFunction", "Arn"]}
assert 50 <= integration["TimeoutInMillis"] <= 30000, f"HTTP API integrations wait 30 s at most: {integration['TimeoutInMillis']}"
assert res["McpHttpRoute"]["Properties"]["RouteKey"] == "$default", "the function routes every path itself: $default route"
stage = res["McpHttpStage"]["Properties"]
assert stage["StageName"] == "$default" and stage["AutoDeploy"] is True, "a named stage prefixes rawPath; without AutoDeploy changes never reach the stage"
permission = res["McpHttpPermission"]["Properties"]
assert permission["Principal"] == "apigateway.amazonaws.com" and permission["Action"] == "lambda:InvokeFunction"
assert permission["SourceArn"] == {"Fn::Sub": "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${McpHttpApi}/*"}, permission["SourceArn"]
for name in ("McpHttpApi", "McpHttpIntegration", "McpHttpRoute", "McpHttpStage", "McpHttpPermission"):
    assert res[name].get("Condition") == "UseHttpApi", f"{name} must exist only with EntryPoint=HttpApi"
env = res["McpFunction"]["Properties"]["Environment"]["Variables"]
assert env["MCP_LAMBDA_STREAMING"] == {"Fn::If": ["UseHttpApi", "false", {"Ref": "Streaming"}]}, "the function must never stream behind an HTTP API"
rule = template["Rules"]["HttpApiCannotStream"]
assert rule["RuleCondition"] == {"Fn::Equals": [{"Ref": "EntryPoint"}, "HttpApi"]}
assert rule["Assertions"][0]["Assert"] == {"Fn::Equals": [{"Ref": "Streaming"}, "false"]}
origin = res["McpDistribution"]["Properties"]["DistributionConfig"]["Origins"][0]
assert "${McpHttpApi}.execute-api.${AWS::Region}.amazonaws.com" in str(origin["DomainName"]), origin["DomainName"]
outputs = str(template["Outputs"]["McpUrl"]["Value"])
assert "https://${McpHttpApi}.execute-api.${AWS::Region}.amazonaws.com/mcp" in outputs, outputs
print("HTTP API: payload 2.0 on $default, 30 s, never streamed, invoked by this API only, behind CloudFront as REST is")
PY
# Operations: the function is told whether and where to write its metrics; the dashboard and the
# alarms name only metrics and dimensions the function writes (a typo is a widget or an alarm that
# never sees data), alarms treat no data as fine and notify only a given topic; the spend caps and
# X-Ray reach the function, both API stages and the role (X-Ray's two write actions, only when
# tracing is Active).
check template-operations "$MCP_WORK/venv-sam/bin/python" - <<'PY'
import json, re
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
res, params, conds = template["Resources"], template["Parameters"], template["Conditions"]
EMF = {"Requests", "Duration", "Errors", "ClientErrors", "AuthRefusals", "ColdStart", "DynamoDbRequests", "DynamoDbLatency", "DynamoDbThrottles"}
DIMENSIONS = {"Function", "Method", "Name"}
# What the function writes (src/metrics/record.rs) is what the dashboard and alarms read.
record = open("src/metrics/record.rs").read()
written = set(re.findall(r'\("(\w+)", "(?:Count|Milliseconds)"\)', record))
assert written == EMF, f"the function writes {sorted(written)}, the template expects {sorted(EMF)}"
dimension_sets = '&[&["Function"],&["Function","Method"],&["Function","Method","Name"]]'
assert dimension_sets in re.sub(r",\]", "]", re.sub(r"\s+", "", record)), "the dimension sets changed in src/metrics/record.rs (DIMENSION_SETS)"
# A task round Lambda could not run is alarmed on.
failed = res["FailedRoundsAlarm"]["Properties"]
assert failed["Namespace"] == "AWS/SQS" and failed["MetricName"] == "ApproximateNumberOfMessagesVisible", failed
assert failed["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["FailedRoundsQueue", "QueueName"]}}], failed["Dimensions"]
function = res["McpFunction"]["Properties"]
env = function["Environment"]["Variables"]
assert env["MCP_METRICS"] == {"Ref": "Metrics"} and env["MCP_METRICS_NAMESPACE"] == {"Ref": "MetricsNamespace"}, "the function is not told MCP_METRICS / MCP_METRICS_NAMESPACE"
assert params["Metrics"]["Default"] == "on" and sorted(params["Metrics"]["AllowedValues"]) == ["off", "on"]
assert params["MetricsNamespace"]["Default"] == "mcp-lambda"
# The dashboard: valid JSON once substituted, our namespace's metrics all among what the function writes.
body = res["McpDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
values = {"AWS::Region": "us-east-1", "MetricsNamespace": "mcp-lambda", "McpFunction": "fn", "HandlesTable": "table"}
unknown = set(re.findall(r"\$\{([^}]+)\}", body)) - set(values)
assert not unknown, f"dashboard substitutes unknown names: {unknown}"
dashboard = json.loads(re.sub(r"\$\{([^}]+)\}", lambda m: values[m.group(1)], body))
seen = set()
for widget in dashboard["widgets"]:
    for line in widget["properties"]["metrics"]:
        if isinstance(line[0], dict):
            expression = line[0]["expression"]
            for name in re.findall(r'MetricName=\\?"(\w+)"', expression):
                seen.add(name)
            if '"mcp-lambda"' in expression:
                schema = re.search(r"\{([^}]*)\}", expression).group(1).split(",")[1:]
                assert set(schema) <= DIMENSIONS, f"dashboard SEARCH over dimensions the function does not write: {schema}"
                assert re.search(r"MetricName=\"(\w+)\"", expression).group(1) in EMF, expression
        elif line[0] == "mcp-lambda":
            assert line[1] in EMF, f"dashboard shows {line[1]}, which the function does not write"
            assert set(line[2:-1:2] if isinstance(line[-1], dict) else line[2::2]) <= DIMENSIONS, line
            seen.add(line[1])
        else:
            seen.add(line[1])
for wanted in ("Requests", "Errors", "ClientErrors", "AuthRefusals", "Duration", "ColdStart", "DynamoDbLatency", "DynamoDbThrottles", "Throttles", "ThrottledRequests"):
    assert wanted in seen, f"the dashboard has no {wanted}"
# The alarms.
alarms = {k: v for k, v in res.items() if v["Type"] == "AWS::CloudWatch::Alarm"}
assert set(alarms) == {"ErrorRateAlarm", "LatencyP99Alarm", "ThrottlingAlarm", "FailedRoundsAlarm"}, sorted(alarms)
for name, alarm in alarms.items():
    p = alarm["Properties"]
    assert p["TreatMissingData"] == "notBreaching", f"{name}: no traffic must not alarm"
    for actions in ("AlarmActions", "OKActions"):
        assert p[actions] == {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}, f"{name}.{actions}: {p.get(actions)}"
    for query in p.get("Metrics", []):
        query = query["Fn::If"][1] if "Fn::If" in query else query
        metric = query.get("MetricStat", {}).get("Metric")
        if metric and metric["Namespace"] == {"Ref": "MetricsNamespace"}:
            assert metric["MetricName"] in EMF, f"{name} watches {metric['MetricName']}, which the function does not write"
            assert [d["Name"] for d in metric["Dimensions"]] == ["Function"] and metric["Dimensions"][0]["Value"] == {"Ref": "McpFunction"}, f"{name}: [Function] dimension set"
error_rate = alarms["ErrorRateAlarm"]["Properties"]
assert error_rate["Threshold"] == {"Ref": "ErrorRateThresholdPercent"} and params["ErrorRateThresholdPercent"]["Default"] == 5
ids = {q["Id"]: q for q in error_rate["Metrics"]}
assert ids["errors"]["MetricStat"]["Metric"]["MetricName"] == "Errors" and ids["requests"]["MetricStat"]["Metric"]["MetricName"] == "Requests"
assert all(ids[i]["MetricStat"]["Period"] == 300 for i in ("errors", "requests")), "error rate over 5 minutes"
assert ids["error_rate"]["Expression"].replace(" ", "") == "100*errors/requests" and ids["error_rate"]["ReturnData"] is True
latency = alarms["LatencyP99Alarm"]["Properties"]
assert latency["ExtendedStatistic"] == "p99" and latency["MetricName"] == "Duration" and latency["Threshold"] == {"Ref": "LatencyP99ThresholdMs"}
assert [d["Name"] for d in latency["Dimensions"]] == ["Function"], "p99 on the [Function] dimension set"
throttles = str(alarms["ThrottlingAlarm"]["Properties"]["Metrics"])
assert "'AWS/Lambda'" in throttles and "'Throttles'" in throttles and "'DynamoDbThrottles'" in throttles, throttles
assert alarms["ThrottlingAlarm"]["Properties"]["Threshold"] == 0
# Spend caps and X-Ray.
assert function["ReservedConcurrentExecutions"] == {"Fn::If": ["HasReservedConcurrency", {"Ref": "ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}
assert conds["HasReservedConcurrency"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "ReservedConcurrency"}, "0"]}]}, "0 must mean unreserved, not a function that never runs"
caps = {"ThrottlingRateLimit": {"Ref": "ApiThrottleRateLimit"}, "ThrottlingBurstLimit": {"Ref": "ApiThrottleBurstLimit"}}
rest = res["McpRestApi"]["Properties"]
assert any(all(m.get(k) == v for k, v in caps.items()) and m.get("ResourcePath") == "/*" and m.get("HttpMethod") == "*" for m in rest["MethodSettings"]), rest["MethodSettings"]
assert res["McpHttpStage"]["Properties"]["DefaultRouteSettings"] == caps
assert function["Tracing"] == {"Ref": "Tracing"} and params["Tracing"]["Default"] == "PassThrough"
assert rest["TracingEnabled"] == {"Fn::If": ["TracingActive", True, False]}
statements = res["McpRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
xray = [s["Fn::If"] for s in statements if isinstance(s, dict) and "Fn::If" in s and s["Fn::If"][0] == "TracingActive"]
assert len(xray) == 1 and sorted(xray[0][1]["Action"]) == ["xray:PutTelemetryRecords", "xray:PutTraceSegments"] and xray[0][2] == {"Ref": "AWS::NoValue"}, xray
assert not res["McpRole"]["Properties"].get("ManagedPolicyArns"), "X-Ray needs two actions, not a managed policy"
print("metrics env, dashboard and alarms on the function's EMF names, spend caps and X-Ray wired")
PY
# The stack's refusals, evaluated as CloudFormation would over parameter sets: what must deploy
# does, and each pair AWS cannot serve is refused (HTTP API + streaming, REST + auth on the bare
# URL, CloudFront without the origin secret).
check template-rules "$MCP_WORK/venv-sam/bin/python" - <<'PY'
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
defaults = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
def ev(node, params):
    if isinstance(node, dict):
        (fn, arg), = node.items()
        if fn == "Ref": return params[arg]
        if fn == "Fn::Equals": return str(ev(arg[0], params)) == str(ev(arg[1], params))
        if fn == "Fn::Not": return not ev(arg[0], params)
        if fn == "Fn::And": return all(ev(a, params) for a in arg)
        if fn == "Fn::Or": return any(ev(a, params) for a in arg)
        if fn == "Fn::Contains": return str(ev(arg[1], params)) in [str(x) for x in arg[0]]
        raise AssertionError(f"unexpected rule function {fn}")
    return node
def refused(**given):
    params = {**defaults, "RequestStateKey": "k" * 44, **given}
    return sorted(name for name, rule in template["Rules"].items()
                  if ev(rule.get("RuleCondition", True), params) and not all(ev(a["Assert"], params) for a in rule["Assertions"]))
assert refused() == [], refused()
assert refused(EntryPoint="ApiGatewayRest") == []
assert refused(EntryPoint="HttpApi", Streaming="false") == []
assert refused(EntryPoint="HttpApi") == ["HttpApiCannotStream"], refused(EntryPoint="HttpApi")
assert refused(EntryPoint="FunctionUrl", AuthIssuer="https://issuer") == []
assert refused(EntryPoint="HttpApi", Streaming="false", AuthIssuer="https://issuer") == []
assert refused(EntryPoint="ApiGatewayRest", AuthIssuer="https://issuer") == ["RestApiAuthNeedsCloudFront"]
secret = "s" * 32
assert refused(EntryPoint="ApiGatewayRest", AuthIssuer="https://issuer", CloudFront="true", OriginSecret=secret) == []
for entry in ("FunctionUrl", "ApiGatewayRest", "HttpApi"):
    streaming = "false" if entry == "HttpApi" else "true"
    assert refused(EntryPoint=entry, Streaming=streaming, CloudFront="true") == ["CloudFrontNeedsTheOriginSecret"], entry
    assert refused(EntryPoint=entry, Streaming=streaming, CloudFront="true", OriginSecret=secret) == [], entry
assert refused(RequestStateKey="") == ["RequestStateKeyIsGiven"]
# The Cognito pool needs the audience (its resource server's identifier) and the clients' redirect
# URIs, replaces AuthIssuer, and counts as auth for the REST entry.
cognito = dict(CreateCognitoUserPool="true", AuthAudience="https://mcp.example.com/mcp", CognitoCallbackUrls="https://client.example/callback")
assert refused(**cognito) == [], refused(**cognito)
assert refused(**{**cognito, "AuthAudience": ""}) == ["CognitoUserPoolNeedsItsSettings"]
assert refused(**{**cognito, "CognitoCallbackUrls": ""}) == ["CognitoUserPoolNeedsItsSettings"]
assert refused(**cognito, AuthIssuer="https://issuer") == ["CognitoUserPoolNeedsItsSettings"]
assert refused(**cognito, EntryPoint="ApiGatewayRest") == ["RestApiAuthNeedsCloudFront"]
assert refused(**cognito, EntryPoint="ApiGatewayRest", CloudFront="true", OriginSecret="s" * 32) == []
assert refused(**cognito, EntryPoint="HttpApi", Streaming="false") == []
# An answer sent whole behind CloudFront must fit its 60 s origin response timeout.
behind = dict(CloudFront="true", OriginSecret=secret)
assert refused(**behind, Streaming="false", Timeout="61") == ["BufferedBehindCloudFrontFitsTheOriginTimeout"]
assert refused(**behind, Streaming="false", Timeout="60") == []
assert refused(**behind, Streaming="false", Timeout="3") == []
assert refused(**behind, Streaming="true", Timeout="900") == []
assert refused(Streaming="false", Timeout="900") == [], "no CloudFront, no such limit"
assert int(template["Parameters"]["Timeout"]["MinValue"]) == 3, "the rule lists 3 to 60"
# The metrics namespace refuses AWS/, as its description says.
import re
pattern = template["Parameters"]["MetricsNamespace"]["AllowedPattern"]
assert re.fullmatch(pattern, "mcp-lambda") and re.fullmatch(pattern, "team/mcp")
assert not re.fullmatch(pattern, "AWS/Lambda"), pattern
# The alarms on the function's own (EMF) metrics fire on 2 of 3 periods.
for name in ("ErrorRateAlarm", "LatencyP99Alarm"):
    alarm = template["Resources"][name]["Properties"]
    assert (alarm["DatapointsToAlarm"], alarm["EvaluationPeriods"]) == (2, 3), (name, alarm)
print("rules: defaults deploy; HttpApi+streaming, bare REST+auth (Cognito's too), CloudFront without the secret, a buffered call longer than CloudFront waits, a Cognito pool without its audience or redirect URIs or beside AuthIssuer refused; AWS/ refused; EMF alarms 2 of 3")
PY
# The optional Cognito user pool (CreateCognitoUserPool), resolved as CloudFormation would for a
# few parameter sets: off (the default), the template creates nothing of it and the function gets
# AuthIssuer and no MCP_AUTH_CLIENT_IDS; on, MCP_AUTH_ISSUER is the pool's issuer and
# MCP_AUTH_CLIENT_IDS its one app client. The resource server is named by AuthAudience, so every
# scope the app client may ask for, and every scope the metadata document advertises, is
# <AuthAudience>/<name> (what the function takes as a token's binding to this server); the
# client is public, code grant only; the pool is kept on deletion and has no self sign-up; the
# audience must be written as the function compares it. The pool and its domain also serve the
# built-in authorization server (template-oauth), the rest of it only CreateCognitoUserPool.
check template-cognito "$MCP_WORK/venv-sam/bin/python" - <<'PY'
import json, os, re
from cfnlint.decode import decode
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
from samtranslator.translator.transform import transform
template, errors = decode("template.yaml")
assert not errors, errors
params, conds, res = template["Parameters"], template["Conditions"], template["Resources"]
NV = {"Ref": "AWS::NoValue"}
POOL = {"McpUserPool": "AWS::Cognito::UserPool", "McpUserPoolResourceServer": "AWS::Cognito::UserPoolResourceServer",
        "McpUserPoolClient": "AWS::Cognito::UserPoolClient", "McpUserPoolDomain": "AWS::Cognito::UserPoolDomain",
        "McpManagedLoginBranding": "AWS::Cognito::ManagedLoginBranding"}
# The pool's app client and style for the built-in authorization server: template-oauth.
UPSTREAM = {"McpOAuthUpstreamClient": "AWS::Cognito::UserPoolClient", "McpOAuthUpstreamLoginBranding": "AWS::Cognito::ManagedLoginBranding"}
assert {k: v["Type"] for k, v in res.items() if v["Type"].startswith("AWS::Cognito::")} == {**POOL, **UPSTREAM}
SHARED = ("McpUserPool", "McpUserPoolDomain")
for name in POOL:
    if name in SHARED:
        assert res[name].get("Condition") == "CognitoPool", f"{name} must exist only with CreateCognitoUserPool=true or BuiltInAuthorizationServer=cognito"
    else:
        assert res[name].get("Condition") == "CreateCognito", f"{name} must exist only with CreateCognitoUserPool=true"
assert conds["CognitoPool"] == {"Fn::Or": [{"Condition": "CreateCognito"}, {"Condition": "OAuthUpstreamCognito"}]}, conds["CognitoPool"]
assert params["CreateCognitoUserPool"]["Default"] == "false" and sorted(params["CreateCognitoUserPool"]["AllowedValues"]) == ["false", "true"]
PSEUDO = {"AWS::Region": "us-east-1", "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/s/51af3dc0-da77-11e4-872e-1234567db123",
          "AWS::StackName": "s", "AWS::Partition": "aws", "AWS::AccountId": "123456789012"}
def resolver(given):
    p = {**{k: str(v.get("Default", "")) for k, v in params.items()}, "RequestStateKey": "k" * 44, **given}
    def cond(name):
        return val(conds[name])
    def val(node):
        if isinstance(node, list):
            out = [val(x) for x in node]
            return [x for x in out if x is not NV]
        if not isinstance(node, dict):
            return node
        if len(node) != 1 or not (next(iter(node)) in ("Ref", "Condition") or next(iter(node)).startswith("Fn::")):
            out = {k: val(v) for k, v in node.items()}
            return {k: v for k, v in out.items() if v is not NV}
        (fn, arg), = node.items()
        if fn == "Ref":
            if arg == "AWS::NoValue": return NV
            if arg in PSEUDO: return PSEUDO[arg]
            return p[arg] if arg in p else f"<{arg}>"
        if fn == "Condition": return cond(arg)
        if fn == "Fn::Equals": return str(val(arg[0])) == str(val(arg[1]))
        if fn == "Fn::Not": return not val(arg[0])
        if fn == "Fn::And": return all(val(a) for a in arg)
        if fn == "Fn::Or": return any(val(a) for a in arg)
        if fn == "Fn::If": return val(arg[1]) if cond(arg[0]) else val(arg[2])
        if fn == "Fn::Join": return arg[0].join(str(x) for x in val(arg[1]))
        if fn == "Fn::Split": return val(arg[1]).split(arg[0])
        if fn == "Fn::Select": return val(arg[1])[int(val(arg[0]))]
        if fn == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else (arg[0], {k: val(v) for k, v in arg[1].items()})
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(names.get(m.group(1), PSEUDO.get(m.group(1), p.get(m.group(1), f"<{m.group(1)}>")))), text)
        if fn == "Fn::GetAtt": return f"<{arg[0]}.{arg[1]}>"
        raise AssertionError(f"unexpected function {fn}")
    def exists(name):
        c = res[name].get("Condition")
        return c is None or cond(c)
    return val, cond, exists
def env(given):
    val, cond, exists = resolver(given)
    return val(res["McpFunction"]["Properties"]["Environment"]["Variables"])
def scopes(text):  # as the function reads MCP_AUTH_SCOPES_SUPPORTED
    return [s for s in re.split(r"[, ]", text) if s]
AUD = "https://mcp.example.com/mcp"
on = dict(CreateCognitoUserPool="true", AuthAudience=AUD, CognitoCallbackUrls="https://client.example/callback,http://localhost:6274/oauth/callback")
# Off: nothing of the pool, the function as before.
val, cond, exists = resolver({"AuthIssuer": "https://issuer.example", "AuthAudience": AUD})
assert not [n for n in POOL if exists(n)]
off = env({"AuthIssuer": "https://issuer.example", "AuthAudience": AUD, "AuthScopesSupported": "a b"})
assert off["MCP_AUTH_ISSUER"] == "https://issuer.example" and "MCP_AUTH_CLIENT_IDS" not in off and off["MCP_AUTH_SCOPES_SUPPORTED"] == "a b", off
assert "MCP_AUTH_CLIENT_IDS" not in env({}) and env({})["MCP_AUTH_ISSUER"] == "", "auth off by default"
# On: the pool's issuer and app client reach the function.
val, cond, exists = resolver(on)
assert all(exists(n) for n in POOL)
e = env(on)
assert e["MCP_AUTH_ISSUER"] == "https://cognito-idp.us-east-1.amazonaws.com/<McpUserPool>", e["MCP_AUTH_ISSUER"]
assert e["MCP_AUTH_CLIENT_IDS"] == "<McpUserPoolClient>" and e["MCP_AUTH_AUDIENCE"] == AUD, e
raw = res["McpFunction"]["Properties"]["Environment"]["Variables"]
assert raw["MCP_AUTH_ISSUER"] == {"Fn::If": ["OAuthServerOn", NV,
    {"Fn::If": ["CreateCognito", {"Fn::Sub": "https://cognito-idp.${AWS::Region}.amazonaws.com/${McpUserPool}"}, {"Ref": "AuthIssuer"}]}]}, raw["MCP_AUTH_ISSUER"]
assert raw["MCP_AUTH_CLIENT_IDS"] == {"Fn::If": ["CreateCognito", {"Ref": "McpUserPoolClient"}, NV]}
# Scopes: the resource server's names, the client's allowed scopes and the advertised ones agree.
for given, names in (("read,write", ["read", "write"]), ("mcp", ["mcp"]), ("a,b:c,d.e,f*", ["a", "b:c", "d.e", "f*"])):
    val, cond, exists = resolver({**on, "CognitoScopes": given})
    rs = val(res["McpUserPoolResourceServer"]["Properties"])
    assert rs["Identifier"] == AUD and [s["ScopeName"] for s in rs["Scopes"]] == names, rs
    client = val(res["McpUserPoolClient"]["Properties"])
    assert client["AllowedOAuthScopes"] == [f"{AUD}/{n}" for n in names], client["AllowedOAuthScopes"]
    assert scopes(env({**on, "CognitoScopes": given})["MCP_AUTH_SCOPES_SUPPORTED"]) == [f"{AUD}/{n}" for n in names]
assert env({**on, "AuthScopesSupported": "x y"})["MCP_AUTH_SCOPES_SUPPORTED"] == "x y", "an explicit AuthScopesSupported wins"
pattern = params["CognitoScopes"]["AllowedPattern"]
assert re.fullmatch(pattern, "read,write,a,b") and not re.fullmatch(pattern, "a,b,c,d,e") and not re.fullmatch(pattern, "read write") and not re.fullmatch(pattern, "a/b")
# The client: public, code grant, the given redirect URIs, the pool's own users; the pool: kept,
# no self sign-up; the domain: managed login, the stack's id by default.
val, cond, exists = resolver(on)
client = val(res["McpUserPoolClient"]["Properties"])
assert client["GenerateSecret"] is False and client["AllowedOAuthFlowsUserPoolClient"] is True and client["AllowedOAuthFlows"] == ["code"], client
assert client["CallbackURLs"] == on["CognitoCallbackUrls"].split(",") and client["SupportedIdentityProviders"] == ["COGNITO"]
assert res["McpUserPoolClient"].get("DependsOn") == "McpUserPoolResourceServer", "the client names the resource server's scopes"
pool = res["McpUserPool"]
assert pool.get("DeletionPolicy") == "Retain" and pool.get("UpdateReplacePolicy") == "Retain", "the pool holds the users"
assert pool["Properties"]["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
domain = val(res["McpUserPoolDomain"]["Properties"])
assert domain["Domain"] == "mcp-51af3dc0-da77-11e4-872e-1234567db123" and domain["ManagedLoginVersion"] == 2, domain
assert re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", domain["Domain"])
assert resolver({**on, "CognitoDomainPrefix": "my-mcp"})[0](res["McpUserPoolDomain"]["Properties"])["Domain"] == "my-mcp"
branding = val(res["McpManagedLoginBranding"]["Properties"])
assert branding["ClientId"] == "<McpUserPoolClient>" and branding["UseCognitoProvidedValues"] is True
outputs = template["Outputs"]
for name in ("CognitoUserPoolId", "CognitoIssuer", "CognitoDomain"):
    assert outputs[name].get("Condition") == "CognitoPool", name
assert outputs["CognitoClientId"].get("Condition") == "CreateCognito", "the public client MCP clients are given exists only with CreateCognitoUserPool"
assert val(outputs["CognitoDomain"]["Value"]) == "https://mcp-51af3dc0-da77-11e4-872e-1234567db123.auth.us-east-1.amazoncognito.com"
assert val(outputs["CognitoIssuer"]["Value"]) == e["MCP_AUTH_ISSUER"]
# The audience, written as the function compares it (and as Cognito names the scopes).
audience = params["AuthAudience"]["AllowedPattern"]
for good in ("", AUD, "https://abc.lambda-url.us-east-1.on.aws/mcp", "https://mcp.example.com:8443/a/b", "https://mcp.example.com"):
    assert re.fullmatch(audience, good), good
for bad in ("https://mcp.example.com/mcp/", "https://MCP.example.com/mcp", "http://mcp.example.com/mcp", "https://mcp.example.com/mcp#x", "https://mcp.example.com/mcp?x=1", "mcp.example.com/mcp"):
    assert not re.fullmatch(audience, bad), bad
# The function calls no Cognito API: its role has no Cognito action.
statements = res["McpRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
assert "cognito-idp:" not in json.dumps(statements).lower()
# SAM accepts the template with the pool's resources in it.
sam_input = json.loads(json.dumps(template, default=str))
sam_input["Resources"]["McpFunction"]["Properties"]["CodeUri"] = "s3://bucket/key"
class NoPolicies:
    def load(self): return {}
out = transform(sam_input, {}, NoPolicies())["Resources"]
assert all(out[n]["Type"] == t for n, t in POOL.items())
print("Cognito pool: nothing when off; issuer, app client and <AuthAudience>/<scope> names when on; public code-grant client; pool retained, admin-created users; canonical audience")
PY
# The built-in authorization server (BuiltInAuthorizationServer), resolved as CloudFormation would
# for each choice. none (the default): not one variable, resource, permission or cache behaviour
# of it, and MCP_AUTH_ISSUER as before. cognito: the pool (the same retained resource as
# CreateCognitoUserPool's), a confidential app client whose one redirect URI is the callback at
# AuthAudience's origin, its secret copied into a Secrets Manager secret whose ARN (never the
# value) the function gets, no resource server or public client. external: the provider, client
# and secret ARN given. Either way MCP_AUTH_ISSUER is unset (the function refuses it beside
# MCP_OAUTH_UPSTREAM_ISSUER), the role may DeleteItem only the server's o# items and read only
# its secrets, and behind CloudFront its paths reach the function uncached, with cookies, query
# strings and every header but Host, ahead of the cached documents. The Rules refuse each
# setting it cannot start without. What the code reads and does is what the template grants: every
# MCP_ variable it sets is one the crate knows (src/config.rs), every item operation the
# server's store sends (src/oauth/dynamodb.rs) is allowed, and its key prefix is the condition's.
check template-oauth "$MCP_WORK/venv-sam/bin/python" - <<'PY'
import fnmatch, json, os, re
from cfnlint.decode import decode
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
from samtranslator.translator.transform import transform
template, errors = decode("template.yaml")
assert not errors, errors
params, conds, res, rules = template["Parameters"], template["Conditions"], template["Resources"], template["Rules"]
NV = {"Ref": "AWS::NoValue"}
PSEUDO = {"AWS::Region": "us-east-1", "AWS::StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/s/51af3dc0-da77-11e4-872e-1234567db123",
          "AWS::StackName": "s", "AWS::Partition": "aws", "AWS::AccountId": "123456789012"}
defaults = {k: str(v.get("Default", "")) for k, v in params.items()}
def resolver(given):
    p = {**defaults, "RequestStateKey": "k" * 44, **given}
    def cond(name):
        return val(conds[name])
    def val(node):
        if isinstance(node, list):
            out = [val(x) for x in node]
            return [x for x in out if x is not NV]
        if not isinstance(node, dict):
            return node
        if len(node) != 1 or not (next(iter(node)) in ("Ref", "Condition") or next(iter(node)).startswith("Fn::")):
            out = {k: val(v) for k, v in node.items()}
            return {k: v for k, v in out.items() if v is not NV}
        (fn, arg), = node.items()
        if fn == "Ref":
            if arg == "AWS::NoValue": return NV
            if arg in PSEUDO: return PSEUDO[arg]
            return p[arg] if arg in p else f"<{arg}>"
        if fn == "Condition": return cond(arg)
        if fn == "Fn::Equals": return str(val(arg[0])) == str(val(arg[1]))
        if fn == "Fn::Not": return not val(arg[0])
        if fn == "Fn::And": return all(val(a) for a in arg)
        if fn == "Fn::Or": return any(val(a) for a in arg)
        if fn == "Fn::Contains": return str(val(arg[1])) in [str(val(x)) for x in arg[0]]
        if fn == "Fn::If": return val(arg[1]) if cond(arg[0]) else val(arg[2])
        if fn == "Fn::Join": return arg[0].join(str(x) for x in val(arg[1]))
        if fn == "Fn::Split": return val(arg[1]).split(arg[0])
        if fn == "Fn::Select": return val(arg[1])[int(val(arg[0]))]
        if fn == "Fn::Sub":
            text, names = (arg, {}) if isinstance(arg, str) else (arg[0], {k: val(v) for k, v in arg[1].items()})
            return re.sub(r"\$\{([^}]+)\}", lambda m: str(names.get(m.group(1), PSEUDO.get(m.group(1), p.get(m.group(1), f"<{m.group(1)}>")))), text)
        if fn == "Fn::GetAtt": return f"<{arg[0]}.{arg[1]}>"
        raise AssertionError(f"unexpected function {fn}")
    def exists(name):
        c = res[name].get("Condition")
        return c is None or cond(c)
    def refused():
        return sorted(n for n, r in rules.items() if val(r.get("RuleCondition", True)) and not all(val(a["Assert"]) for a in r["Assertions"]))
    return val, cond, exists, refused
def stack(given):
    val, cond, exists, refused = resolver(given)
    env = val(res["McpFunction"]["Properties"]["Environment"]["Variables"])
    statements = val(res["McpRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"])
    made = {n for n in res if exists(n)}
    behaviours = val(res["McpDistribution"]["Properties"]["DistributionConfig"]["CacheBehaviors"]) if exists("McpDistribution") else []
    outputs = {n: val(o["Value"]) for n, o in template["Outputs"].items() if "Condition" in o and cond(o["Condition"])}
    return dict(env=env, statements={s["Sid"]: s for s in statements}, made=made, behaviours=behaviours, outputs=outputs, refused=refused(), val=val)
AUD = "https://mcp.example.com/mcp"
KEYS = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-signing-keys-AbCdEf"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-upstream-AbCdEf"
OAUTH_VARS = {"MCP_OAUTH_UPSTREAM_ISSUER", "MCP_OAUTH_UPSTREAM_CLIENT_ID", "MCP_OAUTH_UPSTREAM_CLIENT_SECRET", "MCP_OAUTH_SIGNING_KEYS"}
OAUTH_RESOURCES = {"McpOAuthUpstreamClient", "McpOAuthUpstreamClientSecret", "McpOAuthUpstreamLoginBranding"}
OAUTH_SIDS = {"AuthorizationServerItems", "AuthorizationServerSecrets"}
CACHING_DISABLED, ALL_VIEWER_EXCEPT_HOST = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", "b689b0a8-53d0-40ab-baf2-68738e2966ac"
assert params["BuiltInAuthorizationServer"]["Default"] == "none" and sorted(params["BuiltInAuthorizationServer"]["AllowedValues"]) == ["cognito", "external", "none"]

# none, the default: nothing of it, whatever else is on.
for given in ({}, {"AuthIssuer": "https://issuer.example", "AuthAudience": AUD, "CloudFront": "true", "OriginSecret": "s" * 32},
              {"CreateCognitoUserPool": "true", "AuthAudience": AUD, "CognitoCallbackUrls": "https://client.example/cb"}):
    s = stack(given)
    assert s["refused"] == [], s["refused"]
    assert not OAUTH_VARS & set(s["env"]), set(s["env"]) & OAUTH_VARS
    assert not OAUTH_RESOURCES & s["made"] and not OAUTH_SIDS & set(s["statements"])
    assert not [b for b in s["behaviours"] if "oauth" in b["PathPattern"]], s["behaviours"]
    assert "OAuthIssuer" not in s["outputs"] and "OAuthCallbackUrl" not in s["outputs"]
assert stack({"AuthIssuer": "https://issuer.example", "AuthAudience": AUD})["env"]["MCP_AUTH_ISSUER"] == "https://issuer.example"

# cognito: the pool as the provider, through a confidential client whose secret only Secrets Manager holds.
cognito = dict(BuiltInAuthorizationServer="cognito", AuthAudience=AUD, OAuthSigningKeysSecretArn=KEYS)
s = stack(cognito)
assert s["refused"] == [], s["refused"]
assert {"McpUserPool", "McpUserPoolDomain", *OAUTH_RESOURCES} <= s["made"], s["made"]
assert not {"McpUserPoolClient", "McpUserPoolResourceServer", "McpManagedLoginBranding"} & s["made"], "no public client or resource server: the pool issues nothing to MCP clients"
e = s["env"]
assert "MCP_AUTH_ISSUER" not in e and "MCP_AUTH_CLIENT_IDS" not in e, e
assert e["MCP_AUTH_AUDIENCE"] == AUD and e["MCP_HANDLES_TABLE"] == "<HandlesTable>"
assert e["MCP_OAUTH_UPSTREAM_ISSUER"] == "https://cognito-idp.us-east-1.amazonaws.com/<McpUserPool>", e
assert e["MCP_OAUTH_UPSTREAM_CLIENT_ID"] == "<McpOAuthUpstreamClient>"
assert e["MCP_OAUTH_UPSTREAM_CLIENT_SECRET"] == "<McpOAuthUpstreamClientSecret>", "the secret's ARN (its Ref), never the value"
assert e["MCP_OAUTH_SIGNING_KEYS"] == KEYS
client = s["val"](res["McpOAuthUpstreamClient"]["Properties"])
assert client == {"UserPoolId": "<McpUserPool>", "ClientName": "s-authorization-server", "GenerateSecret": True,
                  "AllowedOAuthFlowsUserPoolClient": True, "AllowedOAuthFlows": ["code"], "AllowedOAuthScopes": ["openid"],
                  "CallbackURLs": ["https://mcp.example.com/oauth/callback"], "SupportedIdentityProviders": ["COGNITO"],
                  "PreventUserExistenceErrors": "ENABLED", "EnableTokenRevocation": True}, client
secret = res["McpOAuthUpstreamClientSecret"]
assert secret["Type"] == "AWS::SecretsManager::Secret" and secret["Properties"]["SecretString"] == {"Fn::GetAtt": ["McpOAuthUpstreamClient", "ClientSecret"]}
assert s["val"](res["McpOAuthUpstreamLoginBranding"]["Properties"])["ClientId"] == "<McpOAuthUpstreamClient>"
assert s["outputs"]["OAuthCallbackUrl"] == "https://mcp.example.com/oauth/callback" and s["outputs"]["OAuthIssuer"] == "https://mcp.example.com"
assert "CognitoClientId" not in s["outputs"] and s["outputs"]["CognitoIssuer"] == e["MCP_OAUTH_UPSTREAM_ISSUER"]
assert "ClientSecret" not in json.dumps(template["Outputs"]), "the client secret is never an output"
for port_and_path in ("https://mcp.example.com:8443/mcp", "https://mcp.example.com/a/b/mcp"):
    callback = stack({**cognito, "AuthAudience": port_and_path})["val"](res["McpOAuthUpstreamClient"]["Properties"])["CallbackURLs"]
    assert callback == [port_and_path.split("/")[0] + "//" + port_and_path.split("/")[2] + "/oauth/callback"], callback
items, secrets = s["statements"]["AuthorizationServerItems"], s["statements"]["AuthorizationServerSecrets"]
assert secrets["Action"] == "secretsmanager:GetSecretValue" and secrets["Resource"] == [KEYS, "<McpOAuthUpstreamClientSecret>"], secrets

# external: any provider, by parameters.
external = dict(BuiltInAuthorizationServer="external", AuthAudience=AUD, OAuthSigningKeysSecretArn=KEYS,
                OAuthUpstreamIssuer="https://login.microsoftonline.com/tenant/v2.0", OAuthUpstreamClientId="facade", OAuthUpstreamClientSecretArn=SECRET)
x = stack(external)
assert x["refused"] == [], x["refused"]
assert not {"McpUserPool", "McpUserPoolDomain", *OAUTH_RESOURCES} & x["made"], "no Cognito resource for another provider"
assert "MCP_AUTH_ISSUER" not in x["env"]
assert {k: x["env"][k] for k in OAUTH_VARS} == {"MCP_OAUTH_UPSTREAM_ISSUER": "https://login.microsoftonline.com/tenant/v2.0",
    "MCP_OAUTH_UPSTREAM_CLIENT_ID": "facade", "MCP_OAUTH_UPSTREAM_CLIENT_SECRET": SECRET, "MCP_OAUTH_SIGNING_KEYS": KEYS}, x["env"]
assert x["statements"]["AuthorizationServerSecrets"]["Resource"] == [KEYS, SECRET]
assert x["statements"]["AuthorizationServerItems"] == items

# The table: the server's store sends only item operations the role allows, DeleteItem on its own items only.
assert items == {"Sid": "AuthorizationServerItems", "Effect": "Allow", "Action": "dynamodb:DeleteItem", "Resource": "<HandlesTable.Arn>",
                 "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["o#*"]}}}, items
store = open("src/oauth/dynamodb.rs").read()
prefix = re.search(r'format!\("(\w+#)\{name\}"\)', store).group(1)
assert items["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == [prefix + "*"], prefix
sent = {"dynamodb:" + "".join(w.capitalize() for w in op.split("_")) for op in re.findall(r"\.((?:get|put|update|delete)_item)\(", store)}
handles = s["statements"]["HandlesItems"]["Action"]
assert sent == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}, sent
assert sent <= set(handles) | {items["Action"]}, (sent, handles)
assert "dynamodb:DeleteItem" not in handles, "handles and tasks delete by a conditional UpdateItem (a tombstone): DeleteItem only for o# items"

# Every MCP_ variable the template sets, in every mode, is one the crate reads.
known = set(re.findall(r'"(MCP_[A-Z0-9_]+)"', open("src/config.rs").read().split("const KNOWN_VARIABLES")[1].split("];")[0]))
raw_env = res["McpFunction"]["Properties"]["Environment"]["Variables"]
assert set(raw_env) <= known, set(raw_env) - known

# CloudFront: the server's paths first, uncached, everything but Host forwarded; the documents after.
for given in (cognito, external):
    for entry, streaming, extra in (("FunctionUrl", "true", {}), ("ApiGatewayRest", "true", {}), ("HttpApi", "false", {})):
        b = stack({**given, "EntryPoint": entry, "Streaming": streaming, "CloudFront": "true", "OriginSecret": "s" * 32})
        assert b["refused"] == [], (entry, b["refused"])
        patterns = [x["PathPattern"] for x in b["behaviours"]]
        assert patterns[:2] == ["/.well-known/oauth-authorization-server*", "/oauth/*"] and "/.well-known/*" in patterns[2:], patterns
        for x in b["behaviours"][:2]:
            assert x["CachePolicyId"] == CACHING_DISABLED and x["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST, x
            assert sorted(x["AllowedMethods"]) == sorted(["GET", "HEAD", "OPTIONS", "PUT", "PATCH", "POST", "DELETE"]) and x["ViewerProtocolPolicy"] == "https-only"
            assert x["TargetOriginId"] == "mcp-origin"
        def behaviour(path):  # the first pattern that matches, as CloudFront picks (* matches any characters, / too)
            return next((x["PathPattern"] for x in b["behaviours"] if fnmatch.fnmatchcase(path, x["PathPattern"])), "default")
        for path in ("/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/mcp"):
            assert behaviour(path) == "/.well-known/oauth-authorization-server*", path
        for path in ("/oauth/authorize", "/oauth/callback", "/oauth/token", "/oauth/register", "/oauth/revoke", "/oauth/jwks"):
            assert behaviour(path) == "/oauth/*", path
        assert behaviour("/.well-known/oauth-protected-resource/mcp") == "/.well-known/*" and behaviour("/mcp") == "default"
default = res["McpDistribution"]["Properties"]["DistributionConfig"]["DefaultCacheBehavior"]
assert (default["CachePolicyId"], default["OriginRequestPolicyId"]) == (CACHING_DISABLED, ALL_VIEWER_EXCEPT_HOST), "the same pair as /mcp's"
# The paths the template routes are the ones the server answers (src/oauth/mod.rs).
server = open("src/oauth/mod.rs").read()
for path in re.findall(r'_PATH: &str = "(/[^"]+)"', server):
    assert fnmatch.fnmatchcase(path, "/oauth/*"), path
assert '"/.well-known/oauth-authorization-server"' in server

# The Rules: each setting it cannot start without, and the pool as issuer or AuthIssuer beside it.
for given in (cognito, external):
    assert stack({**given, "AuthAudience": ""})["refused"] == ["BuiltInAuthorizationServerNeedsItsSettings"]
    assert stack({**given, "OAuthSigningKeysSecretArn": ""})["refused"] == ["BuiltInAuthorizationServerNeedsItsSettings"]
    assert stack({**given, "AuthIssuer": "https://issuer.example"})["refused"] == ["BuiltInAuthorizationServerNeedsItsSettings"]
    assert stack({**given, "CreateCognitoUserPool": "true", "CognitoCallbackUrls": "https://client.example/cb"})["refused"] == ["BuiltInAuthorizationServerNeedsItsSettings"]
    assert stack({**given, "EntryPoint": "ApiGatewayRest"})["refused"] == ["RestApiAuthNeedsCloudFront"]
    assert stack({**given, "EntryPoint": "HttpApi", "Streaming": "false"})["refused"] == []
for missing in ("OAuthUpstreamIssuer", "OAuthUpstreamClientId", "OAuthUpstreamClientSecretArn"):
    assert stack({**external, missing: ""})["refused"] == ["ExternalProviderNeedsItsSettings"], missing
assert stack({"BuiltInAuthorizationServer": "none", "OAuthUpstreamIssuer": "https://x.example"})["refused"] == []
for name in ("OAuthSigningKeysSecretArn", "OAuthUpstreamClientSecretArn"):
    pattern = params[name]["AllowedPattern"]
    assert re.fullmatch(pattern, "") and re.fullmatch(pattern, KEYS) and not re.fullmatch(pattern, "mcp-signing-keys") and not re.fullmatch(pattern, "arn:aws:ssm:us-east-1:123456789012:parameter/x"), name
assert re.fullmatch(params["OAuthUpstreamIssuer"]["AllowedPattern"], "https://accounts.google.com") and not re.fullmatch(params["OAuthUpstreamIssuer"]["AllowedPattern"], "http://idp.example")

# SAM accepts the template with all of it in.
sam_input = json.loads(json.dumps(template, default=str))
sam_input["Resources"]["McpFunction"]["Properties"]["CodeUri"] = "s3://bucket/key"
class NoPolicies:
    def load(self): return {}
out = transform(sam_input, {}, NoPolicies())["Resources"]
assert OAUTH_RESOURCES <= set(out)
print("built-in authorization server: nothing when none; cognito: a confidential client on the pool, its secret's ARN to the function; external: the given provider; MCP_AUTH_ISSUER unset; DeleteItem on o# items and GetSecretValue on its secrets only; behind CloudFront uncached, cookies and query strings through, ahead of the documents; each missing setting refused")
PY
# The default deploy is plain SAM: no AWS::LanguageExtensions, no capacity provider, nothing of
# Managed Instances. template-managed-instances.yaml (generated) is the same stack on Lambda
# Managed Instances: the capacity provider in the given VPC with the function's architecture and
# Lambda's operator role, the function on it with the per-environment concurrency (which it reads
# as AWS_LAMBDA_MAX_CONCURRENCY), $LATEST.PUBLISHED republished (what unqualified invokes run),
# subnets and security groups required. Both go through the SAM transform here as they are.
check template-managed-instances "$MCP_WORK/venv-sam/bin/python" - <<'PY'
import json, os, re
from cfnlint.decode import decode
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
from samtranslator.translator.transform import transform
class NoPolicies:
    def load(self): return {}
def sam(template):
    template = json.loads(json.dumps(template, default=str))
    template["Resources"]["McpFunction"]["Properties"]["CodeUri"] = "s3://bucket/key"  # what sam package puts there
    return transform(template, {}, NoPolicies())["Resources"]
NV = {"Ref": "AWS::NoValue"}

# The default: plain SAM, no trace of Managed Instances, unqualified self-invokes on $LATEST.
plain, errors = decode("template.yaml")
assert not errors, errors
assert plain["Transform"] == "AWS::Serverless-2016-10-31", plain["Transform"]
assert not [k for k in plain["Parameters"] if k.startswith("ManagedInstances")]
assert not [k for k, v in plain["Resources"].items() if "CapacityProvider" in v["Type"]]
fn = plain["Resources"]["McpFunction"]["Properties"]
assert "CapacityProviderConfig" not in fn and "PublishToLatestPublished" not in fn
assert fn["MemorySize"] == {"Ref": "MemorySize"}
assert plain["Resources"]["TaskRoundInvokeConfig"]["Properties"]["Qualifier"] == "$LATEST"
out = sam(plain)
assert "CapacityProviderConfig" not in out["McpFunction"]["Properties"]

template, errors = decode("template-managed-instances.yaml")
assert not errors, errors
res, params, conds, rules = template["Resources"], template["Parameters"], template["Conditions"], template["Rules"]
assert template["Transform"] == "AWS::Serverless-2016-10-31", template["Transform"]
# Same stack otherwise: every parameter, condition, rule and resource of template.yaml is here.
for part in ("Parameters", "Conditions", "Rules", "Resources", "Outputs"):
    assert set(plain[part]) <= set(template[part]), (part, set(plain[part]) - set(template[part]))
# Subnets and security groups: required, 1 to 16 and 1 to 5, no empty value.
for name, one, most in (("ManagedInstancesSubnetIds", "subnet-0123456789abcdef0", 16), ("ManagedInstancesSecurityGroupIds", "sg-0123456789abcdef0", 5)):
    p = params[name]
    assert "Default" not in p, f"{name} is required"
    ok = lambda v: re.fullmatch(p["AllowedPattern"], v) is not None
    assert ok(one) and ok(",".join([one] * most)) and not ok(",".join([one] * (most + 1))) and not ok("") and not ok(one + ", " + one), name
providers = {k for k, v in res.items() if v["Type"] in ("AWS::Lambda::CapacityProvider", "AWS::Serverless::CapacityProvider")}
assert providers == {"McpCapacityProvider"}, providers
# The capacity provider: the given VPC, the function's architecture, Lambda's operator role.
cp = res["McpCapacityProvider"]["Properties"]
assert cp["VpcConfig"] == {"SubnetIds": {"Fn::Split": [",", {"Ref": "ManagedInstancesSubnetIds"}]},
                           "SecurityGroupIds": {"Fn::Split": [",", {"Ref": "ManagedInstancesSecurityGroupIds"}]}}, cp["VpcConfig"]
assert cp["InstanceRequirements"]["Architectures"] == [{"Ref": "Architecture"}], "instances of another architecture than the binary cannot run it"
assert cp["PermissionsConfig"]["CapacityProviderOperatorRoleArn"] == {"Fn::GetAtt": ["McpCapacityProviderOperatorRole", "Arn"]}
assert cp["CapacityProviderScalingConfig"] == {"Fn::If": ["HasManagedMaxVCpus", {"MaxVCpuCount": {"Ref": "ManagedInstancesMaxVCpus"}}, NV]}
assert conds["HasManagedMaxVCpus"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "ManagedInstancesMaxVCpus"}, "0"]}]}
operator = res["McpCapacityProviderOperatorRole"]["Properties"]
assert operator["AssumeRolePolicyDocument"]["Statement"] == [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]
assert operator["ManagedPolicyArns"] == [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator"}]
assert not res["McpRole"]["Properties"].get("ManagedPolicyArns"), "the EC2 operator policy belongs to the operator role, not the function's"
# The function: on the provider, with the concurrency setting flowing to it, 2048 MB up,
# $LATEST.PUBLISHED republished on each update and used for task rounds.
fn = res["McpFunction"]["Properties"]
assert fn["CapacityProviderConfig"] == {"Arn": {"Fn::GetAtt": ["McpCapacityProvider", "Arn"]},
    "PerExecutionEnvironmentMaxConcurrency": {"Fn::If": ["HasManagedMaxConcurrency", {"Ref": "ManagedInstancesMaxConcurrency"}, NV]}}, fn["CapacityProviderConfig"]
assert 1 <= params["ManagedInstancesMaxConcurrency"]["MaxValue"] <= 1600
assert fn["PublishToLatestPublished"] is True
assert fn["MemorySize"] == {"Ref": "MemorySize"} and params["MemorySize"]["MinValue"] >= 2048, "2 GiB per vCPU is the least an environment gets"
assert res["TaskRoundInvokeConfig"]["Properties"]["Qualifier"] == "$LATEST.PUBLISHED"
# The Rules, as CloudFormation evaluates them: MaxVCpus 1 refused, the defaults deploy with any
# entry point.
def ev(node, p):
    if isinstance(node, dict):
        (fn_, arg), = node.items()
        if fn_ == "Ref": return p[arg]
        if fn_ == "Fn::Equals": return str(ev(arg[0], p)) == str(ev(arg[1], p))
        if fn_ == "Fn::Not": return not ev(arg[0], p)
        if fn_ == "Fn::And": return all(ev(a, p) for a in arg)
        if fn_ == "Fn::Or": return any(ev(a, p) for a in arg)
        if fn_ == "Fn::Contains": return str(ev(arg[1], p)) in [str(ev(x, p)) for x in arg[0]]
        raise AssertionError(f"unexpected rule function {fn_}")
    return node
defaults = {k: str(v.get("Default", "")) for k, v in params.items()}
vpc = {"ManagedInstancesSubnetIds": "subnet-0123456789abcdef0,subnet-0123456789abcdef1", "ManagedInstancesSecurityGroupIds": "sg-0123456789abcdef0"}
def refused(**given):
    p = {**defaults, "RequestStateKey": "k" * 44, **vpc, **given}
    return sorted(n for n, r in rules.items() if ev(r.get("RuleCondition", True), p) and not all(ev(a["Assert"], p) for a in r["Assertions"]))
assert refused() == []
assert refused(ManagedInstancesMaxVCpus="1") == ["ManagedInstancesMaxVCpusIsZeroOrAtLeastTwo"]
assert refused(ManagedInstancesMaxVCpus="2") == []
for entry, streaming in (("FunctionUrl", "true"), ("ApiGatewayRest", "true"), ("HttpApi", "false")):
    assert refused(EntryPoint=entry, Streaming=streaming) == [], entry
# As written, no parameter resolved first: SAM accepts it and emits the CloudFormation property.
out = sam(template)
lmi = out["McpFunction"]["Properties"]["CapacityProviderConfig"]["LambdaManagedInstancesCapacityProviderConfig"]
assert lmi == {"CapacityProviderArn": {"Fn::GetAtt": ["McpCapacityProvider", "Arn"]},
    "PerExecutionEnvironmentMaxConcurrency": {"Fn::If": ["HasManagedMaxConcurrency", {"Ref": "ManagedInstancesMaxConcurrency"}, NV]}}, lmi
assert out["McpFunction"]["Properties"]["PublishToLatestPublished"] is True
print("template.yaml: plain SAM, no Managed Instances; template-managed-instances.yaml: the capacity provider and operator role, the function on it with its concurrency, a VPC required; SAM accepts both as written")
PY
# The table has one definition, infra/handles-table.json; the template mirrors it.
if [ -e infra/handles-table.json ]; then
  check table-matches-infra "$MCP_WORK/venv-sam/bin/python" - <<'PY'
import json
from cfnlint.decode import decode
template, errors = decode("template.yaml")
assert not errors, errors
table = template["Resources"]["HandlesTable"]["Properties"]
infra = json.load(open("infra/handles-table.json"))
def norm(items):
    return sorted(json.dumps(i, sort_keys=True) for i in items)
assert norm(table["AttributeDefinitions"]) == norm(infra["AttributeDefinitions"]), "AttributeDefinitions differ"
assert norm(table["KeySchema"]) == norm(infra["KeySchema"]), "KeySchema differ"
assert norm(table.get("GlobalSecondaryIndexes", [])) == norm(infra.get("GlobalSecondaryIndexes", [])), "GlobalSecondaryIndexes differ"
# The function may query the owner index by its name.
policy = template["Resources"]["McpRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
query = [st for st in policy if isinstance(st, dict) and st.get("Sid") == "HandlesOwnerIndex"]
assert query and query[0]["Action"] == "dynamodb:Query", query
names = [i["IndexName"] for i in infra["GlobalSecondaryIndexes"]]
assert any(n in json.dumps(query[0]["Resource"]) for n in names), (query, names)
assert table["BillingMode"] == infra.get("BillingMode", "PAY_PER_REQUEST"), "BillingMode differs"
ttl = infra.get("TimeToLiveSpecification") or {}
if ttl:
    assert table["TimeToLiveSpecification"]["AttributeName"] == ttl["AttributeName"], "TTL attribute differs"
print("template.yaml HandlesTable matches infra/handles-table.json")
PY
else
  echo "  skip table-matches-infra (no infra/handles-table.json yet)"
fi

# --- build with cargo-lambda ------------------------------------------------------
# `cargo lambda build` itself (the x86_64 bootstrap a deploy zips) is checked on the starter
# (scripts/starter-tests.sh), the crate users deploy: a build for an explicit target is a second
# build of every dependency, about two minutes cold, so the test command makes one there, where
# the builds before it are for that target too.

# --- cargo-lambda's Lambda emulator on loopback ---------------------------------------------
# The basket and the progress example, built with the workspace's features (as the steps before
# built the basket), each run as the one instance of the emulator's default function
# (scripts/tools.sh: under_lambda_emulator): every request is a Lambda event through its Runtime API.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
WATCHES=()
stop_watches() {
  for pid in "${WATCHES[@]}"; do kill -- "-$pid" 2>/dev/null; done
  for pid in "${WATCHES[@]}"; do wait "$pid" 2>/dev/null; done
  WATCHES=()
}
trap stop_watches EXIT
KEY="$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(32)).decode())')"
EVENT_HOSTS="abcdefghij1234567890klmnopqrstuv.lambda-url.us-east-1.on.aws,a1b2c3d4e5.execute-api.us-east-1.amazonaws.com,f6g7h8i9j0.execute-api.us-east-1.amazonaws.com,mcp-alb-1234567890.us-east-1.elb.amazonaws.com"
emulate() { # emulate PORT LOG BIN VAR=VALUE... : BIN under the emulator on PORT
  under_lambda_emulator "$1" "$2" basket "$3" "${@:4}"
  WATCHES+=("$EMULATOR_PID")
}
wait_ready() { # wait_ready PORT : the function answers /healthz
  local deadline=$((SECONDS + 120)) pid="${WATCHES[-1]}"
  while [ $SECONDS -lt $deadline ] && kill -0 "$pid" 2>/dev/null; do
    if [ "$(curl -s -m 60 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/healthz")" = 200 ]; then return 0; fi
    sleep 0.2
  done
  return 1
}
only_loopback() { # only_loopback PORT : listening on 127.0.0.1 and nowhere else
  local lines; lines="$(ss -ltnH "sport = :$1")"
  [ -n "$lines" ] && ! grep -qv '127.0.0.1:' <<<"$lines"
}
basket="$CARGO_TARGET_DIR/debug/basket"
progress="$CARGO_TARGET_DIR/debug/examples/progress"
if cargo build --locked --workspace --bin basket --example progress >"$LOGS/build.log" 2>&1; then
  pass build-basket-and-progress
else
  fail build-basket-and-progress "see $LOGS/build.log"
fi

echo "==> cargo-lambda's emulator: the basket (buffered)"
PORT="$(free_port)"
emulate "$PORT" "$LOGS/watch-basket.log" "$basket" MCP_REQUEST_STATE_KEY="$KEY" \
  MCP_ALLOWED_HOSTS="127.0.0.1,localhost,$EVENT_HOSTS" MCP_LOG=info
if wait_ready "$PORT"; then pass watch-basket-ready; else fail watch-basket-ready "see $LOGS/watch-basket.log"; fi
if only_loopback "$PORT"; then pass watch-listens-on-loopback-only; else fail watch-listens-on-loopback-only "$(ss -ltnH "sport = :$PORT")"; fi
check discover python3 scripts/lambda_client.py discover "http://127.0.0.1:$PORT/mcp"
check tools-call python3 scripts/lambda_client.py create-basket "http://127.0.0.1:$PORT/mcp"
for event in function_url_discover rest_v1_tools_call http_v2_tools_list alb_unsupported_version function_url_legacy_notification; do
  check "invoke-$event" bash -c "cargo lambda invoke --invoke-address 127.0.0.1 --invoke-port $PORT \
      --data-file events/$event.json > '$LOGS/invoke-$event.json' && python3 scripts/lambda_client.py check-event $event '$LOGS/invoke-$event.json'"
done
stop_watches
if ! grep -q '"level":"ERROR"' "$LOGS/watch-basket.log"; then pass basket-logged-no-errors; else fail basket-logged-no-errors "$(grep '"level":"ERROR"' "$LOGS/watch-basket.log" | head -3)"; fi

echo "==> cargo-lambda's emulator: progress example (response streaming)"
PORT="$(free_port)"
emulate "$PORT" "$LOGS/progress.log" "$progress" MCP_REQUEST_STATE_KEY="$KEY" MCP_ALLOWED_HOSTS=127.0.0.1 \
  MCP_LAMBDA_STREAMING=true MCP_SSE_KEEP_ALIVE_SECS=1 MCP_LOG=info
if wait_ready "$PORT"; then pass watch-progress-ready; else fail watch-progress-ready "see $LOGS/progress.log"; fi
check streamed-tools-call-with-progress python3 scripts/lambda_client.py progress "http://127.0.0.1:$PORT/mcp"
check streamed-202-is-not-empty python3 scripts/lambda_client.py notification "http://127.0.0.1:$PORT/mcp"
stop_watches
if ! grep -q '"level":"ERROR"' "$LOGS/progress.log"; then pass streaming-logged-no-errors; else fail streaming-logged-no-errors "$(grep '"level":"ERROR"' "$LOGS/progress.log" | head -3)"; fi

echo
if [ ${#failures[@]} -gt 0 ]; then echo "failing: ${failures[*]} (logs in $LOGS)"; fi
echo "lambda: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
