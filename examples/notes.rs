//! Notes kept between calls: three tools on typed handles, each note a resource (`notes://{id}`)
//! its owner reads and listens to. `cargo run --example notes`; `cargo test --example notes`.
use mcp_lambda::handles::{HandleError, HandleId, Handles};
use mcp_lambda::rmcp::handler::server::{
    router::tool::ToolRouter,
    wrapper::{Json, Parameters},
};
use mcp_lambda::rmcp::{self, ServerHandler, schemars, tool, tool_handler, tool_router};
use mcp_lambda::{App, Caller, Error, Server, handler::HandleResource};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Note {
    /// The note's text.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Append {
    /// The id `write_note` returned.
    id: HandleId,
    /// Text to add at the end.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Cursor {
    /// The `next_cursor` of the page before; leave it out for your newest notes.
    cursor: Option<String>,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct NotePage {
    /// Your notes on this page, newest first, as `[id, text]`.
    notes: Vec<(HandleId, String)>,
    /// Pass it back as `cursor` for the next page; null on the last one.
    next_cursor: Option<String>,
}

#[derive(Clone)]
struct Notes {
    notes: Handles<Note>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Notes {
    #[tool(description = "Write a note. Returns its id; read it as notes://{id}.")]
    async fn write_note(&self, c: Caller, n: Parameters<Note>) -> Result<String, HandleError> {
        Ok(self.notes.create(&c, n.0).await?.id.to_string())
    }

    #[tool(description = "Append text to one of your notes. Returns the whole text.")]
    async fn append(&self, c: Caller, a: Parameters<Append>) -> Result<String, HandleError> {
        let (id, text) = (a.0.id, a.0.text);
        let append = |note: &mut Note| note.text.push_str(&text);
        Ok(self.notes.modify(&c, id, append).await?.value.text)
    }

    #[tool(description = "List your notes, newest first, a page at a time.")]
    async fn list_notes(
        &self,
        c: Caller,
        p: Parameters<Cursor>,
    ) -> Result<Json<NotePage>, HandleError> {
        let page = self.notes.list(&c, p.0.cursor.as_deref()).await?;
        let notes = page
            .items
            .into_iter()
            .map(|n| (n.id, n.value.text))
            .collect();
        Ok(Json(NotePage {
            notes,
            next_cursor: page.next_cursor,
        }))
    }
}

#[tool_handler(router = self.tool_router, name = "notes")]
impl ServerHandler for Notes {}

fn server(app: App) -> Server<Notes> {
    let notes = app.handles("note");
    let tool_router = Notes::tool_router();
    app.resource(HandleResource::new("notes://{id}", &notes))
        .server(Notes { notes, tool_router })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    server(App::load().await?).run().await
}

#[cfg(test)]
mod tests {
    use mcp_lambda::testing::TestClient;
    use serde_json::json;
    use std::time::Duration;

    #[tokio::test]
    async fn a_note_is_written_appended_read_and_listened_to() {
        let app = mcp_lambda::App::open(mcp_lambda::Config::local_default());
        let server = super::server(app.await.unwrap());
        let client = TestClient::new(&server);
        let written = client
            .call_tool("write_note", json!({"text": "milk"}))
            .await;
        let id = written.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let uri = format!("notes://{id}");

        let mut listen = client.listen(json!({"resourceSubscriptions": [uri]})).await;
        let ack = tokio::time::timeout(Duration::from_secs(5), listen.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            ack["params"]["notifications"]["resourceSubscriptions"],
            json!([uri])
        );

        let appended = client
            .call_tool("append", json!({"id": id, "text": ", eggs"}))
            .await;
        assert_eq!(appended.result()["content"][0]["text"], "milk, eggs");
        let updated = tokio::time::timeout(Duration::from_secs(5), listen.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(updated["method"], "notifications/resources/updated");
        assert_eq!(updated["params"]["uri"], uri);

        let read = client.read_resource(&uri).await;
        assert_eq!(
            read.result()["contents"][0]["text"],
            r#"{"text":"milk, eggs"}"#
        );
        let unknown = client
            .read_resource("notes://1b4e28ba-2fa1-4d2e-883f-0016d3cca427")
            .await;
        assert_eq!(unknown.error()["code"], -32602);
        let missing = client
            .call_tool(
                "append",
                json!({"id": "1b4e28ba-2fa1-4d2e-883f-0016d3cca427", "text": "x"}),
            )
            .await;
        assert_eq!(missing.result()["isError"], true);
    }
}
