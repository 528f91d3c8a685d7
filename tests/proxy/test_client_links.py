"""A stored result's resource link, per client: Claude Code shows its model a link as text of its own
("[Resource link: NAME] URI", about 47 tokens a turn for one output), which the proxy's reply already says by its
handle, so it gets none; every other client gets one per stored output (issue 34: the lookup history)."""

from __future__ import annotations

import re

import mcp.types as types
import pytest
from mcp import Client

from mcp_offload.core.services import Services
from support import ERAS, text_of
from support.proxy import fixture_entry, running_proxy

CONFIG = {"mcpServers": {"fix": fixture_entry(offload={"threshold_tokens": 300})}}
CLAUDE_CODE = [
    types.Implementation(name="claude-code", version="2.1.328"),
    types.Implementation(name="claude-code", version="2.0.1"),  # before the size hint: its other cap, same links
]


def _links(result: types.CallToolResult) -> list[types.ResourceLink]:
    return [block for block in result.content if isinstance(block, types.ResourceLink)]


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("client_info", CLAUDE_CODE, ids=lambda info: info.version)
async def test_claude_code_gets_the_handle_without_a_link(
    services: Services, mode: str, client_info: types.Implementation
) -> None:
    async with (
        running_proxy(services, CONFIG) as server,
        Client(server, mode=mode, client_info=client_info) as client,
    ):
        big = await client.call_tool("fix__json", {"n": 2000})
        assert not big.is_error and _links(big) == []
        found = re.search(r"\bout_[a-z0-9]+", text_of(big))
        assert found is not None, text_of(big)
        handle = found[0]
        read = await client.call_tool("read_large_output", {"handle": handle, "start": 1, "end": 3})
        assert not read.is_error and text_of(read)  # the handle in the reply is all the model needs


@pytest.mark.parametrize("mode", ERAS)
async def test_other_clients_get_a_link_per_stored_output(services: Services, mode: str) -> None:
    other = types.Implementation(name="some-client", version="1.0")
    async with (
        running_proxy(services, CONFIG) as server,
        Client(server, mode=mode, client_info=other) as client,
    ):
        big = await client.call_tool("fix__json", {"n": 2000})
        links = _links(big)
        assert len(links) == 1 and str(links[0].uri).startswith("offload://outputs/out_")
        assert str(links[0].uri).rsplit("/", 1)[1] in text_of(big)
