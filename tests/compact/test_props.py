"""Property tests: whatever the history, compaction keeps every message, keeps call/result pairing valid, and every
offloaded result reads back byte-exact; plus the MCP server over stdio sharing a compactor's session."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import MessageParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from mcp_offload import Compactor, ContextWindowExceeded
from mcp_offload.core import outputs
from mcp_offload.mcp_server.tools import result_of
from support.compact import anthropic_turn, big_json, chat_turn, handle_in, responses_turn, set_call_arguments, validate

TURNS = {"anthropic": anthropic_turn, "openai": chat_turn, "responses": responses_turn}
TEXT = st.text(st.characters(codec="utf-8"), min_size=0, max_size=60)


@pytest.fixture(scope="module")
def compactor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compactor]:
    with Compactor(store=str(tmp_path_factory.mktemp("store")), session="props", jq_workers=1) as c:
        yield c


def _result_texts(fmt: str, message: dict[str, Any]) -> list[str]:
    if fmt == "anthropic" and isinstance(message.get("content"), list):
        return [b["content"] for b in message["content"] if b.get("type") == "tool_result"]
    if fmt == "openai" and message.get("role") == "tool":
        return [message["content"]]
    if fmt == "responses" and message.get("type") == "function_call_output":
        return [message["output"]]
    return []


def _read_all(c: Compactor, handle: str) -> str:
    async def run() -> str:
        text, start = "", 1
        while True:
            out = await outputs.read(c.services, c._async.scope, handle, start=start)
            text += out.text
            if out.next_start is None:
                return text
            start = out.next_start

    result: str = c._call(run)
    return result


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    fmt=st.sampled_from(sorted(TURNS)),
    results=st.lists(st.tuples(TEXT, st.integers(0, 400)), min_size=1, max_size=6),
    boundary=st.sampled_from(["all", "last-turn", ("keep-first", 3), ("keep-last", 3)]),
    threshold=st.integers(0, 300),
)
def test_compaction_keeps_everything(
    compactor: Compactor, fmt: str, results: list[tuple[str, int]], boundary: Any, threshold: int
) -> None:
    messages: list[dict[str, Any]] = []
    originals: list[str] = []
    for i, (text, repeat) in enumerate(results):
        body = (text + "\n") * repeat
        originals.append(body)
        messages += TURNS[fmt](f"call_{i}", body, question=f"q{i}" if i % 2 == 0 else None)
    out = compactor.compact(messages, boundary=boundary, threshold_tokens=threshold, format=fmt)
    assert len(out) == len(messages)  # never drops a message
    got = [t for m in out for t in _result_texts(fmt, m)]
    assert len(got) == len(originals)
    for before, after in zip(originals, got, strict=True):
        if after != before:
            assert after.startswith("Stored as out_")
            assert _read_all(compactor, handle_in(after)) == before  # byte-exact
    for m_in, m_out in zip(messages, out, strict=True):  # only tool results change
        if not _result_texts(fmt, m_in):
            assert m_in == m_out
    if fmt == "anthropic":
        TypeAdapter(list[MessageParam]).validate_python(out)
    elif fmt == "openai":
        TypeAdapter(list[ChatCompletionMessageParam]).validate_python(out)
    assert compactor.compact(out, boundary=boundary, threshold_tokens=threshold, format=fmt) == out  # idempotent


def _command() -> str:
    script = Path(sys.executable).with_name("mcp-offload")
    return str(script) if script.exists() else shutil.which("mcp-offload") or "mcp-offload"


async def test_stdio_server_shares_the_compactors_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    big = big_json(3000, "shared")
    with Compactor(store=str(store), session="agent-7", jq_workers=1) as c:
        out = c.compact(anthropic_turn("t1", big, question="q"))
    handle = handle_in(out[2]["content"][0]["content"])
    params = StdioServerParameters(command=_command(), args=["--store", str(store), "--session", "agent-7"])
    async with Client(params, read_timeout_seconds=30) as client:
        listed = result_of(await client.call_tool("list_outputs", {}))
        assert [o["handle"] for o in listed["outputs"]] == [handle]
        r = await client.call_tool("query_large_output", {"handle": handle, "query": ".items[2999].tag", "raw": True})
        assert result_of(r)["result"].strip() == "shared"
    other = StdioServerParameters(command=_command(), args=["--store", str(store)])  # no session: private scope
    async with Client(other, read_timeout_seconds=30) as client:
        r = await client.call_tool("read_large_output", {"handle": handle})
        assert r.is_error


SIZES = st.sampled_from([0, 1, 50, 400, 3000])  # lines of ~8 tokens: nothing, a line, small, over, huge


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    fmt=st.sampled_from(sorted(TURNS)),
    turns=st.lists(st.tuples(SIZES, SIZES, SIZES), min_size=1, max_size=5),  # (user text, call args, result)
    boundary=st.sampled_from(["all", "last-turn", ("keep-first", 3), ("keep-last", 6), ("keep-first", 100)]),
    window=st.integers(1_500, 60_000),
    system=SIZES,
    reserve=st.sampled_from([0, 500, 4000]),
)
def test_with_a_window_it_fits_or_raises(
    compactor: Compactor,
    fmt: str,
    turns: list[tuple[int, int, int]],
    boundary: Any,
    window: int,
    system: int,
    reserve: int,
) -> None:
    messages: list[dict[str, Any]] = []
    for i, (user_lines, arg_lines, result_lines) in enumerate(turns):
        turn = TURNS[fmt](f"call_{i}", f"result line {i}\n" * result_lines, question=f"ask {i}\n" * (user_lines + 1))
        arguments = json.dumps({"patch": f"+ line {i}\n" * arg_lines})
        call = turn[1]
        set_call_arguments(fmt, call, arguments)
        messages += turn
    messages.append({"role": "user", "content": "and now?"})
    prompt = "system rule\n" * system
    try:
        out = compactor.compact(
            messages, boundary=boundary, context_window=window, system=prompt, max_output_tokens=reserve, format=fmt
        )
    except ContextWindowExceeded as error:
        assert error.tokens > window == error.context_window and error.irreducible
        return
    used = compactor.usage(out, system=prompt, max_output_tokens=reserve, format=fmt).tokens
    assert used <= window
    report = compactor.last_report
    assert report is not None and report.tokens_after == used
    validate(fmt, out, compactor.tools(fmt))
