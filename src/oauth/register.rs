//! Clients: dynamic registration (RFC 7591, public clients), the configured ones, and finding
//! the client a request names.
//!
//! A registration is replaced where RFC 7591 §3.2.1 allows: every client is public
//! (`token_endpoint_auth_method: none`, whatever was asked: MCP clients ask for
//! `client_secret_post` by default and use what the answer says), with the grant and response
//! types this server has. Registrations expire when no one has logged in with them for
//! `MCP_OAUTH_CLIENT_IDLE_DAYS`, and at most `MCP_OAUTH_MAX_REGISTRATIONS_PER_HOUR` are taken.

use std::time::Duration;

use bytes::Bytes;
use http::{StatusCode, request::Parts};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{AuthorizationServer, keys, oauth_error, private_json, redirect};

/// The prefix of dynamically registered client ids.
const REGISTERED_PREFIX: &str = "mcp_";
const MAX_REDIRECT_URIS: usize = 10;
const MAX_NAME_CHARS: usize = 100;

/// A client as the authorization endpoint sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct Client {
    pub(crate) client_id: String,
    pub(crate) client_name: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
    /// Registered dynamically (it expires when unused), not configured.
    #[serde(default)]
    pub(crate) registered: bool,
}

impl Client {
    /// The name a consent page shows.
    pub(crate) fn shown_name(&self) -> &str {
        self.client_name.as_deref().unwrap_or(&self.client_id)
    }
}

/// Whether `client_id` is one dynamic registration made (the only kind that expires unused).
pub(crate) fn is_registered_id(client_id: &str) -> bool {
    client_id.starts_with(REGISTERED_PREFIX) && client_id.len() <= 64
}

fn client_key(client_id: &str) -> String {
    format!("client#{client_id}")
}

/// Why a client id names no usable client.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClientError {
    #[error("this application is not registered here, or its registration expired")]
    Unknown,
    #[error(transparent)]
    Document(#[from] super::cimd::DocumentError),
    #[error(transparent)]
    Store(#[from] super::store::StoreError),
}

impl AuthorizationServer {
    /// The client `client_id` names: configured, registered and not expired, or a metadata
    /// document (fetched, or from the cache).
    pub(crate) async fn client(&self, client_id: &str) -> Result<Client, ClientError> {
        if let Some(configured) = self
            .settings
            .clients
            .iter()
            .find(|c| c.client_id == client_id)
        {
            return Ok(Client {
                client_id: configured.client_id.clone(),
                client_name: None,
                redirect_uris: configured.redirect_uris.clone(),
                registered: false,
            });
        }
        if super::cimd::is_document_id(client_id) {
            return Ok(self.documents.client(client_id).await?);
        }
        if !is_registered_id(client_id) {
            return Err(ClientError::Unknown);
        }
        let record = self.store.get(client_key(client_id)).await?;
        record
            .and_then(|r| serde_json::from_value(r.value).ok())
            .ok_or(ClientError::Unknown)
    }

    /// Keeps a registered client for another idle period: a person just logged in with it.
    pub(crate) async fn keep_client(
        &self,
        client: &Client,
    ) -> Result<(), super::store::StoreError> {
        if !client.registered {
            return Ok(());
        }
        self.store
            .put(
                client_key(&client.client_id),
                serde_json::to_value(client).expect("a client serializes"),
                self.settings.client_idle_ttl,
            )
            .await
    }
}

/// A client's name as a consent page may show it: no control or invisible formatting
/// characters (bidirectional overrides could make one name read as another), at most 100.
pub(crate) fn shown_name(name: &str) -> String {
    name.chars()
        .filter(|&c| {
            !c.is_control()
                && !matches!(c,
                    '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
                    | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}'
                    | '\u{FFF9}'..='\u{FFFB}')
        })
        .take(MAX_NAME_CHARS)
        .collect()
}

/// What a registration request may say (unknown members are ignored, as RFC 7591 says).
#[derive(Debug, Deserialize)]
struct Request {
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    application_type: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    scope: Option<String>,
}

fn invalid(error: &str, description: &str) -> http::Response<Bytes> {
    oauth_error(StatusCode::BAD_REQUEST, error, description)
}

/// `POST /oauth/register`.
pub(crate) async fn register(
    server: &AuthorizationServer,
    parts: &Parts,
    body: &[u8],
) -> http::Response<Bytes> {
    let json_body = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.trim()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    if !json_body {
        return invalid(
            "invalid_client_metadata",
            "send the client metadata as a JSON object with Content-Type: application/json",
        );
    }
    let request: Request = match serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
        .map(serde_json::from_value)
    {
        Some(Ok(request)) => request,
        _ => {
            return invalid(
                "invalid_client_metadata",
                "the body is not a JSON object of client metadata (RFC 7591 §2) with the members' types right",
            );
        }
    };
    let application_type = match request.application_type.as_deref() {
        None => None,
        Some(t @ ("web" | "native")) => Some(t),
        Some(_) => {
            return invalid(
                "invalid_client_metadata",
                "application_type must be \"web\" or \"native\"",
            );
        }
    };
    let redirect_uris = request.redirect_uris.unwrap_or_default();
    if redirect_uris.is_empty() || redirect_uris.len() > MAX_REDIRECT_URIS {
        return invalid(
            "invalid_redirect_uri",
            &format!("register 1 to {MAX_REDIRECT_URIS} redirect_uris"),
        );
    }
    for uri in &redirect_uris {
        if let Err(why) = redirect::check(uri, application_type) {
            return invalid(
                "invalid_redirect_uri",
                &format!(
                    "redirect URI {:?} {why}",
                    uri.chars().take(200).collect::<String>()
                ),
            );
        }
    }
    // What this server does not offer is left out of the registration (RFC 7591 §3.2.1 lets it
    // replace the metadata); a client that asks for none of what it offers is refused.
    if request
        .grant_types
        .as_ref()
        .is_some_and(|g| !g.iter().any(|t| t == "authorization_code"))
    {
        return invalid(
            "invalid_client_metadata",
            "this server offers the authorization_code grant (and refresh_token): register for it",
        );
    }
    if request
        .response_types
        .as_ref()
        .is_some_and(|t| !t.iter().any(|t| t == "code"))
    {
        return invalid(
            "invalid_client_metadata",
            "this server offers the response type \"code\": register for it",
        );
    }
    if let Some(scope) = &request.scope
        && let Some(unknown) = scope
            .split_whitespace()
            .find(|s| !server.scopes.iter().any(|known| known == s))
    {
        return invalid(
            "invalid_client_metadata",
            &format!(
                "scope {:?} is not one of this server's ({})",
                unknown.chars().take(60).collect::<String>(),
                server.scopes.join(" ")
            ),
        );
    }
    let client_name = request.client_name.map(|name| shown_name(&name));
    let hour = crate::env::now_ms() / 3_600_000;
    match server
        .store
        .count(
            format!("registrations#{hour}"),
            server.settings.max_registrations_per_hour,
            Duration::from_secs(3600),
        )
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            return oauth_error(
                StatusCode::TOO_MANY_REQUESTS,
                "temporarily_unavailable",
                "too many clients registered this hour; try again later",
            );
        }
        Err(error) => return store_unavailable(&error),
    }
    let client = Client {
        client_id: format!("{REGISTERED_PREFIX}{}", keys::random_token(18)),
        client_name,
        redirect_uris,
        registered: true,
    };
    let stored = server
        .store
        .create(
            client_key(&client.client_id),
            serde_json::to_value(&client).expect("a client serializes"),
            server.settings.client_idle_ttl,
        )
        .await;
    match stored {
        Ok(true) => {}
        Ok(false) => {
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "try again",
            );
        }
        Err(error) => return store_unavailable(&error),
    }
    tracing::info!(client_id = %client.client_id, "client registered");
    let mut answer = json!({
        "client_id": client.client_id,
        "client_id_issued_at": crate::env::now_ms() / 1000,
        "redirect_uris": client.redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(name) = &client.client_name {
        answer["client_name"] = json!(name);
    }
    if let Some(kind) = application_type {
        answer["application_type"] = json!(kind);
    }
    if let Some(scope) = &request.scope {
        answer["scope"] = json!(scope);
    }
    private_json(StatusCode::CREATED, &answer)
}

pub(crate) fn store_unavailable(error: &super::store::StoreError) -> http::Response<Bytes> {
    tracing::warn!(%error, "authorization server store unavailable");
    let mut response = oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the authorization server cannot reach its store; try again shortly",
    );
    response.headers_mut().insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("2"),
    );
    response
}
