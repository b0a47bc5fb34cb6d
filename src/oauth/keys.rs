//! The keys access tokens are signed with (ES256), and the secrets this server makes: random
//! values, their hashes (what the store keeps of a code, a refresh token or a state), and the
//! AES-GCM sealing of what a code carries to the token endpoint.

use std::{fmt, sync::Arc};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    aead, digest, hkdf,
    rand::{SecureRandom as _, SystemRandom},
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _},
};
use serde_json::{Value, json};

/// One ES256 key: its `kid` (the RFC 7638 thumbprint) and the pair.
struct SigningKey {
    kid: String,
    pair: EcdsaKeyPair,
    public: Value,
    /// The private key, base64url: what secrets sealed by this server are derived from.
    secret: String,
}

/// The configured keys: the first signs, all verify.
#[derive(Clone)]
pub(crate) struct SigningKeys {
    keys: Arc<Vec<SigningKey>>,
    /// Made by this process (local, no `MCP_OAUTH_SIGNING_KEYS`).
    pub(crate) per_process: bool,
}

impl fmt::Debug for SigningKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|k| k.kid.as_str()).collect();
        f.debug_struct("SigningKeys")
            .field("kids", &kids)
            .field("per_process", &self.per_process)
            .finish()
    }
}

impl SigningKeys {
    /// Comma-separated base64url (or standard base64) PKCS#8 DER P-256 keys.
    pub(crate) fn parse(value: &str) -> Result<Self, String> {
        let mut keys = Vec::new();
        for (i, entry) in value
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .enumerate()
        {
            let der = URL_SAFE_NO_PAD
                .decode(entry.trim_end_matches('='))
                .or_else(|_| base64::engine::general_purpose::STANDARD.decode(entry))
                .map_err(|_| format!("key {} is not base64", i + 1))?;
            keys.push(
                SigningKey::from_pkcs8(&der)
                    .map_err(|_| format!("key {} is not a P-256 PKCS#8 private key", i + 1))?,
            );
        }
        if keys.is_empty() {
            return Err("no key".into());
        }
        Ok(Self {
            keys: Arc::new(keys),
            per_process: false,
        })
    }

    /// One key made now: tokens this process signs are refused by every other instance.
    pub(crate) fn per_process() -> Self {
        let der = super::settings::generate_p256_pkcs8();
        Self {
            keys: Arc::new(vec![
                SigningKey::from_pkcs8(&der).expect("a key ring just made parses"),
            ]),
            per_process: true,
        }
    }

    /// The public keys as a JWKS document.
    pub(crate) fn jwks(&self) -> Value {
        json!({ "keys": self.keys.iter().map(|k| k.public.clone()).collect::<Vec<_>>() })
    }

    /// The secrets values this server keeps sealed are sealed under: the first seals, every
    /// one opens (a key rotation leaves what the old key sealed readable while it is listed).
    pub(crate) fn sealing_secrets(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.secret.as_str())
    }

    /// A compact JWS of `claims` with header `typ` (`at+jwt`), signed by the first key.
    pub(crate) fn sign(&self, typ: &str, claims: &Value) -> String {
        let key = &self.keys[0];
        let header = json!({ "alg": "ES256", "typ": typ, "kid": key.kid });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = key
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .expect("ECDSA signing with the system's random source works");
        format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        )
    }
}

impl SigningKey {
    fn from_pkcs8(der: &[u8]) -> Result<Self, ring::error::KeyRejected> {
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &SystemRandom::new())?;
        // An uncompressed SEC1 point: 0x04 || x || y.
        let point = pair.public_key().as_ref();
        let (x, y) = (
            URL_SAFE_NO_PAD.encode(&point[1..33]),
            URL_SAFE_NO_PAD.encode(&point[33..65]),
        );
        // RFC 7638: the thumbprint of the required members in lexicographic order.
        let thumbprint = digest::digest(
            &digest::SHA256,
            format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#).as_bytes(),
        );
        let kid = URL_SAFE_NO_PAD.encode(thumbprint.as_ref());
        let public = json!({
            "kty": "EC", "crv": "P-256", "x": x, "y": y,
            "use": "sig", "alg": "ES256", "kid": kid,
        });
        Ok(Self {
            kid,
            pair,
            public,
            secret: URL_SAFE_NO_PAD.encode(der),
        })
    }
}

/// `bytes` random bytes, base64url: ids, codes, token secrets, states, nonces, verifiers.
pub(crate) fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    SystemRandom::new()
        .fill(&mut buffer)
        .expect("the system's random source works");
    URL_SAFE_NO_PAD.encode(buffer)
}

/// SHA-256 of a secret, base64url: all the store keeps of codes, tokens and states.
pub(crate) fn hash(secret: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest::digest(&digest::SHA256, secret.as_bytes()))
}

/// The PKCE S256 challenge of a verifier.
pub(crate) fn s256(verifier: &str) -> String {
    hash(verifier)
}

/// Whether two strings are equal, in time independent of where they differ.
pub(crate) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (
        digest::digest(&digest::SHA256, a.as_bytes()),
        digest::digest(&digest::SHA256, b.as_bytes()),
    );
    // Equal-length digests, compared without an early exit.
    a.as_ref()
        .iter()
        .zip(b.as_ref())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

struct KeyLength;

impl hkdf::KeyType for KeyLength {
    fn len(&self) -> usize {
        32
    }
}

/// An AES-256-GCM key derived from a secret only its holder has (a code): what a record
/// sealed under it says is unreadable to whoever reads the table.
fn sealing_key(secret: &str, purpose: &[u8]) -> aead::LessSafeKey {
    let salt = hkdf::Salt::new(hkdf::HKDF_SHA256, b"mcp-lambda oauth");
    let info = [purpose];
    let prk = salt.extract(secret.as_bytes());
    let okm = prk
        .expand(&info, KeyLength)
        .expect("32 bytes is a valid HKDF output length");
    let mut key = [0u8; 32];
    okm.fill(&mut key).expect("the lengths match");
    aead::LessSafeKey::new(
        aead::UnboundKey::new(&aead::AES_256_GCM, &key).expect("a 32-byte AES key"),
    )
}

/// `plaintext` sealed under a key derived from `secret`: nonce || ciphertext, base64url.
pub(crate) fn seal(secret: &str, purpose: &[u8], plaintext: &[u8]) -> String {
    let key = sealing_key(secret, purpose);
    let mut nonce = [0u8; 12];
    SystemRandom::new()
        .fill(&mut nonce)
        .expect("the system's random source works");
    let mut buffer = plaintext.to_vec();
    key.seal_in_place_append_tag(
        aead::Nonce::assume_unique_for_key(nonce),
        aead::Aad::from(purpose),
        &mut buffer,
    )
    .expect("AES-GCM seals any short input");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&buffer);
    URL_SAFE_NO_PAD.encode(out)
}

/// What [`seal`] sealed, if `secret` is the one it was sealed under.
pub(crate) fn open(secret: &str, purpose: &[u8], sealed: &str) -> Option<Vec<u8>> {
    let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
    if bytes.len() < 12 + 16 {
        return None;
    }
    let (nonce, ciphertext) = bytes.split_at(12);
    let key = sealing_key(secret, purpose);
    let mut buffer = ciphertext.to_vec();
    let plain = key
        .open_in_place(
            aead::Nonce::try_assume_unique_for_key(nonce).ok()?,
            aead::Aad::from(purpose),
            &mut buffer,
        )
        .ok()?;
    Some(plain.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_token_verifies_with_the_published_key_and_no_other() {
        let keys = SigningKeys::per_process();
        let token = keys.sign("at+jwt", &json!({"sub": "ada"}));
        let (input, signature) = token.rsplit_once('.').unwrap();
        let jwk = &keys.jwks()["keys"][0];
        let point: Vec<u8> = [4u8]
            .into_iter()
            .chain(URL_SAFE_NO_PAD.decode(jwk["x"].as_str().unwrap()).unwrap())
            .chain(URL_SAFE_NO_PAD.decode(jwk["y"].as_str().unwrap()).unwrap())
            .collect();
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            point,
        );
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        assert!(public.verify(input.as_bytes(), &signature).is_ok());
        assert!(public.verify(b"something else", &signature).is_err());
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(input.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["typ"], "at+jwt");
        assert_eq!(header["kid"], jwk["kid"]);
    }

    #[test]
    fn configured_keys_parse_and_the_first_signs() {
        let (a, b) = (
            URL_SAFE_NO_PAD.encode(super::super::settings::generate_p256_pkcs8()),
            URL_SAFE_NO_PAD.encode(super::super::settings::generate_p256_pkcs8()),
        );
        let keys = SigningKeys::parse(&format!("{a}, {b}")).unwrap();
        assert_eq!(keys.jwks()["keys"].as_array().unwrap().len(), 2);
        let token = keys.sign("at+jwt", &json!({}));
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["kid"], keys.jwks()["keys"][0]["kid"]);
        assert!(SigningKeys::parse("").is_err());
        assert!(SigningKeys::parse("AAAA").is_err());
    }

    #[test]
    fn sealed_values_open_only_with_their_secret_and_purpose() {
        let sealed = seal("code-1", b"refresh", b"the refresh token");
        assert_eq!(
            open("code-1", b"refresh", &sealed).unwrap(),
            b"the refresh token"
        );
        assert!(open("code-2", b"refresh", &sealed).is_none());
        assert!(open("code-1", b"other", &sealed).is_none());
        assert!(!sealed.contains("refresh"));
    }

    #[test]
    fn secrets_compare_by_value() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
        // RFC 7636, appendix B.
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
