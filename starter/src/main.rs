//! Your MCP server: start from here. `cargo run` serves http://127.0.0.1:3000/mcp, `cargo test`
//! calls it in process, `sam build && sam deploy` puts it on AWS Lambda.
use mcp_lambda::handles::{HandleError, Handles};
use mcp_lambda::rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use mcp_lambda::rmcp::{self, ServerHandler, schemars, tool, tool_handler, tool_router};
use mcp_lambda::{App, Caller, Error, Server, handler::HandleResource};

/// What a handle keeps between calls: one to-do of its owner's.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Todo {
    /// What to do.
    text: String,
}

#[derive(Clone)]
struct MyServer {
    todos: Handles<Todo>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl MyServer {
    #[tool(description = "Write down a to-do. Returns its id; read it as todo://{id}.")]
    async fn add_todo(
        &self,
        caller: Caller,
        todo: Parameters<Todo>,
    ) -> Result<String, HandleError> {
        Ok(self.todos.create(&caller, todo.0).await?.id.to_string())
    }
}

// `serverInfo`: this crate's name (written by `cargo lambda new`) and version.
#[tool_handler(router = self.tool_router, name = "{{ project_name }}")]
impl ServerHandler for MyServer {}

fn server(app: App) -> Server<MyServer> {
    let todos = app.handles("todo");
    let tool_router = MyServer::tool_router();
    app.resource(HandleResource::new("todo://{id}", &todos))
        .server(MyServer { todos, tool_router })
}

// One thread on on-demand Lambda (one invocation at a time), a worker per core elsewhere.
fn main() -> Result<(), Error> {
    mcp_lambda::runtime()?.block_on(async { server(App::load().await?).run().await })
}

#[cfg(test)]
mod tests {
    use mcp_lambda::testing::TestClient;
    use serde_json::json;

    #[tokio::test]
    async fn a_todo_is_written_down_and_read_back_by_its_owner() {
        let app = mcp_lambda::App::open(mcp_lambda::Config::local_default());
        let server = super::server(app.await.unwrap());
        let client = TestClient::new(&server);
        let added = client
            .call_tool("add_todo", json!({"text": "ship it"}))
            .await;
        let id = added.result()["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned();
        let read = client.read_resource(&format!("todo://{id}")).await;
        assert_eq!(
            read.result()["contents"][0]["text"],
            r#"{"text":"ship it"}"#
        );
        let unknown = client
            .read_resource("todo://1b4e28ba-2fa1-4d2e-883f-0016d3cca427")
            .await;
        assert_eq!(unknown.error()["code"], -32602);
    }
}
