//! The shared key that seals MRTR `requestState` and signs list cursors across instances.
//!
//! `requestState` comes back from the client, so it is attacker-controlled:
//! it is sealed (HMAC) with rmcp's [`RequestStateCodec`]. Every Lambda
//! instance must use the same key, so it is configured, never generated per
//! instance outside local mode. Keys are named by a fingerprint of their bytes:
//! every instance derives the same key id without extra configuration, and
//! rotation only means moving the old key to `MCP_REQUEST_STATE_KEY_PREVIOUS`.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `MCP_REQUEST_STATE_KEY` | random in local mode | base64 key, ≥ 32 bytes; or the ARN of a Secrets Manager secret / SSM parameter holding it (read once at start-up by [`Config::load`](crate::Config::load); feature `aws-secrets`) |
//! | `MCP_REQUEST_STATE_KEY_SSM_PARAMETER` | none | instead of `MCP_REQUEST_STATE_KEY`: the name of an SSM parameter (SecureString) holding the base64 key |
//! | `MCP_REQUEST_STATE_KEY_PREVIOUS` | none | an older key (base64 or ARN) still accepted for verification during rotation; a Secrets Manager key's `AWSPREVIOUS` version is accepted too |

pub(crate) mod cursor;
#[cfg(feature = "aws-secrets")]
mod from_aws;

use base64::Engine as _;
use ring::digest;
use rmcp::model::RequestStateCodec;

use crate::env::{ConfigError, Env, Mode, parse_arn};

const KEY: &str = "MCP_REQUEST_STATE_KEY";
const SSM: &str = "MCP_REQUEST_STATE_KEY_SSM_PARAMETER";
const PREVIOUS: &str = "MCP_REQUEST_STATE_KEY_PREVIOUS";

/// The key(s) that seal MRTR `requestState` and sign list cursors.
///
/// The first key signs; every key verifies, so a key can be rotated by moving
/// it to `MCP_REQUEST_STATE_KEY_PREVIOUS`. `Debug` never shows key bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct RequestStateKeys {
    keys: Vec<Vec<u8>>,
    generated: bool,
    /// Keys still to fetch from AWS ([`Config::load`](crate::Config::load)); `keys` is a
    /// placeholder meanwhile.
    pending: Vec<KeySource>,
}

/// Where one request-state key comes from, when it is not given inline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeySource {
    /// Bytes given in the environment.
    Inline(Vec<u8>),
    /// An SSM parameter (name or ARN), read with decryption.
    Ssm {
        variable: &'static str,
        name: String,
    },
    /// A Secrets Manager secret (ARN or name) at a version stage; an `optional` stage that does
    /// not exist is skipped (`AWSPREVIOUS` before the first rotation).
    SecretsManager {
        variable: &'static str,
        id: String,
        stage: &'static str,
        optional: bool,
    },
}

impl std::fmt::Debug for RequestStateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStateKeys")
            .field("keys", &self.keys.len())
            .field("generated", &self.generated)
            .finish()
    }
}

impl RequestStateKeys {
    /// Minimum key length in bytes.
    pub const MIN_LEN: usize = 32;

    /// Keys from raw bytes; the first one signs.
    ///
    /// ```
    /// let keys = mcp_lambda::request_state::RequestStateKeys::new(vec![vec![7u8; 32]]).unwrap();
    /// assert_eq!(keys.signing().len(), 32);
    /// ```
    pub fn new(keys: Vec<Vec<u8>>) -> Result<Self, &'static str> {
        if keys.is_empty() {
            return Err("at least one key is needed");
        }
        if keys.iter().any(|k| k.len() < Self::MIN_LEN) {
            return Err("a key must be at least 32 bytes");
        }
        Ok(Self {
            keys,
            generated: false,
            pending: Vec::new(),
        })
    }

    /// A fresh random key (local mode only: other instances cannot verify it).
    pub fn generate() -> Self {
        use ring::rand::SecureRandom as _;
        let mut key = vec![0u8; Self::MIN_LEN];
        ring::rand::SystemRandom::new()
            .fill(&mut key)
            .expect("the operating system's random source failed");
        Self {
            keys: vec![key],
            generated: true,
            pending: Vec::new(),
        }
    }

    /// The key that signs new state.
    pub fn signing(&self) -> &[u8] {
        &self.keys[0]
    }

    /// Every key accepted for verification, signing key first.
    pub fn all(&self) -> &[Vec<u8>] {
        &self.keys
    }

    /// Whether the key was generated at start-up rather than configured.
    pub fn is_generated(&self) -> bool {
        self.generated
    }

    /// The variable and value of the first key still to fetch, if any: a configuration read
    /// without [`Config::load`](crate::Config::load) cannot use it.
    pub(crate) fn first_pending(&self) -> Option<ConfigError> {
        let (variable, value) = match self.pending.first()? {
            KeySource::Ssm { variable, name } => (*variable, name.clone()),
            KeySource::SecretsManager { variable, id, .. } => (*variable, id.clone()),
            KeySource::Inline(_) => unreachable!("inline keys are never pending"),
        };
        Some(ConfigError::new(
            variable,
            value,
            "names a key kept in AWS, fetched at start-up: start with \
             `App::load().await` (or read it with `Config::load().await`) instead of \
             `Config::from_env()`",
        ))
    }

    /// Fetches the keys still pending from SSM / Secrets Manager (one signed call each), with
    /// the `MCP_AWS_*_TIMEOUT_MS` timeouts. Without pending keys this makes no call.
    pub(crate) async fn fetch_pending(self, env: &Env<'_>) -> Result<Self, ConfigError> {
        if self.pending.is_empty() {
            return Ok(self);
        }
        #[cfg(feature = "aws-secrets")]
        {
            let timeouts = crate::aws::AwsTimeouts::from_env(env)?;
            from_aws::fetch(&self.pending, &timeouts).await
        }
        #[cfg(not(feature = "aws-secrets"))]
        {
            let _ = env;
            Err(self.first_pending().expect("pending is not empty"))
        }
    }

    /// Reads `MCP_REQUEST_STATE_KEY[_SSM_PARAMETER]` and `MCP_REQUEST_STATE_KEY_PREVIOUS`:
    /// inline keys, or keys to fetch from AWS at start-up. On Lambda a key is required.
    pub(crate) fn from_env(env: &Env<'_>) -> Result<Self, ConfigError> {
        let current = match (env.get(KEY), env.get(SSM)) {
            (Some(_), Some(name)) => {
                return Err(ConfigError::new(
                    SSM,
                    name,
                    format!("set either {KEY} or {SSM}, not both"),
                ));
            }
            (Some(value), None) => key_source(KEY, &value)?,
            (None, Some(name)) => ssm_parameter(&name)?,
            (None, None) => {
                if env.get(PREVIOUS).is_some() {
                    return Err(ConfigError::redacted(
                        PREVIOUS,
                        format!("only verifies alongside a current key: set {KEY} too"),
                    ));
                }
                if env.mode() == Mode::Lambda {
                    return Err(ConfigError::new(
                        KEY,
                        "",
                        "must be set on Lambda so every instance seals and opens requestState \
                         and cursors with the same key: a base64 key (`openssl rand -base64 32`), \
                         a Secrets Manager secret ARN, or use MCP_REQUEST_STATE_KEY_SSM_PARAMETER",
                    ));
                }
                return Ok(Self::generate());
            }
        };
        let mut sources = vec![current.clone()];
        if let KeySource::SecretsManager { variable, id, .. } = &current {
            // The standard rotation flow: AWSPREVIOUS still verifies after a rotation.
            sources.push(KeySource::SecretsManager {
                variable,
                id: id.clone(),
                stage: "AWSPREVIOUS",
                optional: true,
            });
        }
        if let Some(previous) = env.get(PREVIOUS) {
            sources.push(key_source(PREVIOUS, &previous)?);
        }
        if sources.iter().all(|s| matches!(s, KeySource::Inline(_))) {
            let keys = sources
                .into_iter()
                .filter_map(|s| match s {
                    KeySource::Inline(key) => Some(key),
                    _ => None,
                })
                .collect();
            return Ok(Self::new(keys).expect("lengths checked when decoded"));
        }
        if !cfg!(feature = "aws-secrets") {
            let variable = match &current {
                KeySource::Ssm { variable, .. } | KeySource::SecretsManager { variable, .. } => {
                    variable
                }
                KeySource::Inline(_) => &PREVIOUS,
            };
            return Err(ConfigError::redacted(
                variable,
                "names a key kept in AWS, but this build has no AWS key loaders: enable the \
                 `aws-secrets` feature of mcp-lambda, or give the key inline as base64",
            ));
        }
        let mut keys = Self::generate();
        keys.generated = false;
        keys.pending = sources;
        Ok(keys)
    }
}

/// `MCP_REQUEST_STATE_KEY_SSM_PARAMETER`: a parameter name or ARN.
fn ssm_parameter(name: &str) -> Result<KeySource, ConfigError> {
    let name = name.trim();
    let valid = if name.starts_with("arn:") {
        parse_arn(name).is_some_and(|(service, _)| service == "ssm")
    } else {
        !name.is_empty()
            && name.len() <= 2048
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-/".contains(&b))
    };
    if !valid {
        return Err(ConfigError::new(
            SSM,
            name,
            "expected an SSM parameter name or ARN, e.g. /mcp/request-state-key",
        ));
    }
    Ok(KeySource::Ssm {
        variable: SSM,
        name: name.into(),
    })
}

/// A key given as base64, or as the ARN of a Secrets Manager secret or SSM parameter.
fn key_source(variable: &'static str, value: &str) -> Result<KeySource, ConfigError> {
    let value = value.trim();
    if value.starts_with("arn:") {
        return match parse_arn(value) {
            Some(("secretsmanager", resource)) if resource.starts_with("secret:") => {
                Ok(KeySource::SecretsManager {
                    variable,
                    id: value.into(),
                    stage: "AWSCURRENT",
                    optional: false,
                })
            }
            Some(("ssm", resource)) if resource.starts_with("parameter/") => Ok(KeySource::Ssm {
                variable,
                name: value.into(),
            }),
            _ => Err(ConfigError::new(
                variable,
                value,
                "expected a Secrets Manager secret ARN \
                 (arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME) or an SSM parameter ARN \
                 (arn:aws:ssm:REGION:ACCOUNT:parameter/NAME)",
            )),
        };
    }
    decode_key(value).map(KeySource::Inline).ok_or_else(|| {
        ConfigError::redacted(
            variable,
            "expected standard base64 of at least 32 bytes, e.g. the output of `openssl rand \
             -base64 32`, or the ARN of a Secrets Manager secret or SSM parameter holding it",
        )
    })
}

/// Standard base64 of at least [`RequestStateKeys::MIN_LEN`] bytes.
pub(crate) fn decode_key(value: &str) -> Option<Vec<u8>> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(value.trim())
        .ok()?;
    (key.len() >= RequestStateKeys::MIN_LEN).then_some(key)
}

/// A codec that seals with the signing key and opens with every configured key.
///
/// ```
/// use mcp_lambda::request_state::RequestStateKeys;
/// let old = RequestStateKeys::new(vec![vec![1u8; 32]]).unwrap();
/// let rotated = RequestStateKeys::new(vec![vec![2u8; 32], vec![1u8; 32]]).unwrap();
/// let sealed = mcp_lambda::request_state::codec(&old).seal(b"step-2");
/// assert_eq!(mcp_lambda::request_state::codec(&rotated).open(&sealed).unwrap(), b"step-2");
/// ```
pub fn codec(keys: &RequestStateKeys) -> RequestStateCodec {
    let mut ring: Vec<(String, Vec<u8>)> = Vec::new();
    for key in keys.all() {
        let id = key_id(key);
        // The same key configured twice (current = previous) is one entry.
        if !ring.iter().any(|(existing, _)| *existing == id) {
            ring.push((id, key.clone()));
        }
    }
    RequestStateCodec::new_with_keyring(key_id(keys.signing()), ring)
        .expect("keys are validated at configuration time")
}

/// A stable, non-secret name for a key: the first 8 bytes of its SHA-256, hex.
pub(crate) fn key_id(key: &[u8]) -> String {
    let digest = digest::digest(&digest::SHA256, key);
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(vars: &[(&'static str, String)]) -> Result<RequestStateKeys, ConfigError> {
        let lookup = |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.clone())
        };
        RequestStateKeys::from_env(&Env::new(&lookup))
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn request_state_key_is_never_echoed_in_errors() {
        let err = keys(&[(KEY, "c2VjcmV0LXZhbHVl".into())]).unwrap_err();
        assert_eq!(err.variable, KEY);
        assert!(err.to_string().contains("at least 32 bytes"), "{err}");
        assert!(!err.to_string().contains("c2VjcmV0LXZhbHVl"));
    }

    #[test]
    fn lambda_mode_requires_a_shared_request_state_key() {
        let lambda = ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001".to_string());
        assert_eq!(
            keys(std::slice::from_ref(&lambda)).unwrap_err().variable,
            KEY
        );
        let k = keys(&[lambda, (KEY, b64(&[1u8; 32]))]).unwrap();
        assert!(!k.is_generated());
        assert!(keys(&[]).unwrap().is_generated());
    }

    #[cfg(feature = "aws-secrets")]
    #[test]
    fn request_state_keys_in_aws_are_fetched_in_keyring_order() {
        let arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mcp-key-AbCdEf";
        let k = keys(&[
            ("AWS_LAMBDA_RUNTIME_API", "x".into()),
            (KEY, arn.into()),
            (
                PREVIOUS,
                "arn:aws:ssm:eu-west-1:123456789012:parameter/mcp/old".into(),
            ),
        ])
        .unwrap();
        assert!(!k.is_generated());
        assert_eq!(k.first_pending().unwrap().variable, KEY);
        let stages: Vec<_> = k
            .pending
            .iter()
            .map(|s| match s {
                KeySource::SecretsManager {
                    stage, optional, ..
                } => format!("sm:{stage}:{optional}"),
                KeySource::Ssm { name, .. } => format!("ssm:{name}"),
                KeySource::Inline(_) => "inline".into(),
            })
            .collect();
        assert_eq!(
            stages,
            [
                "sm:AWSCURRENT:false",
                "sm:AWSPREVIOUS:true",
                "ssm:arn:aws:ssm:eu-west-1:123456789012:parameter/mcp/old"
            ]
        );
        // The Lambda requirement is met by a key in AWS too.
        let k = keys(&[("AWS_LAMBDA_RUNTIME_API", "x".into()), (SSM, "/k".into())]).unwrap();
        assert_eq!(k.pending.len(), 1);
    }

    #[cfg(not(feature = "aws-secrets"))]
    #[test]
    fn keys_in_aws_need_the_aws_secrets_feature() {
        let err = keys(&[(SSM, "/mcp/key".into())]).unwrap_err();
        assert_eq!(err.variable, SSM);
        assert!(err.to_string().contains("aws-secrets"), "{err}");
    }

    #[test]
    fn request_state_key_sources_are_checked_and_named() {
        let key = b64(&[1u8; 32]);
        let both = keys(&[(KEY, key.clone()), (SSM, "/mcp/key".into())]).unwrap_err();
        assert_eq!(both.variable, SSM);
        assert!(both.to_string().contains("not both"), "{both}");

        let lonely = keys(&[(PREVIOUS, key.clone())]).unwrap_err();
        assert_eq!(lonely.variable, PREVIOUS);
        assert!(!lonely.to_string().contains(&key));

        for bad in [
            "arn:aws:s3:::bucket",
            "arn:aws:secretsmanager:eu-west-1:1:other:x",
        ] {
            let err = keys(&[(KEY, bad.into())]).unwrap_err();
            assert_eq!(err.variable, KEY);
            assert!(
                err.to_string().contains("Secrets Manager secret ARN"),
                "{err}"
            );
        }
        let err = keys(&[(SSM, "no spaces please".into())]).unwrap_err();
        assert_eq!(err.variable, SSM);
    }
}
