"""Progressive tool discovery (`--lazy-tools`): search_tools, describe_tool, call_tool in front of the router."""

from __future__ import annotations

import json

from mcp import Client

from mcp_offload.core.services import Services
from support import text_of
from support.proxy import fixture_entry, running_proxy


async def test_lazy_tools_search_describe_call(services: Services) -> None:
    config = {"mcpServers": {"fix": fixture_entry(offload={"threshold_tokens": 300})}}
    async with running_proxy(services, config, lazy_tools=True) as server, Client(server) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"search_tools", "describe_tool", "call_tool", "proxy_status", "read_large_output"} <= names
        assert not any(n.startswith("fix__") for n in names)
        found = text_of(await client.call_tool("search_tools", {"query": "process id"}))
        assert found.splitlines()[1].startswith("- fix__pid — This server's process id.")
        described = json.loads(text_of(await client.call_tool("describe_tool", {"name": "fix__json"})))
        assert described["server"] == "fix" and described["inputSchema"]["properties"]["n"] == {"type": "integer"}
        echoed = await client.call_tool("call_tool", {"name": "fix__echo", "arguments": {"name": "lazy"}})
        assert text_of(echoed) == "lazy"
        big = await client.call_tool("call_tool", {"name": "fix__json", "arguments": {"n": 500}})
        assert "Stored as out_" in text_of(big)  # results still go through offloading
        missing = await client.call_tool("describe_tool", {"name": "fix__nope"})
        assert missing.is_error and "search_tools" in text_of(missing)
