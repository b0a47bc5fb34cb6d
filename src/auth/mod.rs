//! OAuth 2.1 resource-server auth: every request's bearer token verified
//! locally against the issuer's cached JWKS (Amazon Cognito's scope-bound access tokens
//! included), or an opaque token introspected at the issuer (RFC 7662) and the answer
//! cached for a short window; RFC 9728 metadata, scope decisions.
//!
//! Auth decides; it writes no HTTP. [`Authenticator::authorize`] answers with a
//! [`Principal`] or a [`Refusal`], and the HTTP front (`http/bearer.rs`) turns a
//! refusal into the 401/403 with its `WWW-Authenticate` challenge.

mod bearer;
mod caller;
mod fetch;
mod introspection;
mod jwks;
mod jwt;
pub mod metadata;
mod principal;
mod settings;
mod token_cache;
mod warming;

pub use bearer::{Authenticator, Challenge, Refusal};
pub(crate) use caller::ANONYMOUS as ANONYMOUS_OWNER;
pub use caller::Caller;
pub(crate) use fetch::{IssuerClient, reason as client_error_reason, tls_config};
pub use jwt::TokenError;
pub(crate) use jwt::{Jwk, parse as parse_jws, verified_claims};
pub use principal::Principal;
pub use settings::{AuthSettings, ClientSecret, IntrospectionSettings, ScopeMap};
pub(crate) use warming::Warming;
