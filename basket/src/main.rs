//! The basket server: mcp-lambda's example, a shopping basket kept in handles.
//!
//! Run with: `cargo run --release` (serves http://127.0.0.1:3000/mcp, in-memory baskets, auth
//! off). `MCP_BIND` changes the address and `MCP_HANDLE_TTL_SECS` how long an idle basket lives
//! (default 86400, 24 h). `MCP_HANDLES_TABLE` keeps baskets in DynamoDB instead of memory
//! (endpoint, region and credentials from the standard AWS variables, e.g.
//! `AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000` for DynamoDB Local). On Lambda the same
//! binary reads its settings from the function's environment.
//!
//! ```text
//! curl -s http://127.0.0.1:3000/mcp \
//!   -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
//!   -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: create_basket' \
//!   -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_basket","arguments":{},
//!        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
//!                 "io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//!
//! The tools: `create_basket` returns a `basket_id`; `add_item`, `remove_item`, `view_basket`,
//! `checkout` and `place_order` take it. `place_order` takes a few seconds and reports progress;
//! a client that declares the tasks extension gets it as a durable task (`MCP_TASK_*`; in
//! DynamoDB with `MCP_HANDLES_TABLE`) to poll with `tasks/get` — locally always, on Lambda when
//! `MCP_HANDLES_TABLE` is set (each round then runs in an asynchronous invocation of the same
//! function, which needs `lambda:InvokeFunction` on itself). A basket belongs to the caller's principal and expires after the TTL
//! of inactivity; an expired or unknown `basket_id` gets a tool error telling the caller to
//! create a new basket.
//!
//! Each basket is also a resource, `basket://{basket_id}`, offered as a resource template
//! (`resources/templates/list`); `resources/read` answers it as JSON (`application/json`, the
//! object `view_basket` returns) to its owner only. An unknown, expired, checked-out or malformed
//! id and another caller's basket all get the same resource-not-found error (`-32602`, `data.uri`).
//! `resources/list` is empty: baskets are per caller and are not enumerated. A read does not
//! count as use (the expiry stays where it is). Reads are never public: whatever
//! `MCP_CACHE_RESOURCES_READ` says, their `cacheScope` is `private` (default `0,private`).

use basket::{Basket, KIND, resource, task_policy};
use mcp_lambda::{App, Error, config::Mode};

fn main() -> Result<(), Error> {
    // One thread on on-demand Lambda (one invocation at a time), a worker per core elsewhere.
    mcp_lambda::runtime()?.block_on(serve())
}

async fn serve() -> Result<(), Error> {
    // Reads every MCP_* variable (fetching the request-state key from SSM or Secrets Manager if
    // it is kept there, while the issuer's keys are fetched) and opens the handle store and the
    // change feed: once, during Lambda INIT.
    let mut app = App::load().await?;
    // place_order may run as a durable task: locally on this process's runtime; on Lambda each
    // round is handed to the Lambda service (an asynchronous invocation of this function), which
    // needs a store every invocation shares, so there only with MCP_HANDLES_TABLE.
    let config = app.config();
    let tasks = match config.mode() {
        Mode::Lambda if config.handles().table.is_none() => None,
        _ => Some(config.open_tasks().await?),
    };
    let baskets = app.handles(KIND);
    app = app.resource(resource::resource(&baskets));
    if let Some(tasks) = tasks {
        app = app.tasks(tasks, task_policy);
    }
    app.server(Basket::new(baskets)).run().await
}
