//! Opaque access tokens checked by RFC 7662 introspection at the issuer, each answer reused
//! for a short window.
//!
//! Only a token that is not a JWS is introspected: JWTs are verified locally (several
//! authorization servers refuse to introspect their own JWTs). The answer is kept under the
//! SHA-256 of the token, never the token, for at most
//! [`cache_window`](super::IntrospectionSettings::cache_window) and never past the token's
//! `exp`, so a client's next requests make no network call and a revoked token is refused
//! once its window has passed. Inactive answers are kept the same way, so replaying a dead
//! token does not make every request a call to the issuer. An issuer that cannot be asked is
//! never read as "active": the request is answered 503.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderValue, header};
use http_body_util::{BodyExt, Full, Limited};
use ring::digest;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::{
    AuthSettings, ClientSecret, IntrospectionSettings, Principal,
    fetch::IssuerClient,
    jwks::Jwks,
    jwt::{self, TokenError},
};

/// How long one introspection may take, answer included: it is on a request's path.
const TIMEOUT: Duration = Duration::from_secs(3);
/// The largest introspection answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// How many distinct tokens are remembered (as in the JWT cache: a full cache drops what has
/// expired, or everything).
const CAPACITY: usize = 4096;

/// Why a token could not be accepted by introspection.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The issuer answered, and the token is not one this server accepts (401).
    Refused(TokenError),
    /// The issuer could not be asked, or answered something unreadable (503): the reason is
    /// for the log, not the client.
    Unavailable(String),
}

/// What the issuer said of one token, until when it is reused.
#[derive(Debug, Clone)]
struct Answer {
    verdict: Result<Principal, TokenError>,
    until: f64,
}

/// One introspection's answer, shared by the requests waiting for it.
type AskedOnce = OnceCell<Result<Value, String>>;

/// Introspects opaque tokens and remembers the answers.
pub(crate) struct Introspector {
    configured_url: Option<String>,
    /// `Basic base64(client_id:client_secret)`, each form-encoded first (RFC 6749 §2.3.1);
    /// `None` when the secret was never fetched from AWS (every introspection then fails).
    authorization: Option<HeaderValue>,
    window: f64,
    answers: Mutex<HashMap<[u8; 32], Answer>>,
    /// The introspections under way, by token hash: concurrent first requests with one token
    /// (a client opening several calls at once) wait for one answer instead of asking each.
    asking: Mutex<HashMap<[u8; 32], Arc<AskedOnce>>>,
    client: IssuerClient<Full<Bytes>>,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspector")
            .field("url", &self.configured_url)
            .finish_non_exhaustive()
    }
}

impl Introspector {
    pub(crate) fn new(settings: &IntrospectionSettings, extra_roots: &[Vec<u8>]) -> Self {
        let authorization = match &settings.client_secret {
            ClientSecret::Value(secret) => {
                let credentials = format!(
                    "{}:{}",
                    form_encode(&settings.client_id),
                    form_encode(secret)
                );
                let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
                HeaderValue::from_str(&format!("Basic {encoded}"))
                    .ok()
                    .map(|mut value| {
                        value.set_sensitive(true);
                        value
                    })
            }
            ClientSecret::Ssm(_) | ClientSecret::SecretsManager(_) => None,
        };
        Self {
            configured_url: settings.url.clone(),
            authorization,
            window: settings.cache_window.as_secs_f64(),
            answers: Mutex::new(HashMap::new()),
            asking: Mutex::new(HashMap::new()),
            client: IssuerClient::new(extra_roots),
        }
    }

    /// The principal `token` stands for: from a remembered answer, or by asking the issuer.
    pub(crate) async fn principal(
        &self,
        token: &str,
        jwks: &Jwks,
        settings: &AuthSettings,
        now: f64,
    ) -> Result<Principal, Failure> {
        let key = key(token);
        if let Some(answer) = self.remembered(&key, now) {
            return answer.map_err(Failure::Refused);
        }
        let url = match &self.configured_url {
            Some(url) => url.clone(),
            None => jwks
                .introspection_endpoint()
                .await
                .map_err(Failure::Unavailable)?,
        };
        let answer = self
            .ask_once(key, &url, token)
            .await
            .map_err(Failure::Unavailable)?;
        let verdict = read_answer(&answer, settings, now);
        let exp = answer.get("exp").and_then(Value::as_f64);
        let until = exp.map_or(now + self.window, |exp| exp.min(now + self.window));
        self.remember(key, verdict.clone(), until, now);
        verdict.map_err(Failure::Refused)
    }

    fn remembered(&self, key: &[u8; 32], now: f64) -> Option<Result<Principal, TokenError>> {
        let answers = self.answers.lock().expect("introspection cache poisoned");
        answers
            .get(key)
            .filter(|answer| now < answer.until)
            .map(|answer| answer.verdict.clone())
    }

    fn remember(
        &self,
        key: [u8; 32],
        verdict: Result<Principal, TokenError>,
        until: f64,
        now: f64,
    ) {
        if until <= now {
            return;
        }
        let mut answers = self.answers.lock().expect("introspection cache poisoned");
        if answers.len() >= CAPACITY {
            answers.retain(|_, answer| now < answer.until);
            if answers.len() >= CAPACITY {
                answers.clear();
            }
        }
        answers.insert(key, Answer { verdict, until });
    }

    /// [`ask`](Self::ask), shared by every request that needs the same token's answer while
    /// it is under way.
    async fn ask_once(&self, key: [u8; 32], url: &str, token: &str) -> Result<Value, String> {
        let cell = self
            .asking
            .lock()
            .expect("introspection lock poisoned")
            .entry(key)
            .or_default()
            .clone();
        let answer = cell.get_or_init(|| self.ask(url, token)).await.clone();
        let mut asking = self.asking.lock().expect("introspection lock poisoned");
        if asking
            .get(&key)
            .is_some_and(|current| Arc::ptr_eq(current, &cell))
        {
            asking.remove(&key);
        }
        answer
    }

    /// One introspection request: `token` and `token_type_hint=access_token`, form-encoded,
    /// with the client's Basic credentials.
    async fn ask(&self, url: &str, token: &str) -> Result<Value, String> {
        let authorization = self.authorization.clone().ok_or(
            "the introspection client secret was not fetched from AWS: load the configuration \
             with Config::load",
        )?;
        let uri: http::Uri = url
            .parse()
            .map_err(|_| format!("the introspection URL {url} is not a valid URL"))?;
        let body = format!("token={}&token_type_hint=access_token", form_encode(token));
        let request = http::Request::post(uri)
            .header(header::AUTHORIZATION, authorization)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let exchange = async {
            let response = self
                .client
                .send(request)
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|e| format!("{url}: {e}"))?
                .to_bytes();
            Ok::<_, String>((status, body))
        };
        let (status, body) = tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| format!("{url} did not answer within {TIMEOUT:?}"))??;
        if status == http::StatusCode::UNAUTHORIZED || status == http::StatusCode::FORBIDDEN {
            return Err(format!(
                "{url} answered {status}: the issuer refused this server's client; check \
                 MCP_AUTH_INTROSPECTION_CLIENT_ID and MCP_AUTH_INTROSPECTION_CLIENT_SECRET"
            ));
        }
        if !status.is_success() {
            return Err(format!("{url} answered {status}"));
        }
        let answer: Value =
            serde_json::from_slice(&body).map_err(|_| format!("{url} did not answer with JSON"))?;
        if !answer.is_object() {
            return Err(format!("{url} did not answer with a JSON object"));
        }
        Ok(answer)
    }
}

/// An introspection answer (RFC 7662 §2.2) as this server reads it: active, this issuer's,
/// naming this server, of an accepted client, not expired.
///
/// A token with no `sub` (a client_credentials grant) is the client's own: its subject reads
/// `client:<client_id>`, so what it keeps is shared by every token issued to that client.
fn read_answer(answer: &Value, settings: &AuthSettings, now: f64) -> Result<Principal, TokenError> {
    let string = |name: &str| answer.get(name).and_then(Value::as_str);
    if answer.get("active") != Some(&Value::Bool(true)) {
        return Err(TokenError::Inactive);
    }
    if let Some(issuer) = string("iss")
        && issuer != settings.issuer
    {
        return Err(TokenError::Issuer {
            found: issuer.chars().take(200).collect(),
            expected: settings.issuer.clone(),
        });
    }
    if let Some(exp) = answer.get("exp") {
        let exp = exp.as_f64().ok_or(TokenError::Claim("exp"))?;
        if now > exp + settings.leeway.as_secs_f64() {
            return Err(TokenError::Expired);
        }
    }
    let scopes: Vec<String> = match answer.get("scope") {
        Some(Value::String(scope)) => scope.split_whitespace().map(str::to_string).collect(),
        None => Vec::new(),
        Some(_) => return Err(TokenError::Claim("scope")),
    };
    jwt::check_audience(answer.get("aud"), &scopes, settings)?;
    let client_id = string("client_id");
    jwt::check_client(client_id, settings)?;
    let subject = match (string("sub"), client_id) {
        (Some(sub), _) => sub.to_string(),
        (None, Some(client)) => format!("client:{client}"),
        (None, None) => return Err(TokenError::Claim("sub")),
    };
    Ok(Principal {
        issuer: settings.issuer.clone(),
        subject,
        scopes,
        client_id: client_id.map(str::to_string),
    })
}

fn key(token: &str) -> [u8; 32] {
    let digest = digest::digest(&digest::SHA256, token.as_bytes());
    digest.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

/// `application/x-www-form-urlencoded`: every byte but the unreserved ones percent-encoded.
fn form_encode(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings(client_ids: &[&str]) -> AuthSettings {
        let ids = client_ids.join(",");
        crate::Config::from_lookup(|name| match name {
            "MCP_AUTH_ISSUER" => Some("https://auth.example.com".into()),
            "MCP_AUTH_AUDIENCE" => Some("https://mcp.example.com/mcp".into()),
            "MCP_AUTH_CLIENT_IDS" => Some(ids.clone()),
            _ => None,
        })
        .unwrap()
        .auth
        .unwrap()
    }

    #[test]
    fn an_active_answer_for_this_server_is_its_principal() {
        let answer = json!({
            "active": true, "sub": "ada", "client_id": "web", "scope": "a b",
            "aud": "https://mcp.example.com/mcp", "exp": 2e9, "iss": "https://auth.example.com",
        });
        let principal = read_answer(&answer, &settings(&[]), 1e9).unwrap();
        assert_eq!(principal.owner_key(), "https://auth.example.com#ada");
        assert_eq!(principal.scopes, ["a", "b"]);
        assert_eq!(principal.client_id.as_deref(), Some("web"));
    }

    #[test]
    fn every_other_answer_is_refused_for_what_it_is() {
        let s = settings(&[]);
        let base = json!({"active": true, "sub": "ada", "aud": ["https://mcp.example.com/mcp"]});
        let with = |patch: Value| {
            let mut answer = base.clone();
            for (k, v) in patch.as_object().unwrap() {
                answer[k] = v.clone();
            }
            read_answer(&answer, &s, 1e9).unwrap_err()
        };
        assert_eq!(with(json!({"active": false})), TokenError::Inactive);
        assert_eq!(with(json!({"active": "true"})), TokenError::Inactive);
        assert!(matches!(
            with(json!({"aud": "https://other/mcp"})),
            TokenError::Audience { .. }
        ));
        assert!(matches!(
            with(json!({"iss": "https://evil"})),
            TokenError::Issuer { .. }
        ));
        assert_eq!(with(json!({"exp": 1e9 - 3600.0})), TokenError::Expired);
        let no_aud = json!({"active": true, "sub": "ada"});
        assert_eq!(
            read_answer(&no_aud, &s, 1e9).unwrap_err(),
            TokenError::Claim("aud")
        );
        let listed = settings(&["cli"]);
        let other_client = json!({"active": true, "sub": "ada", "client_id": "web",
            "aud": "https://mcp.example.com/mcp"});
        assert!(matches!(
            read_answer(&other_client, &listed, 1e9).unwrap_err(),
            TokenError::Client { .. }
        ));
    }

    #[test]
    fn a_token_without_a_subject_belongs_to_its_client() {
        let answer = json!({"active": true, "client_id": "batch-job",
            "aud": "https://mcp.example.com/mcp"});
        let principal = read_answer(&answer, &settings(&[]), 1e9).unwrap();
        assert_eq!(principal.subject, "client:batch-job");
        let nobody = json!({"active": true, "aud": "https://mcp.example.com/mcp"});
        assert_eq!(
            read_answer(&nobody, &settings(&[]), 1e9).unwrap_err(),
            TokenError::Claim("sub")
        );
    }

    #[test]
    fn credentials_are_form_encoded() {
        assert_eq!(form_encode("a b:c/d~e"), "a%20b%3Ac%2Fd~e");
    }

    #[test]
    fn answers_are_reused_only_inside_their_window_and_the_cache_is_bounded() {
        let introspector = Introspector::new(
            &IntrospectionSettings {
                url: Some("http://127.0.0.1:9/introspect".into()),
                client_id: "mcp".into(),
                client_secret: ClientSecret::Value("s".into()),
                cache_window: Duration::from_secs(60),
            },
            &[],
        );
        introspector.remember(key("t"), Err(TokenError::Inactive), 100.0, 50.0);
        assert!(introspector.remembered(&key("t"), 99.0).is_some());
        assert!(introspector.remembered(&key("t"), 100.0).is_none());
        introspector.remember(key("past"), Err(TokenError::Inactive), 10.0, 50.0);
        assert!(
            introspector.remembered(&key("past"), 9.0).is_none(),
            "never stored"
        );
        for i in 0..CAPACITY + 10 {
            introspector.remember(key(&format!("t{i}")), Err(TokenError::Inactive), 1e12, 0.0);
        }
        assert!(introspector.answers.lock().unwrap().len() <= CAPACITY);
    }
}
