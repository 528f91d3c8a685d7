"""Savings accounting: tokens kept out of the context against tokens pulled back by the retrieval tools."""

from __future__ import annotations

import mcp.types as types
from mcp import Client

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.tools import result_of
from support import text_of
from support.proxy import fixture_entry, running_proxy


async def test_savings_stats_count_both_ways(services: Services) -> None:
    config = {"mcpServers": {"fix": fixture_entry(offload={"threshold_tokens": 300})}}
    async with running_proxy(services, config) as server, Client(server) as client:
        await client.call_tool("fix__echo", {"name": "small"})
        big = await client.call_tool("fix__json", {"n": 2000})
        handle = next(str(b.uri) for b in big.content if isinstance(b, types.ResourceLink)).rsplit("/", 1)[1]
        read = await client.call_tool("read_large_output", {"handle": handle, "start": 1, "end": 2000})
        query = await client.call_tool("query_large_output", {"handle": handle, "query": ".items | length"})
        savings = result_of(await client.call_tool("proxy_status", {}))["savings"]
        count = services.tokens.count
        assert savings["results_offloaded"] == 1 and savings["results_passed_through"] == 1
        assert savings["tokens_offloaded"] > 20_000 and savings["tokens_in_references"] == count(text_of(big))
        assert savings["retrievals"] == 2
        assert savings["tokens_retrieved"] == count(text_of(read)) + count(text_of(query))
        assert savings["tokens_net_saving"] == savings["tokens_kept_out"] - savings["tokens_retrieved"]
