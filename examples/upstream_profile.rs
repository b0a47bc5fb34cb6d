//! A tool that calls the identity provider's API as the person calling: `upstream_profile`
//! fetches their profile from the provider's userinfo endpoint with the provider's own access
//! token (for Entra ID that could be Microsoft Graph's `/me`, for Google its People API).
//!
//! It needs the built-in authorization server keeping the provider's tokens:
//!
//! ```sh
//! MCP_AUTH_AUDIENCE=http://127.0.0.1:3000/mcp \
//! MCP_OAUTH_UPSTREAM_ISSUER=https://login.example.com MCP_OAUTH_UPSTREAM_CLIENT_ID=… \
//! MCP_OAUTH_UPSTREAM_CLIENT_SECRET=… MCP_OAUTH_UPSTREAM_TOKENS=true \
//! PROFILE_URL=https://login.example.com/userinfo cargo run --example upstream_profile
//! ```
//!
//! then connect any MCP client: it registers, the person logs in at the provider, and the tool
//! answers with what the provider says of them. The provider's token never reaches the client.

use http_body_util::{BodyExt as _, Empty};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use mcp_lambda::oauth::UpstreamToken;
use mcp_lambda::rmcp::handler::server::router::tool::ToolRouter;
use mcp_lambda::rmcp::{self, ServerHandler, tool, tool_handler, tool_router};

#[derive(Clone)]
struct Profile {
    tool_router: ToolRouter<Self>,
    /// The provider's API: its userinfo endpoint here.
    profile_url: String,
}

#[tool_router]
impl Profile {
    #[tool(description = "Your profile, as your identity provider knows it.")]
    async fn upstream_profile(&self, upstream: UpstreamToken) -> Result<String, String> {
        let token = upstream.access_token().await.map_err(|e| e.to_string())?;
        let client = Client::builder(TokioExecutor::new()).build_http::<Empty<bytes::Bytes>>();
        let request = http::Request::get(&self.profile_url)
            .header("authorization", format!("Bearer {token}"))
            .body(Empty::new())
            .map_err(|e| e.to_string())?;
        let response = client.request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("the provider answered {status}"));
        }
        String::from_utf8(body.to_vec()).map_err(|e| e.to_string())
    }
}

#[tool_handler(router = self.tool_router, name = "upstream-profile")]
impl ServerHandler for Profile {}

#[tokio::main]
async fn main() -> Result<(), mcp_lambda::Error> {
    let config = mcp_lambda::Config::load().await?;
    let profile = Profile {
        tool_router: Profile::tool_router(),
        profile_url: std::env::var("PROFILE_URL")
            .unwrap_or_else(|_| "http://127.0.0.1:9/userinfo".into()),
    };
    mcp_lambda::App::open(config)
        .await?
        .server(profile)
        .run()
        .await
}
