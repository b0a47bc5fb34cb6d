//! The basket example over real HTTP: the built binary on a loopback port, driven with
//! MCP 2026-07-28 requests.

use mcp_lambda_test_support as support;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use support::{
    basket::*,
    jwt::{Issuer, TestKey},
};

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
async fn a_repeated_request_id_is_applied_once() {
    let server = Server::start(&[]).await;
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();

    let add = json!({ "basket_id": id, "sku": "TEA", "quantity": 2, "request_id": "r-1" });
    let first = server.ok("add_item", add.clone()).await;
    assert_eq!(items(&first), [("TEA".to_owned(), 2)]);
    let again = server.ok("add_item", add.clone()).await;
    assert_eq!(
        items(&again),
        [("TEA".to_owned(), 2)],
        "the repeat changed nothing and returned the basket"
    );
    server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "TEA", "quantity": 1, "request_id": "r-2" }),
        )
        .await;

    // A remove repeated after it landed answers the basket, not "TEA is not in this basket".
    let remove = json!({ "basket_id": id, "sku": "TEA", "request_id": "r-3" });
    assert_eq!(items(&server.ok("remove_item", remove.clone()).await), []);
    assert_eq!(items(&server.ok("remove_item", remove).await), []);
    // An old request_id still in the basket's memory stays a no-op.
    assert_eq!(items(&server.ok("add_item", add).await), []);

    // The same id for another change is refused, and changes nothing.
    let text = server
        .tool_error(
            "add_item",
            json!({ "basket_id": id, "sku": "MUG", "quantity": 1, "request_id": "r-1" }),
        )
        .await;
    assert!(text.contains("request_id r-1 was already used"), "{text}");
    let text = server
        .tool_error(
            "add_item",
            json!({ "basket_id": id, "sku": "MUG", "quantity": 1, "request_id": "no spaces" }),
        )
        .await;
    assert!(text.contains("request_id must be"), "{text}");
    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(items(&view), []);
    assert!(
        view.get("applied").is_none(),
        "the remembered ids stay inside the basket: {view}"
    );

    // The basket remembers its latest 32 request_ids: the 33rd change forgets the oldest.
    for n in 0..33 {
        server
            .ok(
                "add_item",
                json!({ "basket_id": id, "sku": "CAKE", "quantity": 1, "request_id": format!("c-{n}") }),
            )
            .await;
    }
    let view = server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "CAKE", "quantity": 1, "request_id": "c-32" }),
        )
        .await;
    assert_eq!(items(&view), [("CAKE".to_owned(), 33)]);
    let view = server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "CAKE", "quantity": 1, "request_id": "c-0" }),
        )
        .await;
    assert_eq!(
        items(&view),
        [("CAKE".to_owned(), 34)],
        "c-0 was forgotten, so it counts as new"
    );
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

    add_one_tea_concurrently(&server, &id, 50).await;

    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(items(&view), [("TEA".to_owned(), 50)]);
}

#[tokio::test]
async fn tools_list_names_the_seven_tools_and_the_expiry_policy() {
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
            "list_baskets",
            "place_order",
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

#[tokio::test]
async fn a_basket_belongs_to_its_creator_and_looks_missing_to_anyone_else() {
    let auth = WithAuth::start().await;
    let server = &auth.server;
    let id = auth.alices_basket_of_two_teas().await;

    auth.act_as("bob");
    let unknown = server
        .tool_error(
            "view_basket",
            json!({"basket_id": "00000000-0000-4000-8000-000000000000"}),
        )
        .await;
    for (tool, args) in [
        ("view_basket", json!({"basket_id": id})),
        (
            "add_item",
            json!({"basket_id": id, "sku": "tea", "quantity": 1}),
        ),
        ("remove_item", json!({"basket_id": id, "sku": "tea"})),
        ("checkout", json!({"basket_id": id})),
    ] {
        let text = server.tool_error(tool, args).await;
        assert_eq!(
            text, unknown,
            "bob's {tool} must read exactly like a missing basket"
        );
    }

    auth.act_as("alice");
    let view: Value = server.ok("view_basket", json!({"basket_id": id})).await;
    assert_eq!(
        items(&view),
        [("tea".to_string(), 2)],
        "bob changed nothing"
    );
}

#[tokio::test]
async fn list_baskets_pages_through_the_callers_own_baskets_newest_first() {
    let auth = WithAuth::start_with(&[("MCP_HANDLES_PAGE_SIZE", "2")]).await;
    let server = &auth.server;
    auth.act_as("bob");
    server.ok("create_basket", json!({})).await;
    auth.act_as("alice");
    let mut made = Vec::new();
    for sku in ["tea", "jam", "oat"] {
        let id = new_basket_id(server).await;
        server
            .ok(
                "add_item",
                json!({"basket_id": id, "sku": sku, "quantity": 1}),
            )
            .await;
        made.push((id, sku));
        // Apart in time, so newest first is one order.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first = server.ok("list_baskets", json!({})).await;
    assert_eq!(first["baskets"].as_array().unwrap().len(), 2, "{first}");
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a second page")
        .to_owned();
    let second = server.ok("list_baskets", json!({"cursor": cursor})).await;
    let listed: Vec<(String, String)> = first["baskets"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["baskets"].as_array().unwrap())
        .map(|b| {
            (
                b["basket_id"].as_str().unwrap().to_owned(),
                items(b)[0].0.clone(),
            )
        })
        .collect();
    let newest_first: Vec<(String, String)> = made
        .iter()
        .rev()
        .map(|(id, sku)| (id.clone(), sku.to_string()))
        .collect();
    assert_eq!(
        listed, newest_first,
        "alice's three, newest first, with their lines"
    );
    assert!(second.get("next_cursor").is_none(), "{second}");

    // Bob sees his one basket, and cannot continue Alice's list.
    auth.act_as("bob");
    let bobs = server.ok("list_baskets", json!({})).await;
    assert_eq!(bobs["baskets"].as_array().unwrap().len(), 1, "{bobs}");
    let refused = server
        .tool_error("list_baskets", json!({"cursor": cursor}))
        .await;
    assert!(
        refused.contains("cursor does not continue your list"),
        "{refused}"
    );
    let garbage = server
        .tool_error("list_baskets", json!({"cursor": "AAAA"}))
        .await;
    assert!(
        garbage.contains("cursor does not continue your list"),
        "{garbage}"
    );
}

/// The resource-not-found error every missing basket reads as: `-32602` with `data.uri`
/// (SEP-2164), whatever the reason.
fn assert_not_found(response: &Value, uri: &str) {
    assert!(response.get("result").is_none(), "{uri}: {response}");
    assert_eq!(
        response["error"],
        json!({ "code": -32602, "message": "Resource not found", "data": { "uri": uri } }),
        "{uri}"
    );
}

#[tokio::test]
async fn each_basket_is_a_resource_its_template_names() {
    let server = Server::start(&[]).await;

    let discover = server.rpc("server/discover", None, json!({})).await;
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(
        capabilities["tools"],
        json!({"listChanged": true}),
        "{capabilities}"
    );
    assert_eq!(
        capabilities["resources"],
        json!({"subscribe": true}),
        "baskets may be watched (subscriptions/listen); the resource list never changes"
    );
    let instructions = discover["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("basket://{basket_id}"),
        "{instructions}"
    );

    let templates = server
        .rpc("resources/templates/list", None, json!({}))
        .await;
    let templates = &templates["result"]["resourceTemplates"];
    assert_eq!(templates.as_array().unwrap().len(), 1, "{templates}");
    let template = &templates[0];
    assert_eq!(template["uriTemplate"], "basket://{basket_id}");
    assert_eq!(template["name"], "basket");
    assert_eq!(template["title"], "Shopping basket");
    assert_eq!(template["mimeType"], "application/json");
    let description = template["description"].as_str().unwrap();
    for needle in ["create_basket", "owner", "24 h", "resources/list"] {
        assert!(description.contains(needle), "{needle}: {description}");
    }

    let list = server.rpc("resources/list", None, json!({})).await;
    assert_eq!(
        list["result"]["resources"],
        json!([]),
        "baskets are per caller and not listed"
    );
}

#[tokio::test]
async fn the_owner_reads_a_basket_as_json_and_no_cache_may_share_it() {
    let server = Server::start(&[]).await;
    let id = new_basket_id(&server).await;
    let uri = format!("basket://{id}");

    let empty = server.read(&uri).await;
    let contents = &empty["result"]["contents"];
    assert_eq!(contents.as_array().unwrap().len(), 1, "{empty}");
    assert_eq!(contents[0]["uri"], uri);
    assert_eq!(contents[0]["mimeType"], "application/json");
    let basket: Value = serde_json::from_str(contents[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(basket["basket_id"], id);
    assert_eq!(basket["items"], json!([]));

    server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "TEA", "quantity": 2 }),
        )
        .await;
    let added = server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "CAKE", "quantity": 3 }),
        )
        .await;

    let (status, headers, response) = server
        .send("resources/read", Some(&uri), json!({ "uri": uri }))
        .await;
    assert_eq!(status, 200, "{response}");
    let result = &response["result"];
    let text = result["contents"][0]["text"].as_str().unwrap();
    let read: Value = serde_json::from_str(text).unwrap();
    // A read does not use the basket, so even the expiry is the one add_item reported.
    assert_eq!(
        read, added,
        "the resource is view_basket's structured result"
    );
    assert_eq!(
        items(&read),
        [("CAKE".to_owned(), 3), ("TEA".to_owned(), 2)]
    );
    assert_eq!(read["total_quantity"], 5);

    assert_eq!(result["cacheScope"], "private", "{result}");
    assert_eq!(result["ttlMs"], 0, "{result}");
    assert_eq!(headers["cache-control"], "private, max-age=0");
    assert!(
        headers
            .get_all("vary")
            .iter()
            .any(|v| v.to_str().unwrap().contains("Authorization")),
        "{headers:?}"
    );

    server.ok("checkout", json!({ "basket_id": id })).await;
    assert_not_found(&server.read(&uri).await, &uri);
}

#[tokio::test]
async fn a_public_resources_read_hint_stays_private_for_baskets() {
    let server = Server::start(&[("MCP_CACHE_RESOURCES_READ", "300,public")]).await;
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
    let uri = format!("basket://{}", id.as_str().unwrap());
    let (status, headers, response) = server
        .send("resources/read", Some(&uri), json!({ "uri": uri }))
        .await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["result"]["cacheScope"], "private", "{response}");
    assert_eq!(
        response["result"]["ttlMs"], 300_000,
        "the TTL is the operator's"
    );
    assert_eq!(headers["cache-control"], "private, max-age=300");
}

#[tokio::test]
async fn unknown_expired_and_malformed_basket_uris_are_all_not_found() {
    let server = Server::start(&[("MCP_HANDLE_TTL_SECS", "1")]).await;
    let expired = new_basket_id(&server).await;
    tokio::time::sleep(Duration::from_millis(2200)).await;

    for uri in [
        format!("basket://{expired}"),
        "basket://1b4e28ba-2fa1-4d2e-883f-0016d3cca427".to_owned(), // well-formed, never issued
        format!("basket://{}", expired.to_uppercase()),
        format!("BASKET://{expired}"),
        format!("basket://{expired}/items"),
        "basket://not-a-basket".to_owned(),
        "basket://{basket_id}".to_owned(),
        "basket://".to_owned(),
        expired.clone(),
        "test://nonexistent-resource-for-conformance-testing".to_owned(),
    ] {
        assert_not_found(&server.read(&uri).await, &uri);
    }
}

#[tokio::test]
async fn a_basket_resource_reads_as_not_found_to_anyone_but_its_owner() {
    let auth = WithAuth::start().await;
    let server = &auth.server;
    let id = auth.alices_basket_of_two_teas().await;
    let uri = format!("basket://{id}");
    let mine = server.read(&uri).await;
    assert!(mine.get("error").is_none(), "{mine}");

    auth.act_as("bob");
    let (status, headers, theirs) = server
        .send("resources/read", Some(&uri), json!({ "uri": uri }))
        .await;
    assert_not_found(&theirs, &uri);
    let unknown = "basket://00000000-0000-4000-8000-000000000000";
    let (unknown_status, _, missing) = server
        .send("resources/read", Some(unknown), json!({ "uri": unknown }))
        .await;
    assert_not_found(&missing, unknown);
    assert_eq!(
        status, unknown_status,
        "the same answer as a missing basket"
    );
    assert_eq!(
        headers["cache-control"], "no-store",
        "errors are not cached"
    );

    auth.act_as("alice");
    let again = server.read(&uri).await;
    assert_eq!(again["result"]["contents"], mine["result"]["contents"]);
}

#[tokio::test]
async fn resources_read_needs_the_uri_in_mcp_name() {
    let server = Server::start(&[]).await;
    let id = new_basket_id(&server).await;
    let uri = format!("basket://{id}");
    let other = "basket://00000000-0000-4000-8000-000000000000";
    for name in [Some(other), Some(id.as_str()), None] {
        let (status, _, response) = server
            .send("resources/read", name, json!({ "uri": uri }))
            .await;
        assert_eq!(status, 400, "Mcp-Name {name:?}: {response}");
        assert_eq!(response["error"]["code"], -32020, "{name:?}: {response}");
    }
    let ok = server.read(&uri).await;
    assert!(ok.get("error").is_none(), "{ok}");
}

#[tokio::test]
async fn a_listener_hears_of_its_own_baskets_only() {
    let auth = WithAuth::start().await;
    let server = &auth.server;
    auth.act_as("alice");
    let alices = server.ok("create_basket", json!({})).await["basket_id"].clone();
    auth.act_as("bob");
    let bobs = server.ok("create_basket", json!({})).await["basket_id"].clone();
    let (alices_uri, bobs_uri) = (
        format!("basket://{}", alices.as_str().unwrap()),
        format!("basket://{}", bobs.as_str().unwrap()),
    );

    // Bob asks for both: Alice's is dropped exactly as a basket that does not exist would be.
    let mut stream = server
        .listen(
            json!(9),
            json!({"resourceSubscriptions": [alices_uri, bobs_uri]}),
        )
        .await;
    assert_eq!(
        stream.acknowledged().await,
        json!({"resourceSubscriptions": [bobs_uri]})
    );

    auth.act_as("alice");
    server
        .ok(
            "add_item",
            json!({"basket_id": alices, "sku": "TEA", "quantity": 1}),
        )
        .await;
    auth.act_as("bob");
    server
        .ok(
            "add_item",
            json!({"basket_id": bobs, "sku": "CAKE", "quantity": 1}),
        )
        .await;
    // In memory a change wakes the listener at once; the first thing Bob hears is his own.
    let note = stream.next(Duration::from_secs(2)).await.unwrap();
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], bobs_uri);
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    // Viewing a basket only slides its expiry: nothing changed, nothing is sent.
    server.ok("view_basket", json!({"basket_id": bobs})).await;
    let quiet = tokio::time::timeout(
        Duration::from_millis(1500),
        stream.next(Duration::from_secs(5)),
    )
    .await;
    assert!(quiet.is_err(), "a view is no change: {quiet:?}");
}

#[tokio::test]
async fn sigterm_ends_every_listen_stream_with_its_result_then_exits_0() {
    let mut server = Server::start(&[]).await;
    let mut tools = server
        .listen(json!("tools"), json!({"toolsListChanged": true}))
        .await;
    tools.acknowledged().await;
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
    let uri = format!("basket://{}", id.as_str().unwrap());
    let mut basket = server
        .listen(json!(2), json!({"resourceSubscriptions": [uri]}))
        .await;
    basket.acknowledged().await;

    server.sigterm();
    // Both streams get the closing result: their clients re-listen instead of seeing a cut.
    tools.closing_result(Duration::from_secs(5)).await;
    basket.closing_result(Duration::from_secs(5)).await;
    let (status, _, _) = server.exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status}");
}

/// Expected refusals are not warnings: a read of a basket that is not there is noted at info
/// (its code, not its data), and a client closing its listen stream logs no error.
#[tokio::test]
async fn a_clients_refusals_and_closed_streams_log_no_warning_or_error() {
    let mut server = Server::start_with(&[("MCP_LOG", "info")], Stdio::piped()).await;
    let missing = server
        .read("basket://1b4e28ba-2fa1-4d2e-883f-0016d3cca427")
        .await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    for _ in 0..3 {
        let mut stream = server
            .listen(json!("tools"), json!({"toolsListChanged": true}))
            .await;
        stream.acknowledged().await;
        drop(stream);
    }
    // The server notices the closed streams at its next write.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    server.sigterm();
    let (status, _, log) = server.exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status}\n{log}");
    assert!(
        log.lines()
            .any(|l| l.contains("INFO") && l.contains("request refused") && l.contains("code")),
        "the refusal is noted at info:\n{log}"
    );
    for line in log.lines() {
        assert!(
            !line.contains("response error") && !line.contains("failed to send pending response"),
            "rmcp's warn or error for a client's doing: {line}"
        );
        assert!(!line.contains("ERROR"), "{line}");
    }
}

/// The basket with auth on: a loopback issuer and real signatures.
/// A new basket's id, where most tests here begin.
async fn new_basket_id(server: &Server) -> String {
    server.ok("create_basket", json!({})).await["basket_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

struct WithAuth {
    server: Server,
    key: TestKey,
    issuer: Issuer,
}

impl WithAuth {
    const AUDIENCE: &str = "https://basket.test/mcp";

    async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// With more of the basket's environment.
    async fn start_with(env: &[(&str, &str)]) -> Self {
        let key = TestKey::p256("k1");
        let issuer = Issuer::start(&[&key]).await;
        let mut all = vec![
            ("MCP_AUTH_ISSUER", issuer.url.as_str()),
            ("MCP_AUTH_AUDIENCE", Self::AUDIENCE),
        ];
        all.extend_from_slice(env);
        let server = Server::start(&all).await;
        Self {
            server,
            key,
            issuer,
        }
    }

    /// Makes the server's next requests `who`'s (with a token for them): the tests switch users.
    fn act_as(&self, who: &str) {
        *self.server.token.lock().unwrap() = Some(self.token(who));
    }

    /// The owner tests' start: alice's new basket holding two tea; its id.
    async fn alices_basket_of_two_teas(&self) -> String {
        self.act_as("alice");
        let id = new_basket_id(&self.server).await;
        self.server
            .ok(
                "add_item",
                json!({"basket_id": id, "sku": "tea", "quantity": 2}),
            )
            .await;
        id
    }

    /// A token for the user `who`.
    fn token(&self, who: &str) -> String {
        self.key.sign(&self.issuer.claims(Self::AUDIENCE, who, ""))
    }
}

/// Issue 13: a flood of refused tokens does not multiply the log: the refusal line goes out once
/// per 10 s with the number held back, while every request is still refused.
#[tokio::test]
async fn a_flood_of_bad_tokens_writes_one_refusal_line() {
    let key = TestKey::p256("k1");
    let issuer = Issuer::start(&[&key]).await;
    let mut server = Server::start_with(
        &[
            ("MCP_AUTH_ISSUER", issuer.url.as_str()),
            ("MCP_AUTH_AUDIENCE", WithAuth::AUDIENCE),
            ("MCP_LOG", "info"),
        ],
        std::process::Stdio::piped(),
    )
    .await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\nAuthorization: Bearer not-a-jwt\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.addr,
        body.len()
    );
    for _ in 0..50 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut socket = tokio::net::TcpStream::connect(server.addr).await.unwrap();
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 401"), "{answer}");
    }
    server.sigterm();
    let (_, _, log) = server.exit(Duration::from_secs(10)).await;
    let lines = log.matches("request refused by auth").count();
    assert_eq!(lines, 1, "one line for 50 refusals:\n{log}");
}
