-- wrk script for benches/side-by-side.sh: POSTs one 2026-07-28 MCP request, over and over.
--   BENCH_METHOD  tools/list | tools/call | server/discover
--   BENCH_TOKEN   optional bearer token
-- done() prints one JSON line: requests, duration, errors, non-2xx, p50/p99 latency (µs).
local method = os.getenv("BENCH_METHOD") or "tools/list"
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{}}'
local params = '{' .. meta .. '}'
wrk.headers["Mcp-Method"] = method
if method == "tools/call" then
  params = '{"name":"echo","arguments":{"message":"hello"},' .. meta .. '}'
  wrk.headers["Mcp-Name"] = "echo"
end
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"' .. method .. '","params":' .. params .. '}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
local token = os.getenv("BENCH_TOKEN")
if token and token ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. token
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"errors":%d,"non2xx":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end
