//! The process-wide "stop taking new work" signal.
//!
//! One [`Shutdown`] is made per [`Server`](crate::Server). The local server triggers it on
//! SIGTERM or Ctrl-C and then drains; every `subscriptions/listen` stream watches it and ends
//! with its closing result, so a rolling restart cuts no stream. On Lambda nothing triggers it:
//! Lambda signals shutdown only to functions that register an extension, and only once the
//! environment is idle, when no stream is open; there a stream ends before the invocation's
//! deadline instead.

use tokio_util::sync::CancellationToken;

/// A cloneable signal: once triggered, it stays triggered.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let shutdown = mcp_lambda::shutdown::Shutdown::new();
/// let watcher = shutdown.clone();
/// shutdown.trigger();
/// watcher.triggered().await; // returns at once
/// assert!(watcher.is_triggered());
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Shutdown(CancellationToken);

impl Shutdown {
    /// A signal not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Triggers the signal for every clone; triggering again does nothing.
    pub fn trigger(&self) {
        self.0.cancel();
    }

    /// Whether the signal has been triggered.
    pub fn is_triggered(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Waits until the signal is triggered.
    pub async fn triggered(&self) {
        self.0.cancelled().await;
    }
}
