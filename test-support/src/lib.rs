//! The helpers mcp-lambda's own tests (`tests/`) and benchmark servers (`benches/`) share, one
//! copy of each: a workspace crate (`test-support/`, not published) the root package takes as a
//! dev-dependency, used as `use mcp_lambda_test_support as support;`.
//!
//! - [`fixture`]: a small MCP server and request builders that call the service in-process;
//! - [`basket`]: the one way to start the basket binary (or another server binary) with a clean
//!   environment, and a client for it over real HTTP;
//! - [`jwt`]: real keys, real signatures and a loopback issuer;
//! - `dynamodb` (feature `dynamodb`): the DynamoDB test endpoint, a client on it and the shared
//!   table;
//! - [`sse`]: a `subscriptions/listen` answer read message by message;
//! - [`counting_proxy`]: a proxy in front of DynamoDB that records each request's operation;
//! - [`fault_proxy`]: an HTTP proxy in front of DynamoDB that throttles, fails, resets, loses
//!   answers, delays or goes down, per request, by rules a test sets, and logs what it did;
//! - [`nat`]: a TCP relay that forgets its flows as a NAT gateway forgets idle ones (the next
//!   packet a client sends on one is reset);
//! - [`lambda_runtime`]: a loopback Lambda Runtime API and function processes under it
//!   (`tests/dynamodb_local/lambda_runtime.rs`, `benches/servers/lambda_runtime_bench.rs`);
//! - [`tools`]: the three benchmark tools every Rust server of the benchmarks serves;
//! - [`proc`]: what the kernel says a benchmarked process has used.

pub mod basket;
pub mod counting_proxy;
#[cfg(feature = "dynamodb")]
pub mod dynamodb;
pub mod fault_proxy;
pub mod fixture;
pub mod jwt;
pub mod lambda_runtime;
pub mod nat;
pub mod proc;
pub mod sse;
pub mod tools;

use std::path::PathBuf;

/// The directory of the package whose tests (or benchmarks) are running, read when they run:
/// cargo sets `CARGO_MANIFEST_DIR` for every test process; the current directory otherwise.
///
/// Not `env!("CARGO_MANIFEST_DIR")`: cargo names a workspace's artifacts by paths relative to
/// the workspace, so two checkouts sharing one target dir (the CI clone and a working tree)
/// share them too, and a compile-time path can name the other checkout, long gone.
pub fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
        .expect("CARGO_MANIFEST_DIR or a current directory")
}

/// A `cargo` command for a build a test needs (another package's binary, an example), run in
/// [`package_dir`], without the variables cargo sets for the test process itself.
///
/// Why: a build script that reads `CARGO_MANIFEST_DIR` (ring's, through `cc`) is rerun when the
/// variable's value changes, and a nested build inheriting the test's `CARGO_MANIFEST_DIR`
/// would see it change; ring and all above it (rustls, the AWS SDK's HTTP client, the library)
/// would then be rebuilt there, and once more by the next plain `cargo test`.
pub fn cargo() -> std::process::Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = std::process::Command::new(program);
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let set_for_the_test = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
            || matches!(
                name,
                "CARGO_MANIFEST_DIR"
                    | "CARGO_MANIFEST_PATH"
                    | "CARGO_MANIFEST_LINKS"
                    | "CARGO_CRATE_NAME"
                    | "CARGO_BIN_NAME"
                    | "CARGO_PRIMARY_PACKAGE"
                    | "CARGO_TARGET_TMPDIR"
                    | "OUT_DIR"
            );
        if set_for_the_test {
            command.env_remove(name);
        }
    }
    command.current_dir(package_dir());
    command
}
