//! Redirect URIs: which may be registered, and whether one a request names is one registered.
//!
//! Registered: `https` anywhere; `http` only on a loopback address (RFC 8252 §7.3: any port);
//! a private-use scheme (`cursor://…`, `com.example.app:/cb`, RFC 8252 §7.1). Never a
//! `javascript:`, `data:`, `file:` or other browser-local scheme, never a fragment, userinfo,
//! whitespace or control characters (the scheme bypasses of other servers' security history:
//! `JavaScript:` and ` javascript:` are refused like `javascript:`). Matched exactly, as a
//! string, except a loopback `http` URI, whose port may differ.

use url::{Host, Url};

/// Schemes a browser handles itself: a redirect to one would run in the authorization
/// server's page instead of reaching a client.
const REFUSED_SCHEMES: &[&str] = &[
    "javascript",
    "data",
    "vbscript",
    "file",
    "blob",
    "about",
    "filesystem",
    "view-source",
    "ws",
    "wss",
    "ftp",
    "chrome",
    "chrome-extension",
    "moz-extension",
];

const MAX_URI_BYTES: usize = 2000;

/// Whether `uri` may be registered (`application_type` `web` admits only `https`).
pub(crate) fn check(uri: &str, application_type: Option<&str>) -> Result<(), String> {
    if uri.len() > MAX_URI_BYTES {
        return Err(format!("longer than {MAX_URI_BYTES} bytes"));
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("contains whitespace or control characters".into());
    }
    let parsed = Url::parse(uri).map_err(|_| "not an absolute URI".to_string())?;
    if parsed.fragment().is_some() {
        return Err("has a fragment".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("has userinfo".into());
    }
    let scheme = parsed.scheme();
    if !uri
        .get(..scheme.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    {
        return Err("has a malformed scheme".into());
    }
    match scheme {
        "https" => {
            if parsed.host().is_none() {
                return Err("has no host".into());
            }
        }
        "http" => {
            if !is_loopback(&parsed) {
                return Err("http is allowed only on a loopback address (127.0.0.1, [::1], localhost); use https".into());
            }
            if application_type == Some("web") {
                return Err("a web client's redirect URIs must be https".into());
            }
        }
        refused if REFUSED_SCHEMES.contains(&refused) => {
            return Err(format!("the {refused}: scheme is never a redirect target"));
        }
        _ => {
            if application_type == Some("web") {
                return Err(
                    "a web client's redirect URIs must be https (private-use schemes are for native clients)"
                        .into(),
                );
            }
        }
    }
    Ok(())
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(domain)) => domain == "localhost",
        None => false,
    }
}

/// Whether `requested` is one of `registered`: exactly, or a loopback `http` URI that differs
/// only in its port (RFC 8252 §7.3).
pub(crate) fn matches(requested: &str, registered: &[String]) -> bool {
    if registered.iter().any(|r| r == requested) {
        return true;
    }
    let Ok(asked) = Url::parse(requested) else {
        return false;
    };
    // The URI as given must be the URI as parsed: the parser drops tabs, newlines and
    // surrounding control characters, and reads `0x7f.1` as 127.0.0.1; a redirect goes to the
    // string given, so only its normal form may match.
    if asked.as_str() != requested
        || asked.scheme() != "http"
        || !is_loopback(&asked)
        || asked.fragment().is_some()
    {
        return false;
    }
    registered.iter().any(|r| {
        Url::parse(r).is_ok_and(|r| {
            r.scheme() == "http"
                && is_loopback(&r)
                && r.host() == asked.host()
                && r.path() == asked.path()
                && r.query() == asked.query()
        })
    })
}

/// The host a consent page shows for a redirect URI (the scheme for a private-use one).
pub(crate) fn shown_host(uri: &str) -> String {
    match Url::parse(uri) {
        Ok(u) => match u.host_str() {
            Some(host) => host.to_string(),
            None => format!("{}:", u.scheme()),
        },
        Err(_) => uri.chars().take(100).collect(),
    }
}

/// Whether a redirect URI goes to this device only (loopback or a private-use scheme), which a
/// consent page warns of: anyone's app on the person's device could be listening there.
pub(crate) fn is_local_only(uri: &str) -> bool {
    Url::parse(uri).is_ok_and(|u| u.scheme() != "https")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrable_redirect_uris() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "https://chatgpt.com/connector_platform_oauth_redirect",
            "http://127.0.0.1:33418",
            "http://localhost:8976/callback",
            "http://[::1]/cb",
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "com.example.app:/oauth",
        ] {
            assert_eq!(check(ok, None), Ok(()), "{ok}");
        }
        for bad in [
            "javascript:alert(1)",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "java\tscript:alert(1)",
            "data:text/html,hi",
            "DATA:text/html,hi",
            "vbscript:x",
            "file:///etc/passwd",
            "http://app.example.com/cb",
            "http://127.0.0.1.nip.io/cb",
            "https://app.example.com/cb#x",
            "https://user@app.example.com/cb",
            "/relative/cb",
        ] {
            assert!(check(bad, None).is_err(), "{bad}");
        }
        assert!(check("http://127.0.0.1/cb", Some("web")).is_err());
        assert!(check("cursor://x/cb", Some("web")).is_err());
        assert!(check("http://127.0.0.1/cb", Some("native")).is_ok());
    }

    #[test]
    fn redirect_uris_match_exactly_but_a_loopback_port() {
        let registered = vec![
            "http://127.0.0.1/callback".to_string(),
            "https://app.example.com/cb".to_string(),
        ];
        assert!(matches("https://app.example.com/cb", &registered));
        assert!(matches("http://127.0.0.1:51234/callback", &registered));
        assert!(!matches("https://app.example.com/cb/", &registered));
        assert!(!matches("https://app.example.com:8443/cb", &registered));
        assert!(!matches("https://APP.example.com/cb", &registered));
        assert!(!matches("http://127.0.0.1:51234/other", &registered));
        assert!(!matches("http://localhost:51234/callback", &registered));
        assert!(!matches("https://app.example.com/cb?x=1", &registered));
        for crafted in [
            "http://127.0.0.1:5/callback\n",
            "http://127.0.0.1:5/call\nback",
            "http://127.0.0.1:5/callback\u{1}",
            " http://127.0.0.1:5/callback",
            "http://0x7f.1:5/callback",
            "http://127.0.0.1:5\\callback",
        ] {
            assert!(!matches(crafted, &registered), "{crafted:?}");
        }
    }
}
