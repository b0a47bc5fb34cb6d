//! Which client capabilities a request declared: per request at 2026-07-28, from `initialize`
//! in a legacy session. Fixtures that need one answer -32021 (or, legacy, a tool error) without.

use rmcp::{ErrorData, RoleServer, model::ClientCapabilities, service::RequestContext};

#[derive(Clone, Copy)]
pub(crate) enum Capability {
    Elicitation,
    Sampling,
    Roots,
}

impl Capability {
    /// As the spec names it (`ClientCapabilities` field).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Capability::Elicitation => "elicitation",
            Capability::Sampling => "sampling",
            Capability::Roots => "roots",
        }
    }
}

/// Whether this request's client declared `capability`.
pub(crate) fn declares(context: &RequestContext<RoleServer>, capability: Capability) -> bool {
    let capabilities = context.client_capabilities().unwrap_or_default();
    match capability {
        Capability::Elicitation => capabilities.elicitation.is_some(),
        Capability::Sampling => capabilities.sampling.is_some(),
        Capability::Roots => capabilities.roots.is_some(),
    }
}

/// -32021 naming `capability` unless this request's client declared it.
pub(crate) fn require(
    context: &RequestContext<RoleServer>,
    capability: Capability,
) -> Result<(), ErrorData> {
    if declares(context, capability) {
        return Ok(());
    }
    let builder = ClientCapabilities::builder();
    let required = match capability {
        Capability::Elicitation => builder.enable_elicitation().build(),
        Capability::Sampling => builder.enable_sampling().build(),
        Capability::Roots => builder.enable_roots().build(),
    };
    Err(ErrorData::missing_required_client_capability(required))
}
