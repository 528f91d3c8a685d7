"""When the store cannot take a large upstream result, the result is not lost: inline with a note, or cut at the
hard cap with a marker. Driven through the real proxy, a real upstream and a real store that is over its quota."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.proxy.fallback import FALLBACK_MAX_CHARS
from mcp_offload.settings import Settings
from support import ERAS, text_block, text_of
from support.proxy import fixture_entry, running_proxy


@pytest.mark.parametrize("mode", ERAS)
async def test_store_full_passes_the_result_inline(tmp_path: Path, mode: str) -> None:
    # a session quota of 4 KB: any offload of the ~30 KB result below fails with StoreFull
    settings = Settings(store=str(tmp_path / "store"), store_session_max_bytes=4096)
    services = build_services(settings)
    config = {"offload": {"threshold_tokens": 200}, "mcpServers": {"fix": fixture_entry()}}
    try:
        async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
            direct = json.dumps({"items": [{"id": i, "even": i % 2 == 0} for i in range(1000)]})
            r = await client.call_tool("fix__json", {"n": 1000})
            assert not r.is_error
            note, body = text_block(r.content[0]), text_block(r.content[1])
            assert "could not be stored" in note and "shown inline in full" in note
            assert body == direct  # nothing lost
            assert result_of(await client.call_tool("list_outputs", {}))["outputs"] == []

            r = await client.call_tool("fix__json", {"n": 10})  # small results still pass through unchanged
            assert text_of(r) == json.dumps({"items": [{"id": i, "even": i % 2 == 0} for i in range(10)]})
    finally:
        await services.aclose()


async def test_over_the_hard_cap_it_is_cut_with_a_marker(tmp_path: Path) -> None:
    settings = Settings(store=str(tmp_path / "store"), store_session_max_bytes=4096)
    services = build_services(settings)
    config = {"offload": {"threshold_tokens": 200}, "mcpServers": {"fix": fixture_entry()}}
    n = 6000  # ~150 KB of JSON: over FALLBACK_MAX_CHARS
    try:
        async with running_proxy(services, config) as server, Client(server) as client:
            full = json.dumps({"items": [{"id": i, "even": i % 2 == 0} for i in range(n)]})
            assert len(full) > FALLBACK_MAX_CHARS
            r = await client.call_tool("fix__json", {"n": n})
            note, body = text_block(r.content[0]), text_block(r.content[1])
            assert "over the 100,000-character inline cap" in note and "Ask the tool for less" in note
            shown, marker = body[:FALLBACK_MAX_CHARS], body[FALLBACK_MAX_CHARS:]
            assert shown == full[:FALLBACK_MAX_CHARS]
            assert f"{len(full) - FALLBACK_MAX_CHARS:,} more characters of this block not shown" in marker
    finally:
        await services.aclose()


async def test_a_result_over_the_size_cap_is_not_met_with_advice_the_model_cannot_follow(tmp_path: Path) -> None:
    """Direct `offload` of oversized content says to split it; an upstream's result is not the model's to split."""
    settings = Settings(store=str(tmp_path / "store"), max_output_bytes=10_000)
    services = build_services(settings)
    config = {"offload": {"threshold_tokens": 200}, "mcpServers": {"fix": fixture_entry()}}
    try:
        async with running_proxy(services, config) as server, Client(server) as client:
            r = await client.call_tool("fix__json", {"n": 1000})
            note = text_block(r.content[0])
            assert "could not be stored" in note and "over this server's cap of 10,000 bytes" in note
            assert "Split" not in note and "offload each" not in note
            direct = await client.call_tool("offload", {"content": "x" * 20_000})
            assert direct.is_error and "Split it into parts and offload each." in text_of(direct)
    finally:
        await services.aclose()
