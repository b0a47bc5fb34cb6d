//! A loopback TCP relay that forgets its flows as a NAT gateway forgets an idle one: what a
//! Lambda function's pooled connections meet after the function was frozen between invocations
//! (issue 41).
//!
//! A NAT gateway that has timed a flow out tells neither side. The client's socket still looks
//! open, and the gateway answers the next packet the client sends on it with a reset (the Amazon
//! VPC User Guide, "Troubleshoot NAT gateways": after 350 s idle, "a NAT gateway returns an RST
//! packet to any resources behind the NAT gateway that attempt to continue the connection (it
//! does not send a FIN packet)"). [`Nat::forget`] does that to every flow open now: it stops
//! relaying, sends the client nothing, and resets the client's connection (`SO_LINGER` 0) when
//! the client next sends on it or closes it. New connections are relayed as before.
//!
//! ```ignore
//! let nat = Nat::start(&issuer.url).await; // give the server nat.url
//! // … the server fetches through it, then is stopped (SIGSTOP) …
//! nat.forget();
//! // … SIGCONT: its next request on the old connection is reset.
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// The relay; dropping it stops it and drops every flow. See the module docs.
pub struct Nat {
    /// `http://127.0.0.1:<port>`: where the client connects instead of the upstream.
    pub url: String,
    /// Each open flow's "forget it" switch.
    flows: Arc<Mutex<Vec<Arc<Notify>>>>,
    connections: Arc<AtomicUsize>,
    /// The accept loop and every flow's task.
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Drop for Nat {
    fn drop(&mut self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

impl Nat {
    /// Listens on a free loopback port, relaying each connection to `upstream`
    /// (`http://host:port` or `host:port`) over a connection of its own.
    pub async fn start(upstream: &str) -> Self {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let flows: Arc<Mutex<Vec<Arc<Notify>>>> = Arc::default();
        let connections = Arc::new(AtomicUsize::new(0));
        let tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let (f, c, t) = (flows.clone(), connections.clone(), tasks.clone());
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                c.fetch_add(1, Ordering::SeqCst);
                let forget = Arc::new(Notify::new());
                f.lock().unwrap().push(forget.clone());
                let flow = tokio::spawn(relay(client, upstream.clone(), forget));
                t.lock().unwrap().push(flow.abort_handle());
            }
        });
        tasks.lock().unwrap().push(accept.abort_handle());
        Self {
            url,
            flows,
            connections,
            tasks,
        }
    }

    /// Forgets every flow open now, as a NAT gateway forgets one idle past its timeout: nothing
    /// is sent to the client, whose next packet on it is answered with a reset.
    pub fn forget(&self) {
        for flow in self.flows.lock().unwrap().drain(..) {
            flow.notify_one();
        }
    }

    /// How many connections it has accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Relays `client` to `upstream` until either side closes, or until the flow is forgotten:
/// then the client's next packet (or its close) is answered with a reset.
async fn relay(mut client: TcpStream, upstream: String, forget: Arc<Notify>) {
    let Ok(mut server) = TcpStream::connect(&upstream).await else {
        let _ = client.set_zero_linger();
        return;
    };
    let forgotten = tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => false,
        () = forget.notified() => true,
    };
    if forgotten {
        // The far side's connection is of no more use; the client is not told until it sends.
        drop(server);
        let _ = client.readable().await;
        let _ = client.set_zero_linger();
    }
}
