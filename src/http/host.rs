//! Who may call the MCP path: the request's `Host` and `Origin`, each parsed and normalized
//! once, here, and judged against `MCP_ALLOWED_HOSTS` and `MCP_ALLOWED_ORIGINS`, parsed and
//! normalized once at start-up by the same rules. This module alone decides the refusal (the
//! DNS-rebinding guard and the browser-origin check, MCP 2026-07-28 §3), which origin CORS
//! echoes, and so which requests either door may answer: rmcp's own allow-lists are off
//! (`HttpSettings::rmcp_config`), since a second judge reading the same lists by other rules
//! is how a browser came to be accepted by rmcp and refused CORS by a string compare.
//!
//! The rules are rmcp 3.11's (`tower.rs`: `parse_host_header`, `parse_allowed_authority`,
//! `parse_origin_value`, `parse_allowed_origin`), so the answers are those rmcp gave:
//! - a host is compared without case and without IPv6 brackets; an entry's port, when it
//!   names one, must be the `Host`'s;
//! - an origin is `(scheme, host, port)` (RFC 6454): scheme and host without case, a missing
//!   port the scheme's default (https 443, http 80), so `https://app.example.com` and
//!   `https://app.example.com:443` are one origin; an entry's `:*` is any port, and an entry
//!   without a port any port too (rmcp 3.11 reads it so and deprecates it); `null` is the
//!   browser's opaque origin.

use http::{HeaderMap, HeaderValue, Method, Uri, header, uri::Authority};

use super::refusal::Rejection;
use super::settings::HttpSettings;

/// Refuses a request that repeats `Host` (RFC 9112 §3.2): layers that read the first and
/// layers that read the last would see different hosts.
pub(crate) fn check(headers: &HeaderMap) -> Result<(), Rejection> {
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        return Err(Rejection::RepeatedHost);
    }
    Ok(())
}

/// The allow-lists, parsed once at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    /// `None`: any host (`MCP_ALLOWED_HOSTS=*`).
    hosts: Option<Vec<AllowedHost>>,
    origins: Vec<AllowedOrigin>,
}

/// A request the MCP path may serve, and what CORS makes of it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Admitted {
    /// The request's `Origin` as the browser sent it, when the list allows it: the value CORS
    /// echoes (a browser compares it byte for byte with its own).
    pub(crate) cors_origin: Option<HeaderValue>,
}

impl Admission {
    /// The lists of `settings`; an entry that does not parse (only possible for a list set in
    /// code: `HttpSettings::from_env` refuses one) allows nothing, as rmcp skipped it.
    pub(crate) fn new(settings: &HttpSettings) -> Self {
        Self {
            hosts: (!settings.allowed_hosts.is_empty()).then(|| {
                settings
                    .allowed_hosts
                    .iter()
                    .filter_map(|h| AllowedHost::parse(h))
                    .collect()
            }),
            origins: settings
                .allowed_origins
                .iter()
                .filter_map(|o| AllowedOrigin::parse(o))
                .collect(),
        }
    }

    /// The *host* step's judgement on the MCP path: a `Host` the list names (403; 400 for none
    /// or one that is no authority), then an `Origin`, when present, the list names (403). A
    /// preflight (`OPTIONS`) is never refused for its `Origin`: an origin the list does not
    /// name gets no CORS headers, which is the browser's refusal.
    pub(crate) fn admit(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<Admitted, Rejection> {
        let host = request_host(uri, headers)?;
        if !self.host_is_allowed(&host) {
            warn_refused(
                "a request with a Host outside MCP_ALLOWED_HOSTS was refused (DNS rebinding, or the list lacks this server's name)",
            );
            return Err(Rejection::ForeignHost);
        }
        let Some(sent) = headers.get(header::ORIGIN) else {
            return Ok(Admitted::default());
        };
        let judged = sent
            .to_str()
            .map_err(|_| "Forbidden: Invalid Origin header encoding")
            .and_then(|text| Origin::parse(text).ok_or("Forbidden: Invalid Origin header"))
            .and_then(|origin| {
                self.origin_is_allowed(&origin)
                    .then_some(())
                    .ok_or("Forbidden: Origin header is not allowed")
            });
        match judged {
            Ok(()) => Ok(Admitted {
                cors_origin: Some(sent.clone()),
            }),
            Err(_) if method == Method::OPTIONS => Ok(Admitted::default()),
            Err(why) => {
                warn_refused("a request with an Origin outside MCP_ALLOWED_ORIGINS was refused");
                Err(Rejection::ForeignOrigin(why))
            }
        }
    }

    fn host_is_allowed(&self, host: &AllowedHost) -> bool {
        let Some(allowed) = &self.hosts else {
            return true;
        };
        allowed.iter().any(|entry| {
            entry.host == host.host && entry.port.is_none_or(|port| host.port == Some(port))
        })
    }

    fn origin_is_allowed(&self, origin: &Origin) -> bool {
        self.origins.iter().any(|entry| match (entry, origin) {
            (AllowedOrigin::Null, Origin::Null) => true,
            (
                AllowedOrigin::Tuple { scheme, host, port },
                Origin::Tuple {
                    scheme: sent_scheme,
                    host: sent_host,
                    port: sent_port,
                },
            ) => {
                scheme == sent_scheme
                    && host == sent_host
                    && match port {
                        AllowedPort::Any => true,
                        AllowedPort::Exact(port) => {
                            sent_port.or_else(|| default_port(sent_scheme)) == Some(*port)
                        }
                    }
            }
            _ => false,
        })
    }
}

/// Whether `entry` of `MCP_ALLOWED_ORIGINS` is no origin an `Origin` could match (the settings
/// refuse it rather than leave it to allow nothing).
pub(crate) fn invalid_origin_entry(entry: &str) -> bool {
    AllowedOrigin::parse(entry).is_none()
}

/// One warn line per 10 s at most: anyone can send these.
fn warn_refused(what: &'static str) {
    static REFUSED: crate::logging::Sampled =
        crate::logging::Sampled::per(std::time::Duration::from_secs(10));
    if let Some(held_back) = REFUSED.allow() {
        tracing::warn!(held_back, "{what}");
    }
}

/// The request's host: its `Host`, or without one the URI's authority (HTTP/2's
/// `:authority`), as rmcp read it; 400 for neither, or a value that is no authority.
fn request_host(uri: &Uri, headers: &HeaderMap) -> Result<AllowedHost, Rejection> {
    let authority = match headers.get(header::HOST) {
        Some(host) => {
            let text = host
                .to_str()
                .map_err(|_| Rejection::BadHost("Bad Request: Invalid Host header encoding"))?;
            Authority::try_from(text)
                .map_err(|_| Rejection::BadHost("Bad Request: Invalid Host header"))?
        }
        None => uri
            .authority()
            .cloned()
            .ok_or(Rejection::BadHost("Bad Request: missing Host header"))?,
    };
    Ok(AllowedHost {
        host: normalize_host(authority.host()),
        port: authority.port_u16(),
    })
}

/// A host, or an entry of the `Host` allow-list: the port `None` is any port in an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// An entry: an authority, or failing that the whole entry as a host name.
    fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        Some(match Authority::try_from(entry) {
            Ok(authority) => Self {
                host: normalize_host(authority.host()),
                port: authority.port_u16(),
            },
            Err(_) => Self {
                host: normalize_host(entry),
                port: None,
            },
        })
    }
}

/// Whether an allow-list entry names this machine: `localhost` or a loopback address, with or
/// without a port (read as the *host* step reads the entry).
pub(super) fn names_this_machine(entry: &str) -> bool {
    AllowedHost::parse(entry).is_some_and(|allowed| {
        allowed.host == "localhost"
            || allowed
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// Brackets off, lower case: `[::1]` is `::1`, `Example.COM` is `example.com`.
fn normalize_host(host: &str) -> String {
    host.trim_matches('[')
        .trim_matches(']')
        .to_ascii_lowercase()
}

/// The port a scheme implies when an origin leaves it out (RFC 6454 §4).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// A sent `Origin`, normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl Origin {
    fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        if value.is_empty() {
            return None;
        }
        if value.eq_ignore_ascii_case("null") {
            return Some(Self::Null);
        }
        let uri = Uri::try_from(value).ok()?;
        let authority = uri.authority()?;
        Some(Self::Tuple {
            scheme: uri.scheme_str()?.to_ascii_lowercase(),
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        })
    }
}

/// An entry's port: `:*`, or one port (a missing port is any port, as rmcp 3.11 reads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AllowedPort {
    Any,
    Exact(u16),
}

/// An entry of `MCP_ALLOWED_ORIGINS`, normalized.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowedOrigin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: AllowedPort,
    },
}

impl AllowedOrigin {
    fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        let (origin, any_port) = match entry.strip_suffix(":*") {
            Some(base) => (Origin::parse(base)?, true),
            None => (Origin::parse(entry)?, false),
        };
        Some(match origin {
            Origin::Null if !any_port => Self::Null,
            Origin::Tuple { scheme, host, port } if !(any_port && port.is_some()) => Self::Tuple {
                scheme,
                host,
                port: match port {
                    Some(port) if !any_port => AllowedPort::Exact(port),
                    _ => AllowedPort::Any,
                },
            },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(hosts: &[&str], origins: &[&str]) -> Admission {
        let mut settings = crate::Config::local_default().http;
        settings.allowed_hosts = hosts.iter().map(|h| h.to_string()).collect();
        settings.allowed_origins = origins.iter().map(|o| o.to_string()).collect();
        Admission::new(&settings)
    }

    fn judge(
        admission: &Admission,
        method: Method,
        host: &str,
        origin: Option<&str>,
    ) -> Result<Option<String>, Rejection> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(origin) = origin {
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        }
        let uri = Uri::from_static("/mcp");
        admission
            .admit(&method, &uri, &headers)
            .map(|a| a.cors_origin.map(|o| o.to_str().unwrap().to_owned()))
    }

    #[test]
    fn hosts_are_judged_as_rmcp_judged_them() {
        let list = admission(&["example.com", "api.example.com:8443", "[::1]"], &[]);
        for (host, expected) in [
            ("example.com", Ok(None)),
            ("EXAMPLE.com", Ok(None)),
            ("example.com:1234", Ok(None)),
            ("api.example.com:8443", Ok(None)),
            ("[::1]:3000", Ok(None)),
            ("api.example.com", Err(Rejection::ForeignHost)),
            ("api.example.com:8444", Err(Rejection::ForeignHost)),
            ("evil.com", Err(Rejection::ForeignHost)),
            // `http`'s authority reads the port only when asked: rmcp saw no port here.
            ("example.com:notaport", Ok(None)),
            (
                "example .com",
                Err(Rejection::BadHost("Bad Request: Invalid Host header")),
            ),
            (
                "",
                Err(Rejection::BadHost("Bad Request: Invalid Host header")),
            ),
        ] {
            assert_eq!(
                judge(&list, Method::POST, host, None),
                expected,
                "Host {host:?}"
            );
        }
        let any = admission(&[], &[]);
        assert_eq!(judge(&any, Method::POST, "evil.com:1", None), Ok(None));
    }

    #[test]
    fn a_request_without_host_is_judged_by_its_authority() {
        let list = admission(&["example.com"], &[]);
        let headers = HeaderMap::new();
        let ok = Uri::from_static("http://example.com/mcp");
        assert!(list.admit(&Method::POST, &ok, &headers).is_ok());
        let foreign = Uri::from_static("http://evil.com/mcp");
        assert_eq!(
            list.admit(&Method::POST, &foreign, &headers).unwrap_err(),
            Rejection::ForeignHost
        );
        let none = Uri::from_static("/mcp");
        assert_eq!(
            list.admit(&Method::POST, &none, &headers).unwrap_err(),
            Rejection::BadHost("Bad Request: missing Host header")
        );
    }

    #[test]
    fn origins_compare_as_rfc_6454_tuples() {
        let list = admission(
            &[],
            &[
                "https://app.example.com:443",
                "HTTP://Local.example:*",
                "https://bare.example",
                "null",
            ],
        );
        for (origin, allowed) in [
            ("https://app.example.com", true),
            ("https://app.example.com:443", true),
            ("https://APP.example.com", true),
            ("https://app.example.com:8443", false),
            ("http://app.example.com", false),
            ("http://local.example", true),
            ("http://local.example:5173", true),
            ("https://local.example", false),
            ("https://bare.example:8443", true),
            ("null", true),
            ("https://evil.example", false),
        ] {
            let judged = judge(&list, Method::POST, "h", Some(origin));
            if allowed {
                assert_eq!(judged, Ok(Some(origin.to_owned())), "{origin}");
            } else {
                assert_eq!(
                    judged,
                    Err(Rejection::ForeignOrigin(
                        "Forbidden: Origin header is not allowed"
                    )),
                    "{origin}"
                );
                assert_eq!(
                    judge(&list, Method::OPTIONS, "h", Some(origin)),
                    Ok(None),
                    "{origin}"
                );
            }
        }
        assert_eq!(
            judge(&list, Method::POST, "h", Some("not an origin")),
            Err(Rejection::ForeignOrigin("Forbidden: Invalid Origin header"))
        );
        // No list allows no origin (rmcp's `enforce_origin_validation`).
        assert!(judge(&admission(&[], &[]), Method::POST, "h", Some("null")).is_err());
    }

    #[test]
    fn entries_that_are_no_origin_are_told_apart() {
        for entry in [
            "https://a.example:443:*",
            "null:*",
            "a.example",
            "",
            "https://",
        ] {
            assert!(invalid_origin_entry(entry), "{entry:?}");
        }
        for entry in [
            "https://a.example:443",
            "https://a.example:*",
            "https://a.example",
            "null",
            "http://[::1]:*",
        ] {
            assert!(!invalid_origin_entry(entry), "{entry:?}");
        }
    }
}
