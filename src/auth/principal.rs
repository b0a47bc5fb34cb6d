//! The verified caller, as handlers see it.

use rmcp::{RoleServer, service::RequestContext};

/// The caller a request was authenticated as.
///
/// The auth layer puts it into the HTTP request's extensions; rmcp hands the
/// request parts to handlers. Tools take a [`Caller`](crate::Caller) argument instead, which
/// carries it (or, with auth off, stands for the one anonymous caller).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Principal {
    /// Who vouches for the subject: the token's `iss`, or, behind the built-in authorization
    /// server, the identity provider the person logged in with (`MCP_OAUTH_UPSTREAM_ISSUER`).
    pub issuer: String,
    /// The token's `sub`.
    pub subject: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The OAuth client (`client_id`, `azp`, Okta's `cid` or Entra ID v1.0's `appid`), when the
    /// token names one.
    pub client_id: Option<String>,
}

impl Principal {
    /// The principal of the request being handled, if it was authenticated.
    pub fn from_request(context: &RequestContext<RoleServer>) -> Option<Principal> {
        crate::request_scope::extension::<super::Caller>(context)
            .and_then(super::Caller::principal)
            .cloned()
    }

    /// A key that identifies the principal across issuers: handles are bound to it.
    ///
    /// ```
    /// let p = mcp_lambda::Principal {
    ///     issuer: "https://auth.example.com".into(),
    ///     subject: "user-1".into(),
    ///     scopes: vec![],
    ///     client_id: None,
    /// };
    /// assert_eq!(p.owner_key(), "https://auth.example.com#user-1");
    /// ```
    pub fn owner_key(&self) -> String {
        format!("{}#{}", self.issuer, self.subject)
    }

    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}
