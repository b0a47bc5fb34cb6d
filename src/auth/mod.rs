//! OAuth 2.1 resource-server auth: every request's bearer token verified
//! locally against the issuer's cached JWKS, RFC 9728 metadata, scope challenges.

mod bearer;
mod jwks;
mod jwt;
pub(crate) mod metadata;
mod principal;
mod settings;
mod token_cache;

pub use bearer::{Authenticator, Challenge};
pub use jwt::TokenError;
pub use principal::Principal;
pub use settings::{AuthSettings, ScopeMap};
