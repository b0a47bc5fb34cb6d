//! A user's own server, written as the README writes it: `#[tool_handler]` alone, typed
//! handles, a handle resource, `Caller` as a tool argument, called with `TestClient`. What the
//! library adds with no plumbing: the capabilities listen needs, the template, owner-only reads,
//! listen on a note, errors that name what is missing.

use mcp_lambda_test_support as support;

use std::time::Duration;

use mcp_lambda::handles::{HandleError, HandleId, Handles};
use mcp_lambda::rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use mcp_lambda::rmcp::{self, ServerHandler, schemars, tool, tool_handler, tool_router};
use mcp_lambda::testing::TestClient;
use mcp_lambda::{App, Caller, Server, handler::HandleResource};
use serde_json::{Value, json};
use support::fixture::config;
use support::jwt::{Issuer, TestKey};

const AUDIENCE: &str = "http://127.0.0.1:3000/mcp";

#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Id {
    id: HandleId,
}

#[derive(Clone)]
struct Notes {
    notes: Handles<Note>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Notes {
    #[tool(description = "Write a note; returns its id.")]
    async fn write(&self, caller: Caller, note: Parameters<Note>) -> Result<String, HandleError> {
        Ok(self.notes.create(&caller, note.0).await?.id.to_string())
    }

    #[tool(description = "Who am I?")]
    fn whoami(&self, caller: Caller) -> String {
        format!("{}|{}", caller.owner_key(), caller.scopes().join(" "))
    }

    #[tool(description = "Delete a note.")]
    async fn forget(&self, caller: Caller, id: Parameters<Id>) -> Result<String, HandleError> {
        self.notes.delete(&caller, id.0.id).await?;
        Ok("forgotten".into())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Notes {}

async fn notes(vars: &[(&str, &str)]) -> Server<Notes> {
    let app = App::open(config(vars)).await.unwrap();
    let notes = app.handles("note");
    app.resource(HandleResource::new("notes://{id}", &notes))
        .server(Notes {
            notes,
            tool_router: Notes::tool_router(),
        })
}

fn text(answer: &mcp_lambda::testing::TestResponse) -> String {
    answer.result()["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {:?}", answer.messages))
        .to_owned()
}

#[tokio::test]
async fn the_library_announces_what_listen_and_the_resource_need() {
    let server = notes(&[]).await;
    let client = TestClient::new(&server);
    let discovered = client.request("server/discover", json!({})).await;
    let capabilities = &discovered.result()["capabilities"];
    assert_eq!(capabilities["tools"]["listChanged"], true, "{capabilities}");
    assert_eq!(
        capabilities["resources"]["subscribe"], true,
        "{capabilities}"
    );
    let templates = client.request("resources/templates/list", json!({})).await;
    let templates = &templates.result()["resourceTemplates"];
    assert_eq!(templates[0]["uriTemplate"], "notes://{id}", "{templates}");
    assert_eq!(templates[0]["mimeType"], "application/json");
    let listed = client.request("resources/list", json!({})).await;
    assert_eq!(
        listed.result()["resources"],
        json!([]),
        "handles are never listed"
    );
}

#[tokio::test]
async fn without_a_feed_or_resources_nothing_is_announced_and_reads_stay_unknown() {
    // App::new: no store, no feed; a tools-only server answers as before.
    let server = App::new(config(&[])).server(Notes {
        notes: Handles::new(
            mcp_lambda::handles::memory(),
            "note",
            Duration::from_secs(60),
        ),
        tool_router: Notes::tool_router(),
    });
    let client = TestClient::new(&server);
    let discovered = client.request("server/discover", json!({})).await;
    let capabilities = &discovered.result()["capabilities"];
    assert!(capabilities.get("resources").is_none(), "{capabilities}");
    assert!(
        capabilities["tools"].get("listChanged").is_none(),
        "{capabilities}"
    );
    let read = client.read_resource("notes://x").await;
    assert_eq!(
        read.error()["code"],
        -32601,
        "no resources: the method is not served"
    );
    let listen = client
        .listen(json!({"resourceSubscriptions": ["notes://x"]}))
        .await
        .read_all()
        .await;
    assert!(
        listen.json().get("error").is_some(),
        "{:?}",
        listen.messages
    );
}

#[tokio::test]
async fn a_filter_that_leaves_nothing_to_watch_says_why() {
    let server = notes(&[]).await;
    let client = TestClient::new(&server);
    let answer = client
        .listen(json!({
            "promptsListChanged": true,
            "resourceSubscriptions": ["notes://1b4e28ba-2fa1-4d2e-883f-0016d3cca427"]
        }))
        .await
        .read_all()
        .await;
    assert_eq!(answer.status, 400);
    let error = answer.error();
    assert_eq!(error["code"], -32602);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("promptsListChanged") && message.contains("prompts.listChanged"),
        "{message}"
    );
    assert!(
        message.contains("not yours") && message.contains("1 URIs"),
        "{message}"
    );

    // A server whose handler serves no resource and has no rule names the capability.
    let bare = App::open(config(&[])).await.unwrap().server(Notes {
        notes: Handles::new(
            mcp_lambda::handles::memory(),
            "note",
            Duration::from_secs(60),
        ),
        tool_router: Notes::tool_router(),
    });
    let answer = TestClient::new(&bare)
        .listen(json!({"resourceSubscriptions": ["notes://x"]}))
        .await
        .read_all()
        .await;
    let message = answer.error()["message"].as_str().unwrap().to_owned();
    assert!(message.contains("resources.subscribe"), "{message}");
    assert!(message.contains("App::resource"), "{message}");
}

#[tokio::test]
async fn a_note_is_its_owners_and_reads_private_whatever_the_deployment_asks() {
    let keys = [TestKey::rsa("rsa-1")];
    let issuer = Issuer::start(&keys.iter().collect::<Vec<_>>()).await;
    let server = notes(&[
        ("MCP_AUTH_ISSUER", issuer.url.as_str()),
        ("MCP_AUTH_AUDIENCE", AUDIENCE),
        ("MCP_CACHE_RESOURCES_READ", "60,public"),
    ])
    .await;
    let token = |who: &str, scope: &str| keys[0].sign(&issuer.claims(AUDIENCE, who, scope));
    let alice = TestClient::new(&server).with_token(token("alice", "notes:write"));
    let mallory = TestClient::new(&server).with_token(token("mallory", ""));

    let who = text(&alice.call_tool("whoami", json!({})).await);
    assert_eq!(who, format!("{}#alice|notes:write", issuer.url));

    let id = text(&alice.call_tool("write", json!({"text": "secret"})).await);
    let uri = format!("notes://{id}");
    let read = alice.read_resource(&uri).await;
    assert_eq!(read.result()["contents"][0]["text"], r#"{"text":"secret"}"#);
    assert_eq!(read.result()["cacheScope"], "private");
    let cache_control = read.header("cache-control").unwrap_or_default();
    assert!(cache_control.contains("private"), "{cache_control}");

    let foreign = mallory.read_resource(&uri).await;
    let unknown = mallory
        .read_resource("notes://1b4e28ba-2fa1-4d2e-883f-0016d3cca427")
        .await;
    let malformed = mallory.read_resource("notes://nope").await;
    let shape = |e: &Value| (e["code"].clone(), e["message"].clone());
    assert_eq!(
        shape(foreign.error()),
        (json!(-32602), json!("Resource not found"))
    );
    assert_eq!(shape(foreign.error()), shape(unknown.error()));
    assert_eq!(shape(foreign.error()), shape(malformed.error()));
    assert_eq!(foreign.error()["data"]["uri"], json!(uri));

    // Another caller cannot delete it, and the answer is the one a missing note gets.
    let theirs = mallory.call_tool("forget", json!({"id": id})).await;
    assert_eq!(theirs.result()["isError"], true);
    assert!(
        text(&theirs).contains("no such handle"),
        "{}",
        text(&theirs)
    );
    assert_eq!(alice.read_resource(&uri).await.status, 200, "still there");
    let mine = alice.call_tool("forget", json!({"id": id})).await;
    assert_eq!(text(&mine), "forgotten");
    assert_eq!(alice.read_resource(&uri).await.error()["code"], -32602);
}
