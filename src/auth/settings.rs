//! Auth settings: the `MCP_AUTH_*` variables.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_AUTH_ISSUER` | unset = auth off | the authorization server's issuer URL (`iss`) |
//! | `MCP_AUTH_AUDIENCE` | required with an issuer | this server's canonical URI (RFC 8707), e.g. `https://mcp.example.com/mcp` |
//! | `MCP_AUTH_JWKS_URL` | from the issuer's metadata | where the signing keys are |
//! | `MCP_AUTH_CA_FILE` | none: the web's public roots only | a PEM file of extra CA certificates trusted (besides the public roots) when fetching the issuer's metadata and keys, for a private issuer |
//! | `MCP_AUTH_SCOPES_SUPPORTED` | the scopes named in the maps | advertised in the metadata document |
//! | `MCP_AUTH_TOOL_SCOPES` | none | `tool=scope[ scope…],…`; `*` is every other tool, e.g. `checkout=basket:write,*=basket:read` |
//! | `MCP_AUTH_METHOD_SCOPES` | none | the same per JSON-RPC method, e.g. `resources/read=files:read` |
//! | `MCP_AUTH_DISCOVER_REQUIRES_TOKEN` | `false` | whether `server/discover` needs a token |
//! | `MCP_AUTH_LEEWAY_SECS` | `60` | clock skew allowed on `exp`/`nbf` |
//! | `MCP_AUTH_JWKS_MIN_REFRESH_SECS` | `60` | at most one JWKS refetch per interval on an unknown `kid` (counted from the last fetch that succeeded; after a failed one, the next waits 1 s) |
//! | `MCP_AUTH_MAX_TOKEN_BYTES` | `8192` | longer bearer tokens are refused unread |
//! | `MCP_AUTH_CLIENT_IDS` | any client | `client[,client…]`: a token whose `client_id` (or `azp`) is not listed is refused |
//! | `MCP_AUTH_INTROSPECTION_CLIENT_ID` | unset = opaque tokens refused | this server's client at the issuer, for RFC 7662 introspection of tokens that are not JWTs |
//! | `MCP_AUTH_INTROSPECTION_CLIENT_SECRET` | required with the client id | its secret (`client_secret_basic`), or the ARN of a Secrets Manager secret / SSM parameter holding it (read once at start-up by [`Config::load`](crate::Config::load); feature `aws-secrets`) |
//! | `MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER` | none | instead of the secret: the name of an SSM parameter (SecureString) holding it |
//! | `MCP_AUTH_INTROSPECTION_URL` | the issuer metadata's `introspection_endpoint` | where tokens are introspected |
//! | `MCP_AUTH_INTROSPECTION_CACHE_SECS` | `60` | how long an introspection answer is reused (never past the token's `exp`): the longest a revoked token keeps working |
//!
//! When the issuer is an Amazon Cognito user pool (`https://cognito-idp.<region>.amazonaws.com/<poolId>`)
//! its access tokens carry no `aud`: a token is this server's when one of its scopes belongs to
//! the pool's resource server whose identifier is `MCP_AUTH_AUDIENCE`
//! (`<MCP_AUTH_AUDIENCE>/<scope>`), and ID tokens are refused.

use std::{collections::BTreeMap, time::Duration};

use crate::env::{ConfigError, Env};

/// Scopes needed per name, with `*` for every name not listed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScopeMap {
    exact: BTreeMap<String, Vec<String>>,
    fallback: Vec<String>,
}

impl ScopeMap {
    /// Parses `name=scope[ scope…],…`.
    ///
    /// ```
    /// use mcp_lambda::auth::ScopeMap;
    /// let map = ScopeMap::parse("checkout=basket:write basket:read,*=basket:read").unwrap();
    /// assert_eq!(map.required("checkout"), ["basket:write", "basket:read"]);
    /// assert_eq!(map.required("view_basket"), ["basket:read"]);
    /// ```
    pub fn parse(value: &str) -> Result<Self, String> {
        let mut map = Self::default();
        for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, scopes) = entry
                .split_once('=')
                .ok_or_else(|| format!("entry {entry:?} has no '='"))?;
            let name = name.trim();
            let scopes: Vec<String> = scopes.split_whitespace().map(str::to_string).collect();
            if name.is_empty() || scopes.is_empty() {
                return Err(format!(
                    "entry {entry:?} needs a name and at least one scope"
                ));
            }
            if let Some(bad) = scopes.iter().find(|s| !is_scope_token(s)) {
                return Err(format!("{bad:?} is not a valid OAuth scope"));
            }
            if name == "*" {
                map.fallback = scopes;
            } else {
                map.exact.insert(name.to_string(), scopes);
            }
        }
        Ok(map)
    }

    /// The scopes `name` needs (empty: a valid token is enough).
    pub fn required(&self, name: &str) -> &[String] {
        self.exact.get(name).unwrap_or(&self.fallback)
    }

    /// Whether no scope is ever required.
    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.fallback.is_empty()
    }

    fn all(&self) -> impl Iterator<Item = &String> {
        self.exact.values().flatten().chain(&self.fallback)
    }
}

/// RFC 6749 scope-token: printable ASCII without space, `"` or `\`.
fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5B).contains(&b) || (0x5D..=0x7E).contains(&b))
}

/// OAuth resource-server settings. `None` in [`Config::auth`](crate::Config::auth) means auth is off.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthSettings {
    /// Expected `iss`, exactly as the issuer writes it.
    pub issuer: String,
    /// This server's canonical URI: the expected `aud` and the metadata `resource`.
    pub audience: String,
    /// The JWKS location; `None` = discover it from the issuer's metadata.
    pub jwks_url: Option<String>,
    /// Scopes advertised in the metadata document.
    pub scopes_supported: Vec<String>,
    /// Scopes per tool for `tools/call`.
    pub tool_scopes: ScopeMap,
    /// Scopes per JSON-RPC method.
    pub method_scopes: ScopeMap,
    /// Whether `server/discover` needs a token.
    pub discover_requires_token: bool,
    /// Allowed clock skew.
    pub leeway: Duration,
    /// Minimum interval between JWKS refetches triggered by unknown `kid`s.
    pub jwks_min_refresh: Duration,
    /// Largest bearer token read.
    pub max_token_bytes: usize,
    /// Extra CA certificates (DER) trusted for the issuer's metadata and keys, from
    /// `MCP_AUTH_CA_FILE`; the web's public roots are always trusted.
    pub extra_roots: Vec<Vec<u8>>,
    /// The OAuth clients whose tokens are accepted (`MCP_AUTH_CLIENT_IDS`); empty = any.
    pub client_ids: Vec<String>,
    /// RFC 7662 introspection of opaque tokens; `None` = only JWTs are accepted.
    pub introspection: Option<IntrospectionSettings>,
    /// The issuer's keys as a JWKS document, known at start-up: nothing is fetched. Set for the
    /// built-in authorization server (`MCP_OAUTH_UPSTREAM_ISSUER`), whose keys are this
    /// server's own.
    pub issuer_keys: Option<String>,
    /// Whose `sub` a token's subject is, when not the token's issuer: the identity provider
    /// people log in with behind the built-in authorization server. Owner keys name it, so a
    /// person keeps their handles across every client, and when the server moves between
    /// trusting that provider directly and the built-in authorization server.
    pub identity_issuer: Option<String>,
}

/// How tokens that are not JWTs are checked: RFC 7662 introspection at the issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IntrospectionSettings {
    /// The introspection endpoint; `None` = the issuer metadata's `introspection_endpoint`.
    pub url: Option<String>,
    /// This server's client id at the issuer.
    pub client_id: String,
    /// Its secret, sent with HTTP Basic (`client_secret_basic`).
    pub client_secret: ClientSecret,
    /// How long an answer is reused (never past the token's `exp`).
    pub cache_window: Duration,
}

/// The introspection client's secret: its value, or where in AWS it is kept until
/// [`Config::load`](crate::Config::load) fetches it. `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientSecret {
    /// The secret itself.
    Value(String),
    /// An SSM parameter's name or ARN (`WithDecryption`).
    Ssm(String),
    /// A Secrets Manager secret's ARN (its `AWSCURRENT` `SecretString`).
    SecretsManager(String),
}

impl std::fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(<redacted>)"),
            Self::Ssm(name) => f.debug_tuple("Ssm").field(name).finish(),
            Self::SecretsManager(arn) => f.debug_tuple("SecretsManager").field(arn).finish(),
        }
    }
}

const INTROSPECTION_SECRET: &str = "MCP_AUTH_INTROSPECTION_CLIENT_SECRET";
const INTROSPECTION_SECRET_SSM: &str = "MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER";

impl AuthSettings {
    /// The introspection secret still to fetch from AWS, as the error a configuration read
    /// without [`Config::load`](crate::Config::load) gives.
    pub(crate) fn pending_secret(&self) -> Option<ConfigError> {
        let introspection = self.introspection.as_ref()?;
        let (variable, value) = match &introspection.client_secret {
            ClientSecret::Value(_) => return None,
            ClientSecret::Ssm(name) => (INTROSPECTION_SECRET_SSM, name.clone()),
            ClientSecret::SecretsManager(arn) => (INTROSPECTION_SECRET, arn.clone()),
        };
        Some(ConfigError::new(
            variable,
            value,
            "names a secret kept in AWS, fetched at start-up: start with \
             `App::load().await` (or read it with `Config::load().await`) instead of \
             `Config::from_env()`",
        ))
    }

    /// The settings with the introspection secret fetched from SSM / Secrets Manager (one
    /// signed call, with the `MCP_AWS_*_TIMEOUT_MS` timeouts); no call when it is inline.
    pub(crate) async fn fetch_pending_secret(self, env: &Env<'_>) -> Result<Self, ConfigError> {
        let Some(error) = self.pending_secret() else {
            return Ok(self);
        };
        #[cfg(feature = "aws-secrets")]
        {
            use crate::aws::secrets::{SecretIn, read_text};
            let timeouts = crate::aws::AwsTimeouts::from_env(env)?;
            let mut settings = self;
            let introspection = settings.introspection.as_mut().expect("a pending secret");
            let place = match &introspection.client_secret {
                ClientSecret::Ssm(name) => SecretIn::Ssm(name),
                ClientSecret::SecretsManager(arn) => SecretIn::SecretsManager(arn),
                ClientSecret::Value(_) => unreachable!("pending"),
            };
            let text = read_text(place, &timeouts)
                .await
                .map_err(|reason| ConfigError::new(error.variable, error.value, reason))?;
            introspection.client_secret = ClientSecret::Value(text);
            Ok(settings)
        }
        #[cfg(not(feature = "aws-secrets"))]
        {
            let _ = env;
            Err(error)
        }
    }
}

/// The introspection variables; `Ok(None)` when no client id is set.
fn read_introspection(
    get: &impl Fn(&str) -> Option<String>,
) -> Result<Option<IntrospectionSettings>, (&'static str, String, String)> {
    let Some(client_id) = get("MCP_AUTH_INTROSPECTION_CLIENT_ID") else {
        for variable in [
            "MCP_AUTH_INTROSPECTION_URL",
            INTROSPECTION_SECRET,
            INTROSPECTION_SECRET_SSM,
        ] {
            if get(variable).is_some() {
                return Err((
                    variable,
                    String::new(),
                    "is set but MCP_AUTH_INTROSPECTION_CLIENT_ID is not: introspection needs \
                     this server's client id at the issuer"
                        .into(),
                ));
            }
        }
        return Ok(None);
    };
    let client_secret = match (get(INTROSPECTION_SECRET), get(INTROSPECTION_SECRET_SSM)) {
        (Some(_), Some(_)) => {
            return Err((
                INTROSPECTION_SECRET_SSM,
                String::new(),
                format!(
                    "set either {INTROSPECTION_SECRET} or {INTROSPECTION_SECRET_SSM}, not both"
                ),
            ));
        }
        (None, None) => {
            return Err((
                INTROSPECTION_SECRET,
                String::new(),
                "must be set with MCP_AUTH_INTROSPECTION_CLIENT_ID: the client's secret \
                 (client_secret_basic), a Secrets Manager secret ARN, or use \
                 MCP_AUTH_INTROSPECTION_CLIENT_SECRET_SSM_PARAMETER"
                    .into(),
            ));
        }
        (None, Some(name)) => ClientSecret::Ssm(name.trim().to_string()),
        (Some(value), None) => {
            let value = value.trim();
            if value.starts_with("arn:aws") && value.contains(":secretsmanager:") {
                ClientSecret::SecretsManager(value.to_string())
            } else if value.starts_with("arn:aws") && value.contains(":ssm:") {
                ClientSecret::Ssm(value.to_string())
            } else {
                ClientSecret::Value(value.to_string())
            }
        }
    };
    if !matches!(client_secret, ClientSecret::Value(_)) && !cfg!(feature = "aws-secrets") {
        return Err((
            INTROSPECTION_SECRET,
            "<redacted>".into(),
            "names a secret kept in AWS, but this build has no AWS secret loaders: enable the \
             `aws-secrets` feature of mcp-lambda, or give the secret itself"
                .into(),
        ));
    }
    let url = match get("MCP_AUTH_INTROSPECTION_URL") {
        Some(url) if is_http_url(url.trim()) => Some(url.trim().to_string()),
        Some(url) => {
            return Err((
                "MCP_AUTH_INTROSPECTION_URL",
                url,
                "expected an http(s) URL, e.g. https://auth.example.com/oauth2/introspect".into(),
            ));
        }
        None => None,
    };
    let cache_window = match get("MCP_AUTH_INTROSPECTION_CACHE_SECS") {
        None => Duration::from_secs(60),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(secs) if secs <= 3600 => Duration::from_secs(secs),
            _ => {
                return Err((
                    "MCP_AUTH_INTROSPECTION_CACHE_SECS",
                    v,
                    "expected whole seconds up to 3600, e.g. 60 (0 = introspect every request)"
                        .into(),
                ));
            }
        },
    };
    Ok(Some(IntrospectionSettings {
        url,
        client_id: client_id.trim().to_string(),
        client_secret,
        cache_window,
    }))
}

/// The certificates of the PEM file `path`, for `MCP_AUTH_CA_FILE`.
fn read_roots(path: &str) -> Result<Vec<Vec<u8>>, String> {
    use rustls_pki_types::{CertificateDer, pem::PemObject};
    let pem = std::fs::read(path).map_err(|e| format!("cannot read it ({e})"))?;
    let roots = CertificateDer::pem_slice_iter(&pem)
        .map(|cert| cert.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM file of certificates ({e})"))?;
    if roots.is_empty() {
        return Err("holds no CERTIFICATE block; expected the PEM of the CA that signed the issuer's certificate".into());
    }
    for root in &roots {
        let der = CertificateDer::from(root.as_slice());
        webpki::anchor_from_trusted_cert(&der)
            .map_err(|e| format!("a certificate in it is not a usable CA ({e:?})"))?;
    }
    Ok(roots)
}

impl AuthSettings {
    /// Reads the `MCP_AUTH_*` variables; `Ok(None)` when no issuer is set (auth off).
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        Self::read(&|name| env.get(name), None)
            .map_err(|(variable, value, reason)| ConfigError::new(variable, value, reason))
    }

    /// The settings of a resource server whose issuer is the built-in authorization server:
    /// `issuer`, its keys `jwks` (no fetch), its people's identities from `identity_issuer`;
    /// the rest of the `MCP_AUTH_*` variables as usual.
    pub(crate) fn for_builtin_issuer(
        env: &Env<'_>,
        issuer: String,
        jwks: String,
        identity_issuer: String,
    ) -> Result<Self, ConfigError> {
        let mut settings = Self::read(&|name| env.get(name), Some(issuer))
            .map_err(|(variable, value, reason)| ConfigError::new(variable, value, reason))?
            .expect("an issuer is given");
        settings.issuer_keys = Some(jwks);
        settings.identity_issuer = Some(identity_issuer);
        Ok(settings)
    }

    fn read(
        get: &impl Fn(&str) -> Option<String>,
        builtin_issuer: Option<String>,
    ) -> Result<Option<Self>, (&'static str, String, String)> {
        let Some(issuer) = builtin_issuer.or_else(|| get("MCP_AUTH_ISSUER")) else {
            return Ok(None);
        };
        let issuer = issuer.trim().to_string();
        if !is_http_url(&issuer) {
            return Err((
                "MCP_AUTH_ISSUER",
                issuer,
                "expected the issuer URL, e.g. https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC123 or https://example.auth0.com/".into(),
            ));
        }
        let audience = get("MCP_AUTH_AUDIENCE").ok_or((
            "MCP_AUTH_AUDIENCE",
            String::new(),
            "must be set with MCP_AUTH_ISSUER: this server's canonical URL, e.g. https://mcp.example.com/mcp (tokens must carry it in aud)".into(),
        ))?;
        let audience = canonical_uri(audience.trim()).ok_or((
            "MCP_AUTH_AUDIENCE",
            audience.clone(),
            "expected an absolute http(s) URL without fragment, e.g. https://mcp.example.com/mcp"
                .into(),
        ))?;
        let jwks_url = match get("MCP_AUTH_JWKS_URL") {
            Some(url) if is_http_url(url.trim()) => Some(url.trim().to_string()),
            Some(url) => {
                return Err((
                    "MCP_AUTH_JWKS_URL",
                    url,
                    "expected an http(s) URL, e.g. https://example.auth0.com/.well-known/jwks.json"
                        .into(),
                ));
            }
            None => None,
        };
        let scope_map = |variable: &'static str| {
            match get(variable) {
            None => Ok(ScopeMap::default()),
            Some(v) => ScopeMap::parse(&v).map_err(|why| {
                (
                    variable,
                    v.clone(),
                    format!("{why}; expected name=scope[ scope…],… with * for the rest, e.g. checkout=basket:write,*=basket:read"),
                )
            }),
        }
        };
        let tool_scopes = scope_map("MCP_AUTH_TOOL_SCOPES")?;
        let method_scopes = scope_map("MCP_AUTH_METHOD_SCOPES")?;
        let scopes_supported = match get("MCP_AUTH_SCOPES_SUPPORTED") {
            Some(v) => {
                let scopes: Vec<String> = v
                    .split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                if let Some(bad) = scopes.iter().find(|s| !is_scope_token(s)) {
                    return Err((
                        "MCP_AUTH_SCOPES_SUPPORTED",
                        v.clone(),
                        format!(
                            "{bad:?} is not a valid OAuth scope; expected space- or comma-separated scopes"
                        ),
                    ));
                }
                scopes
            }
            None => {
                let mut all: Vec<String> = tool_scopes
                    .all()
                    .chain(method_scopes.all())
                    .cloned()
                    .collect();
                all.sort();
                all.dedup();
                all
            }
        };
        let number = |variable: &'static str, default: u64, max: u64| match get(variable) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= max)
                .ok_or_else(|| {
                    (
                        variable,
                        v.clone(),
                        format!("expected a whole number up to {max}"),
                    )
                }),
        };
        let discover_requires_token = match get("MCP_AUTH_DISCOVER_REQUIRES_TOKEN")
            .as_deref()
            .map(str::trim)
        {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err((
                    "MCP_AUTH_DISCOVER_REQUIRES_TOKEN",
                    other.to_string(),
                    "expected true or false".into(),
                ));
            }
        };
        Ok(Some(Self {
            issuer,
            audience,
            jwks_url,
            scopes_supported,
            tool_scopes,
            method_scopes,
            discover_requires_token,
            leeway: Duration::from_secs(number("MCP_AUTH_LEEWAY_SECS", 60, 600)?),
            jwks_min_refresh: Duration::from_secs(number(
                "MCP_AUTH_JWKS_MIN_REFRESH_SECS",
                60,
                86_400,
            )?),
            max_token_bytes: number("MCP_AUTH_MAX_TOKEN_BYTES", 8192, 65_536)? as usize,
            extra_roots: match get("MCP_AUTH_CA_FILE") {
                None => Vec::new(),
                Some(path) => read_roots(path.trim())
                    .map_err(|why| ("MCP_AUTH_CA_FILE", path.clone(), why))?,
            },
            client_ids: get("MCP_AUTH_CLIENT_IDS")
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|c| !c.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            introspection: read_introspection(get)?,
            issuer_keys: None,
            identity_issuer: None,
        }))
    }

    /// Whether the issuer is an Amazon Cognito user pool, whose access tokens name their
    /// resource server in their scopes instead of `aud`.
    ///
    /// ```
    /// # let auth = |issuer: &str| mcp_lambda::Config::from_lookup(|n| match n {
    /// #     "MCP_AUTH_ISSUER" => Some(issuer.into()),
    /// #     "MCP_AUTH_AUDIENCE" => Some("https://mcp.example.com/mcp".into()),
    /// #     _ => None }).unwrap().auth.unwrap();
    /// assert!(auth("https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbC123").is_cognito());
    /// assert!(!auth("https://example.auth0.com/").is_cognito());
    /// ```
    pub fn is_cognito(&self) -> bool {
        is_cognito_user_pool(&self.issuer)
    }

    /// The prefix of this server's scopes in a Cognito user pool: `<audience>/`.
    pub(crate) fn cognito_scope_prefix(&self) -> String {
        format!("{}/", self.audience)
    }

    /// The scopes a request needs, from its method and (for `tools/call`) tool name.
    pub fn required_scopes(&self, method: &str, name: Option<&str>) -> Vec<String> {
        let mut scopes: Vec<String> = self.method_scopes.required(method).to_vec();
        if method == "tools/call"
            && let Some(tool) = name
        {
            scopes.extend(self.tool_scopes.required(tool).iter().cloned());
        }
        scopes.dedup();
        scopes
    }

    /// The RFC 9728 metadata URL with the resource path inserted, as clients try first.
    ///
    /// ```
    /// # let config = mcp_lambda::Config::from_lookup(|n| match n {
    /// #     "MCP_AUTH_ISSUER" => Some("https://auth.example.com".into()),
    /// #     "MCP_AUTH_AUDIENCE" => Some("https://MCP.example.com/mcp".into()),
    /// #     _ => None }).unwrap();
    /// let auth = config.auth.unwrap();
    /// assert_eq!(auth.audience, "https://mcp.example.com/mcp");
    /// assert_eq!(auth.metadata_url(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
    /// ```
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_origin(&self.audience);
        format!("{origin}/.well-known/oauth-protected-resource{path}")
    }
}

/// `https://cognito-idp.<region>.amazonaws.com/<region>_<id>`, as Cognito writes `iss`.
fn is_cognito_user_pool(issuer: &str) -> bool {
    let Some(rest) = issuer.strip_prefix("https://cognito-idp.") else {
        return false;
    };
    let Some((region, pool)) = rest.split_once(".amazonaws.com/") else {
        return false;
    };
    let region_ok = !region.is_empty()
        && region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    region_ok
        && pool
            .strip_prefix(region)
            .and_then(|id| id.strip_prefix('_'))
            .is_some_and(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn is_http_url(s: &str) -> bool {
    let scheme = s.split("://").next().unwrap_or("");
    (scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("http"))
        && s.split("://")
            .nth(1)
            .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
        && !s.contains(char::is_whitespace)
}

/// RFC 8707 canonical form: lowercase scheme and host, no fragment, no trailing slash.
pub(crate) fn canonical_uri(uri: &str) -> Option<String> {
    if !is_http_url(uri) || uri.contains('#') {
        return None;
    }
    let (scheme, rest) = uri.split_once("://")?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut canonical = format!(
        "{}://{}{}",
        scheme.to_ascii_lowercase(),
        authority.to_ascii_lowercase(),
        path
    );
    while canonical.ends_with('/') && canonical.len() > scheme.len() + 3 + authority.len() {
        canonical.pop();
    }
    Some(canonical)
}

fn split_origin(uri: &str) -> (&str, &str) {
    let after_scheme = uri.find("://").map_or(0, |i| i + 3);
    match uri[after_scheme..].find('/') {
        Some(i) => uri.split_at(after_scheme + i),
        None => (uri, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_uris_lowercase_scheme_and_host_and_drop_the_trailing_slash() {
        assert_eq!(
            canonical_uri("HTTPS://MCP.Example.com/Mcp/").unwrap(),
            "https://mcp.example.com/Mcp"
        );
        assert_eq!(
            canonical_uri("https://mcp.example.com").unwrap(),
            "https://mcp.example.com"
        );
        assert_eq!(canonical_uri("https://mcp.example.com/#x"), None);
        assert_eq!(canonical_uri("mcp.example.com"), None);
    }

    #[test]
    fn cognito_user_pools_are_recognised_by_their_issuer() {
        assert!(is_cognito_user_pool(
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC123"
        ));
        for other in [
            "https://cognito-idp.us-east-1.amazonaws.com/eu-west-1_AbC123",
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_",
            "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC123/",
            "http://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC123",
            "https://cognito-idp.us-east-1.amazonaws.com.evil.example/us-east-1_AbC123",
            "https://example.auth0.com/",
        ] {
            assert!(!is_cognito_user_pool(other), "{other}");
        }
    }

    fn read(vars: &[(&str, &str)]) -> Result<Option<AuthSettings>, (&'static str, String, String)> {
        AuthSettings::read(
            &|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            },
            None,
        )
    }

    #[test]
    fn introspection_needs_a_client_id_and_its_secret_once() {
        let base = [
            ("MCP_AUTH_ISSUER", "https://auth.example.com"),
            ("MCP_AUTH_AUDIENCE", "https://mcp.example.com/mcp"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut vars = base.to_vec();
            vars.extend_from_slice(extra);
            read(&vars)
        };
        assert_eq!(with(&[]).unwrap().unwrap().introspection, None);
        let err = with(&[("MCP_AUTH_INTROSPECTION_URL", "https://a/i")]).unwrap_err();
        assert_eq!(err.0, "MCP_AUTH_INTROSPECTION_URL");
        let err = with(&[("MCP_AUTH_INTROSPECTION_CLIENT_ID", "mcp")]).unwrap_err();
        assert_eq!(err.0, "MCP_AUTH_INTROSPECTION_CLIENT_SECRET");
        let on = with(&[
            ("MCP_AUTH_INTROSPECTION_CLIENT_ID", "mcp"),
            ("MCP_AUTH_INTROSPECTION_CLIENT_SECRET", "s3cret"),
        ])
        .unwrap()
        .unwrap()
        .introspection
        .unwrap();
        assert_eq!(on.cache_window, Duration::from_secs(60));
        assert!(
            !format!("{on:?}").contains("s3cret"),
            "Debug shows no secret"
        );
        let err = with(&[
            ("MCP_AUTH_INTROSPECTION_CLIENT_ID", "mcp"),
            ("MCP_AUTH_INTROSPECTION_CLIENT_SECRET", "s3cret"),
            ("MCP_AUTH_INTROSPECTION_CACHE_SECS", "86400"),
        ])
        .unwrap_err();
        assert_eq!(err.0, "MCP_AUTH_INTROSPECTION_CACHE_SECS");
    }

    #[test]
    fn client_ids_are_a_comma_separated_list() {
        let settings = read(&[
            ("MCP_AUTH_ISSUER", "https://auth.example.com"),
            ("MCP_AUTH_AUDIENCE", "https://mcp.example.com/mcp"),
            ("MCP_AUTH_CLIENT_IDS", " web, cli ,,"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(settings.client_ids, ["web", "cli"]);
    }

    #[test]
    fn scope_maps_refuse_malformed_entries() {
        assert!(ScopeMap::parse("checkout").is_err());
        assert!(ScopeMap::parse("checkout=").is_err());
        assert!(ScopeMap::parse("checkout=a\"b").is_err());
        assert!(ScopeMap::parse("").unwrap().is_empty());
    }
}
