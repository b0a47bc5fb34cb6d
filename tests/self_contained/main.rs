//! The integration tests that need nothing outside the repository: the test process, the basket
//! binary and examples cargo builds from this tree, loopback sockets. One test binary (ripgrep's
//! `tests/tests.rs` shape) instead of one per file: each binary links the whole crate and the AWS
//! SDK, so sixteen of them were most of what a cold run builds.
//!
//! Each module is a former `tests/NAME.rs`; its tests are named `NAME::test_name`:
//!
//! ```text
//! cargo test --test self_contained                        # every test here
//! cargo test --test self_contained -- auth::              # one former file
//! cargo test --test self_contained -- auth::some_test --exact
//! ```
//!
//! Tests needing DynamoDB Local (any test of a file) live beside this, in
//! `tests/dynamodb_local/` (run by `scripts/dynamodb-tests.sh`).
//!
//! **Adding a file:** put it here as `tests/self_contained/NAME.rs` and add `mod NAME;` below
//! (keep the list sorted); if any of its tests needs DynamoDB Local, put it in
//! `tests/dynamodb_local/` instead. Do not add a `tests/NAME.rs`: cargo would build it as a
//! binary of its own. All modules share one process: no `std::env::set_var` (pass configuration
//! explicitly, as `support::fixture::config` does), no global subscriber or other process-wide
//! state a neighbour could see, ports from `support::basket::free_port` or port 0.

mod auth;
mod basket;
mod direct_answers;
mod drain;
mod forwarding;
mod hostile;
mod http_front;
mod lambda_events;
mod listen;
mod module_graph;
mod own_server;
