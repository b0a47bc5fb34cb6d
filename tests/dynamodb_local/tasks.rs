//! The `TaskStore` contract: one suite every backend must pass.
//!
//! Each case is an `async fn(Arc<dyn TaskStore>)`; `contract_tests!` turns the list into one
//! `#[tokio::test]` per case and backend, like `tests/dynamodb_local/handles.rs`. The DynamoDB run needs
//! `MCP_TEST_DYNAMODB_ENDPOINT` (`scripts/dynamodb-tests.sh` starts DynamoDB Local and sets
//! it); without it the DynamoDB cases fail under CI and are skipped, loudly, elsewhere.

use mcp_lambda_test_support as support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use mcp_lambda::handles::HandleId;
use mcp_lambda::tasks::{MemoryTaskStore, RoundEnd, TaskError, TaskRecord, TaskState, TaskStore};
use serde_json::{Value, json};

const HOUR_MS: u64 = 3_600_000;

/// Owners unique per test run, so cases never see each other's tasks on a shared backend.
fn owner(name: &str) -> String {
    format!("{name}-{}", HandleId::random().unwrap())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn new_task(owner: &str, ttl_ms: u64) -> TaskRecord {
    TaskRecord::new(
        HandleId::random().unwrap(),
        owner,
        json!({ "name": "slow_sum", "arguments": { "a": 1, "b": [2, "three"] } }),
        now_ms(),
        ttl_ms,
        500,
    )
}

async fn created(store: &dyn TaskStore, owner: &str) -> TaskRecord {
    let task = new_task(owner, HOUR_MS);
    store.create(&task, None).await.unwrap();
    task
}

fn lease() -> u64 {
    now_ms() + 60_000
}

fn asking(keys: &[&str], request_state: Option<&str>) -> RoundEnd {
    let requests: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| {
            (
                (*k).to_owned(),
                json!({ "method": "elicitation/create", "params": { "message": format!("{k}?") } }),
            )
        })
        .collect();
    RoundEnd::InputRequired {
        requests: Value::Object(requests),
        keys: keys.iter().map(|k| (*k).to_owned()).collect(),
        request_state: request_state.map(str::to_owned),
    }
}

fn answers(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn keys(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|k| (*k).to_owned()).collect()
}

/// A task whose round 0 asked for `a` and `b`: `input_required`, round 1.
async fn waiting_for_a_and_b(store: &dyn TaskStore, owner: &str) -> TaskRecord {
    let task = created(store, owner).await;
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    assert!(
        store
            .finish(task.id, 0, &asking(&["a", "b"], Some("sealed-state")))
            .await
            .unwrap()
    );
    store.get(owner, task.id).await.unwrap()
}

macro_rules! contract_tests {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            contract_tests!(@cases $make;
                a_created_task_reads_back_as_created,
                another_owner_gets_exactly_what_an_unknown_id_gets,
                an_expired_task_is_not_found_for_every_operation,
                input_required_records_its_requests_and_pending_keys,
                answers_record_outstanding_keys_only_and_keep_the_first,
                a_partial_answer_keeps_the_task_waiting,
                an_answer_to_a_task_not_waiting_changes_nothing,
                a_claim_is_exclusive,
                a_round_not_claimed_within_the_window_never_can_be,
                a_cancelled_task_cannot_be_claimed,
                a_task_is_claimable_for_the_next_round_once_every_input_is_answered,
                a_round_that_asks_for_nothing_is_claimable_at_once,
                finish_needs_the_claim_of_that_round,
                finish_after_a_terminal_state_is_refused,
                a_failed_round_records_its_error,
                cancel_of_a_finished_task_is_a_no_op,
                cancel_of_a_running_task_is_recorded,
                check_returns_the_cancel_flag_and_records_the_status_message,
            );
        }
    };
    (@cases $make:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let make = $make;
                let store: Option<Arc<dyn TaskStore>> = make().await;
                if let Some(store) = store {
                    super::$case(store).await;
                }
            }
        )*
    };
}

contract_tests!(memory, || async {
    let store: Arc<dyn TaskStore> = Arc::new(MemoryTaskStore::new());
    Some(store)
});

#[cfg(feature = "dynamodb")]
async fn dynamodb_store(test: &str) -> Option<mcp_lambda::tasks::DynamoDbTaskStore> {
    let endpoint = support::dynamodb::endpoint(test)?;
    support::dynamodb::store(&endpoint).await; // the table exists
    let client = support::dynamodb::client(&endpoint, &support::dynamodb::timeouts()).await;
    Some(mcp_lambda::tasks::DynamoDbTaskStore::new(
        client,
        support::dynamodb::TABLE,
    ))
}

#[cfg(feature = "dynamodb")]
contract_tests!(dynamodb, || async {
    let store: Arc<dyn TaskStore> =
        Arc::new(dynamodb_store("the DynamoDB task-store contract").await?);
    Some(store)
});

async fn a_created_task_reads_back_as_created(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    let read = store.get(&alice, task.id).await.unwrap();
    assert_eq!(read, task);
    assert_eq!(read.state, TaskState::Working);
    assert_eq!(read.round, 0);
    assert_eq!(read.claimed, None);
    assert!(!read.cancel_requested);
    // The same id again is refused, and the first task is untouched.
    let mut again = new_task(&alice, HOUR_MS);
    again.id = task.id;
    assert!(matches!(
        store.create(&again, None).await,
        Err(TaskError::Invalid(_))
    ));
    assert_eq!(store.get(&alice, task.id).await.unwrap(), task);
}

async fn another_owner_gets_exactly_what_an_unknown_id_gets(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let mallory = owner("mallory");
    let task = waiting_for_a_and_b(&*store, &alice).await;
    let unknown = HandleId::random().unwrap();
    let answer = answers(&[("a", json!("stolen"))]);
    for id in [task.id, unknown] {
        assert_eq!(store.get(&mallory, id).await, Err(TaskError::NotFound));
        assert_eq!(
            store.answer(&mallory, id, &answer).await,
            Err(TaskError::NotFound)
        );
        assert_eq!(store.cancel(&mallory, id).await, Err(TaskError::NotFound));
    }
    assert_eq!(store.claim(unknown, 0, lease()).await, Ok(None));
    assert_eq!(
        store.check(unknown, 0, None).await,
        Err(TaskError::NotFound)
    );
    assert_eq!(
        store.check(unknown, 0, Some("hello")).await,
        Err(TaskError::NotFound)
    );
    assert_eq!(
        store.finish(unknown, 0, &RoundEnd::Cancelled).await,
        Ok(false)
    );
    // Nothing of mallory's reached alice's task.
    assert_eq!(store.get(&alice, task.id).await.unwrap(), task);
}

async fn an_expired_task_is_not_found_for_every_operation(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = new_task(&alice, 400);
    store.create(&task, None).await.unwrap();
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    assert_eq!(store.get(&alice, task.id).await.unwrap().id, task.id);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(store.get(&alice, task.id).await, Err(TaskError::NotFound));
    assert_eq!(
        store
            .answer(&alice, task.id, &answers(&[("a", json!(1))]))
            .await,
        Err(TaskError::NotFound)
    );
    assert_eq!(
        store.cancel(&alice, task.id).await,
        Err(TaskError::NotFound)
    );
    assert_eq!(
        store.check(task.id, 0, None).await,
        Err(TaskError::NotFound)
    );
    assert_eq!(
        store.check(task.id, 0, Some("late")).await,
        Err(TaskError::NotFound)
    );
    assert_eq!(
        store
            .finish(task.id, 0, &RoundEnd::Completed(json!({})))
            .await,
        Ok(false)
    );
    assert_eq!(store.claim(task.id, 1, lease()).await, Ok(None));
}

async fn input_required_records_its_requests_and_pending_keys(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = waiting_for_a_and_b(&*store, &alice).await;
    assert_eq!(task.state, TaskState::InputRequired);
    assert_eq!(task.round, 1);
    assert_eq!(task.pending, keys(&["a", "b"]));
    assert!(task.responses.is_empty());
    assert_eq!(task.request_state.as_deref(), Some("sealed-state"));
    let requests = task.input_requests.as_ref().unwrap();
    assert_eq!(requests["a"]["params"]["message"], "a?");
    assert_eq!(requests["b"]["method"], "elicitation/create");
    assert_eq!(task.claimed.map(|(round, _)| round), Some(0));
}

async fn answers_record_outstanding_keys_only_and_keep_the_first(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = waiting_for_a_and_b(&*store, &alice).await;
    let after = store
        .answer(
            &alice,
            task.id,
            &answers(&[("a", json!({ "action": "accept" })), ("zzz", json!(2))]),
        )
        .await
        .unwrap();
    assert_eq!(after.pending, keys(&["b"]));
    assert_eq!(
        after.responses,
        answers(&[("a", json!({ "action": "accept" }))]),
        "a key that was never asked for is not recorded"
    );
    // A second answer to `a` is ignored; `b` completes the round.
    let after = store
        .answer(
            &alice,
            task.id,
            &answers(&[("a", json!("changed my mind")), ("b", json!([1, 2]))]),
        )
        .await
        .unwrap();
    assert!(after.pending.is_empty());
    assert_eq!(
        after.responses,
        answers(&[("a", json!({ "action": "accept" })), ("b", json!([1, 2]))])
    );
    assert_eq!(store.get(&alice, task.id).await.unwrap(), after);
}

async fn a_partial_answer_keeps_the_task_waiting(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = waiting_for_a_and_b(&*store, &alice).await;
    let after = store
        .answer(&alice, task.id, &answers(&[("b", json!("yes"))]))
        .await
        .unwrap();
    assert_eq!(after.state, TaskState::InputRequired);
    assert_eq!(after.pending, keys(&["a"]));
    assert_eq!(after.responses, answers(&[("b", json!("yes"))]));
    assert_eq!(
        store.claim(task.id, 1, lease()).await,
        Ok(None),
        "a round waits for every answer"
    );
    assert_eq!(store.get(&alice, task.id).await.unwrap(), after);
}

async fn an_answer_to_a_task_not_waiting_changes_nothing(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    let after = store
        .answer(&alice, task.id, &answers(&[("a", json!(1))]))
        .await
        .unwrap();
    assert_eq!(after, task);
    assert_eq!(store.get(&alice, task.id).await.unwrap(), task);
    // An empty answer to a waiting task is no change either.
    let waiting = waiting_for_a_and_b(&*store, &alice).await;
    let after = store
        .answer(&alice, waiting.id, &BTreeMap::new())
        .await
        .unwrap();
    assert_eq!(after.pending, waiting.pending);
    assert!(after.responses.is_empty());
}

async fn a_claim_is_exclusive(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    let until = lease();
    assert_eq!(
        store.claim(task.id, 1, until).await,
        Ok(None),
        "not its round"
    );
    let claimed = store.claim(task.id, 0, until).await.unwrap().unwrap();
    assert_eq!(claimed.state, TaskState::Working);
    assert_eq!(claimed.claimed, Some((0, until)));
    assert_eq!(claimed.call, task.call);
    assert_eq!(store.claim(task.id, 0, until + 1).await, Ok(None));
    assert_eq!(
        store.get(&alice, task.id).await.unwrap().claimed,
        Some((0, until))
    );
}

async fn a_round_not_claimed_within_the_window_never_can_be(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let mut late = new_task(&alice, HOUR_MS);
    late.created_at_ms = now_ms() - mcp_lambda::tasks::CLAIM_WINDOW_MS - 1000;
    late.updated_at_ms = late.created_at_ms;
    store.create(&late, None).await.unwrap();
    assert_eq!(
        store.claim(late.id, 0, lease()).await,
        Ok(None),
        "handed out longer ago than the claim window"
    );
    let mut on_time = new_task(&alice, HOUR_MS);
    on_time.created_at_ms = now_ms() - mcp_lambda::tasks::CLAIM_WINDOW_MS + 10_000;
    on_time.updated_at_ms = on_time.created_at_ms;
    store.create(&on_time, None).await.unwrap();
    assert!(store.claim(on_time.id, 0, lease()).await.unwrap().is_some());
}

async fn a_cancelled_task_cannot_be_claimed(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    assert!(
        store
            .cancel(&alice, task.id)
            .await
            .unwrap()
            .cancel_requested
    );
    assert_eq!(store.claim(task.id, 0, lease()).await, Ok(None));
    // Nor its next round, once it waits for input.
    let waiting = waiting_for_a_and_b(&*store, &alice).await;
    store.cancel(&alice, waiting.id).await.unwrap();
    store
        .answer(
            &alice,
            waiting.id,
            &answers(&[("a", json!(1)), ("b", json!(2))]),
        )
        .await
        .unwrap();
    assert_eq!(store.claim(waiting.id, 1, lease()).await, Ok(None));
}

async fn a_task_is_claimable_for_the_next_round_once_every_input_is_answered(
    store: Arc<dyn TaskStore>,
) {
    let alice = owner("alice");
    let task = waiting_for_a_and_b(&*store, &alice).await;
    assert_eq!(store.claim(task.id, 1, lease()).await, Ok(None));
    store
        .answer(
            &alice,
            task.id,
            &answers(&[("a", json!(1)), ("b", json!(2))]),
        )
        .await
        .unwrap();
    assert_eq!(
        store.claim(task.id, 0, lease()).await,
        Ok(None),
        "an old round"
    );
    let until = lease();
    let claimed = store.claim(task.id, 1, until).await.unwrap().unwrap();
    assert_eq!(claimed.state, TaskState::Working);
    assert_eq!(claimed.round, 1);
    assert_eq!(claimed.claimed, Some((1, until)));
    assert_eq!(
        claimed.responses,
        answers(&[("a", json!(1)), ("b", json!(2))])
    );
    assert_eq!(claimed.request_state.as_deref(), Some("sealed-state"));
    assert_eq!(store.claim(task.id, 1, lease()).await, Ok(None));
    // Round 1 ends: the result is recorded.
    assert!(
        store
            .finish(task.id, 1, &RoundEnd::Completed(json!({ "content": [] })))
            .await
            .unwrap()
    );
    let done = store.get(&alice, task.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(done.result, Some(json!({ "content": [] })));
}

async fn a_round_that_asks_for_nothing_is_claimable_at_once(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    assert!(
        store
            .finish(task.id, 0, &asking(&["a"], Some("first")))
            .await
            .unwrap()
    );
    store
        .answer(&alice, task.id, &answers(&[("a", json!(1))]))
        .await
        .unwrap();
    store.claim(task.id, 1, lease()).await.unwrap().unwrap();
    // Round 1 asks for nothing and keeps no request state.
    assert!(store.finish(task.id, 1, &asking(&[], None)).await.unwrap());
    let task = store.get(&alice, task.id).await.unwrap();
    assert_eq!(task.state, TaskState::InputRequired);
    assert_eq!(task.round, 2);
    assert!(task.pending.is_empty());
    assert!(
        task.responses.is_empty(),
        "a new round starts with no answers"
    );
    assert_eq!(task.request_state, None);
    assert!(store.claim(task.id, 2, lease()).await.unwrap().is_some());
}

async fn finish_needs_the_claim_of_that_round(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    let end = RoundEnd::Completed(json!({ "content": [{ "type": "text", "text": "3" }] }));
    assert_eq!(store.finish(task.id, 0, &end).await, Ok(false), "unclaimed");
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    let claimed = store.get(&alice, task.id).await.unwrap();
    assert_eq!(
        store.finish(task.id, 1, &end).await,
        Ok(false),
        "another round"
    );
    assert_eq!(store.get(&alice, task.id).await.unwrap(), claimed);
    assert_eq!(store.finish(task.id, 0, &end).await, Ok(true));
    let done = store.get(&alice, task.id).await.unwrap();
    assert_eq!(done.state, TaskState::Completed);
    assert_eq!(
        done.result,
        Some(json!({ "content": [{ "type": "text", "text": "3" }] }))
    );
}

async fn finish_after_a_terminal_state_is_refused(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    assert_eq!(
        store.finish(task.id, 0, &RoundEnd::Cancelled).await,
        Ok(true)
    );
    let cancelled = store.get(&alice, task.id).await.unwrap();
    assert_eq!(cancelled.state, TaskState::Cancelled);
    for end in [
        RoundEnd::Completed(json!({})),
        RoundEnd::Failed(json!({ "code": -32603 })),
        asking(&["a"], None),
        RoundEnd::Cancelled,
    ] {
        assert_eq!(store.finish(task.id, 0, &end).await, Ok(false), "{end:?}");
    }
    assert_eq!(store.get(&alice, task.id).await.unwrap(), cancelled);
    assert_eq!(store.claim(task.id, 0, lease()).await, Ok(None));
    assert_eq!(store.claim(task.id, 1, lease()).await, Ok(None));
}

async fn a_failed_round_records_its_error(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    let error = json!({ "code": -32603, "message": "the tool broke" });
    assert!(
        store
            .finish(task.id, 0, &RoundEnd::Failed(error.clone()))
            .await
            .unwrap()
    );
    let failed = store.get(&alice, task.id).await.unwrap();
    assert_eq!(failed.state, TaskState::Failed);
    assert_eq!(failed.error, Some(error));
    assert_eq!(failed.result, None);
}

async fn cancel_of_a_finished_task_is_a_no_op(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    assert!(
        store
            .finish(task.id, 0, &RoundEnd::Completed(json!({ "ok": true })))
            .await
            .unwrap()
    );
    let done = store.get(&alice, task.id).await.unwrap();
    let after = store.cancel(&alice, task.id).await.unwrap();
    assert_eq!(after, done);
    assert!(!after.cancel_requested);
    assert_eq!(store.get(&alice, task.id).await.unwrap(), done);
}

async fn cancel_of_a_running_task_is_recorded(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    let after = store.cancel(&alice, task.id).await.unwrap();
    assert!(after.cancel_requested);
    assert_eq!(after.state, TaskState::Working, "the worker ends it");
    // Twice is the same.
    let again = store.cancel(&alice, task.id).await.unwrap();
    assert!(again.cancel_requested);
    assert_eq!(store.get(&alice, task.id).await.unwrap(), again);
    let waiting = waiting_for_a_and_b(&*store, &alice).await;
    let after = store.cancel(&alice, waiting.id).await.unwrap();
    assert!(after.cancel_requested);
    assert_eq!(after.state, TaskState::InputRequired);
}

async fn check_returns_the_cancel_flag_and_records_the_status_message(store: Arc<dyn TaskStore>) {
    let alice = owner("alice");
    let task = created(&*store, &alice).await;
    store.claim(task.id, 0, lease()).await.unwrap().unwrap();
    assert_eq!(store.check(task.id, 0, Some("halfway")).await, Ok(false));
    assert_eq!(store.check(task.id, 0, None).await, Ok(false));
    let read = store.get(&alice, task.id).await.unwrap();
    assert_eq!(read.status_message.as_deref(), Some("halfway"));
    store.cancel(&alice, task.id).await.unwrap();
    assert_eq!(store.check(task.id, 0, None).await, Ok(true));
    assert_eq!(store.check(task.id, 0, Some("stopping")).await, Ok(true));
    // Another round's worker records nothing but still learns of the cancel.
    assert_eq!(store.check(task.id, 3, Some("not mine")).await, Ok(true));
    let read = store.get(&alice, task.id).await.unwrap();
    assert_eq!(read.status_message.as_deref(), Some("stopping"));
    // Once finished, a message is no longer recorded.
    assert!(
        store
            .finish(task.id, 0, &RoundEnd::Cancelled)
            .await
            .unwrap()
    );
    assert_eq!(
        store.check(task.id, 0, Some("after the end")).await,
        Ok(true)
    );
    let read = store.get(&alice, task.id).await.unwrap();
    assert_eq!(read.state, TaskState::Cancelled);
    assert_eq!(read.status_message.as_deref(), Some("stopping"));
}

/// The DynamoDB store's bounds, refused before any request.
#[cfg(feature = "dynamodb")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_refuses_oversized_tasks_and_answers() {
    use mcp_lambda::tasks::{MAX_ANSWER_KEYS, MAX_KEY_BYTES, MAX_TASK_BYTES};
    let Some(store) = dynamodb_store("the DynamoDB task-store bounds").await else {
        return;
    };
    let alice = owner("alice");
    let mut big = new_task(&alice, HOUR_MS);
    big.call = json!({ "name": "t", "arguments": { "blob": "x".repeat(MAX_TASK_BYTES) } });
    assert!(matches!(
        store.create(&big, None).await,
        Err(TaskError::Invalid(_))
    ));
    assert_eq!(store.get(&alice, big.id).await, Err(TaskError::NotFound));

    let task = waiting_for_a_and_b(&store, &alice).await;
    let many: BTreeMap<String, Value> = (0..=MAX_ANSWER_KEYS)
        .map(|i| (format!("k{i}"), json!(i)))
        .collect();
    assert!(matches!(
        store.answer(&alice, task.id, &many).await,
        Err(TaskError::Invalid(_))
    ));
    let long_key = answers(&[(&"k".repeat(MAX_KEY_BYTES + 1), json!(1))]);
    assert!(matches!(
        store.answer(&alice, task.id, &long_key).await,
        Err(TaskError::Invalid(_))
    ));
    let huge = answers(&[("a", json!("x".repeat(MAX_TASK_BYTES)))]);
    assert!(matches!(
        store.answer(&alice, task.id, &huge).await,
        Err(TaskError::Invalid(_))
    ));
    // The most keys at once is fine, and only the outstanding ones count.
    let mut most: BTreeMap<String, Value> = (0..MAX_ANSWER_KEYS - 1)
        .map(|i| (format!("{i:0width$}", width = MAX_KEY_BYTES), json!(i)))
        .collect();
    most.insert("a".into(), json!("A"));
    let after = store.answer(&alice, task.id, &most).await.unwrap();
    assert_eq!(after.pending, keys(&["b"]));
    assert_eq!(after.responses, answers(&[("a", json!("A"))]));
    assert_eq!(store.get(&alice, task.id).await.unwrap(), after);
}
