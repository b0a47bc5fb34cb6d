"""The starter (starter/, copied out of tree), called by a real client: the Python `mcp` 2.3.0
SDK. Usage: starter_client.py URL. Exits non-zero on the first failed check."""

import json
import sys

import anyio
from mcp.client.client import Client

URL = sys.argv[1]


async def main():
    async with Client(URL, mode="2026-07-28") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"add_todo"}, tools
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["todo://{id}"], templates
        added = await client.call_tool("add_todo", {"text": "ship it"})
        assert not added.is_error, added
        read = await client.read_resource(f"todo://{added.content[0].text}")
        assert json.loads(read.contents[0].text) == {"text": "ship it"}, read
    print("starter client: every check passed")


anyio.run(main)
