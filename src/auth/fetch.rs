//! The one way auth asks the issuer over HTTP (its metadata, its keys, introspection): a pooled
//! client, and one more attempt on a new connection when a request failed before any answer.
//!
//! On Lambda the process is frozen between invocations, and the network does not wait for it: a
//! NAT gateway forgets a flow that has been idle for 350 s and answers the next packet of it with
//! a reset, not a FIN (the Amazon VPC User Guide, "Troubleshoot NAT gateways": "Internet
//! connection drops after 350 seconds"). The pooled connection the last fetch left open then
//! looks alive to the thawed process, and the first request written on it fails (`connection
//! reset`, or the connection closed before a message) with nothing answered. hyper-util's client
//! tries again by itself only when the request was never written; here a request that failed in
//! the same way after being written is sent once more through a client that keeps no pool, so
//! the second attempt is always on a connection opened for it.
//!
//! - **Which failures:** the request was sent on a connection and no answer's head came back:
//!   hyper's "incomplete message" or "canceled", or an I/O error (reset, aborted, broken pipe,
//!   end of stream) in the error's chain. A connection that could not be opened is not tried
//!   again: a new one would meet the same refusal or timeout. hyper-util does not say whether
//!   the failed connection came from the pool, so a failure on a new connection is also tried
//!   once more; it costs one connection on an issuer that is really failing.
//! - **Why it is safe:** every request made here reads: a `GET` of a document, or an RFC 7662
//!   introspection `POST`, which changes nothing at the issuer; and a request whose answer's head
//!   arrived is never sent again.
//! - **Idle connections:** dropped after [`POOL_IDLE`], less than the NAT gateway's 350 s, so a
//!   process that is not frozen never writes on a flow the gateway has forgotten. A frozen one may
//!   (its clock may not count the time it was frozen), which the second attempt covers.

use std::{error::Error as _, sync::Arc, time::Duration};

use http_body::Body;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};

/// How long an idle connection to the issuer is kept: well under a NAT gateway's 350 s idle
/// timeout (see the module docs), and long enough for a warm function's next requests.
const POOL_IDLE: Duration = Duration::from_secs(60);

type Https<B> = Client<hyper_rustls::HttpsConnector<HttpConnector>, B>;

/// A client for the issuer's endpoints: HTTP/1.1 over TLS (the web's roots and `extra_roots`)
/// or plain HTTP, for a body type `B`, that sends a request again on a new connection when it
/// failed before any answer (see the module docs).
pub(crate) struct IssuerClient<B> {
    pooled: Https<B>,
    /// Keeps no idle connection: each request opens its own.
    fresh: Https<B>,
}

/// A request to the issuer that got no answer.
#[derive(Debug, thiserror::Error)]
#[error("{reason}{}", if *.retried { " (and again on a new connection)" } else { "" })]
pub(crate) struct SendError {
    /// The last attempt's failure, with its causes: hyper-util's own message names only its
    /// kind (`client error (SendRequest)`).
    reason: String,
    /// Whether it was sent a second time, on a new connection.
    retried: bool,
}

impl<B> IssuerClient<B>
where
    B: Body + Clone + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    pub(crate) fn new(extra_roots: &[Vec<u8>]) -> Self {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls_config(extra_roots))
            .https_or_http()
            .enable_http1()
            .build();
        let pooled = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector.clone());
        let fresh = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector);
        Self { pooled, fresh }
    }

    /// Sends `request` once, on a new connection: for a request that must not be repeated (a
    /// code exchanged, a refresh token used), which a pooled connection lost in the network
    /// could otherwise make fail without an answer, and a resend apply twice.
    pub(crate) async fn send_once(
        &self,
        request: http::Request<B>,
    ) -> Result<http::Response<hyper::body::Incoming>, SendError> {
        self.fresh
            .request(request)
            .await
            .map_err(|error| SendError {
                reason: reason(&error),
                retried: false,
            })
    }

    /// Sends `request`, and once more on a new connection if it failed before any answer; the
    /// answer's head (the body is the caller's to read, under its own timeout).
    pub(crate) async fn send(
        &self,
        request: http::Request<B>,
    ) -> Result<http::Response<hyper::body::Incoming>, SendError> {
        let (parts, body) = request.into_parts();
        let again = copy(&parts, &body);
        let error = match self
            .pooled
            .request(http::Request::from_parts(parts, body))
            .await
        {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        if !lost_before_answer(&error) {
            return Err(SendError {
                reason: reason(&error),
                retried: false,
            });
        }
        tracing::debug!(
            error = %reason(&error),
            "an issuer request failed before any answer; sending it again on a new connection"
        );
        self.fresh.request(again).await.map_err(|error| SendError {
            reason: reason(&error),
            retried: true,
        })
    }
}

/// The same request again: method, URI, version, headers and body (auth sets no extensions).
fn copy<B: Clone>(parts: &http::request::Parts, body: &B) -> http::Request<B> {
    let mut request = http::Request::new(body.clone());
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = parts.uri.clone();
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    request
}

/// Whether `error` says the request went out on a connection that was lost before the answer's
/// head arrived (see the module docs), rather than that no connection could be opened.
fn lost_before_answer(error: &hyper_util::client::legacy::Error) -> bool {
    if error.is_connect() {
        return false;
    }
    let mut cause = error.source();
    while let Some(current) = cause {
        if let Some(hyper) = current.downcast_ref::<hyper::Error>()
            && (hyper.is_incomplete_message() || hyper.is_canceled())
        {
            return true;
        }
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            return matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | NotConnected
            );
        }
        cause = current.source();
    }
    false
}

/// `error` and its causes, `: `-separated (hyper-util's own message names only its kind).
pub(crate) fn reason(error: &hyper_util::client::legacy::Error) -> String {
    let mut reason = error.to_string();
    let mut cause = error.source();
    while let Some(current) = cause {
        reason.push_str(": ");
        reason.push_str(&current.to_string());
        cause = current.source();
    }
    reason
}

/// The web's public roots and `extra` (`MCP_AUTH_CA_FILE`, checked when it was read).
pub(crate) fn tls_config(extra: &[Vec<u8>]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for der in extra {
        // Each was parsed as a CA when the setting was read.
        let _ = roots.add(rustls::pki_types::CertificateDer::from(der.clone()));
    }
    // ring, not aws-lc-rs: no C toolchain or aws-lc-sys in a user's build, and the binary stays
    // small (docs/deploy.md). rustls 0.23.48 deprecates ring's provider for lacking
    // post-quantum key exchange; that gap is known and accepted for fetching an issuer's
    // public keys, and a user's build must not warn about our choice.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_copied_whole() {
        let request = http::Request::post("http://issuer.example/introspect")
            .header(http::header::ACCEPT, "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(
                b"token=x",
            )))
            .unwrap();
        let (parts, body) = request.into_parts();
        let again = copy(&parts, &body);
        assert_eq!(again.method(), http::Method::POST);
        assert_eq!(again.uri(), "http://issuer.example/introspect");
        assert_eq!(again.headers(), &parts.headers);
    }
}
