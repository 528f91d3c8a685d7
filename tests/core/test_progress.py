"""Progress notifications for long work: a real SDK client that passes a progress callback hears from the server
while a slow call runs, and hears nothing for quick calls or when it asked for nothing."""

from __future__ import annotations

from dataclasses import replace

import anyio
import pytest
from mcp import Client

from mcp_offload.core import progress as progress_module
from mcp_offload.core.progress import heartbeat
from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.offload_server import OffloadServer, build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.settings import Settings
from support import ERAS

SLOW_JQ = "reduce range(0; 15000000) as $i (0; . + 1)"  # 1.5-5 s of jq work, by machine load


@pytest.mark.parametrize("mode", ERAS)
async def test_a_slow_query_reports_progress(settings: Settings, mode: str) -> None:
    services = build_services(replace(settings, jq_timeout_s=60.0))
    server = build_server(services)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(server, mode=mode) as client:
        stored = await client.call_tool("offload", {"content": '{"a": [1, 2, 3]}'})
        handle = result_of(stored)["handle"]
        quick = await client.call_tool(
            "query_large_output", {"handle": handle, "query": ".a"}, progress_callback=on_progress
        )
        assert not quick.is_error and seen == []  # under a second: nothing sent
        slow = await client.call_tool(
            "query_large_output", {"handle": handle, "query": SLOW_JQ}, progress_callback=on_progress
        )
    await services.aclose()
    assert not slow.is_error, slow
    assert seen, "no progress notification during a multi-second jq run"
    values = [v for v, _, _ in seen]
    assert values == sorted(set(values))  # strictly increasing
    assert all(total == 60.0 for _, total, _ in seen)  # of the jq time limit
    assert all(message and message.startswith("running jq over") for _, _, message in seen)


@pytest.mark.parametrize("mode", ERAS)
async def test_offload_and_search_all_report_progress(
    server: OffloadServer, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress_module, "AFTER_S", 0.0)  # report at once, so ordinary calls show it
    monkeypatch.setattr(progress_module, "EVERY_S", 0.01)
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with Client(server, mode=mode) as client:
        await client.call_tool("offload", {"content": "x\n" * 200_000}, progress_callback=on_progress)
        assert any(m and m.startswith("storing 400,000 characters") for m in seen)
        seen.clear()
        await client.call_tool("search_large_output", {"pattern": "y"}, progress_callback=on_progress)
        assert any(m and m.startswith("searching 1 output(s)") for m in seen)


async def test_no_progress_without_a_token(server: OffloadServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress_module, "AFTER_S", 0.0)
    async with Client(server) as client:
        result = await client.call_tool("offload", {"content": "x\n" * 200_000})  # no callback: no token
    assert not result.is_error


async def test_heartbeat_passes_errors_through_unwrapped() -> None:
    async def report(value: float, total: float | None, message: str | None) -> None:
        pass

    with pytest.raises(ValueError, match="boom"):
        async with heartbeat(report, "work", after_s=0.0, every_s=0.01):
            await anyio.sleep(0.03)
            raise ValueError("boom")
