"""The Compactor's guarantees (issue 18): with a window the request fits or `ContextWindowExceeded` names what could
not be reduced; the budget counts system, tools and the output reserve; the last-resort steps run in their
documented order; edits in place are seen; the transcript note keeps roles alternating (checked by the validating
upstream's own validators, all three APIs)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcp_offload import AsyncCompactor, Compactor, ContextWindowExceeded, OffloadError
from mcp_offload.apis.message import OFFLOADED_ARGUMENTS
from support.compact import (
    anthropic_turn,
    big_json,
    chat_turn,
    read_whole,
    responses_turn,
    set_call_arguments,
    validate,
)

TURNS = {"anthropic": anthropic_turn, "openai": chat_turn, "responses": responses_turn}


@pytest.fixture
async def compactor(tmp_path: Path) -> AsyncIterator[AsyncCompactor]:
    c = AsyncCompactor(store=str(tmp_path / "store"), session="guarantees", jq_workers=1)
    try:
        yield c
    finally:
        await c.aclose()


def user(fmt: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
async def test_transcript_note_keeps_roles_alternating(compactor: AsyncCompactor, fmt: str) -> None:
    turn = TURNS[fmt]
    chat: list[dict[str, Any]] = []
    for i in range(12):
        chat += turn(f"c{i}", "short result " * 200, question=f"question {i} " + "words " * 200)
    chat.append(user(fmt, "the last question"))
    out = await compactor.compact(chat, context_window=6000, max_output_tokens=500)
    report = compactor.last_report
    assert report is not None and report.transcript is not None and report.fits
    roles = [m.get("role") for m in out if m.get("type") in (None, "message")]
    assert all(not (a == b == "user") for a, b in itertools.pairwise(roles)), roles
    validate(fmt, out, compactor.tools(fmt))
    note = json.dumps(out[0], ensure_ascii=False)
    assert "[Earlier conversation: messages 0–" in note and report.transcript in note
    stored = [json.loads(line) for line in (await read_whole(compactor, report.transcript)).splitlines()]
    assert stored == chat[: len(stored)]


async def test_fixed_part_counts_and_cannot_be_reduced(compactor: AsyncCompactor) -> None:
    chat = anthropic_turn("c1", "ok", question="hi")
    system = "You are terse. " * 2000  # ~8k tokens
    tools = [{"name": "fetch", "description": "get a page " * 50, "input_schema": {"type": "object"}}]
    base = await compactor.usage(chat, retrieval_tools=False)
    counted = await compactor.usage(chat, system=system, tools=tools, max_output_tokens=4000)
    assert counted.fixed_tokens > 4000 + 6000 and counted.tokens == base.tokens + counted.fixed_tokens
    with pytest.raises(ContextWindowExceeded) as caught:
        await compactor.compact(chat, context_window=10_000, system=system, tools=tools, max_output_tokens=4000)
    error = caught.value
    assert isinstance(error, OffloadError) and error.code == "context_window_exceeded"
    assert error.context_window == 10_000 and error.tokens > 10_000
    text = str(error)
    for part in ("the system prompt", "your tool definitions", "the five retrieval tools", "max_output_tokens"):
        assert part in text, text
    assert "Traceback" not in text


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
async def test_kept_results_are_offloaded_rather_than_overflowing(compactor: AsyncCompactor, fmt: str) -> None:
    """("keep-last", 6) used to send 2.2 M tokens against a 20 k window with only fits=False in the report."""
    chat: list[dict[str, Any]] = []
    for i in range(3):
        chat += TURNS[fmt](f"c{i}", big_json(3000, tag=str(i)), question=f"q{i}")
    before = (await compactor.usage(chat)).tokens
    out = await compactor.compact(chat, boundary=("keep-last", 6), context_window=20_000)
    after = (await compactor.usage(out)).tokens
    assert before > 100_000 and after <= 20_000
    validate(fmt, out, compactor.tools(fmt))


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
async def test_last_resort_order_arguments_then_old_user_text_then_last(compactor: AsyncCompactor, fmt: str) -> None:
    paste = "pasted log line with some words\n" * 4000  # ~28k tokens
    arguments = json.dumps({"patch": "+ added line of code\n" * 3000})
    noted = {"role": "assistant", "content": "noted"}
    chat = [user(fmt, "first: " + paste), noted, *TURNS[fmt]("c1", "ok", question="second")]
    call = chat[3]
    set_call_arguments(fmt, call, arguments)
    chat.append(user(fmt, "last: " + paste))
    # every message is kept by the boundary (no step 1-3 may touch them); room for the last paste but not for all
    # three big parts: the arguments and the first paste go, the last message stays as it is
    keep_all = ("keep-first", 100)
    out = await compactor.compact(chat, boundary=keep_all, context_window=45_000)
    report = compactor.last_report
    assert report is not None and len(report.offloaded) == 2
    dumped = json.dumps(out)
    assert OFFLOADED_ARGUMENTS in dumped and out[-1] == chat[-1]
    first = json.dumps(out[0])
    assert out[0]["role"] == "user" and len(first) < 5000 and "is stored as out_" in first
    stored = await read_whole(compactor, report.offloaded[1])
    assert json.loads(stored) == chat[0]
    validate(fmt, out, compactor.tools(fmt))
    # a window too small for even the last message: it goes too, as a reference (the only step left)
    out = await compactor.compact(chat, boundary=keep_all, context_window=8_000)
    assert len(json.dumps(out)) < 20_000 and "The user message 6 is stored as out_" in json.dumps(out[-1])
    validate(fmt, out, compactor.tools(fmt))


async def test_edits_in_place_are_seen(compactor: AsyncCompactor) -> None:
    chat = anthropic_turn("c1", "small", question="go")[:2]
    chat.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "small"}]})
    first = await compactor.compact(chat)
    assert first == chat and not compactor.last_report.offloaded  # type: ignore[union-attr]
    # the caller appends the real result to the very message object the compactor has seen
    chat[2]["content"][0]["content"] = big_json(3000)
    second = await compactor.compact(chat)
    report = compactor.last_report
    assert report is not None and len(report.offloaded) == 1
    assert second[2]["content"][0]["content"].startswith("Stored as out_")


async def test_window_error_leaves_callers_list_untouched(compactor: AsyncCompactor) -> None:
    chat = [{"role": "system", "content": "rules " * 5000}, {"role": "user", "content": "hi"}]
    copy = json.loads(json.dumps(chat))
    with pytest.raises(ContextWindowExceeded, match=r"message 0 \(system\)"):
        await compactor.compact(chat, context_window=2000)
    assert chat == copy


def test_decisions_are_the_same_after_a_restart(tmp_path: Path) -> None:
    """A second process on the same store and session compacts the raw history to the very same bytes: it finds the
    first one's decisions in the session's decision record and stores nothing, so the prompt cache keeps hitting
    across a restart."""
    chat = [*anthropic_turn("c1", big_json(3000), question="go"), *anthropic_turn("c2", big_json(2500, tag="y"))]
    store = str(tmp_path / "store")
    with Compactor(store=store, session="restart", jq_workers=1) as first:
        before = first.compact(chat)
    with Compactor(store=store, session="restart", jq_workers=1) as second:
        after = second.compact(chat)
        assert second.last_report is not None and second.last_report.offloaded == []
    assert json.dumps(after) == json.dumps(before) and "Stored as out_" in json.dumps(after)
    with Compactor(store=store, session="another", jq_workers=1) as other:  # another session: its own handles
        assert json.dumps(other.compact(chat)) != json.dumps(before)


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses"])
@pytest.mark.parametrize("window", [None, 100_000])
@pytest.mark.parametrize("boundary", ["last-turn", "all", ("keep-first", 2)])
async def test_a_big_result_is_decided_at_first_sight(
    compactor: AsyncCompactor, fmt: str, window: int | None, boundary: Any
) -> None:
    """Never rides inline for later requests, in any format, window or not: the request that first carries it
    carries its reference, and every later request the same bytes."""
    chat: list[dict[str, Any]] = []
    sent: list[list[dict[str, Any]]] = []
    for n in range(8):
        result = big_json(1500, tag=str(n)) if n == 3 else f"small {n}"
        chat += TURNS[fmt](f"c{n}", result, question=f"q{n}" if n % 3 == 0 else None)
        sent.append(await compactor.compact(chat, boundary=boundary, context_window=window))
    big_at = next(
        i for i, m in enumerate(sent[3]) if '"tag": "3"' in json.dumps(m) or "Stored as out_" in json.dumps(m)
    )
    assert "Stored as out_" in json.dumps(sent[3][big_at])
    for later in sent[4:]:
        assert later[: len(sent[3])] == sent[3]  # the prefix never changes again
