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
//! | `MCP_AUTH_JWKS_MIN_REFRESH_SECS` | `60` | at most one JWKS refetch per interval on an unknown `kid` |
//! | `MCP_AUTH_MAX_TOKEN_BYTES` | `8192` | longer bearer tokens are refused unread |

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
        Self::read(&|name| env.get(name))
            .map_err(|(variable, value, reason)| ConfigError::new(variable, value, reason))
    }

    fn read(
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, (&'static str, String, String)> {
        let Some(issuer) = get("MCP_AUTH_ISSUER") else {
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
        }))
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
    fn scope_maps_refuse_malformed_entries() {
        assert!(ScopeMap::parse("checkout").is_err());
        assert!(ScopeMap::parse("checkout=").is_err());
        assert!(ScopeMap::parse("checkout=a\"b").is_err());
        assert!(ScopeMap::parse("").unwrap().is_empty());
    }
}
