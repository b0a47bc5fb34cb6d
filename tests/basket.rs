//! The basket example over real HTTP: the built binary on a loopback port, driven with
//! MCP 2026-07-28 requests.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{Client, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

const VERSION: &str = "2026-07-28";

/// A fixed test key, so the server does not generate one and warn about it.
const REQUEST_STATE_KEY: &str = "aw9C5Pf6gzD8Za8qaDXAJvlBHm0BKpbS1aXWFQoBUpE=";

/// The basket binary, killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// Starts the binary with `env` on a free loopback port and waits until `/healthz` answers.
    async fn start(env: &[(&str, &str)]) -> Server {
        let client = Client::builder(TokioExecutor::new()).build_http();
        // The port is free when picked but could be taken before the child binds it: retry.
        for _ in 0..3 {
            let addr = free_port();
            let mut command = Command::new(env!("CARGO_BIN_EXE_basket"));
            for (name, _) in std::env::vars() {
                if name.starts_with("MCP_") || name.starts_with("AWS_") {
                    command.env_remove(name);
                }
            }
            command
                .env("MCP_BIND", addr.to_string())
                .env("MCP_REQUEST_STATE_KEY", REQUEST_STATE_KEY)
                .env("MCP_LOG", "warn")
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            let child = command.spawn().expect("spawning the basket binary");
            let mut server = Server {
                child,
                addr,
                client: client.clone(),
            };
            if server.wait_healthy().await {
                return server;
            }
        }
        panic!("the basket binary did not become healthy on any of 3 ports");
    }

    async fn wait_healthy(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                eprintln!("basket exited early with {status}");
                return false;
            }
            let request = http::Request::get(format!("http://{}/healthz", self.addr))
                .body(Full::new(Bytes::new()))
                .unwrap();
            if let Ok(response) = self.client.request(request).await
                && response.status() == 200
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// Sends one MCP request and returns the JSON-RPC response.
    async fn rpc(&self, method: &str, name: Option<&str>, mut params: Value) -> Value {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
        let mut request = http::Request::post(format!("http://{}/mcp", self.addr))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", VERSION)
            .header("Mcp-Method", method);
        if let Some(name) = name {
            request = request.header("Mcp-Name", name);
        }
        let request = request
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap();
        let response = self.client.request(request).await.expect("request failed");
        let status = response.status();
        let sse = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        assert_eq!(status, 200, "{method} {name:?} answered {status}: {text}");
        let json: Value = if sse {
            // The last `data:` line carries the response.
            text.lines()
                .rev()
                .filter_map(|line| line.strip_prefix("data:"))
                .find(|data| !data.trim().is_empty())
                .map(|data| serde_json::from_str(data.trim()).unwrap())
                .unwrap_or_else(|| panic!("no data in SSE answer to {method}: {text}"))
        } else {
            serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("answer to {method} is not JSON ({e}): {text}"))
        };
        assert_eq!(json["id"], 7, "response id for {method}: {json}");
        json
    }

    /// Calls a tool and returns its `result`.
    async fn call(&self, tool: &str, arguments: Value) -> Value {
        let response = self
            .rpc(
                "tools/call",
                Some(tool),
                json!({ "name": tool, "arguments": arguments }),
            )
            .await;
        assert!(
            response.get("error").is_none(),
            "{tool} gave a JSON-RPC error: {response}"
        );
        response["result"].clone()
    }

    /// Calls a tool that must succeed; returns its `structuredContent`, checked against the text.
    async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments.clone()).await;
        assert_ne!(
            result["isError"], true,
            "{tool} {arguments} failed: {result}"
        );
        let structured = result["structuredContent"].clone();
        assert!(
            structured.is_object(),
            "{tool} has no structuredContent: {result}"
        );
        let text = result["content"][0]["text"].as_str().unwrap();
        let from_text: Value = serde_json::from_str(text).unwrap();
        assert_eq!(from_text, structured, "text and structuredContent agree");
        structured
    }

    /// Calls a tool that must fail as a tool result; returns its text.
    async fn tool_error(&self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments.clone()).await;
        assert_eq!(
            result["isError"], true,
            "{tool} {arguments} should fail: {result}"
        );
        result["content"][0]["text"].as_str().unwrap().to_owned()
    }
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("no free loopback port")
}

fn items(basket: &Value) -> Vec<(String, u64)> {
    basket["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| {
            (
                line["sku"].as_str().unwrap().to_owned(),
                line["quantity"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn basket_flow_create_add_remove_view_checkout() {
    let server = Server::start(&[]).await;

    let basket = server.ok("create_basket", json!({})).await;
    let id = basket["basket_id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 36, "basket_id is a UUID: {id}");
    assert_eq!(basket["items"], json!([]));
    assert_eq!(basket["expires_after_idle_secs"], 86_400);

    server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "TEA-001", "quantity": 2 }),
        )
        .await;
    let after = server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "TEA-001", "quantity": 1 }),
        )
        .await;
    assert_eq!(items(&after), [("TEA-001".to_owned(), 3)]);
    server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "cake_2", "quantity": 4 }),
        )
        .await;
    server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "MUG", "quantity": 1 }),
        )
        .await;
    server
        .ok("remove_item", json!({ "basket_id": id, "sku": "MUG" }))
        .await;

    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(
        items(&view),
        [("TEA-001".to_owned(), 3), ("cake_2".to_owned(), 4)]
    );
    assert_eq!(view["total_quantity"], 7);
    assert_eq!(view["basket_id"], id);

    let summary = server.ok("checkout", json!({ "basket_id": id })).await;
    assert_eq!(summary["status"], "checked_out");
    assert_eq!(summary["total_quantity"], 7);
    assert_eq!(
        items(&summary),
        [("TEA-001".to_owned(), 3), ("cake_2".to_owned(), 4)]
    );

    let text = server
        .tool_error("view_basket", json!({ "basket_id": id }))
        .await;
    assert!(text.contains("create_basket"), "{text}");
}

#[tokio::test]
async fn expired_basket_returns_tool_error_with_renewal_hint() {
    let server = Server::start(&[("MCP_HANDLE_TTL_SECS", "1")]).await;
    let basket = server.ok("create_basket", json!({})).await;
    let id = basket["basket_id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_millis(2200)).await;

    let text = server
        .tool_error(
            "add_item",
            json!({ "basket_id": id, "sku": "TEA", "quantity": 1 }),
        )
        .await;
    assert_eq!(
        text,
        "This basket does not exist or has expired (baskets expire after 1 s of inactivity). \
         Call create_basket to get a new basket_id, then add the items again."
    );
    for tool in ["view_basket", "checkout"] {
        assert_eq!(
            server.tool_error(tool, json!({ "basket_id": id })).await,
            text,
            "{tool}"
        );
    }
}

#[tokio::test]
async fn unknown_basket_reads_exactly_like_an_expired_one() {
    let server = Server::start(&[("MCP_HANDLE_TTL_SECS", "1")]).await;
    let expired = server.ok("create_basket", json!({})).await["basket_id"].clone();
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let expired_text = server
        .tool_error("view_basket", json!({ "basket_id": expired }))
        .await;

    for unknown in [
        "1b4e28ba-2fa1-4d2e-883f-0016d3cca427", // well-formed, never issued
        "not-a-basket",
        "",
    ] {
        let text = server
            .tool_error("view_basket", json!({ "basket_id": unknown }))
            .await;
        assert_eq!(text, expired_text, "basket_id {unknown:?}");
    }
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_that_name_the_rule() {
    let server = Server::start(&[]).await;
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();

    for quantity in [0, 1001, -3] {
        let text = server
            .tool_error(
                "add_item",
                json!({ "basket_id": id, "sku": "TEA", "quantity": quantity }),
            )
            .await;
        assert!(text.contains("quantity must be"), "{quantity}: {text}");
    }
    for sku in ["", "tea bag", "x".repeat(65).as_str()] {
        let text = server
            .tool_error(
                "add_item",
                json!({ "basket_id": id, "sku": sku, "quantity": 1 }),
            )
            .await;
        assert!(text.contains("sku must be"), "{sku:?}: {text}");
    }
    let text = server
        .tool_error("remove_item", json!({ "basket_id": id, "sku": "TEA" }))
        .await;
    assert!(text.contains("not in this basket"), "{text}");
    let text = server
        .tool_error("checkout", json!({ "basket_id": id }))
        .await;
    assert!(text.contains("empty"), "{text}");

    // Nothing above changed the basket.
    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(view["items"], json!([]));
}

#[tokio::test]
async fn fifty_concurrent_adds_to_one_basket_all_land() {
    let server = std::sync::Arc::new(Server::start(&[]).await);
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();

    let calls: Vec<_> = (0..50)
        .map(|_| {
            let (server, id) = (server.clone(), id.clone());
            tokio::spawn(async move {
                server
                    .ok(
                        "add_item",
                        json!({ "basket_id": id, "sku": "TEA", "quantity": 1 }),
                    )
                    .await;
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }

    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(items(&view), [("TEA".to_owned(), 50)]);
}

#[tokio::test]
async fn tools_list_names_the_five_tools_and_the_expiry_policy() {
    let server = Server::start(&[]).await;
    let response = server.rpc("tools/list", None, json!({})).await;
    let tools = response["result"]["tools"].as_array().unwrap();
    let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "add_item",
            "checkout",
            "create_basket",
            "remove_item",
            "view_basket"
        ]
    );
    let create = tools.iter().find(|t| t["name"] == "create_basket").unwrap();
    let description = create["description"].as_str().unwrap();
    assert!(
        description.contains("expires after 24 h of inactivity"),
        "{description}"
    );
    assert!(
        tools.iter().all(|t| t["outputSchema"].is_object()),
        "every tool declares its structured output: {tools:?}"
    );
}
