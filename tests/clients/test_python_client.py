"""An independent client, Python `mcp` 2.3.0, drives the basket example.

`auto` probes `server/discover` and stays on 2026-07-28; `legacy` begins with
`initialize` (2025-11-25) and must be served statelessly by the same endpoint.
"""

import pytest
from mcp.client.client import Client

pytestmark = pytest.mark.anyio

BASKET_TOOLS = {"create_basket", "add_item", "remove_item", "view_basket", "checkout", "place_order", "list_baskets"}


def structured(result):
    assert not result.is_error, result
    assert result.structured_content is not None, result
    return result.structured_content


@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_basket_flow(basket_url, mode, version):
    async with Client(basket_url, mode=mode) as client:
        assert client.protocol_version == version
        tools = await client.list_tools()
        assert BASKET_TOOLS <= {t.name for t in tools.tools}
        create = next(t for t in tools.tools if t.name == "create_basket")
        assert "24" in create.description, "the expiry policy is stated"

        basket_id = structured(await client.call_tool("create_basket", {}))["basket_id"]
        structured(await client.call_tool("add_item", {"basket_id": basket_id, "sku": "apple", "quantity": 3}))
        structured(await client.call_tool("add_item", {"basket_id": basket_id, "sku": "pear", "quantity": 1}))
        view = structured(await client.call_tool("view_basket", {"basket_id": basket_id}))
        items = {i["sku"]: i["quantity"] for i in view["items"]}
        assert items == {"apple": 3, "pear": 1}

        done = structured(await client.call_tool("checkout", {"basket_id": basket_id}))
        assert done["basket_id"] == basket_id

        gone = await client.call_tool("view_basket", {"basket_id": basket_id})
        assert gone.is_error
        assert "create_basket" in gone.content[0].text


async def test_an_unknown_basket_is_a_tool_error_naming_the_fix(basket_url):
    async with Client(basket_url, mode="auto") as client:
        result = await client.call_tool(
            "view_basket", {"basket_id": "00000000-0000-4000-8000-000000000000"}
        )
        assert result.is_error
        assert "create_basket" in result.content[0].text
