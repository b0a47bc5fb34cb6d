//! The built-in authorization server's settings: the `MCP_OAUTH_*` variables.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_OAUTH_UPSTREAM_ISSUER` | unset = the built-in authorization server is off | the OpenID Connect provider people log in with (Cognito, Entra ID, Google, Auth0, Okta, Keycloak…), found by its discovery document |
//! | `MCP_OAUTH_UPSTREAM_CLIENT_ID` | required with the issuer | this server's client at the upstream (a confidential web client whose redirect URI is `<origin>/oauth/callback`) |
//! | `MCP_OAUTH_UPSTREAM_CLIENT_SECRET` | required with the issuer | its secret (`client_secret_basic`, or `client_secret_post` when that is all the upstream offers), or the ARN of a Secrets Manager secret or SSM parameter holding it (read once at start-up by [`Config::load`](crate::Config::load); feature `aws-secrets`) |
//! | `MCP_OAUTH_UPSTREAM_SCOPES` | `openid` | the scopes asked of the upstream (`openid` is always asked) |
//! | `MCP_AUTH_AUDIENCE` | required | this server's canonical URL, e.g. `https://mcp.example.com/mcp`: the `resource` every client must name, and (its origin) this authorization server's issuer |
//! | `MCP_OAUTH_SIGNING_KEYS` | a key made per process, **locally only** | ES256 private keys, PKCS#8 DER in base64url, comma-separated: the first signs, every one verifies (rotation: add the new key first, drop the old one once its tokens have expired); or the ARN of a Secrets Manager secret or SSM parameter holding them, read at start-up as the client secret is. On Lambda it is required |
//! | `MCP_OAUTH_CLIENTS` | none | pre-registered public clients, for clients where a user types a client id: `id=redirect-uri[ redirect-uri…];…` |
//! | `MCP_OAUTH_ACCESS_TOKEN_SECS` | `900` | an access token's lifetime (the longest a revoked grant's access token keeps working) |
//! | `MCP_OAUTH_REFRESH_TOKEN_DAYS` | `30` | a grant lives this long after its last refresh |
//! | `MCP_OAUTH_CLIENT_IDLE_DAYS` | `30` | a dynamically registered client expires when no one has logged in with it for this long |
//! | `MCP_OAUTH_UPSTREAM_TOKENS` | `false` | `true` keeps the provider's tokens with each grant, sealed (AES-256-GCM under a key derived from the signing key: the table alone reveals nothing), refreshed when expired, for tools that call the provider's API as the person ([`UpstreamToken`](crate::oauth::UpstreamToken)); never sent to the MCP client, never logged. Off, none are stored |
//! | `MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS` | `false` | `true` fetches client metadata documents from private, loopback and reserved addresses too, and `http` ones on loopback: **for tests and private deployments only** (it opens the SSRF fence, and on Lambda the Runtime API on 127.0.0.1) |
//! | `MCP_OAUTH_MAX_REGISTRATIONS_PER_HOUR` | `1000` | dynamic registrations accepted per hour (each expires unused: this bounds what strangers can store) |
//!
//! The issuer is the origin of `MCP_AUTH_AUDIENCE` (`https://mcp.example.com`): its RFC 8414
//! metadata is at `/.well-known/oauth-authorization-server`, and the resource server trusts its
//! tokens with no other `MCP_AUTH_*` setting (`MCP_AUTH_ISSUER` must then be unset).

use std::{fmt, time::Duration};

use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair},
};

use super::keys::SigningKeys;
use crate::env::{ConfigError, Env, Mode, Unit};

/// The built-in OAuth 2.1 authorization server: on when `MCP_OAUTH_UPSTREAM_ISSUER` is set.
#[derive(Clone)]
#[non_exhaustive]
pub struct OAuthSettings {
    /// This authorization server's issuer: the origin of the canonical resource.
    pub issuer: String,
    /// The canonical resource (`MCP_AUTH_AUDIENCE`): the only `resource` a client may name.
    pub resource: String,
    /// The identity provider people log in with.
    pub upstream: UpstreamSettings,
    /// Pre-registered public clients.
    pub clients: Vec<PreRegisteredClient>,
    /// An access token's lifetime.
    pub access_token_ttl: Duration,
    /// How long a grant lives after its last refresh.
    pub grant_ttl: Duration,
    /// How long an unused dynamically registered client lives.
    pub client_idle_ttl: Duration,
    /// Dynamic registrations accepted per hour.
    pub max_registrations_per_hour: u64,
    /// Client metadata documents may be fetched from private addresses, and over `http` on
    /// loopback (`MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS`).
    pub cimd_allow_private_networks: bool,
    /// The provider's tokens are kept for tools (`MCP_OAUTH_UPSTREAM_TOKENS`).
    pub keep_upstream_tokens: bool,
    pub(crate) keys: SigningKeys,
    /// Values still to fetch from AWS (`Config::load` fetches them).
    pub(crate) pending: Vec<Pending>,
}

/// A value kept in AWS: which variable, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    pub(crate) variable: &'static str,
    pub(crate) arn: String,
}

/// An ARN of a Secrets Manager secret or an SSM parameter.
fn aws_place(value: &str) -> Option<String> {
    let value = value.trim();
    (value.starts_with("arn:aws")
        && (value.contains(":secretsmanager:") || value.contains(":ssm:")))
    .then(|| value.to_string())
}

impl fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("upstream", &self.upstream)
            .field("clients", &self.clients)
            .field("access_token_ttl", &self.access_token_ttl)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// The OpenID Connect provider behind the built-in authorization server.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamSettings {
    /// Its issuer, exactly as its ID tokens write `iss`.
    pub issuer: String,
    /// This server's client id there.
    pub client_id: String,
    /// Its secret. `Debug` never shows it.
    pub client_secret: String,
    /// The scopes asked of it (always with `openid`).
    pub scopes: Vec<String>,
}

impl fmt::Debug for UpstreamSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"<redacted>")
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// A public client registered in configuration (`MCP_OAUTH_CLIENTS`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PreRegisteredClient {
    /// The id a user types into their MCP client.
    pub client_id: String,
    /// Its redirect URIs, matched exactly (a loopback `http` URI on any port).
    pub redirect_uris: Vec<String>,
}

pub(crate) const UPSTREAM_ISSUER: &str = "MCP_OAUTH_UPSTREAM_ISSUER";

impl OAuthSettings {
    /// Reads the `MCP_OAUTH_*` variables; `Ok(None)` when no upstream issuer is set.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Option<Self>, ConfigError> {
        let Some(upstream_issuer) = env.get(UPSTREAM_ISSUER) else {
            return Ok(None);
        };
        let upstream_issuer = upstream_issuer.trim().to_string();
        if !is_web_url(&upstream_issuer) {
            return Err(ConfigError::new(
                UPSTREAM_ISSUER,
                upstream_issuer,
                "expected the identity provider's issuer URL, e.g. https://cognito-idp.us-east-1.amazonaws.com/us-east-1_AbC123 or https://login.microsoftonline.com/<tenant>/v2.0",
            ));
        }
        if env.get("MCP_AUTH_ISSUER").is_some() {
            return Err(ConfigError::new(
                "MCP_AUTH_ISSUER",
                env.get("MCP_AUTH_ISSUER").unwrap_or_default(),
                "must be unset with MCP_OAUTH_UPSTREAM_ISSUER: the built-in authorization server is this server's issuer (name the identity provider in MCP_OAUTH_UPSTREAM_ISSUER only)",
            ));
        }
        for variable in [
            "MCP_AUTH_JWKS_URL",
            "MCP_AUTH_INTROSPECTION_CLIENT_ID",
            "MCP_AUTH_INTROSPECTION_URL",
        ] {
            if let Some(value) = env.get(variable) {
                return Err(ConfigError::new(
                    variable,
                    value,
                    format!(
                        "must be unset with {UPSTREAM_ISSUER}: the built-in authorization server's tokens are verified with its own keys, and no other issuer's are accepted"
                    ),
                ));
            }
        }
        let required = |name: &'static str, what: &str| {
            env.get(name).map(|v| v.trim().to_string()).ok_or_else(|| {
                ConfigError::new(
                    name,
                    String::new(),
                    format!("must be set with {UPSTREAM_ISSUER}: {what}"),
                )
            })
        };
        let client_id = required(
            "MCP_OAUTH_UPSTREAM_CLIENT_ID",
            "this server's client id at the identity provider",
        )?;
        let mut pending = Vec::new();
        let client_secret = env
            .get("MCP_OAUTH_UPSTREAM_CLIENT_SECRET")
            .ok_or_else(|| {
                ConfigError::redacted(
                    "MCP_OAUTH_UPSTREAM_CLIENT_SECRET",
                    format!("must be set with {UPSTREAM_ISSUER}: the client's secret at the identity provider"),
                )
            })?
            .trim()
            .to_string();
        let audience = required(
            "MCP_AUTH_AUDIENCE",
            "this server's canonical URL, e.g. https://mcp.example.com/mcp",
        )?;
        let resource = canonical_resource(&audience).ok_or_else(|| {
            ConfigError::new(
                "MCP_AUTH_AUDIENCE",
                audience.clone(),
                "expected an absolute http(s) URL without query or fragment, e.g. https://mcp.example.com/mcp",
            )
        })?;
        let issuer = origin_of(&resource).to_string();
        let mut scopes = vec!["openid".to_string()];
        if let Some(more) = env.get("MCP_OAUTH_UPSTREAM_SCOPES") {
            for scope in more.split([' ', ',']).filter(|s| !s.is_empty()) {
                if !scopes.iter().any(|s| s == scope) {
                    scopes.push(scope.to_string());
                }
            }
        }
        if let Some(arn) = aws_place(&client_secret) {
            pending.push(Pending {
                variable: "MCP_OAUTH_UPSTREAM_CLIENT_SECRET",
                arn,
            });
        }
        let keys = match env.get("MCP_OAUTH_SIGNING_KEYS") {
            Some(value) if aws_place(&value).is_some() => {
                pending.push(Pending {
                    variable: "MCP_OAUTH_SIGNING_KEYS",
                    arn: value.trim().to_string(),
                });
                // Replaced when the keys are fetched; never used before (a configuration with
                // a pending value is refused until then).
                SigningKeys::per_process()
            }
            Some(value) => SigningKeys::parse(&value).map_err(|why| {
                ConfigError::redacted(
                    "MCP_OAUTH_SIGNING_KEYS",
                    format!("{why}; expected ES256 private keys as base64url PKCS#8 DER, comma-separated (e.g. from `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 | openssl pkcs8 -topk8 -nocrypt -outform DER | basenc --base64url -w0`)"),
                )
            })?,
            None if env.mode() == Mode::Lambda => {
                return Err(ConfigError::redacted(
                    "MCP_OAUTH_SIGNING_KEYS",
                    "must be set on Lambda: every instance must sign with the same key, or one instance refuses the tokens another issued",
                ));
            }
            None => SigningKeys::per_process(),
        };
        let clients = match env.get("MCP_OAUTH_CLIENTS") {
            None => Vec::new(),
            Some(value) => parse_clients(&value)
                .map_err(|why| ConfigError::new("MCP_OAUTH_CLIENTS", value.clone(), why))?,
        };
        Ok(Some(Self {
            issuer,
            resource,
            upstream: UpstreamSettings {
                issuer: upstream_issuer,
                client_id,
                client_secret,
                scopes,
            },
            clients,
            access_token_ttl: env.duration(
                "MCP_OAUTH_ACCESS_TOKEN_SECS",
                Unit::Seconds,
                900,
                60..=86_400,
            )?,
            grant_ttl: Duration::from_secs(
                86_400
                    * env.number(
                        "MCP_OAUTH_REFRESH_TOKEN_DAYS",
                        30,
                        1..=365,
                        "whole days between 1 and 365, e.g. 30",
                    )?,
            ),
            client_idle_ttl: Duration::from_secs(
                86_400
                    * env.number(
                        "MCP_OAUTH_CLIENT_IDLE_DAYS",
                        30,
                        1..=365,
                        "whole days between 1 and 365, e.g. 30",
                    )?,
            ),
            max_registrations_per_hour: env.number(
                "MCP_OAUTH_MAX_REGISTRATIONS_PER_HOUR",
                1000,
                1..=1_000_000,
                "a whole number between 1 and 1000000, e.g. 1000",
            )?,
            cimd_allow_private_networks: env.flag("MCP_OAUTH_CIMD_ALLOW_PRIVATE_NETWORKS")?,
            keep_upstream_tokens: env.flag("MCP_OAUTH_UPSTREAM_TOKENS")?,
            keys,
            pending,
        }))
    }

    /// The first value still to fetch from AWS, as the error a configuration read without
    /// [`Config::load`](crate::Config::load) gives.
    pub(crate) fn pending_secret(&self) -> Option<ConfigError> {
        self.pending.first().map(|p| {
            ConfigError::new(
                p.variable,
                p.arn.clone(),
                "names a secret kept in AWS, fetched at start-up: start with `App::load().await` (or read it with `Config::load().await`) instead of `Config::from_env()`",
            )
        })
    }

    /// The settings with the values kept in AWS fetched (one signed call each, at once), the
    /// keys parsed as if they had been inline.
    pub(crate) async fn fetch_pending(self, env: &Env<'_>) -> Result<Self, ConfigError> {
        if self.pending.is_empty() {
            return Ok(self);
        }
        #[cfg(feature = "aws-secrets")]
        {
            use crate::aws::secrets::{SecretIn, read_text};
            let mut this = self;
            let timeouts = crate::aws::AwsTimeouts::from_env(env)?;
            let pending = std::mem::take(&mut this.pending);
            let texts = futures::future::join_all(pending.iter().map(|p| {
                let place = if p.arn.contains(":secretsmanager:") {
                    SecretIn::SecretsManager(&p.arn)
                } else {
                    SecretIn::Ssm(&p.arn)
                };
                read_text(place, &timeouts)
            }))
            .await;
            for (p, text) in pending.iter().zip(texts) {
                let text =
                    text.map_err(|reason| ConfigError::new(p.variable, p.arn.clone(), reason))?;
                match p.variable {
                    "MCP_OAUTH_SIGNING_KEYS" => {
                        this.keys = SigningKeys::parse(&text).map_err(|why| {
                            ConfigError::new(
                                p.variable,
                                p.arn.clone(),
                                format!("the secret's value is not usable: {why}; it must hold ES256 private keys as base64url PKCS#8 DER, comma-separated"),
                            )
                        })?;
                    }
                    _ => this.upstream.client_secret = text.trim().to_string(),
                }
            }
            Ok(this)
        }
        #[cfg(not(feature = "aws-secrets"))]
        {
            let _ = env;
            Err(self.pending_secret().expect("something is pending"))
        }
    }

    /// The public keys the resource server verifies this issuer's tokens with, as a JWKS.
    pub(crate) fn public_jwks(&self) -> String {
        self.keys.jwks().to_string()
    }

    /// Whether the keys were made by this process (locally, with no `MCP_OAUTH_SIGNING_KEYS`).
    pub(crate) fn keys_are_per_process(&self) -> bool {
        self.keys.per_process
    }
}

/// `id=uri[ uri…];…`.
fn parse_clients(value: &str) -> Result<Vec<PreRegisteredClient>, String> {
    let mut clients: Vec<PreRegisteredClient> = Vec::new();
    for entry in value.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, uris) = entry.split_once('=').ok_or_else(|| {
            format!("entry {entry:?} has no '='; expected id=redirect-uri[ redirect-uri…];…")
        })?;
        let id = id.trim();
        if id.is_empty()
            || id.len() > 200
            || !id.bytes().all(|b| b.is_ascii_graphic())
            || id.starts_with("https://")
            || id.starts_with("http://")
        {
            return Err(format!(
                "client id {id:?} must be 1 to 200 visible ASCII characters and not a URL (URL client ids are metadata documents)"
            ));
        }
        let redirect_uris: Vec<String> = uris.split_whitespace().map(str::to_string).collect();
        if redirect_uris.is_empty() {
            return Err(format!("client {id:?} names no redirect URI"));
        }
        for uri in &redirect_uris {
            super::redirect::check(uri, None)
                .map_err(|why| format!("client {id:?}: redirect URI {uri:?}: {why}"))?;
        }
        if clients.iter().any(|c| c.client_id == id) {
            return Err(format!("client {id:?} is listed twice"));
        }
        clients.push(PreRegisteredClient {
            client_id: id.to_string(),
            redirect_uris,
        });
    }
    Ok(clients)
}

fn is_web_url(s: &str) -> bool {
    url::Url::parse(s).is_ok_and(|u| {
        matches!(u.scheme(), "https" | "http")
            && u.host().is_some()
            && u.fragment().is_none()
            && u.username().is_empty()
    }) && !s.contains(char::is_whitespace)
}

/// The RFC 8707 canonical form: lowercase scheme and host, no query, fragment or trailing slash.
pub(crate) fn canonical_resource(uri: &str) -> Option<String> {
    let uri = uri.trim();
    if !is_web_url(uri) || uri.contains('?') {
        return None;
    }
    let parsed = url::Url::parse(uri).ok()?;
    let mut canonical = parsed.as_str().to_string();
    while canonical.ends_with('/') && parsed.path() != "/" {
        canonical.pop();
    }
    if parsed.path() == "/" {
        canonical.pop();
    }
    Some(canonical)
}

/// `https://host[:port]` of a canonical URL.
pub(crate) fn origin_of(canonical: &str) -> &str {
    let after_scheme = canonical.find("://").map_or(0, |i| i + 3);
    match canonical[after_scheme..].find('/') {
        Some(i) => &canonical[..after_scheme + i],
        None => canonical,
    }
}

/// A fresh ES256 key, for [`SigningKeys::per_process`].
pub(crate) fn generate_p256_pkcs8() -> Vec<u8> {
    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .expect("the system's random source works")
        .as_ref()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<OAuthSettings>, ConfigError> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        };
        OAuthSettings::from_env(&Env::new(&lookup))
    }

    const ON: &[(&str, &str)] = &[
        ("MCP_OAUTH_UPSTREAM_ISSUER", "https://idp.example.com"),
        ("MCP_OAUTH_UPSTREAM_CLIENT_ID", "facade"),
        ("MCP_OAUTH_UPSTREAM_CLIENT_SECRET", "s3cret"),
        ("MCP_AUTH_AUDIENCE", "https://MCP.example.com/mcp/"),
    ];

    #[test]
    fn off_unless_an_upstream_issuer_is_set() {
        assert!(read(&[]).unwrap().is_none());
    }

    #[test]
    fn the_issuer_is_the_origin_of_the_canonical_resource() {
        let settings = read(ON).unwrap().unwrap();
        assert_eq!(settings.resource, "https://mcp.example.com/mcp");
        assert_eq!(settings.issuer, "https://mcp.example.com");
        assert_eq!(settings.upstream.scopes, ["openid"]);
        assert!(settings.keys_are_per_process());
        assert!(!format!("{settings:?}").contains("s3cret"));
    }

    #[test]
    fn each_missing_or_conflicting_setting_is_named() {
        for (drop, variable) in [
            (
                "MCP_OAUTH_UPSTREAM_CLIENT_ID",
                "MCP_OAUTH_UPSTREAM_CLIENT_ID",
            ),
            (
                "MCP_OAUTH_UPSTREAM_CLIENT_SECRET",
                "MCP_OAUTH_UPSTREAM_CLIENT_SECRET",
            ),
            ("MCP_AUTH_AUDIENCE", "MCP_AUTH_AUDIENCE"),
        ] {
            let vars: Vec<_> = ON.iter().copied().filter(|(k, _)| *k != drop).collect();
            assert_eq!(read(&vars).unwrap_err().variable, variable);
        }
        let mut vars = ON.to_vec();
        vars.push(("MCP_AUTH_ISSUER", "https://other.example.com"));
        assert_eq!(read(&vars).unwrap_err().variable, "MCP_AUTH_ISSUER");
        for other in ["MCP_AUTH_JWKS_URL", "MCP_AUTH_INTROSPECTION_URL"] {
            let mut vars = ON.to_vec();
            vars.push((other, "https://other.example.com/x"));
            assert_eq!(read(&vars).unwrap_err().variable, other);
        }
        let mut vars = ON.to_vec();
        vars.push(("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"));
        let error = read(&vars).unwrap_err();
        assert_eq!(error.variable, "MCP_OAUTH_SIGNING_KEYS");
        let mut vars = ON.to_vec();
        vars.push(("MCP_OAUTH_SIGNING_KEYS", "not-a-key"));
        let error = read(&vars).unwrap_err();
        assert_eq!(error.variable, "MCP_OAUTH_SIGNING_KEYS");
        assert!(!error.to_string().contains("not-a-key"));
    }

    #[test]
    fn secrets_kept_in_aws_are_pending_until_fetched() {
        let mut vars: Vec<_> = ON
            .iter()
            .copied()
            .filter(|(k, _)| *k != "MCP_OAUTH_UPSTREAM_CLIENT_SECRET")
            .collect();
        vars.push((
            "MCP_OAUTH_UPSTREAM_CLIENT_SECRET",
            "arn:aws:secretsmanager:us-east-1:123456789012:secret:facade-AbCdEf",
        ));
        vars.push((
            "MCP_OAUTH_SIGNING_KEYS",
            "arn:aws:ssm:us-east-1:123456789012:parameter/mcp/signing-keys",
        ));
        let settings = read(&vars).unwrap().unwrap();
        assert_eq!(settings.pending.len(), 2);
        assert_eq!(
            settings.pending_secret().unwrap().variable,
            "MCP_OAUTH_UPSTREAM_CLIENT_SECRET"
        );
    }

    #[test]
    fn pre_registered_clients_are_read_and_checked() {
        let mut vars = ON.to_vec();
        vars.push((
            "MCP_OAUTH_CLIENTS",
            "desk=http://127.0.0.1/callback https://app.example.com/cb; cli=cursor://anysphere.cursor-mcp/oauth/callback",
        ));
        let settings = read(&vars).unwrap().unwrap();
        assert_eq!(settings.clients.len(), 2);
        assert_eq!(settings.clients[0].redirect_uris.len(), 2);
        for bad in [
            "x=javascript:alert(1)",
            "x=https://app.example.com/cb#frag",
            "x=http://app.example.com/cb",
            "x=",
            "https://a.example.com/doc=https://a.example.com/cb",
        ] {
            let mut vars = ON.to_vec();
            vars.push(("MCP_OAUTH_CLIENTS", bad));
            assert_eq!(
                read(&vars).unwrap_err().variable,
                "MCP_OAUTH_CLIENTS",
                "{bad}"
            );
        }
    }
}
