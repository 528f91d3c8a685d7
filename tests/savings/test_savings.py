"""The durable savings record: both backends, several writers, restarts, and the tap on our own tools."""

from __future__ import annotations

import functools
import json
import multiprocessing
import secrets
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.savings import SavingsKey, SavingsRecord, open_savings, summary_json
from mcp_offload.savings.fs import FilesystemSavings
from mcp_offload.savings.record import last_days
from mcp_offload.savings.redis import RedisSavings
from mcp_offload.settings import Settings
from support.store import redis_location

DAY = 86_400.0
T0 = 1_760_000_000.0  # 2025-10-09 UTC


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


Opener = Callable[..., SavingsRecord]


@pytest.fixture(params=["fs", "redis", "cluster"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Opener, Clock]:
    """Opens the savings record of one store location (Redis: under a key prefix of this test alone)."""
    if request.param == "fs":
        return functools.partial(open_savings, str(tmp_path / "store")), Clock()
    url = redis_location(request, request.param)
    return functools.partial(RedisSavings, url, prefix=f"test-{secrets.token_hex(4)}"), Clock()


async def test_counts_add_up_per_day_server_and_tool_across_restarts(backend: tuple[Opener, Clock]) -> None:
    opener, clock = backend
    first = opener(clock=clock, flush_interval_s=3600)
    await first.add("git", "git_log", results_seen=1, results_offloaded=1, tokens_kept_out=900)
    await first.add("git", "git_log", results_seen=1)
    await first.add("", "read_large_output", retrievals=1, tokens_retrieved=150)
    assert (await first.read(1))[SavingsKey("2025-10-09", "git", "git_log")].results_seen == 2  # pending counted
    await first.aclose()  # flushes
    clock.now += DAY
    second = opener(clock=clock, flush_interval_s=0)  # a restart, the next day
    await second.add("git", "git_log", results_seen=1, results_offloaded=1, tokens_kept_out=100)
    await second.add("fs", "write_file", results_seen=1, arguments_by_handle=2, tokens_passed_by_handle=4_000)
    rows = await second.read(2)
    await second.aclose()
    assert rows[SavingsKey("2025-10-09", "git", "git_log")].as_dict() == {
        "results_seen": 2,
        "results_offloaded": 1,
        "tokens_kept_out": 900,
        "retrievals": 0,
        "tokens_retrieved": 0,
        "arguments_by_handle": 0,
        "tokens_passed_by_handle": 0,
        "tokens_net_saved": 900,
    }
    assert rows[SavingsKey("2025-10-10", "git", "git_log")].tokens_kept_out == 100
    passed = rows[SavingsKey("2025-10-10", "fs", "write_file")]
    assert (passed.arguments_by_handle, passed.tokens_passed_by_handle, passed.tokens_net) == (2, 4_000, 4_000)
    doc = summary_json(rows, last_days(2, clock.now))
    assert [d["day"] for d in doc["days"]] == ["2025-10-09", "2025-10-10"]
    assert doc["days"][0]["total"]["tokens_net_saved"] == 750
    assert doc["days"][1]["total"]["tokens_net_saved"] == 4_100
    assert doc["total"] == {
        "results_seen": 4,
        "results_offloaded": 2,
        "tokens_kept_out": 1000,
        "retrievals": 1,
        "tokens_retrieved": 150,
        "arguments_by_handle": 2,
        "tokens_passed_by_handle": 4_000,
        "tokens_net_saved": 4_850,
    }
    today = {SavingsKey("2025-10-10", "git", "git_log"), SavingsKey("2025-10-10", "fs", "write_file")}
    assert set(await opener(clock=clock).read(1)) == today


def _writer(root: str, n: int) -> None:
    async def main() -> None:
        record = FilesystemSavings(root, clock=lambda: T0, flush_interval_s=0)
        for _ in range(n):
            await record.add("s", "t", results_seen=1, tokens_kept_out=7)

    anyio.run(main)


async def test_several_processes_append_without_losing_a_count(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), 300)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        await anyio.to_thread.run_sync(p.join)
    rows = await FilesystemSavings(tmp_path, clock=lambda: T0).read(1)
    assert rows[SavingsKey("2025-10-09", "s", "t")].results_seen == 1200
    assert rows[SavingsKey("2025-10-09", "s", "t")].tokens_kept_out == 8400
    path = tmp_path / "savings" / "2025-10-09.jsonl"
    assert path.stat().st_mode & 0o777 == 0o600
    assert all(json.loads(line)["server"] == "s" for line in path.read_text().splitlines())


async def test_a_failing_backend_never_raises(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "savings").write_text("not a directory")
    record = FilesystemSavings(tmp_path, flush_interval_s=0)
    await record.add("s", "t", results_seen=1)
    await record.add("s", "t", results_seen=1)
    await record.aclose()
    assert [r.message for r in caplog.records if "savings record" in r.message][:1] != []
    unreachable = RedisSavings("redis://127.0.0.1:1/0", flush_interval_s=0)
    await unreachable.add("s", "t", results_seen=1)
    await unreachable.aclose()


async def test_the_null_record_keeps_nothing() -> None:
    record = SavingsRecord()
    await record.add("s", "t", results_seen=1)
    await record.flush()
    assert record.enabled is False and await record.read(1) == {}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_our_tools_feed_the_record(tmp_path: Path, mode: str) -> None:
    """Direct offload counts as kept out; reads count as pulled back; an error counts nothing."""
    settings = Settings(store=str(tmp_path / "store"))
    services = build_services(settings)
    try:
        big = "\n".join(f"line {i} " + "word " * 20 for i in range(2000))
        async with Client(build_server(services), mode=mode) as client:
            stored = await client.call_tool("offload", {"content": big, "name": "big"})
            handle = result_of(stored)["handle"]
            tokens = result_of(stored)["tokens"]
            await client.call_tool("read_large_output", {"handle": handle, "start_line": 1, "end_line": 10})
            await client.call_tool("read_large_output", {"handle": "out_nope"})
    finally:
        await services.aclose()
    rows = await open_savings(settings.store_location()).read(1)
    by_tool = {key.tool: row for key, row in rows.items() if key.server == ""}
    assert set(by_tool) == {"offload", "read_large_output"}
    assert by_tool["offload"].results_offloaded == 1
    assert 0 < tokens - 1000 < by_tool["offload"].tokens_kept_out < tokens
    assert by_tool["read_large_output"].retrievals == 1
    assert 100 < by_tool["read_large_output"].tokens_retrieved < 1000


async def test_a_result_is_tokenized_once_however_many_accountants_ask() -> None:
    """The tap and the proxy's session accounting both count a retrieval result: one tokenization, not two."""
    import mcp.types as types

    from mcp_offload.mcp_server.savings_tap import count_text
    from mcp_offload.tokens import load_counter

    class Counting:
        def __init__(self) -> None:
            self.inner, self.calls = load_counter(), 0

        def count(self, text: str) -> int:
            self.calls += 1
            return self.inner.count(text)

    counter, other = Counting(), Counting()
    result = types.CallToolResult(content=[types.TextContent(type="text", text="hello world " * 50)])
    first = await count_text(counter, result)  # type: ignore[arg-type]
    assert await count_text(counter, result) == first  # type: ignore[arg-type]
    assert counter.calls == 1
    again = types.CallToolResult(content=[types.TextContent(type="text", text="hello world " * 50)])
    assert await count_text(counter, again) == first and counter.calls == 2  # type: ignore[arg-type]  # new object
    assert await count_text(other, again) == first and other.calls == 1  # type: ignore[arg-type]  # other counter
