"""subscriptions/listen with the official Python SDK (mcp 2.3.0) as the client.

The SDK tells a graceful close (the server's empty `subscriptions/listen` result) from a cut
stream (`SubscriptionLost`), so these tests see exactly what a real client sees.
"""

import json
import time

import anyio
import pytest
from mcp.client.client import Client
from mcp.shared.subscriptions import ResourceUpdated

from conftest import basket

pytestmark = pytest.mark.anyio


def basket_id(result) -> str:
    return json.loads(result.content[0].text)["basket_id"]


async def test_a_listener_hears_of_its_basket_and_the_stream_ends_gracefully():
    with basket(MCP_LISTEN_MAX_SECS="3") as url:
        async with Client(url, mode="2026-07-28") as client:
            created = await client.call_tool("create_basket", {})
            uri = f"basket://{basket_id(created)}"
            other = f"basket://{basket_id(await client.call_tool('create_basket', {}))}"
            missing = "basket://00000000-0000-4000-8000-000000000000"
            events = []
            opened = time.monotonic()
            async with client.listen(resource_subscriptions=[uri, missing]) as sub:
                # A basket that does not exist is not honoured; nothing says why.
                assert list(sub.honored.resource_subscriptions or []) == [uri]
                async with Client(url, mode="2026-07-28") as writer:
                    await writer.call_tool("add_item", {"basket_id": uri[9:], "sku": "TEA", "quantity": 1})
                    await writer.call_tool("add_item", {"basket_id": other[9:], "sku": "TEA", "quantity": 1})
                # The loop ends when the server closes the stream with its result at
                # MCP_LISTEN_MAX_SECS; a cut stream would raise SubscriptionLost instead.
                with anyio.fail_after(10):
                    async for event in sub:
                        events.append(event)
            lasted = time.monotonic() - opened
    assert [e.uri for e in events if isinstance(e, ResourceUpdated)] == [uri], events
    assert 2.5 < lasted < 8, lasted
