//! JWS compact tokens verified with `ring`: RS256, PS256, ES256, EdDSA.
//!
//! Refused outright: `alg: none`, every HMAC algorithm (a public key must never
//! become an HMAC secret), an `alg` the key's `kty` cannot make, `crit`
//! headers, padded or otherwise non-canonical base64url.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use super::{AuthSettings, Principal, settings::canonical_uri};

/// Why a token was refused. Messages name the fix; none contains the token.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenError {
    /// Not three base64url parts of JSON.
    #[error("the token is not a JWS compact serialization (header.payload.signature, base64url)")]
    Malformed,
    /// Longer than `MCP_AUTH_MAX_TOKEN_BYTES`.
    #[error("the token is longer than {0} bytes")]
    TooLarge(usize),
    /// An algorithm this server does not accept.
    #[error("algorithm {0:?} is not accepted; sign with RS256, PS256, ES256 or EdDSA")]
    Algorithm(String),
    /// A `crit` header names extensions this server does not understand.
    #[error("the token has critical header extensions this server does not understand")]
    Critical,
    /// The built-in authorization server's tokens are RFC 9068 access tokens: `typ` `at+jwt`.
    #[error("the token is not an access token of this server (its typ is not at+jwt)")]
    NotAnAccessToken,
    /// No key in the JWKS matches `kid` and `alg`.
    #[error("no signing key of the issuer matches the token's kid and alg")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token signature is invalid")]
    Signature,
    /// `iss` is not the configured issuer.
    #[error("token issuer {found:?} is not the configured issuer {expected:?}")]
    Issuer {
        /// The token's `iss`.
        found: String,
        /// `MCP_AUTH_ISSUER`.
        expected: String,
    },
    /// `aud` does not name this server.
    #[error(
        "token audience does not include this server ({expected:?}); request the token with resource={expected}"
    )]
    Audience {
        /// `MCP_AUTH_AUDIENCE`.
        expected: String,
    },
    /// `exp` has passed.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// A required claim is missing or has the wrong type.
    #[error("the token has no valid {0:?} claim")]
    Claim(&'static str),
    /// A Cognito ID token: it says who signed in, not that this server may be called.
    #[error(
        "this is a Cognito ID token (token_use \"id\"); send the access token instead, with a scope of the resource server {audience}"
    )]
    IdToken {
        /// `MCP_AUTH_AUDIENCE`, the resource server's identifier.
        audience: String,
    },
    /// A Cognito access token that carries no scope of this server's resource server.
    #[error(
        "the Cognito access token has no scope of the resource server {audience}: in the user pool, create a resource server with the identifier {audience}, allow its scopes on the app client, and request one (scope={audience}/<scope>)"
    )]
    NoResourceScope {
        /// `MCP_AUTH_AUDIENCE`, the resource server's identifier.
        audience: String,
    },
    /// The token was issued to a client `MCP_AUTH_CLIENT_IDS` does not list.
    #[error(
        "the token was issued to client {found:?}, which is not one of this server's MCP_AUTH_CLIENT_IDS"
    )]
    Client {
        /// The token's `client_id` or `azp` (empty when it names none).
        found: String,
    },
    /// Introspection says the token is not active (expired, revoked, or never issued).
    #[error(
        "the authorization server says the token is not active (expired, revoked or unknown); get a new one"
    )]
    Inactive,
}

/// A verification key from the issuer's JWKS.
#[derive(Clone)]
pub(crate) struct Jwk {
    pub(crate) kid: Option<String>,
    key: KeyMaterial,
}

impl std::fmt::Debug for Jwk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.key {
            KeyMaterial::Rsa { .. } => "RSA",
            KeyMaterial::P256(_) => "EC P-256",
            KeyMaterial::Ed25519(_) => "OKP Ed25519",
        };
        f.debug_struct("Jwk")
            .field("kid", &self.kid)
            .field("kty", &kind)
            .finish()
    }
}

#[derive(Clone)]
enum KeyMaterial {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// Uncompressed SEC1 point.
    P256(Vec<u8>),
    Ed25519(Vec<u8>),
}

impl Jwk {
    /// Reads one JWK; `None` for keys this server cannot use (other types,
    /// encryption keys, malformed members) — they are skipped, not fatal.
    pub(crate) fn from_json(value: &Value) -> Option<Self> {
        let member = |name: &str| value.get(name).and_then(Value::as_str);
        let bytes = |name: &str| member(name).and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
        if member("use").is_some_and(|u| u != "sig") {
            return None;
        }
        let key = match (member("kty")?, member("crv")) {
            ("RSA", _) => {
                let n = bytes("n")?;
                // ring refuses moduli under 2048 bits at verification; refuse them here too.
                if n.len() < 256 {
                    return None;
                }
                KeyMaterial::Rsa { n, e: bytes("e")? }
            }
            ("EC", Some("P-256")) => {
                let (x, y) = (bytes("x")?, bytes("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return None;
                }
                let mut point = Vec::with_capacity(65);
                point.push(4);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                KeyMaterial::P256(point)
            }
            ("OKP", Some("Ed25519")) => {
                let x = bytes("x")?;
                if x.len() != 32 {
                    return None;
                }
                KeyMaterial::Ed25519(x)
            }
            _ => return None,
        };
        Some(Self {
            kid: member("kid").map(str::to_string),
            key,
        })
    }

    fn can_make(&self, alg: &str) -> bool {
        matches!(
            (&self.key, alg),
            (KeyMaterial::Rsa { .. }, "RS256" | "PS256")
                | (KeyMaterial::P256(_), "ES256")
                | (KeyMaterial::Ed25519(_), "EdDSA" | "Ed25519")
        )
    }

    fn verify(&self, alg: &str, message: &[u8], signature: &[u8]) -> bool {
        match &self.key {
            KeyMaterial::Rsa { n, e } => {
                let params = if alg == "PS256" {
                    &signature::RSA_PSS_2048_8192_SHA256
                } else {
                    &signature::RSA_PKCS1_2048_8192_SHA256
                };
                RsaPublicKeyComponents { n, e }
                    .verify(params, message, signature)
                    .is_ok()
            }
            KeyMaterial::P256(point) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, signature)
                    .is_ok()
            }
            KeyMaterial::Ed25519(x) => UnparsedPublicKey::new(&signature::ED25519, x)
                .verify(message, signature)
                .is_ok(),
        }
    }
}

/// A token split and decoded, not yet verified.
#[derive(Debug)]
pub(crate) struct Unverified<'a> {
    pub(crate) alg: String,
    pub(crate) kid: Option<String>,
    /// The header's `typ` (RFC 9068 access tokens: `at+jwt`).
    pub(crate) typ: Option<String>,
    signing_input: &'a str,
    payload: Vec<u8>,
    signature: Vec<u8>,
}

#[derive(Deserialize)]
struct Header {
    alg: Option<String>,
    kid: Option<String>,
    crit: Option<Value>,
    typ: Option<String>,
}

const ACCEPTED_ALGS: &[&str] = &["RS256", "PS256", "ES256", "EdDSA", "Ed25519"];

/// Whether `token` is written as a JWS (three base64url parts, the first a JSON object): the
/// tokens verified here. Anything else is opaque, for introspection.
pub(crate) fn looks_like_jws(token: &str) -> bool {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    URL_SAFE_NO_PAD
        .decode(header)
        .is_ok_and(|json| json.first() == Some(&b'{'))
}

/// Splits and decodes a token, refusing what no key could ever accept.
pub(crate) fn parse(token: &str, max_bytes: usize) -> Result<Unverified<'_>, TokenError> {
    if token.len() > max_bytes {
        return Err(TokenError::TooLarge(max_bytes));
    }
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(TokenError::Malformed);
    };
    let decode = |part: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| TokenError::Malformed)
    };
    let header: Header =
        serde_json::from_slice(&decode(header)?).map_err(|_| TokenError::Malformed)?;
    let alg = header.alg.ok_or(TokenError::Malformed)?;
    if !ACCEPTED_ALGS.contains(&alg.as_str()) {
        return Err(TokenError::Algorithm(alg.chars().take(16).collect()));
    }
    if header.crit.is_some() {
        return Err(TokenError::Critical);
    }
    let signing_input = &token[..token.len() - signature.len() - 1];
    Ok(Unverified {
        alg,
        kid: header.kid,
        typ: header.typ,
        signing_input,
        payload: decode(payload)?,
        signature: decode(signature)?,
    })
}

/// A verified token: who it names and the window in which it is valid.
#[derive(Debug, Clone)]
pub(crate) struct Verified {
    pub(crate) principal: Principal,
    /// `nbf` and `exp` in epoch seconds, leeway not yet applied.
    pub(crate) not_before: Option<f64>,
    pub(crate) expires: f64,
}

impl Verified {
    /// Whether the token is inside its validity window at `now`.
    pub(crate) fn valid_at(&self, now: f64, leeway: f64) -> bool {
        now <= self.expires + leeway && self.not_before.is_none_or(|nbf| now + leeway >= nbf)
    }
}

/// Picks the key by `kid` (or the only key able to make `alg` when the
/// token names none), verifies the signature and then the claims.
pub(crate) fn verify(
    token: &Unverified<'_>,
    keys: &[Jwk],
    settings: &AuthSettings,
) -> Result<Verified, TokenError> {
    let key = select_key(token, keys).ok_or(TokenError::UnknownKey)?;
    if !key.verify(&token.alg, token.signing_input.as_bytes(), &token.signature) {
        return Err(TokenError::Signature);
    }
    // RFC 9068 §4: where the keys are the built-in authorization server's own, only its access
    // tokens pass (nothing else is signed with them today; the check keeps it so).
    if settings.issuer_keys.is_some()
        && !token.typ.as_deref().is_some_and(|typ| {
            typ.eq_ignore_ascii_case("at+jwt") || typ.eq_ignore_ascii_case("application/at+jwt")
        })
    {
        return Err(TokenError::NotAnAccessToken);
    }
    let claims: serde_json::Map<String, Value> =
        serde_json::from_slice(&token.payload).map_err(|_| TokenError::Malformed)?;
    let principal = check_claims(&claims, settings, now_secs())?;
    Ok(Verified {
        principal,
        not_before: claims.get("nbf").and_then(Value::as_f64),
        expires: claims
            .get("exp")
            .and_then(Value::as_f64)
            .ok_or(TokenError::Claim("exp"))?,
    })
}

/// The claims of a token whose signature one of `keys` verifies; the claims are the caller's
/// to check (the built-in authorization server's check of an upstream ID token).
pub(crate) fn verified_claims(
    token: &Unverified<'_>,
    keys: &[Jwk],
) -> Result<serde_json::Map<String, Value>, TokenError> {
    let key = select_key(token, keys).ok_or(TokenError::UnknownKey)?;
    if !key.verify(&token.alg, token.signing_input.as_bytes(), &token.signature) {
        return Err(TokenError::Signature);
    }
    serde_json::from_slice(&token.payload).map_err(|_| TokenError::Malformed)
}

/// Whether some key could verify this token (else the JWKS may need a refresh).
pub(crate) fn has_key(token: &Unverified<'_>, keys: &[Jwk]) -> bool {
    select_key(token, keys).is_some()
}

fn select_key<'k>(token: &Unverified<'_>, keys: &'k [Jwk]) -> Option<&'k Jwk> {
    match &token.kid {
        Some(kid) => keys
            .iter()
            .find(|k| k.kid.as_deref() == Some(kid.as_str()) && k.can_make(&token.alg)),
        None => {
            let mut able = keys.iter().filter(|k| k.can_make(&token.alg));
            match (able.next(), able.next()) {
                (Some(only), None) => Some(only),
                _ => None,
            }
        }
    }
}

pub(crate) fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn check_claims(
    claims: &serde_json::Map<String, Value>,
    settings: &AuthSettings,
    now: f64,
) -> Result<Principal, TokenError> {
    let string = |name: &'static str| claims.get(name).and_then(Value::as_str);
    let issuer = string("iss").ok_or(TokenError::Claim("iss"))?;
    if issuer != settings.issuer {
        return Err(TokenError::Issuer {
            found: issuer.chars().take(200).collect(),
            expected: settings.issuer.clone(),
        });
    }
    let cognito = settings.is_cognito();
    if cognito {
        match string("token_use") {
            Some("access") => {}
            Some("id") => {
                return Err(TokenError::IdToken {
                    audience: settings.audience.clone(),
                });
            }
            _ => return Err(TokenError::Claim("token_use")),
        }
    }
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(scope)), _) => scope.split_whitespace().map(str::to_string).collect(),
        (None, Some(Value::Array(scp))) => scp
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        (None, Some(Value::String(scp))) => scp.split_whitespace().map(str::to_string).collect(),
        (None, None) => Vec::new(),
        _ => return Err(TokenError::Claim("scope")),
    };
    check_audience(claims.get("aud"), &scopes, settings)?;
    let leeway = settings.leeway.as_secs_f64();
    let exp = claims
        .get("exp")
        .and_then(Value::as_f64)
        .ok_or(TokenError::Claim("exp"))?;
    if now > exp + leeway {
        return Err(TokenError::Expired);
    }
    if let Some(nbf) = claims.get("nbf") {
        let nbf = nbf.as_f64().ok_or(TokenError::Claim("nbf"))?;
        if now + leeway < nbf {
            return Err(TokenError::NotYetValid);
        }
    }
    let subject = string("sub").ok_or(TokenError::Claim("sub"))?;
    // Okta names the client `cid`, Entra ID v1.0 tokens `appid`.
    let client_id = string("client_id")
        .or(string("azp"))
        .or(string("cid"))
        .or(string("appid"));
    check_client(client_id, settings)?;
    Ok(Principal {
        issuer: settings
            .identity_issuer
            .clone()
            .unwrap_or_else(|| issuer.to_string()),
        subject: subject.to_string(),
        scopes,
        client_id: client_id.map(str::to_string),
    })
}

/// Whether a token (its `aud`, or for a Cognito user pool its scopes) names this server.
///
/// Cognito access tokens carry no `aud`: the pool's resource server whose identifier is this
/// server's canonical URL writes its scopes as `<identifier>/<scope>`, which binds the token
/// to this server as `aud` would.
pub(crate) fn check_audience(
    aud: Option<&Value>,
    scopes: &[String],
    settings: &AuthSettings,
) -> Result<(), TokenError> {
    let ours = |aud: &str| canonical_uri(aud).as_deref() == Some(settings.audience.as_str());
    let named = match aud {
        Some(Value::String(aud)) => Some(ours(aud)),
        Some(Value::Array(auds)) => Some(auds.iter().filter_map(Value::as_str).any(ours)),
        None => None,
        Some(_) => return Err(TokenError::Claim("aud")),
    };
    if settings.is_cognito() {
        let prefix = settings.cognito_scope_prefix();
        if named == Some(true) || scopes.iter().any(|s| s.starts_with(&prefix)) {
            return Ok(());
        }
        return Err(TokenError::NoResourceScope {
            audience: settings.audience.clone(),
        });
    }
    match named {
        Some(true) => Ok(()),
        Some(false) => Err(TokenError::Audience {
            expected: settings.audience.clone(),
        }),
        None => Err(TokenError::Claim("aud")),
    }
}

/// Whether the token's client is one `MCP_AUTH_CLIENT_IDS` lists (any, when it lists none).
pub(crate) fn check_client(
    client_id: Option<&str>,
    settings: &AuthSettings,
) -> Result<(), TokenError> {
    if settings.client_ids.is_empty()
        || client_id.is_some_and(|id| settings.client_ids.iter().any(|c| c == id))
    {
        return Ok(());
    }
    Err(TokenError::Client {
        found: client_id.unwrap_or_default().chars().take(200).collect(),
    })
}
