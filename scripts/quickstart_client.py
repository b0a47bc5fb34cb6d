"""The README's quick start (a notes server in a crate of its own), called by a real client:
the Python `mcp` 2.3.0 SDK. Usage: quickstart_client.py URL. Exits non-zero on the first
failed check."""

import json
import sys

import anyio
from mcp.client.client import Client
from mcp.shared.subscriptions import ResourceUpdated

URL = sys.argv[1]


async def main():
    async with Client(URL, mode="2026-07-28") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"write_note", "append", "list_notes"}, tools
        templates = await client.list_resource_templates()
        assert [t.uri_template for t in templates.resource_templates] == ["notes://{id}"], templates

        written = await client.call_tool("write_note", {"text": "milk"})
        assert not written.is_error, written
        note_id = written.content[0].text
        uri = f"notes://{note_id}"
        missing = "notes://00000000-0000-4000-8000-000000000000"

        events = []
        async with client.listen(resource_subscriptions=[uri, missing]) as sub:
            # The unknown note is left out, silently; the real one is watched.
            assert list(sub.honored.resource_subscriptions or []) == [uri], sub.honored
            async with Client(URL, mode="2026-07-28") as writer:
                appended = await writer.call_tool("append", {"id": note_id, "text": ", eggs"})
                assert appended.content[0].text == "milk, eggs", appended
            # The stream ends with its result at MCP_LISTEN_MAX_SECS.
            with anyio.fail_after(15):
                async for event in sub:
                    events.append(event)
        assert [e.uri for e in events if isinstance(e, ResourceUpdated)] == [uri], events

        read = await client.read_resource(uri)
        assert json.loads(read.contents[0].text) == {"text": "milk, eggs"}, read
        try:
            await client.read_resource(missing)
        except Exception as error:  # the SDK raises the JSON-RPC error
            assert "not found" in str(error).lower(), error
        else:
            raise AssertionError("an unknown note was read")
        wrong = await client.call_tool("append", {"id": missing[8:], "text": "x"})
        assert wrong.is_error and "no such handle" in wrong.content[0].text, wrong
        listed = await client.call_tool("list_notes", {})
        assert not listed.is_error, listed
        assert listed.structured_content["notes"] == [[note_id, "milk, eggs"]], listed
        forged = await client.call_tool("list_notes", {"cursor": "AAAA"})
        assert forged.is_error and "cursor" in forged.content[0].text, forged
    print("quickstart client: every check passed")


anyio.run(main)
