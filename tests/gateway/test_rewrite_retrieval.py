"""run_retrieval: the MCP tools' own answers for a gateway session; hostile input is a clear error, never a raise;
an expired handle names the tool call that produced it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, cast

import pytest

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.cachesafe.retrieval import run_retrieval
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.store.fs import FilesystemStore
from support.gateway_core import big_text, client_tools, headers_for, make_body, model_turn, open_services, results_turn
from support.store import FakeClock

POLICY = RewritePolicy(threshold_tokens=200)
TEXT = big_text(random.Random(2), 600, "log") + "\nNEEDLE-42 found here\n"


async def offloaded(services: Any, credential: str = "r") -> tuple[CacheSafeSession, str]:
    api: ApiName = "anthropic"
    messages = [{"role": "user", "content": "go"}, *model_turn(api, [("toolu_9", "bash", {})], "run", 1)]
    messages += results_turn(api, [("toolu_9", TEXT)])
    rewrite = await rewrite_request(
        services, api_named(api), make_body(api, "s", messages, client_tools(api)), headers_for(api, credential), POLICY
    )
    return rewrite.session, rewrite.offloaded[0]


@pytest.fixture
async def services(tmp_path: Path) -> Any:
    async with open_services(tmp_path / "store") as services:
        yield services


async def test_read_search_query_list_answer_like_the_mcp_tools(services: Any) -> None:
    session, handle = await offloaded(services)
    read = await run_retrieval(
        services, session, "read_large_output", {"handle": handle, "start_line": 1, "end_line": 2}
    )
    assert not read.is_error and "log line 0" in read.text and read.tokens > 5
    found = await run_retrieval(
        services, session, "search_large_output", f'{{"pattern": "NEEDLE-\\\\d+", "handle": "{handle}"}}'
    )
    assert not found.is_error and "NEEDLE-42" in found.text
    listed = await run_retrieval(services, session, "list_outputs", None)
    assert handle in listed.text and "bash result toolu_9" in listed.text
    query = await run_retrieval(services, session, "query_large_output", {"handle": handle, "query": "."})
    assert query.is_error and "JSON" in query.text  # a text output: jq refuses with a clear message


HOSTILE: list[tuple[str, Any, str]] = [
    ("offload", {"content": "x"}, "Unknown tool"),
    ("../../etc/passwd", {}, "Unknown tool"),
    ("read_large_output", "{not json", "not valid JSON"),
    ("read_large_output", "[1, 2]", "JSON object"),
    ("read_large_output", 42, "JSON object"),
    ("read_large_output", "x" * 200_000, "small JSON object"),
    ("read_large_output", {"handle": "../../../etc/passwd"}, "not a valid handle"),
    ("read_large_output", {"handle": "out_" + "a" * 26}, "out_"),
    ("read_large_output", {"handle": None}, "Invalid arguments"),
    ("read_large_output", {"handle": "out_x", "evil": 1}, "unknown parameter"),
    ("search_large_output", {"pattern": "(" * 5000}, ""),
    ("query_large_output", {"handle": "out_" + "b" * 26, "query": "input" * 10}, ""),
]


@pytest.mark.parametrize(("name", "arguments", "expected"), HOSTILE)
async def test_hostile_calls_are_clear_errors(services: Any, name: str, arguments: Any, expected: str) -> None:
    session, _ = await offloaded(services)
    answer = await run_retrieval(services, session, name, arguments)
    assert answer.is_error
    assert expected in answer.text
    assert "Traceback" not in answer.text and len(answer.text) < 2_000


async def test_another_sessions_handle_is_unknown_here(services: Any) -> None:
    _, handle = await offloaded(services, "one")
    other, _ = await offloaded(services, "two")
    answer = await run_retrieval(services, other, "read_large_output", {"handle": handle})
    assert answer.is_error and "no output" in answer.text
    assert "held the result" not in answer.text  # no oracle about another session's outputs


async def test_an_expired_handle_names_the_tool_call_that_produced_it(tmp_path: Path) -> None:
    clock = FakeClock()
    async with open_services(tmp_path / "store", store_ttl_s=60) as services:
        cast(FilesystemStore, services.store).clock = clock  # the store's lifecycle clock
        session, handle = await offloaded(services)
        clock.advance(3600)
        await services.store.sweep()
        answer = await run_retrieval(services, session, "read_large_output", {"handle": handle})
        assert answer.is_error
        assert "expired" in answer.text.lower() or "no longer" in answer.text.lower()
        assert "tool call toolu_9 (bash)" in answer.text and "Run that tool again" in answer.text
