//! The tokio runtime that suits where the process runs.
//!
//! On on-demand Lambda an execution environment serves one invocation at a time, so a runtime
//! with a worker per core only adds hand-offs: `lambda_runtime` polls on the thread that calls
//! `block_on`, rmcp spawns a task per request, and every spawn and answer wakes another thread.
//! Measured through the Lambda runtime (`benches/lambda-runtime.sh`), one thread costs about a
//! third less CPU per `tools/list` (benches/history/issue-20.md).

use crate::{
    env::{Env, Mode},
    error::Error,
};

/// How many threads drive the process's futures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Threads {
    /// On-demand Lambda: one invocation at a time, on the thread that calls `block_on`.
    One,
    /// Locally, behind a proxy, and on Lambda Managed Instances: a worker per core.
    PerCore,
}

impl Threads {
    /// One thread on Lambda unless `AWS_LAMBDA_MAX_CONCURRENCY` asks for more than one
    /// invocation at a time (Managed Instances), read as `lambda_runtime` reads it: a number
    /// above 1, anything else meaning one.
    fn for_env(env: &Env<'_>) -> Self {
        let concurrency = env
            .get("AWS_LAMBDA_MAX_CONCURRENCY")
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(1);
        match env.mode() {
            Mode::Lambda if concurrency <= 1 => Self::One,
            _ => Self::PerCore,
        }
    }

    fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        let mut builder = match self {
            Self::One => tokio::runtime::Builder::new_current_thread(),
            Self::PerCore => tokio::runtime::Builder::new_multi_thread(),
        };
        builder.enable_all().build()
    }
}

/// The tokio runtime for where this process runs: one thread on on-demand Lambda, a worker per
/// core everywhere else.
///
/// Use it instead of `#[tokio::main]` in a binary that is deployed to Lambda: an on-demand
/// execution environment serves one invocation at a time, and a multi-threaded runtime hands
/// each request between threads for nothing (about half again as much CPU per `tools/list`,
/// which Lambda bills). On one thread a tool that blocks its thread (CPU-heavy work, blocking
/// I/O) also holds back everything else the invocation runs — a durable task's checks, listen
/// streams' polls — so give such work to `tokio::task::spawn_blocking`. Locally, behind a
/// reverse proxy, and on Lambda Managed Instances
/// (`AWS_LAMBDA_MAX_CONCURRENCY` above 1) it is tokio's multi-threaded runtime, as
/// `#[tokio::main]` builds it. Timers and I/O are enabled in both.
///
/// ```no_run
/// use mcp_lambda::{App, Config, Error};
/// # #[derive(Clone)] struct MyServer;
/// # impl mcp_lambda::rmcp::ServerHandler for MyServer {}
///
/// fn main() -> Result<(), Error> {
///     mcp_lambda::runtime()?.block_on(async {
///         App::load().await?.server(MyServer).run().await
///     })
/// }
/// ```
///
/// # Errors
///
/// [`Error::Runtime`] when the operating system refuses what the runtime needs (threads, an
/// epoll instance).
pub fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    let lookup = |name: &str| std::env::var(name).ok();
    Threads::for_env(&Env::new(&lookup))
        .build()
        .map_err(Error::Runtime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::runtime::RuntimeFlavor;

    fn threads(vars: &[(&str, &str)]) -> Threads {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        };
        Threads::for_env(&Env::new(&lookup))
    }

    #[test]
    fn on_demand_lambda_gets_one_thread_and_everywhere_else_a_worker_per_core() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001");
        assert_eq!(threads(&[lambda]), Threads::One);
        assert_eq!(
            threads(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "1")]),
            Threads::One
        );
        assert_eq!(
            threads(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "not a number")]),
            Threads::One
        );
        assert_eq!(
            threads(&[lambda, ("AWS_LAMBDA_MAX_CONCURRENCY", "8")]),
            Threads::PerCore
        );
        assert_eq!(threads(&[]), Threads::PerCore);
        assert_eq!(
            threads(&[("AWS_LAMBDA_MAX_CONCURRENCY", "8")]),
            Threads::PerCore
        );
    }

    #[test]
    fn each_choice_builds_the_runtime_it_names_with_timers_and_io() {
        let one = Threads::One.build().unwrap();
        assert_eq!(one.handle().runtime_flavor(), RuntimeFlavor::CurrentThread);
        let per_core = Threads::PerCore.build().unwrap();
        assert_eq!(
            per_core.handle().runtime_flavor(),
            RuntimeFlavor::MultiThread
        );
        // Timers and sockets work on both (a runtime built without them panics here).
        for runtime in [one, per_core] {
            runtime.block_on(async {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            });
        }
    }
}
