//! Notes kept between calls: two tools on typed handles, each note its caller's own.
//! `cargo run --example notes`; `cargo test --example notes`.
use mcp_lambda::handles::{HandleError, HandleId, Handles};
use mcp_lambda::rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use mcp_lambda::rmcp::{self, ServerHandler, schemars, tool, tool_handler, tool_router};
use mcp_lambda::{App, Caller, Error, Server};

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

#[derive(Clone)]
struct Notes {
    notes: Handles<Note>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Notes {
    #[tool(description = "Write a note. Returns its id.")]
    async fn write_note(&self, c: Caller, n: Parameters<Note>) -> Result<String, HandleError> {
        Ok(self.notes.create(&c, n.0).await?.id.to_string())
    }

    #[tool(description = "Append text to one of your notes. Returns the whole text.")]
    async fn append(&self, c: Caller, a: Parameters<Append>) -> Result<String, HandleError> {
        let (id, text) = (a.0.id, a.0.text);
        let append = |note: &mut Note| note.text.push_str(&text);
        Ok(self.notes.modify(&c, id, append).await?.value.text)
    }
}

#[tool_handler(router = self.tool_router, name = "notes")]
impl ServerHandler for Notes {}

fn server(app: App) -> Server<Notes> {
    let notes = app.handles("note");
    let tool_router = Notes::tool_router();
    app.server(Notes { notes, tool_router })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    server(App::load().await?).run().await
}

#[cfg(test)]
mod tests {
    use mcp_lambda::testing::TestClient;
    use serde_json::json;

    #[tokio::test]
    async fn a_note_is_written_then_appended_to() {
        let app = mcp_lambda::App::open(mcp_lambda::Config::local_default());
        let server = super::server(app.await.unwrap());
        let client = TestClient::new(&server);
        let written = client
            .call_tool("write_note", json!({"text": "milk"}))
            .await;
        let id = written.result()["content"][0]["text"].clone();

        let appended = client
            .call_tool("append", json!({"id": id, "text": ", eggs"}))
            .await;
        assert_eq!(appended.result()["content"][0]["text"], "milk, eggs");

        let missing = client
            .call_tool(
                "append",
                json!({"id": "1b4e28ba-2fa1-4d2e-883f-0016d3cca427", "text": "x"}),
            )
            .await;
        assert_eq!(missing.result()["isError"], true);
    }
}
