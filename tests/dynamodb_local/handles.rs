//! The `HandleStore` contract: one suite every backend must pass.
//!
//! Each case is an `async fn(Arc<dyn HandleStore>)`. `on_both_handle_stores!` (`main.rs`, shared
//! with `keyed.rs`) turns the whole list into one `#[tokio::test]` per case and store:
//! `memory::case` and `dynamodb::case`; a new backend joins there.
//!
//! The DynamoDB run needs `MCP_TEST_DYNAMODB_ENDPOINT` (`scripts/dynamodb-tests.sh` starts
//! DynamoDB Local on loopback and sets it). Without it the DynamoDB cases fail under CI and are
//! skipped, loudly, elsewhere.
//!
//! Times are chosen for a remote backend too: expiry uses a 1 s TTL and waits 2.2 s, since
//! DynamoDB-backed stores may enforce expiry at whole-second granularity.

use mcp_lambda_test_support as support;

use std::sync::Arc;
use std::time::Duration;

use mcp_lambda::handles::{
    self, HandleError, HandleId, HandleStore, Handles, ListPosition, MAX_DATA_BYTES, MAX_LIST_PAGE,
    MAX_REQUEST_KEYS, RequestKey,
};
use mcp_lambda::{Caller, Principal};
use serde_json::json;

const HOUR: Duration = Duration::from_secs(3600);

/// Owners unique per test run, so cases never see each other's handles on a shared backend.
fn owner(name: &str) -> String {
    format!("{name}-{}", HandleId::random().unwrap())
}

on_both_handle_stores!("the DynamoDB handle-store contract";
    created_handle_reads_back_at_version_one,
    update_with_the_read_version_bumps_it,
    update_with_a_stale_version_is_a_conflict_naming_the_current_version,
    touch_keeps_data_and_bumps_the_version_so_older_writes_cannot_land,
    delete_removes_the_handle,
    a_deleted_handle_is_not_found_for_every_operation_like_a_missing_one,
    delete_with_a_stale_version_is_a_conflict_and_keeps_the_handle,
    expired_handle_is_not_found_for_every_operation,
    touch_keeps_a_handle_alive_past_its_first_expiry,
    another_owner_gets_exactly_what_a_missing_handle_gets,
    unknown_id_is_not_found,
    oversized_data_is_invalid_and_stores_nothing,
    zero_ttl_and_empty_owner_are_invalid,
    fifty_concurrent_increments_with_retry_lose_nothing,
    typed_modify_under_contention_loses_nothing,
    typed_request_key_applies_once_and_refuses_reuse,
    typed_take_removes_exactly_what_it_read_and_checks_first,
    typed_handles_are_bound_to_the_caller_and_their_kind,
    list_pages_through_every_live_handle_newest_first_once,
    list_never_shows_expired_handles,
    list_refuses_an_empty_owner_and_a_page_size_out_of_bounds,
    typed_list_cursors_continue_only_their_own_list,
);

async fn created_handle_reads_back_at_version_one(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let data = json!({ "items": { "tea": 2 }, "note": "ünïcode" });
    let created = store
        .create(&alice, "basket", data.clone(), HOUR)
        .await
        .unwrap();
    assert_eq!(created.version, 1);
    assert_eq!(created.owner, alice);
    assert_eq!(created.kind, "basket");
    assert_eq!(created.data, data);
    assert!(created.expires_at_ms > created.created_at_ms);
    let expected = created.created_at_ms + 3_600_000;
    assert!(
        created.expires_at_ms.abs_diff(expected) <= 1000,
        "expires_at_ms {} should be about created_at_ms + 1 h = {expected}",
        created.expires_at_ms
    );

    let read = store.get(&alice, created.id).await.unwrap();
    assert_eq!(read.id, created.id);
    assert_eq!(read.data, data);
    assert_eq!(read.version, 1);

    let other = store
        .create(&alice, "basket", json!({}), HOUR)
        .await
        .unwrap();
    assert_ne!(other.id, created.id, "every create mints a new id");
}

async fn update_with_the_read_version_bumps_it(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let h = store
        .create(&alice, "counter", json!(0), HOUR)
        .await
        .unwrap();
    let h2 = store.update(&alice, h.id, 1, json!(1), HOUR).await.unwrap();
    assert_eq!((h2.version, &h2.data), (2, &json!(1)));
    let h3 = store.update(&alice, h.id, 2, json!(2), HOUR).await.unwrap();
    assert_eq!((h3.version, &h3.data), (3, &json!(2)));
    let read = store.get(&alice, h.id).await.unwrap();
    assert_eq!((read.version, read.data), (3, json!(2)));
    assert_eq!(
        read.created_at_ms, h.created_at_ms,
        "updates keep the creation time"
    );
    assert_eq!(read.kind, "counter", "updates keep the kind");
}

async fn update_with_a_stale_version_is_a_conflict_naming_the_current_version(
    store: Arc<dyn HandleStore>,
) {
    let alice = owner("alice");
    let h = store
        .create(&alice, "counter", json!(0), HOUR)
        .await
        .unwrap();
    store
        .update(&alice, h.id, 1, json!("first"), HOUR)
        .await
        .unwrap();
    let err = store
        .update(&alice, h.id, 1, json!("second"), HOUR)
        .await
        .unwrap_err();
    assert_eq!(err, HandleError::Conflict { current_version: 2 });
    assert!(
        err.to_string().contains("re-read"),
        "message names the fix: {err}"
    );
    let read = store.get(&alice, h.id).await.unwrap();
    assert_eq!(
        read.data,
        json!("first"),
        "the losing write changed nothing"
    );
}

/// A touch is a fence: a write issued before it (say one whose answer was lost and that is still
/// queued in the backend) names a version that is now stale, so what the touch returns is final.
async fn touch_keeps_data_and_bumps_the_version_so_older_writes_cannot_land(
    store: Arc<dyn HandleStore>,
) {
    let alice = owner("alice");
    let h = store
        .create(&alice, "k", json!([1, 2]), Duration::from_secs(60))
        .await
        .unwrap();
    let touched = store.touch(&alice, h.id, HOUR).await.unwrap();
    assert_eq!(touched.version, 2);
    assert_eq!(touched.data, json!([1, 2]));
    assert_eq!(touched.created_at_ms, h.created_at_ms);
    assert!(
        touched.expires_at_ms >= h.expires_at_ms + 3_000_000,
        "touch moved expiry from {} to {}",
        h.expires_at_ms,
        touched.expires_at_ms
    );
    assert_eq!(
        store.update(&alice, h.id, 1, json!([3]), HOUR).await,
        Err(HandleError::Conflict { current_version: 2 }),
        "a write issued before the touch cannot land after it"
    );
    assert_eq!(
        store.delete(&alice, h.id, Some(1)).await,
        Err(HandleError::Conflict { current_version: 2 })
    );
    let updated = store
        .update(&alice, h.id, 2, json!([3]), HOUR)
        .await
        .unwrap();
    assert_eq!((updated.version, updated.data), (3, json!([3])));
}

async fn delete_removes_the_handle(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let h = store.create(&alice, "k", json!(null), HOUR).await.unwrap();
    store.delete(&alice, h.id, None).await.unwrap();
    assert_eq!(store.get(&alice, h.id).await, Err(HandleError::NotFound));
    assert_eq!(
        store.delete(&alice, h.id, None).await,
        Err(HandleError::NotFound)
    );

    let h = store.create(&alice, "k", json!(null), HOUR).await.unwrap();
    store.delete(&alice, h.id, Some(1)).await.unwrap();
    assert_eq!(store.get(&alice, h.id).await, Err(HandleError::NotFound));
}

/// A deleted handle leaves no trace an operation could tell from a handle that never existed:
/// no `Conflict` naming a version, whatever version is asked for, for its owner or anyone else.
/// (DynamoDB keeps a tombstone for a few minutes so a retried delete recognises itself; it must
/// not show.)
async fn a_deleted_handle_is_not_found_for_every_operation_like_a_missing_one(
    store: Arc<dyn HandleStore>,
) {
    let alice = owner("alice");
    let mallory = owner("mallory");
    let h = store.create(&alice, "k", json!(0), HOUR).await.unwrap();
    store.update(&alice, h.id, 1, json!(1), HOUR).await.unwrap();
    store.delete(&alice, h.id, Some(2)).await.unwrap();
    let missing = HandleId::random().unwrap();

    for who in [&alice, &mallory] {
        for id in [h.id, missing] {
            let label = format!(
                "{} on a {} handle",
                if who == &alice {
                    "its owner"
                } else {
                    "someone else"
                },
                if id == h.id { "deleted" } else { "missing" }
            );
            assert_eq!(
                store.get(who, id).await,
                Err(HandleError::NotFound),
                "get, {label}"
            );
            for version in [1, 2, 3] {
                assert_eq!(
                    store.update(who, id, version, json!("revived"), HOUR).await,
                    Err(HandleError::NotFound),
                    "update at version {version}, {label}"
                );
                assert_eq!(
                    store.delete(who, id, Some(version)).await,
                    Err(HandleError::NotFound),
                    "delete at version {version}, {label}"
                );
            }
            assert_eq!(
                store.touch(who, id, HOUR).await,
                Err(HandleError::NotFound),
                "touch, {label}"
            );
            assert_eq!(
                store.delete(who, id, None).await,
                Err(HandleError::NotFound),
                "delete, {label}"
            );
        }
    }
    assert_eq!(
        store.get(&alice, h.id).await,
        Err(HandleError::NotFound),
        "nothing above revived it"
    );
}

async fn delete_with_a_stale_version_is_a_conflict_and_keeps_the_handle(
    store: Arc<dyn HandleStore>,
) {
    let alice = owner("alice");
    let h = store.create(&alice, "k", json!(0), HOUR).await.unwrap();
    store.update(&alice, h.id, 1, json!(1), HOUR).await.unwrap();
    assert_eq!(
        store.delete(&alice, h.id, Some(1)).await,
        Err(HandleError::Conflict { current_version: 2 })
    );
    assert_eq!(store.get(&alice, h.id).await.unwrap().data, json!(1));
}

async fn expired_handle_is_not_found_for_every_operation(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let short = Duration::from_secs(1);
    let a = store.create(&alice, "k", json!(0), short).await.unwrap();
    let b = store.create(&alice, "k", json!(0), short).await.unwrap();
    let c = store.create(&alice, "k", json!(0), short).await.unwrap();
    let d = store.create(&alice, "k", json!(0), short).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2200)).await;

    assert_eq!(store.get(&alice, a.id).await, Err(HandleError::NotFound));
    assert_eq!(
        store.update(&alice, b.id, 1, json!(1), HOUR).await,
        Err(HandleError::NotFound),
        "update cannot revive an expired handle"
    );
    assert_eq!(
        store.touch(&alice, c.id, HOUR).await,
        Err(HandleError::NotFound),
        "touch cannot revive an expired handle"
    );
    assert_eq!(
        store.delete(&alice, d.id, None).await,
        Err(HandleError::NotFound)
    );
    // Still gone after the attempts above.
    for h in [a, b, c, d] {
        assert_eq!(store.get(&alice, h.id).await, Err(HandleError::NotFound));
    }
}

async fn touch_keeps_a_handle_alive_past_its_first_expiry(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let ttl = Duration::from_secs(2);
    let touched = store.create(&alice, "k", json!(0), ttl).await.unwrap();
    let updated = store.create(&alice, "k", json!(0), ttl).await.unwrap();
    let idle = store.create(&alice, "k", json!(0), ttl).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1200)).await;
    store.touch(&alice, touched.id, HOUR).await.unwrap();
    store
        .update(&alice, updated.id, 1, json!(1), HOUR)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(
        store.get(&alice, touched.id).await.is_ok(),
        "touch slid the expiry"
    );
    assert!(
        store.get(&alice, updated.id).await.is_ok(),
        "update slid the expiry"
    );
    assert_eq!(store.get(&alice, idle.id).await, Err(HandleError::NotFound));
}

async fn another_owner_gets_exactly_what_a_missing_handle_gets(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let mallory = owner("mallory");
    let h = store
        .create(&alice, "k", json!("secret"), HOUR)
        .await
        .unwrap();
    let missing = HandleId::random().unwrap();

    assert_eq!(
        store.get(&mallory, h.id).await,
        store.get(&mallory, missing).await
    );
    assert_eq!(store.get(&mallory, h.id).await, Err(HandleError::NotFound));
    assert_eq!(
        store.update(&mallory, h.id, 1, json!("mine"), HOUR).await,
        store
            .update(&mallory, missing, 1, json!("mine"), HOUR)
            .await,
    );
    assert_eq!(
        store.touch(&mallory, h.id, HOUR).await,
        store.touch(&mallory, missing, HOUR).await,
    );
    assert_eq!(
        store.delete(&mallory, h.id, None).await,
        store.delete(&mallory, missing, None).await,
    );
    assert_eq!(
        store.delete(&mallory, h.id, Some(1)).await,
        Err(HandleError::NotFound)
    );
    // Also with a wrong version: no conflict leaks that the id exists.
    assert_eq!(
        store.update(&mallory, h.id, 7, json!(0), HOUR).await,
        Err(HandleError::NotFound)
    );

    let read = store.get(&alice, h.id).await.unwrap();
    assert_eq!(
        (read.version, read.data),
        (1, json!("secret")),
        "mallory changed nothing"
    );
}

async fn unknown_id_is_not_found(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let missing = HandleId::random().unwrap();
    assert_eq!(store.get(&alice, missing).await, Err(HandleError::NotFound));
    assert_eq!(
        store.touch(&alice, missing, HOUR).await,
        Err(HandleError::NotFound)
    );
    assert_eq!(
        store.update(&alice, missing, 1, json!(0), HOUR).await,
        Err(HandleError::NotFound)
    );
    assert_eq!(
        store.delete(&alice, missing, None).await,
        Err(HandleError::NotFound)
    );
}

async fn oversized_data_is_invalid_and_stores_nothing(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let too_big = json!({ "blob": "x".repeat(MAX_DATA_BYTES) });
    let err = store
        .create(&alice, "k", too_big.clone(), HOUR)
        .await
        .unwrap_err();
    assert!(matches!(err, HandleError::Invalid(_)), "got {err:?}");
    assert!(
        err.to_string().contains("limit"),
        "message names the limit: {err}"
    );

    let h = store
        .create(&alice, "k", json!("small"), HOUR)
        .await
        .unwrap();
    let err = store
        .update(&alice, h.id, 1, too_big, HOUR)
        .await
        .unwrap_err();
    assert!(matches!(err, HandleError::Invalid(_)), "got {err:?}");
    let read = store.get(&alice, h.id).await.unwrap();
    assert_eq!((read.version, read.data), (1, json!("small")));

    let near_limit = json!("x".repeat(MAX_DATA_BYTES - 1024));
    store
        .update(&alice, h.id, 1, near_limit, HOUR)
        .await
        .unwrap();
}

async fn zero_ttl_and_empty_owner_are_invalid(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    assert!(matches!(
        store.create(&alice, "k", json!(0), Duration::ZERO).await,
        Err(HandleError::Invalid(_))
    ));
    assert!(matches!(
        store.create("", "k", json!(0), HOUR).await,
        Err(HandleError::Invalid(_))
    ));
    assert!(matches!(
        store.create(&alice, "", json!(0), HOUR).await,
        Err(HandleError::Invalid(_))
    ));
    let h = store.create(&alice, "k", json!(0), HOUR).await.unwrap();
    assert!(matches!(
        store.touch(&alice, h.id, Duration::ZERO).await,
        Err(HandleError::Invalid(_))
    ));
    assert!(matches!(
        store
            .update(&alice, h.id, 1, json!(1), Duration::ZERO)
            .await,
        Err(HandleError::Invalid(_))
    ));
}

async fn fifty_concurrent_increments_with_retry_lose_nothing(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let h = store
        .create(&alice, "counter", json!({ "n": 0 }), HOUR)
        .await
        .unwrap();
    let conflicts = Arc::new(std::sync::atomic::AtomicU64::new(0));

    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let (store, alice, conflicts) = (store.clone(), alice.clone(), conflicts.clone());
            tokio::spawn(async move {
                for _attempt in 0..500 {
                    let current = store.get(&alice, h.id).await.unwrap();
                    let n = current.data["n"].as_u64().unwrap();
                    let next = json!({ "n": n + 1 });
                    match store
                        .update(&alice, h.id, current.version, next, HOUR)
                        .await
                    {
                        Ok(_) => return,
                        Err(HandleError::Conflict { current_version }) => {
                            assert!(current_version > current.version);
                            conflicts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tokio::task::yield_now().await;
                        }
                        Err(other) => panic!("unexpected error: {other}"),
                    }
                }
                panic!("no update won after 500 attempts");
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }

    let done = store.get(&alice, h.id).await.unwrap();
    assert_eq!(done.data["n"], 50, "every increment landed exactly once");
    assert_eq!(done.version, 51, "one version per successful update");
    eprintln!(
        "50 concurrent increments: {} conflicts retried",
        conflicts.load(std::sync::atomic::Ordering::Relaxed)
    );
}

// --- The typed layer over each backend ------------------------------------------------------

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Tally {
    n: u64,
    log: Vec<String>,
}

/// A caller of its own per test run (an authenticated principal, so owners never collide).
fn caller(name: &str) -> Caller {
    Caller::from(Principal {
        issuer: "https://issuer.test".into(),
        subject: owner(name),
        scopes: vec![],
        client_id: None,
    })
}

fn tallies(store: Arc<dyn HandleStore>) -> Handles<Tally> {
    Handles::new(store, "tally", HOUR)
}

/// Where the typed tests start: the store's tallies, alice, and her new tally at zero.
async fn alices_new_tally(
    store: Arc<dyn HandleStore>,
) -> (Handles<Tally>, Caller, handles::Stored<Tally>) {
    let tallies = tallies(store);
    let alice = caller("alice");
    let t = tallies
        .create(&alice, Tally { n: 0, log: vec![] })
        .await
        .unwrap();
    (tallies, alice, t)
}

async fn typed_modify_under_contention_loses_nothing(store: Arc<dyn HandleStore>) {
    let (tallies, alice, t) = alices_new_tally(store).await;
    let writers: Vec<_> = (0..12)
        .map(|i| {
            let (tallies, alice) = (tallies.clone(), alice.clone());
            tokio::spawn(async move {
                tallies
                    .modify(&alice, t.id, |tally| {
                        tally.n += 1;
                        tally.log.push(i.to_string());
                    })
                    .await
            })
        })
        .collect();
    for writer in writers {
        writer
            .await
            .unwrap()
            .expect("every writer lands within its retries");
    }
    let done = tallies.read(&alice, t.id).await.unwrap();
    assert_eq!(done.value.n, 12, "every change landed exactly once");
    assert_eq!(done.value.log.len(), 12);
    assert_eq!(done.version, 13, "one version per write");
}

async fn typed_request_key_applies_once_and_refuses_reuse(store: Arc<dyn HandleStore>) {
    let (tallies, alice, t) = alices_new_tally(store).await;
    let add = |tally: &mut Tally| {
        tally.n += 1;
        Ok::<_, HandleError>(())
    };
    let key = RequestKey::new("req-1", "add 1").unwrap();
    let first = tallies
        .try_modify(&alice, t.id, Some(key.clone()), add)
        .await
        .unwrap();
    let again = tallies
        .try_modify(&alice, t.id, Some(key), add)
        .await
        .unwrap();
    assert_eq!((first.value.n, first.version), (1, 2));
    assert_eq!(
        (again.value.n, again.version),
        (1, 2),
        "a replay writes nothing"
    );
    let reused = RequestKey::new("req-1", "add 5").unwrap();
    assert_eq!(
        tallies.try_modify(&alice, t.id, Some(reused), add).await,
        Err(HandleError::RequestKeyReused {
            key: "req-1".into(),
            change: "add 1".into()
        })
    );
    // Only the latest keys are remembered: the first is forgotten after MAX_REQUEST_KEYS more.
    for n in 0..MAX_REQUEST_KEYS {
        let key = RequestKey::new(format!("k{n}"), "add 1").unwrap();
        tallies
            .try_modify(&alice, t.id, Some(key), add)
            .await
            .unwrap();
    }
    let key = RequestKey::new("req-1", "add 1").unwrap();
    let forgotten = tallies
        .try_modify(&alice, t.id, Some(key), add)
        .await
        .unwrap();
    assert_eq!(forgotten.value.n, 2 + MAX_REQUEST_KEYS as u64);
}

async fn typed_take_removes_exactly_what_it_read_and_checks_first(store: Arc<dyn HandleStore>) {
    let (tallies, alice, t) = alices_new_tally(store).await;
    let refused = tallies
        .take(&alice, t.id, |tally| {
            if tally.n == 0 {
                Err(HandleError::Invalid("empty".into()))
            } else {
                Ok(())
            }
        })
        .await;
    assert_eq!(refused, Err(HandleError::Invalid("empty".into())));
    assert!(
        tallies.read(&alice, t.id).await.is_ok(),
        "a refused take removes nothing"
    );
    tallies
        .modify(&alice, t.id, |tally| tally.n = 7)
        .await
        .unwrap();
    let taken = tallies
        .take(&alice, t.id, |_| Ok::<_, HandleError>(()))
        .await
        .unwrap();
    assert_eq!(taken.value.n, 7);
    assert_eq!(tallies.read(&alice, t.id).await, Err(HandleError::NotFound));
    assert_eq!(
        tallies
            .take(&alice, t.id, |_| Ok::<_, HandleError>(()))
            .await,
        Err(HandleError::NotFound)
    );
}

async fn typed_handles_are_bound_to_the_caller_and_their_kind(store: Arc<dyn HandleStore>) {
    let tallies = tallies(store.clone());
    let alice = caller("alice");
    let mallory = caller("mallory");
    let t = tallies
        .create(&alice, Tally { n: 1, log: vec![] })
        .await
        .unwrap();
    let missing = HandleId::random().unwrap();
    for (who, id) in [(&mallory, t.id), (&alice, missing)] {
        assert_eq!(tallies.read(who, id).await, Err(HandleError::NotFound));
        assert_eq!(tallies.touch(who, id).await, Err(HandleError::NotFound));
        assert_eq!(
            tallies.modify(who, id, |tally| tally.n += 1).await,
            Err(HandleError::NotFound)
        );
        assert_eq!(tallies.delete(who, id).await, Err(HandleError::NotFound));
    }
    let others: Handles<Tally> = Handles::new(store, "other-kind", HOUR);
    assert_eq!(others.read(&alice, t.id).await, Err(HandleError::NotFound));
    let still = tallies.read(&alice, t.id).await.unwrap();
    assert_eq!(
        (still.value.n, still.version),
        (1, 1),
        "nobody else changed it"
    );
    tallies.delete(&alice, t.id).await.unwrap();
    assert_eq!(tallies.read(&alice, t.id).await, Err(HandleError::NotFound));
}

/// Every page of `owner`'s `kind`, `limit` at a time, in order: (ids, pages read).
async fn list_all(
    store: &dyn HandleStore,
    owner: &str,
    kind: &str,
    limit: usize,
) -> (Vec<handles::Handle>, usize) {
    let (mut listed, mut pages, mut after) = (Vec::new(), 0, None);
    loop {
        let page = store.list(owner, kind, after, limit).await.unwrap();
        pages += 1;
        assert!(
            page.handles.len() <= limit,
            "a page holds at most the limit"
        );
        listed.extend(page.handles);
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
        assert!(pages <= 100, "the listing never ends");
    }
    (listed, pages)
}

async fn list_pages_through_every_live_handle_newest_first_once(store: Arc<dyn HandleStore>) {
    let (alice, bob) = (owner("alice"), owner("bob"));
    let mut made = Vec::new();
    for i in 0..7 {
        made.push(
            store
                .create(&alice, "note", json!({ "i": i }), HOUR)
                .await
                .unwrap(),
        );
        if i % 3 == 0 {
            // Some apart in time, some within one millisecond of each other.
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    store
        .create(&alice, "memo", json!("another kind"), HOUR)
        .await
        .unwrap();
    store
        .create(&bob, "note", json!("another owner"), HOUR)
        .await
        .unwrap();
    store.delete(&alice, made[2].id, None).await.unwrap();
    let updated = store
        .update(&alice, made[4].id, 1, json!("changed"), HOUR)
        .await
        .unwrap();

    let (listed, pages) = list_all(store.as_ref(), &alice, "note", 3).await;
    let ids: Vec<HandleId> = listed.iter().map(|h| h.id).collect();
    let mut expected: Vec<HandleId> = made
        .iter()
        .map(|h| h.id)
        .filter(|id| *id != made[2].id)
        .collect();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort();
    expected.sort();
    assert_eq!(
        sorted_ids, expected,
        "every live note of alice's, once; not the deleted one, not the memo, not bob's"
    );
    assert!(
        listed
            .windows(2)
            .all(|w| w[0].created_at_ms >= w[1].created_at_ms),
        "newest first: {:?}",
        listed.iter().map(|h| h.created_at_ms).collect::<Vec<_>>()
    );
    assert!(
        (2..=4).contains(&pages),
        "6 handles, 3 a page: {pages} pages"
    );
    let shown = listed.iter().find(|h| h.id == updated.id).unwrap();
    assert_eq!(
        (shown.version, &shown.data),
        (2, &json!("changed")),
        "a listed handle is as stored"
    );
    assert!(listed.iter().all(|h| h.owner == alice && h.kind == "note"));

    // One page of everything, and a position past the oldest: nothing more.
    let (all, pages) = list_all(store.as_ref(), &alice, "note", MAX_LIST_PAGE).await;
    assert_eq!(all.len(), 6);
    assert!(pages <= 2, "{pages}");
    let past_oldest = ListPosition::after(all.last().unwrap());
    let tail = store
        .list(&alice, "note", Some(past_oldest), 10)
        .await
        .unwrap();
    assert!(tail.handles.is_empty() && tail.next.is_none(), "{tail:?}");
    // Somebody with no handles gets an empty, complete page.
    let none = store
        .list(&owner("nobody"), "note", None, 10)
        .await
        .unwrap();
    assert!(none.handles.is_empty() && none.next.is_none(), "{none:?}");
}

async fn list_never_shows_expired_handles(store: Arc<dyn HandleStore>) {
    let alice = owner("alice");
    let kept = store.create(&alice, "note", json!(1), HOUR).await.unwrap();
    store
        .create(&alice, "note", json!(2), Duration::from_secs(1))
        .await
        .unwrap();
    assert_eq!(
        list_all(store.as_ref(), &alice, "note", 10).await.0.len(),
        2
    );
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let (listed, _) = list_all(store.as_ref(), &alice, "note", 10).await;
    assert_eq!(listed.iter().map(|h| h.id).collect::<Vec<_>>(), [kept.id]);
}

async fn list_refuses_an_empty_owner_and_a_page_size_out_of_bounds(store: Arc<dyn HandleStore>) {
    for (who, limit) in [("", 10), ("alice", 0), ("alice", MAX_LIST_PAGE + 1)] {
        assert!(
            matches!(
                store.list(who, "note", None, limit).await,
                Err(HandleError::Invalid(_))
            ),
            "owner {who:?}, limit {limit}"
        );
    }
}

async fn typed_list_cursors_continue_only_their_own_list(store: Arc<dyn HandleStore>) {
    let tallies = tallies(store.clone()).with_page_size(2);
    let (alice, bob) = (caller("alice"), caller("bob"));
    for n in 0..5 {
        tallies
            .create(&alice, Tally { n, log: vec![] })
            .await
            .unwrap();
    }
    tallies
        .create(&bob, Tally { n: 99, log: vec![] })
        .await
        .unwrap();
    let first = tallies.list(&alice, None).await.unwrap();
    let cursor = first.next_cursor.clone().expect("five tallies, two a page");
    let mut seen: Vec<u64> = first.items.iter().map(|t| t.value.n).collect();
    let mut next = Some(cursor.clone());
    while let Some(cursor) = next {
        let page = tallies.list(&alice, Some(&cursor)).await.unwrap();
        seen.extend(page.items.iter().map(|t| t.value.n));
        next = page.next_cursor;
    }
    seen.sort();
    assert_eq!(seen, [0, 1, 2, 3, 4]);

    let refused = |result: Result<handles::Page<Tally>, HandleError>| match result {
        Err(HandleError::Invalid(message)) => assert!(message.contains("cursor"), "{message}"),
        other => panic!("expected a refused cursor, got {other:?}"),
    };
    // Bob with Alice's cursor, another kind with it, a tampered one, garbage.
    refused(tallies.list(&bob, Some(&cursor)).await);
    let others: Handles<Tally> = Handles::new(store, "other-kind", HOUR);
    refused(others.list(&alice, Some(&cursor)).await);
    let mut tampered = cursor.clone().into_bytes();
    let last = tampered.len() - 5;
    tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
    refused(
        tallies
            .list(&alice, Some(std::str::from_utf8(&tampered).unwrap()))
            .await,
    );
    refused(tallies.list(&alice, Some("not-a-cursor")).await);
    refused(tallies.list(&alice, Some(&"A".repeat(10_000))).await);
    // Bob's own list is his alone.
    let bobs = tallies.list(&bob, None).await.unwrap();
    assert_eq!(
        bobs.items.iter().map(|t| t.value.n).collect::<Vec<_>>(),
        [99]
    );
}

/// One caller's share (`CallerQuota`, `MCP_HANDLES_MAX_PER_CALLER`): past it `create` answers
/// `CallerLimit` and stores nothing; another caller, and the anonymous one every client shares
/// with auth off, still create.
async fn one_caller_cannot_fill_the_store(store: Arc<dyn HandleStore>) {
    let (greedy, other) = (owner("greedy"), owner("other"));
    for _ in 0..2 {
        store.create(&greedy, "k", json!(0), HOUR).await.unwrap();
    }
    match store.create(&greedy, "k", json!(0), HOUR).await {
        Err(HandleError::CallerLimit {
            max: 2,
            window_secs: 3600,
            retry_after,
        }) => assert!(retry_after <= HOUR, "{retry_after:?}"),
        other => panic!("expected the caller's limit, got {other:?}"),
    }
    store.create(&other, "k", json!(0), HOUR).await.unwrap();
    for _ in 0..3 {
        store
            .create("anonymous", "k", json!(0), HOUR)
            .await
            .unwrap();
    }
}

/// `max` creates per caller an hour: the quota tests differ only in `max`.
fn quota_of(max: u32) -> handles::CallerQuota {
    handles::CallerQuota { max, window: HOUR }
}

/// The DynamoDB quota tests' store, under [`quota_of`] `max`, or `None` (loudly) outside the
/// DynamoDB script.
async fn dynamodb_store_under_quota(max: u32) -> Option<handles::DynamoDbHandleStore> {
    let endpoint = support::dynamodb::endpoint("the DynamoDB handle quota")?;
    let store = support::dynamodb::store(&endpoint).await;
    Some(store.with_caller_quota(quota_of(max)))
}

#[tokio::test]
async fn one_caller_cannot_fill_the_memory_store() {
    let store = handles::MemoryHandleStore::new().with_caller_quota(quota_of(2));
    one_caller_cannot_fill_the_store(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_caller_cannot_fill_the_dynamodb_store() {
    let Some(store) = dynamodb_store_under_quota(2).await else {
        return;
    };
    one_caller_cannot_fill_the_store(Arc::new(store)).await;
}

/// A caller's creates at the same moment all land and all count (one count item, no lost
/// update: the 21st is refused). DynamoDB Local serializes these transactions; DynamoDB may
/// cancel one for `TransactionConflict`, which the store tries again (not exercised here).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_of_one_caller_all_land_under_its_quota() {
    let Some(store) = dynamodb_store_under_quota(20).await else {
        return;
    };
    let store: Arc<dyn HandleStore> = Arc::new(store);
    let busy = owner("busy");
    let creates = (0..20).map(|n| {
        let (store, busy) = (store.clone(), busy.clone());
        tokio::spawn(async move { store.create(&busy, "k", json!(n), HOUR).await })
    });
    for create in futures::future::join_all(creates).await {
        create
            .unwrap()
            .expect("every create within the quota lands");
    }
    assert!(matches!(
        store.create(&busy, "k", json!(0), HOUR).await,
        Err(HandleError::CallerLimit { max: 20, .. })
    ));
}
