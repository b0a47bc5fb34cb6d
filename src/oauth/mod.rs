//! The built-in OAuth 2.1 authorization server (`MCP_OAUTH_UPSTREAM_ISSUER`): every MCP client
//! registers here and people log in with the identity provider they already have.
//!
//! The server is its own issuer (the origin of `MCP_AUTH_AUDIENCE`). A client registers (RFC
//! 7591, or is configured), sends the person's browser to `/oauth/authorize`, where a consent
//! page names the client, where it sends them back and the scopes; approval (a POST) sends the
//! browser to the upstream provider with this server's own PKCE pair, `state` and `nonce`, and a
//! cookie binds that browser to the login (the callback refuses a browser without it). The
//! upstream's callback verifies its ID token, makes a grant for `<upstream issuer>#<sub>`, and
//! redirects to the client with a single-use code and RFC 9207 `iss`. The token endpoint
//! exchanges the code (PKCE S256, `resource` = this server) for a short-lived ES256 `at+jwt`
//! access token, which the resource server (`auth/`) verifies with the same keys and no
//! network call, and an opaque refresh token, rotated on every use.
//!
//! | request | answer |
//! |---|---|
//! | `GET /.well-known/oauth-authorization-server[<MCP_PATH>]` | RFC 8414 metadata |
//! | `GET /oauth/jwks` | the public signing keys |
//! | `POST /oauth/register` | RFC 7591 dynamic registration (public clients); a client may instead be identified by its metadata document's URL (`cimd.rs`) |
//! | `GET /oauth/authorize` | the consent page, or an error page (unknown client or redirect URI), or a redirect with an `error` |
//! | `POST /oauth/authorize` | the consent's answer: to the upstream, or back to the client with `access_denied` |
//! | `GET /oauth/callback` | the upstream's answer: back to the client with a code |
//! | `POST /oauth/token` | `authorization_code` and `refresh_token` grants |
//! | `POST /oauth/revoke` | RFC 7009 revocation of a refresh token (its whole grant) |
//!
//! Redirects go only to a URI validated for the client: an unknown client, an unregistered
//! redirect URI or a malformed request before they are known get an error page (4xx), never a
//! redirect. Codes, refresh tokens and states are kept only as hashes (`store.rs`).

mod authorize;
mod cimd;
#[cfg(feature = "dynamodb")]
mod dynamodb;
mod keys;
mod metadata;
mod page;
mod redirect;
mod register;
mod settings;
mod store;
mod token;
mod upstream;
mod upstream_token;

use std::{collections::HashMap, sync::Arc};

use bytes::Bytes;
use http::{HeaderValue, Method, Response, StatusCode, header, request::Parts};
use serde_json::{Value, json};

// `Config`'s part (`MCP_OAUTH_*`): the house's, not a server's.
#[doc(hidden)]
pub use settings::{OAuthSettings, PreRegisteredClient, UpstreamSettings};
pub(crate) use store::{MemoryOAuthStore, OAuthStore};
pub use upstream_token::{UpstreamToken, UpstreamTokenError};

use self::{keys::SigningKeys, upstream::Upstream};

/// The store on `table`, the handles table (`MCP_HANDLES_TABLE`, items `o#…`), else this
/// process's memory (with a warning on Lambda, where instances do not share it: a login begun
/// on one instance fails on another).
pub(crate) async fn open_store(
    table: Option<&str>,
    timeouts: &crate::aws::AwsTimeouts,
) -> Result<Arc<dyn OAuthStore>, crate::aws::TableError> {
    let Some(table) = table else {
        if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
            tracing::warn!(
                "MCP_HANDLES_TABLE is not set: the authorization server keeps registrations, logins and grants in this instance's memory, so a login begun on one instance fails on another; set it on Lambda"
            );
        }
        return Ok(Arc::new(MemoryOAuthStore::default()));
    };
    #[cfg(feature = "dynamodb")]
    {
        let table = crate::aws::table::Table::open("oauth", table, timeouts).await?;
        Ok(Arc::new(dynamodb::DynamoDbOAuthStore::new(table)))
    }
    #[cfg(not(feature = "dynamodb"))]
    {
        let _ = timeouts;
        Err(crate::aws::TableError::new(
            "oauth",
            table,
            "this build has no DynamoDB store: enable the `dynamodb` feature of mcp-lambda, or leave the table unset to keep the authorization server's state in memory",
        ))
    }
}

/// What a request authenticated by one of this server's access tokens carries for
/// [`UpstreamToken`]: `None` unless the provider's tokens are kept and the token names them.
pub(crate) fn upstream_access(
    server: &Arc<AuthorizationServer>,
    headers: &http::HeaderMap,
) -> Option<upstream_token::UpstreamAccess> {
    if !server.settings.keep_upstream_tokens {
        return None;
    }
    let bearer = headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .get(7..)?;
    Some(upstream_token::UpstreamAccess {
        server: server.clone(),
        reference: upstream_token::reference_in(bearer)?,
    })
}

/// The largest request body an endpoint reads (a registration, a form).
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024;

/// The paths this server answers, relative to the origin.
pub(crate) const CALLBACK_PATH: &str = "/oauth/callback";
const AUTHORIZE_PATH: &str = "/oauth/authorize";
const TOKEN_PATH: &str = "/oauth/token";
const REGISTER_PATH: &str = "/oauth/register";
const REVOKE_PATH: &str = "/oauth/revoke";
const JWKS_PATH: &str = "/oauth/jwks";

/// One of the authorization server's endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Metadata,
    Jwks,
    Register,
    Authorize,
    Consent,
    Callback,
    Token,
    Revoke,
}

impl Endpoint {
    /// Whether the endpoint reads a request body.
    pub(crate) fn has_body(self) -> bool {
        matches!(
            self,
            Self::Register | Self::Consent | Self::Token | Self::Revoke
        )
    }
}

/// The built-in authorization server, built once at start-up.
pub(crate) struct AuthorizationServer {
    issuer: String,
    resource: String,
    /// `MCP_PATH`, for the path-inserted metadata URL.
    mcp_path: String,
    scopes: Vec<String>,
    settings: OAuthSettings,
    keys: SigningKeys,
    store: Arc<dyn OAuthStore>,
    upstream: Upstream,
    /// Clients whose id is a metadata document's URL.
    documents: cimd::ClientDocuments,
    /// Cookies get `Secure` and the `__Host-` prefix unless the issuer is plain `http`
    /// (loopback tests and local runs).
    secure_cookies: bool,
}

impl std::fmt::Debug for AuthorizationServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationServer")
            .field("issuer", &self.issuer)
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl AuthorizationServer {
    /// The server of `settings`, advertising `scopes`, keeping its state in `store`.
    pub(crate) fn new(
        settings: &OAuthSettings,
        mcp_path: &str,
        scopes: Vec<String>,
        store: Arc<dyn OAuthStore>,
        extra_roots: &[Vec<u8>],
    ) -> Self {
        Self {
            issuer: settings.issuer.clone(),
            resource: settings.resource.clone(),
            mcp_path: mcp_path.to_string(),
            scopes,
            keys: settings.keys.clone(),
            store,
            upstream: Upstream::new(
                settings.upstream.clone(),
                format!("{}{CALLBACK_PATH}", settings.issuer),
                extra_roots,
            ),
            documents: cimd::ClientDocuments::new(
                settings.cimd_allow_private_networks,
                extra_roots,
            ),
            secure_cookies: settings.issuer.starts_with("https://"),
            settings: settings.clone(),
        }
    }

    /// The endpoint `method` and `path` name, if any.
    pub(crate) fn route(&self, method: &Method, path: &str) -> Option<Endpoint> {
        let post = *method == Method::POST;
        let endpoint = match path {
            "/.well-known/oauth-authorization-server" => Endpoint::Metadata,
            p if p
                .strip_prefix("/.well-known/oauth-authorization-server")
                .is_some_and(|rest| rest == self.mcp_path) =>
            {
                Endpoint::Metadata
            }
            JWKS_PATH => Endpoint::Jwks,
            REGISTER_PATH => Endpoint::Register,
            AUTHORIZE_PATH if post => Endpoint::Consent,
            AUTHORIZE_PATH => Endpoint::Authorize,
            CALLBACK_PATH => Endpoint::Callback,
            TOKEN_PATH => Endpoint::Token,
            REVOKE_PATH => Endpoint::Revoke,
            _ => return None,
        };
        Some(endpoint)
    }

    /// Answers one request to `endpoint`; `body` is read (at most [`MAX_BODY_BYTES`]) when
    /// [`Endpoint::has_body`].
    pub(crate) async fn answer(
        &self,
        endpoint: Endpoint,
        parts: &Parts,
        body: Bytes,
    ) -> Response<Bytes> {
        let method = &parts.method;
        let get = matches!(*method, Method::GET | Method::HEAD);
        let post = *method == Method::POST;
        // A browser-based client (the inspector's web UI) asks before it registers or redeems.
        if *method == Method::OPTIONS
            && matches!(
                endpoint,
                Endpoint::Metadata
                    | Endpoint::Jwks
                    | Endpoint::Register
                    | Endpoint::Token
                    | Endpoint::Revoke
            )
        {
            return preflight();
        }
        let mut response = match endpoint {
            Endpoint::Metadata if get => public_json(&metadata::document(self)),
            Endpoint::Jwks if get => public_json(&self.keys.jwks()),
            Endpoint::Register if post => register::register(self, parts, &body).await,
            // GET only: a HEAD must not write a consent nor spend a login.
            Endpoint::Authorize if *method == Method::GET => {
                authorize::authorize(self, parts).await
            }
            Endpoint::Consent => authorize::consent(self, parts, &body).await,
            Endpoint::Callback if *method == Method::GET => authorize::callback(self, parts).await,
            Endpoint::Token if post => token::token(self, parts, &body).await,
            Endpoint::Revoke if post => token::revoke(self, parts, &body).await,
            Endpoint::Metadata | Endpoint::Jwks | Endpoint::Authorize | Endpoint::Callback => {
                not_allowed("GET")
            }
            Endpoint::Register | Endpoint::Token | Endpoint::Revoke => not_allowed("POST"),
        };
        if *method == Method::HEAD {
            *response.body_mut() = Bytes::new();
        }
        response
    }
}

/// The CORS preflight of the endpoints a browser-based client calls.
fn preflight() -> Response<Bytes> {
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(header::ACCESS_CONTROL_ALLOW_METHODS, "GET, POST, OPTIONS")
        .header(
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            "content-type, authorization, mcp-protocol-version",
        )
        .header(header::ACCESS_CONTROL_MAX_AGE, "3600")
        .body(Bytes::new())
        .expect("static parts are valid")
}

fn not_allowed(allow: &'static str) -> Response<Bytes> {
    Response::builder()
        .status(StatusCode::METHOD_NOT_ALLOWED)
        .header(header::ALLOW, allow)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(Bytes::from_static(b"Method Not Allowed\n"))
        .expect("static parts are valid")
}

/// A document anyone may read and cache for an hour (metadata, keys).
fn public_json(value: &Value) -> Response<Bytes> {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "public, max-age=3600")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Bytes::from(value.to_string()))
        .expect("static parts are valid")
}

/// A JSON answer never stored by anyone (RFC 6749 §5.1): tokens, registrations, errors.
fn private_json(status: StatusCode, value: &Value) -> Response<Bytes> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::PRAGMA, "no-cache")
        .header(header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .body(Bytes::from(value.to_string()))
        .expect("static parts are valid")
}

/// An RFC 6749 §5.2 error answer.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response<Bytes> {
    private_json(
        status,
        &json!({ "error": error, "error_description": description }),
    )
}

/// An HTML page: never cached, never framed, no script.
fn html(status: StatusCode, page: String) -> Response<Bytes> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/html; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::X_FRAME_OPTIONS, "DENY")
        .header(
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        )
        .header(header::REFERRER_POLICY, "no-referrer")
        .header("x-content-type-options", "nosniff")
        .body(Bytes::from(page))
        .expect("static parts are valid")
}

fn error_page(status: StatusCode, title: &str, explanation: &str) -> Response<Bytes> {
    html(status, page::error(title, explanation))
}

/// A `303 See Other` to `location`, which the caller validated (an error page should it not
/// make a header after all: never a panic on a client's input).
fn redirect(location: &str) -> Response<Bytes> {
    let Ok(value) = HeaderValue::from_str(location) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid redirect address",
            "The address to send you back to cannot be used.",
        );
    };
    Response::builder()
        .status(StatusCode::SEE_OTHER)
        .header(header::LOCATION, value)
        .header(header::CACHE_CONTROL, "no-store")
        .header(header::REFERRER_POLICY, "no-referrer")
        .body(Bytes::new())
        .expect("static parts are valid")
}

/// Form or query parameters; `Err` names a parameter given twice (RFC 6749 §3.1). One sent
/// with no value is as if not sent (RFC 6749 §3.1).
fn parameters(encoded: &[u8]) -> Result<HashMap<String, String>, String> {
    let mut found = HashMap::new();
    for (name, value) in form_urlencoded::parse(encoded) {
        if value.is_empty() {
            continue;
        }
        if found.insert(name.to_string(), value.to_string()).is_some() {
            return Err(format!("the parameter {name} is given more than once"));
        }
    }
    Ok(found)
}

/// A cookie's value from the request's `Cookie` headers.
fn cookie<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

impl AuthorizationServer {
    /// A cookie's name: `__Host-` prefixed when it can be `Secure`.
    fn cookie_name(&self, base: &str) -> String {
        if self.secure_cookies {
            format!("__Host-{base}")
        } else {
            base.to_string()
        }
    }

    /// `Set-Cookie` for `name=value`, HttpOnly, SameSite=Lax, for `max_age` seconds (0 clears).
    fn set_cookie(&self, base: &str, value: &str, max_age: u64) -> HeaderValue {
        let secure = if self.secure_cookies { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}",
            self.cookie_name(base)
        ))
        .expect("cookie values are base64url")
    }
}
