"""The README's quick start (a notes server in a crate of its own), called by a real client:
the Python `mcp` 2.3.0 SDK. Usage: quickstart_client.py URL. Exits non-zero on the first
failed check."""

import sys

import anyio
from mcp.client.client import Client

URL = sys.argv[1]


async def main():
    async with Client(URL, mode="2026-07-28") as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert tools == {"write_note", "append"}, tools

        written = await client.call_tool("write_note", {"text": "milk"})
        assert not written.is_error, written
        note_id = written.content[0].text
        # Another connection, the same (anonymous) caller: the note is kept between calls.
        async with Client(URL, mode="2026-07-28") as writer:
            appended = await writer.call_tool("append", {"id": note_id, "text": ", eggs"})
            assert appended.content[0].text == "milk, eggs", appended
        again = await client.call_tool("append", {"id": note_id, "text": "!"})
        assert again.content[0].text == "milk, eggs!", again

        missing = "00000000-0000-4000-8000-000000000000"
        wrong = await client.call_tool("append", {"id": missing, "text": "x"})
        assert wrong.is_error and "no such handle" in wrong.content[0].text, wrong
    print("quickstart client: every check passed")


anyio.run(main)
