//! Real keys, real signatures: an issuer for the auth tests.
//!
//! RSA keys come from `openssl genpkey` (ring cannot generate RSA keys);
//! P-256 and Ed25519 keys from ring. The JWKS is served over HTTP on
//! loopback (or HTTPS, with a test CA: `Issuer::start_tls`) and every fetch is counted.

use std::{
    convert::Infallible,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD as B64};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{body::Incoming, server::conn::http1};
use hyper_util::rt::TokioIo;
use ring::{
    rand::SystemRandom,
    signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair},
};
use serde_json::{Value, json};

pub enum Signer {
    Rsa(RsaKeyPair),
    P256(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
}

pub struct TestKey {
    pub kid: String,
    pub signer: Signer,
}

impl TestKey {
    pub fn rsa(kid: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mcp-lambda-rsa-{}-{}.der",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let out = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-outform",
                "DER",
                "-out",
            ])
            .arg(&dir)
            .output()
            .expect("openssl is needed to generate RSA test keys");
        assert!(
            out.status.success(),
            "openssl failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let der = std::fs::read(&dir).unwrap();
        let _ = std::fs::remove_file(&dir);
        Self {
            kid: kid.into(),
            signer: Signer::Rsa(
                RsaKeyPair::from_pkcs8(&der)
                    .or_else(|_| RsaKeyPair::from_der(&der))
                    .expect("an RSA private key in PKCS#8 or PKCS#1 DER"),
            ),
        }
    }

    pub fn p256(kid: &str) -> Self {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        Self {
            kid: kid.into(),
            signer: Signer::P256(EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap()),
        }
    }

    pub fn ed25519(kid: &str) -> Self {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        Self {
            kid: kid.into(),
            signer: Signer::Ed25519(Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap()),
        }
    }

    pub fn default_alg(&self) -> &'static str {
        match self.signer {
            Signer::Rsa(_) => "RS256",
            Signer::P256(_) => "ES256",
            Signer::Ed25519(_) => "EdDSA",
        }
    }

    pub fn jwk(&self) -> Value {
        match &self.signer {
            Signer::Rsa(key) => {
                let (n, e) = rsa_public_components(key.public().as_ref());
                json!({"kty": "RSA", "kid": self.kid, "use": "sig", "n": B64.encode(n), "e": B64.encode(e)})
            }
            Signer::P256(key) => {
                let point = key.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "kid": self.kid,
                       "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])})
            }
            Signer::Ed25519(key) => {
                json!({"kty": "OKP", "crv": "Ed25519", "kid": self.kid, "x": B64.encode(key.public_key().as_ref())})
            }
        }
    }

    /// Signs `claims` with `alg` (RS256/PS256 for RSA) and this key's `kid`.
    pub fn sign_with(&self, header: Value, claims: &Value) -> String {
        let input = format!(
            "{}.{}",
            B64.encode(serde_json::to_vec(&header).unwrap()),
            B64.encode(serde_json::to_vec(claims).unwrap())
        );
        let rng = SystemRandom::new();
        let sig = match &self.signer {
            Signer::Rsa(key) => {
                let padding: &dyn signature::RsaEncoding = if header["alg"] == "PS256" {
                    &signature::RSA_PSS_SHA256
                } else {
                    &signature::RSA_PKCS1_SHA256
                };
                let mut sig = vec![0; key.public().modulus_len()];
                key.sign(padding, &rng, input.as_bytes(), &mut sig).unwrap();
                sig
            }
            Signer::P256(key) => key.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            Signer::Ed25519(key) => key.sign(input.as_bytes()).as_ref().to_vec(),
        };
        format!("{input}.{}", B64.encode(sig))
    }

    pub fn sign(&self, claims: &Value) -> String {
        self.sign_with(
            json!({"alg": self.default_alg(), "typ": "JWT", "kid": self.kid}),
            claims,
        )
    }
}

/// `n` and `e` out of a DER `RSAPublicKey ::= SEQUENCE { n INTEGER, e INTEGER }`.
fn rsa_public_components(der: &[u8]) -> (Vec<u8>, Vec<u8>) {
    fn read(der: &[u8]) -> (u8, &[u8], &[u8]) {
        let tag = der[0];
        let (len, start) = if der[1] < 0x80 {
            (der[1] as usize, 2)
        } else {
            let n = (der[1] & 0x7f) as usize;
            (
                der[2..2 + n]
                    .iter()
                    .fold(0usize, |acc, b| (acc << 8) | *b as usize),
                2 + n,
            )
        };
        (tag, &der[start..start + len], &der[start + len..])
    }
    let (_, seq, _) = read(der);
    let (_, n, rest) = read(seq);
    let (_, e, _) = read(rest);
    let strip = |v: &[u8]| {
        v.iter()
            .skip_while(|b| **b == 0)
            .copied()
            .collect::<Vec<_>>()
    };
    (strip(n), strip(e))
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// How an [`Issuer`] answers: at once with RFC 8414 metadata (the default), or after a delay
/// with OpenID discovery only.
#[derive(Debug, Clone, Copy, Default)]
struct Answers {
    delay: std::time::Duration,
    openid_only: bool,
}

/// An issuer on loopback: RFC 8414 metadata plus a JWKS that tests can swap.
pub struct Issuer {
    pub url: String,
    pub jwks: Arc<Mutex<Value>>,
    pub fetches: Arc<AtomicUsize>,
    pub down: Arc<AtomicBool>,
}

impl Issuer {
    pub async fn start(keys: &[&TestKey]) -> Self {
        Self::serve(keys, None, Answers::default()).await
    }

    /// An issuer that publishes OpenID discovery only (`/.well-known/openid-configuration`; the
    /// RFC 8414 document is a 404) and takes `delay` over every answer: for counting the round
    /// trips start-up waits for.
    pub async fn start_slow_openid(keys: &[&TestKey], delay: std::time::Duration) -> Self {
        let answers = Answers {
            delay,
            openid_only: true,
        };
        Self::serve(keys, None, answers).await
    }

    /// The same issuer on `https://127.0.0.1:<port>`, with a certificate signed by a test CA
    /// made for it; also returns that CA's PEM (what `MCP_AUTH_CA_FILE` names).
    pub async fn start_tls(keys: &[&TestKey]) -> (Self, String) {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "mcp-lambda test CA");
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
        let tls = tokio_rustls::rustls::ServerConfig::builder_with_provider(Arc::new(
            tokio_rustls::rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            tokio_rustls::rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        (
            Self::serve(keys, Some(acceptor), Answers::default()).await,
            ca.pem(),
        )
    }

    async fn serve(
        keys: &[&TestKey],
        tls: Option<tokio_rustls::TlsAcceptor>,
        answers: Answers,
    ) -> Self {
        let metadata_path = if answers.openid_only {
            "/.well-known/openid-configuration"
        } else {
            "/.well-known/oauth-authorization-server"
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{}", listener.local_addr().unwrap());
        let jwks = Arc::new(Mutex::new(
            json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()}),
        ));
        let fetches = Arc::new(AtomicUsize::new(0));
        let down = Arc::new(AtomicBool::new(false));
        let (j, f, d, u) = (jwks.clone(), fetches.clone(), down.clone(), url.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    break;
                };
                let (j, f, d, u) = (j.clone(), f.clone(), d.clone(), u.clone());
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |req: http::Request<Incoming>| {
                            let (j, f, d, u) = (j.clone(), f.clone(), d.clone(), u.clone());
                            async move {
                                if !answers.delay.is_zero() {
                                    tokio::time::sleep(answers.delay).await;
                                }
                                let (status, body) = if d.load(Ordering::SeqCst) {
                                    (503, json!({"error": "down"}))
                                } else {
                                    // Reached through a proxy, the keys are named where it was reached.
                                    let base = req
                                        .headers()
                                        .get(http::header::HOST)
                                        .and_then(|h| h.to_str().ok())
                                        .map(|h| {
                                            format!("{}://{h}", &u[..u.find("://").unwrap_or(0)])
                                        })
                                        .unwrap_or_else(|| u.clone());
                                    match req.uri().path() {
                                        path if path == metadata_path => (
                                            200,
                                            json!({"issuer": base, "jwks_uri": format!("{base}/jwks.json")}),
                                        ),
                                        "/jwks.json" => {
                                            f.fetch_add(1, Ordering::SeqCst);
                                            (200, j.lock().unwrap().clone())
                                        }
                                        _ => (404, json!({})),
                                    }
                                };
                                Ok::<_, Infallible>(
                                    http::Response::builder()
                                        .status(status)
                                        .header("content-type", "application/json")
                                        .body(Full::new(Bytes::from(body.to_string())))
                                        .unwrap(),
                                )
                            }
                        },
                    );
                    match tls {
                        None => {
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                        Some(tls) => {
                            // A client that does not trust the CA hangs up here.
                            let Ok(stream) = tls.accept(stream).await else {
                                return;
                            };
                            let _ = http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .await;
                        }
                    }
                });
            }
        });
        Self {
            url,
            jwks,
            fetches,
            down,
        }
    }

    pub fn set_keys(&self, keys: &[&TestKey]) {
        *self.jwks.lock().unwrap() =
            json!({"keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>()});
    }

    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// Claims that pass every check for `audience`, for `subject`, with `scope`.
    pub fn claims(&self, audience: &str, subject: &str, scope: &str) -> Value {
        json!({"iss": self.url, "aud": audience, "sub": subject, "scope": scope,
               "exp": now() + 600, "nbf": now() - 10, "iat": now() - 10, "client_id": "tests"})
    }
}
