//! Handles, tasks and the change feed in DynamoDB against a real DynamoDB-compatible server:
//! DynamoDB Local on loopback,
//! started by `scripts/dynamodb-tests.sh` (which sets `MCP_TEST_DYNAMODB_ENDPOINT`). No mocks.
//!
//! - one DynamoDB request per handle operation, counted by a loopback proxy in front of the
//!   endpoint, and the connection opened at start-up serves the first requests;
//! - lost answers, made by the same proxy (it passes a request on and withholds DynamoDB's
//!   answer, so the SDK times out and retries, or stops listening): a retried write recognises
//!   its own landed attempt, and a write whose outcome is unknown says so instead of "nothing
//!   changed", in the store and in the basket's answers;
//! - durability: baskets outlive the basket process, and expiry holds across processes;
//! - faults: a hung and then a stopped DynamoDB fail calls cleanly within the configured
//!   timeouts; after a restart every basket made before is still there;
//! - 50 concurrent `add_item` calls on one basket make exactly 50;
//! - tasks: one DynamoDB request per task operation, and a create, claim, finish, answer or
//!   cancel whose first answer is lost succeeds once on retry (a create whose every answer is
//!   lost is not reported durable).
//! - the change feed: every watched item in one request, one shared poll per process however
//!   many streams watch (⌈items / 100⌉ requests per poll), each list kept in copies written
//!   together, and listen across two basket processes.
//!
//! Without `MCP_TEST_DYNAMODB_ENDPOINT` every test fails under CI and is skipped, loudly,
//! elsewhere. The fault test starts a DynamoDB Local of its own (scripts/dynamodb-local.sh) so
//! stopping it disturbs no other test.

use mcp_lambda_test_support as support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_lambda::Caller;
use mcp_lambda::handles::{DynamoDbHandleStore, HandleError, HandleId, HandleStore, Handles};
use serde_json::{Value, json};
use support::basket::{self, Server, free_port, items};
use support::counting_proxy::CountingProxy;
use support::dynamodb::{TABLE, basket_env, client, endpoint, timeouts};

const HOUR: Duration = Duration::from_secs(3600);

fn owner(name: &str) -> String {
    format!("{name}-{}", HandleId::random().unwrap())
}

fn env_refs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_handle_operation_is_one_dynamodb_request_on_the_warm_connection() {
    let Some(endpoint) = endpoint("the round-trip count test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await; // the table exists
    let proxy = CountingProxy::start(&endpoint).await;
    let store = DynamoDbHandleStore::new(client(&proxy.url, &timeouts()).await, TABLE);

    store.check_table().await.unwrap();
    assert_eq!(proxy.take(), ["GetItem"], "start-up check");
    assert_eq!(proxy.connections(), 1);
    // Start-up (Lambda INIT) and the first request are apart in time; back to back, the
    // request could race the connection's return to the pool.
    tokio::time::sleep(Duration::from_millis(100)).await;

    let alice = owner("alice");
    let mallory = owner("mallory");
    let mut timings = Vec::new();
    macro_rules! one_request {
        ($label:expr, $op:expr, $expected:expr) => {{
            let started = Instant::now();
            let result = $op.await;
            timings.push(($label, started.elapsed(), proxy.connections()));
            assert_eq!(proxy.take(), [$expected], "{}", $label);
            result
        }};
    }

    let h = one_request!(
        "create",
        store.create(&alice, "basket", json!({ "items": {} }), HOUR),
        "PutItem"
    )
    .unwrap();
    assert_eq!(
        proxy.connections(),
        1,
        "the first operation used the connection opened by the start-up check"
    );
    one_request!("get", store.get(&alice, h.id), "GetItem").unwrap();
    let updated = one_request!(
        "update",
        store.update(&alice, h.id, 1, json!({ "items": { "tea": 1 } }), HOUR),
        "UpdateItem"
    )
    .unwrap();
    assert_eq!(updated.version, 2);
    assert_eq!(
        one_request!(
            "update, stale version",
            store.update(&alice, h.id, 1, json!(0), HOUR),
            "UpdateItem"
        ),
        Err(HandleError::Conflict { current_version: 2 })
    );
    let touched = one_request!("touch", store.touch(&alice, h.id, HOUR), "UpdateItem").unwrap();
    assert_eq!(
        touched.version, 3,
        "a touch bumps the version: a fence for older writes"
    );
    assert_eq!(
        one_request!("get, other owner", store.get(&mallory, h.id), "GetItem"),
        Err(HandleError::NotFound)
    );
    assert_eq!(
        one_request!(
            "update, other owner",
            store.update(&mallory, h.id, 3, json!(0), HOUR),
            "UpdateItem"
        ),
        Err(HandleError::NotFound)
    );
    assert_eq!(
        one_request!(
            "delete, stale version",
            store.delete(&alice, h.id, Some(2)),
            "UpdateItem"
        ),
        Err(HandleError::Conflict { current_version: 3 })
    );
    // A delete leaves a tombstone (an UpdateItem), so a retried delete recognises itself.
    one_request!("delete", store.delete(&alice, h.id, Some(3)), "UpdateItem").unwrap();
    assert_eq!(
        one_request!("get, deleted", store.get(&alice, h.id), "GetItem"),
        Err(HandleError::NotFound)
    );
    assert_eq!(
        one_request!(
            "delete, deleted",
            store.delete(&alice, h.id, None),
            "UpdateItem"
        ),
        Err(HandleError::NotFound)
    );

    // Refused before any request.
    assert!(matches!(
        store.create(&alice, "k", json!(0), Duration::ZERO).await,
        Err(HandleError::Invalid(_))
    ));
    assert!(proxy.take().is_empty());
    // (Back-to-back requests may open a second pooled connection: hyper returns a connection
    // to the pool just after the answer is read, so the next request can race it.)
    for (label, elapsed, connections) in timings {
        eprintln!("{label:>22}: 1 request, {elapsed:?} (connections so far: {connections})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_page_of_a_callers_handles_is_one_query_on_the_owner_index() {
    let Some(endpoint) = endpoint("the list request-count test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let proxy = CountingProxy::start(&endpoint).await;
    let store: Arc<dyn HandleStore> = Arc::new(DynamoDbHandleStore::new(
        client(&proxy.url, &timeouts()).await,
        TABLE,
    ));
    let notes: Handles<u32> = Handles::new(store, "note", HOUR).with_page_size(2);
    let alice = Caller::from(mcp_lambda::Principal {
        issuer: "https://issuer.test".into(),
        subject: owner("alice"),
        scopes: vec![],
        client_id: None,
    });
    for n in 0..5 {
        notes.create(&alice, n).await.unwrap();
    }
    proxy.take();
    let (mut cursor, mut listed, mut pages) = (None::<String>, Vec::new(), 0);
    loop {
        let page = notes.list(&alice, cursor.as_deref()).await.unwrap();
        pages += 1;
        assert_eq!(proxy.take(), ["Query"], "page {pages}: one request");
        listed.extend(page.items.iter().map(|n| n.value));
        cursor = page.next_cursor;
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(listed, [4, 3, 2, 1, 0], "newest first");
    // Three full pages: DynamoDB tells the end only on the page after the last full one.
    assert!((3..=4).contains(&pages), "{pages} pages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_made_before_the_owner_index_gains_it_and_says_so_until_then() {
    let Some(endpoint) = endpoint("the owner-index upgrade test") else {
        return;
    };
    let setup = client(&endpoint, &timeouts()).await;
    let table = format!("mcp-handles-before-index-{}", HandleId::random().unwrap());
    // The table as infra/handles-table.json defined it before handles could be listed.
    setup
        .create_table()
        .table_name(&table)
        .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
        .attribute_definitions(
            aws_sdk_dynamodb::types::AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(aws_sdk_dynamodb::types::ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            aws_sdk_dynamodb::types::KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(aws_sdk_dynamodb::types::KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let store = DynamoDbHandleStore::new(setup.clone(), &table);
    let alice = owner("alice");
    let before = store.create(&alice, "note", json!(1), HOUR).await.unwrap();
    match store.list(&alice, "note", None, 10).await {
        Err(HandleError::Unavailable(message)) => assert!(
            message.contains("by-owner") && message.contains("infra/handles-table.json"),
            "{message}"
        ),
        other => panic!("a table without the index: {other:?}"),
    }
    DynamoDbHandleStore::create_table(&setup, &table)
        .await
        .unwrap();
    let after = store.create(&alice, "note", json!(2), HOUR).await.unwrap();
    let page = store.list(&alice, "note", None, 10).await.unwrap();
    let ids: Vec<HandleId> = page.handles.iter().map(|h| h.id).collect();
    assert!(ids.contains(&after.id), "{ids:?}");
    // A handle written before the index is indexed by DynamoDB's backfill: its item has the
    // index's keys, written since the definition gained them.
    assert!(ids.contains(&before.id), "{ids:?}");
    assert_eq!(store.get(&alice, before.id).await.unwrap().data, json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_basket_warms_its_connection_at_start_up_and_each_call_costs_its_store_operations() {
    let Some(endpoint) = endpoint("the basket round-trip test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let proxy = CountingProxy::start(&endpoint).await;
    let env = basket_env(&proxy.url, TABLE);
    let server = Server::start(&env_refs(&env)).await;
    let start_up = proxy.take();
    assert!(
        start_up == ["GetItem", "GetItem"]
            || start_up == ["GetItem", "GetItem", "TransactWriteItems"],
        "HandleSettings::open reads the table once before serving; the tool list's fingerprint \
         is read, and written to every copy of the list item only if it differs (the change \
         feed shares the handle store's connection): {start_up:?}"
    );
    assert_eq!(proxy.connections(), 1);

    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
    assert_eq!(proxy.take(), ["PutItem"]);
    assert_eq!(
        proxy.connections(),
        1,
        "the first call reused the connection opened at start-up"
    );
    server
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "TEA", "quantity": 2 }),
        )
        .await;
    assert_eq!(
        proxy.take(),
        ["GetItem", "UpdateItem"],
        "read, then conditional write"
    );
    server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(
        proxy.take(),
        ["UpdateItem"],
        "view is a touch: check and slide at once"
    );
    server.ok("checkout", json!({ "basket_id": id })).await;
    assert_eq!(
        proxy.take(),
        ["GetItem", "UpdateItem"],
        "read, then a conditional tombstone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baskets_outlive_the_server_process_and_expire_across_processes() {
    let Some(endpoint) = endpoint("the durability test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let env = basket_env(&endpoint, TABLE);

    let first = Server::start(&env_refs(&env)).await;
    let id = first.ok("create_basket", json!({})).await["basket_id"].clone();
    for (sku, quantity) in [("TEA", 2), ("CAKE", 3)] {
        first
            .ok(
                "add_item",
                json!({ "basket_id": id, "sku": sku, "quantity": quantity }),
            )
            .await;
    }
    drop(first); // the process is killed

    let second = Server::start(&env_refs(&env)).await;
    let view = second.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(
        items(&view),
        [("CAKE".to_owned(), 3), ("TEA".to_owned(), 2)],
        "the basket and its items survived the restart"
    );
    second
        .ok(
            "add_item",
            json!({ "basket_id": id, "sku": "MUG", "quantity": 1 }),
        )
        .await;
    let summary = second.ok("checkout", json!({ "basket_id": id })).await;
    assert_eq!(summary["total_quantity"], 6);
    drop(second);

    // Expiry is kept by the item, not by the process: a 1 s basket made by one process is
    // gone for the next, long before DynamoDB's TTL sweep could have removed it.
    let mut short = env.clone();
    short.push(("MCP_HANDLE_TTL_SECS".into(), "1".into()));
    let third = Server::start(&env_refs(&short)).await;
    let brief = third.ok("create_basket", json!({})).await["basket_id"].clone();
    third
        .ok(
            "add_item",
            json!({ "basket_id": brief, "sku": "TEA", "quantity": 1 }),
        )
        .await;
    drop(third);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let fourth = Server::start(&env_refs(&short)).await;
    let text = fourth
        .tool_error("view_basket", json!({ "basket_id": brief }))
        .await;
    assert!(text.contains("expired"), "{text}");
    assert!(text.contains("create_basket"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_add_item_calls_on_one_basket_make_exactly_fifty() {
    let Some(endpoint) = endpoint("the concurrency test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let env = basket_env(&endpoint, TABLE);
    let server = Arc::new(Server::start(&env_refs(&env)).await);
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();

    let started = Instant::now();
    basket::add_one_tea_concurrently(&server, &id, 50).await;
    eprintln!(
        "50 concurrent add_item on DynamoDB: {:?}",
        started.elapsed()
    );

    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(items(&view), [("TEA".to_owned(), 50)], "no update was lost");
}

/// Timeouts for the lost-answer tests: a withheld answer costs one read timeout per attempt.
/// 2 s, not less: on a loaded machine DynamoDB Local has taken over 1 s to answer an attempt
/// that was not withheld, which the SDK then retried and the proxy counted.
fn short_read_timeouts() -> mcp_lambda::aws::AwsTimeouts {
    mcp_lambda::aws::AwsTimeouts {
        connect: Duration::from_millis(1000),
        read: Duration::from_millis(2000),
        operation: Duration::from_secs(20),
    }
}

/// Waits until the proxy has passed `count` requests on (or panics after 20 s).
async fn wait_for_requests(proxy: &CountingProxy, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = proxy.seen();
        if seen.len() >= count {
            return seen;
        }
        assert!(Instant::now() < deadline, "only {seen:?} reached the proxy");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_whose_answer_is_lost_recognises_itself_on_retry_or_says_its_outcome_is_unknown() {
    let Some(endpoint) = endpoint("the lost-answer test") else {
        return;
    };
    let direct = support::dynamodb::store(&endpoint).await;
    let proxy = CountingProxy::start(&endpoint).await;
    let store = DynamoDbHandleStore::new(client(&proxy.url, &short_read_timeouts()).await, TABLE);
    let alice = owner("alice");
    let read = |id| {
        let (direct, alice) = (direct.clone(), alice.clone());
        async move { direct.get(&alice, id).await }
    };

    // The first attempt lands and its answer is lost; the SDK sends it again, and the retry
    // finds this call's own write (its write_id), so the call succeeds exactly once.
    proxy.swallow("PutItem", 1);
    let h = store
        .create(&alice, "basket", json!({ "n": 0 }), HOUR)
        .await
        .unwrap();
    assert_eq!(proxy.take(), ["PutItem", "PutItem"], "create, retried");
    assert_eq!(read(h.id).await.unwrap().version, 1);

    proxy.swallow("UpdateItem", 1);
    let updated = store
        .update(&alice, h.id, 1, json!({ "n": 1 }), HOUR)
        .await
        .unwrap();
    assert_eq!(
        proxy.take(),
        ["UpdateItem", "UpdateItem"],
        "update, retried"
    );
    assert_eq!(
        updated.version, 2,
        "applied once, not a conflict with itself"
    );
    assert_eq!(read(h.id).await.unwrap().data, json!({ "n": 1 }));

    // Both deletes below start alike: a fresh basket, the proxy told to lose one answer.
    let a_basket_whose_next_update_answer_is_lost = async || {
        let doomed = store
            .create(&alice, "basket", json!(0), HOUR)
            .await
            .unwrap();
        proxy.take();
        proxy.swallow("UpdateItem", 1);
        doomed
    };
    // The bug a plain DeleteItem had: its retry found nothing and answered NotFound.
    let doomed = a_basket_whose_next_update_answer_is_lost().await;
    store
        .delete(&alice, doomed.id, Some(1))
        .await
        .expect("a retried delete that finds its own tombstone succeeded");
    assert_eq!(
        proxy.take(),
        ["UpdateItem", "UpdateItem"],
        "delete, retried"
    );
    assert_eq!(read(doomed.id).await, Err(HandleError::NotFound));
    let doomed = a_basket_whose_next_update_answer_is_lost().await;
    store.delete(&alice, doomed.id, None).await.unwrap();
    assert_eq!(proxy.take(), ["UpdateItem", "UpdateItem"]);

    // Three answers lost in a row: the store sends the same write again (same write_id), and
    // the repeat that answers learns it had landed: success, applied once.
    proxy.swallow("UpdateItem", 3);
    let settled = store
        .update(&alice, h.id, 2, json!({ "n": 2 }), HOUR)
        .await
        .unwrap();
    assert_eq!(settled.version, 3, "applied once");
    assert_eq!(
        proxy.take(),
        ["UpdateItem"; 4],
        "three lost, then one that answers"
    );
    let now = read(h.id).await.unwrap();
    assert_eq!((now.version, &now.data), (3, &json!({ "n": 2 })));

    // Answers lost for the whole budget (the operation timeout): nobody knows, and the store
    // says so. (It did land.)
    let impatient = DynamoDbHandleStore::new(
        client(
            &proxy.url,
            &mcp_lambda::aws::AwsTimeouts {
                connect: Duration::from_millis(1000),
                read: Duration::from_millis(400),
                operation: Duration::from_millis(2500),
            },
        )
        .await,
        TABLE,
    );
    proxy.swallow("UpdateItem", 1000);
    let started = Instant::now();
    let lost = impatient
        .update(&alice, h.id, 3, json!({ "n": 2.5 }), HOUR)
        .await;
    assert!(
        matches!(lost, Err(HandleError::Indeterminate(_))),
        "{lost:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2500 + 1000),
        "within the operation timeout: {:?}",
        started.elapsed()
    );
    proxy.swallow("UpdateItem", 0);
    proxy.take();
    let now = read(h.id).await.unwrap();
    assert_eq!(
        (now.version, &now.data),
        (4, &json!({ "n": 2.5 })),
        "the write landed although its caller never heard"
    );
    // A touch whose answers are lost is sent again until one comes back (a repeat meets the
    // same condition); lost for the whole budget, its outcome is unknown.
    proxy.swallow("UpdateItem", 3);
    store.touch(&alice, h.id, HOUR).await.unwrap();
    assert_eq!(proxy.take(), ["UpdateItem"; 4]);
    proxy.swallow("UpdateItem", 1000);
    let lost = impatient.touch(&alice, h.id, HOUR).await;
    assert!(
        matches!(lost, Err(HandleError::Indeterminate(_))),
        "{lost:?}"
    );
    proxy.swallow("UpdateItem", 0);
    proxy.take();
    // A touch that answers settles every earlier write: this one names version 3, which the
    // touches above made stale, so it cannot land even if it were still on its way.
    let touched = store.touch(&alice, h.id, HOUR).await.unwrap();
    proxy.take();
    assert!(touched.version >= 5, "{}", touched.version);
    assert_eq!(
        store
            .update(&alice, h.id, 3, json!({ "n": "late" }), HOUR)
            .await,
        Err(HandleError::Conflict {
            current_version: touched.version
        })
    );
    proxy.take();
    // A read whose answers are lost for the whole budget changed nothing: unavailable.
    proxy.swallow("GetItem", 1000);
    let lost = impatient.get(&alice, h.id).await;
    assert!(matches!(lost, Err(HandleError::Unavailable(_))), "{lost:?}");
    proxy.swallow("GetItem", 0);
    assert!(proxy.take().len() >= 3, "tried again within the budget");

    // The first answer lost, then DynamoDB unreachable: the last attempt's error is a refused
    // connection, but the first attempt may have landed (it did), so: unknown, not "nothing
    // changed".
    proxy.swallow("UpdateItem", 1);
    let version = touched.version;
    let call = {
        let (store, alice, id) = (impatient.clone(), alice.clone(), h.id);
        tokio::spawn(async move {
            store
                .update(&alice, id, version, json!({ "n": 3 }), HOUR)
                .await
        })
    };
    wait_for_requests(&proxy, 1).await;
    proxy.refuse();
    let lost = call.await.unwrap();
    assert!(
        matches!(lost, Err(HandleError::Indeterminate(_))),
        "an earlier attempt may have landed: {lost:?}"
    );
    assert_eq!(read(h.id).await.unwrap().version, version + 1, "and it had");

    // Nothing listening at all (for the whole budget): no attempt was sent, so nothing
    // changed, and the store says that.
    tokio::time::sleep(Duration::from_millis(200)).await; // the client sees its pool closed
    let refused = impatient
        .update(&alice, h.id, version + 1, json!({ "n": 4 }), HOUR)
        .await;
    assert!(
        matches!(refused, Err(HandleError::Unavailable(_))),
        "{refused:?}"
    );
    for (label, result) in [
        (
            "create",
            impatient
                .create(&alice, "k", json!(0), HOUR)
                .await
                .map(drop),
        ),
        ("touch", impatient.touch(&alice, h.id, HOUR).await.map(drop)),
        ("delete", impatient.delete(&alice, h.id, None).await),
    ] {
        assert!(
            matches!(result, Err(HandleError::Unavailable(_))),
            "{label}: {result:?}"
        );
    }
    let now = read(h.id).await.unwrap();
    assert_eq!((now.version, now.data), (version + 1, json!({ "n": 3 })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_basket_tells_the_truth_when_dynamodb_answers_too_late() {
    let Some(endpoint) = endpoint("the basket lost-answer test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let proxy = CountingProxy::start(&endpoint).await;
    let mut env = basket_env(&proxy.url, TABLE);
    env.push(("MCP_AWS_READ_TIMEOUT_MS".into(), "1000".into()));
    env.push(("MCP_AWS_OPERATION_TIMEOUT_MS".into(), "5000".into()));
    let server = Server::start(&env_refs(&env)).await;
    let new_basket = |sku: &'static str| {
        let server = &server;
        async move {
            let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
            server
                .ok(
                    "add_item",
                    json!({ "basket_id": id, "sku": sku, "quantity": 2 }),
                )
                .await;
            id
        }
    };
    let unknown = |text: &str| {
        text.contains("may or may not have been")
            && text.contains("view_basket")
            && !text.contains("Nothing was changed")
    };

    // Checkout whose tombstone's answer is lost once: the retry recognises it, and the call
    // answers what it did.
    let id = new_basket("TEA").await;
    proxy.take();
    proxy.swallow("UpdateItem", 1);
    let summary = server.ok("checkout", json!({ "basket_id": id })).await;
    assert_eq!(summary["status"], "checked_out");
    assert_eq!(items(&summary), [("TEA".to_owned(), 2)]);
    assert_eq!(proxy.take(), ["GetItem", "UpdateItem", "UpdateItem"]);

    let id = new_basket("TEA").await;
    // add_item whose every answer is lost for the call's whole budget: it says the change may
    // or may not have been applied (it was), and the same call with the same request_id then
    // changes nothing.
    let add = json!({ "basket_id": id, "sku": "CAKE", "quantity": 1, "request_id": "r-1" });
    proxy.swallow("UpdateItem", 1000);
    let text = server.tool_error("add_item", add.clone()).await;
    proxy.swallow("UpdateItem", 0);
    assert!(unknown(&text), "{text}");
    assert!(text.contains("same request_id"), "{text}");
    let again = server.ok("add_item", add).await;
    assert_eq!(
        items(&again),
        [("CAKE".to_owned(), 1), ("TEA".to_owned(), 2)],
        "applied once"
    );

    // Without a request_id the advice is to look first; looking shows it landed.
    proxy.swallow("UpdateItem", 1000);
    let text = server
        .tool_error("remove_item", json!({ "basket_id": id, "sku": "CAKE" }))
        .await;
    proxy.swallow("UpdateItem", 0);
    assert!(unknown(&text), "{text}");
    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    assert_eq!(items(&view), [("TEA".to_owned(), 2)]);

    // A checkout whose every answer is lost: unknown; view_basket tells (it went through).
    proxy.swallow("UpdateItem", 1000);
    let text = server
        .tool_error("checkout", json!({ "basket_id": id }))
        .await;
    proxy.swallow("UpdateItem", 0);
    assert!(unknown(&text), "{text}");
    assert!(text.contains("checked out"), "{text}");
    let text = server
        .tool_error("view_basket", json!({ "basket_id": id }))
        .await;
    assert!(text.contains("does not exist"), "{text}");

    // A create whose answers are lost: whatever was made is unreachable, so "try again" is
    // the truth.
    proxy.swallow("PutItem", 1000);
    let text = server.tool_error("create_basket", json!({})).await;
    proxy.swallow("PutItem", 0);
    assert!(text.contains("try the same call again"), "{text}");
    assert!(text.contains("No basket you can use was created"), "{text}");

    // Unreachable: nothing was sent, nothing changed, and the answer says so.
    let id = new_basket("MUG").await;
    proxy.refuse();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let text = server
        .tool_error(
            "add_item",
            json!({ "basket_id": id, "sku": "MUG", "quantity": 1 }),
        )
        .await;
    assert!(text.contains("Nothing was changed"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_names_a_missing_table_and_survives_an_unreachable_endpoint() {
    let Some(endpoint) = endpoint("the start-up test") else {
        return;
    };
    // A table that does not exist: the process stops with a message saying what to do.
    let bind = free_port().to_string();
    let mut env = basket_env(&endpoint, "no-such-table");
    env.push(("MCP_BIND".into(), bind));
    let output = basket::spawn(
        basket::binary(),
        &env_refs(&env),
        Stdio::null(),
        Stdio::piped(),
    )
    .wait_with_output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("no-such-table") && stderr.contains("not found"),
        "{stderr}"
    );
    assert!(stderr.contains("infra/handles-table.json"), "{stderr}");

    // A table with another key: refused at start-up, before any handle is written.
    let setup = client(&endpoint, &timeouts()).await;
    let wrong = "mcp-handles-wrong-key";
    let created = setup
        .create_table()
        .table_name(wrong)
        .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
        .attribute_definitions(
            aws_sdk_dynamodb::types::AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(aws_sdk_dynamodb::types::ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            aws_sdk_dynamodb::types::KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(aws_sdk_dynamodb::types::KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await;
    if let Err(e) = created {
        let code = e.as_service_error().and_then(|s| {
            aws_sdk_dynamodb::error::ProvideErrorMetadata::code(s).map(str::to_owned)
        });
        assert_eq!(code.as_deref(), Some("ResourceInUseException"), "{e:?}");
    }
    let store = DynamoDbHandleStore::new(setup, wrong);
    let err = store.check_table().await.unwrap_err().to_string();
    assert!(
        err.contains(wrong) && err.contains("string partition key pk"),
        "{err}"
    );

    // Nothing listening: the server starts (the endpoint may come back), and calls fail as
    // tool errors within the operation timeout.
    let nowhere = format!("http://{}", free_port());
    let mut env = basket_env(&nowhere, TABLE);
    env.push(("MCP_AWS_OPERATION_TIMEOUT_MS".into(), "1500".into()));
    let server = Server::start(&env_refs(&env)).await;
    let started = Instant::now();
    let text = server.tool_error("create_basket", json!({})).await;
    let elapsed = started.elapsed();
    assert!(text.contains("temporarily unavailable"), "{text}");
    assert!(elapsed < Duration::from_millis(1500 + 1000), "{elapsed:?}");
}

/// A DynamoDB Local of this test's own, through scripts/dynamodb-local.sh, stopped on drop.
struct OwnDynamo {
    state: PathBuf,
    port: u16,
    endpoint: String,
}

impl OwnDynamo {
    fn script(state: &PathBuf, args: &[&str], port: Option<u16>) -> String {
        let mut command = Command::new(support::package_dir().join("scripts/dynamodb-local.sh"));
        command
            .args(args)
            .env("DYNAMODB_LOCAL_STATE", state)
            .stdin(Stdio::null());
        if let Some(port) = port {
            command.env("DYNAMODB_LOCAL_PORT", port.to_string());
        }
        let output = command.output().expect("running scripts/dynamodb-local.sh");
        assert!(
            output.status.success(),
            "dynamodb-local.sh {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn start() -> Self {
        let work = std::env::var("MCP_WORK").unwrap_or_else(|_| {
            format!(
                "{}/.cache/mcp-lambda-work",
                std::env::var("HOME").unwrap_or_default()
            )
        });
        let state = PathBuf::from(work)
            .join("dynamodb-local")
            .join(format!("fault-test-{}", std::process::id()));
        let out = Self::script(&state, &["start"], None);
        let endpoint = out
            .lines()
            .find_map(|l| l.strip_prefix("MCP_TEST_DYNAMODB_ENDPOINT="))
            .expect("the script prints the endpoint")
            .to_owned();
        let port = endpoint.rsplit(':').next().unwrap().parse().unwrap();
        Self {
            state,
            port,
            endpoint,
        }
    }

    fn pause(&self) {
        Self::script(&self.state, &["pause"], None);
    }

    fn resume(&self) {
        Self::script(&self.state, &["resume"], None);
    }

    /// Stops the server, keeping its data.
    fn kill(&self) {
        Self::script(&self.state, &["stop", "--keep-data"], None);
    }

    /// Starts it again on the same port with the same data.
    fn restart(&self) {
        Self::script(&self.state, &["start"], Some(self.port));
    }
}

impl Drop for OwnDynamo {
    fn drop(&mut self) {
        let _ = Command::new(support::package_dir().join("scripts/dynamodb-local.sh"))
            .arg("stop")
            .env("DYNAMODB_LOCAL_STATE", &self.state)
            .stdin(Stdio::null())
            .output();
    }
}

/// Waits until the basket answers reads again after a fault ends. DynamoDB Local is a JVM: resumed
/// or restarted on a loaded machine, it can take longer than this test's 700 ms read timeout to
/// answer its first request, and a read that fails "temporarily unavailable" proves nothing
/// either way. Any other answer ends the wait; 30 s without one fails the test.
async fn until_reads_succeed(server: &Server, id: &Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let result = server.call("view_basket", json!({ "basket_id": id })).await;
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] != true || !text.contains("temporarily unavailable") {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "DynamoDB did not come back: {result}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The items of every basket, by id.
async fn contents(server: &Server, ids: &[Value]) -> Vec<Vec<(String, u64)>> {
    let mut all = Vec::new();
    for id in ids {
        all.push(items(
            &server.ok("view_basket", json!({ "basket_id": id })).await,
        ));
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_or_stopped_dynamodb_fails_calls_within_the_timeout_and_loses_nothing() {
    if endpoint("the fault test").is_none() {
        return;
    }
    let dynamo = OwnDynamo::start();
    let setup = client(&dynamo.endpoint, &timeouts()).await;
    DynamoDbHandleStore::create_table(&setup, TABLE)
        .await
        .unwrap();

    const OPERATION_MS: u64 = 2000;
    let mut env = basket_env(&dynamo.endpoint, TABLE);
    for (k, v) in [
        ("MCP_AWS_CONNECT_TIMEOUT_MS", "300"),
        ("MCP_AWS_READ_TIMEOUT_MS", "700"),
        ("MCP_AWS_OPERATION_TIMEOUT_MS", "2000"),
    ] {
        env.push((k.into(), v.into()));
    }
    let server = Server::start(&env_refs(&env)).await;
    let bound = Duration::from_millis(OPERATION_MS + 1500);

    let mut ids = Vec::new();
    for n in 1..=3 {
        let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
        server
            .ok(
                "add_item",
                json!({ "basket_id": id, "sku": format!("SKU-{n}"), "quantity": n }),
            )
            .await;
        ids.push(id);
    }
    let before = contents(&server, &ids).await;

    let unavailable = |text: &str| text.contains("temporarily unavailable");
    let expect_clean_failure = |label: &'static str| {
        let (server, id) = (&server, ids[0].clone());
        async move {
            let started = Instant::now();
            let text = server
                .tool_error(
                    "add_item",
                    json!({ "basket_id": id, "sku": "LOST", "quantity": 1 }),
                )
                .await;
            let elapsed = started.elapsed();
            eprintln!("{label}: add_item failed cleanly in {elapsed:?}");
            assert!(unavailable(&text), "{label}: {text}");
            assert!(
                elapsed < bound,
                "{label}: took {elapsed:?}, bound {bound:?}"
            );
            let started = Instant::now();
            let text = server.tool_error("create_basket", json!({})).await;
            assert!(unavailable(&text), "{label}: {text}");
            assert!(
                started.elapsed() < bound,
                "{label}: {:?}",
                started.elapsed()
            );
        }
    };

    // Hung: the process is frozen, connections open but nothing answers (read timeouts).
    dynamo.pause();
    expect_clean_failure("hung DynamoDB").await;
    dynamo.resume();
    until_reads_succeed(&server, &ids[0]).await;
    assert_eq!(
        contents(&server, &ids).await,
        before,
        "nothing lost or added"
    );

    // Stopped: connections refused, pooled connections dead.
    dynamo.kill();
    expect_clean_failure("stopped DynamoDB").await;
    dynamo.restart();
    until_reads_succeed(&server, &ids[0]).await;
    assert_eq!(
        contents(&server, &ids).await,
        before,
        "every basket made before the stop is back, unchanged"
    );
    server
        .ok(
            "add_item",
            json!({ "basket_id": ids[0], "sku": "AFTER", "quantity": 1 }),
        )
        .await;
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
    assert!(id.is_string());
}

// --- subscriptions/listen on the shared change feed ---------------------------------------

/// Whether `stream` stays silent for `window`.
async fn quiet(stream: &mut basket::ListenStream, window: Duration) -> bool {
    tokio::time::timeout(window, stream.next(Duration::from_secs(10)))
        .await
        .is_err()
}

/// A `basket://` URI for a basket id.
fn basket_uri(basket: &Value) -> String {
    format!("basket://{}", basket["basket_id"].as_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_change_feed_reads_every_watched_item_in_one_request() {
    use mcp_lambda::listen::{Change, ChangeFeed, DynamoDbFeed, ListKind, Observed, Watch};
    let Some(endpoint) = endpoint("the change feed test") else {
        return;
    };
    let store = support::dynamodb::store(&endpoint).await;
    let proxy = CountingProxy::start(&endpoint).await;
    let feed = DynamoDbFeed::new(client(&proxy.url, &timeouts()).await, TABLE);

    let (alice, bob) = (owner("alice"), owner("bob"));
    let mut own = Vec::new();
    for _ in 0..3 {
        own.push(
            store
                .create(&alice, "doc", json!({"n": 0}), HOUR)
                .await
                .unwrap(),
        );
    }
    let theirs = store.create(&bob, "doc", json!({}), HOUR).await.unwrap();
    let expiring = store
        .create(&alice, "doc", json!({}), Duration::from_millis(50))
        .await
        .unwrap();
    let deleted = store.create(&alice, "doc", json!({}), HOUR).await.unwrap();
    store.delete(&alice, deleted.id, None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let unique = HandleId::random().unwrap();
    let uris: Vec<String> = (0..10).map(|i| format!("file:///{unique}/{i}")).collect();

    let mut watches: Vec<Watch> = ListKind::ALL.iter().map(|l| Watch::List(*l)).collect();
    watches.extend(own.iter().map(|h| Watch::Handle {
        owner: alice.clone(),
        id: h.id,
    }));
    for (who, id) in [
        (&alice, theirs.id),
        (&alice, expiring.id),
        (&alice, deleted.id),
    ] {
        watches.push(Watch::Handle {
            owner: who.clone(),
            id,
        });
    }
    watches.extend(uris.iter().map(|u| Watch::Resource(u.clone())));
    assert_eq!(watches.len(), 19);
    proxy.take();

    // 19 items, one request; a handle's data is never read.
    let seen = feed.read(&watches).await.unwrap();
    assert_eq!(proxy.take(), ["BatchGetItem"]);
    for (i, seen) in seen[3..6].iter().enumerate() {
        assert!(
            matches!(seen, Observed::Present(_)),
            "own handle {i}: {seen:?}"
        );
    }
    // Another owner's, an expired and a deleted handle look exactly alike: absent.
    assert_eq!(
        &seen[6..9],
        [Observed::Absent, Observed::Absent, Observed::Absent]
    );
    assert!(seen[9..].iter().all(|s| *s == Observed::Absent));

    // Publishing a resource is one write; a handle change is none (its own write is the signal).
    feed.publish(&Change::Resource(uris[0].clone()))
        .await
        .unwrap();
    assert_eq!(proxy.take(), ["UpdateItem"]);
    feed.publish(&Change::Handle(own[0].id)).await.unwrap();
    assert!(proxy.take().is_empty());
    store
        .update(&alice, own[0].id, own[0].version, json!({"n": 1}), HOUR)
        .await
        .unwrap();

    // A touch only slides the expiry: no change for a listener.
    store.touch(&alice, own[1].id, HOUR).await.unwrap();

    let again = feed.read(&watches).await.unwrap();
    assert_eq!(proxy.take(), ["BatchGetItem"]);
    assert!(matches!(again[3], Observed::Present(_)));
    assert_ne!(again[3], seen[3], "the handle write shows");
    assert!(
        matches!(&again[9], Observed::Present(m) if m.version >= 1),
        "the published resource shows: {:?}",
        again[9]
    );
    assert_eq!(
        again[4..9],
        seen[4..9],
        "nothing else moved, the touched handle included"
    );
    assert_eq!(again[10..], seen[10..]);

    // Two watches of one item (one handle, two owners) are one key in the read.
    let twice = [
        Watch::Handle {
            owner: alice.clone(),
            id: own[0].id,
        },
        Watch::Handle {
            owner: bob.clone(),
            id: own[0].id,
        },
    ];
    let both = feed.read(&twice).await.unwrap();
    assert_eq!(proxy.take(), ["BatchGetItem"]);
    assert_eq!(both, [again[3].clone(), Observed::Absent]);

    // Tasks are read in the same request, their view only (never the call's arguments), and
    // bound to their owner like handles.
    use mcp_lambda::tasks::{DynamoDbTaskStore, RoundEnd, TaskRecord, TaskState, TaskStore};
    let tasks = DynamoDbTaskStore::new(client(&endpoint, &timeouts()).await, TABLE);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let big_call = json!({"params": {"arguments": {"blob": "x".repeat(100_000)}}});
    let task = TaskRecord::new(
        HandleId::random().unwrap(),
        &alice,
        big_call,
        now,
        60_000,
        500,
    );
    tasks.create(&task, None).await.unwrap();
    let mut with_tasks = watches.clone();
    with_tasks.push(Watch::Task {
        owner: alice.clone(),
        id: task.id,
    });
    with_tasks.push(Watch::Task {
        owner: bob.clone(),
        id: task.id,
    });
    proxy.take();
    let seen = feed.read(&with_tasks).await.unwrap();
    assert_eq!(
        proxy.take(),
        ["BatchGetItem"],
        "21 items, tasks included, one request"
    );
    let Observed::Task(read) = &seen[19] else {
        panic!("the owner's task: {:?}", seen[19]);
    };
    assert_eq!((read.id, read.state), (task.id, TaskState::Working));
    assert_eq!(read.call, Value::Null, "a listener never reads the call");
    assert_eq!(seen[20], Observed::Absent, "another owner's watch of it");
    assert!(
        tasks
            .claim(task.id, 0, now + 60_000)
            .await
            .unwrap()
            .is_some()
    );
    let end = RoundEnd::Completed(json!({"content": [], "isError": false}));
    assert!(tasks.finish(task.id, 0, &end).await.unwrap());
    proxy.take();
    let after = feed.read(&with_tasks).await.unwrap();
    assert_eq!(proxy.take(), ["BatchGetItem"]);
    let Observed::Task(read) = &after[19] else {
        panic!("the finished task: {:?}", after[19]);
    };
    assert_eq!(read.state, TaskState::Completed);
    assert_eq!(read.result, Some(json!({"content": [], "isError": false})));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_basket_change_through_one_process_reaches_a_listener_on_another() {
    let Some(endpoint) = endpoint("the cross-process listen test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let poll = Duration::from_millis(400);
    let mut env = basket_env(&endpoint, TABLE);
    env.push(("MCP_LISTEN_POLL_MS".into(), poll.as_millis().to_string()));
    let vars = env_refs(&env);
    let (a, b) = tokio::join!(Server::start(&vars), Server::start(&vars));
    let basket = a.ok("create_basket", json!({})).await;
    let uri = basket_uri(&basket);
    let missing = format!("basket://{}", HandleId::random().unwrap());

    let mut stream = b
        .listen(
            json!("b-1"),
            json!({"resourceSubscriptions": [uri, missing, "basket://nope"]}),
        )
        .await;
    assert_eq!(
        stream.acknowledged().await,
        json!({"resourceSubscriptions": [uri]}),
        "a missing or malformed basket is dropped"
    );
    for step in 0..2 {
        let id = basket["basket_id"].clone();
        let changed = if step == 0 {
            a.ok(
                "add_item",
                json!({"basket_id": id, "sku": "tea", "quantity": 2}),
            )
            .await;
            Instant::now()
        } else {
            a.ok("checkout", json!({"basket_id": id})).await;
            Instant::now()
        };
        let note = stream.next(Duration::from_secs(10)).await.unwrap();
        let took = changed.elapsed();
        assert_eq!(note["method"], "notifications/resources/updated", "{note}");
        assert_eq!(note["params"]["uri"], uri);
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            "b-1"
        );
        assert!(
            took <= 2 * poll,
            "step {step}: delivered after {took:?}, poll {poll:?}"
        );
    }
}

/// What a process sends DynamoDB over three idle seconds of its open streams (only polls:
/// asserted), and how long that was.
async fn idle_polls(proxy: &CountingProxy) -> (Vec<String>, Duration) {
    proxy.take();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = proxy.take();
    let elapsed = started.elapsed();
    assert!(
        requests.iter().all(|r| r == "BatchGetItem"),
        "only polls while idle: {requests:?}"
    );
    (requests, elapsed)
}

/// How many `BatchGetItem` a process sends per poll interval while its streams sit idle.
async fn polls_per_interval(proxy: &CountingProxy, poll: Duration) -> f64 {
    let (requests, elapsed) = idle_polls(proxy).await;
    requests.len() as f64 / (elapsed.as_secs_f64() / poll.as_secs_f64())
}

/// The listen-cost tests' common start: a basket polling every `poll` behind a counting proxy
/// (so its polls can be counted), with 20 new baskets to watch.
async fn twenty_baskets_polling_through_a_counter(
    endpoint: &str,
    poll: Duration,
) -> (CountingProxy, Server, Vec<Value>) {
    support::dynamodb::store(endpoint).await;
    let proxy = CountingProxy::start(endpoint).await;
    let mut env = basket_env(&proxy.url, TABLE);
    env.push(("MCP_LISTEN_POLL_MS".into(), poll.as_millis().to_string()));
    let server = Server::start(&env_refs(&env)).await;
    let mut baskets = Vec::new();
    for _ in 0..20 {
        baskets.push(server.ok("create_basket", json!({})).await);
    }
    (proxy, server, baskets)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_listener_costs_one_dynamodb_request_per_poll_whatever_it_watches() {
    let Some(endpoint) = endpoint("the listen request-count test") else {
        return;
    };
    let poll = Duration::from_millis(250);
    let (proxy, server, baskets) = twenty_baskets_polling_through_a_counter(&endpoint, poll).await;
    let uris: Vec<String> = baskets.iter().map(basket_uri).collect();
    let mut stream = server
        .listen(
            json!(1),
            json!({"toolsListChanged": true, "resourceSubscriptions": uris}),
        )
        .await;
    let accepted = stream.acknowledged().await;
    assert_eq!(
        accepted["resourceSubscriptions"].as_array().unwrap().len(),
        20
    );
    let (requests, elapsed) = idle_polls(&proxy).await;
    // At most one request per poll interval (the claim), and it does poll; a loaded machine
    // may delay ticks (fewer polls), never add requests.
    let polls = elapsed.as_secs_f64() / poll.as_secs_f64();
    let n = requests.len() as f64;
    assert!(
        n >= 2.0 && n <= polls + 1.0,
        "{n} requests in {elapsed:?} at one poll per {poll:?}"
    );
    // The figure docs/listen.md's cost table quotes, per minute at the default 1 s poll.
    let per_minute_at_default = n / elapsed.as_secs_f64() * poll.as_secs_f64() * 60.0;
    println!(
        "listen cost: {n} BatchGetItem for 21 watched items in {elapsed:?} at {poll:?} = {per_minute_at_default:.1} requests per listener-minute at MCP_LISTEN_POLL_MS=1000"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_list_is_kept_in_copies_written_together_so_no_item_is_hot() {
    use mcp_lambda::listen::{
        Change, ChangeFeed, DynamoDbFeed, LIST_COPIES, ListKind, Observed, Watch,
    };
    let Some(endpoint) = endpoint("the list copies test") else {
        return;
    };
    // A table of its own: the list items are global to a table.
    let table = "mcp-listen-copies-test";
    let sdk = client(&endpoint, &timeouts()).await;
    DynamoDbHandleStore::create_table(&sdk, table)
        .await
        .unwrap();
    let proxy = CountingProxy::start(&endpoint).await;
    let through_proxy = client(&proxy.url, &timeouts()).await;
    // Processes read a copy each, drawn at random: forty of them read most of the sixteen.
    let feeds: Vec<DynamoDbFeed> = (0..40)
        .map(|_| DynamoDbFeed::new(through_proxy.clone(), table))
        .collect();
    let tools = [Watch::List(ListKind::Tools)];
    let version = |seen: &Observed| match seen {
        Observed::Present(mark) => mark.version,
        _ => 0,
    };
    let mut before = Vec::new();
    for feed in &feeds {
        before.push(version(&feed.read(&tools).await.unwrap()[0]));
    }
    proxy.take();

    // A publish is one request, and every copy moves with it.
    feeds[0]
        .publish(&Change::List(ListKind::Tools))
        .await
        .unwrap();
    assert_eq!(proxy.take(), ["TransactWriteItems"]);
    for (feed, before) in feeds.iter().zip(&before) {
        let now = version(&feed.read(&tools).await.unwrap()[0]);
        assert_eq!(now, before + 1, "every copy saw the publish once");
    }
    let mut versions = Vec::new();
    for copy in 0..LIST_COPIES {
        let pk = match copy {
            0 => "l#tools".to_owned(),
            copy => format!("l#tools#{copy}"),
        };
        let item = sdk
            .get_item()
            .table_name(table)
            .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(pk.clone()))
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        let stored = item.item().and_then(|i| i.get("version")).cloned();
        assert!(stored.is_some(), "{pk} holds the list's version");
        versions.push(stored);
    }
    assert!(
        versions.windows(2).all(|w| w[0] == w[1]),
        "the copies agree: {versions:?}"
    );
    let distinct: std::collections::HashSet<u64> = before.iter().copied().collect();
    assert_eq!(distinct.len(), 1, "copies written together read alike");

    // A fingerprint: read first, written (to every copy) only when it differs.
    let fingerprint = format!("fp-{}", HandleId::random().unwrap());
    proxy.take();
    feeds[1]
        .publish(&Change::Fingerprint(ListKind::Tools, fingerprint.clone()))
        .await
        .unwrap();
    assert_eq!(proxy.take(), ["GetItem", "TransactWriteItems"]);
    feeds[2]
        .publish(&Change::Fingerprint(ListKind::Tools, fingerprint.clone()))
        .await
        .unwrap();
    assert_eq!(proxy.take(), ["GetItem"], "already there: nothing written");
    for feed in &feeds {
        let seen = feed.read(&tools).await.unwrap();
        assert!(
            matches!(&seen[0], Observed::Present(m) if m.tag.as_deref() == Some(fingerprint.as_str())),
            "{seen:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hundred_streams_on_one_process_cost_what_one_stream_watching_their_items_costs() {
    let Some(endpoint) = endpoint("the shared poll test") else {
        return;
    };
    let poll = Duration::from_millis(250);
    let (proxy, server, baskets) = twenty_baskets_polling_through_a_counter(&endpoint, poll).await;
    let uris: Vec<String> = baskets.iter().map(basket_uri).collect();

    // One stream watching the tool list and the 20 baskets.
    let mut one = server
        .listen(
            json!("one"),
            json!({"toolsListChanged": true, "resourceSubscriptions": uris}),
        )
        .await;
    one.acknowledged().await;
    let alone = polls_per_interval(&proxy, poll).await;
    drop(one);

    // A hundred streams, each watching the tool list and one of the same baskets.
    let mut streams = Vec::new();
    for i in 0..100 {
        let mut stream = server
            .listen(
                json!(format!("s-{i}")),
                json!({"toolsListChanged": true, "resourceSubscriptions": [uris[i % 20]]}),
            )
            .await;
        assert_eq!(
            stream.acknowledged().await,
            json!({"toolsListChanged": true, "resourceSubscriptions": [uris[i % 20]]})
        );
        streams.push(stream);
    }
    let shared = polls_per_interval(&proxy, poll).await;
    println!(
        "shared poll: {alone:.2} BatchGetItem per poll for one stream, {shared:.2} for 100 streams on the same 21 items"
    );
    assert!(
        (0.5..=1.3).contains(&alone),
        "one stream: {alone:.2} requests per poll"
    );
    assert!(
        shared <= alone * 1.3 && shared >= 0.5,
        "100 streams cost {shared:.2} requests per poll, one stream {alone:.2}"
    );

    // And every stream still hears its own basket within two intervals, and only its own.
    let changed = Instant::now();
    server
        .ok(
            "add_item",
            json!({"basket_id": baskets[3]["basket_id"], "sku": "tea", "quantity": 1}),
        )
        .await;
    for i in (3..100).step_by(20) {
        let note = streams[i].next(Duration::from_secs(10)).await.unwrap();
        assert_eq!(note["method"], "notifications/resources/updated", "{note}");
        assert_eq!(note["params"]["uri"], uris[3]);
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            format!("s-{i}")
        );
    }
    let took = changed.elapsed();
    assert!(
        took <= 2 * poll + Duration::from_millis(200),
        "delivered after {took:?}"
    );
    assert!(
        quiet(&mut streams[4], 3 * poll).await,
        "another basket's stream hears nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_deployment_that_changes_the_tools_tells_listeners_on_the_previous_one() {
    let Some(endpoint) = endpoint("the list fingerprint test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    // A table of its own: the list items are global to a table, and other tests start baskets
    // with other settings (so other fingerprints) all the time.
    let table = "mcp-listen-fingerprints-test";
    let sdk = client(&endpoint, &timeouts()).await;
    DynamoDbHandleStore::create_table(&sdk, table)
        .await
        .unwrap();
    let poll = Duration::from_millis(300);
    let mut env = basket_env(&endpoint, table);
    env.push(("MCP_LISTEN_POLL_MS".into(), poll.as_millis().to_string()));
    let old = Server::start(&env_refs(&env)).await;
    let mut stream = old
        .listen(json!("old"), json!({"toolsListChanged": true}))
        .await;
    stream.acknowledged().await;
    assert!(
        quiet(&mut stream, 3 * poll).await,
        "the stored fingerprint is this version's"
    );
    // Another instance of the same version changes nothing.
    let _same = Server::start(&env_refs(&env)).await;
    assert!(
        quiet(&mut stream, 3 * poll).await,
        "same version, same fingerprint"
    );

    // A new version (its tool descriptions state another expiry) starts: the old listener hears.
    let mut new_env = env.clone();
    new_env.push(("MCP_HANDLE_TTL_SECS".into(), "3600".into()));
    let _new = Server::start(&env_refs(&new_env)).await;
    let note = stream.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    assert!(quiet(&mut stream, 3 * poll).await, "told once");
}

fn task(owner: &str, ttl_ms: u64) -> mcp_lambda::tasks::TaskRecord {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    mcp_lambda::tasks::TaskRecord::new(
        HandleId::random().unwrap(),
        owner,
        json!({ "name": "slow", "arguments": {} }),
        now,
        ttl_ms,
        1000,
    )
}

fn ask(keys: &[&str]) -> mcp_lambda::tasks::RoundEnd {
    mcp_lambda::tasks::RoundEnd::InputRequired {
        requests: keys.iter().map(|k| ((*k).to_owned(), json!({}))).collect(),
        keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        request_state: Some("state".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_task_operation_is_one_dynamodb_request() {
    use mcp_lambda::tasks::{DynamoDbTaskStore, RoundEnd, TaskError, TaskState, TaskStore};
    let Some(endpoint) = endpoint("the task round-trip count test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await; // the table exists
    let proxy = CountingProxy::start(&endpoint).await;
    let store = DynamoDbTaskStore::new(client(&proxy.url, &timeouts()).await, TABLE);
    let alice = owner("alice");
    let mallory = owner("mallory");
    let lease = || task(&alice, 0).created_at_ms + 60_000;
    macro_rules! one_request {
        ($label:expr, $op:expr, $expected:expr) => {{
            let result = $op.await;
            assert_eq!(proxy.take(), [$expected], "{}", $label);
            result
        }};
    }

    let t = task(&alice, 3_600_000);
    one_request!("create", store.create(&t, None), "PutItem").unwrap();
    // With a caller's quota the count goes up in the same request, and past it nothing is made.
    let quota = mcp_lambda::tasks::CallerQuota {
        max: 1,
        window: std::time::Duration::from_secs(3600),
    };
    let counted = task(&mallory, 3_600_000);
    one_request!(
        "create, counted",
        store.create(&counted, Some(quota)),
        "TransactWriteItems"
    )
    .unwrap();
    let over = task(&mallory, 3_600_000);
    assert!(matches!(
        one_request!(
            "create, over the quota",
            store.create(&over, Some(quota)),
            "TransactWriteItems"
        ),
        Err(TaskError::CallerLimit { max: 1, .. })
    ));
    assert_eq!(store.get(&mallory, over.id).await, Err(TaskError::NotFound));
    proxy.take();
    assert_eq!(
        one_request!("get", store.get(&alice, t.id), "GetItem").unwrap(),
        t
    );
    assert_eq!(
        one_request!("get, other owner", store.get(&mallory, t.id), "GetItem"),
        Err(TaskError::NotFound)
    );
    let answers = std::collections::BTreeMap::from([("a".to_owned(), json!(1))]);
    assert_eq!(
        one_request!(
            "answer, not waiting",
            store.answer(&alice, t.id, &answers),
            "UpdateItem"
        )
        .unwrap(),
        t
    );
    assert!(
        one_request!("claim", store.claim(t.id, 0, lease()), "UpdateItem")
            .unwrap()
            .is_some()
    );
    assert_eq!(
        one_request!("claim, again", store.claim(t.id, 0, lease()), "UpdateItem"),
        Ok(None)
    );
    assert_eq!(
        one_request!(
            "check, with a message",
            store.check(t.id, 0, Some("working on it")),
            "UpdateItem"
        ),
        Ok(false)
    );
    assert_eq!(
        one_request!("check", store.check(t.id, 0, None), "GetItem"),
        Ok(false)
    );
    assert_eq!(
        one_request!(
            "finish, input required",
            store.finish(t.id, 0, &ask(&["a", "b"])),
            "UpdateItem"
        ),
        Ok(true)
    );
    let waiting =
        one_request!("answer", store.answer(&alice, t.id, &answers), "UpdateItem").unwrap();
    assert_eq!(waiting.state, TaskState::InputRequired);
    assert_eq!(waiting.pending.len(), 1);
    assert_eq!(
        one_request!(
            "answer, other owner",
            store.answer(&mallory, t.id, &answers),
            "UpdateItem"
        ),
        Err(TaskError::NotFound)
    );
    let cancelled = one_request!("cancel", store.cancel(&alice, t.id), "UpdateItem").unwrap();
    assert!(cancelled.cancel_requested);
    assert_eq!(
        one_request!(
            "finish, not claimed",
            store.finish(t.id, 1, &RoundEnd::Cancelled),
            "UpdateItem"
        ),
        Ok(false)
    );

    let u = task(&alice, 3_600_000);
    one_request!("create", store.create(&u, None), "PutItem").unwrap();
    one_request!("claim", store.claim(u.id, 0, lease()), "UpdateItem").unwrap();
    assert_eq!(
        one_request!(
            "finish",
            store.finish(u.id, 0, &RoundEnd::Completed(json!({ "content": [] }))),
            "UpdateItem"
        ),
        Ok(true)
    );
    let done = one_request!("cancel, finished", store.cancel(&alice, u.id), "UpdateItem").unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert!(!done.cancel_requested);
    assert_eq!(
        one_request!(
            "cancel, other owner",
            store.cancel(&mallory, u.id),
            "UpdateItem"
        ),
        Err(TaskError::NotFound)
    );

    // Refused before any request.
    let many: std::collections::BTreeMap<String, Value> = (0..=mcp_lambda::tasks::MAX_ANSWER_KEYS)
        .map(|i| (format!("k{i}"), json!(i)))
        .collect();
    assert!(matches!(
        store.answer(&alice, t.id, &many).await,
        Err(TaskError::Invalid(_))
    ));
    assert!(proxy.take().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_write_whose_answer_is_lost_recognises_itself_on_retry() {
    use mcp_lambda::tasks::{DynamoDbTaskStore, RoundEnd, TaskError, TaskState, TaskStore};
    let Some(endpoint) = endpoint("the task lost-answer test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let direct = DynamoDbTaskStore::new(client(&endpoint, &timeouts()).await, TABLE);
    let proxy = CountingProxy::start(&endpoint).await;
    let store = DynamoDbTaskStore::new(client(&proxy.url, &short_read_timeouts()).await, TABLE);
    let alice = owner("alice");
    let t = task(&alice, 3_600_000);
    let lease = t.created_at_ms + 600_000;

    // Each first attempt lands and its answer is lost; the retry finds this call's own write.
    proxy.swallow("PutItem", 1);
    store
        .create(&t, None)
        .await
        .expect("a retried create finds its own item");
    assert_eq!(proxy.take(), ["PutItem", "PutItem"], "create, retried");

    proxy.swallow("UpdateItem", 1);
    let claimed = store.claim(t.id, 0, lease).await.unwrap();
    assert_eq!(proxy.take(), ["UpdateItem", "UpdateItem"], "claim, retried");
    assert_eq!(claimed.map(|c| c.claimed), Some(Some((0, lease))));

    proxy.swallow("UpdateItem", 1);
    assert_eq!(store.finish(t.id, 0, &ask(&["a"])).await, Ok(true));
    assert_eq!(
        proxy.take(),
        ["UpdateItem", "UpdateItem"],
        "finish, retried"
    );

    // Answer and cancel are idempotent: the retry meets the same condition.
    proxy.swallow("UpdateItem", 1);
    let answered = store
        .answer(
            &alice,
            t.id,
            &std::collections::BTreeMap::from([("a".to_owned(), json!("yes"))]),
        )
        .await
        .unwrap();
    assert_eq!(
        proxy.take(),
        ["UpdateItem", "UpdateItem"],
        "answer, retried"
    );
    assert!(answered.pending.is_empty());
    assert_eq!(answered.responses.get("a"), Some(&json!("yes")));

    proxy.swallow("UpdateItem", 1);
    assert!(store.cancel(&alice, t.id).await.unwrap().cancel_requested);
    assert_eq!(
        proxy.take(),
        ["UpdateItem", "UpdateItem"],
        "cancel, retried"
    );

    // Three answers lost in a row: the same put is sent until one comes back, which finds
    // this call's own item.
    let repeated = task(&alice, 3_600_000);
    proxy.swallow("PutItem", 3);
    store
        .create(&repeated, None)
        .await
        .expect("the fourth attempt finds its own item");
    assert_eq!(proxy.take(), ["PutItem"; 4]);

    // Every answer lost for the whole budget: the create is not reported durable (and the
    // task never runs: nobody dispatches an unconfirmed create).
    let impatient = DynamoDbTaskStore::new(
        client(
            &proxy.url,
            &mcp_lambda::aws::AwsTimeouts {
                connect: Duration::from_millis(1000),
                read: Duration::from_millis(400),
                operation: Duration::from_millis(2000),
            },
        )
        .await,
        TABLE,
    );
    let lost = task(&alice, 3_600_000);
    proxy.swallow("PutItem", 1000);
    let result = impatient.create(&lost, None).await;
    assert!(
        matches!(result, Err(TaskError::Unavailable(_))),
        "{result:?}"
    );
    proxy.swallow("PutItem", 0);
    assert!(proxy.take().len() >= 3, "tried again within the budget");

    let read = direct.get(&alice, t.id).await.unwrap();
    assert_eq!(read.state, TaskState::InputRequired);
    assert_eq!(read.round, 1);
    assert!(read.cancel_requested);
    assert_eq!(
        direct.finish(t.id, 0, &RoundEnd::Cancelled).await,
        Ok(false)
    );
}

// --- durable tasks on the shared table ---------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_created_on_one_process_is_finished_and_read_from_another() {
    let Some(endpoint) = endpoint("the cross-process task test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let mut env = basket_env(&endpoint, TABLE);
    env.push(("MCP_TASK_POLL_MS".into(), "200".into()));
    let vars = env_refs(&env);
    let (a, b) = tokio::join!(Server::start(&vars), Server::start(&vars));
    let basket = a.ok("create_basket", json!({})).await;
    let id = basket["basket_id"].clone();
    a.ok(
        "add_item",
        json!({"basket_id": id, "sku": "TEA", "quantity": 3}),
    )
    .await;

    let tasks = json!({"io.modelcontextprotocol/clientCapabilities":
        {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let mut meta = tasks.clone();
    meta["progressToken"] = json!("order-1");
    let created = a
        .rpc(
            "tools/call",
            Some("place_order"),
            json!({"name": "place_order", "arguments": {"basket_id": id}, "_meta": meta}),
        )
        .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task_id = created["result"]["taskId"].as_str().unwrap().to_owned();

    // Read from the other process: working (with the worker's progress), then completed.
    let started = Instant::now();
    let mut messages = Vec::new();
    let done = loop {
        let task = b
            .rpc(
                "tasks/get",
                Some(&task_id),
                json!({"taskId": task_id, "_meta": tasks}),
            )
            .await;
        let result = task["result"].clone();
        if let Some(message) = result["statusMessage"].as_str() {
            messages.push(message.to_owned());
        }
        if result["status"] != "working" {
            break result;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{task}");
        tokio::time::sleep(Duration::from_millis(150)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    let summary = &done["result"]["structuredContent"];
    assert_eq!(summary["status"], "checked_out", "{done}");
    assert_eq!(summary["total_quantity"], 3);
    assert!(
        messages.iter().any(|m| m.contains("of 3")),
        "the worker's progress reached the task: {messages:?}"
    );
    // The basket is gone for both processes: the order ran once.
    let gone = b.tool_error("view_basket", json!({"basket_id": id})).await;
    assert!(gone.contains("create"), "{gone}");
    // Another caller's view of the task: with auth off every caller is the same owner, so the
    // owner binding is proven by tests/dynamodb_local/tasks.rs; an unknown id is -32602 here too.
    let unknown = b
        .rpc(
            "tasks/get",
            Some("00000000-0000-4000-8000-000000000000"),
            json!({"taskId": "00000000-0000-4000-8000-000000000000", "_meta": tasks}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}

/// 50 concurrent `add_item` calls on one basket while the store throttles and fails requests
/// (seeded, so a run repeats): each call's answer is checked against the basket afterwards.
/// Returns (succeeded, "may or may not", told "nothing was changed", the basket's quantity).
async fn fifty_add_items_on_a_bad_day(
    faults: &[(f64, support::fault_proxy::Fault)],
    seed: u64,
) -> (usize, usize, usize, u64) {
    use support::fault_proxy::{FaultProxy, Rule};
    let endpoint = endpoint("the bad-day test").expect("checked by the caller");
    support::dynamodb::store(&endpoint).await;
    let proxy = FaultProxy::start(&endpoint).await;
    let server = Arc::new(Server::start(&env_refs(&basket_env(&proxy.url, TABLE))).await);
    let id = server.ok("create_basket", json!({})).await["basket_id"].clone();
    // Each rule takes what the ones before it left: p / (1 - the share already taken).
    let mut taken = 0.0;
    for (n, (share, fault)) in faults.iter().enumerate() {
        proxy.rule(
            Rule::any()
                .probability(share / (1.0 - taken), seed + n as u64)
                .act(*fault),
        );
        taken += share;
    }
    let calls: Vec<_> = (0..50)
        .map(|_| {
            let (server, id) = (server.clone(), id.clone());
            tokio::spawn(async move {
                server
                    .call(
                        "add_item",
                        json!({ "basket_id": id, "sku": "TEA", "quantity": 1 }),
                    )
                    .await
            })
        })
        .collect();
    let (mut ok, mut unknown, mut unchanged) = (0, 0, 0);
    for call in calls {
        let result = call.await.unwrap();
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] != true {
            ok += 1;
        } else if text.contains("may or may not") {
            if unknown == 0 {
                eprintln!("an unknown answer: {result}");
            }
            unknown += 1;
        } else {
            assert!(
                text.contains("Nothing was changed"),
                "an answer of another kind: {text}"
            );
            unchanged += 1;
        }
    }
    proxy.clear();
    let view = server.ok("view_basket", json!({ "basket_id": id })).await;
    let quantity = items(&view).iter().map(|(_, q)| *q).sum::<u64>();
    let actions: std::collections::BTreeMap<String, usize> =
        proxy.log().iter().fold(Default::default(), |mut m, e| {
            *m.entry(format!("{:?}", e.action)).or_default() += 1;
            m
        });
    eprintln!(
        "50 add_item on a bad day (seed {seed}): {ok} applied, {unknown} may or may not, \
         {unchanged} nothing changed; the basket holds {quantity}; the proxy: {actions:?}"
    );
    (ok, unknown, unchanged, quantity)
}

/// Under 20 % throttling and 5 % 500s, and then with resets and lost answers mixed in, every
/// one of 50 concurrent writes is answered applied, unknown or unchanged, and the basket agrees:
/// nothing acknowledged is lost, nothing applied that nobody sent. How many are left "may or
/// may not" is at most 5 of 50: the server repeats a write whose outcome it does not know, same
/// write id, until an answer says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_bad_day_few_concurrent_writes_are_left_may_or_may_not() {
    use support::fault_proxy::Fault;
    if endpoint("the bad-day test").is_none() {
        return;
    }
    for (label, faults) in [
        (
            "throttling and 500s",
            vec![(0.20, Fault::Throttle), (0.05, Fault::ServerError)],
        ),
        (
            "with resets and lost answers",
            vec![
                (0.15, Fault::Throttle),
                (0.05, Fault::ServerError),
                (0.05, Fault::Reset),
                (0.05, Fault::LoseAnswer),
            ],
        ),
    ] {
        let (ok, unknown, unchanged, quantity) = fifty_add_items_on_a_bad_day(&faults, 29).await;
        assert_eq!(ok + unknown + unchanged, 50, "{label}");
        assert!(
            quantity as usize >= ok && quantity as usize <= ok + unknown,
            "{label}: {ok} acknowledged and {unknown} unknown, yet the basket holds {quantity}"
        );
        // At most 10 %: the store's own retries come 25 ms apart, so a repeat of a write whose
        // answer was lost meets the item while its write history still reaches back to it.
        // Measured 0 to 1 of 50 (7 to 15 before issue 29; 2 to 6 with the SDK's retries).
        eprintln!("{label}: {unknown} of 50 answered may or may not");
        assert!(
            unknown <= 5,
            "{label}: {unknown} of 50 answered may or may not (at most 5)"
        );
    }
}

/// Issue 41 (point 8): the function frozen between invocations (SIGSTOP) while a NAT-style
/// device forgets its idle connection to DynamoDB; after the thaw the next call's store request
/// meets the dead connection, and the call still succeeds (the crate's retry policy takes a
/// lost connection as retryable), on a new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_after_a_thaw_survives_the_connection_the_network_forgot() {
    let Some(endpoint) = endpoint("the DynamoDB thaw test") else {
        return;
    };
    support::dynamodb::store(&endpoint).await;
    let nat = support::nat::Nat::start(&endpoint).await;
    let env = basket_env(&nat.url, TABLE);
    let server = Server::start(&env_refs(&env)).await;
    let created = server.ok("create_basket", json!({})).await;
    let basket_id = created["basket_id"].as_str().unwrap().to_owned();
    let before = nat.connections();

    let signal = |name: &str| {
        let status = Command::new("kill")
            .args([name, &server.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {name}");
    };
    signal("-STOP");
    nat.forget();
    tokio::time::sleep(Duration::from_millis(300)).await;
    signal("-CONT");

    let added = server
        .ok(
            "add_item",
            json!({"basket_id": basket_id, "sku": "TEA", "quantity": 1}),
        )
        .await;
    assert_eq!(items(&added), [("TEA".to_owned(), 1)], "{added}");
    assert!(
        nat.connections() > before,
        "the store was reached again on a new connection"
    );
}
