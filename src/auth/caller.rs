//! Who calls: one type for tools, resource rules and task policies.

use rmcp::handler::server::common::{AsRequestContext, FromContextPart};
use rmcp::{RoleServer, service::RequestContext};

use super::Principal;

/// The owner key every anonymous caller shares (auth off).
/// The owner key every client shares when auth is off.
pub(crate) const ANONYMOUS: &str = "anonymous";

/// The caller of the request being handled: its verified [`Principal`], or the one anonymous
/// caller when auth is off.
///
/// Everything a caller keeps (handles, tasks, listen streams) is bound to its
/// [`owner_key`](Self::owner_key). A tool takes it as an argument, next to its
/// `Parameters` — rmcp extracts it from the request:
///
/// ```
/// use mcp_lambda::Caller;
/// use mcp_lambda::rmcp::{self, handler::server::router::tool::ToolRouter, tool, tool_router};
///
/// #[derive(Clone)]
/// struct Whoami {
///     tool_router: ToolRouter<Self>,
/// }
///
/// #[tool_router]
/// impl Whoami {
///     #[tool(description = "Who am I?")]
///     fn whoami(&self, caller: Caller) -> String {
///         match caller.subject() {
///             Some(subject) => format!("you are {subject}"),
///             None => "auth is off: everyone is anonymous".into(),
///         }
///     }
/// }
/// # let _ = Whoami { tool_router: Whoami::tool_router() };
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    principal: Option<Principal>,
    owner_key: String,
}

impl Caller {
    /// The anonymous caller (auth off): everything it keeps belongs to one shared owner.
    ///
    /// ```
    /// let caller = mcp_lambda::Caller::anonymous();
    /// assert_eq!(caller.owner_key(), "anonymous");
    /// assert!(caller.principal().is_none());
    /// ```
    pub fn anonymous() -> Self {
        Self {
            principal: None,
            owner_key: ANONYMOUS.to_owned(),
        }
    }

    /// A caller authenticated as `principal`.
    ///
    /// ```
    /// let caller = mcp_lambda::Caller::from(mcp_lambda::Principal {
    ///     issuer: "https://auth.example.com".into(),
    ///     subject: "ada".into(),
    ///     scopes: vec!["notes:write".into()],
    ///     client_id: None,
    /// });
    /// assert_eq!(caller.owner_key(), "https://auth.example.com#ada");
    /// assert!(caller.has_scope("notes:write"));
    /// ```
    pub fn authenticated(principal: Principal) -> Self {
        Self {
            owner_key: principal.owner_key(),
            principal: Some(principal),
        }
    }

    /// The caller of the request `context` belongs to (anonymous when auth is off).
    pub fn from_request(context: &RequestContext<RoleServer>) -> Self {
        crate::request_scope::extension::<Caller>(context)
            .cloned()
            .unwrap_or_else(Self::anonymous)
    }

    /// The key everything this caller keeps is bound to: `issuer#subject`, or `anonymous`.
    pub fn owner_key(&self) -> &str {
        &self.owner_key
    }

    /// The verified principal; `None` when auth is off.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_ref()
    }

    /// The token's `sub`; `None` when auth is off.
    pub fn subject(&self) -> Option<&str> {
        self.principal.as_ref().map(|p| p.subject.as_str())
    }

    /// The granted scopes (none when auth is off).
    pub fn scopes(&self) -> &[String] {
        self.principal.as_ref().map_or(&[], |p| &p.scopes)
    }

    /// Whether the caller holds `scope` (never, when auth is off).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes().iter().any(|s| s == scope)
    }

    /// Whether auth is off for this request.
    pub fn is_anonymous(&self) -> bool {
        self.principal.is_none()
    }
}

impl From<Principal> for Caller {
    fn from(principal: Principal) -> Self {
        Self::authenticated(principal)
    }
}

impl From<Option<Principal>> for Caller {
    fn from(principal: Option<Principal>) -> Self {
        principal.map_or_else(Self::anonymous, Self::authenticated)
    }
}

/// A tool or prompt argument: `async fn my_tool(&self, caller: Caller, …)`.
impl<C: AsRequestContext> FromContextPart<C> for Caller {
    fn from_context_part(context: &mut C) -> Result<Self, rmcp::ErrorData> {
        Ok(Self::from_request(context.as_request_context()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authenticated_caller_is_keyed_by_issuer_and_subject() {
        let principal = Principal {
            issuer: "https://i".into(),
            subject: "s".into(),
            scopes: vec!["a".into()],
            client_id: None,
        };
        let caller = Caller::from(Some(principal.clone()));
        assert_eq!(caller.owner_key(), principal.owner_key());
        assert_eq!(caller.subject(), Some("s"));
        assert!(caller.has_scope("a") && !caller.has_scope("b"));
        assert!(!caller.is_anonymous());
        let nobody = Caller::from(None);
        assert_eq!(nobody.owner_key(), "anonymous");
        assert!(nobody.scopes().is_empty() && nobody.is_anonymous());
    }
}
