//! An open `subscriptions/listen` answer read message by message, whatever carries it (a
//! socket, or the service called in-process), and the checks every listen stream shares.

use std::time::{Duration, Instant};

use bytes::Buf;
use http_body::Body;
use http_body_util::BodyExt;
use serde_json::Value;

/// A listen stream: the request's id and its SSE body.
pub struct ListenStream<B> {
    pub id: Value,
    body: B,
    buffer: String,
}

impl<B> ListenStream<B>
where
    B: Body + Unpin,
    B::Error: std::fmt::Debug,
{
    pub fn new(id: Value, body: B) -> Self {
        Self {
            id,
            body,
            buffer: String::new(),
        }
    }

    /// The next JSON-RPC message, or `None` when the stream ended; panics after `within`.
    pub async fn next(&mut self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some(serde_json::from_str(&data.join("\n")).unwrap());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let frame = tokio::time::timeout(left, self.body.frame())
                .await
                .unwrap_or_else(|_| panic!("listen stream silent for {within:?}"));
            match frame {
                None | Some(Err(_)) => return None,
                Some(Ok(frame)) => {
                    if let Ok(mut data) = frame.into_data() {
                        let bytes = data.copy_to_bytes(data.remaining());
                        self.buffer.push_str(&String::from_utf8_lossy(&bytes));
                    }
                }
            }
        }
    }

    /// Reads the acknowledgment (checking its subscription id); returns the accepted filter.
    pub async fn acknowledged(&mut self) -> Value {
        let ack = self
            .next(Duration::from_secs(10))
            .await
            .expect("an acknowledgment");
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            self.id
        );
        ack["params"]["notifications"].clone()
    }

    /// Reads up to the closing result (checking it) and the end of the stream; returns the
    /// notifications read on the way.
    pub async fn closing_result(&mut self, within: Duration) -> Vec<Value> {
        let mut notes = Vec::new();
        loop {
            let message = self
                .next(within)
                .await
                .expect("the stream ended without its closing result");
            if message.get("result").is_some() {
                assert_eq!(message["id"], self.id);
                assert_eq!(message["result"]["resultType"], "complete", "{message}");
                assert_eq!(
                    message["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                    self.id
                );
                assert!(
                    self.next(within).await.is_none(),
                    "nothing after the result"
                );
                return notes;
            }
            notes.push(message);
        }
    }
}
