//! RFC 8414 authorization server metadata, advertising exactly what MCP clients check:
//! S256 PKCE, public clients (`none`), RFC 9207 `iss`, registration and revocation.

use serde_json::{Value, json};

use super::{
    AUTHORIZE_PATH, AuthorizationServer, JWKS_PATH, REGISTER_PATH, REVOKE_PATH, TOKEN_PATH,
};

/// The metadata document. No OpenID discovery document: this server issues no ID tokens, and
/// every MCP client reads RFC 8414 first.
pub(crate) fn document(server: &AuthorizationServer) -> Value {
    let issuer = &server.issuer;
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{AUTHORIZE_PATH}"),
        "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
        "registration_endpoint": format!("{issuer}{REGISTER_PATH}"),
        "revocation_endpoint": format!("{issuer}{REVOKE_PATH}"),
        "jwks_uri": format!("{issuer}{JWKS_PATH}"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
        "scopes_supported": server.scopes,
    })
}
