"""The Python SDK (mcp 2.3.0) peer for benches/side-by-side.sh.

The same three tools with the same JSON answers as test-support/src/tools.rs, on the low-level
`Server` (hand-written JSON schemas, so tools/list matches the other servers), served statelessly
with JSON responses by uvicorn, one worker, on 127.0.0.1 only.

Run with: PORT=3103 python benches/py/server.py
"""

import os

import mcp_types as types
import uvicorn
from mcp.server.lowlevel.server import Server

TOOLS = [
    types.Tool(
        name="echo",
        description="Answers with the message it was sent.",
        input_schema={
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The text to send back."}},
            "required": ["message"],
        },
    ),
    types.Tool(
        name="add",
        description="Adds two integers.",
        input_schema={
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "The first addend."},
                "b": {"type": "integer", "description": "The second addend."},
            },
            "required": ["a", "b"],
        },
    ),
    types.Tool(
        name="upper",
        description="Upper-cases a text.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to upper-case."}},
            "required": ["text"],
        },
    ),
]


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx, params) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return text(str(args["message"]))
    if params.name == "add":
        return text(str(int(args["a"]) + int(args["b"])))
    if params.name == "upper":
        return text(str(args["text"]).upper())
    raise ValueError(f"Unknown tool: {params.name}")


server = Server("bench", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
app = server.streamable_http_app(stateless_http=True, json_response=True)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(os.environ.get("PORT", "3103")), log_level="warning", access_log=False)
