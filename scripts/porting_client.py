"""docs/porting.md's counter (after) called by a real client, the Python `mcp` 2.3.0 SDK, over
two processes of it. Usage: porting_client.py alternate|restarted URL_A URL_B. Exits non-zero on
the first failed check."""

import sys

import anyio
from mcp.client.client import Client

MODE, URL_A, URL_B = sys.argv[1:4]


async def text(client, tool):
    result = await client.call_tool(tool, {})
    assert not result.is_error, result
    return result.content[0].text


async def main():
    async with Client(URL_A, mode="2026-07-28") as a, Client(URL_B, mode="2026-07-28") as b:
        if MODE == "alternate":
            # A new table: the first increment creates the caller's counter, wherever it lands.
            seen = [await text((a, b)[i % 2], "increment") for i in range(6)]
            assert seen == ["1", "2", "3", "4", "5", "6"], seen
            assert await text(a, "get_value") == "6"
            assert await text(b, "get_value") == "6"
        else:
            assert await text(a, "get_value") == "6"
            assert await text(b, "increment") == "7"
            assert await text(a, "get_value") == "7"
    print(f"porting client ({MODE}): every check passed")


anyio.run(main)
