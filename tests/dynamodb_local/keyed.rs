//! Keyed handles (`Handles::keyed`): a caller's own named state, created at first use, on every
//! backend. The same cases run on the memory store and on DynamoDB Local
//! (`scripts/dynamodb-tests.sh --test keyed` sets `MCP_TEST_DYNAMODB_ENDPOINT`; without it the
//! DynamoDB cases fail under CI and are skipped, loudly, elsewhere).
//!
//! The race they exist for: a tool with no id argument ("increment my counter") called for the
//! first time by one caller ten times at once, over two instances. The DynamoDB case runs the
//! ten in two processes (this test binary again, in a child mode chosen by an environment
//! variable), five each, started at the same moment, on one table.

use mcp_lambda_test_support as support;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcp_lambda::handles::{
    self, CallerQuota, HandleError, HandleId, HandleStore, Handles, MAX_KEY_BYTES,
};
use mcp_lambda::{Caller, Principal};

const HOUR: Duration = Duration::from_secs(3600);

/// An authenticated caller of its own per test run, so tests never see each other's handles
/// on the shared table (and the quota counts it: the anonymous caller is never counted).
fn caller(name: &str) -> Caller {
    caller_with_subject(format!("{name}-{}", HandleId::random().unwrap()))
}

fn caller_with_subject(subject: String) -> Caller {
    Caller::from(Principal {
        issuer: "https://issuer.test".into(),
        subject,
        scopes: vec![],
        client_id: None,
    })
}

fn counters(store: Arc<dyn HandleStore>) -> Handles<u64> {
    Handles::new(store, "counter", HOUR)
}

/// Every one of `caller`'s handles of this kind, following the cursors.
async fn list_all(handles: &Handles<u64>, caller: &Caller) -> Vec<handles::Stored<u64>> {
    let (mut all, mut cursor) = (Vec::new(), None::<String>);
    loop {
        let page = handles.list(caller, cursor.as_deref()).await.unwrap();
        all.extend(page.items);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return all,
        }
    }
}

on_both_handle_stores!("the keyed-handle contract on DynamoDB";
    a_keyed_handle_is_created_at_first_use_and_only_then,
    a_deleted_keyed_handle_starts_again_from_the_default,
    an_expired_keyed_handle_starts_again_from_the_default,
    keyed_handles_are_listed_with_the_callers_other_handles,
    another_callers_same_key_is_another_handle_out_of_reach,
    another_kind_or_key_is_another_handle,
    a_bad_key_is_invalid_key_and_touches_nothing,
    ten_concurrent_first_uses_end_with_one_handle_holding_ten,
);

async fn a_keyed_handle_is_created_at_first_use_and_only_then(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let ada = caller("ada");
    let mine = counters.keyed(&ada, "default");

    // Reading creates nothing.
    assert_eq!(mine.value_or(7).await.unwrap(), 7);
    assert_eq!(mine.read().await.unwrap(), None);
    assert!(list_all(&counters, &ada).await.is_empty());

    let first = mine.modify_or_create(0, |n| *n += 1).await.unwrap();
    assert_eq!(first.value, 1);
    assert_eq!(first.id, mine.id().unwrap(), "the id is the derived one");
    let second = mine.modify_or_create(0, |n| *n += 1).await.unwrap();
    assert_eq!((second.id, second.value), (first.id, 2));
    assert!(second.version > first.version);

    // get_or_create on an existing handle returns it as it is; the default is not written.
    let got = mine.get_or_create(100).await.unwrap();
    assert_eq!((got.value, got.version), (2, second.version));
    // The id operations reach it too.
    assert_eq!(counters.read(&ada, first.id).await.unwrap().value, 2);
    assert_eq!(mine.value_or(0).await.unwrap(), 2);
    // A new `keyed` for the same name is the same handle (nothing is held in the value).
    assert_eq!(counters.keyed(&ada, "default").id(), mine.id());
}

async fn a_deleted_keyed_handle_starts_again_from_the_default(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let ada = caller("ada");
    let mine = counters.keyed(&ada, "default");
    mine.modify_or_create(0, |n| *n += 5).await.unwrap();
    let before = mine.read().await.unwrap().unwrap();

    mine.delete().await.unwrap();
    assert_eq!(mine.read().await.unwrap(), None);
    assert_eq!(mine.delete().await, Err(HandleError::NotFound));
    assert!(list_all(&counters, &ada).await.is_empty());

    // Made again at the same id (on DynamoDB over the tombstone), from the default.
    let again = mine.modify_or_create(0, |n| *n += 1).await.unwrap();
    assert_eq!((again.id, again.value), (before.id, 1));
    assert_eq!(list_all(&counters, &ada).await.len(), 1);
}

async fn an_expired_keyed_handle_starts_again_from_the_default(store: Arc<dyn HandleStore>) {
    // A 1 s TTL and a 2.2 s wait: DynamoDB-backed stores may count expiry in whole seconds.
    let counters: Handles<u64> = Handles::new(store, "counter", Duration::from_secs(1));
    let ada = caller("ada");
    let mine = counters.keyed(&ada, "default");
    let first = mine.modify_or_create(0, |n| *n += 5).await.unwrap();
    assert!(first.expires_at_ms > first.created_at_ms);
    tokio::time::sleep(Duration::from_millis(2200)).await;

    assert_eq!(mine.read().await.unwrap(), None);
    assert_eq!(mine.value_or(0).await.unwrap(), 0);
    let again = mine.modify_or_create(0, |n| *n += 1).await.unwrap();
    assert_eq!((again.id, again.value), (first.id, 1));
}

async fn keyed_handles_are_listed_with_the_callers_other_handles(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let ada = caller("ada");
    let plain = counters.create(&ada, 40).await.unwrap();
    let keyed = counters
        .keyed(&ada, "default")
        .modify_or_create(0, |n| *n += 2)
        .await
        .unwrap();
    let mut listed: Vec<_> = list_all(&counters, &ada)
        .await
        .into_iter()
        .map(|s| (s.id, s.value))
        .collect();
    listed.sort();
    let mut expected = vec![(plain.id, 40), (keyed.id, 2)];
    expected.sort();
    assert_eq!(listed, expected);
}

async fn another_callers_same_key_is_another_handle_out_of_reach(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let (ada, bob) = (caller("ada"), caller("bob"));
    let adas = counters
        .keyed(&ada, "default")
        .modify_or_create(0, |n| *n += 3)
        .await
        .unwrap();
    let bobs = counters.keyed(&bob, "default");
    assert_ne!(bobs.id().unwrap(), adas.id);
    assert_eq!(bobs.read().await.unwrap(), None);
    assert_eq!(
        bobs.modify_or_create(0, |n| *n += 1).await.unwrap().value,
        1
    );
    // Ada's id, computed or learnt, reaches nothing for Bob.
    assert_eq!(
        counters.read(&bob, adas.id).await,
        Err(HandleError::NotFound)
    );
    assert_eq!(
        counters.delete(&bob, adas.id).await,
        Err(HandleError::NotFound)
    );
    assert_eq!(counters.keyed(&ada, "default").value_or(0).await, Ok(3));
}

async fn another_kind_or_key_is_another_handle(store: Arc<dyn HandleStore>) {
    let counters = counters(store.clone());
    let scores: Handles<u64> = Handles::new(store, "score", HOUR);
    let ada = caller("ada");
    counters
        .keyed(&ada, "default")
        .modify_or_create(0, |n| *n += 1)
        .await
        .unwrap();
    assert_eq!(scores.keyed(&ada, "default").read().await.unwrap(), None);
    assert_eq!(counters.keyed(&ada, "other").read().await.unwrap(), None);
    assert_ne!(
        scores.keyed(&ada, "default").id(),
        counters.keyed(&ada, "default").id()
    );
}

async fn a_bad_key_is_invalid_key_and_touches_nothing(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let ada = caller("ada");
    let too_long = "k".repeat(MAX_KEY_BYTES + 1);
    for bad in ["", too_long.as_str(), "has space", "a/b", "é", "new\nline"] {
        let keyed = counters.keyed(&ada, bad);
        let invalid = |r: Result<(), HandleError>| {
            assert!(
                matches!(r, Err(HandleError::InvalidKey(_))),
                "{bad:?}: {r:?}"
            );
        };
        invalid(keyed.id().map(drop));
        invalid(keyed.read().await.map(drop));
        invalid(keyed.value_or(0).await.map(drop));
        invalid(keyed.get_or_create(0).await.map(drop));
        invalid(keyed.modify_or_create(0, |n| *n += 1).await.map(drop));
        invalid(keyed.delete().await);
        let message = keyed.id().unwrap_err().to_string();
        assert!(
            bad.is_empty() || !message.contains(bad),
            "the key is not echoed: {message}"
        );
    }
    assert!(list_all(&counters, &ada).await.is_empty());
    let longest = "k".repeat(MAX_KEY_BYTES);
    for good in [longest.as_str(), "a", "Cart_2-x.y:z"] {
        counters
            .keyed(&ada, good)
            .modify_or_create(0, |n| *n += 1)
            .await
            .unwrap();
    }
    assert_eq!(list_all(&counters, &ada).await.len(), 3);
}

/// One new caller's ten first "increment my counter" calls at the same moment, in one process:
/// one handle, every increment applied.
async fn ten_concurrent_first_uses_end_with_one_handle_holding_ten(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let ada = caller("ada");
    increment_concurrently(&counters, &ada, 10, increment_under_test()).await;
    assert_one_counter_of(&counters, &ada, 10).await;
}

/// How a test increments "the caller's counter".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Increment {
    /// `keyed(..).modify_or_create`: what the library offers.
    Keyed,
    /// [`list_then_create_increment`]: the negative control.
    ListThenCreate,
}

/// `n` increments of `caller`'s counter, all started at once (after a barrier), `how` says
/// how. Panics if one fails.
async fn increment_concurrently(
    counters: &Handles<u64>,
    caller: &Caller,
    n: usize,
    how: Increment,
) {
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (counters, caller, barrier) = (counters.clone(), caller.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                match how {
                    Increment::Keyed => counters
                        .keyed(&caller, "default")
                        .modify_or_create(0, |n| *n += 1)
                        .await
                        .map(drop),
                    Increment::ListThenCreate => {
                        list_then_create_increment(&counters, &caller).await
                    }
                }
            })
        })
        .collect();
    for task in futures::future::join_all(tasks).await {
        task.unwrap().expect("every increment succeeds");
    }
}

/// The helper a server without keyed handles writes, kept as the negative control the tests
/// are measured against: list my counters, create one if I have none, increment the first.
/// Two calls that list before either creates both create, and each increments its own: the
/// caller ends with duplicates and a count spread over them. Run the concurrency tests with
/// `MCP_KEYED_NEGATIVE_CONTROL=1` to watch them fail with it: on DynamoDB Local both fail
/// every time (ten counters of 1, or nine holding 1 and 2). In memory the window between the
/// list and the create is a few microseconds in one process and the memory case passes
/// anyway; what it catches is a non-atomic `get_or_create` (one that looks, then creates over
/// whatever is there fails it every time).
async fn list_then_create_increment(
    counters: &Handles<u64>,
    caller: &Caller,
) -> Result<(), HandleError> {
    let page = counters.list(caller, None).await?;
    let id = match page.items.first() {
        Some(existing) => existing.id,
        None => counters.create(caller, 0).await?.id,
    };
    counters.modify(caller, id, |n| *n += 1).await.map(drop)
}

/// `how` for the concurrency tests: [`Increment::Keyed`], or the negative control when
/// `MCP_KEYED_NEGATIVE_CONTROL` is set (a demonstration that the tests can fail).
fn increment_under_test() -> Increment {
    if std::env::var_os("MCP_KEYED_NEGATIVE_CONTROL").is_some() {
        Increment::ListThenCreate
    } else {
        Increment::Keyed
    }
}

/// `caller` holds exactly one counter, at `expected`. DynamoDB's owner index trails writes by a
/// moment, so a short listing is read again; a long one is final.
async fn assert_one_counter_of(counters: &Handles<u64>, caller: &Caller, expected: u64) {
    let mut listed = list_all(counters, caller).await;
    for _ in 0..20 {
        if !listed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        listed = list_all(counters, caller).await;
    }
    let values: Vec<u64> = listed.iter().map(|s| s.value).collect();
    assert_eq!(
        values,
        vec![expected],
        "one counter holding {expected}, found {} counter(s) holding {values:?}",
        values.len()
    );
}

// The quota: a keyed handle counts once, when it is created.

async fn a_keyed_handle_counts_once_toward_the_quota(store: Arc<dyn HandleStore>) {
    let counters = counters(store);
    let ada = caller("ada");
    for _ in 0..5 {
        counters
            .keyed(&ada, "a")
            .modify_or_create(0, |n| *n += 1)
            .await
            .unwrap();
    }
    // Ten concurrent first uses of another key: one creation between them.
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let firsts = (0..10).map(|_| {
        let (counters, ada, barrier) = (counters.clone(), ada.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            counters.keyed(&ada, "b").get_or_create(0).await.map(drop)
        })
    });
    for first in futures::future::join_all(firsts).await {
        first.unwrap().expect("within the quota");
    }
    // Two created: the third creation is over, keyed or not; the existing ones still serve.
    assert!(matches!(
        counters.keyed(&ada, "c").get_or_create(0).await,
        Err(HandleError::CallerLimit { max: 2, .. })
    ));
    assert!(matches!(
        counters.create(&ada, 0).await,
        Err(HandleError::CallerLimit { max: 2, .. })
    ));
    assert_eq!(counters.keyed(&ada, "c").read().await, Ok(None));
    let a = counters
        .keyed(&ada, "a")
        .modify_or_create(0, |n| *n += 1)
        .await
        .unwrap();
    assert_eq!(a.value, 6);
}

fn quota_of(max: u32) -> CallerQuota {
    CallerQuota { max, window: HOUR }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keyed_handle_counts_once_toward_the_memory_quota() {
    let store = handles::MemoryHandleStore::new().with_caller_quota(quota_of(2));
    a_keyed_handle_counts_once_toward_the_quota(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_keyed_handle_counts_once_toward_the_dynamodb_quota() {
    let Some(endpoint) = support::dynamodb::endpoint("the keyed-handle quota on DynamoDB") else {
        return;
    };
    let store = support::dynamodb::store(&endpoint)
        .await
        .with_caller_quota(quota_of(2));
    a_keyed_handle_counts_once_toward_the_quota(Arc::new(store)).await;
}

// Two processes on one DynamoDB table.

/// Set in a child: the caller's subject. The child increments that caller's counter
/// [`CHILD_INCREMENTS`] times at once, at [`START_AT`], and exits.
const CHILD_SUBJECT: &str = "MCP_KEYED_CHILD_SUBJECT";
/// Set in a child: when to start, in epoch milliseconds (both children start together).
const START_AT: &str = "MCP_KEYED_CHILD_START_AT_MS";
const CHILD_INCREMENTS: usize = 5;
/// What a child prints when it starts its increments, with the time (epoch milliseconds).
const STARTED: &str = "keyed-child-started-at";

/// Ten first uses of one new caller's keyed counter, five in each of two processes started at
/// the same moment on one DynamoDB Local table: one handle, holding 10. This test is also the
/// child: run with [`CHILD_SUBJECT`] set, it makes its five increments and returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_first_uses_across_two_processes_end_with_one_handle_holding_ten() {
    let Some(endpoint) = support::dynamodb::endpoint("the two-process keyed-handle test") else {
        return;
    };
    let store: Arc<dyn HandleStore> = Arc::new(support::dynamodb::store(&endpoint).await);
    let counters = counters(store);

    if let Ok(subject) = std::env::var(CHILD_SUBJECT) {
        let start_at: u64 = std::env::var(START_AT).unwrap().parse().unwrap();
        let now = epoch_ms();
        tokio::time::sleep(Duration::from_millis(start_at.saturating_sub(now))).await;
        println!("{STARTED} {}", epoch_ms());
        let caller = caller_with_subject(subject);
        increment_concurrently(&counters, &caller, CHILD_INCREMENTS, increment_under_test()).await;
        return;
    }

    let subject = format!("two-processes-{}", HandleId::random().unwrap());
    // Far enough ahead for both children to start and connect on a loaded machine.
    let start_at = epoch_ms() + 5000;
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "keyed::ten_first_uses_across_two_processes_end_with_one_handle_holding_ten",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_SUBJECT, &subject)
                .env(START_AT, start_at.to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("starting a child test process")
        })
        .collect();
    let mut started = Vec::new();
    for child in children {
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "a child failed: {}\n{stdout}",
            out.status
        );
        let at: u64 = stdout
            .lines()
            .find_map(|line| line.split_once(STARTED)?.1.trim().parse().ok())
            .unwrap_or_else(|| panic!("the child said when it started:\n{stdout}"));
        started.push(at);
    }
    // The point is overlap: both started their five at the agreed moment, not one after the
    // other (a child that took longer than the head start to load would not have).
    for at in &started {
        assert!(
            at.abs_diff(start_at) < 500,
            "a child started {} ms off the agreed moment; give it more head start",
            *at as i64 - start_at as i64
        );
    }
    assert_one_counter_of(&counters, &caller_with_subject(subject), 10).await;
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The negative control, run: on this table, ten concurrent first uses through the
/// list-then-create helper do make duplicates (or lose increments). Proof that the
/// concurrency tests above meet the race they claim to survive, not a quiet table where any
/// helper would pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_dynamodb_the_list_then_create_helper_makes_duplicates() {
    let Some(endpoint) = support::dynamodb::endpoint("the keyed-handle negative control") else {
        return;
    };
    let store: Arc<dyn HandleStore> = Arc::new(support::dynamodb::store(&endpoint).await);
    let counters = counters(store);
    let ada = caller("ada");
    increment_concurrently(&counters, &ada, 10, Increment::ListThenCreate).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let values: Vec<u64> = list_all(&counters, &ada)
        .await
        .iter()
        .map(|s| s.value)
        .collect();
    assert!(
        values.len() > 1 || values.iter().sum::<u64>() < 10,
        "the naive helper was not caught this time: {values:?}"
    );
}

/// On DynamoDB a write whose answer was lost can land late. A keyed handle made again after a
/// delete continues the old one's versions, so an update meant for the old one (conditioned on
/// a version it had) can never land on the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_dynamodb_a_remade_keyed_handle_refuses_writes_meant_for_the_old_one() {
    let Some(endpoint) = support::dynamodb::endpoint("the keyed-handle versions on DynamoDB")
    else {
        return;
    };
    let store: Arc<dyn HandleStore> = Arc::new(support::dynamodb::store(&endpoint).await);
    let counters = counters(store.clone());
    let ada = caller("ada");
    let mine = counters.keyed(&ada, "default");
    let old = mine.modify_or_create(0, |n| *n += 1).await.unwrap();
    mine.delete().await.unwrap();
    let new = mine.get_or_create(0).await.unwrap();
    assert_eq!(new.id, old.id);
    assert!(
        new.version > old.version,
        "{} after {}",
        new.version,
        old.version
    );
    for stale in 1..=old.version {
        let late = store
            .update(
                ada.owner_key(),
                old.id,
                stale,
                serde_json::json!({"value": 99}),
                HOUR,
            )
            .await;
        assert!(
            matches!(late, Err(HandleError::Conflict { .. })),
            "version {stale}: {late:?}"
        );
    }
    assert_eq!(mine.value_or(7).await, Ok(0));
}
