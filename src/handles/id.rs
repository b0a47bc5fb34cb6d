//! Handle ids: random UUIDv4s drawn from the operating system's CSPRNG.
//!
//! An id is the only thing a client holds, so it must be unguessable: with auth off it *is* the
//! bearer secret. 122 random bits from `ring`'s `SystemRandom` make guessing hopeless, and the
//! strict parser means one id has exactly one spelling (no case or brace variants that a cache or
//! a log could treat as different handles).

use std::fmt;
use std::str::FromStr;

use ring::rand::{SecureRandom, SystemRandom};

use super::HandleError;

/// The id of a [`Handle`](super::Handle): a random UUID (version 4).
///
/// Shown as 36 lowercase characters, `xxxxxxxx-xxxx-4xxx-Nxxx-xxxxxxxxxxxx` where `N` is one
/// of `8 9 a b`. Parsing accepts exactly that form and nothing else.
///
/// # Example
///
/// ```
/// use mcp_lambda::handles::HandleId;
///
/// let id = HandleId::random()?;
/// let text = id.to_string();
/// assert_eq!(text.len(), 36);
/// assert_eq!(text.parse::<HandleId>()?, id);
///
/// // Only the canonical spelling parses.
/// assert!(text.to_uppercase().parse::<HandleId>().is_err());
/// assert!("not-a-handle".parse::<HandleId>().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HandleId([u8; 16]);

impl HandleId {
    /// Draws a fresh id from the system CSPRNG.
    ///
    /// # Errors
    ///
    /// [`HandleError::Unavailable`] if the operating system refuses to provide random bytes
    /// (practically never; there is no fallback to a weaker source).
    pub fn random() -> Result<Self, HandleError> {
        let mut bytes = [0u8; 16];
        SystemRandom::new().fill(&mut bytes).map_err(|_| {
            HandleError::Unavailable("the system random number generator failed".into())
        })?;
        bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
        bytes[8] = (bytes[8] & 0x3f) | 0x80; // variant RFC 9562 (10xx)
        Ok(Self(bytes))
    }

    /// The id of `owner`'s keyed handle `key` of `kind` (see [`Handles::keyed`](super::Handles::keyed)):
    /// the first 122 bits of a domain-separated SHA-256 of the three, spelled as a UUIDv4 so
    /// that it parses, lists and signs into cursors like any other id.
    ///
    /// Unkeyed on purpose. A secret (the request-state key) would add nothing an id needs: the
    /// store binds every handle to its owner, so an id computed by someone else reaches nothing
    /// (another owner's request answers `NotFound`, as for a random id that leaked), and with
    /// auth off every client is the one anonymous caller, who reaches its keyed handles by key
    /// anyway. And a secret would cost what keyed handles are for: rotating the key, or a
    /// [`Handles`](super::Handles) built without the server's keys (a key per process), would
    /// derive other ids and lose every caller's state, or split it per instance.
    pub(crate) fn derived(owner: &str, kind: &str, key: &str) -> Self {
        let mut input = Vec::with_capacity(48 + owner.len() + kind.len() + key.len());
        input.extend_from_slice(b"mcp-lambda keyed handle v1\0");
        // Lengths first, so no two (kind, owner, key) triples hash the same bytes.
        for part in [kind, owner, key] {
            input.extend_from_slice(&(part.len() as u64).to_be_bytes());
            input.extend_from_slice(part.as_bytes());
        }
        let digest = ring::digest::digest(&ring::digest::SHA256, &input);
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest.as_ref()[..16]);
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        Self(bytes)
    }

    /// The 16 raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The id whose raw bytes are `bytes`, if they are a UUIDv4's (a signed cursor's).
    pub(crate) fn from_bytes(bytes: [u8; 16]) -> Option<Self> {
        (bytes[6] >> 4 == 4 && bytes[8] >> 6 == 0b10).then_some(Self(bytes))
    }
}

impl fmt::Display for HandleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [0u8; 36];
        let mut at = 0;
        for (i, byte) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out[at] = b'-';
                at += 1;
            }
            out[at] = HEX[usize::from(byte >> 4)];
            out[at + 1] = HEX[usize::from(byte & 0x0f)];
            at += 2;
        }
        // Every byte written above is ASCII.
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for HandleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HandleId({self})")
    }
}

/// The text is not a handle id.
///
/// The input is left out of the message: it came from a client and may be anything.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not a handle id: expected a lowercase UUIDv4 such as 1b4e28ba-2fa1-4d2e-883f-0016d3cca427"
)]
pub struct ParseHandleIdError(());

impl FromStr for HandleId {
    type Err = ParseHandleIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.as_bytes();
        const HYPHENS: [usize; 4] = [8, 13, 18, 23];
        if text.len() != 36 || HYPHENS.iter().any(|&i| text[i] != b'-') {
            return Err(ParseHandleIdError(()));
        }
        let mut digits = text
            .iter()
            .enumerate()
            .filter(|(i, _)| !HYPHENS.contains(i))
            .map(|(_, c)| nibble(*c));
        let mut bytes = [0u8; 16];
        for byte in &mut bytes {
            // 36 characters minus 4 hyphens leave exactly 32 digits, two per byte.
            let hi = digits.next().ok_or(ParseHandleIdError(()))??;
            let lo = digits.next().ok_or(ParseHandleIdError(()))??;
            *byte = (hi << 4) | lo;
        }
        if bytes[6] >> 4 != 4 || bytes[8] >> 6 != 0b10 {
            return Err(ParseHandleIdError(()));
        }
        Ok(Self(bytes))
    }
}

fn nibble(c: u8) -> Result<u8, ParseHandleIdError> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(ParseHandleIdError(())),
    }
}

impl serde::Serialize for HandleId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for HandleId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A tool argument may be a `HandleId`: its schema is a UUID string.
impl schemars::JsonSchema for HandleId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HandleId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A handle id, as the tool that created it returned it (a lowercase UUID).",
            "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_ids_are_version_4_and_round_trip() {
        for _ in 0..1000 {
            let id = HandleId::random().unwrap();
            let text = id.to_string();
            assert_eq!(text.len(), 36, "{text}");
            assert_eq!(&text[14..15], "4", "{text}");
            assert!(matches!(&text[19..20], "8" | "9" | "a" | "b"), "{text}");
            assert_eq!(text.parse::<HandleId>(), Ok(id), "{text}");
        }
    }

    #[test]
    fn derived_ids_are_stable_parse_and_differ_by_each_part() {
        let id = HandleId::derived("https://issuer#ada", "counter", "default");
        assert_eq!(
            id,
            HandleId::derived("https://issuer#ada", "counter", "default")
        );
        assert_eq!(id.to_string().parse::<HandleId>(), Ok(id));
        assert_eq!(HandleId::from_bytes(*id.as_bytes()), Some(id));
        for other in [
            HandleId::derived("https://issuer#bob", "counter", "default"),
            HandleId::derived("https://issuer#ada", "note", "default"),
            HandleId::derived("https://issuer#ada", "counter", "other"),
            // A byte moved from the owner to the key: the same bytes, split otherwise.
            HandleId::derived("https://issuer#ad", "counter", "adefault"),
        ] {
            assert_ne!(other, id);
        }
    }

    #[test]
    fn random_ids_differ() {
        let a = HandleId::random().unwrap();
        let b = HandleId::random().unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn canonical_v4_text_parses() {
        let text = "1b4e28ba-2fa1-4d2e-883f-0016d3cca427";
        assert_eq!(text.parse::<HandleId>().unwrap().to_string(), text);
    }

    #[test]
    fn anything_but_a_canonical_v4_uuid_is_refused() {
        for bad in [
            "",
            "1b4e28ba2fa14d2e883f0016d3cca427",       // no hyphens
            "1B4E28BA-2FA1-4D2E-883F-0016D3CCA427",   // uppercase
            "{1b4e28ba-2fa1-4d2e-883f-0016d3cca427}", // braces
            "urn:uuid:1b4e28ba-2fa1-4d2e-883f-0016d3cca427",
            "1b4e28ba-2fa1-1d2e-883f-0016d3cca427", // version 1
            "1b4e28ba-2fa1-4d2e-c83f-0016d3cca427", // variant 110x
            "1b4e28ba-2fa1-4d2e-783f-0016d3cca427", // variant 0xxx
            "1b4e28b-a2fa1-4d2e-883f-0016d3cca427", // hyphen moved
            "1b4e28ba-2fa1-4d2e-883f-0016d3cca42g", // not hex
            "1b4e28ba-2fa1-4d2e-883f-0016d3cca427 ", // trailing space
            " 1b4e28ba-2fa1-4d2e-883f-0016d3cca427", // leading space
            "1b4e28ba-2fa1-4d2e-883f-0016d3cca4270", // too long
            "1b4e28ba-2fa1-4d2e-883f--016d3cca427", // hyphen for digit
            "1b4e28ba-2fa1-4d2e-883f-0016d3cca42é", // non-ASCII
            "00000000-0000-0000-0000-000000000000", // nil
        ] {
            assert!(bad.parse::<HandleId>().is_err(), "parsed {bad:?}");
        }
    }

    #[test]
    fn serde_uses_the_canonical_text() {
        let id: HandleId = "1b4e28ba-2fa1-4d2e-883f-0016d3cca427".parse().unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"1b4e28ba-2fa1-4d2e-883f-0016d3cca427\"");
        assert_eq!(serde_json::from_str::<HandleId>(&json).unwrap(), id);
        assert!(serde_json::from_str::<HandleId>("\"nope\"").is_err());
    }
}
