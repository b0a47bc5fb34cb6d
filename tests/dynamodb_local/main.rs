//! The integration tests of which some need DynamoDB Local, run by `scripts/dynamodb-tests.sh`
//! (it starts DynamoDB Local on loopback and sets `MCP_TEST_DYNAMODB_ENDPOINT`). Without the
//! endpoint those tests say SKIPPED loudly and pass, or fail under CI (`CI=true`); the other
//! tests of the same files (the in-memory stores' runs of a contract) run either way. One binary
//! for them all, as `tests/self_contained/` is one for the tests needing nothing outside the
//! repository.
//!
//! Each module is a former `tests/NAME.rs`; its tests are named `NAME::test_name`:
//!
//! ```text
//! scripts/dynamodb-tests.sh                                        # every test here
//! scripts/dynamodb-tests.sh --test dynamodb_local -- handles::     # one former file
//! cargo test --test dynamodb_local -- tasks::                      # without DynamoDB Local
//! ```
//!
//! **Adding a file:** put it here as `tests/dynamodb_local/NAME.rs` and add `mod NAME;` below
//! (keep the list sorted) when any of its tests needs DynamoDB Local; otherwise it goes in
//! `tests/self_contained/`. Do not add a `tests/NAME.rs`: cargo would build it as a binary of its
//! own. All modules share one process: no `std::env::set_var`, no process-wide state a neighbour
//! could see, owners and ports unique per test (`support::basket::free_port`, port 0).

/// Runs each `case(store: Arc<dyn HandleStore>)` of the calling module on both handle stores,
/// as `memory::case` and `dynamodb::case` (the second returns at once without DynamoDB Local,
/// saying so in `$what`'s name): the store contracts of `handles.rs` and `keyed.rs`.
macro_rules! on_both_handle_stores {
    ($what:literal; $($case:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::$case(mcp_lambda::handles::memory()).await;
                }
            )*
        }

        mod dynamodb {
            use mcp_lambda_test_support as support;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    let Some(endpoint) = support::dynamodb::endpoint($what) else {
                        return;
                    };
                    let store: std::sync::Arc<dyn mcp_lambda::handles::HandleStore> =
                        std::sync::Arc::new(support::dynamodb::store(&endpoint).await);
                    super::$case(store).await;
                }
            )*
        }
    };
}

mod dynamodb;
mod fault_proxy;
mod handles;
mod keyed;
mod lambda_runtime;
mod load;
mod task_engine;
mod tasks;
