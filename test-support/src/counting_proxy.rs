//! A loopback TCP proxy in front of a DynamoDB endpoint that records every request's operation:
//! what the request-count tests (`tests/dynamodb_local/dynamodb.rs`) and the listener benchmark
//! (`benches/servers/listeners_bench.rs`) count with.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A loopback TCP proxy in front of the DynamoDB endpoint that records the operation
/// (`X-Amz-Target`) of every HTTP request passing through, and counts connections. On demand it
/// withholds the answers to the next requests of an operation (they still reach DynamoDB), or
/// stops listening and drops every connection.
pub struct CountingProxy {
    pub url: String,
    targets: Arc<Mutex<Vec<String>>>,
    connections: Arc<AtomicUsize>,
    /// Answers to withhold: (operation, how many more).
    swallow: Arc<Mutex<(String, usize)>>,
    /// The accept loop and every connection's task.
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Drop for CountingProxy {
    fn drop(&mut self) {
        self.refuse();
    }
}

impl CountingProxy {
    pub async fn start(upstream: &str) -> Self {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let targets = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let swallow = Arc::new(Mutex::new((String::new(), 0)));
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let (t, c, sw, all) = (
            targets.clone(),
            connections.clone(),
            swallow.clone(),
            tasks.clone(),
        );
        let accept = tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                c.fetch_add(1, Ordering::SeqCst);
                let (targets, upstream, swallow) = (t.clone(), upstream.clone(), sw.clone());
                let connection = tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    // Set when a request to withhold the answer of passes: from then on this
                    // connection's answers go nowhere (the client times out and hangs up).
                    let mute = Arc::new(std::sync::atomic::AtomicBool::new(false));
                    let muted = mute.clone();
                    // Aborted with this task (a dropped JoinHandle would leave it running, holding
                    // the client's socket open).
                    let back = AbortOnDrop(tokio::spawn(async move {
                        let mut buf = vec![0u8; 64 * 1024];
                        loop {
                            let n = match server_read.read(&mut buf).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            if !muted.load(Ordering::SeqCst)
                                && client_write.write_all(&buf[..n]).await.is_err()
                            {
                                break;
                            }
                        }
                    }));
                    let mut seen = Vec::new();
                    let mut scanned = 0;
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        let n = match client_read.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        seen.extend_from_slice(&buf[..n]);
                        // This connection's new operations, read apart from the shared list:
                        // another connection's `take` may empty that list at any moment.
                        let mut new = Vec::new();
                        scanned = read_targets(&seen, scanned, &mut new);
                        for op in &new {
                            let mut swallow = swallow.lock().unwrap();
                            if swallow.1 > 0 && &swallow.0 == op {
                                swallow.1 -= 1;
                                mute.store(true, Ordering::SeqCst);
                            }
                        }
                        targets.lock().unwrap().extend(new);
                        if server_write.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    drop(back);
                });
                all.lock().unwrap().push(connection.abort_handle());
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        Self {
            url,
            targets,
            connections,
            swallow,
            tasks,
        }
    }

    /// Withholds the answers to the next `count` requests of `operation`: each reaches DynamoDB,
    /// which applies it, but its answer never comes back.
    pub fn swallow(&self, operation: &str, count: usize) {
        *self.swallow.lock().unwrap() = (operation.to_owned(), count);
    }

    /// Stops listening and drops every connection: from now on, connecting is refused.
    pub fn refuse(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }

    /// The operations seen since the last [`take`](Self::take), in order, left in place.
    pub fn seen(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }

    /// The operations seen since the last call, in order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.targets.lock().unwrap())
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads the operation of every complete `x-amz-target: DynamoDB_20120810.<Op>` header line
/// after `from` into `targets`; returns where to continue next time.
fn read_targets(seen: &[u8], mut from: usize, targets: &mut Vec<String>) -> usize {
    const NEEDLE: &[u8] = b"x-amz-target:";
    loop {
        let Some(at) = seen[from..]
            .windows(NEEDLE.len())
            .position(|w| w.eq_ignore_ascii_case(NEEDLE))
        else {
            return seen.len().saturating_sub(NEEDLE.len()).max(from);
        };
        let start = from + at + NEEDLE.len();
        let Some(end) = seen[start..].windows(2).position(|w| w == b"\r\n") else {
            return from + at;
        };
        let value = String::from_utf8_lossy(&seen[start..start + end]);
        let op = value.trim().rsplit('.').next().unwrap_or("").to_owned();
        targets.push(op);
        from = start + end;
    }
}
